"""The estimator contract of calibtut.conformal: each class against its one-call wrapper, hand cases,
coverage, and clear errors (predicting before fit, bad arguments)."""

import numpy as np
import pytest

from calibtut.conformal import (
    ConformalizedQuantileRegressor,
    DistributionalConformalRegressor,
    LocalizedConformalClassifier,
    OneSidedConformalRegressor,
    RAPSClassifier,
    SplitConformalClassifier,
    SplitConformalRegressor,
    coverage_band,
    cqr_interval,
    dcp_interval,
    label_conditional_sets,
    localized_conformal_sets,
    mondrian_conformal_sets,
    one_sided_cqr_quantiles,
    raps_sets,
    split_conformal_sets,
)
from calibtut.recalibration import gaussian_quantile_function


def _tied_probs(rng, n, n_classes):
    """Probabilities on a grid of 0.1: many tied scores within and across rows."""
    return rng.multinomial(10, np.full(n_classes, 1 / n_classes), size=n) / 10


def _draw(rng, n_classes=3, n=None, m=None):
    n = int(rng.integers(20, 120)) if n is None else n
    m = int(rng.integers(1, 40)) if m is None else m
    cal, test = _tied_probs(rng, n, n_classes), _tied_probs(rng, m, n_classes)
    return cal, rng.integers(0, n_classes, n), test


# ---------------------------------------------------------------- class == wrapper on tied inputs


@pytest.mark.parametrize("seed", range(6))
def test_split_classifier_equals_its_wrappers(seed):
    rng = np.random.default_rng(seed)
    cal, y, test = _draw(rng)
    alpha = float(rng.choice([0.1, 0.2, 0.3]))
    for score, randomized, extra in (("lac", False, {}), ("aps", False, {}), ("aps", True, {}),
                                     ("raps", True, {"lam": 0.1, "k_reg": 1})):
        options = {"score": score, "randomized": randomized, **extra}
        model = SplitConformalClassifier(alpha=alpha, seed=seed, **options).fit(cal, y)
        assert np.array_equal(model.predict_set(test), split_conformal_sets(cal, y, test, alpha, seed=seed, **options))
    model = SplitConformalClassifier(alpha=alpha, too_small="include").fit(cal, y, categories="label")
    assert np.array_equal(model.predict_set(test), label_conditional_sets(cal, y, test, alpha, too_small="include"))


@pytest.mark.parametrize("seed", range(6))
def test_mondrian_classifier_equals_its_wrapper(seed):
    rng = np.random.default_rng(10 + seed)
    cal, y, test = _draw(rng, n=300)
    cal_codes, test_codes = rng.integers(0, 3, len(cal)), rng.integers(0, 3, len(test))
    per_label = rng.integers(0, 3, (len(test), 3))

    def confident(probs, labels):
        return (np.argmax(probs, axis=1) == labels).astype(int)

    for fit_categories, predict_categories in ((cal_codes, test_codes), (cal_codes, per_label),
                                               (confident(cal, y), confident)):
        model = SplitConformalClassifier(alpha=0.2, score="aps", too_small="include").fit(
            cal, y, categories=fit_categories)
        got = model.predict_set(test, categories=predict_categories)
        if callable(predict_categories):  # codes at fit, the rule at predict: the rule throughout
            expected = mondrian_conformal_sets(cal, y, test, 0.2, categories=predict_categories, score="aps",
                                               too_small="include")
        else:
            expected = mondrian_conformal_sets(cal, y, test, 0.2, cal_categories=fit_categories,
                                               test_categories=predict_categories, score="aps", too_small="include")
        assert np.array_equal(got, expected)
    by_function = SplitConformalClassifier(alpha=0.2, too_small="include").fit(cal, y, categories=confident)
    assert np.array_equal(by_function.predict_set(test),
                          mondrian_conformal_sets(cal, y, test, 0.2, categories=confident, too_small="include"))


@pytest.mark.parametrize("form", ["naive", "valid"])
def test_localized_classifier_equals_its_wrapper(form):
    rng = np.random.default_rng(20)
    for _ in range(5):
        cal, y, test = _draw(rng)
        cal_x, test_x = rng.normal(size=(len(cal), 2)), rng.normal(size=(len(test), 2))
        for score in ("lac", "aps"):
            model = LocalizedConformalClassifier(kernel=_laplace, alpha=0.2, score=score, form=form)
            expected = localized_conformal_sets(cal, y, cal_x, test, test_x, 0.2, kernel=_laplace, score=score,
                                                form=form)
            assert np.array_equal(model.fit(cal, y, cal_x).predict_set(test, test_x), expected)


def _laplace(a, b):
    return np.exp(-np.linalg.norm(a[:, None] - b[None], axis=2))


@pytest.mark.parametrize("criterion", ["size", "adaptiveness"])
def test_raps_classifier_equals_its_wrapper(criterion):
    rng = np.random.default_rng(30)
    cal, y, test = _draw(rng, n_classes=4, n=400, m=50)
    model = RAPSClassifier(alpha=0.1, criterion=criterion, seed=3).fit(cal, y)
    sets, params = raps_sets(cal, y, test, 0.1, criterion=criterion, seed=3)
    assert np.array_equal(model.predict_set(test), sets)
    assert params == {"lam": model.lam_, "k_reg": model.k_reg_}
    assert np.array_equal(model.classifier_.predict_set(test).shape, (50, 4))


@pytest.mark.parametrize("seed", range(4))
def test_quantile_regressors_equal_their_wrappers(seed):
    # labels and quantiles on a grid of 0.5: tied residuals, and residuals tied with the threshold
    rng = np.random.default_rng(40 + seed)
    n, m = int(rng.integers(5, 60)), int(rng.integers(1, 20))
    cal_y = rng.integers(-4, 5, n) / 2
    lower, test_lower = rng.integers(-4, 1, n) / 2, rng.integers(-4, 1, m) / 2
    cal_q = np.column_stack([lower, lower + rng.integers(0, 5, n) / 2])
    test_q = np.column_stack([test_lower, test_lower + rng.integers(0, 5, m) / 2])
    alpha = float(rng.choice([0.1, 0.2, 0.5]))
    for symmetric in (True, False):
        model = ConformalizedQuantileRegressor(alpha=alpha, symmetric=symmetric).fit(cal_q, cal_y)
        expected = model.predict_interval(test_q)
        got = cqr_interval(cal_q, cal_y, test_q, alpha, symmetric=symmetric)
        assert all(np.array_equal(a, b) for a, b in zip(got, expected, strict=True))
    levels = np.sort(rng.choice(np.arange(1, 20) / 20, size=3, replace=False))
    cal_q3, test_q3 = rng.integers(-4, 5, (n, 3)) / 2, rng.integers(-4, 5, (m, 3)) / 2
    for clip_rank in (False, True):
        expected = OneSidedConformalRegressor(levels=levels, clip_rank=clip_rank).fit(cal_q3, cal_y).predict_quantiles(levels, test_q3)
        got = one_sided_cqr_quantiles(cal_q3, cal_y, test_q3, levels, clip_rank=clip_rank)
        assert np.array_equal(got, expected)


@pytest.mark.parametrize("seed", range(4))
def test_distributional_conformal_equals_its_wrapper(seed):
    rng = np.random.default_rng(50 + seed)
    n, m = int(rng.integers(5, 80)), int(rng.integers(1, 20))
    cal_pit = rng.integers(0, 11, n) / 10  # tied PITs, 0 and 1 included
    quantile_function = gaussian_quantile_function(rng.normal(size=m), rng.uniform(0.5, 2.0, m))
    alpha = float(rng.choice([0.1, 0.2, 0.5]))
    for score in ("abs", "equal_tailed"):
        expected = DistributionalConformalRegressor(alpha=alpha, score=score).fit(cal_pit).predict_interval(quantile_function)
        got = dcp_interval(cal_pit, quantile_function, alpha, score=score)
        assert all(np.array_equal(a, b) for a, b in zip(got, expected, strict=True))


# ---------------------------------------------------------------- hand-computed cases


def test_mondrian_codes_at_fit_and_a_function_at_predict_by_hand():
    # calibration categories 0, 0, 0, 1, 1, 1 with LAC scores 0.1 0.2 0.3 | 0.4 0.5 0.6 (labels all 0);
    # alpha 0.5: rank ceil(4 * 0.5) = 2 in each category -> thresholds 0.2 and 0.5.
    cal = [[0.9, 0.1], [0.8, 0.2], [0.7, 0.3], [0.6, 0.4], [0.5, 0.5], [0.4, 0.6]]
    model = SplitConformalClassifier(alpha=0.5).fit(cal, [0] * 6, categories=[0, 0, 0, 1, 1, 1])
    assert model.thresholds_ == pytest.approx({0: 0.2, 1: 0.5})
    # test point (0.75, 0.25) has scores 0.25, 0.75: in category 0 nothing enters, in category 1 label 0 does
    assert model.predict_set([[0.75, 0.25]] * 2, categories=[0, 1]).tolist() == [[False, False], [True, False]]
    # a function of the probabilities and the candidate label: category 1 for the candidate label 0 only
    got = model.predict_set([[0.75, 0.25]], categories=lambda probs, labels: (labels == 0).astype(int))
    assert got.tolist() == [[True, False]]


def test_cqr_and_one_sided_cqr_by_hand():
    # CQR: lower 0, upper 1; y = 0.5, 1.5, 3.0 -> scores -0.5, 0.5, 2.0; alpha 0.5: rank 2 -> 0.5
    cqr = ConformalizedQuantileRegressor(alpha=0.5).fit(np.tile([0.0, 1.0], (3, 1)), [0.5, 1.5, 3.0])
    lower, upper = cqr.predict_interval([[0.0, 2.0], [1.0, 1.0]])
    assert lower.tolist() == [-0.5, 0.5] and upper.tolist() == [2.5, 1.5]
    one_sided = OneSidedConformalRegressor(levels=[0.2, 0.6]).fit([[0.0, 1.0]] * 4, [0.0, 1.0, 2.0, 3.0])
    assert one_sided.predict_quantiles([0.2, 0.6], [[10.0, 11.0]]).tolist() == [[10.0, 12.0]]
    assert one_sided.predict_quantiles([0.6], [[10.0, 11.0]]).tolist() == [[12.0]]  # a subset


# ---------------------------------------------------------------- coverage


def test_mondrian_classifier_covers_in_every_category():
    # a fixed partition into 2 categories of about 150 calibration points each; over 150 draws the coverage
    # of each category on its 100 test points lies in the 99 % beta-binomial band of its own size (within
    # 3 binomial sds of the 1 % misses; the category sizes vary a little around 150, so the band of 140
    # points, slightly wider, is used). LAC scores: continuous, no ties (APS ties at 1 for the last class).
    alpha, runs = 0.1, 150
    lo, hi = coverage_band(140, alpha, 100, level=0.99)
    inside = []
    for seed in range(runs):
        rng = np.random.default_rng(seed)
        probs = rng.dirichlet(np.full(3, 0.5), size=500)
        y = (rng.uniform(size=(500, 1)) > np.cumsum(probs, axis=1)).sum(axis=1)
        codes = (probs[:, 0] > np.median(probs[:, 0])).astype(int)
        model = SplitConformalClassifier(alpha=alpha).fit(probs[:300], y[:300], categories=codes[:300])
        sets = model.predict_set(probs[300:], categories=codes[300:])
        covered = sets[np.arange(200), y[300:]]
        for c in (0, 1):
            chosen = covered[codes[300:] == c][:100]
            if chosen.size == 100:
                inside.append(lo <= chosen.mean() <= hi)
    assert np.mean(inside) >= 0.99 - 3 * np.sqrt(0.01 * 0.99 / len(inside))


# ---------------------------------------------------------------- clear errors


_CAL, _Y = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]], [0, 0, 1, 1]


@pytest.mark.parametrize(("model", "predict"), [
    (SplitConformalClassifier(), lambda m: m.predict_set(_CAL)),
    (LocalizedConformalClassifier(kernel=_laplace), lambda m: m.predict_set(_CAL, np.zeros(4))),
    (RAPSClassifier(), lambda m: m.predict_set(_CAL)),
    (SplitConformalRegressor(), lambda m: m.predict_interval([0.0])),
    (ConformalizedQuantileRegressor(), lambda m: m.predict_interval([[0.0, 1.0]])),
    (OneSidedConformalRegressor(levels=[0.5]), lambda m: m.predict_quantiles([0.5], [[0.0]])),
    (DistributionalConformalRegressor(), lambda m: m.predict_interval(lambda u: u[None, :])),
])
def test_predicting_before_fit_raises(model, predict):
    with pytest.raises(RuntimeError, match=f"this {type(model).__name__} is not fitted: call fit first"):
        predict(model)


def test_constructor_arguments_are_stored_unchanged_and_checked_at_fit():
    for build, error, message in (
        (lambda: SplitConformalClassifier(alpha=1.5).fit(_CAL, _Y), ValueError, r"alpha must lie in \(0, 1\), got 1.5"),
        (lambda: SplitConformalClassifier(score="bayes").fit(_CAL, _Y), ValueError, "score must be one of"),
        (lambda: SplitConformalClassifier(allow_empty=1).fit(_CAL, _Y), TypeError, "allow_empty must be a bool"),
        (lambda: SplitConformalClassifier(too_small="skip").fit(_CAL, _Y), ValueError, "too_small must be one of"),
        (lambda: SplitConformalClassifier(lam=0.1).fit(_CAL, _Y), ValueError,
         "lam and k_reg apply to score='raps' only"),
        (lambda: SplitConformalClassifier(seed=-1).fit(_CAL, _Y), ValueError, "seed"),
        (lambda: LocalizedConformalClassifier(kernel=_laplace, score="raps").fit(_CAL, _Y, np.zeros(4)), ValueError,
         "score must be one of"),
        (lambda: LocalizedConformalClassifier(kernel=_laplace, form="exact").fit(_CAL, _Y, np.zeros(4)), ValueError,
         "form must be one of"),
        (lambda: LocalizedConformalClassifier(kernel=np.ones((4, 4))).fit(_CAL, _Y, np.zeros(4)), TypeError,
         r"kernel must be a function kernel\(a, b\)"),
        (lambda: RAPSClassifier(criterion="width").fit(_CAL, _Y), ValueError, "criterion must be one of"),
        (lambda: RAPSClassifier(tune_fraction=1.0).fit(_CAL, _Y), ValueError, "tune_fraction must be < 1"),
        (lambda: RAPSClassifier(randomized="yes").fit(_CAL, _Y), TypeError, "randomized must be a bool"),
        (lambda: ConformalizedQuantileRegressor(symmetric="yes").fit(np.zeros((4, 2)), np.zeros(4)), TypeError,
         "symmetric must be a bool"),
        (lambda: OneSidedConformalRegressor(levels=[0.5], clip_rank=1).fit(np.zeros((4, 1)), np.zeros(4)), TypeError,
         "clip_rank must be a bool"),
        (lambda: DistributionalConformalRegressor(score="left").fit([0.5] * 4), ValueError, "score must be one of"),
    ):
        with pytest.raises(error, match=message):
            build()  # the constructor stores the value; fit refuses it


def test_split_classifier_keywords_must_match_the_fit():
    plain = SplitConformalClassifier(alpha=0.4).fit(_CAL, _Y)
    with pytest.raises(ValueError, match="fitted with categories=None"):
        plain.predict_set(_CAL, categories=[0, 0, 1, 1])
    with pytest.raises(ValueError, match="test_weight was given"):
        plain.predict_set(_CAL, test_weight=np.ones(4))
    coded = SplitConformalClassifier(alpha=0.4, too_small="include").fit(_CAL, _Y, categories=[0, 1, 0, 1])
    with pytest.raises(ValueError, match="needs the test categories"):
        coded.predict_set(_CAL)
    with pytest.raises(ValueError, match=r"must have shape \(4,\) or \(4, 2\)"):
        coded.predict_set(_CAL, categories=[0, 1])
    with pytest.raises(TypeError, match="categories must hold numbers"):
        coded.predict_set(_CAL, categories=["a", "b", "a", "b"])
    weighted = SplitConformalClassifier(alpha=0.4).fit(_CAL, _Y, cal_weight=[1, 1, 1, 1])
    with pytest.raises(ValueError, match="test_weight is required"):
        weighted.predict_set(_CAL)
    with pytest.raises(ValueError, match="cannot be combined"):
        SplitConformalClassifier(alpha=0.4).fit(_CAL, _Y, categories="label", cal_weight=[1, 1, 1, 1])
    with pytest.raises(ValueError, match="categories must be 'label'"):
        SplitConformalClassifier(alpha=0.4).fit(_CAL, _Y, categories="class")
    with pytest.raises(ValueError, match="cal_weight must be non-negative"):
        SplitConformalClassifier(alpha=0.4).fit(_CAL, _Y, cal_weight=[1, -1, 1, 1])
    with pytest.raises(ValueError, match="cal_probs must sum to 1"):
        SplitConformalClassifier(alpha=0.4).fit([[0.5, 0.6]] * 4, _Y)
    with pytest.raises(ValueError, match="test_probs has 3 classes, the calibration set has 2"):
        plain.predict_set([[0.2, 0.3, 0.5]])


def test_regression_estimators_check_their_inputs():
    with pytest.raises(ValueError, match=r"cal_quantiles must have 2 columns"):
        ConformalizedQuantileRegressor().fit(np.zeros((3, 3)), np.zeros(3))
    cqr = ConformalizedQuantileRegressor(alpha=0.5).fit(np.zeros((3, 2)), np.zeros(3))
    with pytest.raises(ValueError, match=r"test_quantiles must have 2 dimension"):
        cqr.predict_interval([0.0, 1.0])
    one_sided = OneSidedConformalRegressor(levels=[0.2, 0.6]).fit(np.zeros((4, 2)), np.zeros(4))
    with pytest.raises(ValueError, match=r"test_quantiles must have 2 columns"):
        one_sided.predict_quantiles([0.2, 0.6], np.zeros((1, 3)))
    with pytest.raises(ValueError, match=r"levels must be among the fitted levels \[0.2, 0.6\], got \[0.5\]"):
        one_sided.predict_quantiles([0.2, 0.5], np.zeros((1, 2)))
    with pytest.raises(ValueError, match="cal_pit must lie in"):
        DistributionalConformalRegressor().fit([0.5, 1.5])
