"""Tests of calibtut.online.theory: the likelihood of Eq. 5, Theorem 2 / Corollary 1, the adversary."""

from __future__ import annotations

import numpy as np
import pytest

from calibtut.online import (
    COROLLARY1_MARGIN,
    PAPER,
    THEOREM2_MARGIN,
    ConformalCalibrator,
    DriftCalibrator,
    OriginalForecast,
    admissible_c,
    adversarial_labels,
    binomial_tolerance,
    count_deviation,
    drifting_gaussian_stream,
    equally_spaced_levels,
    interval_likelihood,
    spring_bound_check,
    theorem1_bound,
)

LEVELS = equally_spaced_levels(3)


# --------------------------------------------------------------------------- likelihood of Eq. 5


def test_likelihood_hand_values():
    # knots -2 | -1, 0.5, 1 | 2 with masses 0.25 each; widths 1, 1.5, 0.5, 1
    z = np.tile([-1.0, 0.5, 1.0], (7, 1))
    y = np.array([-2.0, -1.5, -1.0, 0.0, 0.5, 1.5, 2.0])
    expected = [0.25, 0.25, 0.25 / 1.5, 0.25 / 1.5, 0.25 / 0.5, 0.25, 0.25]
    np.testing.assert_allclose(interval_likelihood(y, z, LEVELS, B=2.0), expected)


def test_likelihood_uneven_levels_and_batch_shape():
    levels = [0.1, 0.6]
    z = np.array([[[-1.0, 1.0]], [[0.0, 0.2]]])  # (2 series, 1 step, K = 2)
    y = np.array([[-3.0], [0.1]])
    L = interval_likelihood(y, z, levels, B=3.0)
    assert L.shape == (2, 1)
    np.testing.assert_allclose(L[:, 0], [0.1 / 2.0, 0.5 / 0.2])


def test_likelihood_is_the_density_of_a_uniform_forecast_in_the_limit():
    levels = equally_spaced_levels(99)
    z = -1.0 + 2.0 * levels  # quantiles of Uniform[-1, 1], B = 1
    y = np.random.default_rng(0).uniform(-1, 1, size=50)
    np.testing.assert_allclose(interval_likelihood(y, np.tile(z, (50, 1)), levels, B=1.0), 0.5)


def test_likelihood_errors():
    z = np.tile([-1.0, 0.0, 1.0], (2, 1))
    with pytest.raises(ValueError, match="B is required"):
        interval_likelihood([0.0, 0.0], z, LEVELS, B=None)
    with pytest.raises(ValueError, match="y must have shape"):
        interval_likelihood([0.0], z, LEVELS, B=2.0)
    with pytest.raises(ValueError, match="y must lie"):
        interval_likelihood([0.0, 3.0], z, LEVELS, B=2.0)
    with pytest.raises(ValueError, match="strictly increasing"):
        interval_likelihood([0.0, 0.0], np.tile([0.0, 0.0, 1.0], (2, 1)), LEVELS, B=2.0)
    with pytest.raises(ValueError, match="one per level"):
        interval_likelihood([0.0, 0.0], z[:, :2], LEVELS, B=2.0)
    with pytest.raises(TypeError, match="B must be"):
        interval_likelihood([0.0, 0.0], z, LEVELS, B="2")


# --------------------------------------------------------------------------- counts and c


def test_count_deviation_hand_values():
    z = np.tile([0.0, 1.0], (3, 1))
    y = np.array([0.5, -1.0, 2.0])
    # F after each step: level 0.25 -> 0, 1, 1 ; level 0.75 -> 1, 2, 2
    expected = np.abs(np.array([[0, 1], [1, 2], [1, 2]]) - np.array([0.25, 0.75]) * np.arange(1, 4)[:, None])
    np.testing.assert_allclose(count_deviation(y, z, [0.25, 0.75]), expected)


def test_admissible_c_solves_the_likelihood_condition():
    K, B, beta, eta = 9, 5.0, 0.16, 0.96
    L = np.array([0.5, 2.0, 40.0])
    for margin in (THEOREM2_MARGIN, COROLLARY1_MARGIN):
        c = admissible_c(L, K, B=B, beta=beta, eta=eta, margin=margin)
        assert np.all(c > 2 / beta)
        # at c the condition of the theorem holds with equality
        np.testing.assert_allclose((np.exp(beta * (c - 1) / 2) - margin * B) / (2 * eta * B * (K + 1)), L)
    # tiny likelihood: the floor 2 / beta is the binding constraint
    assert admissible_c(0.0, 1, B=0.1, beta=1.0, eta=1.0) == pytest.approx(2.0)


def test_admissible_c_is_monotone_and_corollary_is_looser():
    L = np.linspace(0, 10, 30)
    c4 = admissible_c(L, 9, B=3.0, beta=0.5, eta=1.0, margin=THEOREM2_MARGIN)
    c6 = admissible_c(L, 9, B=3.0, beta=0.5, eta=1.0, margin=COROLLARY1_MARGIN)
    assert np.all(np.diff(c4) >= 0) and np.all(c6 >= c4)


def test_admissible_c_errors():
    with pytest.raises(ValueError, match="max_likelihood"):
        admissible_c(-1.0, 3, B=1.0, beta=1.0, eta=1.0)
    with pytest.raises(ValueError, match="beta"):
        admissible_c(1.0, 3, B=1.0, beta=0.0, eta=1.0)
    with pytest.raises(ValueError, match="n_levels"):
        admissible_c(1.0, 0, B=1.0, beta=1.0, eta=1.0)


# --------------------------------------------------------------------------- Theorem 2 / Corollary 1


def test_spring_bound_check_hand_case():
    z = np.tile([-1.0, 0.0, 1.0], (2, 1))
    y = np.array([0.5, 1.5])
    r = spring_bound_check(y, z, LEVELS, B=2.0, beta=1.0, eta=1.0, delta=0.5)
    np.testing.assert_allclose(r.likelihood, [0.25, 0.25])
    np.testing.assert_allclose(r.max_likelihood, [0.25, 0.25])
    c = max(2.0, 1 + 2 * np.log(2 * 2.0 * 4 * 0.25 + 4 * 2.0))
    np.testing.assert_allclose(r.c, [c, c])
    h = binomial_tolerance(2, LEVELS, 0.5)[1:].max(axis=1)
    np.testing.assert_allclose(r.bound, 3 * (2 * h + c))
    # F after step 1: (0, 0, 1) vs (0.25, 0.5, 0.75); after step 2: still (0, 0, 1) vs (0.5, 1, 1.5)
    np.testing.assert_allclose(r.deviation, [0.5, 1.0])


@pytest.mark.parametrize("kind", ["jump", "cycle"])
@pytest.mark.parametrize("pid", [False, True])
def test_bounds_hold_on_drifting_streams(kind, pid):
    levels = equally_spaced_levels(9)
    s = drifting_gaussian_stream(kind, 4, 150, levels=levels, seed=1)
    cal = DriftCalibrator(levels, B=s.B, control="pid" if pid else "basic")
    z = cal.run(s.forecasts, s.labels)
    r = spring_bound_check(s.labels, z, levels, B=s.B, beta=PAPER.beta, eta=PAPER.eta, delta=PAPER.delta, pid=pid)
    assert r.deviation.shape == r.bound.shape == (4, 150)
    assert np.all(r.deviation <= r.bound)
    assert np.all(np.diff(r.max_likelihood, axis=-1) >= 0) and np.all(np.diff(r.c, axis=-1) >= 0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bounds_hold_on_random_labels_with_strong_parameters(seed):
    # a large beta makes c small, so the bound is far from vacuous on a short transcript
    rng = np.random.default_rng(seed)
    levels = equally_spaced_levels(5)
    B, n, T = 2.0, 6, 80
    y = rng.uniform(-B, B, size=(n, T))
    base = np.sort(rng.uniform(-B, B, size=(n, T, 5)), axis=-1)
    z = DriftCalibrator(levels, B=B, control="basic", conformal=False, beta=3.0).run(base, y)
    r = spring_bound_check(y, z, levels, B=B, beta=3.0, eta=PAPER.eta, delta=PAPER.delta)
    assert np.all(r.deviation <= r.bound)


def test_spring_bound_check_errors():
    z = np.tile([-1.0, 0.0, 1.0], (2, 1))
    with pytest.raises(TypeError, match="pid"):
        spring_bound_check([0.0, 0.0], z, LEVELS, B=2.0, beta=1.0, eta=1.0, delta=0.5, pid="yes")
    with pytest.raises(ValueError, match="delta"):
        spring_bound_check([0.0, 0.0], z, LEVELS, B=2.0, beta=1.0, eta=1.0, delta=1.5)


# --------------------------------------------------------------------------- adversary


def _reference_greedy(calibrator, base, n_steps, B):
    """Independent loop: try each candidate label and keep the one with the largest deviation."""
    n, K = base.shape
    calibrator.reset(n)
    counts = np.zeros((n, K))
    zs, ys = [], []
    for t in range(1, n_steps + 1):
        z = calibrator.predict(base)
        y = np.empty(n)
        for i in range(n):
            candidates = [-B] + list(np.clip(z[i], -B, B)) + [B]
            harm = [np.abs(counts[i] + (c <= z[i]) - calibrator.levels * t).max() for c in candidates]
            y[i] = candidates[int(np.argmax(harm))]
        counts += y[:, None] <= z
        calibrator.update(y)
        zs.append(z)
        ys.append(y)
    return np.stack(zs, axis=1), np.stack(ys, axis=1)


def test_greedy_adversary_matches_a_reference_loop():
    levels = equally_spaced_levels(5)
    base = np.sort(np.random.default_rng(3).uniform(-2, 2, size=(3, 5)), axis=1)
    z, y = adversarial_labels(DriftCalibrator(levels, B=3.0, control="basic", feasibility=False), base, 40)
    z_ref, y_ref = _reference_greedy(DriftCalibrator(levels, B=3.0, control="basic", feasibility=False), base, 40, 3.0)
    np.testing.assert_array_equal(y, y_ref)
    np.testing.assert_array_equal(z, z_ref)


def test_constant_strategies_and_per_step_forecasts():
    cal = OriginalForecast(LEVELS, B=4.0)
    base = np.tile([-1.0, 0.0, 1.0], (2, 1))
    z, y = adversarial_labels(cal, base, 5, strategy="above")
    assert np.all(y == 4.0) and z.shape == (2, 5, 3)
    z2, y2 = adversarial_labels(cal, np.broadcast_to(base[:, None], (2, 5, 3)), strategy="below")
    assert np.all(y2 == -4.0)
    np.testing.assert_array_equal(z, z2)
    # nothing ever falls below the quantiles: the deviation is alpha_k t exactly
    np.testing.assert_allclose(count_deviation(y, z, LEVELS)[0, -1], LEVELS * 5)


def test_adversary_drives_the_error_up_compared_with_random_labels():
    levels = equally_spaced_levels(9)
    B, n, T = 5.0, 8, 200
    base = np.broadcast_to(-2.0 + 4.0 * levels, (n, 9))
    rng = np.random.default_rng(0)
    random_y = rng.uniform(-B, B, size=(n, T))
    for make in (lambda: OriginalForecast(levels, B=B), lambda: ConformalCalibrator(levels, B=B)):
        z_rand = make().run(np.broadcast_to(base[:, None], (n, T, 9)), random_y)
        z_adv, y_adv = adversarial_labels(make(), base, T)
        dev_rand = count_deviation(random_y, z_rand, levels)[:, -1].max(axis=-1)
        dev_adv = count_deviation(y_adv, z_adv, levels)[:, -1].max(axis=-1)
        assert dev_adv.min() > 3 * dev_rand.max()


def test_adversary_stays_within_theorem1_against_the_basic_algorithm():
    levels = equally_spaced_levels(9)
    B, T = 5.0, 300
    base = np.broadcast_to(-2.0 + 4.0 * levels, (2, 9))
    bound = theorem1_bound(T, levels, B=B, beta=PAPER.beta, delta=PAPER.delta)[1:]
    for strategy in ("greedy", "above", "below"):
        cal = DriftCalibrator(levels, B=B, control="basic", feasibility=False, conformal=False)
        z, y = adversarial_labels(cal, base, T, strategy=strategy)
        ratio = count_deviation(y, z, levels) / bound
        assert ratio.max() <= 1.0 and ratio.max() > 0.5


@pytest.mark.parametrize("pid", [False, True])
def test_median_adversary_makes_theorem2_vacuous(pid):
    # Labels just around the calibrated median squeeze the central intervals:
    # the likelihood explodes, c_T grows with its log, and the bound exceeds T
    # (vacuous) while the springs' output is far from calibrated.
    levels = equally_spaced_levels(9)
    B, T = 4.0, 300
    base = np.broadcast_to(np.linspace(-1.5, 1.5, 9), (1, 9))
    cal = DriftCalibrator(levels, B=B, control="pid" if pid else "basic")
    z, y = adversarial_labels(cal, base, T, strategy="median")
    check = spring_bound_check(y, z, levels, B=B, beta=PAPER.beta, eta=PAPER.eta, delta=PAPER.delta, pid=pid)
    assert check.max_likelihood[0, -1] > 1e6
    assert np.all(check.deviation <= check.bound)  # the theorem holds ...
    assert check.bound[0, -1] > T  # ... vacuously
    assert check.deviation[0, -1] / T > 0.25  # and the forecasts are not calibrated
    # Without springs the same nature cannot escape Theorem 1.
    free = DriftCalibrator(levels, B=B, control="basic", feasibility=False)
    z, y = adversarial_labels(free, base, T, strategy="median")
    bound = theorem1_bound(T, levels, B=B, beta=PAPER.beta, delta=PAPER.delta)[1:]
    assert np.all(count_deviation(y, z, levels) <= bound)


def test_median_adversary_labels_sit_next_to_the_central_quantile():
    levels = equally_spaced_levels(3)
    z, y = adversarial_labels(OriginalForecast(levels, B=2.0), [[-1.0, 0.0, 0.5]], n_steps=4, strategy="median")
    np.testing.assert_allclose(y[0], [-5e-4, 5e-4, -5e-4, 5e-4])


def test_adversary_errors():
    base = np.tile([-1.0, 0.0, 1.0], (2, 1))
    with pytest.raises(TypeError, match="calibrator"):
        adversarial_labels(object(), base, 3)
    with pytest.raises(ValueError, match="strategy"):
        adversarial_labels(OriginalForecast(LEVELS, B=2.0), base, 3, strategy="random")
    with pytest.raises(ValueError, match="B is required"):
        adversarial_labels(OriginalForecast(LEVELS), base, 3)
    with pytest.raises(ValueError, match="n_steps is required"):
        adversarial_labels(OriginalForecast(LEVELS, B=2.0), base)
    with pytest.raises(ValueError, match="n_steps must equal"):
        adversarial_labels(OriginalForecast(LEVELS, B=2.0), np.broadcast_to(base[:, None], (2, 4, 3)), 5)
    with pytest.raises(ValueError, match="last axis"):
        adversarial_labels(OriginalForecast(LEVELS, B=2.0), base[:, :2], 3)


def test_adversary_uses_explicit_bound():
    z, y = adversarial_labels(OriginalForecast(LEVELS), np.tile([-1.0, 0.0, 1.0], (1, 1)), 3, strategy="above", B=7.0)
    assert np.all(y == 7.0)
