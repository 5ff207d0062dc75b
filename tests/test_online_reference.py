"""A plain per-step, per-series reference of the drift calibrators, and equality tests.

The reference is written independently of ``calibtut.online``: Python loops,
``np.interp`` for the quantile functions, scalar ``scipy.stats.binom.ppf``
calls for the tolerance and a Newton solve with ``scipy.linalg.solve_banded``
for the spring equilibrium. The vectorised calibrators must agree with it to
float tolerance. ``benchmarks/bench_online.py`` times it against the fast path.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from scipy import linalg, stats

from calibtut.online import (
    PAPER,
    TORCHUQ,
    ACICalibrator,
    ConformalCalibrator,
    DriftCalibrator,
    drifting_gaussian_stream,
    figure1_stream,
)


def ref_quantile(q, levels, B, u):
    """Piecewise-linear quantile function with padding -B, B at levels 0, 1."""
    xs = [0.0] + list(levels) + [1.0]
    ys = [-B] + [min(max(v, -B), B) for v in q] + [B]
    return float(np.interp(min(max(u, 0.0), 1.0), xs, ys))


def ref_cdf(q, levels, B, y):
    xs = [-B] + [min(max(v, -B), B) for v in q] + [B]
    ps = [0.0] + list(levels) + [1.0]
    return float(np.interp(y, xs, ps))


def ref_conformal_level(pits, a):
    sp = sorted(pits)
    m = len(sp)
    aug = [0.0] + sp + [1.0]
    a = min(max(a, 0.0), 1.0)
    x = a * (m + 1)
    i = min(int(math.floor(x)), m)
    return aug[i] + (x - i) * (aug[i + 1] - aug[i])


@functools.lru_cache(maxsize=None)
def ref_tolerance(t, a, delta, kind):
    """Running max over s <= t of the binomial tolerance at level a."""
    if t == 0:
        return 0.0
    lo = stats.binom.ppf(delta / 2, t, a)
    hi = stats.binom.ppf(1 - delta / 2, t, a)
    w = max(a * t - lo, hi - a * t) if kind == "half" else max(hi - lo, 1.0)
    return max(w, ref_tolerance(t - 1, a, delta, kind))


def ref_forces(z, base, e, eta, B):
    K = len(z)
    zp = [-B] + list(z) + [B]
    bp = [-B] + list(base) + [B]
    g = []
    for k in range(1, K + 1):
        up, up0 = zp[k + 1] - zp[k], bp[k + 1] - bp[k]
        dn, dn0 = zp[k] - zp[k - 1], bp[k] - bp[k - 1]
        a_force = eta * (up / up0 - up0 / up)
        b_force = eta * (dn0 / dn - dn / dn0)
        g.append(e[k - 1] + (base[k - 1] - z[k - 1]) + a_force + b_force)
    return np.array(g)


def ref_equilibrium(base, e, eta, B, tol=1e-12):
    """Newton's method on the K equations, one series, with solve_banded."""
    z = np.array(base, dtype=float)
    K = len(z)
    for _ in range(200):
        g = ref_forces(z, base, e, eta, B)
        if np.max(np.abs(g)) < tol:
            break
        zp = np.concatenate([[-B], z, [B]])
        bp = np.concatenate([[-B], base, [B]])
        c = [eta * (1 + ((bp[j + 1] - bp[j]) / (zp[j + 1] - zp[j])) ** 2) / (bp[j + 1] - bp[j]) for j in range(K + 1)]
        ab = np.zeros((3, K))
        for k in range(K):
            ab[1, k] = 1 + c[k] + c[k + 1]
            if k < K - 1:
                ab[0, k + 1] = -c[k + 1]
                ab[2, k] = -c[k + 1]
        p = linalg.solve_banded((1, 1), ab, g)
        step = 1.0
        norm0 = np.sum(g**2)
        while True:
            trial = z + step * p
            tp = np.concatenate([[-B], trial, [B]])
            if np.all(np.diff(tp) > 0) and np.sum(ref_forces(trial, base, e, eta, B) ** 2) < norm0:
                break
            step *= 0.5
            if step < 1e-20:
                return z
        z = trial
    return z


def reference_run(forecasts, labels, levels, B, *, params=PAPER, conformal=True, control="pid", feasibility=True):
    """The drift calibrator on one series, one step at a time."""
    T, K = forecasts.shape
    ki = [params.ki_max - (params.ki_max - params.ki_min) * abs(1 - 2 * k / (K - 1)) for k in range(K)]
    pits, counts = [], [0] * K
    integral, previous = [0.0] * K, [0.0] * K
    out = np.zeros((T, K))
    for t in range(T):
        q = forecasts[t]
        if conformal:
            base = [ref_quantile(q, levels, B, ref_conformal_level(pits, a)) for a in levels]
        else:
            base = [min(max(v, -B), B) for v in q]
        e = []
        for k in range(K):
            a = levels[k]
            h = ref_tolerance(t, float(a), params.delta, params.tolerance)
            dev = counts[k] - a * t
            excess = min(params.beta * (abs(dev) - h), math.log(1 + 2 * B) + 10.0)
            if excess > 0 and dev > 0:
                e.append(1 - math.exp(excess))
            elif excess > 0:
                e.append(math.exp(excess) - 1)
            else:
                e.append(0.0)
        if control == "pid":
            force = []
            for k in range(K):
                slow = ki[k] * (integral[k] + e[k]) + params.kd * (e[k] - previous[k])
                force.append(params.kp * e[k] + min(max(slow, -B), B))
                integral[k] += e[k]
                previous[k] = e[k]
        else:
            force = e
        if feasibility and any(f != 0 for f in force):
            z = ref_equilibrium(np.array(base), np.array(force), params.eta, B)
        else:
            z = np.array(base) + np.array(force)
        out[t] = z
        y = labels[t]
        pits.append(ref_cdf(q, levels, B, y))
        for k in range(K):
            counts[k] += y <= z[k]
    return out


def reference_aci(forecasts, labels, levels, B, gamma):
    T, K = forecasts.shape
    work = list(levels)
    pits = []
    out = np.zeros((T, K))
    for t in range(T):
        q = forecasts[t]
        z = [ref_quantile(q, levels, B, ref_conformal_level(pits, min(max(a, 0.0), 1.0))) for a in work]
        out[t] = z
        y = labels[t]
        for k in range(K):
            work[k] += gamma * (levels[k] - (y <= z[k]))
        pits.append(ref_cdf(q, levels, B, y))
    return out


def _stream():
    s = drifting_gaussian_stream("jump", 3, 40, levels=[0.1, 0.3, 0.5, 0.7, 0.9], seed=1)
    rng = np.random.default_rng(2)
    wobble = rng.normal(0, 0.2, size=s.forecasts.shape[:2])[..., None]
    return s.forecasts + wobble, s.labels, s.levels, s.B


@pytest.mark.parametrize(
    "options",
    [
        {"control": "pid", "feasibility": True},
        {"control": "basic", "feasibility": True},
        {"control": "basic", "feasibility": False},
        {"control": "pid", "feasibility": False, "conformal": False},
        {"control": "pid", "feasibility": True, "params": TORCHUQ},
    ],
)
def test_drift_calibrator_equals_reference(options):
    f, y, levels, B = _stream()
    params = options.get("params", PAPER)
    fast = DriftCalibrator(levels, B, **{**options, "params": params}).run(f, y)
    for i in range(len(y)):
        ref = reference_run(f[i], y[i], levels, B, **{**options, "params": params})
        np.testing.assert_allclose(fast[i], ref, rtol=0, atol=1e-9)


def test_figure1_stream_equals_reference():
    s = figure1_stream(n_steps=60, n_series=2, seed=3)
    fast = DriftCalibrator(s.levels, s.B).run(s.forecasts, s.labels)
    for i in range(2):
        np.testing.assert_allclose(fast[i], reference_run(s.forecasts[i], s.labels[i], s.levels, s.B), atol=1e-9)


def reference_conformal(forecasts, labels, levels, B):
    T, K = forecasts.shape
    pits = []
    out = np.zeros((T, K))
    for t in range(T):
        out[t] = [ref_quantile(forecasts[t], levels, B, ref_conformal_level(pits, a)) for a in levels]
        pits.append(ref_cdf(forecasts[t], levels, B, labels[t]))
    return out


def test_conformal_equals_reference():
    f, y, levels, B = _stream()
    fast = ConformalCalibrator(levels, B).run(f, y)
    for i in range(len(y)):
        np.testing.assert_allclose(fast[i], reference_conformal(f[i], y[i], levels, B), atol=1e-12)


def test_aci_equals_reference():
    f, y, levels, B = _stream()
    fast = ACICalibrator(levels, B, gamma=0.05).run(f, y)
    for i in range(len(y)):
        np.testing.assert_allclose(fast[i], reference_aci(f[i], y[i], levels, B, 0.05), atol=1e-12)


def test_stepwise_api_equals_run():
    f, y, levels, B = _stream()
    cal = DriftCalibrator(levels, B)
    batch = cal.run(f, y)
    cal.reset(len(y))
    for t in range(y.shape[1]):
        np.testing.assert_array_equal(cal.predict(f[:, t]), batch[:, t])
        cal.update(y[:, t])
