r"""Theorem 1 of paper 004 (Eq. 8), its proof steps, and exact checks with a known ratio.

Notation: source ``p``, target ``q``, density ratio ``w = q / p <= U``, the
balanced source-vs-target mixture ``r = (p + q) / 2`` with label ``s``
(``s = 1`` for source), the optimal discriminator ``g = p / (p + q)``, an
estimate ``g_hat >= 1 / (1 + U)`` with ``w_hat = 1 / g_hat - 1``, the loss
``a = ||f_hat(x) - y||^2`` in ``[0, 2]`` and ``lambda = (1 + U)^4``.

* Eq. (4), exact: ``E_q[a] = E_p[a w_hat] + E_p[a (w - w_hat)]``.
* Eq. (5) as printed: ``E_p[a (w - w_hat)] <= (E_p[a] + E_p[(w - w_hat)^2]) / 2``.
  Its last step uses ``a <= 1``, which is false for a ``K``-class Brier loss
  (``a`` reaches 2); :func:`step5_counterexample` violates it.
* Corrected step: pointwise ``a e - a / 2 = (a / 2)(2 e - 1) <= (a / 2) e^2 <= e^2``
  for ``e = w - w_hat`` and ``a <= 2``, hence
  ``E_p[a (w - w_hat)] <= E_p[a] / 2 + E_p[(w - w_hat)^2]``.
* Eq. (7): ``E_p[(w - w_hat)^2] <= 2 lambda E_r[(g_hat - g)^2]`` and
  ``E_r[(g_hat - g)^2] = E_r[(g_hat - s)^2] - E_r[(g - s)^2]`` (the Brier identity).
* Theorem 1 still holds with the paper's constant: using
  ``1/g <= 1 + U``, ``1/g_hat^2 <= (1 + U)^2`` and ``r = p / (2 g)``,
  ``E_p[e^2] <= 2 (1 + U)^3 E_r[(g_hat - g)^2] <= lambda E_r[(g_hat - g)^2]``
  (as ``1 + U >= 2``), so

  .. math::

     E_q\|\hat f - c\|^2 \le E_q[a] \le E_p[a (1/\hat g - 1/2)]
     + \lambda \left(E_r[(\hat g - s)^2] - E_r[(g - s)^2]\right).

:func:`theorem1_terms` evaluates every term exactly for discrete
distributions (or a quadrature grid), vectorised over leading axes;
:class:`GaussianShift` and :func:`gaussian_bound_terms` give the 1-D binary
design with a bounded (target narrower than source) or unbounded ratio.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from calibtut._validation import as_float_array, check_int, check_positive, check_real, check_rng
from calibtut.shift.weights import _source_probabilities

__all__ = [
    "BoundTerms",
    "GaussianShift",
    "bound_violation_search",
    "gaussian_bound_terms",
    "step5_counterexample",
    "theorem1_terms",
]


@dataclass(frozen=True)
class BoundTerms:
    """Every term of the proof of Theorem 1 for one (or a batch of) instance(s).

    A result record, returned by :func:`theorem1_terms`,
    :func:`step5_counterexample` and :func:`gaussian_bound_terms` and never
    built by users, so it validates nothing (the API walker of
    ``tests/test_api_validation.py`` lists it in ``RESULT_RECORDS``).

    Attributes
    ----------
    upper : numpy.ndarray
        ``U = max q / p``.
    lam : numpy.ndarray
        ``lambda = (1 + U)^4``.
    calibration_error : numpy.ndarray
        ``E_q ||f_hat - c||^2``, the left-hand side of Eq. (8).
    target_loss : numpy.ndarray
        ``E_q[a]``.
    iw_loss, residual : numpy.ndarray
        ``E_p[a w_hat]`` and ``E_p[a (w - w_hat)]``; they add up to
        ``target_loss`` (Eq. 4).
    step5_rhs : numpy.ndarray
        ``(E_p[a] + E_p[(w - w_hat)^2]) / 2``, the printed bound on ``residual``.
    step5_corrected_rhs : numpy.ndarray
        ``E_p[a] / 2 + E_p[(w - w_hat)^2]``, the corrected bound.
    weight_error : numpy.ndarray
        ``E_p[(w - w_hat)^2]``.
    discriminator_excess : numpy.ndarray
        ``E_r[(g_hat - s)^2] - E_r[(g - s)^2] = E_r[(g_hat - g)^2]``.
    weighted_term : numpy.ndarray
        ``E_p[a (1 / g_hat - 1/2)]``, the middle term of Eq. (8).
    rhs : numpy.ndarray
        ``weighted_term + lam * discriminator_excess`` (the first and third
        terms of Eq. 8 together); infinite for an unbounded ratio unless
        ``g_hat = g``.
    """

    upper: np.ndarray
    lam: np.ndarray
    calibration_error: np.ndarray
    target_loss: np.ndarray
    iw_loss: np.ndarray
    residual: np.ndarray
    step5_rhs: np.ndarray
    step5_corrected_rhs: np.ndarray
    weight_error: np.ndarray
    discriminator_excess: np.ndarray
    weighted_term: np.ndarray
    rhs: np.ndarray

    @property
    def step5_holds(self):
        """Whether the printed step (5) holds (up to 1e-12)."""
        return self.residual <= self.step5_rhs + 1e-12

    @property
    def theorem_holds(self):
        """Whether Eq. (8) holds (up to 1e-12)."""
        return self.calibration_error <= self.rhs + 1e-12


def _masses(x, name):
    x = check_positive(x, name, strict=False, min_ndim=1)
    total = x.sum(axis=-1, keepdims=True)
    if np.any(total <= 0):
        raise ValueError(f"{name} must have a positive total mass")
    return x / total


def theorem1_terms(p, q, g_hat, loss, *, calibration_error=None):
    """Exact terms of Eqs. (4)-(8) on a finite support (or a quadrature grid).

    Parameters
    ----------
    p, q : array_like of shape (..., m)
        Source and target masses on ``m`` support points (normalised along
        the last axis); ``q`` must vanish where ``p`` does.
    g_hat : array_like of shape (..., m)
        The discriminator estimate ``P(source | x)`` at the points, in ``(0, 1]``.
    loss : array_like of shape (..., m)
        ``E[a | x] = E[||f_hat(x) - y||^2 | x]`` at the points, in ``[0, 2]``.
    calibration_error : array_like of shape (...), optional
        ``E_q ||f_hat - c||^2`` when it is known; default ``E_q[a]``, its
        upper bound, which is exact when ``y`` is a function of ``f_hat(x)``.

    Returns
    -------
    BoundTerms

    Examples
    --------
    >>> t = theorem1_terms([0.5, 0.5], [0.9, 0.1], [1 / 1.8, 1 / 1.2], [2.0, 0.0])
    >>> round(float(t.residual), 6), round(float(t.step5_rhs), 6), bool(t.theorem_holds)
    (1.0, 0.75, True)
    """
    p, q = _masses(p, "p"), _masses(q, "q")
    g_hat = _source_probabilities(g_hat, "g_hat", min_ndim=1)
    loss = as_float_array(loss, "loss", min_ndim=1)
    if not (p.shape == q.shape == g_hat.shape == loss.shape):
        raise ValueError(
            f"p, q, g_hat and loss must have the same shape, got {p.shape}, {q.shape}, {g_hat.shape}, {loss.shape}"
        )
    if np.any((loss < 0) | (loss > 2)):
        raise ValueError("loss must lie in [0, 2] (a multiclass Brier loss)")
    if np.any((p == 0) & (q > 0)):
        raise ValueError("q must vanish where p does (bounded importance weights need supp q within supp p)")
    safe_p = np.where(p > 0, p, 1.0)
    w = np.where(p > 0, q / safe_p, 0.0)
    g = np.where(p + q > 0, p / np.where(p + q > 0, p + q, 1.0), 1.0)
    r = (p + q) / 2
    w_hat = 1.0 / g_hat - 1.0
    e = w - w_hat
    ep_a = np.sum(p * loss, axis=-1)
    weight_error = np.sum(p * e**2, axis=-1)
    upper = w.max(axis=-1)
    lam = (1.0 + upper) ** 4
    excess = np.sum(r * (g_hat - g) ** 2, axis=-1)
    weighted = np.sum(p * loss * (1.0 / g_hat - 0.5), axis=-1)
    target = np.sum(q * loss, axis=-1)
    cal = target if calibration_error is None else as_float_array(calibration_error, "calibration_error", ndim=None)
    return BoundTerms(
        upper=upper,
        lam=lam,
        calibration_error=np.asarray(cal, dtype=float),
        target_loss=target,
        iw_loss=np.sum(p * loss * w_hat, axis=-1),
        residual=np.sum(p * loss * e, axis=-1),
        step5_rhs=0.5 * (ep_a + weight_error),
        step5_corrected_rhs=0.5 * ep_a + weight_error,
        weight_error=weight_error,
        discriminator_excess=excess,
        weighted_term=weighted,
        rhs=weighted + lam * excess,
    )


def step5_counterexample():
    """The two-point instance on which the printed step (5) fails for ``K >= 2``.

    ``p = (1/2, 1/2)``, ``q = (0.9, 0.1)`` (so ``w = (1.8, 0.2)``, ``U = 1.8``),
    ``g_hat = (1/1.8, 1/1.2)`` (so ``w_hat = (0.8, 0.2)``) and a forecaster
    that is confidently wrong at the first point (``a = 2``) and exact at the
    second (``a = 0``). Step (5) claims ``1.0 <= 0.75``; the corrected step
    (``1.0 <= 1.0``) and Theorem 1 (``1.8 <= 2.994``) hold.

    Returns
    -------
    BoundTerms

    Examples
    --------
    >>> t = step5_counterexample()
    >>> bool(t.step5_holds), bool(t.theorem_holds)
    (False, True)
    >>> round(float(t.rhs), 3)
    2.994
    """
    return theorem1_terms([0.5, 0.5], [0.9, 0.1], [1 / 1.8, 1 / 1.2], [2.0, 0.0])


def bound_violation_search(n_draws, *, max_points=5, seed=None):
    """Largest violations of step (5) and of Theorem 1 over random discrete instances.

    Each draw has ``m`` support points (``m`` uniform in ``2..max_points``),
    ``p`` and ``q`` uniform on the simplex, ``g_hat`` the true ``g`` plus
    uniform noise clipped to ``[1 / (1 + U), 1]``, and losses ``a`` drawn in
    ``{0, 2}`` (half the draws) or uniformly in ``[0, 2]``; labels are
    deterministic and ``f_hat`` injective, so the calibration error equals
    ``E_q[a]``.

    Parameters
    ----------
    n_draws : int
        Number of random instances.
    max_points : int, default 5
        Largest support size (at least 2).
    seed : int, numpy.random.Generator or None

    Returns
    -------
    step5_gap, theorem_gap : float
        ``max(residual - step5_rhs)`` (positive: step (5) fails) and
        ``max(calibration_error - rhs)`` (positive: the theorem fails).

    Examples
    --------
    >>> s5, th = bound_violation_search(2000, seed=0)
    >>> s5 > 0, th <= 1e-12
    (True, True)
    """
    n_draws = check_int(n_draws, "n_draws", minimum=1)
    max_points = check_int(max_points, "max_points", minimum=2)
    rng = check_rng(seed)
    sizes = rng.integers(2, max_points + 1, size=n_draws)
    step5, theorem = -np.inf, -np.inf
    for m in np.unique(sizes):
        k = int(np.sum(sizes == m))
        p = rng.dirichlet(np.ones(m), size=k)
        q = rng.dirichlet(np.ones(m), size=k)
        upper = (q / p).max(axis=1, keepdims=True)
        g = p / (p + q)
        g_hat = np.clip(g + rng.uniform(-0.5, 0.5, size=(k, m)), 1 / (1 + upper), 1.0)
        binary = rng.random((k, 1)) < 0.5
        loss = np.where(binary, 2.0 * rng.integers(0, 2, size=(k, m)), rng.uniform(0, 2, size=(k, m)))
        t = theorem1_terms(p, q, g_hat, loss)
        step5 = max(step5, float(np.max(t.residual - t.step5_rhs)))
        theorem = max(theorem, float(np.max(t.calibration_error - t.rhs)))
    return step5, theorem


def _coef_pair(coef, name, *, positive_slope):
    """A label law's or forecaster's ``(slope, intercept)``: two finite reals."""
    values = as_float_array(coef, name, ndim=1)
    if values.size != 2:
        raise ValueError(f"{name} must be a pair (slope, intercept), got {values.tolist()}")
    if positive_slope:
        check_real(values[0], f"{name}[0] (the slope)", low=0, low_open=True)
    return float(values[0]), float(values[1])


@dataclass(frozen=True)
class GaussianShift:
    """Source ``N(0, 1)`` and target ``N(mean, scale^2)`` on the real line.

    The log density ratio is ``-log s - (x - mu)^2 / (2 s^2) + x^2 / 2``. It is
    bounded exactly when ``scale < 1`` (or ``scale = 1`` and ``mean = 0``),
    with maximum at ``x* = mu / (1 - s^2)``; otherwise ``U`` is infinite.

    Parameters
    ----------
    mean : float, default 1.0
        Mean of the target; any finite real number.
    scale : float, default 0.7
        Standard deviation of the target (> 0).

    Examples
    --------
    >>> shift = GaussianShift(1.0, 0.7)
    >>> round(shift.upper, 3), round(shift.lam, 1)
    (3.808, 534.3)
    >>> GaussianShift(0.0, 1.5).upper
    inf
    """

    mean: float = 1.0
    scale: float = 0.7

    def __post_init__(self):
        object.__setattr__(self, "mean", check_real(self.mean, "mean"))
        object.__setattr__(self, "scale", check_real(self.scale, "scale", low=0, low_open=True))

    @property
    def upper(self):
        """``U = sup q / p`` (``inf`` for an unbounded ratio)."""
        s, mu = self.scale, self.mean
        if s > 1 or (s == 1 and mu != 0):
            return float("inf")
        if s == 1:
            return 1.0
        x_star = mu / (1 - s**2)
        return float(np.exp(self.log_density_ratio(np.array([x_star]))[0]))

    @property
    def lam(self):
        """``(1 + U)^4``."""
        return (1.0 + self.upper) ** 4

    def log_density_ratio(self, x):
        """``log q(x) - log p(x)``."""
        x = as_float_array(x, "x")
        s, mu = self.scale, self.mean
        return -np.log(s) - (x - mu) ** 2 / (2 * s**2) + x**2 / 2

    def density_ratio(self, x):
        """``w(x) = q(x) / p(x)``."""
        return np.exp(self.log_density_ratio(x))

    def discriminator(self, x):
        """The optimal balanced discriminator ``g(x) = 1 / (1 + w(x))``."""
        return special.expit(-self.log_density_ratio(x))

    def source_pdf(self, x):
        """Density of the source, ``N(0, 1)``."""
        return stats.norm.pdf(as_float_array(x, "x"))

    def target_pdf(self, x):
        """Density of the target, ``N(mean, scale^2)``."""
        return stats.norm.pdf(as_float_array(x, "x"), self.mean, self.scale)

    def sample(self, n_source, n_target, *, coef=(2.0, -0.5), seed=None):
        """Draw labelled source and target samples with ``P(y=1|x) = sigmoid(a x + b)``.

        Parameters
        ----------
        n_source, n_target : int
        coef : tuple (a, b), default (2.0, -0.5)
            The shared conditional law of the label (covariate shift); finite.
        seed : int, numpy.random.Generator or None

        Returns
        -------
        X_source, y_source, X_target, y_target : numpy.ndarray
            Inputs of shape ``(n, 1)`` and int64 labels of shape ``(n,)``.

        Examples
        --------
        >>> Xs, ys, Xt, yt = GaussianShift(1.0, 0.7).sample(5, 3, seed=0)
        >>> Xs.shape, yt.shape
        ((5, 1), (3,))
        """
        n_source = check_int(n_source, "n_source", minimum=1)
        n_target = check_int(n_target, "n_target", minimum=1)
        a, b = _coef_pair(coef, "coef", positive_slope=False)
        rng = check_rng(seed)
        xs = rng.normal(size=n_source)
        xt = rng.normal(self.mean, self.scale, size=n_target)
        ys = (rng.random(n_source) < special.expit(a * xs + b)).astype(np.int64)
        yt = (rng.random(n_target) < special.expit(a * xt + b)).astype(np.int64)
        return xs[:, None], ys, xt[:, None], yt


def gaussian_bound_terms(
    shift,
    *,
    temperature=1.0,
    perturbation=0.0,
    forecast_coef=(1.2, -0.2),
    true_coef=(2.0, -0.5),
    n_grid=200_001,
    half_width=9.0,
):
    """Terms of Theorem 1 on a binary 1-D Gaussian shift, by quadrature.

    The true law is ``P(y = 1 | x) = sigmoid(a x + b)``, the forecaster
    ``f_hat(x) = sigmoid((a0 x + b0) / T)`` with ``a0 > 0`` is strictly
    monotone, so ``c(x) = E_q[y | f_hat(x)] = eta(x)`` exactly and the
    calibration error is ``E_q[2 (f_hat - eta)^2]`` (two-class Brier). The
    discriminator is ``g_hat = clip(sigmoid(logit g + delta sin x), 1/(1+U), 1)``.

    Parameters
    ----------
    shift : GaussianShift
    temperature : float, default 1.0
        The forecaster's temperature ``T > 0``.
    perturbation : float, default 0.0
        ``delta >= 0``, the amplitude of the discriminator's error; 0 gives
        the true discriminator.
    forecast_coef, true_coef : tuple of float
        ``(a0, b0)`` and ``(a, b)``, finite, with positive slopes ``a0, a > 0``:
        the forecaster is increasing (hence injective) and, in this design,
        ``y = 1`` grows likelier with ``x`` as well.
    n_grid : int, default 200001
        Number of grid points (>= 3).
    half_width : float, default 9.0
        The grid is uniform on ``[-half_width, half_width]`` (> 0).

    Returns
    -------
    BoundTerms

    Examples
    --------
    >>> t = gaussian_bound_terms(GaussianShift(1.0, 0.7), n_grid=20001)
    >>> round(float(t.calibration_error), 4), round(float(t.rhs), 4)
    (0.0116, 0.452)
    """
    if not isinstance(shift, GaussianShift):
        raise TypeError(f"shift must be a GaussianShift, got {type(shift).__name__}")
    temperature = check_real(temperature, "temperature", low=0, low_open=True)
    delta = check_real(perturbation, "perturbation", low=0)
    a0, b0 = _coef_pair(forecast_coef, "forecast_coef", positive_slope=True)
    a, b = _coef_pair(true_coef, "true_coef", positive_slope=True)
    n_grid = check_int(n_grid, "n_grid", minimum=3)
    half_width = check_real(half_width, "half_width", low=0, low_open=True)
    x = np.linspace(-half_width, half_width, n_grid)
    p, q = shift.source_pdf(x), shift.target_pdf(x)
    p, q = p / p.sum(), q / q.sum()
    eta = special.expit(a * x + b)
    f = special.expit((a0 * x + b0) / temperature)
    loss = 2 * ((f - eta) ** 2 + eta * (1 - eta))
    upper = shift.upper
    floor = 0.0 if not np.isfinite(upper) else 1 / (1 + upper)
    g_hat = np.clip(special.expit(-shift.log_density_ratio(x) + delta * np.sin(x)), floor, 1.0)
    g_hat = np.maximum(g_hat, np.finfo(float).tiny)
    terms = theorem1_terms(p, q, g_hat, loss, calibration_error=np.sum(q * 2 * (f - eta) ** 2))
    if not np.isfinite(upper):
        lam = np.asarray(np.inf)
        # with delta = 0 the discriminator is exact (no clamp): lambda * 0 = 0, not inf * rounding error
        rhs = terms.weighted_term + (np.inf if delta != 0 else 0.0)
        terms = BoundTerms(**{**terms.__dict__, "upper": np.asarray(np.inf), "lam": lam, "rhs": np.asarray(rhs)})
    return terms
