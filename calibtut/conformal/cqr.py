"""Conformalized quantile regression (CQR): two-sided intervals and per-level bounds.

:class:`ConformalizedQuantileRegressor` is the interval method of Romano,
Patterson & Candes (2019): with lower and upper quantile predictions
``(lo, hi)`` at levels ``alpha/2`` and ``1 - alpha/2``, the conformity score is
``E = max(lo - y, y - hi)`` and the interval ``[lo - q, hi + q]`` uses the
split conformal threshold ``q`` of the scores.

:class:`OneSidedConformalRegressor` is the variant of paper 002 (section 5.2, Algorithm 2 with
the score ``y - Q(a | x)``): every quantile level ``a`` is corrected on its own,
``Q'(a | x) = Q(a | x) + S_(ceil((N+1) a))``, where ``S_(k)`` is the ``k``-th
smallest calibration residual ``y - Q(a | x)`` among ``{S_1, ..., S_N, +inf}``.
Each corrected quantile is then a one-sided conformal bound:
``P(Y <= Q'(a | X)) = ceil((N+1) a) / (N+1)`` for continuous scores.

:func:`cqr_interval` and :func:`one_sided_cqr_quantiles` are their one-call wrappers.
"""

from __future__ import annotations

import math

import numpy as np

from calibtut._estimator import Estimator, rule
from calibtut._numeric import conformal_rank
from calibtut._validation import as_float_array, check_alpha, check_bool, check_fitted, check_levels, check_same_length
from calibtut.conformal.quantiles import conformal_quantile

__all__ = ["ConformalizedQuantileRegressor", "OneSidedConformalRegressor", "cqr_interval", "one_sided_cqr_quantiles"]


def _check_quantiles(quantiles, name, n_levels):
    quantiles = as_float_array(quantiles, name, ndim=2)
    if quantiles.shape[1] != n_levels:
        raise ValueError(f"{name} must have {n_levels} columns (one per level), got {quantiles.shape[1]}")
    return quantiles


class ConformalizedQuantileRegressor(Estimator):
    """Two-sided CQR intervals (Romano et al. 2019) over quantile predictions.

    Numpy in, numpy out: pass the model's lower and upper quantile
    predictions as the two columns of one ``(n, 2)`` array, the quantile
    representation of the whole package.

    Parameters
    ----------
    alpha : float, default 0.1
        Miscoverage level; the two columns should be the model's quantiles at
        ``alpha / 2`` and ``1 - alpha / 2``.
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

    See Also
    --------
    OneSidedConformalRegressor : one correction per quantile level.
    calibtut.conformal.DistributionalConformalRegressor : intervals from the PIT of a
        distributional model.
    cqr_interval : the one-call function.

    References
    ----------
    - Romano, Patterson & Candès (2019), "Conformalized quantile regression", Advances in Neural
      Information Processing Systems 32.

    Examples
    --------
    >>> cqr = ConformalizedQuantileRegressor(alpha=0.5)
    >>> cqr = cqr.fit([[0.0, 1.0], [0.0, 1.0], [0.0, 1.0]], [0.5, 1.5, 3.0])
    >>> cqr.lower_correction_, cqr.upper_correction_
    (0.5, 0.5)
    >>> cqr.predict_interval([[0.0, 2.0]])
    (array([-0.5]), array([2.5]))
    """

    _parameter_constraints = {"alpha": check_alpha, "symmetric": check_bool}

    def __init__(self, *, alpha=0.1, symmetric=True):
        self.alpha = alpha
        self.symmetric = symmetric

    def fit(self, cal_quantiles, cal_y):
        """Compute the corrections from calibration quantiles and labels.

        Parameters
        ----------
        cal_quantiles : array_like of shape (n_cal, 2)
            Predicted ``alpha/2`` and ``1 - alpha/2`` quantiles (lower, upper)
            on the calibration set.
        cal_y : array_like of shape (n_cal,)
            Calibration labels.

        Returns
        -------
        ConformalizedQuantileRegressor
            ``self``.
        """
        p = self._validate_params()
        quantiles = _check_quantiles(cal_quantiles, "cal_quantiles", 2)
        y = as_float_array(cal_y, "cal_y", ndim=1)
        check_same_length(cal_quantiles=quantiles, cal_y=y)
        lower, upper = quantiles[:, 0], quantiles[:, 1]
        if p.symmetric:
            q = conformal_quantile(np.maximum(lower - y, y - upper), p.alpha)
            self.lower_correction_ = self.upper_correction_ = q
        else:
            self.lower_correction_ = conformal_quantile(lower - y, p.alpha / 2)
            self.upper_correction_ = conformal_quantile(y - upper, p.alpha / 2)
        self.n_cal_ = y.size
        return self

    def predict_interval(self, test_quantiles):
        """Conformalized interval ``[lower - c_lo, upper + c_hi]``.

        Parameters
        ----------
        test_quantiles : array_like of shape (n, 2)
            The model's lower and upper quantile predictions at the test inputs.

        Returns
        -------
        lower, upper : numpy.ndarray of shape (n,)
        """
        check_fitted(self, "n_cal_")
        quantiles = _check_quantiles(test_quantiles, "test_quantiles", 2)
        return quantiles[:, 0] - self.lower_correction_, quantiles[:, 1] + self.upper_correction_


class OneSidedConformalRegressor(Estimator):
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

    See Also
    --------
    ConformalizedQuantileRegressor : the two-sided interval.
    calibtut.conformal.DistributionalConformalRegressor : the same left intervals on the PIT
        scale.
    one_sided_cqr_quantiles : the one-call function.

    Notes
    -----
    Levels are corrected independently, so corrected quantiles can cross
    when the residual quantiles differ much between neighbouring levels; sort
    each row if a monotone quantile function is needed.

    References
    ----------
    - Dheur & Ben Taieb (2023), "A large-scale study of probabilistic calibration in neural network
      regression", Proceedings of the 40th International Conference on Machine Learning (ICML)
      (Algorithm 2).
    - Romano, Patterson & Candès (2019), "Conformalized quantile regression", Advances in Neural
      Information Processing Systems 32.

    Examples
    --------
    >>> q_cal = [[0.0, 1.0]] * 4
    >>> cqr = OneSidedConformalRegressor(levels=[0.2, 0.6]).fit(q_cal, [0.0, 1.0, 2.0, 3.0])
    >>> cqr.corrections_
    array([0., 1.])
    >>> cqr.predict_quantiles([0.2, 0.6], [[10.0, 11.0]])
    array([[10., 12.]])
    >>> cqr.predict_quantiles([0.6], [[10.0, 11.0]])  # a subset of the fitted levels
    array([[12.]])
    """

    _parameter_constraints = {"levels": check_levels, "clip_rank": check_bool}

    def __init__(self, *, levels, clip_rank=False):
        self.levels = levels
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
        OneSidedConformalRegressor
            ``self``.
        """
        p = self._validate_params()
        levels = p.levels
        quantiles = _check_quantiles(cal_quantiles, "cal_quantiles", levels.size)
        y = as_float_array(cal_y, "cal_y", ndim=1)
        n = check_same_length(cal_quantiles=quantiles, cal_y=y)
        scores = np.sort(y[:, None] - quantiles, axis=0)
        ranks = np.array([conformal_rank(n, a) for a in levels])
        if p.clip_rank:
            ranks = np.minimum(ranks, n)
        padded = np.vstack([scores, np.full((1, levels.size), math.inf)])
        self.corrections_ = padded[ranks - 1, np.arange(levels.size)]
        self.n_cal_ = n
        return self

    def predict_quantiles(self, levels, test_quantiles):
        """Corrected quantiles ``test_quantiles + corrections_`` at ``levels``.

        Parameters
        ----------
        levels : array_like of shape (k,)
            Levels to return, strictly increasing, each one of the fitted
            ``levels`` (all of them, or a subset).
        test_quantiles : array_like of shape (n, m)
            The model's quantiles at the fitted ``levels`` for the test inputs.

        Returns
        -------
        numpy.ndarray of shape (n, k)
        """
        check_fitted(self, "corrections_")
        fitted = self.params_.levels
        levels = check_levels(levels)
        column = np.minimum(np.searchsorted(fitted, levels), fitted.size - 1)
        unknown = ~np.isclose(fitted[column], levels, rtol=0, atol=1e-12)
        if np.any(unknown):
            raise ValueError(f"levels must be among the fitted levels {fitted.tolist()}, got "
                             f"{levels[unknown].tolist()}")
        quantiles = _check_quantiles(test_quantiles, "test_quantiles", fitted.size)
        return quantiles[:, column] + self.corrections_[column]


def cqr_interval(cal_quantiles, cal_y, test_quantiles, alpha, *, symmetric=True):
    """Conformalized quantile regression intervals in one call (:class:`ConformalizedQuantileRegressor`).

    Parameters
    ----------
    cal_quantiles : array_like of shape (n_cal, 2)
        The model's ``alpha/2`` and ``1 - alpha/2`` quantiles (lower, upper)
        on the calibration set.
    cal_y : array_like of shape (n_cal,)
        Calibration labels.
    test_quantiles : array_like of shape (n, 2)
        The model's lower and upper quantiles at the test inputs.
    alpha : float
        Miscoverage level in (0, 1).
    symmetric : bool, default True
        One threshold of ``max(lo - y, y - hi)`` for both ends, or one
        threshold per end at ``1 - alpha / 2`` (``False``).

    Returns
    -------
    lower, upper : numpy.ndarray of shape (n,)
        Interval bounds; infinite when the calibration set is too small for
        ``alpha``.

    Examples
    --------
    >>> cqr_interval([[0.0, 1.0]] * 3, [0.5, 1.5, 3.0], [[0.0, 2.0]], 0.5)
    (array([-0.5]), array([2.5]))
    """
    model = ConformalizedQuantileRegressor(alpha=alpha, symmetric=symmetric).fit(cal_quantiles, cal_y)
    return model.predict_interval(test_quantiles)


def one_sided_cqr_quantiles(cal_quantiles, cal_y, test_quantiles, levels, *, clip_rank=False):
    """Quantiles corrected level by level (paper 002) in one call (:class:`OneSidedConformalRegressor`).

    Parameters
    ----------
    cal_quantiles : array_like of shape (n_cal, m)
        The model's quantiles at ``levels`` on the calibration set.
    cal_y : array_like of shape (n_cal,)
        Calibration labels.
    test_quantiles : array_like of shape (n, m)
        The model's quantiles at ``levels`` for the test inputs.
    levels : array_like of shape (m,)
        Quantile levels, strictly increasing in (0, 1).
    clip_rank : bool, default False
        Clamp the rank to ``N`` (the authors' code) instead of an infinite
        correction when ``ceil((N+1) a) = N + 1``.

    Returns
    -------
    numpy.ndarray of shape (n, m)
        Corrected quantiles; each is a one-sided conformal bound at its level.

    Examples
    --------
    >>> one_sided_cqr_quantiles([[0.0, 1.0]] * 4, [0.0, 1.0, 2.0, 3.0], [[10.0, 11.0]], [0.2, 0.6])
    array([[10., 12.]])
    """
    model = OneSidedConformalRegressor(levels=levels, clip_rank=clip_rank).fit(cal_quantiles, cal_y)
    return model.predict_quantiles(model.params_.levels, test_quantiles)
