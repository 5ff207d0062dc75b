"""Platt scaling: a logistic map of a classifier's score (Platt 1999), binary or one-vs-rest.

A binary score ``s`` (a logit, a decision-function value or a probability)
becomes ``p = sigmoid(a s + b)``, with ``(a, b)`` fitted on held-out data by
minimising the (weighted) binary cross-entropy. Platt's paper replaces the
0/1 targets by the smoothed targets ``(N+ + 1) / (N+ + 2)`` and
``1 / (N- + 2)`` (a prior that keeps ``(a, b)`` finite on separable data);
scikit-learn's ``CalibratedClassifierCV(method="sigmoid")`` uses them, and so
does ``targets="platt"`` here; ``targets="hard"`` is the plain maximum
likelihood fit (logistic regression on one feature). For ``K`` classes, one
map per column is fitted against ``y == k`` and the rows are renormalised to
sum to one (one-vs-rest, as scikit-learn does).

:func:`platt_scaled_probs` is the one-call wrapper of :class:`PlattScaling`.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from calibtut._estimator import Estimator, rule
from calibtut._validation import (
    as_float_array,
    check_choice,
    check_fitted,
    check_int,
    check_labels,
    check_weights,
)

__all__ = ["PlattScaling", "platt_scaled_probs"]

_TARGETS = ("platt", "hard")


def _check_scores(scores, name, n_columns=None):
    scores = as_float_array(scores, name, ndim=(1, 2))
    if n_columns is not None and (scores.ndim == 1) != (n_columns == 0):
        want = "(n,) binary scores" if n_columns == 0 else f"(n, {n_columns}) class scores"
        raise ValueError(f"{name} must be {want} as in fit, got shape {scores.shape}")
    if scores.ndim == 2 and n_columns not in (None, 0) and scores.shape[1] != n_columns:
        raise ValueError(f"{name} must have {n_columns} columns as in fit, got shape {scores.shape}")
    if scores.ndim == 2 and scores.shape[1] < 2:
        raise ValueError(f"{name} must have at least 2 columns (n, n_classes), got shape {scores.shape}; "
                         "pass one binary score as a 1-d array")
    return scores


def _fit_logistic(s, t, w, max_iter):
    """``(a, b, loss)`` minimising ``sum_i w_i CE(t_i, sigmoid(a s_i + b))``, a convex function of ``(a, b)``.

    Newton's method with step halving (the objective never increases),
    written here rather than through ``scipy.optimize.minimize``: with two
    parameters a step is one 2 x 2 solve, and scipy's trust-region Newton
    (``trust-exact``) costs about twice scikit-learn's L-BFGS in per-call
    overhead for the same optimum. It stops when a step moves the
    parameters by less than 1e-12 (relative) or the gradient vanishes; a
    tiny ridge keeps the solve defined when all scores are equal. The start
    is ``a = 0`` and ``b`` the log-odds of the weighted mean target (Platt's).
    The scores are divided by their largest absolute value (at least 1) and
    the slope is rescaled back.
    """
    scale = max(float(np.max(np.abs(s))), 1.0)
    x = s / scale
    total = w.sum()
    mean_t = float(np.clip(w @ t / total, 1e-12, 1 - 1e-12))

    def loss(theta):
        z = theta[0] * x + theta[1]
        return float(w @ (np.logaddexp(0.0, z) - t * z))  # CE(t, sigmoid(z)) = log(1 + e^z) - t z

    theta = np.array([0.0, special.logit(mean_t)])
    current = loss(theta)
    for _ in range(max_iter):
        p = special.expit(theta[0] * x + theta[1])
        g = w * (p - t)
        v = w * p * (1 - p)
        grad = np.array([g @ x, g.sum()])
        hess = np.array([[v @ (x * x), v @ x], [v @ x, v.sum()]]) + 1e-12 * total * np.eye(2)
        if np.max(np.abs(grad)) <= 1e-14 * total:
            break
        step = np.linalg.solve(hess, grad)
        for _ in range(60):  # halve until the objective does not increase
            candidate = theta - step
            value = loss(candidate)
            if value <= current:
                break
            step = step / 2
        else:
            break
        theta, current = candidate, value
        if np.max(np.abs(step)) <= 1e-12 * (1 + np.max(np.abs(theta))):
            break
    return theta[0] / scale, theta[1], current


class PlattScaling(Estimator):
    """Platt scaling ``p = sigmoid(a s + b)`` of binary scores, or one-vs-rest over classes.

    Parameters
    ----------
    targets : {"platt", "hard"}, default "platt"
        ``"platt"``: Platt's smoothed targets ``(N+ + 1)/(N+ + 2)`` for
        positives and ``1/(N- + 2)`` for negatives (``N+``, ``N-`` the
        weighted counts), as scikit-learn's sigmoid calibration; ``"hard"``:
        the 0/1 labels (plain maximum likelihood, which diverges on
        separable data).
    max_iter : int, default 100
        Most Newton iterations per fitted map (about ten are used unless the
        data are separable and ``targets="hard"``).

    Attributes
    ----------
    coef_, intercept_ : numpy.ndarray of shape (n_maps,)
        Slopes ``a`` and intercepts ``b`` of the fitted maps (one for binary
        scores, one per class otherwise). scikit-learn stores ``-a`` and
        ``-b`` (its map is ``1 / (1 + exp(A s + B))``).
    loss_ : numpy.ndarray of shape (n_maps,)
        Weighted mean cross-entropy of each map at the fitted values.
    n_classes_ : int
        Number of classes (2 for binary scores).

    Notes
    -----
    The cross-entropy is convex in ``(a, b)``; it is minimised by Newton's
    method with step halving (two parameters: one 2 x 2 solve a step), on
    the scores divided by their largest absolute value (the slope is
    rescaled back).

    See Also
    --------
    TemperatureScaling : one temperature for all classes' logits.
    VectorScaling, MatrixScaling : multiclass affine maps of the logits.
    HistogramBinning : a non-parametric map.

    References
    ----------
    - Platt, "Probabilistic outputs for support vector machines and
      comparisons to regularized likelihood methods", Advances in Large
      Margin Classifiers, 1999.
    - Zadrozny & Elkan, "Transforming classifier scores into accurate
      multiclass probability estimates", KDD 2002 (one-vs-rest).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> s = rng.normal(size=4000)
    >>> y = (rng.random(4000) < 1 / (1 + np.exp(-(2 * s - 1)))).astype(int)
    >>> model = PlattScaling(targets="hard").fit(s, y)
    >>> np.round([model.coef_[0], model.intercept_[0]], 1)
    array([ 2., -1.])
    >>> model.predict_proba([0.5]).round(2)  # near sigmoid(2 * 0.5 - 1) = 0.5
    array([[0.49, 0.51]])
    """

    _parameter_constraints = {
        "targets": rule(check_choice, choices=_TARGETS),
        "max_iter": rule(check_int, minimum=1),
    }

    def __init__(self, *, targets="platt", max_iter=100):
        self.targets = targets
        self.max_iter = max_iter

    def fit(self, cal_logits, cal_y, *, cal_weight=None):
        """Fit one logistic map (binary scores) or one per class (class scores).

        Parameters
        ----------
        cal_logits : array_like of shape (n,) or (n, n_classes)
            Scores of the model on the calibration set: for binary problems a
            1-d array of scores of class 1 (logits, decision-function values
            or probabilities); for ``n_classes`` columns, each column is the
            score of its class (logits or probabilities).
        cal_y : array_like of int, shape (n,)
            True classes in ``0, ..., n_classes - 1`` (0 or 1 for 1-d scores).
        cal_weight : array_like of shape (n,), optional
            Non-negative weights, not all zero.

        Returns
        -------
        PlattScaling
            ``self``.
        """
        self._validate_params()
        scores = _check_scores(cal_logits, "cal_logits")
        n = scores.shape[0]
        n_classes = 2 if scores.ndim == 1 else scores.shape[1]
        labels = check_labels(cal_y, "cal_y", n_classes=n_classes, n=n)
        weights = np.ones(n) if cal_weight is None else check_weights(cal_weight, "cal_weight", n=n)
        columns = [(scores, labels == 1)] if scores.ndim == 1 else [(scores[:, k], labels == k)
                                                                    for k in range(n_classes)]
        fitted = []
        for s, positive in columns:
            if self.params_.targets == "platt":
                n_pos, n_neg = weights[positive].sum(), weights[~positive].sum()
                t = np.where(positive, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
            else:
                t = positive.astype(np.float64)
            a, b, loss = _fit_logistic(s, t, weights, self.params_.max_iter)
            fitted.append((a, b, loss / weights.sum()))
        self.coef_, self.intercept_, self.loss_ = (np.array(v) for v in zip(*fitted))
        self.n_classes_ = n_classes
        self.binary_ = scores.ndim == 1
        return self

    def predict_proba(self, test_logits):
        """Calibrated class probabilities.

        Parameters
        ----------
        test_logits : array_like of shape (m,) or (m, n_classes)
            Scores at the test inputs, of the form given to :meth:`fit`.

        Returns
        -------
        numpy.ndarray of shape (m, n_classes)
            For binary scores ``[1 - p, p]``; otherwise the one-vs-rest
            probabilities divided by their row sum.
        """
        check_fitted(self, "coef_")
        scores = _check_scores(test_logits, "test_logits", 0 if self.binary_ else self.n_classes_)
        p = special.expit(scores[:, None] * self.coef_ + self.intercept_) if self.binary_ else special.expit(
            scores * self.coef_ + self.intercept_)
        if self.binary_:
            return np.column_stack([1 - p[:, 0], p[:, 0]])
        return p / p.sum(axis=1, keepdims=True)


def platt_scaled_probs(cal_logits, cal_y, test_logits, *, cal_weight=None, targets="platt", max_iter=100):
    """Platt-scaled test probabilities in one call (:class:`PlattScaling`).

    Parameters
    ----------
    cal_logits : array_like of shape (n,) or (n, n_classes)
        Calibration scores (1-d: binary scores of class 1).
    cal_y : array_like of int, shape (n,)
        Calibration classes.
    test_logits : array_like of shape (m,) or (m, n_classes)
        Test scores of the same form.
    cal_weight : array_like of shape (n,), optional
        Non-negative calibration weights, not all zero.
    targets : {"platt", "hard"}, default "platt"
        Smoothed (Platt, scikit-learn) or 0/1 targets.
    max_iter : int, default 100
        Most Newton iterations per map.

    Returns
    -------
    numpy.ndarray of shape (m, n_classes)

    See Also
    --------
    PlattScaling : the class, with the fitted slopes and intercepts.

    References
    ----------
    Platt, "Probabilistic outputs for support vector machines", 1999.

    Examples
    --------
    >>> # two scores, each seen with both labels half of the time: p = 1/2 everywhere
    >>> platt_scaled_probs([-1.0, -1.0, 1.0, 1.0], [0, 1, 0, 1], [3.0], targets="hard").round(3)
    array([[0.5, 0.5]])
    """
    model = PlattScaling(targets=targets, max_iter=max_iter).fit(cal_logits, cal_y, cal_weight=cal_weight)
    return model.predict_proba(test_logits)
