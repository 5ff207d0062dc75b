"""Tests of the marginal (and binned-marginal) KDE predictor."""

import numpy as np
import pytest
from scipy import stats

from calibtut.metrics import crps_mixture, nll_mixture, pit_mixture
from calibtut.models import MarginalKDE, silverman_bandwidth


def _dkw(n, level=1e-3):
    """Dvoretzky-Kiefer-Wolfowitz band: sup |ECDF - CDF| exceeds it with probability <= level."""
    return np.sqrt(np.log(2 / level) / (2 * n))


def test_hand_case_two_targets():
    # targets 0 and 2: std 1, h = 1.06 * 2 ** -0.2; the KDE is .5 N(0, h^2) + .5 N(2, h^2)
    h = 1.06 * 2**-0.2
    kde = MarginalKDE().fit([0.0, 2.0])
    assert silverman_bandwidth([0.0, 2.0]) == pytest.approx(h, rel=1e-15)
    assert kde.bandwidths_.tolist() == pytest.approx([h])
    pit = kde.pit([1.0, 0.0])
    assert pit[0] == pytest.approx(0.5, abs=1e-15)
    assert pit[1] == pytest.approx(0.5 * 0.5 + 0.5 * stats.norm.cdf(-2 / h), rel=1e-14)
    density = 0.5 * stats.norm.pdf(1.0, 0.0, h) + 0.5 * stats.norm.pdf(1.0, 2.0, h)
    assert kde.nll([1.0]) == pytest.approx(-np.log(density), rel=1e-14)
    mean, std = kde.moments(n=3)
    assert mean.tolist() == [1.0, 1.0, 1.0]
    assert std == pytest.approx(np.full(3, np.sqrt(h**2 + 1.0)), rel=1e-14)


def test_quantile_kernels_and_fixed_bandwidth():
    y = np.arange(10.0)
    kde = MarginalKDE(n_kernels=5, bandwidth=0.3).fit(y)
    np.testing.assert_allclose(kde.centers_[0], np.quantile(y, [0.1, 0.3, 0.5, 0.7, 0.9]))
    assert kde.bandwidths_.tolist() == [0.3]


@pytest.mark.parametrize("n_kernels", [None, 7])
def test_scores_match_mixture_metrics(n_kernels):
    rng = np.random.default_rng(1)
    y_tr, bins_tr = rng.gamma(2.0, size=40), rng.integers(0, 3, 40)
    y_te, bins_te = rng.gamma(2.0, size=12), np.array([0, 1, 2] * 4)
    kde = MarginalKDE(n_kernels=n_kernels).fit(y_tr, categories=bins_tr)
    for b in range(3):
        rows, centers = bins_te == b, kde.centers_[b]
        shape = (rows.sum(), len(centers))
        mix = (np.full(shape, 1 / len(centers)), np.broadcast_to(centers, shape), np.full(shape, kde.bandwidths_[b]))
        assert kde.bandwidths_[b] == pytest.approx(silverman_bandwidth(y_tr[bins_tr == b]))
        np.testing.assert_allclose(kde.crps(y_te, bins_te, reduction="none")[rows],
                                   crps_mixture(y_te[rows], *mix, reduction="none"), rtol=1e-12)
        np.testing.assert_allclose(kde.nll(y_te, bins_te, reduction="none")[rows],
                                   nll_mixture(y_te[rows], *mix, reduction="none"), rtol=1e-12)
        np.testing.assert_allclose(kde.pit(y_te, bins_te)[rows], pit_mixture(y_te[rows], *mix), rtol=1e-12)
    assert kde.crps(y_te, bins_te) == pytest.approx(kde.crps(y_te, bins_te, reduction="none").mean())


def test_pit_uniform_for_the_same_marginal():
    # Test labels from the training law: the PITs are uniform up to (i) the test sample's DKW band, (ii) the
    # training sample's DKW band (the KDE's CDF is the training ECDF smoothed) and (iii) the smoothing bias,
    # sup_x |Phi(x / sqrt(1 + h^2)) - Phi(x)| for N(0, 1) data, computed below (about 0.006 here).
    rng = np.random.default_rng(0)
    n_tr, n_te = 4000, 2000
    y_tr, y_te = rng.normal(size=n_tr), rng.normal(size=n_te)
    kde = MarginalKDE().fit(y_tr)
    grid = np.linspace(-6, 6, 2001)
    smoothing = np.abs(stats.norm.cdf(grid / np.sqrt(1 + kde.bandwidths_[0] ** 2)) - stats.norm.cdf(grid)).max()
    ks = stats.kstest(kde.pit(y_te), "uniform").statistic
    assert ks < _dkw(n_te) + _dkw(n_tr) + smoothing, ks


def test_binned_marginals_are_calibrated_and_sharper():
    # Y | g = N(4 g, 1) for g in {0, 1, 2}: the binned KDE is calibrated (KS within the DKW bands plus the
    # smoothing bias, as above, bounded by 0.01) and its CRPS is below the marginal KDE's.
    rng = np.random.default_rng(2)
    g_tr, g_te = rng.integers(0, 3, 1500), rng.integers(0, 3, 900)
    y_tr, y_te = rng.normal(4.0 * g_tr), rng.normal(4.0 * g_te)
    binned = MarginalKDE().fit(y_tr, categories=g_tr)
    marginal = MarginalKDE().fit(y_tr)
    assert binned.groups_.tolist() == [0, 1, 2]
    ks = stats.kstest(binned.pit(y_te, g_te), "uniform").statistic
    assert ks < _dkw(len(y_te)) + _dkw(len(y_tr) / 3) + 0.01, ks
    assert binned.crps(y_te, g_te) < 0.5 * marginal.crps(y_te)
    mean, std = binned.moments(categories=g_te)
    np.testing.assert_allclose(mean, 4.0 * g_te, atol=0.15)  # group means: sd of a mean about 1/sqrt(500)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: MarginalKDE(n_kernels=0).fit([0.0, 1.0]), ValueError, "n_kernels"),
        (lambda: MarginalKDE(bandwidth=-1.0).fit([0.0, 1.0]), ValueError, "bandwidth"),
        (lambda: MarginalKDE(bandwidth="silverman").fit([0.0, 1.0]), TypeError, "bandwidth"),
        (lambda: MarginalKDE().fit([1.0]), ValueError, "at least 2"),
        (lambda: MarginalKDE().fit([1.0, 1.0]), ValueError, "all equal"),
        (lambda: MarginalKDE().fit([0.0, 1.0, 2.0], categories=[0, 0, 1]), ValueError, "group 1"),
        (lambda: MarginalKDE().fit([0.0, 1.0], categories=[0.0, 1.0]), TypeError, "categories"),
        (lambda: MarginalKDE().fit([0.0, 1.0], categories=[0]), ValueError, "categories must have shape"),
        (lambda: MarginalKDE().fit([0.0, np.nan]), ValueError, "y"),
        (lambda: MarginalKDE().pit([0.0]), RuntimeError, "not fitted"),
        (lambda: MarginalKDE().fit([0.0, 1.0, 2.0, 3.0], categories=[0, 0, 1, 1]).pit([0.0]), ValueError, "categories"),
        (lambda: MarginalKDE().fit([0.0, 1.0, 2.0, 3.0], categories=[0, 0, 1, 1]).crps([0.0], [5]), ValueError, "not seen"),
        (lambda: MarginalKDE().fit([0.0, 1.0]).nll([0.0], reduction="sum"), ValueError, "reduction"),
        (lambda: MarginalKDE().fit([0.0, 1.0]).moments(), ValueError, "moments needs n"),
    ],
)
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()
