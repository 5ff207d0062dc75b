"""Weighted split conformal prediction under covariate shift (calibtut.conformal, paper 004 extension)."""

import numpy as np
import pytest

from calibtut.conformal import (
    SplitConformalClassifier,
    aps_scores,
    class_scores,
    conformal_quantile,
    lac_scores,
    weighted_conformal_interval,
    weighted_conformal_quantile,
    weighted_conformal_sets,
)
from calibtut.shift import GaussianShift


def reference_thresholds(cal_scores, cal_weight, test_weight, alpha):
    """Per-test-point reference: build the weighted law with +inf and read its quantile."""
    cal_scores = np.asarray(cal_scores, dtype=float)
    out = np.empty(len(test_weight))
    for j, w_test in enumerate(test_weight):
        support = np.append(cal_scores, np.inf)
        mass = np.append(np.asarray(cal_weight, dtype=float), w_test)
        mass = mass / mass.sum()
        order = np.argsort(support, kind="stable")
        cdf = np.cumsum(mass[order])
        out[j] = support[order][np.argmax(cdf >= (1 - alpha) * (1 - 1e-12))]
    return out


def test_equal_weights_give_split_conformal():
    rng = np.random.default_rng(0)
    for n in (1, 4, 19, 99, 250):
        scores = rng.normal(size=n)
        for alpha in (0.05, 0.1, 0.2, 0.5):
            got = weighted_conformal_quantile(scores, np.full(n, 2.5), [2.5, 2.5], alpha)
            assert got.tolist() == [conformal_quantile(scores, alpha)] * 2


def test_hand_computed_case():
    # scores 0.1 0.2 0.3 0.4 with weights 1 1 1 3; test weight 0.5: total 6.5, need 0.6 * 6.5 = 3.9
    # cumulative weights 1 2 3 6 -> the 4th score; test weight 8: need 0.6 * 14 = 8.4 > 6 -> inf
    got = weighted_conformal_quantile([0.3, 0.1, 0.2, 0.4], [1, 1, 1, 3], [0.5, 8.0], alpha=0.4)
    assert got.tolist() == [0.4, np.inf]
    # the test point's own mass counts: weight 3 at +inf, alpha 0.5 -> need 0.5 * 9 = 4.5 -> the 4th score,
    # whereas normalising the calibration weights alone (the classic bug) needs 3 -> the 3rd score
    assert weighted_conformal_quantile([0.3, 0.1, 0.2, 0.4], [1, 1, 1, 3], [3.0], alpha=0.5).tolist() == [0.4]
    assert weighted_conformal_quantile([0.3, 0.1, 0.2, 0.4], [1, 1, 1, 3], [0.0], alpha=0.5).tolist() == [0.3]


def test_vectorised_equals_reference_loop():
    rng = np.random.default_rng(1)
    for _ in range(20):
        n, m = rng.integers(1, 60), rng.integers(1, 30)
        scores = rng.choice([rng.normal(size=n), rng.integers(0, 4, size=n).astype(float)])
        w_cal, w_test = rng.exponential(size=n), rng.exponential(size=m) * rng.choice([0.1, 1, 10])
        alpha = rng.uniform(0.02, 0.6)
        assert np.array_equal(weighted_conformal_quantile(scores, w_cal, w_test, alpha),
                              reference_thresholds(scores, w_cal, w_test, alpha))


def test_scale_invariance_and_monotonicity_in_test_weight():
    rng = np.random.default_rng(2)
    scores, w = rng.normal(size=50), rng.exponential(size=50)
    tw = np.sort(rng.exponential(size=40))
    a = weighted_conformal_quantile(scores, w, tw, 0.1)
    assert np.array_equal(a, weighted_conformal_quantile(scores, 7 * w, 7 * tw, 0.1))
    assert np.all(np.diff(a) >= 0)  # more own mass at +inf never lowers the threshold


def test_scores_hand_cases():
    p = np.array([[0.2, 0.7, 0.1], [0.5, 0.25, 0.25]])
    assert np.allclose(lac_scores(p), 1 - p)
    assert np.allclose(aps_scores(p), [[0.9, 0.7, 1.0], [0.5, 0.75, 1.0]])
    assert np.allclose(aps_scores(p, [2, 0]), [1.0, 0.5])
    assert np.allclose(lac_scores(p, [1, 1]), [0.3, 0.75])


@pytest.mark.parametrize("scores", [lac_scores, aps_scores])
def test_scores_refuse_rows_that_do_not_sum_to_one(scores):
    with pytest.raises(ValueError, match="probs must sum to 1"):
        scores([[0.2, 0.7]])
    with pytest.raises(ValueError, match="labels must be integers in 0..1, got 2.0"):
        scores([[0.3, 0.7]], [2])
    with pytest.raises(ValueError, match="labels must have one entry per point"):
        scores([[0.3, 0.7]], [0, 1])


def _regression_shift(rng, n_cal, n_test, shift):
    def draw(x):
        return x + (0.3 + np.abs(x)) * rng.normal(size=x.size)

    xc = rng.normal(size=n_cal)
    xt = rng.normal(shift.mean, shift.scale, size=n_test)
    return xc, draw(xc), xt, draw(xt)


def test_weighted_intervals_cover_the_target_unweighted_do_not():
    # x ~ N(0, 1) -> N(1.5, 0.7^2), noise grows with |x|: the true ratio q/p is known and bounded,
    # so weighted split conformal covers at >= 1 - alpha (Tibshirani et al. 2019, Cor. 1)
    shift, alpha, n_cal, n_test, seeds = GaussianShift(1.5, 0.7), 0.1, 200, 50, 300
    weighted, plain = [], []
    rng = np.random.default_rng(3)
    for _ in range(seeds):
        xc, yc, xt, yt = _regression_shift(rng, n_cal, n_test, shift)
        lo, hi = weighted_conformal_interval(xc, yc, shift.density_ratio(xc), xt, shift.density_ratio(xt), alpha)
        weighted.append(np.mean((lo <= yt) & (yt <= hi)))
        lo, hi = weighted_conformal_interval(xc, yc, np.ones(n_cal), xt, np.ones(n_test), alpha)
        plain.append(np.mean((lo <= yt) & (yt <= hi)))
    se = np.std(weighted, ddof=1) / np.sqrt(seeds)
    assert np.mean(weighted) >= 1 - alpha - 3 * se
    assert np.mean(weighted) <= 1 - alpha + 0.05  # not trivially conservative
    assert np.mean(plain) < 1 - alpha - 0.05


def test_weighted_sets_cover_the_target_classification():
    shift, alpha, seeds = GaussianShift(1.5, 0.7), 0.2, 300
    rng = np.random.default_rng(4)
    cover = []
    for _ in range(seeds):
        Xs, ys, Xt, yt = shift.sample(150, 40, coef=(1.0, 0.0), seed=rng)
        probs = lambda x: np.column_stack([1 - 1 / (1 + np.exp(-2 * x)), 1 / (1 + np.exp(-2 * x))])  # noqa: E731
        sets = weighted_conformal_sets(probs(Xs[:, 0]), ys, shift.density_ratio(Xs[:, 0]), probs(Xt[:, 0]),
                                       shift.density_ratio(Xt[:, 0]), alpha, score="aps")
        cover.append(np.mean(sets[np.arange(len(yt)), yt]))
    se = np.std(cover, ddof=1) / np.sqrt(seeds)
    assert np.mean(cover) >= 1 - alpha - 3 * se


@pytest.mark.parametrize("bad", [[-1.0, 1.0], [np.nan, 1.0], [np.inf, 1.0]])
def test_bad_weights_are_rejected(bad):
    with pytest.raises(ValueError, match="cal_weight"):
        weighted_conformal_quantile([0.1, 0.2], bad, [1.0], 0.1)
    with pytest.raises(ValueError, match="test_weight"):
        weighted_conformal_quantile([0.1, 0.2], [1.0, 1.0], bad, 0.1)


def test_other_bad_input():
    with pytest.raises(ValueError, match="alpha"):
        weighted_conformal_quantile([0.1], [1.0], [1.0], 1.0)
    with pytest.raises(ValueError, match="one entry per point"):
        weighted_conformal_quantile([0.1, 0.2], [1.0], [1.0], 0.1)
    with pytest.raises(ValueError, match="cal_weight must not be all zero"):
        weighted_conformal_quantile([0.1], [0.0], [1.0], 0.1)
    with pytest.raises(ValueError, match="score"):
        weighted_conformal_sets([[0.5, 0.5]], [0], [1], [[0.5, 0.5]], [1], 0.1, score="bayes")
    with pytest.raises(ValueError, match="classes"):
        weighted_conformal_sets([[0.5, 0.5]], [0], [1], [[0.2, 0.3, 0.5]], [1], 0.1)
    with pytest.raises(ValueError, match="test_probs must sum to 1"):
        weighted_conformal_sets([[0.5, 0.5]], [0], [1], [[0.2, 0.3]], [1], 0.1)
    with pytest.raises(ValueError, match="scale is required"):
        weighted_conformal_interval([0.0], [1.0], [1.0], [0.0], [1.0], 0.1, cal_scale=[1.0])
    with pytest.raises(ValueError, match="test_weight must have one entry per test point"):
        weighted_conformal_sets([[0.5, 0.5]], [0], [1], [[0.5, 0.5]], [1, 1], 0.1)


def test_zero_test_weights_drop_the_mass_at_infinity():
    # all-zero test weights are allowed: they reproduce the classic bug (the calibration weights alone)
    scores, weights = [0.3, 0.1, 0.2, 0.4], [1, 1, 1, 3]
    assert weighted_conformal_quantile(scores, weights, [0.0, 0.0], alpha=0.5).tolist() == [0.3, 0.3]


def test_weighted_sets_class_and_wrapper_agree_with_ties():
    rng = np.random.default_rng(6)
    for _ in range(20):
        n, m, k = int(rng.integers(5, 60)), int(rng.integers(1, 20)), int(rng.integers(2, 5))
        cal = rng.dirichlet(np.ones(k), size=n).round(1)  # rounded: tied scores
        cal[:, -1] = 1 - cal[:, :-1].sum(axis=1)
        cal = np.clip(cal, 0, 1) / np.clip(cal, 0, 1).sum(axis=1, keepdims=True)
        test = cal[rng.integers(0, n, m)]
        labels = rng.integers(0, k, n)
        w_cal, w_test = rng.integers(0, 3, n) + 0.5, rng.exponential(size=m)
        alpha = float(rng.uniform(0.05, 0.5))
        for score in ("lac", "aps"):
            model = SplitConformalClassifier(alpha=alpha, score=score).fit(cal, labels, cal_weight=w_cal)
            expected = model.predict_set(test, test_weight=w_test)
            assert np.array_equal(weighted_conformal_sets(cal, labels, w_cal, test, w_test, alpha, score=score),
                                  expected)
            # the definition: class c is in the set when its score is at most the point's weighted threshold
            scores = class_scores(cal, labels, score=score)
            thresholds = reference_thresholds(scores, w_cal, w_test, alpha)
            assert np.array_equal(expected, class_scores(test, score=score) <= thresholds[:, None])


@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.3])
def test_equal_weight_sets_match_crepes(alpha):
    crepes = pytest.importorskip("crepes")
    rng = np.random.default_rng(5)
    n, m, k = 200, 300, 4
    cal = rng.dirichlet(np.ones(k), size=n)
    labels = np.array([rng.choice(k, p=p) for p in cal])
    test = rng.dirichlet(np.ones(k), size=m)
    ref = crepes.ConformalClassifier().fit(lac_scores(cal, labels))
    expected = ref.predict_set(lac_scores(test), confidence=1 - alpha, smoothing=False).astype(bool)
    assert np.array_equal(weighted_conformal_sets(cal, labels, np.ones(n), test, np.ones(m), alpha), expected)
