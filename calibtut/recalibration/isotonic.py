"""Isotonic recalibration of regression CDFs (Kuleshov et al., 2018) and its side effects.

Given calibration PITs :math:`c_i = F_i(y_i)`, Kuleshov et al. fit an isotonic
regression :math:`R` of the empirical frequencies
:math:`\\hat P(c_i) = \\frac1m \\#\\{j : c_j \\le c_i\\}` on the :math:`c_i`, and
recalibrate every prediction as :math:`G = R \\circ F`. Paper 003 (Sec. 3) observes
that the frequencies are already increasing in :math:`c_{(i)}`, so the isotonic
fit is the interpolation through :math:`(c_{(i)}, i/m)`, and derives:

- **density** (Claim 1, Eq. 10): scikit-learn's ``IsotonicRegression.predict`` is
  piecewise *linear* between its fitted points (``X_thresholds_``,
  ``y_thresholds_``) and constant outside them, so :math:`R` is continuous
  piecewise linear and :math:`g(y) = R'(F(y))\\, f(y)`: the base density scaled by
  the slope of the segment holding :math:`F(y)`; it jumps at every knot
  :math:`F^{-1}(c_{(i)})` where consecutive slopes differ. At a knot the slope of
  the segment to the right is used.
- **truncation** (Sec. 3, App. B.2): :math:`R` reaches 1 at :math:`c_{(m)} < 1`,
  so :math:`g = 0` beyond :math:`y_{\\mathrm{trunc}} = F^{-1}(c_{(m)})` and test
  points there get zero likelihood. The paper's fix, read from the garbled text
  as the recalibration set :math:`\\{(c_{(i)}, i/(m+1))\\}_{i=1}^m \\cup \\{(1, 1)\\}`,
  is ``fix_truncation=True``.
- **mean** (Claims 2-3, Gaussian base :math:`N(\\mu, \\sigma^2)`): with knots
  :math:`(a_j, r_j)` and slopes :math:`s_j`,
  :math:`E[Y_{\\mathrm{iso}}] = \\mu - \\sigma\\delta`,
  :math:`\\delta = \\sum_j s_j\\,[\\varphi(\\Phi^{-1}(a_{j+1})) - \\varphi(\\Phi^{-1}(a_j))]`,
  the same for every test point (O(1) at test time). With knots
  :math:`(c_{(i)}, i/m)` this is the paper's
  :math:`\\delta = \\frac1m \\sum_{i=0}^{m-1}
  \\frac{\\sigma_{(i+1)} p_{(i+1)} - \\sigma_{(i)} p_{(i)}}{c_{(i+1)} - c_{(i)}}`
  (Eq. 4; :math:`p_{(i)}` the calibration densities, since
  :math:`\\sigma p = \\varphi(\\Phi^{-1}(c))`), see :func:`gaussian_mean_shift`.
  The same integration gives the standard deviation
  :math:`\\sigma\\sqrt{1 - \\gamma - \\delta^2}` with
  :math:`\\gamma = \\sum_j s_j [z\\varphi(z)]_{\\Phi^{-1}(a_j)}^{\\Phi^{-1}(a_{j+1})}`.

The anchor :math:`(0, 0)` is always added (the paper's analysis and the authors'
code); without it :math:`R(0) = 1/m` and :math:`G` would put mass :math:`1/m` at
:math:`-\\infty`. Anchors take precedence over fitted points at the same
abscissa, so :math:`R(0) = 0` and, with the fix, :math:`R(1) = 1`.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from calibtut._estimator import Estimator
from calibtut._validation import (
    as_float_array,
    check_bool,
    check_fitted,
    check_levels,
    check_positive,
    check_probabilities,
    check_quantile_function,
    check_same_length,
)

__all__ = ["IsotonicRecalibrator", "isotonic_recalibrated_quantiles", "gaussian_mean_shift"]


def _phi_of_quantile(u):
    """phi(Phi^{-1}(u)) and Phi^{-1}(u) * phi(Phi^{-1}(u)), both 0 at u in {0, 1}."""
    z = stats.norm.ppf(u)
    dens = stats.norm.pdf(z)
    with np.errstate(invalid="ignore"):
        zdens = np.where(np.isfinite(z), z * dens, 0.0)
    return dens, zdens


def _gaussian_args(mean, std, *extra):
    mean = as_float_array(mean, "mean", ndim=(0, 1))
    std = check_positive(std, "std", ndim=(0, 1))
    arrays = np.broadcast_arrays(*extra, mean, std) if extra else np.broadcast_arrays(mean, std)
    return [np.array(a, dtype=float) for a in arrays]


class IsotonicRecalibrator(Estimator):
    """Isotonic recalibration map ``R`` of PIT values, with paper 003's analysis.

    Parameters
    ----------
    fix_truncation : bool, default False
        ``False``: Kuleshov et al.'s recalibration set ``(c_(i), i/m)`` (plus the
        ``(0, 0)`` anchor), whose map reaches 1 at the largest calibration PIT.
        ``True``: paper 003's fix, ``(c_(i), i/(m+1))`` plus ``(1, 1)``.

    Attributes
    ----------
    isotonic_ : sklearn.isotonic.IsotonicRegression
        The fitted scikit-learn model (on the calibration points only).
    knots_x_, knots_y_ : numpy.ndarray
        Abscissae (strictly increasing, from 0) and values of the piecewise-linear
        map, anchors included.
    slopes_ : numpy.ndarray
        Slope of each segment.
    delta_ : float
        Mean shift factor: recalibrated mean is ``mean - std * delta_``.
    gamma_ : float
        Second-moment factor: recalibrated std is ``std * sqrt(1 - gamma_ - delta_**2)``.
    truncation_level_ : float
        Smallest PIT at which ``R`` reaches 1 (1.0 if only at 1: no truncation).

    See Also
    --------
    calibtut.recalibration.QuantileRecalibrator : the empirical, linear, kernel and DCP maps.
    isotonic_recalibrated_quantiles : the one-call function.

    References
    ----------
    - Kuleshov, Fenner & Ermon (2018), "Accurate uncertainties for deep learning using calibrated
      regression", Proceedings of the 35th International Conference on Machine Learning (ICML),
      2796-2804.
    - Utpala & Rai (2021), "Quantile regularization: towards implicit calibration of regression
      models", submitted to the Ninth International Conference on Learning Representations (ICLR
      2021) (the truncation and its fix).

    Examples
    --------
    >>> rec = IsotonicRecalibrator().fit([0.1, 0.3, 0.6, 0.8])
    >>> rec.transform([0.05, 0.3, 0.9]).round(3).tolist()
    [0.125, 0.5, 1.0]
    >>> rec.truncation_level_
    0.8
    >>> IsotonicRecalibrator(fix_truncation=True).fit([0.1, 0.3, 0.6, 0.8]).truncation_level_
    1.0
    """

    _parameter_constraints = {
        "fix_truncation": check_bool,
    }

    def __init__(self, *, fix_truncation=False):
        self.fix_truncation = fix_truncation

    def fit(self, cal_pit):
        """Fit ``R`` on calibration PITs against their empirical frequencies.

        Parameters
        ----------
        cal_pit : array_like, shape (m,)
            Calibration PIT values ``F_i(y_i)`` in [0, 1].

        Returns
        -------
        IsotonicRecalibrator
            ``self``.
        """
        self._validate_params()
        c = np.sort(check_probabilities(cal_pit, "cal_pit", ndim=1))
        m = c.size
        denom = m + 1 if self.params_.fix_truncation else m
        freq = np.searchsorted(c, c, side="right") / denom
        from sklearn.isotonic import IsotonicRegression  # here: importing calibtut.recalibration does not load scikit-learn

        self.isotonic_ = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip")
        self.isotonic_.fit(c, freq)
        xs = np.asarray(self.isotonic_.X_thresholds_, dtype=float)
        ys = np.asarray(self.isotonic_.y_thresholds_, dtype=float)
        inner = (xs > 0) & (xs < 1) if self.params_.fix_truncation else xs > 0
        xs, ys = xs[inner], ys[inner]
        if self.params_.fix_truncation:
            xs, ys = np.concatenate([[0.0], xs, [1.0]]), np.concatenate([[0.0], ys, [1.0]])
        else:
            xs, ys = np.concatenate([[0.0], xs]), np.concatenate([[0.0], ys])
        self.knots_x_, self.knots_y_ = xs, ys
        self.slopes_ = np.diff(ys) / np.diff(xs)
        dens, zdens = _phi_of_quantile(xs)
        self.delta_ = float(np.sum(self.slopes_ * np.diff(dens)))
        self.gamma_ = float(np.sum(self.slopes_ * np.diff(zdens)))
        self.truncation_level_ = float(xs[np.argmax(ys >= ys[-1])]) if ys[-1] >= 1 else 1.0
        return self

    def transform(self, pit):
        """Recalibrated PIT ``R(pit)`` (piecewise-linear interpolation, clipped).

        Examples
        --------
        >>> IsotonicRecalibrator().fit([0.2, 0.4]).transform([0.1, 0.3]).tolist()
        [0.25, 0.75]
        """
        check_fitted(self, "knots_x_")
        u = check_probabilities(pit, "pit", ndim=(0, 1))
        return np.interp(u, self.knots_x_, self.knots_y_)

    def inverse_transform(self, levels):
        """Generalized inverse ``R^{-1}(p) = inf {u : R(u) >= p}`` for ``p`` in [0, 1].

        Examples
        --------
        >>> IsotonicRecalibrator().fit([0.2, 0.4]).inverse_transform([0.25, 1.0]).tolist()
        [0.1, 0.4]
        """
        check_fitted(self, "knots_x_")
        p = check_probabilities(levels, "levels", ndim=(0, 1))
        xs, ys = self.knots_x_, self.knots_y_
        j = np.clip(np.searchsorted(ys, p, side="left"), 1, len(ys) - 1)
        lo_x, hi_x, lo_y, hi_y = xs[j - 1], xs[j], ys[j - 1], ys[j]
        with np.errstate(invalid="ignore", divide="ignore"):
            frac = np.where(hi_y > lo_y, (p - lo_y) / (hi_y - lo_y), 1.0)
        return np.where(p <= ys[0], xs[0], lo_x + np.clip(frac, 0.0, 1.0) * (hi_x - lo_x))

    def slope(self, pit):
        """Derivative ``R'(pit)`` (right derivative at knots; 0 beyond the last knot).

        Examples
        --------
        >>> IsotonicRecalibrator().fit([0.2, 0.4]).slope([0.1, 0.3, 0.5]).tolist()
        [2.5, 2.5, 0.0]
        """
        check_fitted(self, "knots_x_")
        u = check_probabilities(pit, "pit", ndim=(0, 1))
        j = np.searchsorted(self.knots_x_, u, side="right") - 1
        inside = (j >= 0) & (j < self.slopes_.size)
        return np.where(inside, self.slopes_[np.clip(j, 0, self.slopes_.size - 1)], 0.0)

    def cdf(self, y, mean, std):
        """Recalibrated CDF ``G(y) = R(Phi((y - mean) / std))`` of Gaussian predictions.

        Examples
        --------
        >>> rec = IsotonicRecalibrator().fit([0.2, 0.4])
        >>> float(rec.cdf(0.0, 0.0, 1.0))  # R(0.5) = 1: truncated at Phi^-1(0.4)
        1.0
        """
        check_fitted(self, "knots_x_")
        y, mean, std = _gaussian_args(mean, std, as_float_array(y, "y", ndim=(0, 1)))
        return self.transform(stats.norm.cdf(y, mean, std))

    def pdf(self, y, mean, std):
        """Recalibrated density ``g(y) = R'(F(y)) f(y)`` (Eq. 10), zero past the truncation.

        Examples
        --------
        >>> rec = IsotonicRecalibrator().fit([0.2, 0.4])
        >>> round(float(rec.pdf(-1.0, 0.0, 1.0)), 4)  # 2.5 * phi(-1)
        0.6049
        """
        check_fitted(self, "knots_x_")
        y, mean, std = _gaussian_args(mean, std, as_float_array(y, "y", ndim=(0, 1)))
        return self.slope(stats.norm.cdf(y, mean, std)) * stats.norm.pdf(y, mean, std)

    def logpdf(self, y, mean, std):
        """Log of :meth:`pdf` (``-inf`` where the recalibrated density vanishes).

        Examples
        --------
        >>> rec = IsotonicRecalibrator().fit([0.2, 0.4])
        >>> float(rec.logpdf(3.0, 0.0, 1.0))
        -inf
        """
        check_fitted(self, "knots_x_")
        y, mean, std = _gaussian_args(mean, std, as_float_array(y, "y", ndim=(0, 1)))
        s = self.slope(stats.norm.cdf(y, mean, std))
        with np.errstate(divide="ignore"):
            return np.log(s) + stats.norm.logpdf(y, mean, std)

    def mean(self, mean, std):
        """Mean of the recalibrated Gaussian prediction, ``mean - std * delta_`` (Claim 3).

        Examples
        --------
        >>> rec = IsotonicRecalibrator(fix_truncation=True).fit([0.25, 0.5, 0.75])
        >>> round(float(rec.mean(0.0, 1.0)), 6)  # symmetric knots: no shift
        0.0
        """
        check_fitted(self, "knots_x_")
        mean, std = _gaussian_args(mean, std)
        return mean - std * self.delta_

    def std(self, mean, std):
        """Standard deviation of the recalibrated prediction, ``std * sqrt(1 - gamma_ - delta_**2)``.

        Examples
        --------
        >>> rec = IsotonicRecalibrator().fit([0.2, 0.4])
        >>> bool(rec.std(0.0, 1.0) < 1.0)  # truncation sharpens
        True
        """
        check_fitted(self, "knots_x_")
        mean, std = _gaussian_args(mean, std)
        return std * np.sqrt(max(1.0 - self.gamma_ - self.delta_**2, 0.0))

    def predict_quantiles(self, levels, quantile_function):
        """Recalibrated quantiles ``Q(R^{-1}(a) | x)`` at the given levels.

        Parameters
        ----------
        levels : array_like, shape (n_levels,)
            Quantile levels, strictly increasing in (0, 1).
        quantile_function : callable
            Base quantile function mapping levels ``(n_levels,)`` in [0, 1] to
            an array ``(n, n_levels)``, e.g.
            :func:`calibtut.recalibration.gaussian_quantile_function`.

        Returns
        -------
        numpy.ndarray, shape (n, n_levels)

        Examples
        --------
        >>> from calibtut.recalibration import gaussian_quantile_function
        >>> rec = IsotonicRecalibrator(fix_truncation=True).fit([0.25, 0.5, 0.75])
        >>> rec.predict_quantiles([0.5], gaussian_quantile_function([0.0], [1.0])).round(6).tolist()
        [[0.0]]
        """
        check_fitted(self, "knots_x_")
        return check_quantile_function(quantile_function, self.inverse_transform(check_levels(levels)))

    def truncation_point(self, mean, std):
        """Upper end of the recalibrated support, ``F^{-1}(truncation_level_)`` (App. B.2).

        ``inf`` when ``R`` reaches 1 only at 1 (e.g. with ``fix_truncation=True``).

        Examples
        --------
        >>> rec = IsotonicRecalibrator().fit([0.2, 0.5])
        >>> float(rec.truncation_point(1.0, 2.0))  # 1 + 2 * Phi^-1(0.5)
        1.0
        """
        check_fitted(self, "knots_x_")
        mean, std = _gaussian_args(mean, std)
        return mean + std * stats.norm.ppf(self.truncation_level_)


def isotonic_recalibrated_quantiles(cal_pit, quantile_function, levels, *, fix_truncation=False):
    """Isotonic recalibration of test predictions in one call (:class:`IsotonicRecalibrator`).

    Parameters
    ----------
    cal_pit : array_like of shape (n_cal,)
        Calibration PIT values ``F_i(y_i)`` in [0, 1].
    quantile_function : callable
        Base quantile function of the test predictions, mapping levels
        ``(m,)`` in [0, 1] to an array ``(n, m)``, e.g.
        :func:`calibtut.recalibration.gaussian_quantile_function`.
    levels : array_like of shape (m,)
        Quantile levels, strictly increasing in (0, 1).
    fix_truncation : bool, default False
        Paper 003's fix of the recalibration set (see :class:`IsotonicRecalibrator`).

    Returns
    -------
    numpy.ndarray of shape (n, m)
        Recalibrated quantiles ``Q(R^{-1}(a) | x)``.

    Examples
    --------
    >>> isotonic_recalibrated_quantiles([0.2, 0.4], lambda u: u[None, :], [0.25, 0.75])  # identity model
    array([[0.1, 0.3]])
    """
    model = IsotonicRecalibrator(fix_truncation=fix_truncation).fit(cal_pit)
    return model.predict_quantiles(levels, quantile_function)


def gaussian_mean_shift(y, mean, std):
    """The paper's Claim 3 factor ``delta`` from a Gaussian calibration set.

    ``delta = (1/m) sum_{i=0}^{m-1} (sigma_(i+1) p_(i+1) - sigma_(i) p_(i)) / (c_(i+1) - c_(i))``
    with ``c_(i)`` the sorted calibration PITs, ``sigma_(i)`` and ``p_(i)`` the
    predicted std and density at ``y`` of the same point, and
    ``c_(0) = sigma_(0) p_(0) = 0``. It equals ``IsotonicRecalibrator().fit(c).delta_``
    when the PITs are distinct and inside (0, 1).

    Parameters
    ----------
    y, mean, std : array_like, shape (m,)
        Calibration targets and Gaussian predictions.

    Returns
    -------
    float

    Examples
    --------
    >>> round(gaussian_mean_shift([-1.0, 0.5, 2.0], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0]), 4)
    0.2296
    """
    y = as_float_array(y, "y", ndim=1)
    mean = as_float_array(mean, "mean", ndim=1)
    std = check_positive(std, "std", ndim=1)
    m = check_same_length(y=y, mean=mean, std=std)
    c = stats.norm.cdf(y, mean, std)
    sp = std * stats.norm.pdf(y, mean, std)
    order = np.argsort(c, kind="stable")
    c = np.concatenate([[0.0], c[order]])
    sp = np.concatenate([[0.0], sp[order]])
    gaps = np.diff(c)
    if np.any(gaps <= 0):
        raise ValueError("the calibration PITs must be distinct and positive for Claim 3's formula")
    return float(np.sum(np.diff(sp) / gaps) / m)
