"""Conformalized quantile regression (CQR): two-sided intervals and per-level bounds.

:class:`ConformalizedQuantileRegression` is the interval method of Romano,
Patterson & Candes (2019): with lower and upper quantile predictions
``(lo, hi)`` at levels ``alpha/2`` and ``1 - alpha/2``, the conformity score is
``E = max(lo - y, y - hi)`` and the interval ``[lo - q, hi + q]`` uses the
split conformal threshold ``q`` of the scores.

:class:`OneSidedCQR` is the variant of paper 002 (section 5.2, Algorithm 2 with
the score ``y - Q(a | x)``): every quantile level ``a`` is corrected on its own,
``Q'(a | x) = Q(a | x) + S_(ceil((N+1) a))``, where ``S_(k)`` is the ``k``-th
smallest calibration residual ``y - Q(a | x)`` among ``{S_1, ..., S_N, +inf}``.
Each corrected quantile is then a one-sided conformal bound:
``P(Y <= Q'(a | X)) = ceil((N+1) a) / (N+1)`` for continuous scores.
"""

from __future__ import annotations

import math

import numpy as np

from calibtut._numeric import conformal_rank
from calibtut._validation import as_float_array, check_alpha, check_levels, check_same_length
from calibtut.conformal.quantiles import conformal_quantile

__all__ = ["ConformalizedQuantileRegression", "OneSidedCQR"]


def _check_bounds(lower, upper, lower_name, upper_name):
    lower = as_float_array(lower, lower_name, ndim=1)
    upper = as_float_array(upper, upper_name, ndim=1)
    check_same_length(**{lower_name: lower, upper_name: upper})
    return lower, upper


class ConformalizedQuantileRegression:
    """Two-sided CQR intervals (Romano et al. 2019) over quantile predictions.

    Parameters
    ----------
    alpha : float, default 0.1
        Miscoverage level; the lower and upper inputs should be the model's
        quantiles at ``alpha / 2`` and ``1 - alpha / 2``.
    symmetric : bool, default True
        ``True``: one threshold of ``max(lo - y, y - hi)`` at ``1 - alpha``
        shifts both ends (coverage ``>= 1 - alpha``). ``False``: each end gets
        its own threshold at level ``1 - alpha / 2`` of ``lo - y`` and
        ``y - hi`` (Romano et al.'s asymmetric variant; coverage
        ``>= 1 - alpha`` by the union bound).

    Attributes
    ----------
    lower_correction_, upper_correction_ : float
        Amounts subtracted from the lower and added to the upper bound
        (negative when the model's intervals were too wide; ``inf`` when the
        calibration set is too small for ``alpha``).
    n_cal_ : int

    Examples
    --------
    >>> cqr = ConformalizedQuantileRegression(alpha=0.5)
    >>> cqr = cqr.fit([0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [0.5, 1.5, 3.0])
    >>> cqr.lower_correction_, cqr.upper_correction_
    (0.5, 0.5)
    >>> cqr.predict_interval([0.0], [2.0])
    (array([-0.5]), array([2.5]))
    """

    def __init__(self, alpha=0.1, *, symmetric=True):
        self.alpha = check_alpha(alpha)
        self.symmetric = symmetric

    def fit(self, cal_lower, cal_upper, cal_y):
        """Compute the corrections from calibration quantiles and labels.

        Parameters
        ----------
        cal_lower, cal_upper : array_like of shape (n_cal,)
            Predicted ``alpha/2`` and ``1 - alpha/2`` quantiles on the
            calibration set.
        cal_y : array_like of shape (n_cal,)
            Calibration labels.

        Returns
        -------
        ConformalizedQuantileRegression
            ``self``.
        """
        alpha = check_alpha(self.alpha)
        lower, upper = _check_bounds(cal_lower, cal_upper, "cal_lower", "cal_upper")
        y = as_float_array(cal_y, "cal_y", ndim=1)
        check_same_length(cal_lower=lower, cal_y=y)
        if not isinstance(self.symmetric, bool):
            raise TypeError(f"symmetric must be a bool, got {type(self.symmetric).__name__}")
        if self.symmetric:
            q = conformal_quantile(np.maximum(lower - y, y - upper), alpha)
            self.lower_correction_ = self.upper_correction_ = q
        else:
            self.lower_correction_ = conformal_quantile(lower - y, alpha / 2)
            self.upper_correction_ = conformal_quantile(y - upper, alpha / 2)
        self.n_cal_ = y.size
        return self

    def predict_interval(self, lower, upper):
        """Conformalized interval ``[lower - c_lo, upper + c_hi]``.

        Parameters
        ----------
        lower, upper : array_like of shape (n,)
            The model's quantile predictions at the test inputs.

        Returns
        -------
        lower, upper : numpy.ndarray of shape (n,)
        """
        if not hasattr(self, "n_cal_"):
            raise ValueError("this ConformalizedQuantileRegression is not fitted: call fit first")
        lower, upper = _check_bounds(lower, upper, "lower", "upper")
        return lower - self.lower_correction_, upper + self.upper_correction_


class OneSidedCQR:
    """Per-level conformal correction of quantile predictions (paper 002).

    Parameters
    ----------
    levels : array_like of shape (m,)
        Quantile levels of the predictions, strictly increasing in (0, 1).
    clip_rank : bool, default False
        ``False`` follows the paper's Algorithm 2: when
        ``ceil((N+1) a) = N + 1`` the correction is ``+inf``. ``True`` clamps
        the rank to ``N`` (the largest residual), as the authors' code does;
        the conformal guarantee then no longer holds at those levels.

    Attributes
    ----------
    corrections_ : numpy.ndarray of shape (m,)
        Amount added to the quantile at each level.
    n_cal_ : int

    Notes
    -----
    Levels are corrected independently, so corrected quantiles can cross
    when the residual quantiles differ much between neighbouring levels; sort
    each row if a monotone quantile function is needed.

    Examples
    --------
    >>> q_cal = [[0.0, 1.0]] * 4
    >>> cqr = OneSidedCQR([0.2, 0.6]).fit(q_cal, [0.0, 1.0, 2.0, 3.0])
    >>> cqr.corrections_
    array([0., 1.])
    >>> cqr.predict([[10.0, 11.0]])
    array([[10., 12.]])
    """

    def __init__(self, levels, *, clip_rank=False):
        self.levels = check_levels(levels)
        self.clip_rank = clip_rank

    def fit(self, cal_quantiles, cal_y):
        """Compute one correction per level from calibration residuals.

        Parameters
        ----------
        cal_quantiles : array_like of shape (n_cal, m)
            Predicted quantiles on the calibration set.
        cal_y : array_like of shape (n_cal,)

        Returns
        -------
        OneSidedCQR
            ``self``.
        """
        levels = check_levels(self.levels)
        quantiles = as_float_array(cal_quantiles, "cal_quantiles", ndim=2)
        y = as_float_array(cal_y, "cal_y", ndim=1)
        n = check_same_length(cal_quantiles=quantiles, cal_y=y)
        if quantiles.shape[1] != levels.size:
            raise ValueError(f"cal_quantiles must have {levels.size} columns (one per level), got {quantiles.shape[1]}")
        scores = np.sort(y[:, None] - quantiles, axis=0)
        ranks = np.array([conformal_rank(n, a) for a in levels])
        if self.clip_rank:
            ranks = np.minimum(ranks, n)
        padded = np.vstack([scores, np.full((1, levels.size), math.inf)])
        self.corrections_ = padded[ranks - 1, np.arange(levels.size)]
        self.n_cal_ = n
        self._levels = levels
        return self

    def predict(self, quantiles):
        """Corrected quantiles ``quantiles + corrections_``.

        Parameters
        ----------
        quantiles : array_like of shape (n, m)

        Returns
        -------
        numpy.ndarray of shape (n, m)
        """
        if not hasattr(self, "corrections_"):
            raise ValueError("this OneSidedCQR is not fitted: call fit first")
        quantiles = as_float_array(quantiles, "quantiles", ndim=2)
        if quantiles.shape[1] != self._levels.size:
            raise ValueError(
                f"quantiles must have {self._levels.size} columns (one per level), got {quantiles.shape[1]}"
            )
        return quantiles + self.corrections_
