"""Split conformal regression intervals, plain and weighted under covariate shift."""

from __future__ import annotations

import numpy as np

from calibtut._validation import (
    as_float_array,
    check_alpha,
    check_positive,
    check_same_length,
)
from calibtut.conformal.quantiles import _check_weights, conformal_quantile, weighted_conformal_quantile

__all__ = ["split_conformal_interval", "SplitConformalRegressor", "weighted_conformal_interval"]

def _check_scale(scale, name, n):
    if scale is None:
        return None
    scale = check_positive(scale, name, ndim=1)
    if scale.size != n:
        raise ValueError(f"{name} must have one entry per prediction ({n}), got {scale.size}")
    return scale


def split_conformal_interval(cal_pred, cal_y, test_pred, alpha, *, cal_scale=None, test_scale=None):
    """Split conformal interval from absolute residuals of any point predictor.

    The conformity score is ``|y - y_hat|`` (or ``|y - y_hat| / scale`` when
    scales are given: normalized conformal regression), its conformal
    threshold ``q`` is computed on the calibration set and the interval is
    ``y_hat -/+ q`` (times ``scale``).

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
    model = SplitConformalRegressor(alpha=alpha).fit(cal_pred, cal_y, cal_scale=cal_scale)
    return model.predict_interval(test_pred, test_scale=test_scale)


class SplitConformalRegressor:
    """Split conformal intervals over a point predictor's predictions.

    Numpy in, numpy out: the model itself is never called; pass its
    predictions on the calibration set (with the labels) to :meth:`fit`, and
    its predictions at test inputs to :meth:`predict_interval`.

    Parameters
    ----------
    alpha : float, default 0.1
        Miscoverage level in (0, 1); the intervals have marginal coverage
        ``ceil((n+1)(1-alpha)) / (n+1) >= 1 - alpha`` on exchangeable data.

    Attributes
    ----------
    quantile_ : float
        Conformal threshold of the (possibly normalized) absolute residuals.
    n_cal_ : int
        Number of calibration points.
    normalized_ : bool
        Whether scales were used.

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
    """

    def __init__(self, alpha=0.1):
        self.alpha = check_alpha(alpha)

    def fit(self, cal_pred, cal_y, *, cal_scale=None):
        """Compute the conformal threshold from calibration residuals.

        Parameters
        ----------
        cal_pred, cal_y : array_like of shape (n_cal,)
            Predictions and labels on the calibration set.
        cal_scale : array_like of shape (n_cal,), optional
            Positive scales dividing the residuals.

        Returns
        -------
        SplitConformalRegressor
            ``self``.
        """
        alpha = check_alpha(self.alpha)
        cal_pred = as_float_array(cal_pred, "cal_pred", ndim=1)
        cal_y = as_float_array(cal_y, "cal_y", ndim=1)
        n = check_same_length(cal_pred=cal_pred, cal_y=cal_y)
        scale = _check_scale(cal_scale, "cal_scale", n)
        scores = np.abs(cal_y - cal_pred)
        if scale is not None:
            scores = scores / scale
        self.quantile_ = conformal_quantile(scores, alpha)
        self.n_cal_ = n
        self.normalized_ = scale is not None
        return self

    def predict_interval(self, test_pred, *, test_scale=None):
        """Intervals ``test_pred -/+ quantile_`` (times ``test_scale``).

        Parameters
        ----------
        test_pred : array_like of shape (n_test,)
            Point predictions at the test inputs.
        test_scale : array_like of shape (n_test,), optional
            Required exactly when ``fit`` received ``cal_scale``.

        Returns
        -------
        lower, upper : numpy.ndarray of shape (n_test,)
        """
        if not hasattr(self, "quantile_"):
            raise ValueError("this SplitConformalRegressor is not fitted: call fit first")
        test_pred = as_float_array(test_pred, "test_pred", ndim=1)
        scale = _check_scale(test_scale, "test_scale", test_pred.size)
        if self.normalized_ and scale is None:
            raise ValueError("test_scale is required: the model was fitted with cal_scale")
        if not self.normalized_ and scale is not None:
            raise ValueError("test_scale was given but the model was fitted without cal_scale")
        width = np.full(test_pred.shape, self.quantile_) if scale is None else self.quantile_ * scale
        return test_pred - width, test_pred + width


def weighted_conformal_interval(
    cal_pred, cal_y, cal_weights, test_pred, test_weights, alpha, *, cal_scale=None, test_scale=None
):
    """Weighted split conformal intervals from absolute residuals, under covariate shift.

    The score is ``|y - y_hat|`` (divided by ``scale`` when scales are
    given); each test point gets its own threshold ``q(x)`` from
    :func:`weighted_conformal_quantile` and the interval ``y_hat -/+ q(x)``
    (times its scale). Infinite bounds mean the weighted calibration mass
    cannot reach ``1 - alpha`` for that point.

    Parameters
    ----------
    cal_pred, cal_y : array_like of shape (n,)
    cal_weights : array_like of shape (n,)
    test_pred : array_like of shape (m,)
    test_weights : array_like of shape (m,)
    alpha : float
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
    cal_pred = as_float_array(cal_pred, "cal_pred", ndim=1)
    cal_y = as_float_array(cal_y, "cal_y", ndim=1)
    n = check_same_length(cal_pred=cal_pred, cal_y=cal_y)
    test_pred = as_float_array(test_pred, "test_pred", ndim=1)
    test_weights = _check_weights(test_weights, "test_weights", test_pred.size)
    if (cal_scale is None) != (test_scale is None):
        raise ValueError("give both cal_scale and test_scale or neither")
    scores = np.abs(cal_y - cal_pred)
    width_scale = 1.0
    if cal_scale is not None:
        scores = scores / _check_scale(cal_scale, "cal_scale", n)
        width_scale = _check_scale(test_scale, "test_scale", test_pred.size)
    width = weighted_conformal_quantile(scores, cal_weights, test_weights, alpha) * width_scale
    return test_pred - width, test_pred + width
