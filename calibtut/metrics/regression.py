"""Calibration errors, sharpness, coverage and the RMSE for regression.

PIT-based errors take the PIT values (see :mod:`calibtut.metrics.pit`);
quantile-based errors take quantile predictions ``(n, n_levels)`` and
``levels``.

References
----------
- [0] "Provably Calibrated Regression Under Distribution Drift", ICLR 2022
  submission (paper 000), section 5: calibration loss L_ece, sharpness.
- [2] Dheur & Ben Taieb, "A Large-Scale Study of Probabilistic Calibration in
  Neural Network Regression", ICML 2023 (paper 002), eq. (2): PCE_p.
- [3] Utpala & Rai, "Quantile Regularization: Towards Implicit Calibration of
  Regression Models", ICLR 2021 submission (paper 003), eq. (8).
"""

from __future__ import annotations

import numbers

import numpy as np
from scipy import integrate, stats

from calibtut._validation import (
    as_float_array,
    check_alpha,
    check_int,
    check_levels,
    check_positive,
    check_probabilities,
    check_real,
    check_same_length,
)
from calibtut.metrics.pit import check_mixture, check_quantiles

__all__ = [
    "check_pit",
    "gaussian_scale_pce",
    "pit_reliability_data",
    "pce",
    "quantile_calibration_error",
    "l2_calibration_error",
    "quantile_frequencies",
    "interval_coverage",
    "mean_interval_width",
    "quantile_sharpness",
    "sharpness",
    "mixture_std",
    "rmse",
]


def check_pit(pit):
    """Validate PIT values: a non-empty 1-d array in [0, 1].

    Examples
    --------
    >>> check_pit([0.2, 0.7]).tolist()
    [0.2, 0.7]
    """
    return check_probabilities(pit, "pit", ndim=1)


def _check_p(p):
    return check_real(p, "p", low=0, low_open=True)


def _grid(levels):
    """Evaluation levels for eq. (2) of [2]: an int M gives (j - 1/2)/M, j = 1..M."""
    if isinstance(levels, numbers.Integral) and not isinstance(levels, bool):
        m = check_int(levels, "levels", minimum=1)
        return (np.arange(1, m + 1) - 0.5) / m
    return check_levels(levels, open_interval=False)


def _ecdf(pit, grid):
    """Fraction of PIT values <= each grid point."""
    return np.searchsorted(np.sort(pit), grid, side="right") / pit.size


def pit_reliability_data(pit, levels=101, alpha=0.1):
    """Empirical CDF of the PIT on a grid, with pointwise consistency bands.

    Under probabilistic calibration, ``n * F_hat(a)`` is Binomial(n, a), so the
    band at level ``a`` is the central ``1 - alpha`` binomial interval divided
    by n (pointwise, as the 90% bands of [2], Fig. 2).

    Parameters
    ----------
    pit : array_like, shape (n,)
    levels : int or array_like, default 101
        Evaluation grid of the PIT's CDF, strictly increasing in [0, 1] (0 and
        1 allowed); an int M gives ``linspace(0, 1, M)``.
    alpha : float, default 0.1
        Miscoverage of the band.

    Returns
    -------
    pandas.DataFrame
        Columns ``level``, ``frequency``, ``band_lower``, ``band_upper``.

    Examples
    --------
    >>> df = pit_reliability_data([0.1, 0.4, 0.6, 0.9], levels=3)
    >>> df[["level", "frequency"]].values.tolist()
    [[0.0, 0.0], [0.5, 0.5], [1.0, 1.0]]
    """
    pit = check_pit(pit)
    alpha = check_alpha(alpha)
    if isinstance(levels, numbers.Integral) and not isinstance(levels, bool):
        grid = np.linspace(0.0, 1.0, check_int(levels, "levels", minimum=2))
    else:
        grid = check_levels(levels, open_interval=False)
    import pandas as pd  # here, not at the top: importing calibtut.metrics does not load pandas
    n = pit.size
    return pd.DataFrame(
        {
            "level": grid,
            "frequency": _ecdf(pit, grid),
            "band_lower": stats.binom.ppf(alpha / 2, n, grid) / n,
            "band_upper": stats.binom.ppf(1 - alpha / 2, n, grid) / n,
        }
    )


def pce(pit, p=1, levels=None):
    r"""Probabilistic calibration error :math:`\mathrm{PCE}_p` of [2].

    Two estimators of :math:`\int_0^1 |F_Z(\alpha) - \alpha|^p\,d\alpha`
    (no :math:`1/p` root, as in [2]):

    * ``levels=None`` (default): the sorted-PIT form used by the authors'
      code, :math:`\frac1n\sum_{i=1}^n |Z_{(i)} - \tfrac{i}{n+1}|^p`. For
      p = 1 it estimates the 1-Wasserstein distance to U(0, 1), equal to the
      integral above ([2], Prop. 1).
    * ``levels`` given: eq. (2) of [2],
      :math:`\frac1M\sum_{j=1}^M |\alpha_j - \hat F_Z(\alpha_j)|^p` with
      :math:`\hat F_Z` the empirical CDF of the PITs. An int M uses the
      centred grid :math:`(j - 1/2)/M`; an array is used as given (levels 0
      and 1 allowed, e.g. ``numpy.linspace(0, 1, 100)`` reproduces
      uncertainty-toolbox's mean absolute calibration error with
      ``prop_type="quantile"``).

    Parameters
    ----------
    pit : array_like, shape (n,)
        PIT values in [0, 1].
    p : float, default 1
        Exponent (paper [2] reports p = 1).
    levels : None, int or array_like

    Returns
    -------
    float

    Examples
    --------
    >>> # sorted: |.1 - 1/3| + |.9 - 2/3| = .2333 + .2333 -> mean .2333
    >>> round(pce([0.9, 0.1]), 4)
    0.2333
    >>> # grid .25, .75: F_hat = .5, .5 -> (|.25 - .5| + |.75 - .5|) / 2
    >>> round(pce([0.9, 0.1], levels=2), 4)
    0.25
    """
    pit = check_pit(pit)
    p = _check_p(p)
    if levels is None:
        n = pit.size
        return float(np.mean(np.abs(np.sort(pit) - np.arange(1, n + 1) / (n + 1)) ** p))
    grid = _grid(levels)
    return float(np.mean(np.abs(_ecdf(pit, grid) - grid) ** p))


def quantile_frequencies(y, quantiles, levels):
    """Fraction of observations at or below each predicted quantile.

    Parameters
    ----------
    y : array_like, shape (n,)
    quantiles : array_like, shape (n, n_levels)
    levels : array_like, shape (n_levels,)

    Returns
    -------
    numpy.ndarray, shape (n_levels,)
        ``mean(y <= quantiles[:, j])``; calibrated models give ``levels``.

    Examples
    --------
    >>> quantile_frequencies([0.0, 2.0], [[1.0, 3.0], [1.0, 3.0]], [0.25, 0.75]).tolist()
    [0.5, 1.0]
    """
    y, quantiles, _ = check_quantiles(y, quantiles, levels)
    return np.mean(y[:, None] <= quantiles, axis=0)


def quantile_calibration_error(y, quantiles, levels, p=1, cumulative=False, *, allow_crossing=False):
    r"""Calibration error of quantile predictions: :math:`\frac1K\sum_k |\hat F_k - \alpha_k|^p`.

    :math:`\hat F_k` is the fraction of observations at or below the
    predicted :math:`\alpha_k`-quantile. With p = 1 this is both the PCE of
    quantile models in [2] (mean over the 19 levels .05, ..., .95 in its
    code) and the calibration loss :math:`L_{ece}` of the drift paper [0],
    read as :math:`\frac1K\sum_k |F_k^T/T - \alpha_k|` with
    :math:`F_k^T = \sum_{t\le T} 1[Y_t \le Z_{kt}]` (the extracted formula is
    garbled; this reading matches its definition of b-calibration).

    Parameters
    ----------
    y : array_like, shape (n,)
        Observations, in time order when ``cumulative=True``.
    quantiles : array_like, shape (n, n_levels)
    levels : array_like, shape (n_levels,)
    p : float, default 1
    cumulative : bool, default False
        If True, return the error of the first T observations for every
        T = 1..n (the running error of an online forecaster).
    allow_crossing : bool, default False
        If True, accept rows whose quantiles cross. Each level's frequency is
        counted on its own, so the error needs no order; the regression
        study scores its per-level CQR this way, as its authors do.

    Returns
    -------
    float or numpy.ndarray of shape (n,)

    Examples
    --------
    >>> # frequencies .5 and 1 at levels .25 and .75: (.25 + .25) / 2
    >>> quantile_calibration_error([0.0, 2.0], [[1.0, 3.0], [1.0, 3.0]], [0.25, 0.75])
    0.25
    >>> # crossed quantiles are refused unless allowed; each level is then scored alone
    >>> quantile_calibration_error([0.0, 2.0], [[1.0, 0.5], [1.0, 0.5]], [0.25, 0.75], allow_crossing=True)
    0.25
    """
    if not isinstance(allow_crossing, (bool, np.bool_)):
        raise TypeError(f"allow_crossing must be True or False, got {type(allow_crossing).__name__}")
    y, quantiles, levels = check_quantiles(y, quantiles, levels, monotone=not bool(allow_crossing))
    p = _check_p(p)
    below = (y[:, None] <= quantiles).astype(np.float64)
    if not cumulative:
        return float(np.mean(np.abs(below.mean(axis=0) - levels) ** p))
    freq = np.cumsum(below, axis=0) / np.arange(1, y.size + 1)[:, None]
    return np.mean(np.abs(freq - levels) ** p, axis=1)


def l2_calibration_error(pit, n_levels=10, normalize=False):
    r"""The l2 quantile calibration error of [3] (after Kuleshov et al. 2018).

    With :math:`p_j = j/M`, :math:`j = 1..M` (equidistant in (0, 1], :math:`p_M = 1`),

    * ``normalize=False`` (default, what the authors' code reports as
      "Calibration Error (%)"): :math:`100\sum_{j=1}^{M} (\hat F_Z(p_j) - p_j)^2`;
    * ``normalize=True`` (eq. 8 of [3] as written):
      :math:`\frac1M\sum_{j=1}^{M} (\hat F_Z(p_j) - p_j)^2`, a fraction.

    The two differ by the factor 100 M (1000 for M = 10).

    Parameters
    ----------
    pit : array_like, shape (n,)
    n_levels : int, default 10
    normalize : bool, default False

    Returns
    -------
    float

    Examples
    --------
    >>> # all PITs at .05: F_hat = 1 at every p_j -> 100 * sum_j (1 - j/10)^2 = 100 * 2.85
    >>> round(l2_calibration_error([0.05, 0.05]), 6)
    285.0
    """
    pit = check_pit(pit)
    m = check_int(n_levels, "n_levels", minimum=1)
    grid = np.arange(1, m + 1) / m
    sq = (_ecdf(pit, grid) - grid) ** 2
    return float(sq.mean() if normalize else 100 * sq.sum())


def interval_coverage(y, lower, upper):
    """Fraction of observations inside their closed prediction interval [lower, upper].

    Parameters
    ----------
    y, lower, upper : array_like, shape (n,)
        ``lower <= upper`` elementwise; infinite bounds are allowed.

    Returns
    -------
    float

    Examples
    --------
    >>> interval_coverage([0.0, 1.0, 5.0, 0.5], [-1, -1, -1, -1], [1, 1, 1, 1])
    0.75
    """
    y = as_float_array(y, "y", ndim=1)
    lower, upper = _check_bounds(lower, upper)
    check_same_length(y=y, lower=lower, upper=upper)
    return float(np.mean((lower <= y) & (y <= upper)))


def _check_bounds(lower, upper):
    lower = as_float_array(lower, "lower", ndim=1, finite=False)
    upper = as_float_array(upper, "upper", ndim=1, finite=False)
    if np.any(np.isnan(lower)) or np.any(np.isnan(upper)):
        raise ValueError("lower and upper must not contain NaN")
    check_same_length(lower=lower, upper=upper)
    if np.any(lower > upper):
        raise ValueError("lower must not exceed upper")
    return lower, upper


def mean_interval_width(lower, upper):
    """Mean width of prediction intervals (a sharpness measure; may be infinite).

    Parameters
    ----------
    lower, upper : array_like, shape (n,)
        ``lower <= upper`` elementwise; infinite bounds are allowed.

    Returns
    -------
    float

    Examples
    --------
    >>> mean_interval_width([0.0, 1.0], [2.0, 2.0])
    1.5
    """
    lower, upper = _check_bounds(lower, upper)
    return float(np.mean(upper - lower))


def quantile_sharpness(quantiles):
    r"""Sharpness of quantile predictions as in the drift paper [0].

    :math:`\frac1K\sum_{k=1}^K |Z_k - Z_{K+1-k}|`, averaged over observations:
    the reading of the garbled :math:`\frac1K\sum_k|Z_k - Z_{K-k}|` that
    pairs each level with its mirror (levels are assumed symmetric about 1/2).
    It equals the mean width of the symmetric intervals when K is even, and
    ``(K - 1) / K`` times it when K is odd (the median pairs with itself).

    Parameters
    ----------
    quantiles : array_like, shape (n, n_levels)

    Returns
    -------
    float

    Examples
    --------
    >>> # |0 - 4| + |1 - 3| + |3 - 1| + |4 - 0| = 12, / 4
    >>> quantile_sharpness([[0.0, 1.0, 3.0, 4.0]])
    3.0
    """
    quantiles = as_float_array(quantiles, "quantiles", ndim=2)
    return float(np.mean(np.abs(quantiles - quantiles[:, ::-1])))


def sharpness(std, root_mean_square=False):
    """Mean predictive standard deviation (the STD column of [2]).

    Parameters
    ----------
    std : array_like, shape (n,)
        Predictive standard deviations (see :func:`mixture_std` for mixtures).
    root_mean_square : bool, default False
        If True, return ``sqrt(mean(std**2))`` instead (uncertainty-toolbox's
        ``sharpness``).

    Returns
    -------
    float

    Examples
    --------
    >>> sharpness([1.0, 3.0]), round(sharpness([1.0, 3.0], root_mean_square=True), 4)
    (2.0, 2.2361)
    """
    std = check_positive(std, "std", ndim=1)
    return float(np.sqrt(np.mean(std**2)) if root_mean_square else np.mean(std))


def rmse(y, mean):
    """Root mean squared error of point predictions, ``sqrt(mean((y - mean)**2))``.

    Parameters
    ----------
    y : array_like, shape (n,)
        Outcomes.
    mean : array_like, shape (n,)
        Point predictions (a predictive mean), in the units of ``y``.

    Returns
    -------
    float

    Examples
    --------
    >>> rmse([1.0, 2.0, 3.0], [1.0, 2.0, 5.0])
    1.1547005383792515
    """
    y = as_float_array(y, "y", ndim=1)
    mean = as_float_array(mean, "mean", ndim=1)
    check_same_length(y=y, mean=mean)
    return float(np.sqrt(np.mean((y - mean) ** 2)))


def mixture_std(weights, means, stds):
    r"""Standard deviation of Gaussian mixtures: :math:`\sqrt{\sum_k w_k(\sigma_k^2 + \mu_k^2) - (\sum_k w_k\mu_k)^2}`.

    Parameters
    ----------
    weights, means, stds : array_like, shape (n, n_components)

    Returns
    -------
    numpy.ndarray, shape (n,)

    Examples
    --------
    >>> # equal weights at -1 and 1, unit stds: variance 1 + 1
    >>> mixture_std([[0.5, 0.5]], [[-1.0, 1.0]], [[1.0, 1.0]]).round(4).tolist()
    [1.4142]
    """
    means_arr = as_float_array(means, "means", ndim=2)
    _, weights, means, stds = check_mixture(np.zeros(means_arr.shape[0]), weights, means_arr, stds)
    mu = np.sum(weights * means, axis=1)
    var = np.sum(weights * (stds**2 + (means - mu[:, None]) ** 2), axis=1)
    return np.sqrt(var)


def gaussian_scale_pce(scale):
    """Exact PCE of ``N(0, scale^2)`` forecasts of ``N(0, 1)`` outcomes.

    The PIT is ``Phi(Y / scale)``, whose CDF is ``Phi(scale * Phi^-1(a))``, so
    the PCE is ``int_0^1 |Phi(scale * Phi^-1(a)) - a| da`` (by quadrature, split
    at ``a = 1/2`` where the sign changes).

    Parameters
    ----------
    scale : float
        Forecast standard deviation, > 0; 1 is calibrated, < 1 over-confident.

    Returns
    -------
    float
        The PCE, in ``[0, 1/4)``; it tends to 1/4 as ``scale`` tends to 0 or
        to infinity (PITs all at 0 and 1, or all at 1/2). It is the same at
        ``scale`` and ``1 / scale``: the two PIT CDFs are inverse functions,
        mirror images across the diagonal.

    Examples
    --------
    >>> round(gaussian_scale_pce(1.0), 12)
    0.0
    >>> round(gaussian_scale_pce(0.5), 4)  # = that of 2.0: the two PIT CDFs are inverses
    0.1024
    """
    scale = check_real(scale, "scale", low=0, low_open=True)

    def gap(a):
        return abs(stats.norm.cdf(scale * stats.norm.ppf(a)) - a)

    halves = (integrate.quad(gap, lo, hi, limit=200)[0] for lo, hi in ((0, 0.5), (0.5, 1)))
    return float(sum(halves))
