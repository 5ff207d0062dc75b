"""Calibration-error estimators (equal-mass, debiased, smooth ECE) and prediction-set metrics.

Three ways each: a peer or an independent computation on random inputs, tiny
hand cases, and statistical properties over many seeds (bias under perfect
calibration; convergence to the analytic error of the forecaster c = p^2).
"""

import importlib
import warnings

import numpy as np
import pytest
from scipy import stats

from calibtut.metrics import (
    assign_bins,
    bin_edges,
    class_conditional_coverage,
    coverage_by_group,
    debiased_ece,
    expected_calibration_error,
    mean_set_size,
    plugin_l2_ece,
    set_coverage,
    smooth_ece,
    smooth_reliability_curve,
)

# --- binned ECE against netcal ------------------------------------------------------------------


@pytest.mark.parametrize("strategy, equal_intervals", [("uniform", True), ("quantile", False)])
def test_binned_ece_matches_netcal(strategy, equal_intervals):
    """netcal's ECE bins with numpy's histogram (closed on the left), equal-width or at numpy quantiles
    (equal-mass): ``closed="left"``. The sums run in another order: tolerance 1e-12 (6e-17 seen)."""
    from netcal.metrics import ECE

    for seed in range(3):
        rng = np.random.default_rng(seed)
        f = rng.uniform(size=1000)
        y = (rng.random(1000) < f**1.5).astype(int)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            peer = ECE(bins=10, equal_intervals=equal_intervals).measure(f, y)
        assert expected_calibration_error(f, y, 10, strategy, "left") == pytest.approx(peer, abs=1e-12)


# --- debiased ECE -------------------------------------------------------------------------------


def test_debiased_ece_hand_cases():
    # one bin, frequency 3/4 at confidence 1/2: (1/4)^2 - (3/4)(1/4)/3 = 0
    assert debiased_ece([0.5] * 4, [1, 1, 1, 0], n_bins=1, squared=True) == pytest.approx(0.0, abs=1e-15)
    # two bins of 4: (.2 - 0)^2 and (.9 - 1)^2, no variance term -> (0.04 + 0.01) / 2
    assert debiased_ece([0.2] * 4 + [0.9] * 4, [0] * 4 + [1] * 4, n_bins=2, squared=True) == pytest.approx(0.025)
    # two bins with variance: bin 1 conf .25, freq 1/2 -> .0625 - .25/3; bin 2 conf .75, freq 1 -> .0625
    value = debiased_ece([0.25] * 4 + [0.75] * 4, [1, 0, 1, 0, 1, 1, 1, 1], n_bins=2, squared=True)
    assert value == pytest.approx(0.5 * (0.0625 - 0.25 / 3) + 0.5 * 0.0625)
    assert debiased_ece([0.25] * 4 + [0.75] * 4, [1, 0, 1, 0, 1, 1, 1, 1], n_bins=2) == pytest.approx(
        np.sqrt(value))
    # a single-point bin contributes nothing (the authors' rule)
    assert debiased_ece([0.1, 0.9, 0.9], [1, 1, 1], n_bins=2, strategy="uniform", squared=True) == pytest.approx(
        2 / 3 * 0.01)


def test_debiased_ece_is_unbiased_under_perfect_calibration_where_the_plugin_is_not():
    """f ~ U(0, 1), y ~ Bernoulli(f), n = 500, 15 equal-mass bins, 2000 seeds. The debiased squared
    estimator's mean lies within 4 standard errors of 0, widened by its known second-order excess
    correction sum_b w_b s_b^2 / (n_b - 1) (s_b^2 ~ (1/15)^2 / 12 the spread of f in a bin, about 1e-5).
    The plug-in squared estimator's mean is the sampling variance sum_b w_b q_b(1 - q_b)/n_b (about 5e-3)
    above 0, tens of standard errors; the l1 ECE is biased upwards too."""
    n, n_bins, seeds = 500, 15, 2000
    debiased, plugin, l1 = [], [], []
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        f = rng.uniform(size=n)
        y = (rng.random(n) < f).astype(float)
        debiased.append(debiased_ece(f, y, n_bins, squared=True))
        idx = assign_bins(f, bin_edges(f, n_bins, "quantile"))
        count = np.bincount(idx, minlength=n_bins)
        gap = (np.bincount(idx, weights=y, minlength=n_bins) - np.bincount(idx, weights=f, minlength=n_bins)) / count
        plugin.append(float(np.sum(count * gap**2) / n))
        if seed < 200:
            l1.append(expected_calibration_error(f, y, n_bins, strategy="quantile"))
    debiased, plugin = np.array(debiased), np.array(plugin)
    se = debiased.std(ddof=1) / np.sqrt(seeds)
    excess = (1 / n_bins) ** 2 / 12 / (n / n_bins - 1)
    assert abs(debiased.mean()) < 4 * se + excess, (debiased.mean(), se)
    expected_bias = n_bins / n * (1 / 6)  # sum_b w_b q(1 - q)/n_b, E[f(1 - f)] = 1/6
    assert plugin.mean() > 10 * plugin.std(ddof=1) / np.sqrt(seeds)
    assert plugin.mean() == pytest.approx(expected_bias, rel=0.1)
    assert np.mean(l1) > 0.02


def test_plugin_l2_ece_matches_torchmetrics_and_the_debiased_sum():
    """torchmetrics' ``binary_calibration_error(norm="l2")`` is the plug-in root-mean-square error on
    equal-width bins of [0, 1] (closed on the right): tolerance 1e-6 (float64 inputs; 0.0 seen).
    On equal-mass bins with at least two points each, the plug-in squared value minus the debiased one
    is the variance correction sum_b (n_b / n) acc_b (1 - acc_b) / (n_b - 1), to 1e-15."""
    import torch
    from torchmetrics.functional.classification import binary_calibration_error

    for seed in range(3):
        rng = np.random.default_rng(seed)
        f = rng.uniform(size=1000)
        y = (rng.random(1000) < f**1.5).astype(float)
        peer = binary_calibration_error(torch.tensor(f), torch.tensor(y, dtype=torch.long), n_bins=10,
                                        norm="l2").item()
        assert plugin_l2_ece(f, y, 10, strategy="uniform") == pytest.approx(peer, abs=1e-6)
        idx = assign_bins(f, bin_edges(f, 10, "quantile"))
        count = np.bincount(idx, minlength=10)
        acc = np.bincount(idx, weights=y, minlength=10) / count
        correction = np.sum(count / 1000 * acc * (1 - acc) / (count - 1))
        gap = plugin_l2_ece(f, y, 10, squared=True) - debiased_ece(f, y, 10, squared=True)
        assert gap == pytest.approx(correction, abs=1e-15)


def test_plugin_l2_ece_hand_cases():
    # two bins: (.2 - 0)^2 and (.9 - 1)^2 weighted 1/2 each -> 0.025, square root 0.158...
    assert plugin_l2_ece([0.2] * 4 + [0.9] * 4, [0] * 4 + [1] * 4, n_bins=2, squared=True) == pytest.approx(0.025)
    assert plugin_l2_ece([0.2] * 4 + [0.9] * 4, [0] * 4 + [1] * 4, n_bins=2) == pytest.approx(np.sqrt(0.025))
    # a single-point bin counts (unlike the debiased estimator): 1/3 * 0.9^2 + 2/3 * 0.1^2
    assert plugin_l2_ece([0.1, 0.9, 0.9], [1, 1, 1], n_bins=2, strategy="uniform", squared=True) == pytest.approx(
        (0.81 + 2 * 0.01) / 3)
    with pytest.raises(TypeError, match="squared"):
        plugin_l2_ece([0.5], [1], squared=1.5)


def _squared_truth(n_bins):
    """Binned squared error of c = p^2, p ~ U(0, 1), equal-mass bins of c: p uniform on [a, a + h]."""
    a, h = np.arange(n_bins) / n_bins, 1 / n_bins
    gap = (a + h / 2) - (a**2 + a * h + h**2 / 3)  # E[p - p^2 | bin]
    return float(np.mean(gap**2))


def test_estimators_converge_on_a_known_miscalibration():
    """The forecaster c = p^2 of p ~ U(0, 1) (y ~ Bernoulli(p)) has l1 error E[p - p^2] = 1/6. Its gap
    has one sign, so every binned l1 ECE and the smooth ECE at every bandwidth equal 1/6 in the
    population, and so does the smooth ECE's fixed point sigma*. The debiased squared estimator
    targets the binned squared error (computed in closed form). 20 seeds of n = 20000: each mean lies
    within 4 standard errors of its target (plus 2e-3 for the l1 estimators' O(sqrt(B/n)) bias)."""
    n, seeds = 20_000, 20
    rows = []
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        p = rng.uniform(size=n)
        y = (rng.random(n) < p).astype(float)
        c = p**2
        rows.append([expected_calibration_error(c, y, 15), expected_calibration_error(c, y, 15, "quantile"),
                     smooth_ece(c, y, bandwidth=0.05), debiased_ece(c, y, 15, squared=True)])
    rows = np.array(rows)
    se = rows.std(axis=0, ddof=1) / np.sqrt(seeds)
    targets = np.array([1 / 6, 1 / 6, 1 / 6, _squared_truth(15)])
    slack = np.array([2e-3, 2e-3, 2e-3, 0.0])
    assert np.all(np.abs(rows.mean(axis=0) - targets) < 4 * se + slack), (rows.mean(axis=0), targets, se)
    p = np.random.default_rng(99).uniform(size=n)
    y = (np.random.default_rng(100).random(n) < p).astype(float)
    assert smooth_ece(p**2, y) == pytest.approx(1 / 6, abs=0.01)  # sigma* (one draw; sd about 3e-3)


# --- smooth ECE ---------------------------------------------------------------------------------


def _direct_smooth_ece(f, y, sigma, m=8001):
    """The definition computed directly: the reflected kernel as a sum of images, trapezoid rule."""
    t = np.linspace(0, 1, m)[:, None]
    kernel = np.zeros((m, f.size))
    for k in range(-4, 5):
        for centre in (f + 2 * k, -f + 2 * k):
            kernel += np.exp(-0.5 * ((t - centre) / sigma) ** 2)
    kernel /= sigma * np.sqrt(2 * np.pi)
    return float(np.trapezoid(np.abs(kernel @ (y - f) / f.size), t[:, 0]))


@pytest.mark.parametrize("sigma", [0.01, 0.05, 0.3, 1.0])
def test_smooth_ece_matches_the_definition_by_quadrature(sigma):
    """Our grid (2000 cells, linear binning, scipy's reflecting Gaussian filter) against the explicit
    image-sum kernel on 8001 points: 1.1e-5 the largest difference seen (at sigma = 0.01, where both
    discretisations matter); tolerance 5e-5."""
    rng = np.random.default_rng(int(sigma * 1000))
    f = rng.uniform(size=200)
    y = (rng.random(200) < f**1.3).astype(float)
    assert smooth_ece(f, y, bandwidth=sigma) == pytest.approx(_direct_smooth_ece(f, y, sigma), abs=5e-5)


def test_smooth_ece_matches_relplot():
    """relplot 1.0.3 (the authors' package, in the test extra) evaluates
    the same reflected-kernel estimator on a mesh of max(200, 10 / sigma) points with one reflection and
    finds sigma* by ten bisection steps: 3.6e-4 the largest difference seen at fixed bandwidths
    (5 seeds, n = 2000) and 2.8e-4 for the fixed point; tolerance 1e-3, the mesh's and the bisection's
    resolution."""
    relplot_metrics = importlib.import_module("relplot.metrics")
    rng = np.random.default_rng(0)
    f = rng.uniform(size=2000)
    y = (rng.random(2000) < f**1.5).astype(float)
    for sigma in (0.02, 0.05, 0.1, 0.2):
        assert smooth_ece(f, y, bandwidth=sigma) == pytest.approx(relplot_metrics.smECE_sigma(f, y, sigma), abs=1e-3)
    assert smooth_ece(f, y) == pytest.approx(relplot_metrics.smECE(f, y), abs=1e-3)


def test_smooth_ece_hand_cases():
    # one-signed residuals: |mean(y - f)| at any bandwidth, and the fixed point is that value
    for sigma in (0.01, 0.2, 1.0):
        assert smooth_ece([0.3, 0.3, 0.3], [1, 1, 1], bandwidth=sigma) == pytest.approx(0.7, abs=1e-12)
    assert smooth_ece([0.3, 0.3, 0.3], [1, 1, 1]) == pytest.approx(0.7, abs=1e-9)
    # opposite residuals at one confidence cancel: 0
    assert smooth_ece([0.5, 0.5], [1, 0], bandwidth=0.1) == pytest.approx(0.0, abs=1e-15)
    # non-increasing in the bandwidth
    rng = np.random.default_rng(0)
    f = rng.uniform(size=200)
    y = (rng.random(200) < 0.5).astype(float)
    values = [smooth_ece(f, y, bandwidth=s) for s in (0.01, 0.03, 0.1, 0.3)]
    assert np.all(np.diff(values) <= 1e-12)


def test_smooth_reliability_curve_matches_kernel_regression():
    """The curve and density against the explicit image-sum kernel evaluated at the cell centres
    (Nadaraya-Watson regression of y on f, kernel density of f): tolerance 1e-4 on the curve where the
    density exceeds 0.1 and on the density, the grid's linear binning (2e-6 and 8e-6 seen). The
    smooth ECE is the integral of |h| = density * |curve - kernel mean of f|, to 1e-6 (the same
    discretisation; 2e-8 seen)."""
    rng = np.random.default_rng(3)
    f = rng.beta(5, 2, size=300)
    y = (rng.random(300) < f**1.5).astype(float)
    sigma = 0.05
    t, curve, density = smooth_reliability_curve(f, y, bandwidth=sigma)
    kernel = np.zeros((t.size, f.size))
    for k in range(-4, 5):
        for centre in (f + 2 * k, -f + 2 * k):
            kernel += np.exp(-0.5 * ((t[:, None] - centre) / sigma) ** 2)
    kernel /= sigma * np.sqrt(2 * np.pi)
    direct_density = kernel.mean(axis=1)
    seen = direct_density > 0.1
    np.testing.assert_allclose(density, direct_density, atol=1e-4)
    np.testing.assert_allclose(curve[seen], (kernel @ y / kernel.sum(axis=1))[seen], atol=1e-4)
    mean_f = kernel @ f / kernel.sum(axis=1)
    assert np.mean(density * np.abs(curve - mean_f)) == pytest.approx(smooth_ece(f, y, bandwidth=sigma), abs=1e-6)


def test_smooth_reliability_curve_of_a_calibrated_forecaster_is_near_the_diagonal():
    """y ~ Bernoulli(f), f ~ U(0, 1), n = 20000, sigma = 0.05: the kernel regression's sd at a point is
    about sqrt(f(1 - f) / (n * 2 sqrt(pi) sigma)) < 0.01, its smoothing bias sigma^2 f'' = 0; 50 seeds
    averaged, every cell of [0.1, 0.9] lies within 0.01 of t (over 4 standard errors)."""
    curves = []
    for seed in range(50):
        rng = np.random.default_rng(seed)
        f = rng.uniform(size=20_000)
        y = (rng.random(20_000) < f).astype(float)
        t, curve, _ = smooth_reliability_curve(f, y, bandwidth=0.05, n_grid=200)
        curves.append(curve)
    inner = (t > 0.1) & (t < 0.9)
    assert np.all(np.abs(np.mean(curves, axis=0)[inner] - t[inner]) < 0.01)


def test_estimators_check_their_arguments():
    with pytest.raises(ValueError, match="bandwidth"):
        smooth_ece([0.5], [1], bandwidth=0.0)
    with pytest.raises(ValueError, match="n_grid"):
        smooth_ece([0.5], [1], n_grid=10)
    with pytest.raises(TypeError, match="squared"):
        debiased_ece([0.5], [1], squared="yes")
    with pytest.raises(ValueError, match="correct"):
        debiased_ece([0.5], [2])


# --- prediction-set metrics ---------------------------------------------------------------------


def test_set_metrics_match_mapie():
    """MAPIE 1.6's ``classification_coverage_score`` and ``classification_mean_width_score`` on random
    sets: the same definitions, equal to 1e-15 (0.0 seen)."""
    from mapie.metrics.classification import classification_coverage_score, classification_mean_width_score

    rng = np.random.default_rng(0)
    for k in (2, 5):
        sets = rng.random((300, k)) < 0.4
        y = rng.integers(0, k, size=300)
        assert set_coverage(y, sets) == pytest.approx(float(classification_coverage_score(y, sets)[0]), abs=1e-15)
        assert mean_set_size(sets) == pytest.approx(float(classification_mean_width_score(sets)), abs=1e-15)


def test_set_metrics_hand_cases():
    sets = np.array([[1, 0, 0], [1, 1, 0], [0, 0, 1], [0, 1, 1]], dtype=bool)
    y = [0, 2, 2, 0]
    assert set_coverage(y, sets) == 0.5
    assert mean_set_size(sets) == 1.5
    np.testing.assert_array_equal(class_conditional_coverage(y, sets), [0.5, np.nan, 0.5])
    assert set_coverage([1], [[0, 1]]) == 1.0  # 0/1 integers are accepted
    with pytest.raises(ValueError, match="sets"):
        mean_set_size([[0.5, 1.0]])
    with pytest.raises(ValueError, match="y"):
        set_coverage([3], [[True, False]])


def test_set_metrics_statistical_coverage_of_oracle_sets():
    """Sets built from the true class probabilities (smallest set of mass >= 0.9, the oracle of
    Romano et al.) cover each point with probability equal to its set's mass; over 500 seeds of 200
    points, the mean coverage lies within 4 standard errors of the mean set mass, and the class
    coverage averaged over classes with weights equal to the class counts is the marginal coverage."""
    gaps, masses = [], []
    for seed in range(500):
        rng = np.random.default_rng(seed)
        probs = rng.dirichlet(np.ones(4), size=200)
        y = (rng.random((200, 1)) > np.cumsum(probs, axis=1)).sum(axis=1).clip(0, 3)
        order = np.argsort(-probs, axis=1)
        sorted_p = np.take_along_axis(probs, order, axis=1)
        keep = (np.cumsum(sorted_p, axis=1) - sorted_p) < 0.9
        sets = np.zeros_like(keep)
        np.put_along_axis(sets, order, keep, axis=1)
        coverage = set_coverage(y, sets)
        mass = float(np.mean(np.sum(probs * sets, axis=1)))
        gaps.append(coverage - mass)
        masses.append(mass)
        counts = np.bincount(y, minlength=4)
        assert np.nansum(class_conditional_coverage(y, sets) * counts) / 200 == pytest.approx(coverage)
        assert 1 <= mean_set_size(sets) <= 4
    gaps = np.array(gaps)
    assert abs(gaps.mean()) < 4 * gaps.std(ddof=1) / np.sqrt(len(gaps))
    assert np.mean(masses) >= 0.9


def test_coverage_by_group():
    rng = np.random.default_rng(3)
    groups = rng.integers(0, 4, size=1_000) * 10
    covered = rng.random(1_000) < 0.9
    series = coverage_by_group(covered, groups)
    for g, value in series.items():
        assert np.isclose(value, covered[groups == g].mean())
    with pytest.raises(ValueError, match="0/1"):
        coverage_by_group([0.5, 1.0], [0, 0])
    with pytest.raises(ValueError, match="same length"):
        coverage_by_group([1, 0], [0])
