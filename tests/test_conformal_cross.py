"""Jackknife+, CV+ and their min-max and naive forms: MAPIE on identical folds, hand cases, coverage laws."""

import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn.dummy import DummyRegressor
from sklearn.linear_model import LinearRegression, Ridge

from calibtut.conformal import CrossConformalRegressor, cross_conformal_interval


class _LeastSquares:
    """A cheap numpy least-squares fit (with intercept, normal equations): thousands of refits in a second."""

    def fit(self, X, y):
        design = np.column_stack([np.ones(len(X)), X])
        self.coef_ = np.linalg.solve(design.T @ design, design.T @ y)
        return self

    def predict(self, X):
        return self.coef_[0] + X @ self.coef_[1:]


def _data(rng, n, d=3):
    X = rng.normal(size=(n, d))
    return X, X @ rng.normal(size=d) + rng.standard_t(3, size=n)


@pytest.mark.parametrize("method, mapie_method", [("plus", "plus"), ("minmax", "minmax"), ("naive", "base")])
@pytest.mark.parametrize("n_folds", [None, 5])
def test_intervals_equal_mapie_on_identical_folds(method, mapie_method, n_folds):
    """MAPIE 1.6's ``CrossConformalRegressor`` given our folds (``PredefinedSplit(folds_)``): its "plus"
    takes the ``ceil((1 - alpha)(n + 1))``-th order statistics of ``mu_{-k(i)}(x) +/- R_i`` as Barber et
    al., "minmax" the extreme fold predictions -/+ the residual quantile, "base" with
    ``aggregate_point_predictions=None`` the full-data model -/+ that quantile: the definitions coincide
    and the bounds are equal (0.0 the largest difference over four seeds and every case)."""
    from mapie.regression import CrossConformalRegressor as MapieCrossConformal
    from sklearn.model_selection import PredefinedSplit

    for seed in range(2):
        rng = np.random.default_rng(seed)
        X, y = _data(rng, int(rng.integers(20, 60)))
        X_test = rng.normal(size=(40, 3))
        ours = CrossConformalRegressor(Ridge(alpha=1.0), alpha=0.1, method=method, n_folds=n_folds, seed=seed)
        lower, upper = ours.fit(X, y).predict_interval(X_test)
        peer = MapieCrossConformal(Ridge(alpha=1.0), confidence_level=0.9, method=mapie_method,
                                   cv=PredefinedSplit(ours.folds_))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            bounds = peer.fit_conformalize(X, y).predict_interval(X_test, aggregate_point_predictions=None)[1]
        np.testing.assert_allclose(lower, bounds[:, 0, 0], atol=1e-12, rtol=0)
        np.testing.assert_allclose(upper, bounds[:, 1, 0], atol=1e-12, rtol=0)


def test_too_small_alpha_gives_infinite_bounds_as_mapie():
    """n = 8, alpha = 0.1: ceil(0.9 * 9) = 9 > n, so both jackknife+ bounds are infinite (MAPIE with
    ``allow_infinite_bounds=True``)."""
    from mapie.regression import CrossConformalRegressor as MapieCrossConformal
    from sklearn.model_selection import LeaveOneOut

    rng = np.random.default_rng(0)
    X, y = _data(rng, 8)
    lower, upper = cross_conformal_interval(LinearRegression(), X, y, X[:3], 0.1)
    assert np.all(lower == -np.inf) and np.all(upper == np.inf)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        peer = MapieCrossConformal(LinearRegression(), confidence_level=0.9, cv=LeaveOneOut()).fit_conformalize(X, y)
        bounds = peer.predict_interval(X[:3], allow_infinite_bounds=True)[1]
    assert np.all(np.isinf(bounds))


def test_hand_case_with_a_mean_predictor():
    """A model predicting the training mean, y = (0, 2, 4, 10), leave-one-out: the means without each
    point are 16/3, 14/3, 4, 2 and the residuals 16/3, 8/3, 0, 8. With alpha = 0.2 (n + 1 = 5) the
    ranks are floor(0.2 * 5) = 1 and ceil(0.8 * 5) = 4:
    jackknife+ [min(0, 2, 4, -6), max(32/3, 22/3, 4, 10)] = [-6, 32/3];
    jackknife-minmax [2 - 8, 16/3 + 8] (q = the 4th residual, 8); jackknife 4 -/+ 8."""
    X, y, x = np.zeros((4, 1)), np.array([0.0, 2.0, 4.0, 10.0]), np.zeros((1, 1))
    model = CrossConformalRegressor(DummyRegressor(), alpha=0.2).fit(X, y)
    np.testing.assert_allclose(model.residuals_, [16 / 3, 8 / 3, 0, 8])
    np.testing.assert_allclose(np.ravel(model.predict_interval(x)), [-6, 32 / 3])
    np.testing.assert_allclose(np.ravel(cross_conformal_interval(DummyRegressor(), X, y, x, 0.2, method="minmax")),
                               [-6, 16 / 3 + 8])
    np.testing.assert_allclose(np.ravel(cross_conformal_interval(DummyRegressor(), X, y, x, 0.2, method="naive")),
                               [-4, 12])
    # two folds given by hand: {0, 1} and {2, 3}; the means without each fold are 7 and 1
    model = CrossConformalRegressor(DummyRegressor(), alpha=0.2).fit(X, y, folds=[5, 5, 9, 9])
    np.testing.assert_allclose(model.residuals_, [7, 5, 3, 9])
    np.testing.assert_allclose(np.ravel(model.predict_interval(x)), [-8, 14])  # min(0, 2, -2, -8), max(14, 12, 4, 10)


def test_folds_are_seeded_and_balanced():
    rng = np.random.default_rng(3)
    X, y = _data(rng, 23)
    a = CrossConformalRegressor(LinearRegression(), n_folds=5, seed=1).fit(X, y)
    b = CrossConformalRegressor(LinearRegression(), n_folds=5, seed=1).fit(X, y)
    np.testing.assert_array_equal(a.folds_, b.folds_)
    assert sorted(np.bincount(a.folds_)) == [4, 4, 5, 5, 5]
    np.testing.assert_array_equal(a.predict_interval(X[:4]), b.predict_interval(X[:4]))
    # a factory works as a cloned estimator does
    c = CrossConformalRegressor(lambda: LinearRegression(), n_folds=5, seed=1).fit(X, y)
    np.testing.assert_allclose(c.predict_interval(X[:4]), a.predict_interval(X[:4]))


def test_coverage_laws_over_seeds():
    """One test point per seed, 1000 seeds (0..999), n = 20 points of a linear model with t(3) noise,
    alpha = 0.1, leave-one-out. The number of covered test points is Binomial(1000, p); the lower
    1e-4 quantile of Binomial(1000, 1 - 2 alpha) bounds the jackknife+ count (Theorem 1: p >= 1 - 2 alpha)
    and that of Binomial(1000, 1 - alpha) the jackknife-minmax count (p >= 1 - alpha). Jackknife+ is
    typically near 1 - alpha (no theorem): its share is checked against the looser band
    [1 - alpha - 0.03, 1 - alpha + 0.05]."""
    seeds, alpha = 1000, 0.1
    hits = {"plus": 0, "minmax": 0}
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        X, y = _data(rng, 21, d=2)
        for method in hits:
            lower, upper = cross_conformal_interval(_LeastSquares, X[:20], y[:20], X[20:], alpha, method=method)
            hits[method] += int(lower[0] <= y[20] <= upper[0])
    assert hits["plus"] >= stats.binom.ppf(1e-4, seeds, 1 - 2 * alpha)
    assert hits["minmax"] >= stats.binom.ppf(1e-4, seeds, 1 - alpha)
    assert 1 - alpha - 0.03 <= hits["plus"] / seeds <= 1 - alpha + 0.05, hits  # 899 and 927 of 1000 seen


def test_arguments_are_checked():
    with pytest.raises(TypeError, match="estimator"):
        CrossConformalRegressor(3.0).fit(np.zeros((4, 1)), np.zeros(4))
    with pytest.raises(ValueError, match="method"):
        CrossConformalRegressor(LinearRegression(), method="jackknife").fit(np.zeros((4, 1)), np.zeros(4))
    with pytest.raises(ValueError, match="n_folds"):
        CrossConformalRegressor(LinearRegression(), n_folds=1).fit(np.zeros((4, 1)), np.zeros(4))
    with pytest.raises(ValueError, match="n_folds"):
        CrossConformalRegressor(LinearRegression(), n_folds=10).fit(np.zeros((5, 1)), np.zeros(5))
    with pytest.raises(ValueError, match="folds"):
        CrossConformalRegressor(LinearRegression()).fit(np.zeros((4, 1)), np.zeros(4), folds=[1, 1, 1, 1])
    with pytest.raises(RuntimeError, match="not fitted"):
        CrossConformalRegressor(LinearRegression()).predict_interval(np.zeros((1, 1)))
    model = CrossConformalRegressor(LinearRegression()).fit(np.zeros((4, 2)), np.arange(4.0))
    with pytest.raises(ValueError, match="X"):
        model.predict_interval(np.zeros((1, 3)))
