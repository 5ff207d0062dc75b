"""Tests for calibtut.metrics.pit and calibtut.metrics.regression."""

import numpy as np
import pytest
import uncertainty_toolbox as uct
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats
from sklearn.metrics import mean_squared_error

from calibtut.metrics import (
    gaussian_scale_pce,
    interval_coverage,
    l2_calibration_error,
    mean_interval_width,
    mixture_std,
    pce,
    pit_gaussian,
    pit_mixture,
    pit_quantile,
    pit_reliability_data,
    quantile_calibration_error,
    quantile_frequencies,
    quantile_sharpness,
    rmse,
    sharpness,
)

RTOL = 1e-10  # achieved: <= 1e-13 on these inputs (see the metrics report)


def gaussian_data(seed, n=400, miscal=1.5):
    rng = np.random.default_rng(seed)
    mean = rng.normal(size=n)
    std = rng.uniform(0.5, 2.0, n)
    y = mean + miscal * std * rng.normal(size=n) + 0.3
    return y, mean, std


def mixture_data(seed, n=300, k=3):
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.ones(k), n)
    m = rng.normal(size=(n, k)) * 2
    s = rng.uniform(0.3, 1.5, (n, k))
    y = rng.normal(size=n) * 2
    return y, w, m, s


# ---------------------------------------------------------------- PIT


@pytest.mark.parametrize("seed", range(3))
def test_pit_gaussian_and_mixture_match_scipy(seed):
    y, mean, std = gaussian_data(seed)
    np.testing.assert_allclose(pit_gaussian(y, mean, std), stats.norm.cdf(y, mean, std), rtol=1e-12)
    y, w, m, s = mixture_data(seed)
    ref = sum(w[:, j] * stats.norm.cdf(y, m[:, j], s[:, j]) for j in range(3))
    np.testing.assert_allclose(pit_mixture(y, w, m, s), ref, rtol=1e-12)


def test_pit_quantile_hand_case_and_tails():
    q = [[0.0, 1.0, 2.0]] * 4
    a = [0.1, 0.5, 0.9]
    y = [-1.0, 0.5, 1.5, 2.25]
    # linear: -1 extends the first segment (slope .4): .1 - .4 = -.3 -> 0; .5 -> .3; 1.5 -> .7;
    # 2.25 -> .9 + .4 * .25 = 1.0
    np.testing.assert_allclose(pit_quantile(y, q, a), [0.0, 0.3, 0.7, 1.0], atol=1e-12)
    # pad .5 (range 2 -> endpoints -1 at level 0 and 3 at level 1):
    # -1 -> 0; 2.25 -> .9 + .1 * (.25 / 1) = .925
    np.testing.assert_allclose(pit_quantile(y, q, a, tails="pad", pad=0.5), [0.0, 0.3, 0.7, 0.925], atol=1e-12)


def test_pit_quantile_tied_quantiles_jump_to_upper_level():
    # levels .25, .5, .75 at 0, 1, 1: y = 1 sits on the tie -> upper level .75
    assert pit_quantile([1.0], [[0.0, 1.0, 1.0]], [0.25, 0.5, 0.75])[0] == pytest.approx(0.75)


def test_pit_quantile_converges_to_gaussian_pit():
    # 99 Gaussian quantiles: interpolation error of the CDF is O(spacing^2)
    y, mean, std = gaussian_data(0, miscal=0.8)
    levels = np.arange(1, 100) / 100
    q = mean[:, None] + std[:, None] * stats.norm.ppf(levels)
    inside = (y > q[:, 0]) & (y < q[:, -1])
    err = np.abs(pit_quantile(y, q, levels) - pit_gaussian(y, mean, std))[inside]
    assert err.max() < 2e-3


# ---------------------------------------------------------------- PCE oracles


@pytest.mark.parametrize("seed", range(4))
def test_pce_grid_matches_uncertainty_toolbox(seed):
    # uct's quantile curve compares (mean - y) / std with Phi^{-1}(p), i.e. the curve of 1 - PIT;
    # on the symmetric grid linspace(0, 1, 100) both give the same mean absolute error.
    y, mean, std = gaussian_data(seed)
    pit = pit_gaussian(y, mean, std)
    grid = np.linspace(0, 1, 100)
    mace = uct.mean_absolute_calibration_error(mean, std, y, prop_type="quantile", vectorized=True)
    rmsce = uct.root_mean_squared_calibration_error(mean, std, y, prop_type="quantile", vectorized=True)
    np.testing.assert_allclose(pce(pit, levels=grid), mace, rtol=RTOL)
    np.testing.assert_allclose(np.sqrt(pce(pit, p=2, levels=grid)), rmsce, rtol=RTOL)


def test_sharpness_matches_uncertainty_toolbox():
    _, _, std = gaussian_data(0)
    np.testing.assert_allclose(sharpness(std, root_mean_square=True), uct.sharpness(std), rtol=1e-12)


# ---------------------------------------------------------------- hand cases


def test_pce_hand_cases():
    # sorted PITs .2, .4, .9 against 1/4, 2/4, 3/4: |.2-.25| + |.4-.5| + |.9-.75| = .05+.1+.15 -> .1
    assert pce([0.9, 0.2, 0.4]) == pytest.approx(0.1)
    # p = 2: (.0025 + .01 + .0225) / 3
    assert pce([0.9, 0.2, 0.4], p=2) == pytest.approx(0.035 / 3)
    # grid (int 2 -> .25, .75): F_hat(.25) = 1/3, F_hat(.75) = 2/3 -> (1/12 + 1/12) / 2
    assert pce([0.9, 0.2, 0.4], levels=2) == pytest.approx(1 / 12)


def test_l2_calibration_error_hand_case_and_scales():
    # PITs .05 and .55: F_hat(j/10) = .5 for j = 1..5, 1 for j >= 6
    # squares: (.4,.3,.2,.1,0)^2 = .30; (.4,.3,.2,.1,0)^2 = .30 -> sum .60
    pit = [0.05, 0.55]
    assert l2_calibration_error(pit) == pytest.approx(60.0)
    assert l2_calibration_error(pit, normalize=True) == pytest.approx(0.06)
    # relation to PCE_2 on the grid j/10
    assert l2_calibration_error(pit) == pytest.approx(1000 * pce(pit, p=2, levels=np.arange(1, 11) / 10))


def test_quantile_calibration_error_hand_and_cumulative():
    # y = 0, 2, 4 against quantiles (1, 3) at levels (.25, .75):
    # freq(y <= 1) = 1/3, freq(y <= 3) = 2/3 -> (|1/3 - .25| + |2/3 - .75|) / 2 = 1/12
    y = [0.0, 2.0, 4.0]
    q = [[1.0, 3.0]] * 3
    lv = [0.25, 0.75]
    assert quantile_frequencies(y, q, lv) == pytest.approx([1 / 3, 2 / 3])
    assert quantile_calibration_error(y, q, lv) == pytest.approx(1 / 12)
    run = quantile_calibration_error(y, q, lv, cumulative=True)
    # T = 1: freq (1, 1) -> (.75 + .25) / 2 = .5; T = 2: (.5, 1) -> (.25 + .25) / 2 = .25
    np.testing.assert_allclose(run, [0.5, 0.25, 1 / 12])


def test_quantile_calibration_error_with_crossing_quantiles():
    # quantiles (1, 0.5) at (.25, .75) cross; y = 0, 2, 4: freq(y <= 1) = 1/3,
    # freq(y <= 0.5) = 1/3 -> (|1/3 - .25| + |1/3 - .75|) / 2 = 1/4
    y = [0.0, 2.0, 4.0]
    crossed = [[1.0, 0.5]] * 3
    with pytest.raises(ValueError, match="non-decreasing"):
        quantile_calibration_error(y, crossed, [0.25, 0.75])
    assert quantile_calibration_error(y, crossed, [0.25, 0.75], allow_crossing=True) == pytest.approx(0.25)
    with pytest.raises(TypeError, match="allow_crossing"):
        quantile_calibration_error(y, crossed, [0.25, 0.75], allow_crossing="yes")
    # on monotone rows the flag changes nothing, and each level is scored on its own
    rng = np.random.default_rng(0)
    levels = np.linspace(0.05, 0.95, 19)
    q = np.sort(rng.normal(size=(50, 19)), axis=1)
    yy = rng.normal(size=50)
    assert quantile_calibration_error(yy, q, levels, allow_crossing=True) == quantile_calibration_error(yy, q, levels)
    swapped = q.copy()
    swapped[:, [3, 4]] = swapped[:, [4, 3]]
    per_level = np.abs((yy[:, None] <= swapped).mean(axis=0) - levels).mean()
    assert quantile_calibration_error(yy, swapped, levels, allow_crossing=True) == pytest.approx(per_level)


def test_quantile_pce_equals_pit_grid_pce_for_gaussian_quantiles():
    # freq(y <= q_a) = F_hat_PIT(a) when q_a = mean + std Phi^{-1}(a)
    y, mean, std = gaussian_data(1)
    levels = np.arange(1, 20) / 20
    q = mean[:, None] + std[:, None] * stats.norm.ppf(levels)
    assert quantile_calibration_error(y, q, levels) == pytest.approx(
        pce(pit_gaussian(y, mean, std), levels=levels), rel=1e-12
    )


def test_coverage_width_sharpness_hand_cases():
    # y = 0, 2, -3 in [-1, 1]: only 0 -> 1/3
    assert interval_coverage([0.0, 2.0, -3.0], [-1.0] * 3, [1.0] * 3) == pytest.approx(1 / 3)
    assert interval_coverage([1.0], [1.0], [1.0]) == 1.0  # closed interval
    assert mean_interval_width([-1.0, 0.0], [1.0, 4.0]) == 3.0
    # K = 3 (odd): (|0-2| + 0 + |2-0|) / 3 = 4/3 = (K-1)/K * width 2
    assert quantile_sharpness([[0.0, 1.0, 2.0]]) == pytest.approx(4 / 3)
    assert sharpness([1.0, 2.0, 6.0]) == 3.0


def test_mixture_std_matches_monte_carlo():
    rng = np.random.default_rng(0)
    w, m, s = np.array([[0.2, 0.8]]), np.array([[-2.0, 1.0]]), np.array([[0.5, 1.5]])
    comp = rng.choice(2, size=400_000, p=w[0])
    draws = rng.normal(m[0, comp], s[0, comp])
    # sd of the sample sd ~ sigma / sqrt(2n) ~ .0025; allow 4 of them
    assert mixture_std(w, m, s)[0] == pytest.approx(draws.std(), abs=0.01)


def test_pit_reliability_band_is_binomial():
    df = pit_reliability_data(np.linspace(0.01, 0.99, 50), levels=[0.0, 0.5, 1.0], alpha=0.1)
    assert df["frequency"].tolist() == [0.0, 0.5, 1.0]
    assert df["band_lower"].iloc[1] == stats.binom.ppf(0.05, 50, 0.5) / 50
    assert df["band_upper"].iloc[2] == 1.0


# ---------------------------------------------------------------- properties


pits = arrays(np.float64, st.integers(1, 80), elements=st.floats(0, 1))


@settings(max_examples=40, deadline=None)
@given(pits, st.sampled_from([1, 2, 0.5]))
def test_pce_bounds_and_permutation(pit, p):
    for levels in (None, 10):
        value = pce(pit, p=p, levels=levels)
        assert 0 <= value <= 1
        assert pce(pit[::-1], p=p, levels=levels) == pytest.approx(value, abs=1e-12)
    assert pce(pit) <= 0.5 + 1e-12 and l2_calibration_error(pit) <= 100 * 10  # all PITs at 0 or 1: 1/2


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**16), st.floats(0.1, 10), st.floats(-5, 5))
def test_pit_errors_invariant_to_scale_and_shift(seed, scale, shift):
    y, mean, std = gaussian_data(seed, n=60)
    base = pit_gaussian(y, mean, std)
    moved = pit_gaussian(scale * y + shift, scale * mean + shift, scale * std)
    np.testing.assert_allclose(moved, base, atol=1e-9)
    assert pce(moved) == pytest.approx(pce(base), abs=1e-9)
    q = mean[:, None] + std[:, None] * np.array([-1.0, 0.0, 1.0])
    levels = [0.16, 0.5, 0.84]
    assert quantile_calibration_error(scale * y + shift, scale * q + shift, levels) == pytest.approx(
        quantile_calibration_error(y, q, levels), abs=1e-12
    )


def test_uniform_pce_shrinks_like_inverse_sqrt_n():
    # PCE_1 of n uniform PITs ~ E int |B(a)| da / sqrt(n) = sqrt(pi/2)/4 / sqrt(n) ~ .313 / sqrt(n)
    rng = np.random.default_rng(0)
    small = np.mean([pce(rng.random(400)) for _ in range(200)])
    large = np.mean([pce(rng.random(6400)) for _ in range(200)])
    assert 3.4 < small / large < 4.6
    assert small * np.sqrt(400) == pytest.approx(np.sqrt(np.pi / 2) / 4, rel=0.1)


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: pit_gaussian([0.0], [0.0], [0.0]), "std"),
        (lambda: pit_gaussian([0.0], [0.0, 1.0], [1.0, 1.0]), "y has 1"),
        (lambda: pit_gaussian([np.nan], [0.0], [1.0]), "y"),
        (lambda: pit_gaussian([], [], []), "y"),
        (lambda: pit_mixture([0.0], [[0.5, 0.6]], [[0.0, 0.0]], [[1.0, 1.0]]), "weights"),
        (lambda: pit_mixture([0.0], [[0.5, 0.5]], [[0.0]], [[1.0]]), "same shape"),
        (lambda: pit_mixture([0.0], [[0.5, 0.5]], [[0.0, 0.0]], [[1.0, -1.0]]), "stds"),
        (lambda: pit_quantile([0.0], [[0.0, 1.0]], [0.6, 0.4]), "levels"),
        (lambda: pit_quantile([0.0], [[0.0, 1.0]], [0.0, 0.4]), "levels"),
        (lambda: pit_quantile([0.0], [[1.0, 0.0]], [0.4, 0.6]), "quantiles"),
        (lambda: pit_quantile([0.0], [[0.0, 1.0, 2.0]], [0.4, 0.6]), "levels"),
        (lambda: pit_quantile([0.0], [[0.0, 1.0]], [0.4, 0.6], tails="flat"), "tails"),
        (lambda: pit_quantile([0.0], [[1.0, 1.0]], [0.4, 0.6], tails="pad"), "positive range"),
        (lambda: pce([0.5, 1.5]), "pit"),
        (lambda: pce([0.5], p=0), "p must"),
        (lambda: pce([0.5], levels=[0.5, 0.2]), "levels"),
        (lambda: l2_calibration_error([0.5], n_levels=0), "n_levels"),
        (lambda: interval_coverage([0.0], [1.0], [0.0]), "lower"),
        (lambda: sharpness([1.0, 0.0]), "std"),
        (lambda: pit_reliability_data([0.5], alpha=0), "alpha"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("scale", [0.6, 0.9, 1.3])
def test_gaussian_scale_pce_matches_the_pce_of_simulated_pits(scale):
    y = np.random.default_rng(0).normal(size=400_000)
    simulated = pce(stats.norm.cdf(y / scale))
    # the sorted estimator's error at n = 4e5 is a few 1e-4
    assert gaussian_scale_pce(scale) == pytest.approx(simulated, abs=2e-3)


def test_gaussian_scale_pce_limits_and_mirror_symmetry():
    assert gaussian_scale_pce(1.0) == pytest.approx(0.0, abs=1e-12)
    # PITs all at 0 and 1 (s -> 0) or all at 1/2 (s -> inf): F_Z is 1/2 or a step at 1/2
    assert gaussian_scale_pce(1e-5) == pytest.approx(0.25, abs=1e-3)
    assert gaussian_scale_pce(1e5) == pytest.approx(0.25, abs=1e-3)
    for s in (0.3, 0.77, 0.95):
        assert gaussian_scale_pce(s) == pytest.approx(gaussian_scale_pce(1 / s), rel=1e-7)
    values = [gaussian_scale_pce(s) for s in (0.5, 0.7, 0.9, 1.0)]
    assert values == sorted(values, reverse=True)


def test_gaussian_scale_pce_refuses_a_bad_scale():
    with pytest.raises(ValueError, match="scale"):
        gaussian_scale_pce(0.0)
    with pytest.raises(ValueError, match="scale"):
        gaussian_scale_pce(float("nan"))


def test_rmse_matches_scikit_learn_and_a_hand_case():
    rng = np.random.default_rng(4)
    for n in (1, 7, 500):
        y, mean = rng.normal(size=n), rng.normal(size=n)
        assert rmse(y, mean) == pytest.approx(np.sqrt(mean_squared_error(y, mean)), rel=1e-12)
    # errors 0, 0 and 2: sqrt(4 / 3)
    assert rmse([1.0, 2.0, 3.0], [1.0, 2.0, 5.0]) == pytest.approx(2 / np.sqrt(3))
    assert rmse([1.0, 2.0], [2.0, 1.0]) == rmse([2.0, 1.0], [1.0, 2.0]) == 1.0


def test_rmse_of_gaussian_noise_is_its_standard_deviation():
    # y = mean + N(0, 2^2): the RMSE over 20000 points is 2 up to its sampling error
    # (the sd of the mean of e^2 is sqrt(2) * 4 / sqrt(n); 5 of them, divided by 2 * 2 for the root)
    for seed in range(20):
        rng = np.random.default_rng(seed)
        mean = rng.uniform(-5, 5, size=20_000)
        y = mean + rng.normal(0.0, 2.0, size=mean.size)
        assert abs(rmse(y, mean) - 2.0) < 5 * np.sqrt(2) * 4 / np.sqrt(mean.size) / 4


def test_rmse_checks_its_arguments():
    with pytest.raises(ValueError, match="same length"):
        rmse([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="mean"):
        rmse([1.0, 2.0], [1.0, np.nan])
    with pytest.raises(TypeError, match="y"):
        rmse(["a", "b"], [1.0, 2.0])
