"""Inductive Venn predictors and Venn-ABERS (calibtut.recalibration.venn)."""

import numpy as np
import pytest

from calibtut.recalibration import (
    VennABERS,
    VennPredictor,
    venn_abers,
    venn_multiprobabilities,
    venn_probability_bounds,
)


def test_hand_case_and_empty_category():
    # category 0: labels 1, 1, 0 -> with the test point as 0: (2/4, 2/4); as 1: (1/4, 3/4)
    p = venn_multiprobabilities([0, 0, 0, 1], [1, 1, 0, 0], [0, 2], 2)
    assert np.allclose(p[0], [[0.5, 0.5], [0.25, 0.75]])
    assert np.allclose(p[1], np.eye(2))  # an empty category: the test point alone
    lower, upper = venn_probability_bounds([0, 0, 0, 1], [1, 1, 0, 0], [0, 2], 2, test_weight=2.0)
    assert np.allclose(lower, [[1 / 5, 2 / 5], [0, 0]]) and np.allclose(upper, [[3 / 5, 4 / 5], [1, 1]])


def test_bounds_are_the_extremes_of_the_multiprobabilities():
    rng = np.random.default_rng(0)
    for _ in range(20):
        n_classes = int(rng.integers(2, 5))
        cal_cat, labels = rng.integers(0, 6, size=200), rng.integers(0, n_classes, size=200)
        test_cat, weight = rng.integers(0, 7, size=50), rng.uniform(1, 5, size=50)
        p = venn_multiprobabilities(cal_cat, labels, test_cat, n_classes, test_weight=weight)
        lower, upper = venn_probability_bounds(cal_cat, labels, test_cat, n_classes, test_weight=weight)
        assert np.allclose(p.sum(axis=2), 1)
        assert np.allclose(p.min(axis=1), lower) and np.allclose(p.max(axis=1), upper)
        # Proposition 3's mechanism: a larger test weight never raises the lower probability
        heavier, _ = venn_probability_bounds(cal_cat, labels, test_cat, n_classes, test_weight=weight + 1)
        assert np.all(heavier <= lower + 1e-15)


@pytest.mark.filterwarnings("ignore:All-NaN slice:RuntimeWarning")  # inside venn-abers, one distinct score
def test_one_category_matches_venn_abers_with_a_constant_score():
    # the venn-abers package with every score equal has a single isotonic category:
    # p0 = n1 / (n + 1), p1 = (n1 + 1) / (n + 1), our lower and upper probabilities of label 1
    from venn_abers import VennAbers

    rng = np.random.default_rng(1)
    labels = (rng.uniform(size=37) < 0.8).astype(int)
    oracle = VennAbers()
    oracle.fit(np.full((37, 2), 0.5), labels)
    _, p0_p1 = oracle.predict_proba(np.full((1, 2), 0.5))
    lower, upper = venn_probability_bounds(np.zeros(37), labels, [0], 2)
    assert np.allclose(p0_p1[0], [lower[0, 1], upper[0, 1]])


@pytest.mark.parametrize("seed", range(3))
def test_venn_abers_matches_the_venn_abers_package(seed):
    from venn_abers import VennAbers

    rng = np.random.default_rng(seed)
    scores = rng.uniform(size=150)
    if seed == 2:
        scores = np.round(scores, 1)  # tied scores
    labels = (rng.uniform(size=150) < scores ** 2).astype(int)
    test = np.concatenate([rng.uniform(size=40), scores[:5], [-0.5, 1.5]])
    oracle = VennAbers()
    oracle.fit(np.stack([1 - scores, scores], axis=1), labels)
    _, p0_p1 = oracle.predict_proba(np.stack([1 - test, test], axis=1))
    p0, p1 = venn_abers(scores, labels, test)
    assert np.allclose(p0, p0_p1[:, 0], atol=1e-12) and np.allclose(p1, p0_p1[:, 1], atol=1e-12)
    assert np.all(p0 <= p1)


def test_theorem3_the_true_label_probability_is_calibrated():
    # Vovk & Petej 2014, Theorem 1: in one category of n IID Bernoulli(p) calibration labels, the
    # Venn probability computed with the test point's true label, p_Y(1) = (n1 + Y) / (n + 1), is
    # perfectly calibrated: E[Y | p_Y(1) = v] = v for every value v. 200,000 draws; each
    # well-populated value's mean is within 4.5 binomial standard errors. The lower probability
    # p_0(1) alone is not calibrated (it is too low by p / (n + 1) on average).
    rng = np.random.default_rng(2)
    n, draws = 20, 200_000
    for p in (0.3, 0.8):
        n1 = rng.binomial(n, p, size=draws)
        y = (rng.uniform(size=draws) < p).astype(int)
        value = (n1 + y) / (n + 1)
        for v in np.unique(value):
            chosen = value == v
            if chosen.sum() < 2000:
                continue
            se = np.sqrt(v * (1 - v) / chosen.sum())
            assert abs(y[chosen].mean() - v) < 4.5 * se
        lower = n1 / (n + 1)
        # E[Y] - E[p_0(1)] = p / (n + 1) exactly; the simulated gap has standard error about 0.0011
        assert abs((y.mean() - lower.mean()) - p / (n + 1)) < 0.005


def test_the_library_probability_equals_the_closed_form_in_the_simulation():
    rng = np.random.default_rng(3)
    cal_cat, labels = rng.integers(0, 3, size=60), (rng.uniform(size=60) < 0.7).astype(int)
    lower, upper = venn_probability_bounds(cal_cat, labels, [0, 1, 2], 2)
    for c in range(3):
        n, n1 = np.sum(cal_cat == c), np.sum(labels[cal_cat == c])
        assert np.isclose(lower[c, 1], n1 / (n + 1)) and np.isclose(upper[c, 1], (n1 + 1) / (n + 1))


def test_clear_errors():
    with pytest.raises(ValueError, match="cal_y must be integers in 0..1, got 2.0"):
        venn_probability_bounds([0, 0], [0, 2], [0], 2)
    with pytest.raises(ValueError, match="test_weight must be strictly positive, got 0.0"):
        venn_probability_bounds([0, 0], [0, 1], [0], 2, test_weight=0.0)
    with pytest.raises(ValueError, match=r"cal_categories must have one entry per point \(2\), got 3"):
        venn_probability_bounds([0, 0, 1], [0, 1], [0], 2)
    with pytest.raises(TypeError, match="cal_categories must hold numbers"):
        venn_probability_bounds(["a", "b"], [0, 1], ["a"], 2)
    with pytest.raises(ValueError, match="cal_y must be integers in 0..1"):
        VennABERS().fit([0.1, 0.2], [0, 3])
    with pytest.raises(ValueError, match="cal_y must be integers in 0..1"):
        venn_abers([0.1, 0.2], [0, 3], [0.5])
    with pytest.raises(ValueError, match="same length"):
        venn_abers([0.1, 0.2], [0, 1, 1], [0.5])
    with pytest.raises(ValueError, match="n_classes must be >= 2"):
        VennPredictor(n_classes=1).fit([[0.5, 0.5]], [0])
    with pytest.raises(ValueError, match="cal_probs must sum to 1"):
        VennPredictor().fit([[0.5, 0.6]], [0])
    with pytest.raises(ValueError, match="may be None only when categories is an array"):
        VennPredictor(n_classes=2).fit(None, [0])
    with pytest.raises(ValueError, match="may be None only when n_classes is given"):
        VennPredictor().fit(None, [0], categories=[0])
    with pytest.raises(ValueError, match="test_probs has 3 classes"):
        VennPredictor().fit([[0.5, 0.5]], [0]).predict_multiprobabilities([[0.2, 0.3, 0.5]])
    for model in (VennPredictor(), VennABERS()):
        with pytest.raises(RuntimeError, match=f"this {type(model).__name__} is not fitted"):
            model.predict_multiprobabilities([[0.5, 0.5]] if isinstance(model, VennPredictor) else [0.5])


def _tied_probs(rng, n, n_classes):
    return rng.multinomial(10, np.full(n_classes, 1 / n_classes), size=n) / 10


def test_venn_predictor_equals_its_wrappers_and_defaults_to_the_predicted_class():
    rng = np.random.default_rng(4)
    for _ in range(10):
        n_classes = int(rng.integers(2, 5))
        cal, test = _tied_probs(rng, 120, n_classes), _tied_probs(rng, 30, n_classes)
        labels = rng.integers(0, n_classes, 120)
        weight = rng.uniform(1, 3, 30)
        model = VennPredictor().fit(cal, labels)
        # the default taxonomy is the argmax (ties to the first class), as explicit codes and as a function
        codes_cal, codes_test = np.argmax(cal, axis=1), np.argmax(test, axis=1)
        expected = venn_multiprobabilities(codes_cal, labels, codes_test, n_classes, test_weight=weight)
        assert np.array_equal(model.predict_multiprobabilities(test, test_weight=weight), expected)
        by_function = VennPredictor().fit(cal, labels, categories=lambda p: np.argmax(p, axis=1))
        assert np.array_equal(by_function.predict_multiprobabilities(test, categories=lambda p: np.argmax(p, axis=1),
                                                                     test_weight=weight), expected)
        lower, upper = venn_probability_bounds(codes_cal, labels, codes_test, n_classes, test_weight=weight)
        got_lower, got_upper = model.predict_bounds(test, test_weight=weight)
        assert np.array_equal(got_lower, lower) and np.array_equal(got_upper, upper)


def test_venn_abers_class_equals_its_wrapper_with_ties():
    rng = np.random.default_rng(5)
    scores, test = np.round(rng.uniform(size=80), 1), np.round(rng.uniform(size=20), 1)
    labels = (rng.uniform(size=80) < scores).astype(int)
    p0, p1 = VennABERS().fit(scores, labels).predict_multiprobabilities(test)
    q0, q1 = venn_abers(scores, labels, test)
    assert np.array_equal(p0, q0) and np.array_equal(p1, q1)


def _refit_reference(scores, labels, test):
    """Venn-ABERS by definition: two scikit-learn isotonic fits per test score (the old slow path)."""
    from sklearn.isotonic import IsotonicRegression

    out = np.empty((len(test), 2))
    for i, s in enumerate(test):
        for label in (0, 1):
            fit = IsotonicRegression(out_of_bounds="clip").fit(np.append(scores, s), np.append(labels, label))
            out[i, label] = fit.predict([s])[0]
    return out[:, 0], out[:, 1]


def _min_max_reference(scores, labels, test):
    """The min-max formula of isotonic regression at the test point, over every block pair (O(k^2))."""
    c, inverse = np.unique(scores, return_inverse=True)
    w = np.concatenate([[0], np.cumsum(np.bincount(inverse))])
    y = np.concatenate([[0], np.cumsum(np.bincount(inverse, weights=labels))])
    out = []
    for label, side in ((0, "right"), (1, "left")):
        values = []
        for g in np.searchsorted(c, test, side=side):
            # blocks a+1..b around the test point (a <= g <= b), the test point pooled in
            slopes = (y[g:][None, :] - y[: g + 1][:, None] + label) / (w[g:][None, :] - w[: g + 1][:, None] + 1)
            values.append(slopes.min(axis=1).max())
        out.append(np.array(values))
    return out[0], out[1]


@pytest.mark.parametrize("seed", range(6))
def test_venn_abers_equals_the_definition_with_ties(seed):
    # few distinct scores (many ties), test scores equal to calibration scores, below and above all of them
    rng = np.random.default_rng(10 + seed)
    n = int(rng.integers(1, 80))
    scores = np.round(rng.uniform(size=n), seed % 3)
    labels = (rng.uniform(size=n) < rng.uniform(0.2, 0.8)).astype(int)
    test = np.concatenate([rng.uniform(-0.1, 1.1, size=30), scores[:10], np.round(rng.uniform(size=10), 1)])
    p0, p1 = venn_abers(scores, labels, test)
    for reference in (_refit_reference, _min_max_reference):
        q0, q1 = reference(scores, labels, test)
        assert np.allclose(p0, q0, rtol=0, atol=1e-12) and np.allclose(p1, q1, rtol=0, atol=1e-12)


def test_venn_abers_matches_the_package_at_scale_with_ties():
    from venn_abers import VennAbers

    rng = np.random.default_rng(7)
    scores = np.round(rng.beta(2, 2, size=5000), 2)
    labels = (rng.uniform(size=5000) < scores).astype(int)
    test = np.concatenate([rng.uniform(size=2000), scores[:200]])
    _, p0_p1 = VennAbers().fit(np.stack([1 - scores, scores], axis=1), labels).predict_proba(
        np.stack([1 - test, test], axis=1))
    p0, p1 = venn_abers(scores, labels, test)
    assert np.allclose(p0, p0_p1[:, 0], rtol=0, atol=1e-12) and np.allclose(p1, p0_p1[:, 1], rtol=0, atol=1e-12)


def test_venn_abers_tables_are_monotone_and_the_true_label_probability_is_calibrated():
    # p0 and p1 never decrease with the score, p0 <= p1. Validity (Vovk & Petej 2014): the probability
    # computed with the test point's true label, p_Y, is calibrated; over 2,000 exchangeable
    # calibration/test draws the mean of Y - p_Y is zero within 4.5 standard errors.
    rng = np.random.default_rng(8)
    gaps = []
    for _ in range(2000):
        scores = rng.uniform(size=31)
        labels = (rng.uniform(size=31) < scores**2).astype(int)
        model = VennABERS().fit(scores[:30], labels[:30])
        assert np.all(np.diff(model.p0_) >= 0) and np.all(np.diff(model.p1_) >= 0)
        assert np.all(model.p0_ <= model.p1_)
        p0, p1 = model.predict_multiprobabilities(scores[30:])
        gaps.append(labels[30] - (p1[0] if labels[30] else p0[0]))
    gaps = np.array(gaps)
    assert abs(gaps.mean()) < 4.5 * gaps.std() / np.sqrt(gaps.size)
