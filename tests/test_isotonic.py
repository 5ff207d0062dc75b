"""Tests of isotonic recalibration for regression and paper 003's analysis of it."""

import numpy as np
import pytest
from scipy import integrate, stats
from sklearn.isotonic import IsotonicRegression

from calibtut.metrics import l2_calibration_error
from calibtut.recalibration import gaussian_quantile_function
from calibtut.recalibration.isotonic import (
    IsotonicRecalibrator,
    gaussian_mean_shift,
    isotonic_recalibrated_quantiles,
)


def _pits(m=40, seed=0, scale=0.6):
    # PITs of an over-confident Gaussian model: y ~ N(0, 1), prediction N(0, scale^2).
    y = np.random.default_rng(seed).normal(size=m)
    return stats.norm.cdf(y, 0.0, scale)


def _moment(rec, mu, sigma, power, upper=np.inf):
    """Integral of t^power g(t) over (-inf, upper] by quadrature, one smooth segment at a time."""
    edges = mu + sigma * stats.norm.ppf(rec.knots_x_)
    total = 0.0
    for a, b in zip(edges[:-1], np.minimum(edges[1:], upper)):
        if b > a:
            value, _ = integrate.quad(lambda t: t**power * rec.pdf(t, mu, sigma), a, b, epsabs=1e-12, epsrel=1e-10)
            total += value
    return total


def test_matches_sklearn_with_origin_prepended():
    # The authors' construction: (0, 0) plus (c_i, #{c_j <= c_i}/m), sklearn predict with clipping.
    c = _pits()
    freq = np.array([np.mean(c <= ci) for ci in c])
    ref = IsotonicRegression(out_of_bounds="clip").fit(np.r_[0.0, c], np.r_[0.0, freq])
    rec = IsotonicRecalibrator().fit(c)
    u = np.r_[np.linspace(0, 1, 201), c]
    np.testing.assert_allclose(rec.transform(u), ref.predict(u), atol=1e-12)


def test_isotonic_leaves_frequencies_unchanged():
    # Paper 003, Sec. 3: the frequencies are already increasing, so the knots are (c_(i), i/m).
    c = _pits(m=30, seed=1)
    m = c.size
    rec = IsotonicRecalibrator().fit(c)
    np.testing.assert_allclose(rec.knots_x_, np.r_[0.0, np.sort(c)])
    np.testing.assert_allclose(rec.knots_y_, np.arange(m + 1) / m)
    fixed = IsotonicRecalibrator(fix_truncation=True).fit(c)
    np.testing.assert_allclose(fixed.knots_x_, np.r_[0.0, np.sort(c), 1.0])
    np.testing.assert_allclose(fixed.knots_y_, np.r_[np.arange(m + 1) / (m + 1), 1.0])


def test_hand_computed_map_and_density():
    rec = IsotonicRecalibrator().fit([0.2, 0.4])
    np.testing.assert_allclose(rec.transform([0.0, 0.1, 0.2, 0.3, 0.4, 0.9]), [0.0, 0.25, 0.5, 0.75, 1.0, 1.0])
    np.testing.assert_allclose(rec.slopes_, [2.5, 2.5])
    assert rec.pdf(-1.0, 0.0, 1.0) == pytest.approx(2.5 * stats.norm.pdf(-1.0))
    assert rec.truncation_level_ == 0.4


@pytest.mark.parametrize("fix", [False, True])
@pytest.mark.parametrize(("mu", "sigma"), [(0.0, 1.0), (3.0, 0.5), (-2.0, 4.0)])
def test_closed_form_moments_match_quadrature(fix, mu, sigma):
    rec = IsotonicRecalibrator(fix_truncation=fix).fit(_pits(m=10, seed=2))
    assert _moment(rec, mu, sigma, 0) == pytest.approx(1.0, abs=1e-8)
    mean = _moment(rec, mu, sigma, 1)
    assert float(rec.mean(mu, sigma)) == pytest.approx(mean, abs=1e-7 * max(1.0, sigma))
    var = _moment(rec, mu, sigma, 2) - mean**2
    assert float(rec.std(mu, sigma)) == pytest.approx(np.sqrt(var), rel=1e-6)


def test_claim3_formula_equals_fitted_delta():
    rng = np.random.default_rng(3)
    mean, std = rng.normal(size=50), rng.uniform(0.5, 2.0, size=50)
    y = mean + std * rng.standard_t(4, size=50)
    c = stats.norm.cdf(y, mean, std)
    delta = gaussian_mean_shift(y, mean, std)
    assert IsotonicRecalibrator().fit(c).delta_ == pytest.approx(delta, rel=1e-10)
    # Claim 2 written with the base density f of N(mu, sigma^2), for one test prediction.
    mu, sigma = 1.5, 0.7
    cs = np.r_[0.0, np.sort(c)]
    f = stats.norm.pdf(stats.norm.ppf(cs, mu, sigma), mu, sigma)
    claim2 = mu - sigma**2 / c.size * np.sum(np.diff(f) / np.diff(cs))
    assert float(IsotonicRecalibrator().fit(c).mean(mu, sigma)) == pytest.approx(claim2, rel=1e-10)


def test_truncation_and_the_fix():
    c = _pits(m=20, seed=4)
    rec = IsotonicRecalibrator().fit(c)
    mu, sigma = 0.5, 2.0
    y_trunc = float(rec.truncation_point(mu, sigma))
    assert y_trunc == pytest.approx(mu + sigma * stats.norm.ppf(c.max()))
    assert rec.pdf(y_trunc - 1e-6, mu, sigma) > 0
    assert rec.pdf(y_trunc + 1e-6, mu, sigma) == 0
    assert rec.logpdf(y_trunc + 1.0, mu, sigma) == -np.inf
    assert rec.cdf(y_trunc + 1e-6, mu, sigma) == 1.0
    fixed = IsotonicRecalibrator(fix_truncation=True).fit(c)
    assert fixed.truncation_point(mu, sigma) == np.inf
    assert fixed.pdf(y_trunc + 1.0, mu, sigma) > 0


def test_claim1_density_jumps_at_knots():
    c = np.array([0.1, 0.3, 0.35, 0.9])
    rec = IsotonicRecalibrator().fit(c)
    knot = stats.norm.ppf(0.3)
    left, right = rec.pdf(knot - 1e-9, 0.0, 1.0), rec.pdf(knot + 1e-9, 0.0, 1.0)
    assert left / right == pytest.approx(rec.slopes_[1] / rec.slopes_[2], rel=1e-6)
    assert left != pytest.approx(right, rel=0.1)


def test_cdf_is_integral_of_pdf_and_quantiles_invert_cdf():
    rec = IsotonicRecalibrator(fix_truncation=True).fit(_pits(m=15, seed=5))
    mu, sigma = 1.0, 1.5
    for y in (-2.0, 0.3, 1.0, 4.0):
        area = _moment(rec, mu, sigma, 0, upper=y)
        assert float(rec.cdf(y, mu, sigma)) == pytest.approx(area, abs=1e-6)
    levels = np.array([0.05, 0.5, 0.95])
    q = rec.predict_quantiles(levels, gaussian_quantile_function([mu], [sigma]))[0]
    np.testing.assert_allclose(rec.cdf(q, mu, sigma), levels, atol=1e-10)
    np.testing.assert_allclose(rec.transform(rec.inverse_transform(levels)), levels, atol=1e-12)


def test_recalibration_fixes_overconfidence():
    # Calibration PITs of an over-confident model are far from uniform; fresh test PITs pushed through R
    # are close to uniform. Both the fitted map and the test PITs are empirical: the l2 error (x100, 10
    # levels) then has mean 2 * 100 * sum_j p_j (1 - p_j) / 2000 = 0.165; 1.2 is ~7 times that mean.
    rng = np.random.default_rng(6)
    cal, test = _pits(m=2000, seed=7, scale=0.5), stats.norm.cdf(rng.normal(size=2000), 0.0, 0.5)
    rec = IsotonicRecalibrator().fit(cal)
    assert l2_calibration_error(test) > 5.0
    assert l2_calibration_error(rec.transform(test)) < 1.2


@pytest.mark.parametrize("fix", [False, True])
def test_recalibrator_equals_its_wrapper(fix):
    rng = np.random.default_rng(int(fix))
    quantile_function = gaussian_quantile_function(rng.normal(size=5), rng.uniform(0.5, 2.0, 5))
    levels = [0.1, 0.5, 0.75, 0.99]
    for n in (2, 30, 200):
        cal_pit = rng.integers(0, 11, n) / 10  # tied PITs, 0 and 1 included
        expected = IsotonicRecalibrator(fix_truncation=fix).fit(cal_pit).predict_quantiles(levels, quantile_function)
        got = isotonic_recalibrated_quantiles(cal_pit, quantile_function, levels, fix_truncation=fix)
        assert np.array_equal(got, expected)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: IsotonicRecalibrator().fit([0.2, 1.5]), ValueError, "cal_pit"),
        (lambda: IsotonicRecalibrator().fit([[0.2, 0.5]]), ValueError, "cal_pit"),
        (lambda: IsotonicRecalibrator(fix_truncation=1).fit([0.2, 0.5]), TypeError, "fix_truncation"),
        (lambda: IsotonicRecalibrator().transform([0.5]), RuntimeError, "not fitted"),
        (lambda: IsotonicRecalibrator().predict_quantiles([0.5], None), RuntimeError, "not fitted"),
        (lambda: IsotonicRecalibrator().fit([0.2, 0.5]).transform([-0.1]), ValueError, "pit"),
        (lambda: IsotonicRecalibrator().fit([0.2, 0.5]).mean(0.0, 0.0), ValueError, "std"),
        (lambda: IsotonicRecalibrator().fit([0.2, 0.5]).pdf(0.0, 0.0, -1.0), ValueError, "std"),
        (lambda: IsotonicRecalibrator().fit([0.2, 0.5]).predict_quantiles([0.0, 0.5], None), ValueError, "levels"),
        (lambda: IsotonicRecalibrator().fit([0.2, 0.5]).predict_quantiles([0.5], lambda u: u), ValueError,
         "quantile_function"),
        (lambda: gaussian_mean_shift([0.0, 0.0], [0.0, 0.0], [1.0, 1.0]), ValueError, "distinct"),
        (lambda: gaussian_mean_shift([0.0], [0.0, 1.0], [1.0, 1.0]), ValueError, "same length"),
    ],
)
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()
