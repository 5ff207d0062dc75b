"""Split conformal regression intervals, plain and weighted under covariate shift.

:class:`SplitConformalRegressor` holds the method; :func:`split_conformal_interval`
and :func:`weighted_conformal_interval` are its one-call wrappers.
"""

from __future__ import annotations

import numpy as np

from calibtut._estimator import Estimator
from calibtut._validation import (
    as_float_array,
    check_alpha,
    check_fitted,
    check_positive,
    check_same_length,
    check_weights,
)
from calibtut.conformal.quantiles import _test_weights, conformal_quantile, weighted_conformal_quantile

__all__ = ["SplitConformalRegressor", "split_conformal_interval", "weighted_conformal_interval"]


def _check_scale(scale, name, n):
    if scale is None:
        return None
    scale = check_positive(scale, name, ndim=1)
    if scale.size != n:
        raise ValueError(f"{name} must have one entry per prediction ({n}), got {scale.size}")
    return scale


def _wrapper_scale(scale, name):
    """The one-call functions' scales, checked under their own name before the class sees them."""
    return None if scale is None else check_positive(scale, name, ndim=1)


class SplitConformalRegressor(Estimator):
    """Split conformal intervals over a point predictor's predictions, plain or weighted.

    Numpy in, numpy out: the model itself is never called; pass its
    predictions on the calibration set (with the labels) to :meth:`fit`, and
    its predictions at test inputs to :meth:`predict_interval`. The
    conformity score is ``|y - y_hat|``, or ``|y - y_hat| / scale`` when
    scales are given (normalized conformal regression); the interval is
    ``y_hat -/+ q`` (times ``scale``) with ``q`` the conformal threshold of
    the calibration scores.

    With ``cal_weight`` (likelihood ratios ``q/p`` of the calibration
    points under covariate shift) each test point gets its own threshold
    ``q(x)`` from :func:`calibtut.conformal.weighted_conformal_quantile`, with
    its own weight (Tibshirani et al. 2019); infinite bounds mean the
    weighted calibration mass cannot reach ``1 - alpha`` for that point.

    Parameters
    ----------
    alpha : float, default 0.1
        Miscoverage level in (0, 1); the plain intervals have marginal coverage
        ``ceil((n+1)(1-alpha)) / (n+1) >= 1 - alpha`` on exchangeable data.

    Attributes
    ----------
    scores_ : numpy.ndarray of shape (n_cal,)
        Calibration scores (absolute residuals, divided by the scales if given).
    quantile_ : float or None
        Conformal threshold of the scores (``inf`` when
        ``alpha < 1 / (n_cal + 1)``); None for a weighted fit, whose
        threshold depends on each test point's weight.
    cal_weight_ : numpy.ndarray of shape (n_cal,) or None
        Calibration weights of a weighted fit.
    n_cal_ : int
        Number of calibration points.
    normalized_ : bool
        Whether scales were used.

    See Also
    --------
    calibtut.conformal.CrossConformalRegressor : jackknife+ and CV+, which refit the model.
    calibtut.conformal.ConformalizedQuantileRegressor : intervals around predicted quantiles.
    split_conformal_interval, weighted_conformal_interval : the one-call functions.

    References
    ----------
    - Vovk, Gammerman & Shafer (2005), *Algorithmic Learning in a Random World*, Springer.
    - Tibshirani, Barber, Candès & Ramdas (2019), "Conformal prediction under covariate shift",
      Advances in Neural Information Processing Systems 32 (the weighted intervals).
    - Angelopoulos & Bates (2021), "A gentle introduction to conformal prediction and
      distribution-free uncertainty quantification", arXiv:2107.07511.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y_cal = rng.normal(size=999)
    >>> model = SplitConformalRegressor(alpha=0.1).fit(np.zeros(999), y_cal)
    >>> round(model.quantile_, 2)
    1.56
    >>> lo, hi = model.predict_interval(np.array([0.0, 5.0]))
    >>> np.round(hi - lo, 2)
    array([3.11, 3.11])
    >>> weighted = SplitConformalRegressor(alpha=0.4).fit([0.0] * 4, [1.0, -2.0, 3.0, 0.5],
    ...                                                   cal_weight=[1, 1, 1, 3])
    >>> weighted.predict_interval([10.0, 10.0], test_weight=[0.5, 8.0])
    (array([  9., -inf]), array([11., inf]))
    """

    _parameter_constraints = {"alpha": check_alpha}

    def __init__(self, *, alpha=0.1):
        self.alpha = alpha

    def fit(self, cal_pred, cal_y, *, scale=None, cal_weight=None):
        """Compute the calibration scores and, unweighted, their conformal threshold.

        Parameters
        ----------
        cal_pred, cal_y : array_like of shape (n_cal,)
            Predictions and labels on the calibration set.
        scale : array_like of shape (n_cal,), optional
            Positive difficulty estimates (e.g. predicted standard deviations)
            dividing the residuals; :meth:`predict_interval` then needs the
            test points' scales.
        cal_weight : array_like of shape (n_cal,), optional
            Non-negative likelihood ratios of the calibration points, not all
            zero; :meth:`predict_interval` then needs the test points' weights.

        Returns
        -------
        SplitConformalRegressor
            ``self``.
        """
        p = self._validate_params()
        cal_pred = as_float_array(cal_pred, "cal_pred", ndim=1)
        cal_y = as_float_array(cal_y, "cal_y", ndim=1)
        n = check_same_length(cal_pred=cal_pred, cal_y=cal_y)
        scale = _check_scale(scale, "scale", n)
        if cal_weight is not None:
            cal_weight = check_weights(cal_weight, "cal_weight", n=n)
        scores = np.abs(cal_y - cal_pred)
        if scale is not None:
            scores = scores / scale
        self.scores_ = scores
        self.quantile_ = None if cal_weight is not None else conformal_quantile(scores, p.alpha)
        self.cal_weight_ = cal_weight
        self.n_cal_ = n
        self.normalized_ = scale is not None
        return self

    def predict_interval(self, test_pred, *, scale=None, test_weight=None):
        """Intervals ``test_pred -/+ q`` (times ``scale``).

        Parameters
        ----------
        test_pred : array_like of shape (n_test,)
            Point predictions at the test inputs.
        scale : array_like of shape (n_test,), optional
            Required exactly when :meth:`fit` received ``scale``.
        test_weight : float or array_like of shape (n_test,), optional
            Required exactly when :meth:`fit` received ``cal_weight``: the
            non-negative weights of the test points, on the same scale.

        Returns
        -------
        lower, upper : numpy.ndarray of shape (n_test,)
        """
        check_fitted(self, "scores_")
        test_pred = as_float_array(test_pred, "test_pred", ndim=1)
        scale = _check_scale(scale, "scale", test_pred.size)
        if self.normalized_ and scale is None:
            raise ValueError("scale is required: the model was fitted with scales")
        if not self.normalized_ and scale is not None:
            raise ValueError("scale was given but the model was fitted without scales")
        if self.cal_weight_ is None:
            if test_weight is not None:
                raise ValueError("test_weight was given but the model was fitted without calibration weights")
            width = self.quantile_  # a scalar, broadcast below
        else:
            if test_weight is None:
                raise ValueError("test_weight is required: the model was fitted with calibration weights")
            weights = _test_weights(test_weight, "test_weight", test_pred.size)
            width = weighted_conformal_quantile(self.scores_, self.cal_weight_, weights, self.params_.alpha)
        if scale is not None:
            width = width * scale
        return test_pred - width, test_pred + width


def split_conformal_interval(cal_pred, cal_y, test_pred, alpha, *, cal_scale=None, test_scale=None):
    """Split conformal interval from absolute residuals of any point predictor (:class:`SplitConformalRegressor`).

    Parameters
    ----------
    cal_pred, cal_y : array_like of shape (n_cal,)
        Point predictions and labels of the calibration set.
    test_pred : array_like of shape (n_test,)
        Point predictions at the test inputs.
    alpha : float
        Miscoverage level in (0, 1).
    cal_scale, test_scale : array_like, optional
        Positive difficulty estimates (e.g. predicted standard deviations);
        give both or neither.

    Returns
    -------
    lower, upper : numpy.ndarray of shape (n_test,)
        Interval bounds; infinite when ``alpha < 1 / (n_cal + 1)``.

    Examples
    --------
    >>> lo, hi = split_conformal_interval([0.0, 0.0, 0.0, 0.0], [1.0, -2.0, 3.0, 0.5],
    ...                                   [10.0], alpha=0.4)
    >>> float(lo[0]), float(hi[0])
    (8.0, 12.0)
    """
    model = SplitConformalRegressor(alpha=alpha).fit(cal_pred, cal_y, scale=_wrapper_scale(cal_scale, "cal_scale"))
    return model.predict_interval(test_pred, scale=_wrapper_scale(test_scale, "test_scale"))


def weighted_conformal_interval(
    cal_pred, cal_y, cal_weight, test_pred, test_weight, alpha, *, cal_scale=None, test_scale=None
):
    """Weighted split conformal intervals under covariate shift (:class:`SplitConformalRegressor`).

    Parameters
    ----------
    cal_pred, cal_y : array_like of shape (n,)
        Point predictions and labels of the calibration set.
    cal_weight : array_like of shape (n,)
        Non-negative likelihood ratios of the calibration points, not all zero.
    test_pred : array_like of shape (m,)
        Point predictions at the test inputs.
    test_weight : array_like of shape (m,)
        Non-negative weights of the test points, on the same scale.
    alpha : float
        Miscoverage level in (0, 1).
    cal_scale, test_scale : array_like, optional
        Positive scales; give both or neither.

    Returns
    -------
    lower, upper : numpy.ndarray of shape (m,)

    Examples
    --------
    >>> lo, hi = weighted_conformal_interval([0.0] * 4, [1.0, -2.0, 3.0, 0.5], [1, 1, 1, 1],
    ...                                      [10.0], [1.0], alpha=0.4)
    >>> float(lo[0]), float(hi[0])
    (8.0, 12.0)
    """
    model = SplitConformalRegressor(alpha=alpha).fit(cal_pred, cal_y, scale=_wrapper_scale(cal_scale, "cal_scale"),
                                                     cal_weight=check_weights(cal_weight, "cal_weight"))
    return model.predict_interval(test_pred, scale=_wrapper_scale(test_scale, "test_scale"),
                                  test_weight=_test_weights(test_weight, "test_weight"))
