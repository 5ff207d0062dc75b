"""Tests of calibtut.online: guarantees, solvers, baselines, metrics, errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import linalg, optimize, stats

from calibtut import metrics as cm
from calibtut.online import (
    PAPER,
    PAPER_DRIFT_BETA,
    TORCHUQ,
    ACICalibrator,
    ConformalCalibrator,
    DriftCalibrator,
    OriginalForecast,
    RegretCalibrator,
    apply_drift,
    binomial_tolerance,
    drifting_gaussian_stream,
    ece_loss,
    empirical_frequencies,
    equally_spaced_levels,
    equilibrium_residual,
    figure1_stream,
    integral_gains,
    mixed_loss,
    oracle_band,
    pinball_loss,
    reliability_data,
    sharpness,
    solve_equilibrium,
    solve_equilibrium_damped,
    solve_tridiagonal,
    synthetic_tasks,
    theorem1_bound,
)
from calibtut.online.pid import PIDController

LEVELS = equally_spaced_levels(9)


# --------------------------------------------------------------------------- helpers


def play(cal, forecasts, nature, n_steps, n_series, seed):
    """The causal protocol: nature picks each label after seeing the forecast."""
    rng = np.random.default_rng(seed)
    cal.reset(n_series)
    zs, ys = [], []
    for t in range(n_steps):
        z = cal.predict(forecasts(t, rng))
        y = nature(t, z, cal, rng)
        cal.update(y)
        zs.append(z)
        ys.append(y)
    return np.stack(zs, axis=1), np.stack(ys, axis=1)


def deviations(z, y, levels):
    """|F_k^t - alpha_k t| for t = 1..T, shape (n, T, K)."""
    counts = np.cumsum(y[..., None] <= z, axis=1)
    t = np.arange(1, y.shape[1] + 1)[None, :, None]
    return np.abs(counts - levels * t)


def make_adversary(B, mode):
    def nature(t, z, cal, rng):
        n, K = z.shape
        if mode == "random":
            return rng.uniform(-B, B, size=n)
        if mode == "extreme":
            return np.where(rng.uniform(size=n) < 0.5, -B, B)
        # push the level whose count deviates most further away from alpha_k t
        dev = cal.counts - cal.levels * cal.t if hasattr(cal, "counts") else np.zeros((n, K))
        k = np.argmax(np.abs(dev) + 1e-9 * rng.uniform(size=(n, K)), axis=1)
        zk = z[np.arange(n), k]
        up = dev[np.arange(n), k] >= 0
        below = np.clip(zk, -B, B)
        above = np.clip(zk + 1e-7, -B, B)
        return np.where(up, below, above)

    return nature


# --------------------------------------------------------------------------- Theorem 1


@pytest.mark.parametrize("mode", ["random", "extreme", "adversarial"])
@pytest.mark.parametrize("beta,delta,B", [(0.16, 0.47, 5.0), (1.0, 0.1, 2.0), (0.05, 0.3, 50.0)])
def test_theorem1_bound_holds_at_every_step(mode, beta, delta, B):
    K, T, n = 5, 150, 8
    levels = equally_spaced_levels(K)
    cal = DriftCalibrator(levels, B, control="basic", feasibility=False, beta=beta, delta=delta)
    drift = lambda t, rng: np.sort(rng.uniform(-B, B, size=(n, K)), axis=1)  # noqa: E731
    z, y = play(cal, drift, make_adversary(B, mode), T, n, seed=0)
    bound = theorem1_bound(T, levels, B=B, beta=beta, delta=delta)[1:]
    assert np.all(deviations(z, y, levels) <= bound[None] + 1e-9)


def test_theorem1_bound_on_drifting_stream_with_conformal_stage():
    s = drifting_gaussian_stream("linear_shift", 20, 200, seed=4)
    cal = DriftCalibrator(s.levels, s.B, control="basic", feasibility=False)
    z = cal.run(s.forecasts, s.labels)
    bound = theorem1_bound(200, s.levels, B=s.B, beta=PAPER.beta, delta=PAPER.delta)[1:]
    assert np.all(deviations(z, s.labels, s.levels) <= bound[None] + 1e-9)


def test_adversary_breaks_the_original_forecast_but_not_the_adjustment():
    B, K, T, n = 3.0, 3, 200, 4
    levels = equally_spaced_levels(K)
    forecasts = lambda t, rng: np.tile([-1.0, 0.0, 1.0], (n, 1))  # noqa: E731
    nature = lambda t, z, cal, rng: np.full(n, B)  # noqa: E731
    z0, y0 = play(OriginalForecast(levels, B), forecasts, nature, T, n, seed=0)
    assert ece_loss(y0, z0, levels).min() == pytest.approx(0.5)
    z1, y1 = play(DriftCalibrator(levels, B, control="basic", feasibility=False), forecasts, nature, T, n, seed=0)
    assert np.all(deviations(z1, y1, levels)[:, -1] <= theorem1_bound(T, levels, B=B, beta=0.16, delta=0.47)[-1])


# --------------------------------------------------------------------------- feasibility


@pytest.mark.parametrize("params", [PAPER, TORCHUQ])
@pytest.mark.parametrize("mode", ["random", "extreme", "adversarial"])
def test_springs_never_cross(params, mode):
    B, K, T, n = 4.0, 9, 120, 6
    forecasts = lambda t, rng: np.sort(rng.uniform(-B, B, size=(n, K)), axis=1)  # noqa: E731
    cal = DriftCalibrator(equally_spaced_levels(K), B, params=params)
    z, _ = play(cal, forecasts, make_adversary(B, mode), T, n, seed=1)
    assert np.all(np.diff(z, axis=-1) > 0)
    assert np.all((z > -B) & (z < B))


def test_basic_algorithm_crosses_where_springs_do_not():
    s = figure1_stream(n_steps=60, n_series=40, seed=0)
    basic = DriftCalibrator(s.levels, s.B, control="basic", feasibility=False).run(s.forecasts, s.labels)
    feasible = DriftCalibrator(s.levels, s.B, control="basic").run(s.forecasts, s.labels)
    assert np.any(np.diff(basic, axis=-1) <= 0)
    assert np.all(np.diff(feasible, axis=-1) > 0)


def test_pid_improves_calibration_on_figure1_stream():
    # paper, Figure 1 and Table 1: conformal alone stays miscalibrated after the jump
    s = figure1_stream(n_steps=60, n_series=100, seed=2)
    conf = ece_loss(s.labels, ConformalCalibrator(s.levels, s.B).run(s.forecasts, s.labels), s.levels).mean()
    ours = ece_loss(s.labels, DriftCalibrator(s.levels, s.B).run(s.forecasts, s.labels), s.levels).mean()
    assert ours < 0.6 * conf


# --------------------------------------------------------------------------- equilibrium solvers


def random_problem(rng, n, K, scale=3.0):
    base = np.sort(rng.uniform(-0.8, 0.8, size=(n, K)), axis=1) * scale
    base += np.arange(K) * 0.05  # gaps of at least 0.05
    base = np.clip(base, -scale + 0.01, scale - 0.01)
    base = np.sort(base, axis=1) + np.linspace(0, 1e-3, K)
    adjustment = rng.normal(size=(n, K)) * rng.exponential(2.0, size=(n, 1))
    return base, adjustment


@pytest.mark.parametrize("B", [None, 4.0])
def test_exact_solver_satisfies_equilibrium(B):
    rng = np.random.default_rng(0)
    base, e = random_problem(rng, 500, 9)
    z, info = solve_equilibrium(base, e, 0.96, B, return_info=True)
    assert np.all(np.diff(z, axis=1) > 0)
    assert np.abs(equilibrium_residual(z, base, e, 0.96, B)).max() < 1e-10
    assert info["residual"].max() < 1e-10


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), K=st.integers(1, 12), eta=st.floats(0.05, 5.0), big=st.floats(0.1, 30.0))
def test_exact_solver_property(seed, K, eta, big):
    rng = np.random.default_rng(seed)
    base, e = random_problem(rng, 20, K)
    z = solve_equilibrium(base, e * big, eta, 3.0)
    assert np.all(np.diff(z, axis=1) > 0) and np.all(np.abs(z) < 3.0)
    assert np.abs(equilibrium_residual(z, base, e * big, eta, 3.0)).max() < 1e-9 * (1 + np.abs(e * big).max())


def test_exact_solver_matches_damped_at_convergence():
    rng = np.random.default_rng(1)
    base = np.linspace(-2, 2, 9) + rng.uniform(-0.1, 0.1, size=(20, 9))
    e = rng.normal(size=(20, 9))
    exact = solve_equilibrium(base, e, 0.96, 4.0)
    damped, info = solve_equilibrium_damped(base, e, 0.96, 4.0, min_gap=1e-12, tol=1e-14, max_iter=20_000,
                                            return_info=True)
    assert info["residual"].max() < 1e-9
    np.testing.assert_allclose(damped, exact, atol=1e-9)


def test_damped_iteration_stalls_below_its_gap_floor():
    # the public code's monotonicity floor (1e-3) keeps it away from equilibria with tighter gaps
    base = np.linspace(-1.0, 1.0, 5)
    e = np.array([0.0, 0.0, 100.0, -100.0, 0.0])
    exact = solve_equilibrium(base, e, 0.1, 2.0)
    assert np.diff(exact).min() < 1e-3
    damped, info = solve_equilibrium_damped(base, e, 0.1, 2.0, return_info=True)
    # it stops (the step has shrunk below its tolerance) far from equilibrium
    assert info["iterations"][0] < 300 and info["residual"][0] > 1.0 and np.diff(damped).min() >= 1e-3 - 1e-12


def test_single_quantile_equilibrium_matches_brentq():
    base, e, eta, B = 0.5, 2.0, 0.7, 2.0

    def force(z):
        up, up0, dn, dn0 = B - z, B - base, z + B, base + B
        return e + base - z + eta * (up / up0 - up0 / up) + eta * (dn0 / dn - dn / dn0)

    root = optimize.brentq(force, -B + 1e-12, B - 1e-12, xtol=1e-15)
    assert solve_equilibrium([base], [e], eta, B)[0] == pytest.approx(root, abs=1e-12)


def test_equilibrium_minimises_the_energy():
    rng = np.random.default_rng(5)
    base, e = random_problem(rng, 1, 6)
    base, e = base[0], e[0]
    eta, B = 0.96, 4.0

    def energy(z):
        gaps = np.diff(np.concatenate([[-B], z, [B]]))
        rest = np.diff(np.concatenate([[-B], base, [B]]))
        if np.any(gaps <= 0):
            return np.inf
        r = gaps / rest
        return 0.5 * np.sum((z - base - e) ** 2) + eta * np.sum(rest * (0.5 * r**2 - np.log(r)))

    best = optimize.minimize(energy, base, method="Nelder-Mead",
                             options={"xatol": 1e-10, "fatol": 1e-14, "maxiter": 40_000})
    np.testing.assert_allclose(solve_equilibrium(base, e, eta, B), best.x, atol=1e-4)


def test_no_force_returns_the_base_and_ties_are_separated():
    base = np.array([[-1.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
    z = solve_equilibrium(base, np.zeros_like(base), 1.0, 2.0)
    np.testing.assert_array_equal(z[0], base[0])
    assert np.all(np.diff(z[1]) > 0)


def test_tridiagonal_matches_solve_banded():
    rng = np.random.default_rng(2)
    n, K = 30, 7
    off = -rng.uniform(0.1, 1.0, size=(n, K - 1))
    diag = 1.0 + rng.uniform(0.0, 1.0, size=(n, K)) + np.pad(-off, ((0, 0), (0, 1))) + np.pad(-off, ((0, 0), (1, 0)))
    rhs = rng.normal(size=(n, K))
    x = solve_tridiagonal(diag, off, rhs)
    for i in range(n):
        ab = np.zeros((3, K))
        ab[0, 1:], ab[1], ab[2, :-1] = off[i], diag[i], off[i]
        np.testing.assert_allclose(x[i], linalg.solve_banded((1, 1), ab, rhs[i]), rtol=1e-12, atol=1e-12)


def test_stiff_springs_are_solved_without_cancellation():
    from calibtut.online.springs import _solve_stiff

    # the cancellation-free elimination is the same linear algebra on ordinary systems
    rng = np.random.default_rng(3)
    c = rng.uniform(0.0, 5.0, size=(6, 8))
    rhs = rng.normal(size=(6, 7))
    x = _solve_stiff(c, rhs)
    for i in range(6):
        ab = np.zeros((3, 7))
        ab[0, 1:], ab[1], ab[2, :-1] = -c[i, 1:-1], 1.0 + c[i, 1:] + c[i, :-1], -c[i, 1:-1]
        np.testing.assert_allclose(x[i], linalg.solve_banded((1, 1), ab, rhs[i]), rtol=1e-12, atol=1e-12)
    # a step of the median adversary (chapter 3) at T = 594: gaps of 1e-11 to 1e-8 and
    # forces of 2e5, where Thomas' pivots used to cancel to zero (ZeroDivisionError)
    base = np.array([-0.00025913358726731284, -0.00013878297328789868, -0.00013057342123667937,
                     -0.00012674412620089504, -0.0001267435419463614, -0.00012674352526570454,
                     -0.00012674351018687746, -0.00012674348820296277, -9.815209691610427e-05])
    force = 198237.19215326058
    adjustment = np.array([39814.039628225866, force, force, force, 0.0, -force, -force, -force,
                           -39814.03962822615])
    z = solve_equilibrium(base, adjustment, 0.96, B=4.0)
    assert np.all(np.diff(z) > 0)
    # solved to what float64 allows: a net force about 1e-8 of the forces acting
    assert np.abs(equilibrium_residual(z, base, adjustment, 0.96, B=4.0)).max() < 1e-8 * force


# --------------------------------------------------------------------------- conformal calibration


def test_conformal_is_calibrated_on_exchangeable_data():
    # I(Y_t <= Z_k^t) are Bernoulli(alpha_k) under exchangeability: frequencies pooled
    # over 200 series x 100 steps lie within 5 binomial standard errors
    rng = np.random.default_rng(0)
    n, T = 200, 100
    y = rng.standard_t(3, size=(n, T)) * 2 + 1
    f = np.broadcast_to(stats.norm.ppf(LEVELS), (n, T, 9))
    z = ConformalCalibrator(LEVELS, B=None).run(f, y)
    freq = np.mean(y[:, 1:, None] <= z[:, 1:], axis=(0, 1))
    se = np.sqrt(LEVELS * (1 - LEVELS) / (n * (T - 1)))
    assert np.all(np.abs(freq - LEVELS) < 5 * se + 1.0 / T)


def test_conformal_first_step_is_the_base_forecast():
    f = np.array([[[-1.0, 0.5]]])
    np.testing.assert_array_equal(ConformalCalibrator([0.3, 0.7], B=3).run(f, [[0.0]]), f)


def test_cdf_forecast_equals_quantile_forecast_for_uniform():
    rng = np.random.default_rng(3)
    n, T = 4, 30
    loc = rng.uniform(-1, 1, size=(n, T))
    dist = stats.uniform(loc - 1.0, 2.0)
    q = loc[..., None] - 1.0 + 2.0 * LEVELS
    y = np.clip(loc + rng.uniform(-1.5, 1.5, size=(n, T)), -2.0, 2.0)
    cal = ConformalCalibrator(LEVELS, B=2.0)
    # inside [-1, 1] around loc the two quantile functions coincide; compare the conformal levels instead
    z_dist = cal.run(dist, y)
    assert z_dist.shape == (n, T, 9)
    levels_dist = cal.conformal_levels()
    cal.run(q, y)
    np.testing.assert_allclose(cal.conformal_levels(), levels_dist, atol=0.2)
    d1 = DriftCalibrator(LEVELS, B=2.0).run(stats.uniform(loc[0] - 1.0, 2.0), y[0])
    assert d1.shape == (T, 9) and np.all(np.diff(d1, axis=-1) > 0)


def test_binomial_tolerance_hand_values():
    # Binomial(4, 1/2) with delta = 0.1: equal-tailed interval [0, 4], half-width 2
    assert binomial_tolerance(4, [0.5], 0.1)[4, 0] == 2.0
    tol = binomial_tolerance(300, LEVELS, 0.05)
    assert np.all(np.diff(tol, axis=0) >= 0)
    # the band really holds the binomial law with probability >= 1 - delta
    for t in (10, 57, 300):
        k = np.arange(t + 1)
        for a, h in zip(LEVELS, tol[t]):
            mass = stats.binom.pmf(k, t, a)[np.abs(k - a * t) <= h + 1e-9].sum()
            assert mass >= 0.95 - 1e-12


# --------------------------------------------------------------------------- PID and presets


def test_presets_follow_paper_and_public_code():
    assert (PAPER.delta, PAPER.beta, PAPER.kd, PAPER.kp, PAPER.eta, PAPER.ki_max, PAPER.ki_min) == (
        0.47, 0.16, 0.08, 1.00, 0.96, 0.09, 0.04)
    assert (TORCHUQ.kp, TORCHUQ.kd, TORCHUQ.beta, TORCHUQ.delta / 2, TORCHUQ.eta) == (1.0, 0.9, 0.553, 0.2, 0.1878)
    np.testing.assert_allclose(integral_gains(9, TORCHUQ.ki_max, TORCHUQ.ki_min)[[0, 4, 8]], [0.09, 0.16, 0.09])


def test_integral_gains_eq45():
    g = integral_gains(9, 0.09, 0.04)
    k = np.arange(1, 10)
    np.testing.assert_allclose(g, 0.09 - 0.05 * np.abs(1 - 2 * (k - 1) / 8))
    assert g.argmax() == 4 and g[0] == pytest.approx(0.04)


def test_pid_clips_integral_and_derivative_terms():
    pid = PIDController(1, kp=1.0, kd=1.0, ki=[1.0], B=2.0)
    for _ in range(5):
        pid.commit(np.array([[3.0]]))
    # integral 15 + 3, derivative 0 -> clipped to 2; plus kp * 3
    assert pid.output(np.array([[3.0]]))[0, 0] == pytest.approx(5.0)
    free = PIDController(1, kp=0.0, kd=0.5, ki=[0.0], B=None)
    assert free.output(np.array([[4.0]]))[0, 0] == pytest.approx(2.0)


def test_pid_is_better_calibrated_and_steadier_than_p_alone():
    # paper, Section 3.3 and Figure 2 right: the integral term keeps a lasting correction after
    # a drift, so the output needs less back-and-forth and the frequencies settle nearer alpha_k
    s = drifting_gaussian_stream("jump", 200, 100, beta=3.0, seed=7)
    late = slice(70, 100)
    p = DriftCalibrator(s.levels, s.B, ki_max=0.0, ki_min=0.0, kd=0.0).run(s.forecasts, s.labels)
    pid = DriftCalibrator(s.levels, s.B).run(s.forecasts, s.labels)
    assert ece_loss(s.labels, pid, s.levels).mean() < 0.75 * ece_loss(s.labels, p, s.levels).mean()
    wobble = lambda z: np.abs(np.diff(z[:, late], axis=1)).mean()  # noqa: E731
    assert wobble(pid) < 0.85 * wobble(p)


# --------------------------------------------------------------------------- baselines


@pytest.mark.parametrize("gamma", [0.005, 0.05, 0.2])
@pytest.mark.parametrize("mode", ["random", "adversarial"])
def test_aci_long_run_coverage_bound(gamma, mode):
    B, K, T, n = 3.0, 5, 300, 5
    levels = equally_spaced_levels(K)
    forecasts = lambda t, rng: np.sort(rng.uniform(-2, 2, size=(n, K)), axis=1) + t / 100  # noqa: E731

    def nature(t, z, cal, rng):
        if mode == "random":
            return rng.uniform(-B + 1e-6, B - 1e-6, size=n)
        return np.clip(z[:, 0] + 1e-6, -B + 1e-6, B - 1e-6)  # always above the lowest quantile

    z, y = play(ACICalibrator(levels, B, gamma=gamma), forecasts, nature, T, n, seed=3)
    freq = np.cumsum(y[..., None] <= z, axis=1) / np.arange(1, T + 1)[None, :, None]
    bound = (np.maximum(levels, 1 - levels) + gamma) / (gamma * np.arange(1, T + 1))[:, None]
    assert np.all(np.abs(freq - levels) <= bound[None] + 1e-12)


def test_aci_tracks_a_jump():
    s = drifting_gaussian_stream("jump", 100, 400, seed=2)
    z = ACICalibrator(s.levels, s.B, gamma=0.05).run(s.forecasts, s.labels)
    late = np.mean(s.labels[:, 300:, None] <= z[:, 300:], axis=(0, 1))
    assert np.abs(late - s.levels).max() < 0.05


def test_regret_baseline_learns_the_median_on_iid_data():
    rng = np.random.default_rng(0)
    T = 1500
    y = rng.uniform(0, 1, size=(3, T))
    f = np.full((3, T, 1), 0.5)
    cal = RegretCalibrator([0.5], lower=0.0, upper=1.0, n_bins=10, randomized=False)
    z = cal.run(f, y)
    assert np.abs(z[:, -300:, 0].mean() - 0.5) < 0.1
    assert 0.4 < np.mean(y[:, -500:] <= z[:, -500:, 0]) < 0.6


def test_regret_baseline_is_seeded_and_uses_whole_sequence_range():
    s = figure1_stream(n_steps=30, n_series=3, seed=1)
    a = RegretCalibrator(s.levels, seed=5).run(s.forecasts, s.labels)
    b = RegretCalibrator(s.levels, seed=5).run(s.forecasts, s.labels)
    np.testing.assert_array_equal(a, b)
    lo = np.minimum(s.labels.min(1), s.forecasts.min((1, 2)))
    hi = np.maximum(s.labels.max(1), s.forecasts.max((1, 2)))
    span = hi - lo
    assert np.all(a.min(axis=(1, 2)) >= lo - 0.1 * span - 1e-12)
    assert np.all(a.max(axis=(1, 2)) <= hi + 0.1 * span + 1e-12)
    with pytest.raises(RuntimeError, match="lower and upper"):
        RegretCalibrator(s.levels).predict(s.forecasts[:, 0])


def test_original_forecast_is_identity():
    s = synthetic_tasks(3, 10, seed=0)
    np.testing.assert_array_equal(OriginalForecast(s.levels).run(s.forecasts, s.labels), s.forecasts)


# --------------------------------------------------------------------------- metrics


def test_metrics_match_calibtut_metrics_on_non_crossing_quantiles():
    rng = np.random.default_rng(0)
    y = rng.normal(size=(4, 50))
    z = np.sort(rng.normal(size=(4, 50, 9)), axis=-1)
    for i in range(4):
        assert ece_loss(y, z, LEVELS)[i] == pytest.approx(cm.quantile_calibration_error(y[i], z[i], LEVELS))
        assert pinball_loss(y, z, LEVELS)[i] == pytest.approx(cm.pinball_loss(y[i], z[i], LEVELS))
        assert sharpness(z)[i] == pytest.approx(cm.quantile_sharpness(z[i]))
        np.testing.assert_allclose(empirical_frequencies(y, z, LEVELS)[i], cm.quantile_frequencies(y[i], z[i], LEVELS))


def test_metrics_hand_values_and_crossing_allowed():
    z = np.array([[[1.0, 0.0]], [[1.0, 0.0]]])[:, 0][None]  # one series, two steps, crossing
    y = np.array([[0.5, 2.0]])
    assert ece_loss(y, z, [0.25, 0.75])[0] == pytest.approx((abs(0.5 - 0.25) + abs(0.0 - 0.75)) / 2)
    # pinball: step 1: .25*0 + .75*.5 ; .75*.5 ; step 2: .25*1 ; .75*2 -> mean of 4
    assert pinball_loss(y, z, [0.25, 0.75])[0] == pytest.approx((0.375 + 0.375 + 0.25 + 1.5) / 4)
    assert mixed_loss(y, z, [0.25, 0.75], w_mix=0.4)[0] == pytest.approx(
        0.4 * ece_loss(y, z, [0.25, 0.75])[0] + 0.6 * pinball_loss(y, z, [0.25, 0.75])[0])


@pytest.mark.parametrize("score", [ece_loss, pinball_loss, empirical_frequencies, mixed_loss, reliability_data])
def test_scores_take_y_first_like_calibtut_metrics(score):
    """``(y, quantiles, levels)`` as in :func:`calibtut.metrics.pinball_loss`; swapped arguments are refused."""
    y, z = np.zeros((2, 5)), np.zeros((2, 5, 9)) + LEVELS
    score(y, z, LEVELS)
    with pytest.raises(ValueError, match="y must have shape"):
        score(y[:, :4], z, LEVELS)
    with pytest.raises(ValueError, match="quantiles"):
        score(z, y, LEVELS)


def test_oracle_band_covers_the_oracle_forecaster():
    # the oracle forecaster's frequency of each level falls in alpha_k +- b_delta(T) with prob >= 1 - delta
    rng = np.random.default_rng(1)
    n, T = 400, 50
    y = rng.normal(size=(n, T))
    z = np.broadcast_to(stats.norm.ppf(LEVELS), (n, T, 9))
    d = reliability_data(y, z, LEVELS, delta=0.05)
    inside = (d["frequency"] >= d["lower"]) & (d["frequency"] <= d["upper"])
    assert inside.mean(axis=0).min() > 0.95 - 3 * np.sqrt(0.05 * 0.95 / n)
    lo, hi = oracle_band(T, LEVELS, delta=0.05)
    np.testing.assert_array_equal(lo, d["lower"])
    assert np.all(lo < LEVELS) and np.all(hi > LEVELS)


# --------------------------------------------------------------------------- drift generators


def test_drift_formulas():
    T = 8
    t = np.arange(1, T + 1)
    ones = np.ones(T)
    np.testing.assert_allclose(apply_drift(ones, "linear_shift"), 1 + 0.1 * t)
    np.testing.assert_allclose(apply_drift(ones, "scale_shift"), 1 + np.sqrt(t))
    np.testing.assert_allclose(apply_drift(ones, "jump"), np.where(t >= T / 2, 4.0, 1.0))
    np.testing.assert_allclose(apply_drift(ones, "cycle", beta=2.0), 1 + 2 * np.sin(2 * np.pi * t / T))
    assert PAPER_DRIFT_BETA == {"linear_shift": 0.1, "scale_shift": 1.0, "jump": 3.0, "cycle": 3.0}
    with pytest.raises(ValueError, match="kind"):
        apply_drift(ones, "tilt")


def test_figure1_and_synthetic_streams():
    s = figure1_stream(n_steps=60, n_series=50, seed=0)
    assert np.all((s.labels[:, :5] >= -2) & (s.labels[:, :5] <= 2))
    assert np.all((s.labels[:, 5:] >= -5) & (s.labels[:, 5:] <= -1))
    np.testing.assert_allclose(s.forecasts[0, 0], -2 + 4 * LEVELS)
    np.testing.assert_allclose(s.true_quantiles[0, -1], -5 + 4 * LEVELS)
    e = synthetic_tasks(500, 3, seed=0)
    np.testing.assert_allclose(e.forecasts[0, 0], stats.norm.ppf(LEVELS))
    assert np.all(np.abs(e.labels) <= e.B)
    # a ~ N(0, 1) per series: the series means spread with sd about 1
    assert 0.8 < e.labels.mean(axis=1).std() < 1.3
    a = synthetic_tasks(2, 5, seed=3).labels
    np.testing.assert_array_equal(a, synthetic_tasks(2, 5, seed=3).labels)


# --------------------------------------------------------------------------- errors and interface


def test_clear_errors():
    cal = DriftCalibrator(LEVELS, B=2.0)
    f = np.zeros((2, 5, 9)) + LEVELS
    y = np.zeros((2, 5))
    with pytest.raises(ValueError, match="levels"):
        DriftCalibrator([0.5, 0.2], B=2.0)
    with pytest.raises(ValueError, match="levels"):
        DriftCalibrator([0.0, 0.5], B=2.0)
    with pytest.raises(ValueError, match="forecasts"):
        cal.run(np.zeros((2, 5, 8)), y)
    with pytest.raises(ValueError, match="labels"):
        cal.run(f, np.full((2, 5), 3.0))
    with pytest.raises(ValueError, match="NaN"):
        cal.run(f, np.full((2, 5), np.nan))
    bad = f.copy()
    bad[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        cal.run(bad, y)
    with pytest.raises(ValueError, match="non-decreasing"):
        cal.run(f[..., ::-1], y)
    with pytest.raises(ValueError, match="B"):
        DriftCalibrator(LEVELS, B=-1.0)
    with pytest.raises(TypeError, match="B"):
        DriftCalibrator(LEVELS, B="5")
    with pytest.raises(ValueError, match="control"):
        DriftCalibrator(LEVELS, control="pi")
    with pytest.raises(ValueError, match="params"):
        DriftCalibrator(LEVELS, params="best")
    with pytest.raises(ValueError, match="delta"):
        DriftCalibrator(LEVELS, delta=1.5)
    with pytest.raises(RuntimeError, match="before predict"):
        DriftCalibrator(LEVELS).reset(1).update([0.0])
    cal.reset(2)
    cal.predict(f[:, 0])
    with pytest.raises(RuntimeError, match="twice"):
        cal.predict(f[:, 0])
    with pytest.raises(ValueError, match="labels"):
        cal.update([0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="series"):
        DriftCalibrator(LEVELS).reset(3).predict(f[:, 0])
    with pytest.raises(ValueError, match="adjustment"):
        solve_equilibrium([0.0, 1.0], [0.0], 1.0, 2.0)
    with pytest.raises(ValueError, match="eta"):
        solve_equilibrium([0.0, 1.0], [0.0, 0.0], -1.0, 2.0)


def test_single_series_and_inferred_batch():
    s = figure1_stream(n_steps=20, n_series=1, seed=0)
    one = DriftCalibrator(s.levels, s.B).run(s.forecasts[0], s.labels[0])
    batch = DriftCalibrator(s.levels, s.B).run(s.forecasts, s.labels)
    assert one.shape == (20, 9)
    np.testing.assert_array_equal(one, batch[0])
    cal = DriftCalibrator(s.levels, s.B)
    assert cal.predict(s.forecasts[:, 0]).shape == (1, 9) and cal.n_series == 1


def test_calibrators_are_deterministic_and_causal():
    s = drifting_gaussian_stream("cycle", 5, 60, seed=0)
    cal = DriftCalibrator(s.levels, s.B)
    z = cal.run(s.forecasts, s.labels)
    changed = s.labels.copy()
    changed[:, 40:] += 1.0
    z2 = cal.run(s.forecasts, changed)
    np.testing.assert_array_equal(z[:, :41], z2[:, :41])
    assert not np.array_equal(z[:, 41:], z2[:, 41:])
