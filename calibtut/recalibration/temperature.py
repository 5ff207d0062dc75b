"""Temperature scaling of classifier logits (Guo et al. 2017), optionally weighted.

A single temperature ``T > 0`` divides the logits, ``p = softmax(z / T)``,
and is fitted on a held-out set by minimising the (weighted) mean negative
log-likelihood or Brier score. Sample weights give the importance-weighted
variant used under covariate shift (paper 004, where the weights are density
ratios and the loss is the Brier score). :func:`temperature_scaled_probs` is
the one-call wrapper of :class:`TemperatureScaling`.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import optimize, special

from calibtut._estimator import Estimator, rule
from calibtut._validation import (
    check_choice,
    check_fitted,
    check_labels,
    check_logits,
    check_n_classes,
    check_positive,
    check_weights,
)

__all__ = ["TemperatureBoundWarning", "TemperatureScaling", "temperature_scaled_probs"]

_LOSSES = ("nll", "brier")
#: A fitted temperature within this relative distance of a search bound is reported as on it
#: (Newton stops on the bound itself; the bounded Brent search of the Brier fit within about 1e-7).
_AT_BOUND_RTOL = 1e-5


class TemperatureBoundWarning(UserWarning):
    """The NLL-fitted temperature is at an end of its search range (``bounds``), not at a minimum inside it."""


def _warn_if_probabilities(logits, name):
    """Warn when ``logits`` look like class probabilities: every entry in [0, 1], rows summing to 1."""
    if logits.min() >= 0 and logits.max() <= 1 and np.allclose(logits.sum(axis=1), 1.0, rtol=0, atol=1e-6):
        warnings.warn(
            f"{name} look like class probabilities (every entry in [0, 1], each row summing to 1), "
            "but temperature scaling divides logits: pass the model's logits (its pre-softmax scores) "
            "or log-probabilities (numpy.log(probs)), whose softmax gives the same probabilities",
            UserWarning,
            stacklevel=3,
        )


def _softmax(logits, beta):
    """``softmax(beta * logits)`` by rows, computed in one buffer."""
    p = logits * beta
    p -= p.max(axis=1, keepdims=True)
    np.exp(p, out=p)
    p /= p.sum(axis=1, keepdims=True)
    return p


def _nll_derivatives(beta, logits, squares, label_logits, weights):
    """First and second derivative in ``beta`` of the weighted NLL of ``softmax(beta * logits)``."""
    p = _softmax(logits, beta)
    mean = np.einsum("ij,ij->i", p, logits)
    second = np.einsum("ij,ij->i", p, squares) - mean**2
    return float(weights @ (mean - label_logits)), float(weights @ np.maximum(second, 0.0))


def _newton_inverse_temperature(logits, labels, weights, bounds, *, rtol=1e-12, max_iter=100):
    """The minimiser of the convex weighted NLL over ``beta`` in ``[1 / t_max, 1 / t_min]``.

    Newton steps, replaced by bisection when they leave the bracket in which
    the derivative changes sign; stops when a step moves ``beta`` by less than
    ``rtol`` relative. A derivative of one sign over the whole bracket puts
    the minimum at that end.
    """
    lo, hi = 1.0 / bounds[1], 1.0 / bounds[0]
    beta = min(max(1.0, lo), hi)
    squares, label_logits = logits * logits, logits[np.arange(labels.size), labels]
    for _ in range(max_iter):
        grad, hess = _nll_derivatives(beta, logits, squares, label_logits, weights)
        if grad > 0:
            hi = beta
        else:
            lo = beta
        step = grad / hess if hess > 0 else np.inf
        new = beta - step
        if not lo < new < hi:
            new = 0.5 * (lo + hi)
        if abs(new - beta) <= rtol * beta:
            return new
        beta = new
    return beta


def _check_bounds(bounds, name="bounds"):
    """A temperature search range ``(t_min, t_max)``, ``0 < t_min < t_max``, as a tuple of floats."""
    t = check_positive(bounds, name, ndim=1)
    if t.size != 2 or not t[0] < t[1]:
        raise ValueError(f"{name} must be (t_min, t_max) with 0 < t_min < t_max, got {bounds!r}")
    return float(t[0]), float(t[1])


class TemperatureScaling(Estimator):
    """Temperature scaling fitted by minimising a weighted proper score.

    For the NLL the fit is Newton's method on the inverse temperature
    ``beta = 1 / T``, safeguarded by bisection inside ``[1 / t_max, 1 / t_min]``:
    the weighted NLL ``f(beta) = sum_i w_i (logsumexp(beta z_i) - beta z_iy)``
    is convex, with ``f' = sum_i w_i (E_p[z_i] - z_iy)`` and
    ``f'' = sum_i w_i Var_p[z_i] >= 0`` under ``p = softmax(beta z_i)``, so a
    handful of softmax passes find the minimum (a bounded Brent search, which
    has no gradient, needs about four times as many). The Brier score is not
    convex in ``beta``; it is optimised over ``log T`` by a bounded Brent
    search in ``[log t_min, log t_max]``.

    Parameters
    ----------
    loss : {"nll", "brier"}, default "nll"
        Objective: mean negative log-likelihood (Guo et al. 2017) or mean
        multiclass Brier score (the objective of paper 004's code).
    bounds : tuple of float, default (1e-2, 1e2)
        Search range ``(t_min, t_max)`` for the temperature. A fit that ends
        on a bound says so in ``at_bound_``: at ``t_max`` the logits separate
        the calibration labels no better than a constant (or rank them
        backwards); at ``t_min`` they separate them perfectly (the loss keeps
        falling as ``T -> 0``), as on the model's own training data. The NLL
        fit also issues a :class:`TemperatureBoundWarning` then (its objective
        is convex, so the bound is where the derivative kept one sign over the
        whole range). The Brier fit does not warn: heavy importance weights
        and all-correct calibration sets drive it to a bound on purpose in
        the covariate-shift chapters.

    Attributes
    ----------
    temperature_ : float
        Fitted temperature; ``predict_proba`` returns ``softmax(logits / T)``.
    loss_ : float
        Objective value at ``temperature_``.
    n_classes_ : int
        Number of classes (columns of ``cal_logits``); ``predict_proba``
        refuses logits with another number.
    at_bound_ : {None, "lower", "upper"}
        Which end of ``bounds`` the fitted temperature is on (within a
        relative 1e-5), or None inside the range.

    Warns
    -----
    UserWarning
        When ``cal_logits`` or ``test_logits`` look like probabilities (every
        entry in [0, 1], rows summing to 1): pass logits or log-probabilities.
    TemperatureBoundWarning
        When the NLL fit's temperature is at an end of ``bounds``.

    See Also
    --------
    calibtut.recalibration.VectorScaling : one weight and one bias per class.
    calibtut.recalibration.PlattScaling : one sigmoid per class (one-vs-rest).
    calibtut.shift.SGDTemperatureScaling : the same objective minimised by gradient steps.
    temperature_scaled_probs : the one-call function.

    References
    ----------
    - Guo, Pleiss, Sun & Weinberger (2017), "On calibration of modern neural networks", Proceedings
      of the 34th International Conference on Machine Learning (ICML), 1321-1330.
    - Park, Bastani, Weimer & Lee (2020), "Calibrated prediction with covariate shift via
      unsupervised domain adaptation", Proceedings of the 23rd International Conference on
      Artificial Intelligence and Statistics (AISTATS) (importance-weighted fit).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> logits = 3 * rng.normal(size=(2000, 3))
    >>> p_true = np.exp(logits / 2) / np.exp(logits / 2).sum(1, keepdims=True)
    >>> labels = (rng.random((2000, 1)) > p_true.cumsum(1)).sum(1)
    >>> ts = TemperatureScaling().fit(logits, labels)
    >>> round(ts.temperature_, 1)
    2.0
    >>> ts.predict_proba(logits[:1]).sum().round(6)
    np.float64(1.0)
    """

    _parameter_constraints = {
        "loss": rule(check_choice, choices=_LOSSES),
        "bounds": _check_bounds,
    }

    def __init__(self, *, loss="nll", bounds=(1e-2, 1e2)):
        self.loss = loss
        self.bounds = bounds

    def _objective(self, log_t, logits, labels, weights):
        scaled = logits * np.exp(-log_t)
        log_p = special.log_softmax(scaled, axis=1)
        if self.params_.loss == "nll":
            per_point = -log_p[np.arange(labels.size), labels]
        else:
            p = np.exp(log_p)
            p[np.arange(labels.size), labels] -= 1.0
            per_point = np.sum(p**2, axis=1)
        return float(np.dot(weights, per_point))

    @staticmethod
    def _fit_arguments(cal_logits, cal_y, cal_weight):
        """Checked logits, labels and weights normalised to sum to one."""
        logits = check_logits(cal_logits, "cal_logits")
        n = len(logits)
        labels = check_labels(cal_y, "cal_y", n_classes=logits.shape[1], n=n)
        if cal_weight is None:
            return logits, labels, np.full(n, 1.0 / n)
        weights = check_weights(cal_weight, "cal_weight", n=n)
        return logits, labels, weights / weights.sum()

    def fit(self, cal_logits, cal_y, *, cal_weight=None):
        """Fit the temperature on held-out logits and labels.

        Parameters
        ----------
        cal_logits : array_like of shape (n, n_classes)
            Pre-softmax scores of the model on the calibration set.
        cal_y : array_like of int, shape (n,)
            True classes in ``0, ..., n_classes - 1``.
        cal_weight : array_like of shape (n,), optional
            Non-negative weights, not all zero (e.g. importance weights);
            normalised to sum to one, so only their ratios matter.

        Returns
        -------
        TemperatureScaling
            ``self``.
        """
        self._validate_params()
        logits, labels, weights = self._fit_arguments(cal_logits, cal_y, cal_weight)
        _warn_if_probabilities(logits, "cal_logits")
        self.n_classes_ = logits.shape[1]
        if self.params_.loss == "nll":
            beta = _newton_inverse_temperature(logits, labels, weights, self.params_.bounds)
            self.temperature_ = float(1.0 / beta)
            self.loss_ = self._objective(-np.log(beta), logits, labels, weights)
        else:
            result = optimize.minimize_scalar(
                self._objective,
                bounds=tuple(np.log(self.params_.bounds)),
                args=(logits, labels, weights),
                method="bounded",
                options={"xatol": 1e-8},
            )
            self.temperature_ = float(np.exp(result.x))
            self.loss_ = float(result.fun)
        self._warn_at_bound()
        return self

    def _warn_at_bound(self):
        t_min, t_max = self.params_.bounds
        t = self.temperature_
        self.at_bound_ = "upper" if t >= t_max * (1 - _AT_BOUND_RTOL) else "lower" if t <= t_min * (
            1 + _AT_BOUND_RTOL) else None
        if self.params_.loss != "nll":
            return
        where = f"the fitted temperature {t:.6g} is on the bound of bounds=({t_min:g}, {t_max:g})"
        if self.at_bound_ == "upper":
            warnings.warn(
                f"{where} at t_max: the NLL still falls as T grows, so the logits tell the calibration "
                "labels apart no better than a constant (probabilities near uniform) or rank them "
                "backwards; check that cal_logits and cal_y are aligned, or widen bounds",
                TemperatureBoundWarning,
                stacklevel=3,
            )
        elif self.at_bound_ == "lower":
            warnings.warn(
                f"{where} at t_min: the NLL still falls as T shrinks, so the logits separate the "
                "calibration labels perfectly (as on the model's own training data or a very small set) and "
                "the probabilities are near 0 and 1; fit on held-out data, or widen bounds",
                TemperatureBoundWarning,
                stacklevel=3,
            )

    def predict_proba(self, test_logits):
        """Calibrated probabilities ``softmax(test_logits / temperature_)``.

        Parameters
        ----------
        test_logits : array_like of shape (n, n_classes)
            Pre-softmax scores of the model at the test inputs.

        Returns
        -------
        numpy.ndarray of shape (n, n_classes)
        """
        check_fitted(self, "temperature_")
        logits = check_n_classes(check_logits(test_logits, "test_logits"), "test_logits", self.n_classes_)
        _warn_if_probabilities(logits, "test_logits")
        return _softmax(logits, 1.0 / self.temperature_)


def temperature_scaled_probs(cal_logits, cal_y, test_logits, *, cal_weight=None, loss="nll", bounds=(1e-2, 1e2)):
    """Temperature-scaled test probabilities in one call (:class:`TemperatureScaling`).

    Parameters
    ----------
    cal_logits : array_like of shape (n, n_classes)
        Pre-softmax scores of the model on the calibration set.
    cal_y : array_like of int, shape (n,)
        Calibration classes in ``0, ..., n_classes - 1``.
    test_logits : array_like of shape (m, n_classes)
        Pre-softmax scores of the model at the test inputs.
    cal_weight : array_like of shape (n,), optional
        Non-negative weights of the calibration points, not all zero (e.g.
        importance weights).
    loss : {"nll", "brier"}, default "nll"
        Objective minimised by the temperature.
    bounds : tuple of float, default (1e-2, 1e2)
        Search range ``(t_min, t_max)`` for the temperature.

    Returns
    -------
    numpy.ndarray of shape (m, n_classes)
        ``softmax(test_logits / T)`` with the fitted temperature ``T``.

    Examples
    --------
    >>> cal_logits = [[2.0, 0.0], [2.0, 0.0], [2.0, 0.0], [2.0, 0.0]]
    >>> probs = temperature_scaled_probs(cal_logits, [0, 0, 0, 1], [[2.0, 0.0]])
    >>> probs.round(3)  # fitted to the calibration frequency 3/4
    array([[0.75, 0.25]])
    """
    model = TemperatureScaling(loss=loss, bounds=bounds).fit(cal_logits, cal_y, cal_weight=cal_weight)
    return model.predict_proba(test_logits)
