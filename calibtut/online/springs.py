"""The feasibility equilibrium of Eq. (4): quantiles held by springs.

Reading of the garbled Section 3.2 (tildes lost in the extraction): ``Z~`` is
the initial (conformal) prediction, ``Z`` the output, gaps ``dZ_j = Z_{j+1} - Z_j``
for ``j = 0..K`` with the padding ``Z_0 = -B``, ``Z_{K+1} = B`` (and the same
for ``Z~``). On quantile ``k`` act

* ``E_k``: the adjustment (Eq. 3 or the PID total of Eq. 6);
* ``D_k = Z~_k - Z_k``: the pull back to the initial prediction, so that
  ``D + E = 0`` gives the basic algorithm ``Z = Z~ + E``;
* ``A_k = eta (dZ_k / dZ~_k - dZ~_k / dZ_k)``: the spring in the gap above,
  positive (upward) when stretched, tending to ``-inf`` when the gap closes;
* ``B_k = eta (dZ~_{k-1} / dZ_{k-1} - dZ_{k-1} / dZ~_{k-1}) = -A_{k-1}``: the
  spring in the gap below.

The equilibrium ``E + D + A + B = 0`` is the stationary point of the strictly
convex energy ``U(Z) = 1/2 sum_k (Z_k - Z~_k - E_k)^2 +
eta sum_j dZ~_j (r_j^2 / 2 - log r_j)`` with ``r_j = dZ_j / dZ~_j``, whose log
barrier keeps every gap positive. So the solution exists, is unique and is
strictly increasing; the Hessian of ``U`` is symmetric, tridiagonal and
strictly diagonally dominant. :func:`solve_equilibrium` runs Newton's method
with a batched Thomas solve, a fraction-to-boundary rule and a backtracking
line search on the squared residual. Rows whose springs are stiffer than
``STIFF`` (gaps near float64 resolution, as under an adversary that pins the
quantiles together) use a cancellation-free form of the elimination; the
other rows keep the plain one, so ordinary runs are bit-for-bit unchanged.
:func:`solve_equilibrium_damped` is the
damped force iteration described for the public torchuq code, kept as the
baseline to beat. Without a bound ``B`` the two end springs are absent (free
ends).
"""

from __future__ import annotations

import numpy as np

from calibtut._validation import as_float_array, check_int, check_positive
from calibtut.online._forecasts import check_bound

__all__ = ["equilibrium_residual", "solve_equilibrium", "solve_equilibrium_damped", "solve_tridiagonal"]


def solve_tridiagonal(diag, off, rhs):
    """Solve symmetric tridiagonal systems in a batch (Thomas algorithm).

    Parameters
    ----------
    diag : ndarray of shape (n, K)
        Main diagonals.
    off : ndarray of shape (n, K - 1)
        Off-diagonals (the matrix is symmetric).
    rhs : ndarray of shape (n, K)

    Returns
    -------
    ndarray of shape (n, K)

    Notes
    -----
    No pivoting: meant for diagonally dominant or positive definite systems.

    Examples
    --------
    >>> solve_tridiagonal(np.array([[2.0, 2.0]]), np.array([[-1.0]]), np.array([[1.0, 1.0]])).tolist()
    [[1.0, 1.0]]
    """
    K = diag.shape[1]
    # work on (K, n) copies so that every row access below is a contiguous view
    d, o, r = np.ascontiguousarray(diag.T), np.ascontiguousarray(off.T), np.ascontiguousarray(rhs.T)
    c = np.empty_like(o)
    g = np.empty_like(r)
    m = d[0]
    if K > 1:
        np.divide(o[0], m, out=c[0])
    np.divide(r[0], m, out=g[0])
    for i in range(1, K):
        m = d[i] - o[i - 1] * c[i - 1]
        if i < K - 1:
            np.divide(o[i], m, out=c[i])
        np.divide(r[i] - o[i - 1] * g[i - 1], m, out=g[i])
    x = np.empty_like(r)
    x[-1] = g[-1]
    for i in range(K - 2, -1, -1):
        np.subtract(g[i], c[i] * x[i + 1], out=x[i])
    return x.T


def _solve_tridiagonal_single(diag, off, rhs):
    """One system in Python floats: the operations of :func:`solve_tridiagonal` without numpy's per-call cost.

    Used by :func:`solve_equilibrium` when a single row is left (Hessians there
    are strictly diagonally dominant, so no pivot vanishes).
    """
    K = len(diag)
    c = [0.0] * max(K - 1, 0)
    g = [0.0] * K
    m = diag[0]
    if K > 1:
        c[0] = off[0] / m
    g[0] = rhs[0] / m
    for i in range(1, K):
        m = diag[i] - off[i - 1] * c[i - 1]
        if i < K - 1:
            c[i] = off[i] / m
        g[i] = (rhs[i] - off[i - 1] * g[i - 1]) / m
    x = g[:]
    for i in range(K - 2, -1, -1):
        x[i] = g[i] - c[i] * x[i + 1]
    return np.array(x)


#: Spring stiffness above which the Newton system is solved in the cancellation-free form.
STIFF = 1e12


def _solve_stiff(c, rhs):
    """Solve ``(I + springs) p = rhs`` for a batch, with pivots free of cancellation.

    ``c`` of shape (n, K + 1) holds the stiffness of every gap (the end gaps
    first and last, zero for a free end), so the matrix has the diagonal
    ``1 + c_k + c_{k+1}`` and the off-diagonal ``-c_{k+1}``. Thomas' pivot
    ``m_k = d_k - c_k^2 / m_{k-1}`` subtracts two numbers of the size of
    ``c_k``; when ``c_k`` is beyond about ``1e12`` (gaps near float64
    resolution) that difference loses every digit of the ``1`` that keeps it
    positive, and a pivot can come out zero. Writing the pivot as
    ``m_k = 1 + c_{k+1} + c_k s_{k-1} / m_{k-1}`` with the slack
    ``s_k = m_k - c_{k+1} = 1 + c_k s_{k-1} / m_{k-1}`` adds positive numbers
    only, so every pivot is at least 1.
    """
    n, K = rhs.shape
    m = np.empty((n, K))
    g = np.empty((n, K))
    ratio = np.ones(n)  # s_{k-1} / m_{k-1}; 1 before the first row
    for k in range(K):
        m[:, k] = 1.0 + c[:, k + 1] + c[:, k] * ratio
        slack = 1.0 + c[:, k] * ratio
        ratio = slack / m[:, k]
        g[:, k] = (rhs[:, k] + c[:, k] * (g[:, k - 1] if k else 0.0)) / m[:, k]
    x = np.empty((n, K))
    x[:, -1] = g[:, -1]
    for k in range(K - 2, -1, -1):
        x[:, k] = g[:, k] + c[:, k + 1] / m[:, k] * x[:, k + 1]
    return x


class _Springs:
    """The equilibrium problem for a batch: rest lengths, anchors, bounds."""

    def __init__(self, base, adjustment, eta, B, min_rest):
        self.eta = eta
        self.B = B
        self.anchor = base + adjustment
        self.first = base[:, :1]
        if B is not None:
            ends = np.full((len(base), 1), B)
            padded = np.concatenate([-ends, np.clip(base, -B, B), ends], axis=1)
        else:
            padded = base
        if min_rest is None:
            scale = B if B is not None else 1.0 + np.abs(base).max(axis=1, keepdims=True)
            min_rest = 1e-6 * scale
        self.rest = np.maximum(np.diff(padded, axis=1), min_rest)

    def subset(self, rows):
        sub = object.__new__(_Springs)
        sub.eta, sub.B = self.eta, self.B
        sub.anchor, sub.rest, sub.first = self.anchor[rows], self.rest[rows], self.first[rows]
        return sub

    def pad(self, z, fill=None):
        if self.B is None:
            return z
        n = len(z)
        lo, hi = (-self.B, self.B) if fill is None else (fill, fill)
        return np.concatenate([np.full((n, 1), lo), z, np.full((n, 1), hi)], axis=1)

    def gaps(self, z):
        inner = z[:, 1:] - z[:, :-1]
        if self.B is None:
            return inner
        return np.concatenate([z[:, :1] + self.B, inner, self.B - z[:, -1:]], axis=1)

    def start(self):
        """A strictly increasing starting point: the base forecast, or its rest lengths stacked."""
        if self.B is None:
            return self.first + np.concatenate([np.zeros((len(self.rest), 1)), np.cumsum(self.rest, axis=1)], axis=1)
        scale = 2 * self.B / self.rest.sum(axis=1, keepdims=True)
        return -self.B + np.cumsum(self.rest * scale, axis=1)[:, :-1]

    def forces(self, z):
        """Spring force per gap ``eta (r - 1/r)`` and the residual ``E + D + A + B``."""
        r = self.gaps(z) / self.rest
        s = self.eta * (r - 1.0 / r)
        if self.B is not None:
            above, below = s[:, 1:], s[:, :-1]
        else:
            zero = np.zeros((len(z), 1))
            above = np.concatenate([s, zero], axis=1)
            below = np.concatenate([zero, s], axis=1)
        return self.anchor - z + above - below, r

    def stiffness(self, r):
        """Stiffness of every gap, shape (n, K + 1): the end gaps first and last (zero for a free end)."""
        c = self.eta * (1.0 + 1.0 / r**2) / self.rest
        if self.B is not None:
            return c
        zero = np.zeros((len(r), 1))
        return np.concatenate([zero, c, zero], axis=1)

    def energy(self, z):
        """The convex energy whose gradient is minus the net force (inf outside the feasible set)."""
        r = self.gaps(z) / self.rest
        if np.any(r <= 0):
            r = np.where(r > 0, r, np.nan)
        quad = 0.5 * np.sum((z - self.anchor) ** 2, axis=1)
        value = quad + self.eta * np.sum(self.rest * (0.5 * r**2 - np.log(r)), axis=1)
        return np.where(np.isnan(value), np.inf, value)


def _check_problem(base, adjustment, eta, B, min_rest):
    z0 = as_float_array(base, "base", ndim=(1, 2))
    single = z0.ndim == 1
    z0 = np.atleast_2d(z0)
    e = np.atleast_2d(as_float_array(adjustment, "adjustment", ndim=(1, 2)))
    if e.shape != z0.shape:
        raise ValueError(f"adjustment must have the shape of base {z0.shape}, got {e.shape}")
    if np.any(np.diff(z0, axis=1) < 0):
        raise ValueError("base must be non-decreasing along the last axis")
    eta = float(check_positive(eta, "eta"))
    B = check_bound(B)
    if B is None and z0.shape[1] < 2:
        raise ValueError("a single quantile without a bound B has no spring: give B")
    if min_rest is not None:
        min_rest = float(check_positive(min_rest, "min_rest"))
    return z0, e, eta, B, min_rest, single


def equilibrium_residual(z, base, adjustment, eta, B=None, *, min_rest=None):
    """Net force ``E + D + A + B`` on every quantile (Eq. 4); zero at equilibrium.

    Parameters
    ----------
    z : array_like of shape (n, K) or (K,)
        Candidate quantiles, strictly increasing (and inside ``(-B, B)`` with ``B``).
    base : array_like of the same shape
        Initial prediction ``Z~`` (non-decreasing); its gaps are the springs' rest lengths.
    adjustment : array_like of the same shape
        The adjustment force ``E`` (Eq. 3 or Eq. 6).
    eta : float
        Elastic coefficient.
    B : float, optional
        Label bound; adds the padding quantiles ``-B`` and ``B`` and the two end springs.
    min_rest : float, optional
        Floor on the rest lengths, so that a tied initial prediction still
        defines a spring. Default ``1e-6 B`` (``1e-6 (1 + max |Z~|)`` per row
        without ``B``): with the capped adjustment of Eq. (3) the equilibrium
        gaps then stay well above float64 resolution.

    Returns
    -------
    ndarray of the shape of ``z``

    Examples
    --------
    >>> base = np.array([-1.0, 0.0, 1.0])
    >>> equilibrium_residual(base, base, np.zeros(3), 1.0, B=2.0).tolist()
    [0.0, 0.0, 0.0]
    """
    z0, e, eta, B, min_rest, single = _check_problem(base, adjustment, eta, B, min_rest)
    zz = np.atleast_2d(as_float_array(z, "z", ndim=(1, 2)))
    if zz.shape != z0.shape:
        raise ValueError(f"z must have the shape of base {z0.shape}, got {zz.shape}")
    springs = _Springs(z0, e, eta, B, min_rest)
    if np.any(springs.gaps(zz) <= 0):
        raise ValueError("z must be strictly increasing (and strictly inside (-B, B) when B is given)")
    g, _ = springs.forces(zz)
    return g[0] if single else g


def solve_equilibrium(base, adjustment, eta, B=None, *, tol=1e-12, max_iter=100, min_rest=None, start=None,
                      return_info=False):
    """Solve Eq. (4) exactly: Newton's method with a tridiagonal solve, batched.

    Parameters
    ----------
    base : array_like of shape (n, K) or (K,)
        Initial predictions ``Z~``, non-decreasing along the last axis.
    adjustment : array_like of the same shape
        Adjustment forces ``E``.
    eta : float
        Elastic coefficient of the springs.
    B : float, optional
        Label bound (padding quantiles and end springs); without it the ends are free.
    tol : float or array_like of shape (n,), default 1e-12
        Stop a row when its largest absolute net force is below ``tol``, or
        when a step moves it by less than ``1e-13 (1 + max |Z|)`` (rounding).
    max_iter : int, default 100
    min_rest : float, optional
        Floor on the rest lengths (see :func:`equilibrium_residual`).
    start : array_like of the shape of ``base``, optional
        Starting point (a warm start, e.g. the previous step's displacement
        added to ``base``); rows where it is not strictly increasing inside
        ``(-B, B)`` start from ``base``. The solution does not depend on it.
    return_info : bool, default False
        Also return a dict with ``iterations`` and the final ``residual`` per row.

    Returns
    -------
    z : ndarray of the shape of ``base``
        Strictly increasing equilibrium quantiles.
    info : dict, only if ``return_info``

    Examples
    --------
    >>> z = solve_equilibrium([-1.0, 0.0, 1.0], [0.0, 3.0, 0.0], eta=1.0, B=2.0)
    >>> residual = equilibrium_residual(z, [-1.0, 0.0, 1.0], [0.0, 3.0, 0.0], 1.0, B=2.0)
    >>> bool(np.all(np.diff(z) > 0)), bool(np.abs(residual).max() < 1e-10)
    (True, True)
    """
    z0, e, eta, B, min_rest, single = _check_problem(base, adjustment, eta, B, min_rest)
    tol = np.broadcast_to(check_positive(tol, "tol", ndim=(0, 1)), (len(z0),))
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    springs = _Springs(z0, e, eta, B, min_rest)
    z = z0.copy()
    bad = np.any(springs.gaps(z) < springs.rest * 1e-3, axis=1)
    if np.any(bad):
        z[bad] = springs.subset(bad).start()
    if start is not None:
        warm = np.atleast_2d(as_float_array(start, "start", ndim=(1, 2)))
        if warm.shape != z.shape:
            raise ValueError(f"start must have the shape of base {z.shape}, got {warm.shape}")
        usable = np.all(springs.gaps(warm) > 0, axis=1)
        z[usable] = warm[usable]
    n = len(z)
    iterations = np.zeros(n, dtype=int)
    residual = np.zeros(n)
    active = np.arange(n)
    g_all, r_all = springs.forces(z)
    for it in range(max_iter):
        res = np.abs(g_all).max(axis=1)
        residual[active] = res
        keep = res > tol[active]
        active, g, r = active[keep], g_all[keep], r_all[keep]
        if len(active) == 0:
            break
        sp = springs if len(active) == n else springs.subset(active)
        iterations[active] += 1
        zs = z[active]
        c = sp.stiffness(r)
        stiff = c.max(axis=1) > STIFF
        diag, off = 1.0 + c[:, 1:] + c[:, :-1], -c[:, 1:-1]
        if len(active) == 1 and not stiff[0]:
            p = _solve_tridiagonal_single(diag[0].tolist(), off[0].tolist(), g[0].tolist())[None, :]
        elif not np.any(stiff):
            p = solve_tridiagonal(diag, off, g)
        else:  # gaps near float64 resolution: Thomas' pivots would cancel in those rows
            p = np.empty_like(g)
            p[stiff] = _solve_stiff(c[stiff], g[stiff])
            if not np.all(stiff):
                p[~stiff] = solve_tridiagonal(diag[~stiff], off[~stiff], g[~stiff])
        gaps = sp.gaps(zs)
        dgaps = np.diff(sp.pad(p, fill=0.0), axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(dgaps < 0, -gaps / dgaps, np.inf).min(axis=1)
        step = np.minimum(1.0, 0.99 * ratio)
        merit0 = 0.5 * np.sum(g**2, axis=1)
        z_new, g_new, r_new = zs.copy(), g.copy(), r.copy()
        # local phase: a full Newton step that changes every gap by under 10% and lowers the
        # residual is taken without a line search (the quadratic-convergence region)
        local = np.abs(dgaps).max(axis=1) < 0.1 * gaps.min(axis=1)
        pending = np.arange(len(active))
        if np.any(local):
            rows = pending[local]
            trial = zs[rows] + p[rows]
            g_t, r_t = (sp if len(rows) == len(active) else sp.subset(rows)).forces(trial)
            ok = 0.5 * np.sum(g_t**2, axis=1) < merit0[rows]
            z_new[rows[ok]], g_new[rows[ok]], r_new[rows[ok]] = trial[ok], g_t[ok], r_t[ok]
            accepted = np.zeros(len(active), dtype=bool)
            accepted[rows[ok]] = True
            pending = pending[~accepted]
        if len(pending):  # line search for the rows the local phase did not settle
            energy0 = np.zeros(len(active))
            energy0[pending] = sp.subset(pending).energy(zs[pending])
            slope = np.sum(g * p, axis=1)
            for _ in range(40):
                if len(pending) == 0:
                    break
                trial = zs[pending] + step[pending, None] * p[pending]
                sub = sp.subset(pending)
                feasible = np.all(sub.gaps(trial) > 0, axis=1)
                with np.errstate(divide="ignore", invalid="ignore"):
                    g_t, r_t = sub.forces(trial)
                    energy_t = sub.energy(trial)
                energy_ok = energy_t <= energy0[pending] - 1e-4 * step[pending] * slope[pending]
                # near the solution the energy change drowns in rounding: judge by the residual instead
                flat = np.abs(energy_t - energy0[pending]) <= 1e-10 * (1 + np.abs(energy0[pending]))
                merit_ok = flat & (0.5 * np.sum(g_t**2, axis=1) <= (1 - 1e-4 * step[pending]) * merit0[pending])
                ok = feasible & (energy_ok | merit_ok)
                done = pending[ok]
                z_new[done], g_new[done], r_new[done] = trial[ok], g_t[ok], r_t[ok]
                pending = pending[~ok]
                step[pending] *= 0.5
        stalled = np.zeros(len(active), dtype=bool)
        stalled[pending] = True
        tiny = np.abs(z_new - zs).max(axis=1) <= 1e-13 * (1 + np.abs(zs).max(axis=1))
        stalled |= tiny
        z[active] = z_new
        g_all, r_all = g_new, r_new
        if np.any(stalled):
            residual[active[stalled]] = np.abs(g_new[stalled]).max(axis=1)
            g_all, r_all, active = g_all[~stalled], r_all[~stalled], active[~stalled]
    else:
        residual[active] = np.abs(g_all).max(axis=1)
    out = z[0] if single else z
    if return_info:
        return out, {"iterations": iterations, "residual": residual}
    return out


def solve_equilibrium_damped(base, adjustment, eta, B=None, *, step=1.0, shrink=0.8, min_gap=1e-3,
                             tol=1e-4, max_iter=300, min_rest=None, return_info=False):
    """Solve Eq. (4) by the damped force iteration of the public code (the baseline).

    Each iteration moves every quantile by ``step`` times its net force. When
    a move would bring two neighbouring quantiles closer than ``min_gap`` the
    move is undone and ``step`` shrinks by ``shrink``. It stops when the mean
    absolute move is below ``tol`` or after ``max_iter`` iterations. The
    public code pads with ``+-1000`` when no bound is known; here the padding is
    ``+-B`` (or free ends), the same problem as :func:`solve_equilibrium`.

    Parameters
    ----------
    base, adjustment, eta, B, min_rest
        As in :func:`solve_equilibrium`.
    step : float, default 1.0
        Initial step size.
    shrink : float, default 0.8
        Factor applied to the step when monotonicity would break.
    min_gap : float, default 1e-3
        Smallest gap accepted between neighbours (lowered to half the smallest
        rest length of a row when that is smaller).
    tol : float, default 1e-4
        Stopping threshold on the mean absolute move.
    max_iter : int, default 300
    return_info : bool, default False

    Returns
    -------
    z : ndarray of the shape of ``base``
    info : dict, only if ``return_info`` (``iterations``, ``residual``)

    Examples
    --------
    >>> z = solve_equilibrium_damped([-1.0, 0.0, 1.0], [0.0, 0.5, 0.0], eta=1.0, B=2.0, tol=1e-12, max_iter=5000)
    >>> bool(np.allclose(z, solve_equilibrium([-1.0, 0.0, 1.0], [0.0, 0.5, 0.0], eta=1.0, B=2.0), atol=1e-9))
    True
    """
    z0, e, eta, B, min_rest, single = _check_problem(base, adjustment, eta, B, min_rest)
    step = float(check_positive(step, "step"))
    shrink = float(check_positive(shrink, "shrink"))
    if shrink >= 1:
        raise ValueError(f"shrink must lie in (0, 1), got {shrink}")
    min_gap = float(check_positive(min_gap, "min_gap"))
    tol = float(check_positive(tol, "tol"))
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    springs = _Springs(z0, e, eta, B, min_rest)
    z = z0.copy()
    bad = np.any(springs.gaps(z) <= 0, axis=1)
    if np.any(bad):
        z[bad] = springs.subset(bad).start()
    n = len(z)
    floor = np.minimum(min_gap, 0.5 * springs.rest.min(axis=1))
    lr = np.full(n, step)
    iterations = np.zeros(n, dtype=int)
    active = np.arange(n)
    for _ in range(max_iter):
        if len(active) == 0:
            break
        sp = springs.subset(active)
        g, _ = sp.forces(z[active])
        move = lr[active, None] * g
        trial = z[active] + move
        ok = np.all(sp.gaps(trial) >= floor[active, None], axis=1)
        iterations[active] += 1
        z[active[ok]] = trial[ok]
        lr[active[~ok]] *= shrink
        finished = ok & (np.abs(move).mean(axis=1) < tol)
        active = active[~finished]
    residual = np.abs(springs.forces(z)[0]).max(axis=1)
    out = z[0] if single else z
    if return_info:
        return out, {"iterations": iterations, "residual": residual}
    return out
