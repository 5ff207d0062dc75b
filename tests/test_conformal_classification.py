"""Split and Mondrian conformal sets for classifiers (calibtut.conformal.sets)."""

import numpy as np
import pytest

from calibtut.conformal import (
    class_scores,
    coverage_band,
    coverage_distribution,
    label_conditional_sets,
    localized_conformal_sets,
    mondrian_conformal_sets,
    raps_sets,
    split_conformal_sets,
)


def _probs(rng, n, n_classes=3, concentration=1.0):
    return rng.dirichlet(np.full(n_classes, concentration), size=n)


def _sample_from(rng, probs):
    """Labels drawn from the rows of ``probs``: the probabilities are then calibrated."""
    return (rng.uniform(size=(len(probs), 1)) > np.cumsum(probs, axis=1)).sum(axis=1)


def _lcp(cal_probs, cal_y, test_probs, test_kernel, alpha, *, cal_kernel=None, **options):
    """Localized sets from kernel matrices: the points are their indices (calibration ``0..n-1``,
    test ``n..n+m-1``) and the kernel reads ``test_kernel`` and ``cal_kernel`` (ones by default)."""
    test_kernel = np.asarray(test_kernel, dtype=float)
    m, n = test_kernel.shape
    full = np.ones((n + m, n + m))
    full[:n, :n] = 1.0 if cal_kernel is None else cal_kernel
    full[n:, :n], full[:n, n:] = test_kernel, test_kernel.T

    def kernel(a, b):
        return full[np.ix_(a[:, 0].astype(int), b[:, 0].astype(int))]

    return localized_conformal_sets(cal_probs, cal_y, np.arange(n), test_probs, np.arange(n, n + m), alpha,
                                    kernel=kernel, **options)


def _same_group(across):
    """The kernel 1 within a group and ``across`` between groups (a point's coordinate is its group)."""
    return lambda a, b: np.where(a == b.T, 1.0, across)


class _Identity:
    """A prefit 'classifier' whose probabilities are its input (for MAPIE)."""

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict_proba(self, X):
        return np.asarray(X)

    def predict(self, X):
        return np.argmax(X, axis=1)


# ---------------------------------------------------------------- hand-computed cases


def test_scores_hand_cases():
    p = np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]])
    assert np.allclose(class_scores(p), 1 - p)
    assert np.allclose(class_scores(p, score="aps"), [[1.0, 0.5, 0.8], [0.6, 1.0, 0.9]])
    # RAPS: ranks (1-based) of row 0 are 3, 1, 2; lam 0.1 beyond k_reg = 1 adds 0.2, 0, 0.1
    assert np.allclose(class_scores(p, score="raps", lam=0.1, k_reg=1), [[1.2, 0.5, 0.9], [0.6, 1.2, 1.0]])
    assert np.allclose(class_scores(p, [1, 2], score="raps", lam=0.1, k_reg=1), [0.5, 1.0])


def test_randomized_score_subtracts_a_uniform_share_of_the_label_probability():
    p = np.array([[0.2, 0.5, 0.3]] * 2000)
    got = class_scores(p, np.full(2000, 2), score="aps", randomized=True, seed=0)
    assert np.all((got >= 0.5) & (got <= 0.8))  # between the mass above the label and the mass down to it
    assert abs(got.mean() - 0.65) < 0.01  # the uniform share: 0.8 - 0.3 U, mean 0.65, sd 0.087 / sqrt(2000)
    assert np.array_equal(got, class_scores(p, np.full(2000, 2), score="aps", randomized=True, seed=0))


def test_split_sets_hand_case():
    # true-label LAC scores 0.1 0.2 0.3 0.6; n = 4, alpha 0.4 -> rank ceil(5 * 0.6) = 3 -> threshold 0.3
    cal = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]]
    got = split_conformal_sets(cal, [0, 0, 1, 1], [[0.75, 0.25], [0.71, 0.29], [0.69, 0.31]], 0.4)
    assert got.tolist() == [[True, False], [True, False], [False, False]]
    assert split_conformal_sets(cal, [0, 0, 1, 1], [[0.69, 0.31]], 0.4, allow_empty=False).tolist() == [[True, False]]


def test_randomized_aps_set_is_romanos_rule():
    # one calibration threshold q; the set is the top classes down to the one crossing q, and the
    # crossing class is kept exactly when U p_c >= cum_c - q (Romano et al. 2020, randomised set)
    rng = np.random.default_rng(3)
    cal, test = _probs(rng, 300, 4), _probs(rng, 200, 4)
    y_cal = _sample_from(rng, cal)
    got = split_conformal_sets(cal, y_cal, test, 0.2, score="aps", randomized=True, seed=5)
    gen = np.random.default_rng(5)
    u_cal, u_test = gen.uniform(size=300), gen.uniform(size=200)
    cum = class_scores(cal, y_cal, score="aps")
    q = np.sort(cum - u_cal * cal[np.arange(300), y_cal])[int(np.ceil(301 * 0.8)) - 1]
    for j in range(200):
        order = np.argsort(-test[j], kind="stable")
        cumulative = np.cumsum(test[j][order])
        last = np.searchsorted(cumulative, q, side="left")  # first class whose cumulative mass exceeds q
        expected = set(order[:last].tolist())
        if last < 4 and u_test[j] * test[j][order[last]] >= cumulative[last] - q:
            expected.add(int(order[last]))
        assert set(np.flatnonzero(got[j]).tolist()) == expected


def test_label_conditional_hand_case():
    # label 0 scores 0.1 0.4 -> threshold (rank ceil(3 * 0.6) = 2) 0.4; label 1 scores 0.2 0.45 -> 0.45
    cal = [[0.9, 0.1], [0.6, 0.4], [0.2, 0.8], [0.45, 0.55]]
    got = label_conditional_sets(cal, [0, 0, 1, 1], [[0.6, 0.4], [0.59, 0.41], [0.45, 0.55]], 0.4)
    assert got.tolist() == [[True, False], [False, False], [False, True]]


def test_categories_as_function_and_as_arrays_agree():
    rng = np.random.default_rng(4)
    cal, test = _probs(rng, 400), _probs(rng, 100)
    y_cal = _sample_from(rng, cal)

    def confident(probs, labels):  # category: is the candidate label the argmax?
        return (np.argmax(probs, axis=1) == labels).astype(int)

    by_function = mondrian_conformal_sets(cal, y_cal, test, 0.1, categories=confident)
    test_cat = np.stack([confident(test, np.full(100, c)) for c in range(3)], axis=1)
    by_arrays = mondrian_conformal_sets(cal, y_cal, test, 0.1, cal_categories=confident(cal, y_cal),
                                        test_categories=test_cat)
    assert np.array_equal(by_function, by_arrays)
    by_label = mondrian_conformal_sets(cal, y_cal, test, 0.1, categories=lambda p, y: y)
    assert np.array_equal(by_label, label_conditional_sets(cal, y_cal, test, 0.1))


def test_localized_sets_with_equal_weights_are_split_conformal():
    rng = np.random.default_rng(12)
    for n in (9, 19, 99, 250):
        cal, test = _probs(rng, n), _probs(rng, 50)
        y = _sample_from(rng, cal)
        for alpha in (0.1, 0.2, 0.5):
            for score in ("lac", "aps"):
                expected = split_conformal_sets(cal, y, test, alpha, score=score)
                assert np.array_equal(_lcp(cal, y, test, np.ones((50, n)), alpha, score=score), expected)


def test_localized_sets_against_a_weighted_quantile_per_point():
    # brute force: the (1 - alpha) quantile of sum_j H_j delta_{s_j} + 1 delta_{+inf}, normalised
    rng = np.random.default_rng(13)
    cal, test = _probs(rng, 80), _probs(rng, 30)
    y = _sample_from(rng, cal)
    kernel = np.exp(-rng.exponential(size=(30, 80)) * 3)
    got = _lcp(cal, y, test, kernel, 0.1)
    scores = 1 - cal[np.arange(80), y]
    for t in range(30):
        support = np.append(scores, np.inf)
        mass = np.append(kernel[t], 1.0) / (kernel[t].sum() + 1)
        order = np.argsort(support, kind="stable")
        q = support[order][np.argmax(np.cumsum(mass[order]) >= 0.9 * (1 - 1e-12))]
        assert np.array_equal(got[t], 1 - test[t] <= q)


def test_raps_tuning_picks_from_the_grid_and_covers():
    # 100 draws: the tuned RAPS sets keep marginal coverage (the mean over runs within 4 standard errors
    # of at least 1 - alpha), lam comes from the criterion's grid, and on a binary task whose accuracy
    # exceeds 1 - alpha the size criterion makes (almost) every set a singleton (the paper's Table 5)
    coverage = []
    for seed in range(100):
        rng = np.random.default_rng(seed)
        probs = _probs(rng, 1000, 4, concentration=0.5)
        y = _sample_from(rng, probs)
        sets, params = raps_sets(probs[:700], y[:700], probs[700:], 0.1, seed=seed)
        assert params["lam"] in (0.001, 0.01, 0.1, 0.2, 0.5) and params["k_reg"] >= 1
        coverage.append(sets[np.arange(300), y[700:]].mean())
    assert np.mean(coverage) >= 0.9 - 4 * np.std(coverage) / 10
    rng = np.random.default_rng(0)
    p1 = np.where(rng.uniform(size=2000) < 0.5, 0.97, 0.03)
    probs = np.stack([1 - p1, p1], axis=1)
    y = (rng.uniform(size=2000) < p1).astype(int)
    sets, params = raps_sets(probs[:1500], y[:1500], probs[1500:], 0.1, seed=1)
    assert np.mean(sets.sum(axis=1) == 1) > 0.95
    _, adapt = raps_sets(probs[:1500], y[:1500], probs[1500:], 0.1, criterion="adaptiveness", seed=1)
    assert adapt["lam"] in (0.0, 1e-5, 1e-4, 8e-4, 9e-4, 1e-3, 1.5e-3, 2e-3)
    with pytest.raises(ValueError, match="too small for alpha=0.01"):
        raps_sets(probs[:100], y[:100], probs[:5], 0.01)


# ---------------------------------------------------------------- independent libraries


@pytest.mark.parametrize("seed", range(4))
def test_lac_matches_mapie(seed):
    from mapie.classification import SplitConformalClassifier

    rng = np.random.default_rng(seed)
    n_classes = int(rng.integers(2, 6))
    cal, test = _probs(rng, 500, n_classes), _probs(rng, 300, n_classes)
    y_cal = _sample_from(rng, cal)
    y_cal[:n_classes] = np.arange(n_classes)  # every class present, as MAPIE requires
    alpha = float(rng.uniform(0.05, 0.3))
    mapie = SplitConformalClassifier(_Identity().fit(cal, y_cal), confidence_level=1 - alpha,
                                     conformity_score="lac", prefit=True)
    mapie.conformalize(cal, y_cal)
    expected = mapie.predict_set(test)[1][:, :, 0]
    assert np.array_equal(split_conformal_sets(cal, y_cal, test, alpha), expected)


@pytest.mark.parametrize("seed", range(4))
def test_label_conditional_matches_crepes(seed):
    from crepes import ConformalClassifier

    rng = np.random.default_rng(seed)
    n_classes = int(rng.integers(2, 5))
    cal, test = _probs(rng, 600, n_classes), _probs(rng, 200, n_classes)
    y_cal = _sample_from(rng, cal)
    alpha = float(rng.choice([0.05, 0.1, 0.2]))
    scores = class_scores(cal, y_cal)
    crepes = ConformalClassifier().fit(scores, bins=y_cal)
    p = np.stack([crepes.predict_p(class_scores(test), bins=np.full(200, c), smoothing=False)[:, c]
                  for c in range(n_classes)], axis=1)
    # crepes' p-value (count of calibration scores >= the test score, plus one, over n_c + 1) above
    # alpha is the threshold rule; p-values lie on a grid of step 1/(n_c + 1), far wider than 1e-9
    assert np.array_equal(label_conditional_sets(cal, y_cal, test, alpha), p > alpha + 1e-9)


def test_fixed_partition_mondrian_matches_crepes():
    from crepes import ConformalClassifier

    rng = np.random.default_rng(7)
    cal, test = _probs(rng, 800, 3), _probs(rng, 300, 3)
    y_cal = _sample_from(rng, cal)
    cat_cal, cat_test = rng.integers(0, 4, size=800), rng.integers(0, 4, size=300)
    crepes = ConformalClassifier().fit(class_scores(cal, y_cal, score="aps"), bins=cat_cal)
    expected = crepes.predict_set(class_scores(test, score="aps"), bins=cat_test, confidence=0.9 - 1e-9,
                                  smoothing=False).astype(bool)
    got = mondrian_conformal_sets(cal, y_cal, test, 0.1, cal_categories=cat_cal, test_categories=cat_test,
                                  score="aps")
    assert np.array_equal(got, expected)


# ---------------------------------------------------------------- statistical properties


@pytest.mark.parametrize(("score", "randomized"), [("lac", False), ("aps", False), ("aps", True), ("raps", True)])
def test_marginal_coverage_inside_the_beta_binomial_band(score, randomized):
    # 200 calibration draws; each run's empirical coverage on 200 fresh points lies in the 99 %
    # beta-binomial band (allow 2 % + 3 sd of the binomial count of misses), and the mean over runs is
    # within 4 standard errors of the exact mean k / (n + 1) (continuous probabilities: no tied scores)
    n_cal, n_test, alpha, runs = 199, 200, 0.1, 200
    lo, hi = coverage_band(n_cal, alpha, n_test, level=0.99)
    extra = {"lam": 0.05, "k_reg": 1} if score == "raps" else {}
    coverages = []
    for seed in range(runs):
        rng = np.random.default_rng(seed)
        probs = _probs(rng, n_cal + n_test, 4, concentration=0.5)
        y = _sample_from(rng, probs)
        sets = split_conformal_sets(probs[:n_cal], y[:n_cal], probs[n_cal:], alpha, score=score,
                                    randomized=randomized, seed=seed, **extra)
        coverages.append(sets[np.arange(n_test), y[n_cal:]].mean())
    coverages = np.array(coverages)
    outside = np.mean((coverages < lo) | (coverages > hi))
    assert outside <= 0.01 + 3 * np.sqrt(0.01 * 0.99 / runs)
    exact = coverage_distribution(n_cal, alpha)
    sd = np.sqrt(exact.var() + exact.mean() * (1 - exact.mean()) / n_test)
    assert abs(coverages.mean() - exact.mean()) < 4 * sd / np.sqrt(runs)
    assert coverages.mean() >= 1 - alpha - 4 * sd / np.sqrt(runs)


def test_label_conditional_coverage_holds_in_every_class_where_marginal_fails():
    # a rare class (10 %) that the classifier finds hard: marginal sets under-cover it, label-conditional
    # sets cover every class at 1 - alpha (mean over runs within 4 standard errors of the Beta mean)
    alpha, runs, n_cal, n_test = 0.1, 150, 1000, 500
    per_class_marginal, per_class_mondrian = [], []
    for seed in range(runs):
        rng = np.random.default_rng(seed)
        n = n_cal + n_test
        y = (rng.uniform(size=n) < 0.1).astype(int)
        logit = rng.normal(loc=np.where(y == 1, 0.5, -2.0), scale=1.0)
        p1 = 1 / (1 + np.exp(-logit))
        probs = np.stack([1 - p1, p1], axis=1)
        args = (probs[:n_cal], y[:n_cal], probs[n_cal:], alpha)
        for store, sets in ((per_class_marginal, split_conformal_sets(*args)),
                            (per_class_mondrian, label_conditional_sets(*args))):
            covered = sets[np.arange(n_test), y[n_cal:]]
            store.append([covered[y[n_cal:] == c].mean() for c in (0, 1)])
    mondrian, marginal = np.array(per_class_mondrian), np.array(per_class_marginal)
    for c, n_c in ((0, 900), (1, 100)):
        law = coverage_distribution(n_c, alpha)
        se = np.sqrt(law.var() + 0.1 * 0.9 / (n_test * (0.9 if c == 0 else 0.1))) / np.sqrt(runs)
        assert mondrian[:, c].mean() >= law.mean() - 4 * se - 0.01  # class sizes vary around n_c
    assert marginal[:, 1].mean() < 1 - alpha - 0.1  # the rare class is badly under-covered marginally


# ---------------------------------------------------------------- clear errors


def test_clear_errors():
    cal, y = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]], [0, 0, 1, 1]
    with pytest.raises(ValueError, match="cal_y must be integers in 0..1, got 2.0"):
        split_conformal_sets(cal, [0, 0, 1, 2], [[0.5, 0.5]], 0.4)
    with pytest.raises(ValueError, match="test_probs must sum to 1"):
        split_conformal_sets(cal, y, [[0.5, 0.6]], 0.4)
    with pytest.raises(ValueError, match=r"alpha must lie in \(0, 1\), got 1.0"):
        split_conformal_sets(cal, y, [[0.5, 0.5]], 1.0)
    with pytest.raises(ValueError, match="too small for alpha=0.1: category 0 has 4 calibration points"):
        split_conformal_sets(cal, y, [[0.5, 0.5]], 0.1)
    with pytest.raises(ValueError, match=r"categories must have one entry per point \(4\), got 2"):
        mondrian_conformal_sets(cal, y, [[0.5, 0.5]], 0.4, categories=lambda p, labels: labels[:2])
    with pytest.raises(ValueError, match=r"categories must have one entry per point \(1\), got 2"):
        mondrian_conformal_sets(cal, y, [[0.5, 0.5]], 0.4,
                                categories=lambda p, labels: labels if len(labels) == 4 else [0, 1])
    codes = {"cal_categories": np.zeros(4, int), "test_categories": np.array([7])}
    with pytest.raises(ValueError, match="test category 7 has no calibration point"):
        mondrian_conformal_sets(cal, y, [[0.5, 0.5]], 0.4, **codes)
    sets = mondrian_conformal_sets(cal, y, [[0.5, 0.5]], 0.4, **codes, too_small="include")
    assert sets.tolist() == [[True, True]]
    with pytest.raises(TypeError, match=r"pass category codes as cal_categories=\.\.\. and test_categories="):
        mondrian_conformal_sets(cal, y, [[0.5, 0.5]], 0.4, categories=(np.zeros(4, int), np.array([0])))
    with pytest.raises(ValueError, match="cal_categories needs test_categories"):
        mondrian_conformal_sets(cal, y, [[0.5, 0.5]], 0.4, cal_categories=np.zeros(4, int))
    with pytest.raises(ValueError, match="test_categories needs cal_categories"):
        mondrian_conformal_sets(cal, y, [[0.5, 0.5]], 0.4, test_categories=np.zeros(1, int))
    with pytest.raises(ValueError, match="pass the rule or the codes, not both"):
        mondrian_conformal_sets(cal, y, [[0.5, 0.5]], 0.4, categories="label", **codes)
    for bad, name in ((codes["cal_categories"] + 0.5, "cal_categories"), ([0.5], "test_categories")):
        with pytest.raises(ValueError, match=name):
            mondrian_conformal_sets(cal, y, [[0.5, 0.5]], 0.4, **{**codes, name: bad})
    with pytest.raises(ValueError, match="randomized=True applies to score='aps' or 'raps'"):
        class_scores(cal, randomized=True)
    with pytest.raises(ValueError, match="lam and k_reg apply to score='raps' only"):
        class_scores(cal, score="aps", lam=0.1)


def test_valid_localized_sets_on_a_hand_computed_case():
    # scores V = (0.2, 0.4, 0.6); calibration kernel K = [[1, .5, 0], [.5, 1, .5], [0, .5, 1]]; the test point
    # sits on point 2: h = (0, 1, 0). alpha = 0.4, so k = ceil(4 * 0.6) = 3.
    # A_i = sum_j K_ij [V_j < V_i] = (0, 0.5, 0.5); denominators K row sums + h = (1.5, 3, 1.5).
    # class 0 (v = 0.3): L_cal = (0, (0.5 + 1) / 3, 0.5 / 1.5) = (0, .5, .33), L_t = 0 / 2 = 0: no L_i < 0 -> in.
    # class 1 (v = 0.7): L_cal = (0, 0.5 / 3, 0.5 / 1.5), L_t = 1 / 2: all three L_i < 0.5, 3 >= k -> out.
    # naive: the weight (0, 1, 0) + 1 at +inf never reaches 0.6 * 2 = 1.2 below +inf -> both classes.
    cal = [[0.8, 0.2], [0.6, 0.4], [0.4, 0.6]]
    near = [[1.0, 0.5, 0.0], [0.5, 1.0, 0.5], [0.0, 0.5, 1.0]]
    args = (cal, [0, 0, 0], [[0.7, 0.3]], [[0.0, 1.0, 0.0]], 0.4)
    assert _lcp(*args, form="valid", cal_kernel=near).tolist() == [[True, False]]
    assert _lcp(*args).tolist() == [[True, True]]
    # alpha = 0.6 (k = 2): the naive threshold is 0.4 (weight 1 >= 0.4 * 2) and both forms give {0}
    args = (*args[:4], 0.6)
    assert _lcp(*args, form="valid", cal_kernel=near).tolist() == [[True, False]]
    assert _lcp(*args).tolist() == [[True, False]]


def test_valid_localized_sets_with_equal_weights_are_split_conformal():
    rng = np.random.default_rng(14)
    for n in (9, 19, 99, 250):
        cal, test = _probs(rng, n), _probs(rng, 50)
        y = _sample_from(rng, cal)
        for alpha in (0.1, 0.2, 0.5):
            for score in ("lac", "aps"):
                expected = split_conformal_sets(cal, y, test, alpha, score=score)
                got = _lcp(cal, y, test, np.ones((50, n)), alpha, score=score, form="valid",
                           cal_kernel=np.ones((n, n)))
                assert np.array_equal(got, expected)


def _guan_valid_set(cal_scores, cal_kernel, h, candidate_scores, alpha):
    """Guan's valid LCP from its definition, by brute force: for each candidate score v, build the n + 1
    localized laws F_i (test score = v), scan the levels beta (every atom of every F_i, just above it),
    take the smallest beta at which at least (1 - alpha)(n + 1) points satisfy V_i <= Q(beta; F_i), and
    keep v when V_{n+1} = v <= Q(beta; F_{n+1})."""
    n = cal_scores.size
    full = np.zeros((n + 1, n + 1))
    full[:n, :n], full[n, :n], full[:n, n], full[n, n] = cal_kernel, h, h, 1.0
    kept = []
    for v in candidate_scores:
        scores = np.append(cal_scores, v)
        order = np.argsort(scores, kind="stable")
        cumulative = np.cumsum((full / full.sum(axis=1, keepdims=True))[:, order], axis=1)
        atoms = np.unique(cumulative)
        levels = np.concatenate([atoms[atoms < 1] + 1e-9, [1.0]])
        # quantiles[i, l] = Q(levels[l]; F_i) = the smallest score whose cumulative weight reaches the level
        position = np.stack([np.searchsorted(row, levels, side="left") for row in cumulative])
        quantiles = scores[order][np.minimum(position, n)]
        enough = np.mean(scores[:, None] <= quantiles, axis=0) >= 1 - alpha - 1e-12
        kept.append(v <= quantiles[n, np.argmax(enough)])
    return np.array(kept)


def test_valid_localized_sets_against_guans_definition_by_brute_force():
    rng = np.random.default_rng(15)
    for trial in range(12):
        n = int(rng.integers(5, 25))
        cal, test = _probs(rng, n), _probs(rng, 4)
        test[:2] = cal[:2]  # candidate scores tied with calibration scores
        y = _sample_from(rng, cal)
        points = rng.normal(size=(n + 4, 2))
        dist = np.linalg.norm(points[:, None] - points[None], axis=2)
        full = np.exp(-dist / rng.uniform(0.3, 2.0))
        alpha = float(rng.choice([0.1, 0.2, 0.3]))
        got = _lcp(cal, y, test, full[n:, :n], alpha, form="valid", cal_kernel=full[:n, :n])
        cal_scores = 1 - cal[np.arange(n), y]
        for t in range(4):
            expected = _guan_valid_set(cal_scores, full[:n, :n], full[n + t, :n], 1 - test[t], alpha)
            assert np.array_equal(got[t], expected), (trial, t)


def _rare_hard_group(rng, n):
    """A binary task with a common easy group (score U(0, 0.25)) and a rare hard one (5 %, score U(0.5, 1))."""
    hard = rng.uniform(size=n) < 0.05
    p_true = np.where(hard, rng.uniform(0.0, 0.5, n), rng.uniform(0.75, 1.0, n))
    y = rng.integers(0, 2, n)
    probs = np.empty((n, 2))
    probs[np.arange(n), y], probs[np.arange(n), 1 - y] = p_true, 1 - p_true
    return probs, y, hard


def test_valid_localized_sets_cover_where_the_naive_form_under_covers():
    # kernel 1 within a group and 0.47 across: the rare hard group borrows the easy group's small scores.
    # The valid form's coverage averaged over calibration draws is >= 1 - alpha (a theorem): its mean over
    # 300 draws must lie above 0.9 - 4 standard errors; the naive form's population coverage is about 0.88
    # (0.9 + h((1 - alpha) 0.05 - alpha 0.95) = 0.876 with separated score ranges; finite n adds a little),
    # so its mean must lie below 0.9 - 4 standard errors.
    coverage = {"naive": [], "valid": []}
    for seed in range(300):
        rng = np.random.default_rng(seed)
        cal, y_cal, g_cal = _rare_hard_group(rng, 200)
        test, y_test, g_test = _rare_hard_group(rng, 400)
        for form in coverage:
            sets = localized_conformal_sets(cal, y_cal, g_cal, test, g_test, 0.1, kernel=_same_group(0.47),
                                            form=form)
            coverage[form].append(sets[np.arange(400), y_test].mean())
    # Without ties among the localized ranks the valid form's mean coverage is exactly k / (n + 1) with
    # k = ceil((n + 1)(1 - alpha)) (the test point's rank is uniform), here 181 / 201: two-sided check.
    for form, values in coverage.items():
        mean, sem = np.mean(values), np.std(values, ddof=1) / np.sqrt(len(values))
        if form == "valid":
            assert abs(mean - 181 / 201) <= 4 * sem, (form, mean, sem)
        else:
            assert mean <= 0.9 - 4 * sem, (form, mean, sem)


def test_valid_localized_sets_cover_exactly_with_a_distance_kernel():
    # a continuous kernel exp(-|x - x'| / 0.3) on a 1-d feature that drives the classifier's quality:
    # mean coverage over 200 draws is k / (n + 1) = 91 / 101 up to 4 standard errors
    coverage = []
    for seed in range(200):
        rng = np.random.default_rng(1000 + seed)
        x = rng.uniform(size=150)
        p_true = np.clip(rng.normal(0.9 - 0.6 * x, 0.1), 0.01, 0.99)
        y = rng.integers(0, 2, 150)
        probs = np.empty((150, 2))
        probs[np.arange(150), y], probs[np.arange(150), 1 - y] = p_true, 1 - p_true
        sets = localized_conformal_sets(probs[:100], y[:100], x[:100], probs[100:], x[100:], 0.1, form="valid",
                                        kernel=_laplace_03)
        coverage.append(sets[np.arange(50), y[100:]].mean())
    mean, sem = np.mean(coverage), np.std(coverage, ddof=1) / np.sqrt(200)
    assert abs(mean - 91 / 101) <= 4 * sem, (mean, sem)


def _laplace_03(a, b):
    return np.exp(-np.abs(a - b.T) / 0.3)


def test_localized_sets_reject_bad_kernels_coordinates_and_forms():
    cal, test = [[0.8, 0.2], [0.6, 0.4], [0.4, 0.6]], [[0.7, 0.3]]
    near = np.array([[1.0, 0.5, 0.0], [0.5, 1.0, 0.5], [0.0, 0.5, 1.0]])
    args = (cal, [0, 0, 0], [0.0, 1.0, 2.0], test, [1.0], 0.1)
    with pytest.raises(ValueError, match="form must be one of"):
        localized_conformal_sets(*args, kernel=_laplace_03, form="exact")
    with pytest.raises(TypeError, match=r"kernel must be a function kernel\(a, b\)"):
        localized_conformal_sets(*args, kernel=near)
    for bad, message in ((near[:2], r"kernel\(cal_x, cal_x\) must have shape \(3, 3\)"),
                         (near * 2, "ones on its diagonal"), (near + np.triu(near, 1), "symmetric"),
                         (near - 1.0, "non-negative"), (np.full((3, 3), np.nan), r"kernel\(cal_x, cal_x\)")):
        with pytest.raises(ValueError, match=message):
            localized_conformal_sets(*args, kernel=lambda a, b, bad=bad: bad, form="valid")
    with pytest.raises(ValueError, match=r"kernel\(test_x, cal_x\) must be non-negative"):
        _lcp(cal, [0, 0, 0], test, [[1.0, -1.0, 1.0]], 0.1)
    with pytest.raises(ValueError, match=r"kernel\(test_x, cal_x\) must have shape \(1, 3\)"):
        localized_conformal_sets(*args, kernel=lambda a, b: np.ones((1, 2)))
    with pytest.raises(ValueError, match=r"cal_x must have one row per point \(3\), got 2"):
        localized_conformal_sets(cal, [0, 0, 0], [0.0, 1.0], test, [1.0], 0.1, kernel=_laplace_03)
    with pytest.raises(ValueError, match=r"test_x must have 1 column\(s\) as at fit, got 2"):
        localized_conformal_sets(*args[:4], [[1.0, 2.0]], 0.1, kernel=_laplace_03)
    with pytest.raises(ValueError, match="test_x contains NaN"):
        localized_conformal_sets(*args[:4], [np.nan], 0.1, kernel=_laplace_03)


def _reference_mondrian_sets(cal_probs, cal_y, test_probs, alpha, cal_codes, test_codes, score):
    """Mondrian sets by definition, one (test point, label) cell at a time: the scores of the cell's
    category, sorted, read at the conformal rank ceil((n_e + 1)(1 - alpha)); inf when n_e is too small."""
    cal_scores = class_scores(cal_probs, cal_y, score=score)
    test_scores = class_scores(test_probs, score=score)
    sets = np.zeros(test_scores.shape, dtype=bool)
    for j, c in np.ndindex(*test_scores.shape):
        chosen = np.sort(cal_scores[cal_codes == test_codes[j, c]])
        k = int(np.ceil(np.round((chosen.size + 1) * (1 - alpha), 9)))
        sets[j, c] = test_scores[j, c] <= (chosen[k - 1] if k <= chosen.size else np.inf)
    return sets


@pytest.mark.parametrize("seed", range(4))
def test_mondrian_sets_equal_the_cell_by_cell_definition_with_ties(seed):
    # probabilities on a 0.1 grid, so that test scores tie with the thresholds; categories as codes
    # per point, per (point, label), the label itself and a function, some with too few points and
    # some test categories unseen in calibration (too_small="include" puts those labels in the set)
    rng = np.random.default_rng(seed)
    n_classes, n, m = int(rng.integers(2, 6)), int(rng.integers(30, 200)), 40
    cal = rng.multinomial(10, np.full(n_classes, 1 / n_classes), size=n) / 10
    test = rng.multinomial(10, np.full(n_classes, 1 / n_classes), size=m) / 10
    cal_y = rng.integers(0, n_classes, size=n)
    alpha = float(rng.choice([0.05, 0.1, 0.2, 1 / 3]))
    score = ["lac", "aps"][seed % 2]
    cal_codes, codes_m, codes_mk = rng.integers(0, 6, n), rng.integers(0, 7, m), rng.integers(0, 7, (m, n_classes))
    by_rounded_top = lambda probs, labels: np.round(10 * probs.max(axis=1)).astype(int) % 3 + 2 * (labels % 2)
    cases = [
        ({"cal_categories": cal_codes, "test_categories": codes_m}, cal_codes,
         np.repeat(codes_m[:, None], n_classes, axis=1)),
        ({"cal_categories": cal_codes, "test_categories": codes_mk}, cal_codes, codes_mk),
        ({"categories": "label"}, cal_y, np.tile(np.arange(n_classes), (m, 1))),
        ({}, cal_y, np.tile(np.arange(n_classes), (m, 1))),  # the default: label-conditional
        ({"categories": by_rounded_top}, by_rounded_top(cal, cal_y),
         np.stack([by_rounded_top(test, np.full(m, c)) for c in range(n_classes)], axis=1)),
    ]
    for taxonomy, cal_ref, test_ref in cases:
        got = mondrian_conformal_sets(cal, cal_y, test, alpha, **taxonomy, score=score, too_small="include")
        assert np.array_equal(got, _reference_mondrian_sets(cal, cal_y, test, alpha, cal_ref, test_ref, score))
    plain = split_conformal_sets(cal, cal_y, test, 0.2, score=score)
    assert np.array_equal(plain, _reference_mondrian_sets(cal, cal_y, test, 0.2, np.zeros(n), np.zeros((m, n_classes)),
                                                          score))
