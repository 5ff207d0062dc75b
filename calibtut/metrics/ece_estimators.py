r"""Calibration-error estimators beyond the plug-in binned ECE: l2, debiased and smooth.

* :func:`plugin_l2_ece`: the plug-in binned l2 calibration error
  :math:`\big(\sum_b w_b (\bar y_b - \bar p_b)^2\big)^{1/2}`, the estimator
  that :func:`debiased_ece` corrects.
* :func:`debiased_ece`: the bias-corrected squared binned estimator of
  Kumar, Liang & Ma (2019). The plug-in
  :math:`\sum_b w_b (\bar y_b - \bar p_b)^2` is biased upwards by the
  sampling variance of each bin's frequency, about
  :math:`\sum_b w_b\,\bar y_b(1 - \bar y_b)/n_b`; subtracting the unbiased
  estimate :math:`\bar y_b(1 - \bar y_b)/(n_b - 1)` of that variance in each
  bin gives an estimator of the binned squared (l2) calibration error that is
  unbiased when the labels in a bin are i.i.d. given the bin.
* :func:`smooth_ece`: the smooth ECE of Błasiok & Nakkiran (2023), the
  kernel-smoothed residual :math:`h(t) = \frac1n\sum_i (y_i - f_i)K_\sigma(t, f_i)`
  integrated in absolute value over [0, 1], with the Gaussian kernel
  reflected at 0 and 1, so that each point keeps mass one inside the
  interval. With ``bandwidth=None`` the bandwidth is their fixed point
  :math:`\sigma^*` with :math:`\mathrm{smECE}_{\sigma^*} = \sigma^*`, which makes
  the measure a consistent calibration measure; the value returned is then
  :math:`\sigma^*` itself.

Both take ``(confidence, correct)`` in the order of
:func:`calibtut.metrics.expected_calibration_error`; for the top-label
versions pass ``probs.max(axis=1)`` and ``probs.argmax(axis=1) == labels``.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage, optimize

from calibtut._validation import check_bool, check_choice, check_int, check_real
from calibtut.metrics.classification import _CLOSED, _binned, _check_confidence_correct

__all__ = ["debiased_ece", "plugin_l2_ece", "smooth_ece", "smooth_reliability_curve"]


def debiased_ece(confidence, correct, n_bins=15, strategy="quantile", closed="right", squared=False):
    r"""Debiased binned l2 calibration error (Kumar, Liang & Ma 2019).

    .. math:: \widehat{\mathrm{ECE}^2} = \sum_b \frac{n_b}{n}\Big[(\bar y_b - \bar p_b)^2
              - \frac{\bar y_b (1 - \bar y_b)}{n_b - 1}\Big]

    over the bins with ``n_b >= 2`` points (a bin of one point contributes
    nothing, as in the authors' code).

    Parameters
    ----------
    confidence : array_like, shape (n,)
        Predicted probability of the event.
    correct : array_like of {0, 1} or bool, shape (n,)
        Whether the event happened.
    n_bins : int, default 15
        Number of bins.
    strategy : {"quantile", "uniform"}, default "quantile"
        Equal-mass bins (the paper's choice) or equal-width bins.
    closed : {"right", "left"}, default "right"
        Edge convention (see :mod:`calibtut.metrics.classification`).
    squared : bool, default False
        Return the debiased estimate of the squared error itself (unbiased,
        possibly negative) instead of ``sqrt(max(estimate, 0))``.

    Returns
    -------
    float

    Notes
    -----
    The correction is exactly unbiased for the variance of a bin's frequency
    when the labels in the bin are i.i.d. Bernoulli; when the true
    probabilities vary inside a bin (spread :math:`s_b^2`) it removes
    :math:`s_b^2 / (n_b - 1)` too much, a second-order term. The square
    root is biased again (downwards near zero); compare squared values
    where an unbiased number matters. Only the l2 version is implemented
    (the paper debiases the l1 error by resampling).

    See Also
    --------
    expected_calibration_error : the plug-in binned l1 ECE.
    smooth_ece : a binning-free estimator.

    References
    ----------
    Kumar, Liang & Ma, "Verified uncertainty calibration", NeurIPS 2019.

    Examples
    --------
    >>> # one bin: mean confidence .5, frequency 3/4 -> (.25)^2 - (.75 * .25) / 3 = 0
    >>> debiased_ece([0.5, 0.5, 0.5, 0.5], [1, 1, 1, 0], n_bins=1, squared=True)
    0.0
    >>> round(debiased_ece([0.2] * 4 + [0.9] * 4, [0, 0, 0, 0, 1, 1, 1, 1], n_bins=2, squared=True), 4)
    0.025
    """
    confidence, correct = _check_confidence_correct(confidence, correct)
    check_choice(closed, "closed", _CLOSED)
    check_bool(squared, "squared")
    n_b, acc, conf = _bin_means(confidence, correct, n_bins, strategy, closed, min_count=2)
    estimate = float(np.sum(n_b * ((acc - conf) ** 2 - acc * (1 - acc) / (n_b - 1))) / confidence.size)
    return estimate if squared else float(np.sqrt(max(estimate, 0.0)))


def _bin_means(confidence, correct, n_bins, strategy, closed, min_count):
    """Counts, frequencies and mean confidences of the bins with at least ``min_count`` points."""
    _, count, sum_conf, sum_acc = _binned(confidence, correct, n_bins, strategy, closed)
    kept = count >= min_count
    return count[kept], sum_acc[kept] / count[kept], sum_conf[kept] / count[kept]


def plugin_l2_ece(confidence, correct, n_bins=15, strategy="quantile", closed="right", squared=False):
    r"""Plug-in binned l2 calibration error, the estimator :func:`debiased_ece` corrects.

    .. math:: \widehat{\mathrm{ECE}^2}_{\mathrm{plug\text{-}in}}
              = \sum_b \frac{n_b}{n} (\bar y_b - \bar p_b)^2

    over the non-empty bins. Given the confidences, its mean exceeds the
    binned squared error by the sampling variance of the bin frequencies,
    :math:`\sum_b (n_b/n)\operatorname{Var}(\bar y_b)`, about
    :math:`B\,\bar q(1 - \bar q)/n` for ``B`` bins of frequency near
    :math:`\bar q`.

    Parameters
    ----------
    confidence : array_like, shape (n,)
        Predicted probability of the event.
    correct : array_like of {0, 1} or bool, shape (n,)
        Whether the event happened.
    n_bins : int, default 15
        Number of bins.
    strategy : {"quantile", "uniform"}, default "quantile"
        Equal-mass or equal-width bins.
    closed : {"right", "left"}, default "right"
        Edge convention (see :mod:`calibtut.metrics.classification`).
    squared : bool, default False
        Return the squared error instead of its square root.

    Returns
    -------
    float
        In [0, 1].

    See Also
    --------
    debiased_ece : the same sum with each bin's variance estimate removed.
    expected_calibration_error : the plug-in binned l1 ECE.

    References
    ----------
    Kumar, Liang & Ma, "Verified uncertainty calibration", NeurIPS 2019.

    Examples
    --------
    >>> # one bin: mean confidence .5, frequency 3/4 -> (.25)^2
    >>> plugin_l2_ece([0.5, 0.5, 0.5, 0.5], [1, 1, 1, 0], n_bins=1, squared=True)
    0.0625
    >>> plugin_l2_ece([0.5, 0.5, 0.5, 0.5], [1, 1, 1, 0], n_bins=1)
    0.25
    """
    confidence, correct = _check_confidence_correct(confidence, correct)
    check_choice(closed, "closed", _CLOSED)
    check_bool(squared, "squared")
    n_b, acc, conf = _bin_means(confidence, correct, n_bins, strategy, closed, min_count=1)
    estimate = float(np.sum(n_b * (acc - conf) ** 2) / confidence.size)
    return estimate if squared else float(np.sqrt(estimate))


def _residual_mass(confidence, residual, n_grid):
    """The residuals' masses on ``n_grid`` cells of [0, 1], before smoothing.

    Each residual is split linearly between the two nearest cell centres
    (all of it on the end cell beyond the first or last centre, which the
    reflection in :func:`_smoothed_residual` makes exact).
    """
    position = confidence * n_grid - 0.5
    left = np.clip(np.floor(position).astype(np.int64), 0, n_grid - 1)
    right = np.minimum(left + 1, n_grid - 1)
    share = np.clip(position - left, 0.0, 1.0)
    mass = np.bincount(left, weights=residual * (1 - share), minlength=n_grid)
    mass += np.bincount(right, weights=residual * share, minlength=n_grid)
    return mass / confidence.size


def _smoothed_residual(mass, sigma):
    """Cell masses of ``h(t) = mean_i r_i K_sigma(t, f_i)``: :func:`_residual_mass` smoothed.

    scipy's Gaussian filter in ``mode="reflect"`` reflects the kernel about 0
    and 1 as often as its width needs.
    """
    return ndimage.gaussian_filter1d(mass, sigma * mass.size, mode="reflect", truncate=6.0)


def _smece(mass, sigma):
    return float(np.sum(np.abs(_smoothed_residual(mass, sigma))))


def smooth_ece(confidence, correct, bandwidth=None, n_grid=2000):
    r"""Smooth ECE (Błasiok & Nakkiran 2023): the reflected-Gaussian-kernel-smoothed residual's l1 norm.

    .. math:: \mathrm{smECE}_\sigma = \int_0^1 \Big|\frac1n \sum_i (y_i - f_i)\,
              \tilde K_\sigma(t, f_i)\Big|\,dt,\qquad
              \tilde K_\sigma(t, f) = \sum_{k\in\mathbb Z}
              \big[\varphi_\sigma(t - f - 2k) + \varphi_\sigma(t + f - 2k)\big]

    Parameters
    ----------
    confidence : array_like, shape (n,)
        Predicted probability of the event.
    correct : array_like of {0, 1} or bool, shape (n,)
        Whether the event happened.
    bandwidth : float or None, default None
        The kernel's standard deviation ``sigma`` in (0, 1]; None: the fixed
        point ``sigma* = smECE_{sigma*}`` (found by Brent's method), and the
        value returned is ``sigma*``.
    n_grid : int, default 2000
        Cells of the integration grid on [0, 1] (at least 100); the
        discretisation error is of order ``(1 / (n_grid * sigma))^2`` of the
        value.

    Returns
    -------
    float
        In [0, 1].

    Notes
    -----
    The reflected kernel integrates to one over [0, 1] for every centre, so
    when all residuals have one sign the smooth ECE is ``|mean(y - f)|`` for
    any bandwidth. It is non-increasing in the bandwidth, so the fixed point
    is unique.

    See Also
    --------
    expected_calibration_error : the binned estimator.
    debiased_ece : the bias-corrected binned l2 estimator.

    References
    ----------
    Błasiok & Nakkiran, "Smooth ECE: principled reliability diagrams via
    kernel smoothing", ICLR 2024 (arXiv:2309.12236, 2023).

    Examples
    --------
    >>> # every residual is +0.7: smECE = 0.7 at any bandwidth, and sigma* = 0.7
    >>> round(smooth_ece([0.3, 0.3, 0.3], [1, 1, 1], bandwidth=0.05), 6)
    0.7
    >>> round(smooth_ece([0.3, 0.3, 0.3], [1, 1, 1]), 6)
    0.7
    """
    confidence, correct = _check_confidence_correct(confidence, correct)
    n_grid = check_int(n_grid, "n_grid", minimum=100)
    mass = _residual_mass(confidence, correct - confidence, n_grid)  # the same for every bandwidth
    if bandwidth is not None:
        return _smece(mass, check_real(bandwidth, "bandwidth", low=0, low_open=True, high=1))
    low = 1.0 / n_grid
    high = _smece(mass, low)
    if high <= low:
        return low  # below the grid's resolution: the measure is about 0
    # smECE_s does not increase with s, so smECE_high <= smECE_low = high brackets the
    # fixed point in [low, high]; a narrow bracket keeps the kernels short
    if _smece(mass, high) >= high:
        return high  # flat between low and high (one-signed residuals): high is the fixed point
    return float(optimize.brentq(lambda s: _smece(mass, s) - s, low, high, xtol=1e-12))


def smooth_reliability_curve(confidence, correct, bandwidth=None, n_grid=2000):
    r"""Smoothed reliability diagram of Błasiok & Nakkiran (2023): kernel regression of outcome on confidence.

    .. math:: \hat\mu(t) = \frac{\sum_i y_i\,\tilde K_\sigma(t, f_i)}{\sum_i \tilde K_\sigma(t, f_i)},
              \qquad \hat\delta(t) = \frac1n \sum_i \tilde K_\sigma(t, f_i)

    with the reflected Gaussian kernel :math:`\tilde K_\sigma` of
    :func:`smooth_ece`, evaluated at the centres of ``n_grid`` cells of
    [0, 1]. A calibrated forecaster has :math:`\hat\mu(t) \approx t`; the
    smooth ECE is :math:`\int_0^1 |\hat\mu(t) - \bar f(t)|\,\hat\delta(t)\,dt`
    with :math:`\bar f(t)` the kernel average of the confidences, so where
    the density :math:`\hat\delta` is small the curve counts little (and is
    noisy).

    Parameters
    ----------
    confidence : array_like, shape (n,)
        Predicted probability of the event.
    correct : array_like of {0, 1} or bool, shape (n,)
        Whether the event happened.
    bandwidth : float or None, default None
        The kernel's standard deviation in (0, 1]; None: the smooth ECE's
        fixed point :math:`\sigma^*` (the value :func:`smooth_ece` returns).
    n_grid : int, default 2000
        Cells of the grid on [0, 1] (at least 100).

    Returns
    -------
    t : numpy.ndarray of shape (n_grid,)
        Cell centres.
    curve : numpy.ndarray of shape (n_grid,)
        :math:`\hat\mu(t)`, the smoothed frequency of the event.
    density : numpy.ndarray of shape (n_grid,)
        :math:`\hat\delta(t)`, the density of the confidences (integrates
        to 1 over [0, 1]).

    See Also
    --------
    smooth_ece : the calibration error that goes with the curve.
    calibtut.plots.reliability_diagram : the binned diagram.

    References
    ----------
    Błasiok & Nakkiran, "Smooth ECE: principled reliability diagrams via
    kernel smoothing", ICLR 2024 (arXiv:2309.12236, 2023).

    Examples
    --------
    >>> # every outcome 1: the smoothed frequency is 1 wherever there is mass
    >>> t, curve, density = smooth_reliability_curve([0.2, 0.4, 0.6], [1, 1, 1], bandwidth=0.1)
    >>> bool(np.allclose(curve, 1.0)), round(float(density.mean()), 6)
    (True, 1.0)
    """
    confidence, correct = _check_confidence_correct(confidence, correct)
    n_grid = check_int(n_grid, "n_grid", minimum=100)
    if bandwidth is None:
        sigma = smooth_ece(confidence, correct, n_grid=n_grid)
    else:
        sigma = check_real(bandwidth, "bandwidth", low=0, low_open=True, high=1)
    density = _smoothed_residual(_residual_mass(confidence, np.ones_like(confidence), n_grid), sigma) * n_grid
    events = _smoothed_residual(_residual_mass(confidence, correct, n_grid), sigma) * n_grid
    t = (np.arange(n_grid) + 0.5) / n_grid
    return t, events / np.maximum(density, np.finfo(float).tiny), density
