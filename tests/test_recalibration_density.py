"""Tests of the densities of quantile-recalibration maps and the recalibrated NLL."""

import warnings

import numpy as np
import pytest
from scipy import integrate, stats

from calibtut.recalibration import QuantileRecalibrator, map_density, recalibrated_nll


def _pits(seed, n=300, scale=2.0):
    y = np.random.default_rng(seed).normal(scale=scale, size=n)
    return stats.norm.cdf(y)  # an N(0, 1) model of N(0, scale^2) data


@pytest.mark.parametrize("method", ["lin", "kde"])
def test_density_is_the_derivative_of_the_map(method):
    rec = QuantileRecalibrator(method=method).fit(_pits(0))
    u = np.random.default_rng(1).uniform(0.01, 0.99, size=50)
    h = 1e-7
    numeric = (rec.transform(u + h) - rec.transform(u - h)) / (2 * h)
    np.testing.assert_allclose(map_density(rec, u), numeric, rtol=1e-4)


def test_density_integrates_to_one():
    lin = QuantileRecalibrator(method="lin").fit(_pits(2, n=60))
    xs = lin._lin_knots[0]
    widths = np.diff(xs)
    mids = (xs[:-1] + xs[1:]) / 2
    assert np.sum(map_density(lin, mids) * widths) == pytest.approx(1.0, abs=1e-12)
    kde = QuantileRecalibrator(method="kde").fit(_pits(2, n=60))
    total, _ = integrate.quad(lambda u: map_density(kde, np.array([u]))[0], 0, 1, limit=400)
    assert total == pytest.approx(1.0, abs=1e-6)


def test_kde_density_matches_scipy_logistic_pdfs():
    pit = _pits(3, n=80)
    rec = QuantileRecalibrator(method="kde", tau=100.0).fit(pit)
    u = np.linspace(0, 1, 101)
    scale = 1 / 100.0
    raw = sum(stats.logistic.pdf(u[:, None], loc=c, scale=scale) for c in (pit, -pit, 2 - pit)).mean(1)
    cdf = sum(stats.logistic.cdf(np.array([[1.0], [0.0]]), loc=c, scale=scale) for c in (pit, -pit, 2 - pit)).mean(1)
    np.testing.assert_allclose(map_density(rec, u), raw / (cdf[0] - cdf[1]), rtol=1e-9)


def test_lin_density_by_hand():
    rec = QuantileRecalibrator(method="lin").fit([0.2, 0.6, 0.6])  # tie at 0.6: one knot at the mean rank
    # knots (0,0) (.2,1/4) (.6,5/8) (1,1): slopes 1.25, 0.9375, 0.9375, integral 0.25 + 0.375 + 0.375
    np.testing.assert_allclose(map_density(rec, [0.1, 0.3, 0.6, 0.8, 1.0]), [1.25, 0.9375, 0.9375, 0.9375, 0.9375])


@pytest.mark.parametrize("pit", [
    [0.2, 0.2, 0.6],  # the case: the jumping map's slopes integrated to 0.75
    [0.0, 0.0, 0.3, 0.3, 0.3, 1.0, 1.0],  # ties at both ends and inside
    np.round(np.random.default_rng(9).beta(2, 5, 400), 2),  # a discrete target: many ties
])
def test_lin_density_integrates_to_one_with_tied_pits(pit):
    rec = QuantileRecalibrator(method="lin").fit(pit)
    total, _ = integrate.quad(lambda u: map_density(rec, np.array([u]))[0], 0, 1,
                              points=np.unique(pit), limit=1000)
    assert total == pytest.approx(1.0, abs=1e-9)
    # the map is continuous: no jump at a tied PIT
    ties = np.unique(pit)[(np.unique(pit) > 0) & (np.unique(pit) < 1)]
    np.testing.assert_allclose(rec.transform(ties - 1e-12), rec.transform(ties), atol=1e-9)


def test_lin_recalibrated_density_integrates_to_one_over_y_with_ties():
    # a Gaussian model of rounded data (wine ratings): tied calibration PITs
    rng = np.random.default_rng(10)
    rec = QuantileRecalibrator(method="lin").fit(stats.norm.cdf(np.round(rng.normal(scale=1.5, size=500))))
    assert np.unique(rec.pit_).size < 20
    f = lambda v: np.exp(-recalibrated_nll(rec, stats.norm.cdf([v]), stats.norm.logpdf([v])))  # noqa: E731
    knots = stats.norm.ppf(rec._lin_knots[0][1:-1])
    total = sum(integrate.quad(f, a, b, limit=200)[0]
                for a, b in zip(np.concatenate([[-np.inf], knots]), np.concatenate([knots, [np.inf]])))
    assert total == pytest.approx(1.0, abs=1e-7)


@pytest.mark.parametrize("method", ["emp", "dcp"])
def test_step_maps_have_infinite_nll(method):
    rec = QuantileRecalibrator(method=method).fit(_pits(4))
    y = np.array([0.0, 1.0])
    assert recalibrated_nll(rec, stats.norm.cdf(y), stats.norm.logpdf(y)) == np.inf
    assert np.all(map_density(rec, [0.3, 0.7]) == 0)


def test_lin_costs_a_calibrated_model_one_minus_euler_gamma_nats():
    # A calibrated model's test PIT falls in a spacing chosen with probability proportional
    # to its length; (n + 1) x that spacing is Gamma(2, 1), and -log phi'_LIN = log((n + 1) gap)
    # has mean digamma(2) = 1 - 0.5772 = 0.4228: LIN adds that to the NLL (paper 002's C7).
    rec = QuantileRecalibrator(method="lin").fit(np.random.default_rng(7).random(3000))
    u = np.random.default_rng(8).random(50000)
    assert np.mean(-np.log(map_density(rec, u))) == pytest.approx(1 - np.euler_gamma, abs=0.02)


def test_kde_recalibration_of_an_overconfident_model_lowers_the_nll():
    # model N(0, 1), data N(0, 1.3^2): Rec-KDE brings the NLL close to the true model's
    rec = QuantileRecalibrator(method="kde").fit(_pits(5, n=2000, scale=1.3))
    y = np.random.default_rng(6).normal(scale=1.3, size=5000)
    base = -stats.norm.logpdf(y).mean()
    ours = recalibrated_nll(rec, stats.norm.cdf(y), stats.norm.logpdf(y))
    true = -stats.norm.logpdf(y, scale=1.3).mean()
    assert ours < base - 0.04
    assert ours == pytest.approx(true, abs=0.04)
    # the recalibrated density integrates to one over y
    f = lambda v: np.exp(-recalibrated_nll(rec, stats.norm.cdf([v]), stats.norm.logpdf([v])))  # noqa: E731
    assert integrate.quad(f, -9, 9, limit=400)[0] == pytest.approx(1.0, abs=2e-3)


def test_errors():
    rec = QuantileRecalibrator(method="lin").fit([0.2, 0.5])
    with pytest.raises(TypeError, match="QuantileRecalibrator"):
        map_density("lin", [0.5])
    with pytest.raises(RuntimeError, match="not fitted"):
        map_density(QuantileRecalibrator(method="lin"), [0.5])
    with pytest.raises(ValueError, match="same length"):
        recalibrated_nll(rec, [0.5, 0.6], [0.1])
    with pytest.raises(ValueError, match="reduction"):
        recalibrated_nll(rec, [0.5], [0.1], reduction="sum")


def test_lin_density_at_one_with_a_calibration_pit_of_one():
    # the PIT of 1 joins the end knot: knots (0,0) (.5,1/3) (1,1), and the density at 1 is
    # the left slope (2/3)/(1/2), finite and without a warning
    rec = QuantileRecalibrator(method="lin").fit([0.5, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        slopes = map_density(rec, [0.25, 1.0])
    np.testing.assert_allclose(slopes, [2 / 3, 4 / 3])
