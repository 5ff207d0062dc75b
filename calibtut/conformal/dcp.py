"""Distributional conformal prediction (DCP) and its link with quantile recalibration.

DCP (Izbicki et al. 2020; Chernozhukov, Wuthrich & Zhu 2021) uses the PIT
``Z = F(Y | X)`` of a distributional model as conformity information:

* ``score="abs"`` (Chernozhukov et al.): score ``|Z - 1/2|``, threshold ``q``
  at level ``1 - alpha``, interval ``[Q(1/2 - q | x), Q(1/2 + q | x)]``.
* ``score="equal_tailed"`` (Izbicki et al.'s Dist-split): the PIT levels of the
  two ends are one-sided conformal bounds at ``alpha / 2`` each,
  ``Z_(floor((N+1) alpha/2))`` and ``Z_(ceil((N+1)(1 - alpha/2)))``.
* :meth:`DistributionalConformalRegressor.predict_quantiles`: left intervals at every
  level (paper 002, Algorithm 2 with score ``s = F``):
  ``Q'(a | x) = Q(Z_(ceil((N+1) a)) | x)``.

Link with quantile recalibration (paper 002, Theorem 1): quantile recalibration
with the map ``phi_DCP(u) = #{Z_i <= u} / (N + 1)`` gives exactly the
quantiles of DCP left intervals at every level, because the generalized
inverse of ``phi_DCP`` is ``a -> Z_(ceil((N+1) a))``. This module implements
that statement: ``QuantileRecalibrator(method="dcp").predict_quantiles`` and
``DistributionalConformalRegressor().predict_quantiles`` return the same array, and
``phi_DCP(F(y | x)) >= a`` holds exactly when ``y >= Q'(a | x)`` (continuous
``F``). The usual EMP map ``#{Z_i <= u} / N`` picks ``Z_(ceil(N a))`` instead:
the rank differs by at most one, and its exact left-interval coverage is
``ceil(N a) / (N + 1)`` instead of the conformal ``ceil((N+1) a) / (N + 1)``.
:func:`recalibration_conformal_table` lays the two side by side; :func:`dcp_interval` is the
one-call wrapper of the intervals.
"""

from __future__ import annotations

import math

import numpy as np

from calibtut._estimator import Estimator, rule
from calibtut._numeric import RANK_DECIMALS, ceil_rank, conformal_rank
from calibtut._validation import (
    check_alpha,
    check_choice,
    check_fitted,
    check_levels,
    check_probabilities,
    check_quantile_function,
)
from calibtut.conformal.quantiles import conformal_quantile

__all__ = ["DistributionalConformalRegressor", "dcp_interval", "recalibration_conformal_table"]

_SCORES = ("abs", "equal_tailed")


class DistributionalConformalRegressor(Estimator):
    """Distributional conformal prediction from calibration PIT values.

    Parameters
    ----------
    alpha : float, default 0.1
        Miscoverage of the two-sided intervals of :meth:`predict_interval`.
    score : {"abs", "equal_tailed"}, default "abs"
        Conformity score for the intervals (see the module docstring).

    Attributes
    ----------
    pit_ : numpy.ndarray
        Sorted calibration PITs.
    lower_level_, upper_level_ : float
        PIT levels of the interval ends: the interval is
        ``[Q(lower_level_ | x), Q(upper_level_ | x)]``; 0 and 1 give infinite
        ends.
    n_cal_ : int

    See Also
    --------
    calibtut.recalibration.QuantileRecalibrator : ``method="dcp"`` gives the same quantiles.
    calibtut.conformal.ConformalizedQuantileRegressor : intervals around two predicted
        quantiles.
    dcp_interval : the one-call function.

    References
    ----------
    - Chernozhukov, Wüthrich & Zhu (2021), "Distributional conformal prediction", Proceedings of the
      National Academy of Sciences 118, e2107794118.
    - Izbicki, Shimizu & Stern (2020), "Flexible distribution-free conditional predictive bands
      using density estimators", Proceedings of the 23rd International Conference on Artificial
      Intelligence and Statistics (AISTATS), 3068-3077.
    - Dheur & Ben Taieb (2023), "A large-scale study of probabilistic calibration in neural network
      regression", Proceedings of the 40th International Conference on Machine Learning (ICML)
      (Theorem 1).

    Examples
    --------
    >>> import numpy as np
    >>> pit = np.linspace(0.05, 0.95, 19)
    >>> dcp = DistributionalConformalRegressor(alpha=0.2).fit(pit)
    >>> round(dcp.lower_level_, 2), round(dcp.upper_level_, 2)
    (0.1, 0.9)
    >>> dcp.predict_quantiles([0.5], lambda u: u[None, :])  # identity model
    array([[0.5]])
    """

    def __init__(self, *, alpha=0.1, score="abs"):
        self.alpha = alpha
        self.score = score

    _parameter_constraints = {"alpha": check_alpha, "score": rule(check_choice, choices=_SCORES)}

    def fit(self, cal_pit):
        """Store the calibration PITs and the PIT levels of the interval ends.

        Parameters
        ----------
        cal_pit : array_like of shape (n_cal,)
            PIT values ``F(y | x)`` of the calibration set (the prediction
            evaluated at the label carries both).

        Returns
        -------
        DistributionalConformalRegressor
            ``self``.
        """
        p = self._validate_params()
        alpha = p.alpha
        z = np.sort(check_probabilities(cal_pit, "cal_pit", ndim=1))
        n = z.size
        if p.score == "abs":
            q = conformal_quantile(np.abs(z - 0.5), alpha)
            self.lower_level_ = max(0.5 - q, 0.0)
            self.upper_level_ = min(0.5 + q, 1.0)
        else:
            k_low = math.floor(round((n + 1) * alpha / 2, RANK_DECIMALS))
            k_high = conformal_rank(n, 1 - alpha / 2)
            self.lower_level_ = float(z[k_low - 1]) if k_low >= 1 else 0.0
            self.upper_level_ = float(z[k_high - 1]) if k_high <= n else 1.0
        self.pit_ = z
        self.n_cal_ = n
        return self

    def predict_interval(self, quantile_function):
        """Two-sided DCP intervals at miscoverage ``alpha``.

        Parameters
        ----------
        quantile_function : callable
            Base quantile function mapping levels ``(m,)`` in [0, 1] to an
            array ``(n, m)`` (see
            :func:`calibtut.recalibration.gaussian_quantile_function`).

        Returns
        -------
        lower, upper : numpy.ndarray of shape (n,)
        """
        check_fitted(self, "pit_")
        ends = check_quantile_function(quantile_function, [self.lower_level_, self.upper_level_])
        return ends[:, 0], ends[:, 1]

    def quantile_levels(self, levels):
        """PIT thresholds ``Z_(ceil((N+1) a))`` of left intervals (``+inf`` past ``Z_(N)``).

        Parameters
        ----------
        levels : array_like of shape (m,)
            Quantile levels, strictly increasing in (0, 1).

        Returns
        -------
        numpy.ndarray of shape (m,)
        """
        check_fitted(self, "pit_")
        levels = check_levels(levels)
        ranks = np.array([conformal_rank(self.n_cal_, a) for a in levels])
        return np.append(self.pit_, np.inf)[ranks - 1]

    def predict_quantiles(self, levels, quantile_function):
        """Conformalized quantiles ``Q(Z_(ceil((N+1) a)) | x)`` (paper 002, Algorithm 2).

        ``(-inf, Q'(a | x)]`` is a left conformal interval with coverage
        ``ceil((N+1) a) / (N+1) >= a``.

        Parameters
        ----------
        levels : array_like of shape (m,)
            Quantile levels, strictly increasing in (0, 1).
        quantile_function : callable
            Base quantile function, levels ``(m,)`` to array ``(n, m)``.

        Returns
        -------
        numpy.ndarray of shape (n, m)
        """
        return check_quantile_function(quantile_function, self.quantile_levels(levels))


def dcp_interval(cal_pit, quantile_function, alpha, *, score="abs"):
    """Two-sided distributional conformal intervals in one call (:class:`DistributionalConformalRegressor`).

    Parameters
    ----------
    cal_pit : array_like of shape (n_cal,)
        PIT values ``F(y | x)`` of the calibration set, in [0, 1].
    quantile_function : callable
        Base quantile function of the test predictions, mapping levels
        ``(m,)`` in [0, 1] to an array ``(n, m)`` (see
        :func:`calibtut.recalibration.gaussian_quantile_function`).
    alpha : float
        Miscoverage level in (0, 1).
    score : {"abs", "equal_tailed"}, default "abs"
        Conformity score (see the module docstring).

    Returns
    -------
    lower, upper : numpy.ndarray of shape (n,)
        Interval bounds; infinite when an end's PIT level is 0 or 1.

    Examples
    --------
    >>> import numpy as np
    >>> lower, upper = dcp_interval(np.linspace(0.05, 0.95, 19), lambda u: u[None, :], 0.2)
    >>> lower.round(2), upper.round(2)  # identity model: the PIT levels themselves
    (array([0.1]), array([0.9]))
    """
    return DistributionalConformalRegressor(alpha=alpha, score=score).fit(cal_pit).predict_interval(quantile_function)


def recalibration_conformal_table(pit, levels):
    """EMP quantile recalibration beside DCP left intervals, level by level.

    For each level ``a`` the table gives the rank and PIT threshold that each
    method applies to the base quantile function (``Q'(a | x) = Q(threshold |
    x)``) and the exact marginal coverage ``P(Y <= Q'(a | X))`` on
    exchangeable data with continuous PITs: ``ceil(N a) / (N + 1)`` for
    EMP and ``ceil((N+1) a) / (N + 1) >= a`` for DCP (paper 002, eq. (8)
    and Theorem 1). ``threshold_dcp`` equals the inverse of the
    ``phi_DCP`` recalibration map.

    Parameters
    ----------
    pit : array_like of shape (n_cal,)
        Calibration PIT values.
    levels : array_like of shape (m,)
        Quantile levels, strictly increasing in (0, 1).

    Returns
    -------
    pandas.DataFrame
        Columns ``level``, ``rank_emp``, ``rank_dcp``, ``threshold_emp``,
        ``threshold_dcp``, ``coverage_emp``, ``coverage_dcp``.

    Examples
    --------
    >>> table = recalibration_conformal_table([0.1, 0.4, 0.6, 0.8], [0.5, 0.9])
    >>> table[["level", "rank_emp", "rank_dcp", "threshold_dcp"]].values.tolist()
    [[0.5, 2.0, 3.0, 0.6], [0.9, 4.0, 5.0, inf]]
    """
    pit = check_probabilities(pit, "pit", ndim=1)
    levels = check_levels(levels)
    z = np.append(np.sort(pit), np.inf)
    import pandas as pd  # here, not at the top: importing calibtut.conformal does not load pandas
    n = pit.size
    rank_emp = ceil_rank(n * levels)
    rank_dcp = np.array([conformal_rank(n, a) for a in levels], dtype=np.int64)
    return pd.DataFrame(
        {
            "level": levels,
            "rank_emp": rank_emp,
            "rank_dcp": rank_dcp,
            "threshold_emp": z[rank_emp - 1],
            "threshold_dcp": z[rank_dcp - 1],
            "coverage_emp": rank_emp / (n + 1),
            "coverage_dcp": rank_dcp / (n + 1),
        }
    )
