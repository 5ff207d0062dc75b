"""Tests for calibtut.recalibration: oracles (netcal, MAPIE, scipy), hand cases, coverage laws."""

import math
import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, optimize, special, stats

from calibtut.conformal import (
    ConformalizedQuantileRegressor,
    DistributionalConformalRegressor,
    OneSidedConformalRegressor,
    conformal_rank,
    coverage_distribution,
    recalibration_conformal_table,
)
from calibtut.recalibration import (
    IsotonicRecalibrator,
    QuantileRecalibrator,
    TemperatureBoundWarning,
    TemperatureScaling,
    gaussian_quantile_function,
    mixture_quantile_function,
    recalibrated_quantiles,
    temperature_scaled_probs,
)

METHODS = ["emp", "lin", "kde", "dcp"]


def _classification_data(seed, n=600, k=4, temperature=2.0):
    rng = np.random.default_rng(seed)
    logits = 3 * rng.normal(size=(n, k))
    p = special.softmax(logits / temperature, axis=1)
    labels = (rng.random((n, 1)) > p.cumsum(axis=1)).sum(axis=1)
    return logits, labels


def _grid_temperature(logits, labels, weights=None, loss="nll"):
    log_t = np.linspace(np.log(0.05), np.log(20), 20001)
    w = np.full(labels.size, 1 / labels.size) if weights is None else weights / weights.sum()
    values = []
    for t in np.exp(log_t[::50]):
        values.append(_loss(logits / t, labels, w, loss))
    coarse = np.exp(log_t[::50][int(np.argmin(values))])
    fine = np.exp(np.linspace(np.log(coarse) - 0.05, np.log(coarse) + 0.05, 4001))
    return fine[int(np.argmin([_loss(logits / t, labels, w, loss) for t in fine]))]


def _loss(scaled, labels, w, loss):
    log_p = special.log_softmax(scaled, axis=1)
    if loss == "nll":
        return -np.dot(w, log_p[np.arange(labels.size), labels])
    onehot = np.eye(scaled.shape[1])[labels]
    return np.dot(w, np.sum((np.exp(log_p) - onehot) ** 2, axis=1))


# --- temperature scaling --------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("loss", ["nll", "brier"])
def test_temperature_matches_grid_search(seed, loss):
    logits, labels = _classification_data(seed)
    t = TemperatureScaling(loss=loss).fit(logits, labels).temperature_
    assert t == pytest.approx(_grid_temperature(logits, labels, loss=loss), rel=1e-3)


@pytest.mark.parametrize("seed", range(6))
def test_newton_temperature_equals_a_tight_brent_search(seed):
    # the NLL fit is Newton's method on 1 / T; a bounded Brent search on log T with a tight
    # tolerance is an independent optimiser of the same convex objective
    rng = np.random.default_rng(seed)
    logits, labels = _classification_data(seed, n=400, k=2 + seed, temperature=[0.3, 1, 4][seed % 3])
    w = rng.exponential(size=labels.size) if seed % 2 else None
    weights = np.full(labels.size, 1 / labels.size) if w is None else w / w.sum()
    brent = optimize.minimize_scalar(lambda log_t: _loss(logits / np.exp(log_t), labels, weights, "nll"),
                                     bounds=np.log([1e-2, 1e2]), method="bounded", options={"xatol": 1e-12})
    t = TemperatureScaling().fit(logits, labels, cal_weight=w).temperature_
    assert t == pytest.approx(np.exp(brent.x), rel=1e-6)


def test_newton_temperature_stops_at_the_bound():
    # labels that always agree with the largest logit want T -> 0: the fit returns t_min
    logits = np.array([[3.0, 0.0], [0.0, 2.0], [1.0, -1.0]])
    with pytest.warns(TemperatureBoundWarning, match=r"0\.5 is on the bound of bounds=\(0\.5, 10\) at t_min"):
        ts = TemperatureScaling(bounds=(0.5, 10.0)).fit(logits, [0, 1, 0])
    assert ts.temperature_ == pytest.approx(0.5, rel=1e-9)


@pytest.mark.parametrize("loss", ["nll", "brier"])
def test_a_temperature_on_a_search_bound_is_reported(loss):
    logits, labels = _classification_data(0, n=300)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # inside the range: no warning
        assert TemperatureScaling(loss=loss).fit(logits, labels).at_bound_ is None
    # the NLL fit warns; the Brier fit, driven to its bounds on purpose in the covariate-shift
    # chapters, only records it
    reported = pytest.warns(TemperatureBoundWarning) if loss == "nll" else warnings.catch_warnings()
    # logits that rank the labels backwards: the loss falls as T grows, up to t_max
    with reported as record:
        if loss == "brier":
            warnings.simplefilter("error")
        ts = TemperatureScaling(loss=loss, bounds=(0.1, 3.0)).fit(-logits, labels)
    assert ts.temperature_ == pytest.approx(3.0, rel=1e-5) and ts.at_bound_ == "upper"
    if loss == "nll":
        assert re.search("at t_max: .* no better than a constant .* widen bounds", str(record[0].message))
    # labels that are every row's largest logit: the loss falls as T shrinks, down to t_min
    reported = pytest.warns(TemperatureBoundWarning) if loss == "nll" else warnings.catch_warnings()
    with reported as record:
        if loss == "brier":
            warnings.simplefilter("error")
        ts = TemperatureScaling(loss=loss).fit(logits, logits.argmax(axis=1))
    assert ts.temperature_ == pytest.approx(0.01, rel=1e-5) and ts.at_bound_ == "lower"
    if loss == "nll":
        assert re.search("at t_min: .* separate the calibration labels perfectly", str(record[0].message))


def test_probabilities_passed_as_logits_are_reported():
    logits, labels = _classification_data(1, n=200)
    probs = special.softmax(logits, axis=1)
    with pytest.warns(UserWarning, match=r"cal_logits look like class probabilities .*numpy\.log"):
        ts = TemperatureScaling().fit(probs, labels)
    with pytest.warns(UserWarning, match="test_logits look like class probabilities"):
        ts.predict_proba(probs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # log-probabilities are logits: same temperature, no warning
        t_log = TemperatureScaling().fit(np.log(probs), labels).temperature_
    assert t_log == pytest.approx(TemperatureScaling().fit(logits, labels).temperature_, rel=1e-6)


def test_temperature_refuses_test_logits_with_another_number_of_classes():
    logits, labels = _classification_data(2, n=100, k=3)
    ts = TemperatureScaling().fit(logits, labels)
    assert ts.n_classes_ == 3
    with pytest.raises(ValueError, match="test_logits has 2 classes, the calibration set has 3"):
        ts.predict_proba(logits[:, :2])
    with pytest.raises(ValueError, match="test_logits has 2 classes, the calibration set has 3"):
        temperature_scaled_probs(logits, labels, logits[:, :2])


def test_weighted_temperature_matches_grid_and_repetition():
    logits, labels = _classification_data(3)
    w = np.random.default_rng(3).integers(0, 4, labels.size).astype(float)
    t_w = TemperatureScaling().fit(logits, labels, cal_weight=w).temperature_
    assert t_w == pytest.approx(_grid_temperature(logits, labels, weights=w), rel=1e-3)
    rep = np.repeat(np.arange(labels.size), w.astype(int))
    t_rep = TemperatureScaling().fit(logits[rep], labels[rep]).temperature_
    assert t_w == pytest.approx(t_rep, rel=1e-6)


def test_temperature_matches_netcal():
    netcal_scaling = pytest.importorskip("netcal.scaling")
    logits, labels = _classification_data(5, n=800)
    ours = TemperatureScaling().fit(logits, labels)
    ref = netcal_scaling.TemperatureScaling(method="mle")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref.fit(special.softmax(logits, axis=1), labels)
    # netcal stores the inverse temperature as its weight
    assert 1 / float(np.ravel(ref.weights)[0]) == pytest.approx(ours.temperature_, rel=1e-2)


def test_temperature_recovers_truth_and_keeps_argmax():
    logits, labels = _classification_data(7, n=20000, temperature=2.5)
    ts = TemperatureScaling().fit(logits, labels)
    assert ts.temperature_ == pytest.approx(2.5, rel=0.05)
    probs = ts.predict_proba(logits)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0)
    np.testing.assert_array_equal(probs.argmax(axis=1), logits.argmax(axis=1))


def test_temperature_bad_arguments():
    logits, labels = _classification_data(0, n=20)
    with pytest.raises(ValueError, match="cal_y must be integers in 0..3"):
        TemperatureScaling().fit(logits, labels + 10)
    with pytest.raises(ValueError, match="cal_logits"):
        TemperatureScaling().fit(logits[:, :1], labels * 0)
    with pytest.raises(ValueError, match="loss"):
        TemperatureScaling(loss="ece").fit(logits, labels)
    with pytest.raises(ValueError, match="cal_weight"):
        TemperatureScaling().fit(logits, labels, cal_weight=-np.ones(20))
    with pytest.raises(ValueError, match="bounds"):
        TemperatureScaling(bounds=(2.0, 1.0)).fit(logits, labels)
    with pytest.raises(ValueError, match="cal_weight must not be all zero"):
        TemperatureScaling().fit(logits, labels, cal_weight=np.zeros(20))
    with pytest.raises(TypeError, match="positional"):
        TemperatureScaling().fit(logits, labels, np.ones(20))  # weights are keyword-only
    with pytest.raises(RuntimeError, match="not fitted"):
        TemperatureScaling().predict_proba(logits)


@pytest.mark.parametrize("seed", range(3))
def test_temperature_scaling_equals_its_wrapper(seed):
    rng = np.random.default_rng(seed)
    logits, labels = _classification_data(seed, n=int(rng.integers(20, 200)))
    logits = np.round(logits)  # tied logits within and across rows
    test = np.round(3 * rng.normal(size=(15, logits.shape[1])))
    weights = rng.integers(0, 3, labels.size).astype(float)
    weights[0] = 1.0
    for loss in ("nll", "brier"):
        for cal_weight in (None, weights):
            model = TemperatureScaling(loss=loss, bounds=(0.1, 10.0)).fit(logits, labels, cal_weight=cal_weight)
            got = temperature_scaled_probs(logits, labels, test, cal_weight=cal_weight, loss=loss,
                                           bounds=(0.1, 10.0))
            assert np.array_equal(got, model.predict_proba(test))


@pytest.mark.parametrize(("model", "predict"), [
    (TemperatureScaling(), lambda m: m.predict_proba([[0.0, 1.0]])),
    (QuantileRecalibrator(), lambda m: m.transform([0.5])),
    (QuantileRecalibrator(), lambda m: m.inverse_transform([0.5])),
    (QuantileRecalibrator(), lambda m: m.predict_quantiles([0.5], lambda u: u[None, :])),
    (IsotonicRecalibrator(), lambda m: m.transform([0.5])),
    (IsotonicRecalibrator(), lambda m: m.mean(0.0, 1.0)),
    (IsotonicRecalibrator(), lambda m: m.predict_quantiles([0.5], lambda u: u[None, :])),
])
def test_predicting_before_fit_raises(model, predict):
    with pytest.raises(RuntimeError, match=f"this {type(model).__name__} is not fitted: call fit first"):
        predict(model)


# --- quantile recalibration maps ------------------------------------------------------------


def test_emp_matches_scipy_ecdf():
    pit = np.random.default_rng(0).random(200)
    grid = np.linspace(0, 1, 301)
    ours = QuantileRecalibrator(method="emp").fit(pit).transform(grid)
    np.testing.assert_allclose(ours, stats.ecdf(pit).cdf.evaluate(grid))


def test_lin_hand_case():
    rec = QuantileRecalibrator(method="lin").fit([0.6, 0.2])
    # knots (0, 0), (0.2, 1/3), (0.6, 2/3), (1, 1)
    np.testing.assert_allclose(rec.transform([0.1, 0.4, 0.8, 1.0]), [1 / 6, 0.5, 5 / 6, 1.0])
    np.testing.assert_allclose(rec.inverse_transform([1 / 6, 0.5, 5 / 6]), [0.1, 0.4, 0.8])
    # tied PITs: the knots (0.2, 1/4) and (0.2, 2/4) merge into (0.2, 3/8), as the authors'
    # LinearSpline merges them: knots (0, 0), (0.2, 3/8), (0.6, 3/4), (1, 1), a continuous map
    tied = QuantileRecalibrator(method="lin").fit([0.2, 0.6, 0.2])
    np.testing.assert_allclose(tied.transform([0.1, 0.2, 0.4, 1.0]), [3 / 16, 3 / 8, 9 / 16, 1.0])
    np.testing.assert_allclose(tied.inverse_transform([3 / 16, 3 / 8, 9 / 16, 7 / 8]), [0.1, 0.2, 0.4, 0.8])
    # ties at 0 and 1 join the fixed end knots: no mass at -inf or +inf
    ends = QuantileRecalibrator(method="lin").fit([0.0, 0.0, 0.5, 1.0])  # knots (0, 0), (0.5, 3/5), (1, 1)
    np.testing.assert_allclose(ends.transform([0.0, 0.25, 0.75, 1.0]), [0.0, 0.3, 0.8, 1.0])


def test_emp_inverse_is_an_order_statistic():
    rec = QuantileRecalibrator(method="emp").fit([0.9, 0.1, 0.3, 0.2])
    np.testing.assert_array_equal(rec.inverse_transform([1e-12, 0.25, 0.26, 0.75, 0.999]), [0.1, 0.1, 0.2, 0.3, 0.9])
    rec.method = "lin"  # changing the parameter after fit does not change the fitted map
    np.testing.assert_array_equal(rec.transform([0.25]), [0.5])


def test_dcp_map_hand_case():
    rec = QuantileRecalibrator(method="dcp").fit([0.1, 0.4, 0.6, 0.8])
    np.testing.assert_allclose(rec.transform([0.05, 0.5, 1.0]), [0.0, 0.4, 0.8])
    np.testing.assert_array_equal(rec.inverse_transform([0.5, 0.9]), [0.6, np.inf])


def test_kde_matches_numerical_integration():
    pit = np.array([0.02, 0.3, 0.35, 0.7, 0.97])
    tau = 20.0
    rec = QuantileRecalibrator(method="kde", tau=tau).fit(pit)

    def density(t):
        u = np.concatenate([t - pit, t + pit, t - 2 + pit])
        return np.sum(tau * special.expit(tau * u) * special.expit(-tau * u))

    total, _ = integrate.quad(density, 0, 1)
    for u in (0.0, 0.1, 0.33, 0.5, 0.9, 1.0):
        ref = integrate.quad(density, 0, u)[0] / total
        assert rec.transform([u])[0] == pytest.approx(ref, abs=1e-9)


def test_kde_tends_to_emp_for_sharp_kernels():
    pit = np.random.default_rng(1).random(50)
    grid = np.linspace(0.005, 0.995, 100)
    grid = grid[np.min(np.abs(grid[:, None] - pit[None, :]), axis=1) > 1e-3]
    kde = QuantileRecalibrator(method="kde", tau=1e6).fit(pit).transform(grid)
    emp = QuantileRecalibrator(method="emp").fit(pit).transform(grid)
    np.testing.assert_allclose(kde, emp, atol=1e-6)


def test_kde_subsample_is_seeded():
    pit = np.random.default_rng(2).random(5000)
    a = QuantileRecalibrator(method="kde", max_kde_points=2048, seed=0).fit(pit)
    b = QuantileRecalibrator(method="kde", max_kde_points=2048, seed=0).fit(pit)
    assert a.pit_.size == 2048 and a.n_cal_ == 5000
    np.testing.assert_array_equal(a.pit_, b.pit_)


def test_kde_resample_with_replacement_is_the_authors_bootstrap():
    # small set: min(2048, 30) = 30 PITs, drawn with replacement, so some repeat
    pit = np.random.default_rng(3).random(30)
    rec = QuantileRecalibrator(method="kde", max_kde_points=2048, replace=True, seed=0).fit(pit)
    assert rec.pit_.size == 30 and rec.n_cal_ == 30
    assert np.unique(rec.pit_).size < 30 and np.isin(rec.pit_, pit).all()
    # same draw as numpy's own bootstrap with that seed
    expected = np.sort(np.random.default_rng(0).choice(pit, size=30, replace=True))
    np.testing.assert_array_equal(rec.pit_, expected)
    # large set: 2048 of 5000; without replace the 2048 are distinct
    big = np.random.default_rng(4).random(5000)
    assert QuantileRecalibrator(method="kde", max_kde_points=2048, replace=True, seed=1).fit(big).pit_.size == 2048
    # the map stays a CDF on [0, 1]
    values = rec.transform(np.linspace(0, 1, 11))
    assert values[0] == 0 and abs(values[-1] - 1) < 1e-12 and (np.diff(values) >= 0).all()


def test_kde_resample_needs_a_size_and_a_bool():
    with pytest.raises(ValueError, match="max_kde_points"):
        QuantileRecalibrator(method="kde", replace=True).fit([0.5])
    with pytest.raises(TypeError, match="replace"):
        QuantileRecalibrator(method="kde", max_kde_points=10, replace=1).fit([0.5])


@pytest.mark.parametrize("method", METHODS)
@settings(max_examples=10, deadline=None)
# PITs on a 1/1000 grid: ties, 0 and 1 occur; no noise at the 1e-16 scale
@given(pit=st.lists(st.integers(0, 1000).map(lambda i: i / 1000), min_size=1, max_size=40))
def test_maps_are_monotone_with_generalized_inverse(method, pit):
    rec = QuantileRecalibrator(method=method).fit(pit)
    grid = np.linspace(0, 1, 201)
    values = rec.transform(grid)
    assert np.all(np.diff(values) >= -1e-12)
    assert np.all((values >= 0) & (values <= 1))
    levels = np.array([0.05, 0.3, 0.5, 0.77, 0.95])
    inv = rec.inverse_transform(levels)
    finite = np.isfinite(inv)
    tol = 1e-9 if method == "kde" else 1e-12
    # phi(phi^{-1}(a)) >= a, and phi(u) < a just below phi^{-1}(a)
    assert np.all(rec.transform(inv[finite]) >= levels[finite] - tol)
    below = inv[finite] - 1e-6
    ok = below >= 0
    if ok.any():
        assert np.all(rec.transform(below[ok]) < levels[finite][ok] + tol)


@pytest.mark.parametrize(("method", "scale"), [("emp", 2.0), ("lin", 2.0), ("kde", 1.3)])
def test_recalibration_makes_pits_uniform(method, scale):
    """Model N(0, 1), truth N(0, scale^2). KDE gets the milder case: with scale 2, 12% of
    the PITs lie below 0.01 and kernels of width 0.01 smear them (its known bias)."""
    rng = np.random.default_rng(11)
    y_cal, y_test = scale * rng.normal(size=2000), scale * rng.normal(size=2000)
    rec = QuantileRecalibrator(method=method).fit(stats.norm.cdf(y_cal))
    assert stats.kstest(stats.norm.cdf(y_test), "uniform").pvalue < 1e-6
    assert stats.kstest(rec.transform(stats.norm.cdf(y_test)), "uniform").pvalue > 1e-3
    levels = np.array([0.05, 0.25, 0.5, 0.75, 0.95])
    q = rec.predict_quantiles(levels, gaussian_quantile_function(np.zeros(2000), np.ones(2000)))
    freq = np.mean(y_test[:, None] <= q, axis=0)
    # band: binomial test sd plus the calibration-set error (about the same size)
    assert np.all(np.abs(freq - levels) <= 4 * np.sqrt(2 * levels * (1 - levels) / 2000))


@pytest.mark.parametrize("method", ["lin", "kde"])
def test_recalibrated_mixture_quantiles_invert_the_composed_cdf(method):
    """Q(phi^{-1}(a)) through the inverse map equals the root of phi(F(y)) = a."""
    rng = np.random.default_rng(12)
    w = rng.dirichlet(np.ones(3), size=6)
    mu, sd = rng.normal(size=(6, 3)), rng.uniform(0.3, 1.5, size=(6, 3))
    rec = QuantileRecalibrator(method=method).fit(rng.beta(0.7, 0.7, size=300))
    levels = np.array([0.05, 0.5, 0.95])
    q = rec.predict_quantiles(levels, mixture_quantile_function(w, mu, sd))
    for j in range(levels.size):
        cdf = np.sum(w * stats.norm.cdf((q[:, j : j + 1] - mu) / sd), axis=1)
        np.testing.assert_allclose(rec.transform(cdf), levels[j], atol=1e-8)


def test_quantile_functions():
    mean, std = np.array([0.0, 3.0]), np.array([1.0, 0.5])
    u = np.array([0.0, 0.1, 0.5, 0.9, 1.0, np.inf])
    q = gaussian_quantile_function(mean, std)(u)
    np.testing.assert_allclose(q[:, 1:4], stats.norm.ppf(u[1:4], mean[:, None], std[:, None]))
    assert np.all(q[:, 0] == -np.inf) and np.all(q[:, 4:] == np.inf)
    rng = np.random.default_rng(0)
    w = rng.dirichlet(np.ones(3), size=5)
    mu, sd = rng.normal(size=(5, 3)) * 3, rng.uniform(0.1, 2, size=(5, 3))
    levels = np.array([0.01, 0.3, 0.5, 0.99])
    qm = mixture_quantile_function(w, mu, sd)(levels)
    cdf = np.sum(w[:, None, :] * stats.norm.cdf((qm[:, :, None] - mu[:, None, :]) / sd[:, None, :]), axis=2)
    np.testing.assert_allclose(cdf, np.broadcast_to(levels, (5, 4)), atol=1e-12)


def test_quantile_recalibrator_bad_arguments():
    with pytest.raises(ValueError, match="method"):
        QuantileRecalibrator(method="iso").fit([0.5])
    with pytest.raises(ValueError, match="cal_pit"):
        QuantileRecalibrator().fit([0.5, 1.5])
    with pytest.raises(RuntimeError, match="not fitted"):
        QuantileRecalibrator().transform([0.5])
    with pytest.raises(ValueError, match="levels"):
        QuantileRecalibrator().fit([0.5]).inverse_transform([0.5, 0.2])
    with pytest.raises(ValueError, match="tau"):
        QuantileRecalibrator(method="kde", tau=0).fit([0.5])
    with pytest.raises(ValueError, match="quantile_function"):
        QuantileRecalibrator().fit([0.5]).predict_quantiles([0.5], lambda u: u)
    with pytest.raises(ValueError, match="weights"):
        mixture_quantile_function([[0.5, 0.6]], [[0.0, 1.0]], [[1.0, 1.0]])


@pytest.mark.parametrize("method", METHODS)
def test_quantile_recalibrator_equals_its_wrapper(method):
    rng = np.random.default_rng(METHODS.index(method))
    quantile_function = gaussian_quantile_function(rng.normal(size=7), rng.uniform(0.5, 2.0, 7))
    levels = [0.05, 0.25, 0.5, 0.9]
    for n in (3, 40, 300):
        cal_pit = rng.integers(0, 21, n) / 20  # tied PITs, 0 and 1 included
        options = {"tau": 50.0, "max_kde_points": 100, "seed": 1} if method == "kde" else {}
        model = QuantileRecalibrator(method=method, **options).fit(cal_pit)
        got = recalibrated_quantiles(cal_pit, quantile_function, levels, method=method, **options)
        assert np.array_equal(got, model.predict_quantiles(levels, quantile_function))


# --- CQR ------------------------------------------------------------------------------------


class _Column:
    """A prefit 'regressor' returning one column of X (MAPIE needs estimators)."""

    def __init__(self, j):
        self.j = j
        self.fitted_ = True

    def fit(self, X, y):
        return self

    def predict(self, X, **kwargs):
        return np.asarray(X)[:, self.j]

    def get_params(self, deep=True):
        return {"j": self.j}


@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize(("seed", "n", "alpha"), [(0, 123, 0.1), (1, 57, 0.2), (2, 400, 0.05)])
def test_cqr_matches_mapie(symmetric, seed, n, alpha):
    mapie_regression = pytest.importorskip("mapie.regression")
    rng = np.random.default_rng(seed)

    def predictions(m):
        center = rng.normal(size=m)
        half = rng.uniform(0.2, 1.5, size=m)
        return np.column_stack([center - half, center + half, center])

    x_cal, x_test = predictions(n), predictions(30)
    y_cal = x_cal[:, 2] + rng.standard_t(4, size=n)
    ours = ConformalizedQuantileRegressor(alpha=alpha, symmetric=symmetric).fit(x_cal[:, :2], y_cal)
    lo, hi = ours.predict_interval(x_test[:, :2])
    ref = mapie_regression.ConformalizedQuantileRegressor(
        [_Column(0), _Column(1), _Column(2)], confidence_level=1 - alpha, prefit=True
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref.conformalize(x_cal, y_cal)
        _, intervals = ref.predict_interval(x_test, symmetric_correction=symmetric)
    np.testing.assert_allclose(lo, intervals[:, 0, 0])
    np.testing.assert_allclose(hi, intervals[:, 1, 0])


def test_one_sided_cqr_matches_reference_formula():
    rng = np.random.default_rng(4)
    n, levels = 37, np.array([0.01, 0.1, 0.5, 0.9, 0.975, 0.99])
    quantiles = rng.normal(size=(n, 1)) + np.linspace(-1, 1, levels.size)
    y = rng.normal(size=n)
    clipped = OneSidedConformalRegressor(levels=levels, clip_rank=True).fit(quantiles, y)
    exact = OneSidedConformalRegressor(levels=levels).fit(quantiles, y)
    for j, a in enumerate(levels):
        residuals = np.sort(y - quantiles[:, j])
        idx = math.ceil((n + 1) * a) - 1
        assert clipped.corrections_[j] == residuals[min(idx, n - 1)]
        assert exact.corrections_[j] == (residuals[idx] if idx < n else math.inf)
    assert exact.corrections_[-1] == math.inf  # ceil(38 * 0.99) = 38 = n + 1


def test_cqr_bad_arguments():
    with pytest.raises(ValueError, match="same length"):
        ConformalizedQuantileRegressor().fit([[0.0, 1.0], [0.0, 1.0]], [0.5])
    with pytest.raises(TypeError, match="symmetric"):
        ConformalizedQuantileRegressor(symmetric="yes").fit([[0.0, 1.0]], [0.5])
    with pytest.raises(ValueError, match="columns"):
        OneSidedConformalRegressor(levels=[0.1, 0.9]).fit(np.zeros((3, 3)), np.zeros(3))
    with pytest.raises(ValueError, match="levels"):
        OneSidedConformalRegressor(levels=[0.9, 0.1]).fit(np.zeros((3, 2)), np.zeros(3))
    with pytest.raises(RuntimeError, match="not fitted"):
        OneSidedConformalRegressor(levels=[0.5]).predict_quantiles([0.5], np.zeros((1, 1)))


def test_cqr_conditional_coverage_follows_beta_law():
    """Model quantiles +-0.5 for y ~ N(0, 1): coverage given the calibration set is exact."""
    n, alpha, rng = 39, 0.1, np.random.default_rng(8)
    cov_two, cov_left = [], []
    for _ in range(300):
        y = rng.normal(size=n)
        c = ConformalizedQuantileRegressor(alpha=alpha).fit(np.tile([-0.5, 0.5], (n, 1)), y).upper_correction_
        cov_two.append(2 * stats.norm.cdf(0.5 + c) - 1)
        corr = OneSidedConformalRegressor(levels=[0.7]).fit(np.full((n, 1), 0.1), y).corrections_[0]
        cov_left.append(stats.norm.cdf(0.1 + corr))
    assert stats.kstest(cov_two, coverage_distribution(n, alpha).cdf).pvalue > 1e-3
    assert stats.kstest(cov_left, coverage_distribution(n, 0.3).cdf).pvalue > 1e-3


# --- DCP and the link with quantile recalibration -------------------------------------------


def test_dcp_abs_interval_is_the_score_set():
    rng = np.random.default_rng(5)
    pit = rng.beta(2, 2, size=300)
    dcp = DistributionalConformalRegressor(alpha=0.1).fit(pit)
    q = np.sort(np.abs(pit - 0.5))[conformal_rank(300, 0.9) - 1]
    mean, std = rng.normal(size=200), rng.uniform(0.5, 2, size=200)
    lo, hi = dcp.predict_interval(gaussian_quantile_function(mean, std))
    y = mean + 2 * std * rng.normal(size=200)
    in_set = np.abs(stats.norm.cdf(y, mean, std) - 0.5) <= q
    np.testing.assert_array_equal((y >= lo) & (y <= hi), in_set)


def test_dcp_equal_tailed_hand_case():
    pit = np.arange(1, 20) / 20  # 0.05, ..., 0.95, n = 19
    dcp = DistributionalConformalRegressor(alpha=0.2, score="equal_tailed").fit(pit)
    # lower rank floor(20 * 0.1) = 2, upper rank ceil(20 * 0.9) = 18
    assert (dcp.lower_level_, dcp.upper_level_) == (pit[1], pit[17])
    tiny = DistributionalConformalRegressor(alpha=0.2, score="equal_tailed").fit([0.3, 0.6])
    assert (tiny.lower_level_, tiny.upper_level_) == (0.0, 1.0)


@pytest.mark.parametrize("score", ["abs", "equal_tailed"])
def test_dcp_interval_coverage(score):
    """Model N(0, 0.5^2) for y ~ N(0, 1): exact coverage per calibration draw."""
    n, alpha, rng = 59, 0.1, np.random.default_rng(9)
    cover = []
    for _ in range(300):
        pit = stats.norm.cdf(rng.normal(size=n) / 0.5)
        dcp = DistributionalConformalRegressor(alpha=alpha, score=score).fit(pit)
        lo, hi = dcp.predict_interval(gaussian_quantile_function([0.0], [0.5]))
        cover.append(stats.norm.cdf(hi[0]) - stats.norm.cdf(lo[0]))
    cover = np.array(cover)
    if score == "abs":
        assert stats.kstest(cover, coverage_distribution(n, alpha).cdf).pvalue > 1e-3
    else:  # union bound: at least 1 - alpha on average
        assert cover.mean() >= 1 - alpha - 3 * cover.std() / math.sqrt(cover.size)


def test_theorem1_dcp_equals_recalibration_with_phi_dcp():
    """Paper 002, Theorem 1: quantile recalibration with phi_DCP is DCP of left intervals."""
    rng = np.random.default_rng(6)
    n = 73
    pit = stats.norm.cdf(rng.normal(scale=1.5, size=n))
    levels = np.linspace(0.01, 0.99, 99)
    mean, std = rng.normal(size=40), rng.uniform(0.5, 2, size=40)
    qf = gaussian_quantile_function(mean, std)
    rec = QuantileRecalibrator(method="dcp").fit(pit)
    dcp = DistributionalConformalRegressor().fit(pit)
    q_rec = rec.predict_quantiles(levels, qf)
    np.testing.assert_array_equal(q_rec, dcp.predict_quantiles(levels, qf))
    assert np.isinf(q_rec[:, -1]).all()  # ceil(74 * 0.99) = 74 = n + 1
    # the recalibrated CDF phi_DCP(F(y)) and the conformal quantile describe one distribution:
    # phi_DCP(F(y | x)) >= a  <=>  y >= Q'(a | x)
    y = mean + 2 * std * rng.normal(size=40)
    recal_cdf = rec.transform(stats.norm.cdf(y, mean, std))
    np.testing.assert_array_equal(recal_cdf[:, None] >= levels[None, :], y[:, None] >= q_rec)
    table = recalibration_conformal_table(pit, levels)
    np.testing.assert_array_equal(table["threshold_dcp"], rec.inverse_transform(levels))
    emp = QuantileRecalibrator(method="emp").fit(pit)
    np.testing.assert_array_equal(table["threshold_emp"], emp.inverse_transform(levels))
    assert np.all((table["rank_dcp"] - table["rank_emp"]).isin([0, 1]))


def test_emp_and_dcp_left_coverage_laws():
    """With calibrated PITs the coverage of (-inf, Q(threshold)] is the threshold itself."""
    n, a, runs = 9, 0.55, 2000
    rng = np.random.default_rng(10)
    table = [recalibration_conformal_table(rng.random(n), [a]) for _ in range(runs)]
    thr_dcp = np.minimum([t["threshold_dcp"].iloc[0] for t in table], 1.0)
    thr_emp = np.array([t["threshold_emp"].iloc[0] for t in table])
    k_dcp, k_emp = table[0]["rank_dcp"].iloc[0], table[0]["rank_emp"].iloc[0]
    assert (k_dcp, k_emp) == (6, 5)
    # exact laws: U_(k) ~ Beta(k, n + 1 - k), mean k / (n + 1)
    assert stats.kstest(thr_dcp, stats.beta(k_dcp, n + 1 - k_dcp).cdf).pvalue > 1e-3
    assert stats.kstest(thr_emp, stats.beta(k_emp, n + 1 - k_emp).cdf).pvalue > 1e-3
    assert thr_dcp.mean() >= a - 4 * thr_dcp.std() / math.sqrt(runs)  # conformal guarantee
    assert thr_emp.mean() < a - 4 * thr_emp.std() / math.sqrt(runs)  # EMP misses it at this n
