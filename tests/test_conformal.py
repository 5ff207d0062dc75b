"""Tests for calibtut.conformal: hand cases, crepes as oracle, finite-sample laws."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from calibtut.conformal import (
    SplitConformalRegressor,
    conformal_quantile,
    conformal_rank,
    coverage_band,
    coverage_count_distribution,
    coverage_distribution,
    split_conformal_interval,
    weighted_conformal_interval,
)

# --- hand cases -----------------------------------------------------------------------------


def test_conformal_quantile_hand_cases():
    scores = [0.3, 0.1, 0.2, 0.4]
    assert conformal_quantile(scores, 0.4) == 0.3  # k = ceil(5 * 0.6) = 3
    assert conformal_quantile(scores, 0.2) == 0.4  # k = ceil(5 * 0.8) = 4
    assert conformal_quantile(scores, 0.19) == math.inf  # k = ceil(4.05) = 5 > n
    assert conformal_quantile(scores, 0.99) == 0.1  # k = ceil(0.05) = 1
    assert conformal_quantile(scores, 1 - 1e-12) == 0.1  # rank stays >= 1 after rounding


def test_conformal_rank_keeps_integer_products():
    assert conformal_rank(19, 0.95) == 19
    assert conformal_rank(99, 0.9) == 90
    assert conformal_rank(9, 0.7) == 7
    assert conformal_rank(9, 0.71) == 8


def test_split_interval_hand_case():
    lo, hi = split_conformal_interval([1.0, 2.0, 3.0], [1.5, 1.0, 3.2], [0.0, 10.0], alpha=0.5)
    # residuals 0.5, 1.0, 0.2 -> k = ceil(4 * 0.5) = 2 -> 0.5
    np.testing.assert_allclose(lo, [-0.5, 9.5])
    np.testing.assert_allclose(hi, [0.5, 10.5])


def test_split_interval_normalized_hand_case():
    model = SplitConformalRegressor(alpha=0.5).fit([0.0, 0.0, 0.0], [1.0, 4.0, -3.0], scale=[1.0, 2.0, 1.0])
    assert model.quantile_ == 2.0  # scaled residuals 1, 2, 3
    lo, hi = model.predict_interval([1.0], scale=[0.5])
    assert (lo[0], hi[0]) == (0.0, 2.0)


def test_infinite_threshold_gives_infinite_interval():
    lo, hi = split_conformal_interval(np.zeros(5), np.ones(5), [0.0], alpha=0.1)
    assert lo[0] == -math.inf and hi[0] == math.inf


def test_class_and_wrappers_agree_with_ties():
    # residuals on a grid of 0.5 (many ties); the wrappers are the class in one call
    rng = np.random.default_rng(4)
    for _ in range(20):
        n, m = int(rng.integers(5, 80)), int(rng.integers(1, 30))
        cal_pred, test_pred = rng.integers(0, 4, n) * 0.5, rng.normal(size=m)
        cal_y = cal_pred + rng.integers(-3, 4, n) * 0.5
        alpha = float(rng.uniform(0.05, 0.5))
        scale_cal, scale_test = rng.uniform(0.5, 2, n), rng.uniform(0.5, 2, m)
        w_cal, w_test = rng.integers(0, 3, n) + 0.5, rng.exponential(size=m)
        model = SplitConformalRegressor(alpha=alpha)
        np.testing.assert_array_equal(split_conformal_interval(cal_pred, cal_y, test_pred, alpha),
                                      model.fit(cal_pred, cal_y).predict_interval(test_pred))
        np.testing.assert_array_equal(
            split_conformal_interval(cal_pred, cal_y, test_pred, alpha, cal_scale=scale_cal, test_scale=scale_test),
            model.fit(cal_pred, cal_y, scale=scale_cal).predict_interval(test_pred, scale=scale_test))
        np.testing.assert_array_equal(
            weighted_conformal_interval(cal_pred, cal_y, w_cal, test_pred, w_test, alpha),
            model.fit(cal_pred, cal_y, cal_weight=w_cal).predict_interval(test_pred, test_weight=w_test))


def test_weighted_regressor_hand_case():
    # residuals 1, 2, 3, 0.5 with weights 1, 1, 1, 3: sorted 0.5 (3), 1, 2, 3, cumulative 3, 4, 5, 6.
    # Test weight 0.5: need 0.6 * 6.5 = 3.9 -> residual 1; weight 8: need 8.4 > 6 -> infinite.
    model = SplitConformalRegressor(alpha=0.4).fit([0.0] * 4, [1.0, -2.0, 3.0, 0.5], cal_weight=[1, 1, 1, 3])
    assert model.quantile_ is None
    lo, hi = model.predict_interval([10.0, 10.0], test_weight=[0.5, 8.0])
    assert lo.tolist() == [9.0, -math.inf] and hi.tolist() == [11.0, math.inf]
    # with scales the width is the weighted threshold of the scaled residuals times the test scale
    scaled = SplitConformalRegressor(alpha=0.4).fit([0.0] * 4, [1.0, -2.0, 3.0, 0.5], scale=[1, 1, 1, 0.5],
                                                    cal_weight=[1, 1, 1, 3])
    lo, hi = scaled.predict_interval([0.0], scale=[2.0], test_weight=[0.5])
    assert (lo[0], hi[0]) == (-2.0, 2.0)


@pytest.mark.parametrize("alpha", [0.1, 0.2])
def test_regressor_coverage_inside_the_beta_binomial_band(alpha):
    # 300 calibration draws of 49 points; each run's coverage on 100 fresh points lies in the 99 % band in
    # about 99 % of the runs (3 binomial standard deviations of slack)
    n_cal, n_test, runs = 49, 100, 300
    lo_band, hi_band = coverage_band(n_cal, alpha, n_test, level=0.99)
    inside = []
    for seed in range(runs):
        rng = np.random.default_rng(seed)
        pred = rng.normal(size=n_cal + n_test)
        y = pred + rng.standard_t(3, size=n_cal + n_test)
        model = SplitConformalRegressor(alpha=alpha).fit(pred[:n_cal], y[:n_cal])
        lo, hi = model.predict_interval(pred[n_cal:])
        coverage = np.mean((lo <= y[n_cal:]) & (y[n_cal:] <= hi))
        inside.append(lo_band <= coverage <= hi_band)
    assert np.mean(inside) >= 0.99 - 3 * math.sqrt(0.99 * 0.01 / runs)


# --- argument checks ------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1, 1.5])
def test_bad_alpha_value(alpha):
    with pytest.raises(ValueError, match="alpha"):
        conformal_quantile([0.1, 0.2], alpha)


def test_bad_arguments():
    with pytest.raises(TypeError, match="alpha"):
        conformal_quantile([0.1, 0.2], "0.1")
    with pytest.raises(ValueError, match="scores"):
        conformal_quantile([[0.1, 0.2]], 0.1)
    with pytest.raises(ValueError, match="scores"):
        conformal_quantile([0.1, np.nan], 0.1)
    with pytest.raises(ValueError, match="same length"):
        SplitConformalRegressor().fit([0.0, 1.0], [0.0])
    with pytest.raises(ValueError, match="scale"):
        SplitConformalRegressor().fit([0.0, 1.0], [0.0, 1.0], scale=[1.0, -1.0])
    with pytest.raises(RuntimeError, match="not fitted"):
        SplitConformalRegressor().predict_interval([0.0])
    model = SplitConformalRegressor().fit([0.0, 1.0], [0.0, 1.0], scale=[1.0, 1.0])
    with pytest.raises(ValueError, match="scale is required"):
        model.predict_interval([0.0])
    with pytest.raises(ValueError, match="test_weight was given"):
        model.predict_interval([0.0], scale=[1.0], test_weight=[1.0])
    weighted = SplitConformalRegressor().fit([0.0, 1.0], [0.0, 1.0], cal_weight=[1.0, 2.0])
    with pytest.raises(ValueError, match="test_weight is required"):
        weighted.predict_interval([0.0])
    with pytest.raises(ValueError, match="test_weight must have one entry per test point"):
        weighted.predict_interval([0.0], test_weight=[1.0, 1.0])
    with pytest.raises(ValueError, match="cal_weight must not be all zero"):
        SplitConformalRegressor().fit([0.0, 1.0], [0.0, 1.0], cal_weight=[0.0, 0.0])
    with pytest.raises(TypeError, match="alpha"):
        SplitConformalRegressor(alpha="0.1").fit([0.0, 1.0], [0.0, 1.0])
    with pytest.raises(ValueError, match="n_cal"):
        coverage_distribution(5, 0.1)
    with pytest.raises(TypeError, match="n_cal"):
        coverage_distribution(5.0, 0.1)
    with pytest.raises(ValueError, match="n_test"):
        coverage_band(100, 0.1, 0)


# --- oracle: crepes -------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.33])
def test_matches_crepes(seed, alpha):
    crepes = pytest.importorskip("crepes")
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 300))
    cal_pred, cal_y = rng.normal(size=n), rng.standard_t(3, size=n)
    test_pred = rng.normal(size=50)
    lo, hi = split_conformal_interval(cal_pred, cal_y, test_pred, alpha)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = crepes.ConformalRegressor().fit(cal_y - cal_pred).predict_int(test_pred, confidence=1 - alpha)
    np.testing.assert_allclose(lo, ref[:, 0])
    np.testing.assert_allclose(hi, ref[:, 1])
    # normalized conformal regression
    sig_cal, sig_test = rng.uniform(0.5, 2, n), rng.uniform(0.5, 2, 50)
    lo, hi = split_conformal_interval(cal_pred, cal_y, test_pred, alpha, cal_scale=sig_cal, test_scale=sig_test)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = (
            crepes.ConformalRegressor()
            .fit(cal_y - cal_pred, sigmas=sig_cal)
            .predict_int(test_pred, sigmas=sig_test, confidence=1 - alpha)
        )
    np.testing.assert_allclose(lo, ref[:, 0])
    np.testing.assert_allclose(hi, ref[:, 1])


@settings(max_examples=30, deadline=None)
@given(
    scores=st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=60),
    alpha=st.floats(0.01, 0.99),
)
def test_quantile_is_smallest_valid_order_statistic(scores, alpha):
    """q is the smallest score with at least ceil((n+1)(1-alpha)) scores <= q."""
    q = conformal_quantile(scores, alpha)
    scores = np.asarray(scores)
    k = conformal_rank(scores.size, 1 - alpha)
    if k > scores.size:
        assert q == math.inf
    else:
        assert np.sum(scores <= q) >= k
        assert np.sum(scores < q) < k


# --- the finite-sample laws -----------------------------------------------------------------


@pytest.mark.parametrize(("n", "alpha"), [(19, 0.1), (100, 0.1), (999, 0.05), (50, 0.33)])
def test_coverage_distribution_is_vovk_beta(n, alpha):
    law = coverage_distribution(n, alpha)
    l_ = math.floor((n + 1) * alpha + 1e-12)
    ref = stats.beta(n + 1 - l_, l_)
    grid = np.linspace(0.01, 0.99, 7)
    np.testing.assert_allclose(law.cdf(grid), ref.cdf(grid))
    assert law.mean() == pytest.approx(conformal_rank(n, 1 - alpha) / (n + 1))
    assert law.mean() >= 1 - alpha


def test_count_distribution_is_binomial_mixed_over_beta():
    n_cal, alpha, n_test = 30, 0.2, 12
    beta = coverage_distribution(n_cal, alpha)
    counts = coverage_count_distribution(n_cal, alpha, n_test)
    for j in (6, 9, 12):
        mixed, _ = integrate.quad(lambda c, j=j: stats.binom.pmf(j, n_test, c) * beta.pdf(c), 0, 1)
        assert counts.pmf(j) == pytest.approx(mixed, rel=1e-6)


def test_coverage_band_has_its_content():
    lo, hi = coverage_band(200, 0.1, 300, level=0.8)
    law = coverage_count_distribution(200, 0.1, 300)
    content = law.cdf(round(hi * 300)) - law.cdf(round(lo * 300) - 1)
    assert 0.8 <= content < 0.86


def _simulate(threshold_fn, n_cal=49, alpha=0.1, n_runs=400, n_test=200, seed=0):
    """Conditional and empirical coverage of |y - 0| <= q with y ~ N(0, 1)."""
    rng = np.random.default_rng(seed)
    cond, emp = np.empty(n_runs), np.empty(n_runs)
    for r in range(n_runs):
        q = threshold_fn(np.abs(rng.normal(size=n_cal)), alpha)
        cond[r] = 2 * stats.norm.cdf(q) - 1
        emp[r] = np.mean(np.abs(rng.normal(size=n_test)) <= q)
    return cond, emp


def _wrong_quantile(scores, alpha):
    return float(np.quantile(scores, 1 - alpha))  # no (n+1) correction


def test_simulated_coverage_follows_the_laws():
    n_cal, alpha, n_test, n_runs = 49, 0.1, 200, 400
    cond, emp = _simulate(conformal_quantile, n_cal, alpha, n_runs, n_test)
    # conditional coverage ~ Beta(k, n + 1 - k): Kolmogorov-Smirnov
    assert stats.kstest(cond, coverage_distribution(n_cal, alpha).cdf).pvalue > 1e-3
    # empirical coverage inside the 90% beta-binomial band in about 90% of the runs
    lo, hi = coverage_band(n_cal, alpha, n_test, level=0.9)
    inside = np.mean((emp >= lo) & (emp <= hi))
    assert inside >= 0.9 - 3 * math.sqrt(0.09 / n_runs)
    # mean empirical coverage: z-test against k / (n + 1)
    law = coverage_count_distribution(n_cal, alpha, n_test)
    z = (emp.mean() - law.mean() / n_test) / (law.std() / n_test / math.sqrt(n_runs))
    assert abs(z) < 4


def test_simulation_detects_a_wrong_quantile():
    """The same checks reject np.quantile without the (n + 1) correction."""
    n_cal, alpha, n_test, n_runs = 49, 0.1, 200, 400
    cond, emp = _simulate(_wrong_quantile, n_cal, alpha, n_runs, n_test)
    assert stats.kstest(cond, coverage_distribution(n_cal, alpha).cdf).pvalue < 1e-4
    law = coverage_count_distribution(n_cal, alpha, n_test)
    z = (emp.mean() - law.mean() / n_test) / (law.std() / n_test / math.sqrt(n_runs))
    assert z < -4
