"""Vector and matrix scaling of multiclass logits (Guo et al. 2017), fitted by minimising the NLL.

* Vector scaling: ``p = softmax(w * z + b)`` with one weight and one bias per
  class (``2 K`` parameters).
* Matrix scaling: ``p = softmax(W z + b)`` with a full ``K x K`` matrix
  (``K^2 + K`` parameters), optionally with the penalty
  ``l2 * ||W - I||_F^2`` that shrinks the map towards the identity (the
  uncalibrated model), in the spirit of Kull et al.'s regularised Dirichlet
  calibration.

Both objectives are convex (the NLL of a softmax of an affine function of
the parameters); they are minimised by scipy's L-BFGS-B with the exact
gradient, started at the identity map. The parameters are identified up to a
constant added to ``b`` (and to the columns of ``W``), which changes no
probability; the fitted probabilities are unique. :func:`vector_scaled_probs`
and :func:`matrix_scaled_probs` are the one-call wrappers.

The fit runs in whitened coordinates: the logits are centred and, for matrix
scaling, decorrelated (each column scaled to unit variance for vector
scaling), and the fitted map is carried back to the raw logits. This changes
no minimiser, only the conditioning: raw scores such as log-probabilities
have column means far from zero (about -13 for the MNIST network of
Foundations 4) and strongly correlated columns, which couples ``W`` with
``b`` and left L-BFGS-B at its iteration cap on a few hundred points.
"""

from __future__ import annotations

import numpy as np
from scipy import optimize, special

from calibtut._estimator import Estimator, rule
from calibtut._validation import (
    check_fitted,
    check_int,
    check_labels,
    check_logits,
    check_n_classes,
    check_real,
    check_weights,
)

__all__ = ["MatrixScaling", "VectorScaling", "matrix_scaled_probs", "vector_scaled_probs"]


class _AffineLogitScaling(Estimator):
    """Shared fit of ``softmax(affine(z))`` by weighted NLL (+ an L2 penalty)."""

    _full = False

    def _unpack(self, theta, k):
        if self._full:
            return theta[: k * k].reshape(k, k), theta[k * k:]
        return theta[:k], theta[k:]

    def _scores(self, logits, a, b):
        return (logits @ a.T if self._full else logits * a) + b

    def _whitening(self, centred, weights):
        """A symmetric ``A`` (diagonal for vector scaling) with ``centred @ A`` of unit covariance.

        Directions of (numerically) zero variance are left unscaled, so that ``A``
        stays invertible.
        """
        cov = centred.T @ (weights[:, None] * centred)
        if self._full:
            variance, basis = np.linalg.eigh(cov)
        else:
            variance, basis = np.diag(cov), np.eye(len(cov))
        sd = np.sqrt(np.clip(variance, 0, None))
        kept = sd > 1e-8 * sd.max()
        return (basis / np.where(kept, sd, 1.0)) @ basis.T

    def _fit(self, cal_logits, cal_y, cal_weight, l2):
        logits = check_logits(cal_logits, "cal_logits")
        n, k = logits.shape
        labels = check_labels(cal_y, "cal_y", n_classes=k, n=n)
        weights = np.full(n, 1.0 / n) if cal_weight is None else check_weights(cal_weight, "cal_weight", n=n)
        weights = weights / weights.sum()
        onehot = np.eye(k)[labels]
        eye = np.eye(k)
        # scores W z + b = W' x + b' with x = (z - mu) A, W = W' A^T and b = b' - W mu
        mu = weights @ logits
        whiten = self._whitening(logits - mu, weights)
        x = (logits - mu) @ whiten

        def raw_coef(a):
            return a @ whiten.T if self._full else a * np.diag(whiten)

        def fun(theta):
            a, b = self._unpack(theta, k)
            log_p = special.log_softmax(self._scores(x, a, b), axis=1)
            g = weights[:, None] * (np.exp(log_p) - onehot)  # d loss / d scores
            loss = -float(weights @ log_p[np.arange(n), labels])
            grad_a = g.T @ x if self._full else np.sum(g * x, axis=0)
            if l2:  # matrix scaling only
                gap = raw_coef(a) - eye
                loss += l2 * float(np.sum(gap**2))
                grad_a = grad_a + 2 * l2 * gap @ whiten
            return loss, np.concatenate([grad_a.ravel(), g.sum(axis=0)])

        # the identity map W = I, b = 0 in the whitened coordinates
        start_a = np.linalg.inv(whiten).T if self._full else 1 / np.diag(whiten)
        start = np.concatenate([start_a.ravel(), mu])
        res = optimize.minimize(fun, start, jac=True, method="L-BFGS-B",
                                options={"maxiter": self.params_.max_iter, "gtol": 1e-10, "ftol": 1e-15,
                                         "maxcor": 30})
        a, b = self._unpack(res.x, k)
        coef = raw_coef(a)
        self.coef_, self.intercept_ = coef, b - self._scores(mu[None, :], coef, 0.0)[0]
        self.loss_ = float(res.fun)
        self.n_iter_ = int(res.nit)
        self.n_classes_ = k
        return self

    def predict_proba(self, test_logits):
        """Calibrated probabilities ``softmax(affine(test_logits))``.

        Parameters
        ----------
        test_logits : array_like of shape (m, n_classes)
            Pre-softmax scores of the model at the test inputs.

        Returns
        -------
        numpy.ndarray of shape (m, n_classes)
        """
        check_fitted(self, "coef_")
        logits = check_n_classes(check_logits(test_logits, "test_logits"), "test_logits", self.n_classes_)
        return special.softmax(self._scores(logits, self.coef_, self.intercept_), axis=1)


class VectorScaling(_AffineLogitScaling):
    """Vector scaling ``p = softmax(w * z + b)``: a weight and a bias per class.

    Parameters
    ----------
    max_iter : int, default 1000
        Most L-BFGS-B iterations.

    Attributes
    ----------
    coef_ : numpy.ndarray of shape (n_classes,)
        The weights ``w``.
    intercept_ : numpy.ndarray of shape (n_classes,)
        The biases ``b`` (identified up to a common constant).
    loss_ : float
        Weighted mean NLL at the fit.
    n_iter_ : int
        L-BFGS-B iterations used.

    See Also
    --------
    TemperatureScaling : one weight ``1 / T`` for all classes, no bias.
    MatrixScaling : a full matrix.

    References
    ----------
    Guo, Pleiss, Sun & Weinberger, "On calibration of modern neural
    networks", ICML 2017, Sec. 4.2.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.special import softmax
    >>> rng = np.random.default_rng(0)
    >>> z = 2 * rng.normal(size=(5000, 3))
    >>> p = softmax(z * [0.5, 1.0, 1.5] + [0.0, 0.5, -0.5], axis=1)
    >>> y = (rng.random((5000, 1)) > p.cumsum(1)).sum(1)
    >>> model = VectorScaling().fit(z, y)
    >>> np.round(model.coef_, 1)
    array([0.5, 1. , 1.5])
    >>> model.predict_proba(z[:2]).sum(axis=1).round(6)
    array([1., 1.])
    """

    _parameter_constraints = {
        "max_iter": rule(check_int, minimum=1),
    }

    def __init__(self, *, max_iter=1000):
        self.max_iter = max_iter

    def fit(self, cal_logits, cal_y, *, cal_weight=None):
        """Fit ``w`` and ``b`` by minimising the weighted mean NLL.

        Parameters
        ----------
        cal_logits : array_like of shape (n, n_classes)
            Pre-softmax scores of the model on the calibration set.
        cal_y : array_like of int, shape (n,)
            True classes in ``0, ..., n_classes - 1``.
        cal_weight : array_like of shape (n,), optional
            Non-negative weights, not all zero.

        Returns
        -------
        VectorScaling
            ``self``.
        """
        self._validate_params()
        return self._fit(cal_logits, cal_y, cal_weight, 0.0)


class MatrixScaling(_AffineLogitScaling):
    """Matrix scaling ``p = softmax(W z + b)``, optionally shrunk towards the identity.

    Parameters
    ----------
    l2 : float, default 0.0
        Weight of the penalty ``l2 * ||W - I||_F^2`` added to the mean NLL
        (0: the unpenalised fit of Guo et al.; large: the identity map).
    max_iter : int, default 1000
        Most L-BFGS-B iterations.

    Attributes
    ----------
    coef_ : numpy.ndarray of shape (n_classes, n_classes)
        The matrix ``W``.
    intercept_ : numpy.ndarray of shape (n_classes,)
        The biases ``b``.
    loss_ : float
        Penalised objective at the fit.
    n_iter_ : int
        L-BFGS-B iterations used.

    See Also
    --------
    VectorScaling : the diagonal special case.
    TemperatureScaling : one temperature.

    References
    ----------
    - Guo, Pleiss, Sun & Weinberger, "On calibration of modern neural
      networks", ICML 2017.
    - Kull, Perello-Nieto, Kängsepp, Silva Filho, Song & Flach, "Beyond
      temperature scaling: obtaining well-calibrated multiclass
      probabilities with Dirichlet calibration", NeurIPS 2019 (regularised
      matrix maps).

    Examples
    --------
    >>> import numpy as np
    >>> z = np.array([[2.0, 0.0], [2.0, 0.0], [0.0, 2.0], [0.0, 2.0]])
    >>> model = MatrixScaling(l2=1e6).fit(z, [0, 1, 1, 1])
    >>> bool(np.allclose(model.coef_, np.eye(2), atol=1e-3))  # a huge penalty keeps W at I
    True
    """

    _full = True

    _parameter_constraints = {
        "l2": rule(check_real, low=0),
        "max_iter": rule(check_int, minimum=1),
    }

    def __init__(self, *, l2=0.0, max_iter=1000):
        self.l2 = l2
        self.max_iter = max_iter

    def fit(self, cal_logits, cal_y, *, cal_weight=None):
        """Fit ``W`` and ``b`` by minimising the weighted mean NLL plus the penalty.

        Parameters
        ----------
        cal_logits : array_like of shape (n, n_classes)
            Pre-softmax scores of the model on the calibration set.
        cal_y : array_like of int, shape (n,)
            True classes in ``0, ..., n_classes - 1``.
        cal_weight : array_like of shape (n,), optional
            Non-negative weights, not all zero.

        Returns
        -------
        MatrixScaling
            ``self``.
        """
        self._validate_params()
        return self._fit(cal_logits, cal_y, cal_weight, self.params_.l2)


def vector_scaled_probs(cal_logits, cal_y, test_logits, *, cal_weight=None, max_iter=1000):
    """Vector-scaled test probabilities in one call (:class:`VectorScaling`).

    Parameters
    ----------
    cal_logits : array_like of shape (n, n_classes)
        Calibration logits.
    cal_y : array_like of int, shape (n,)
        Calibration classes.
    test_logits : array_like of shape (m, n_classes)
        Test logits.
    cal_weight : array_like of shape (n,), optional
        Non-negative calibration weights, not all zero.
    max_iter : int, default 1000
        Most L-BFGS-B iterations.

    Returns
    -------
    numpy.ndarray of shape (m, n_classes)

    See Also
    --------
    VectorScaling : the class.

    References
    ----------
    Guo et al., ICML 2017.

    Examples
    --------
    >>> z = [[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]]
    >>> vector_scaled_probs(z, [0, 1, 0, 1], [[1.0, 0.0]]).round(3)  # labels independent of z
    array([[0.5, 0.5]])
    """
    return VectorScaling(max_iter=max_iter).fit(cal_logits, cal_y, cal_weight=cal_weight).predict_proba(
        test_logits)


def matrix_scaled_probs(cal_logits, cal_y, test_logits, *, cal_weight=None, l2=0.0, max_iter=1000):
    """Matrix-scaled test probabilities in one call (:class:`MatrixScaling`).

    Parameters
    ----------
    cal_logits : array_like of shape (n, n_classes)
        Calibration logits.
    cal_y : array_like of int, shape (n,)
        Calibration classes.
    test_logits : array_like of shape (m, n_classes)
        Test logits.
    cal_weight : array_like of shape (n,), optional
        Non-negative calibration weights, not all zero.
    l2 : float, default 0.0
        Weight of the penalty ``||W - I||_F^2``.
    max_iter : int, default 1000
        Most L-BFGS-B iterations.

    Returns
    -------
    numpy.ndarray of shape (m, n_classes)

    See Also
    --------
    MatrixScaling : the class.

    References
    ----------
    Guo et al., ICML 2017.

    Examples
    --------
    >>> z = [[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]]
    >>> matrix_scaled_probs(z, [0, 1, 0, 1], [[1.0, 0.0]]).round(3)  # labels independent of z
    array([[0.5, 0.5]])
    """
    model = MatrixScaling(l2=l2, max_iter=max_iter)
    return model.fit(cal_logits, cal_y, cal_weight=cal_weight).predict_proba(test_logits)
