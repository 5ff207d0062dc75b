"""Calibration figures: reliability diagrams, PIT plots, predictive bands.

Every function draws on ``ax`` (a new figure when ``ax=None``), returns the
axes and never calls ``plt.show``. Bands are drawn where a calibrated model
would land with probability ``band`` (pointwise: per bin or per level), so a
reader can tell miscalibration from sampling noise:

* reliability diagrams: binomial consistency bands per bin (Broecker & Smith
  2007) from :func:`calibtut.metrics.consistency_band`;
* PIT histograms: the binomial band of a bin count under uniform PITs;
* PIT and quantile reliability diagrams: the binomial band of the fraction of
  observations below each level.

Band artists carry ``gid="calibration-band"`` so that tests and notebooks can
find them.

Figures are drawn for the book's text column: :func:`column_subplots` lays out
``n`` panels in a grid at most ``COLUMN_WIDTH_IN`` inches wide (wrapping
rows instead of shrinking panels), so that the smallest text of a figure,
``MIN_FONT_PT`` points (matplotlib's ``"small"``), stays at least 9 pixels
high on the page (``tests/browser/test_pages.py`` measures this on every
figure of the built book).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from mpl_toolkits.axes_grid1 import make_axes_locatable
from scipy import stats

from calibtut._validation import (
    as_float_array,
    check_alpha,
    check_int,
    check_levels,
    check_probabilities,
    check_real,
    check_same_length,
)
from calibtut.conformal.coverage import coverage_count_distribution
from calibtut.metrics import consistency_band, pit_reliability_data, quantile_frequencies, reliability_data
from calibtut.metrics.pit import check_quantiles
from calibtut.metrics.regression import check_pit

__all__ = [
    "reliability_diagram",
    "pit_histogram",
    "pit_reliability_diagram",
    "quantile_reliability_diagram",
    "plot_predictive_band",
    "plot_calibration_maps",
    "coverage_histogram",
    "plot_quantile_paths",
    "column_subplots",
]

BAND_GID = "calibration-band"
_BAND_COLOR = "0.8"
_DIAGONAL_STYLE = {"color": "0.35", "linestyle": "--", "linewidth": 1.0}
_FIGSIZE = (4.2, 4.2)

#: Width of the book's text column, in inches at matplotlib's 100 dpi (about 700
#: CSS pixels in a 1280-pixel window): a wider figure is shrunk, with its text.
COLUMN_WIDTH_IN = 7.0
#: The smallest text the house style draws: matplotlib's ``"small"`` (legends) at
#: its 10-point base size.
MIN_FONT_PT = 8.3


def _get_ax(ax, figsize=_FIGSIZE):
    if ax is None:
        _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


def _check_band(band):
    return None if band is None else check_alpha(band, "band")


def _unit_square(ax, xlabel, ylabel, square=True):
    ax.plot([0, 1], [0, 1], label="perfect calibration", **_DIAGONAL_STYLE)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    if square:
        ax.set_aspect("equal", adjustable="box")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3, linewidth=0.6)


def reliability_diagram(
    confidence,
    correct,
    n_bins=15,
    strategy="uniform",
    ax=None,
    show_counts=True,
    band=0.9,
    label="model",
):
    """Reliability diagram with per-bin consistency bands and counts.

    Bars show the accuracy of each confidence bin; grey boxes show where a
    calibrated model's accuracy would fall with probability ``band`` given the
    bin's count and mean confidence; dots mark the mean confidence. With
    ``show_counts`` a histogram of the bin counts is drawn in a short panel
    below (log scale, empty bins left blank), which carries the x label.

    Parameters
    ----------
    confidence : array_like of shape (n,)
        Predicted probability of the event (top-label confidence).
    correct : array_like of {0, 1} or bool, shape (n,)
        Whether the event happened.
    n_bins : int, default 15
    strategy : {"uniform", "quantile"}, default "uniform"
        Equal-width or equal-mass bins (see
        :func:`calibtut.metrics.reliability_data`).
    ax : matplotlib.axes.Axes, optional
    show_counts : bool, default True
    band : float or None, default 0.9
        Probability content of the consistency bands; ``None`` hides them.
    label : str, default "model"
        Legend label of the bars.

    Returns
    -------
    matplotlib.axes.Axes
        The diagram's axes (the counts panel is a separate axes of the same
        figure, sharing its x axis).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> conf = rng.uniform(0.5, 1.0, 500)
    >>> ax = reliability_diagram(conf, rng.random(500) < conf, n_bins=10)
    >>> ax.get_ylabel()
    'accuracy'
    """
    band = _check_band(band)
    data = reliability_data(confidence, correct, n_bins=n_bins, strategy=strategy)
    counts_ax = None
    if ax is None and show_counts:
        _, (ax, counts_ax) = plt.subplots(
            2, 1, sharex=True, figsize=(4.2, 5.4), height_ratios=(4, 1), layout="constrained"
        )
    elif show_counts:
        counts_ax = make_axes_locatable(ax).append_axes("bottom", size="25%", pad=0.1, sharex=ax)
    ax = _get_ax(ax)
    filled = data["count"].to_numpy() > 0
    lower_edge = data["bin_lower"].to_numpy()
    width = data["bin_upper"].to_numpy() - lower_edge
    accuracy = data["accuracy"].to_numpy()
    mean_conf = data["mean_confidence"].to_numpy()
    _unit_square(ax, "confidence", "accuracy", square=not show_counts)
    if band is not None:
        lo, hi = consistency_band(data["count"].to_numpy(), mean_conf, alpha=1 - band)
        ax.bar(
            lower_edge[filled],
            (hi - lo)[filled],
            width=width[filled],
            bottom=lo[filled],
            align="edge",
            color=_BAND_COLOR,
            alpha=0.7,
            linewidth=0,
            gid=BAND_GID,
            label=f"{band:.0%} band if calibrated",
            zorder=1,
        )
    ax.bar(
        lower_edge[filled],
        accuracy[filled],
        width=width[filled],
        align="edge",
        facecolor="C0",
        edgecolor="C0",
        alpha=0.45,
        linewidth=0.8,
        label=label,
        zorder=2,
    )
    ax.plot(mean_conf[filled], mean_conf[filled], "o", color="C3", markersize=3, label="mean confidence", zorder=3)
    ax.legend(loc="upper left", fontsize="small", frameon=False)
    if show_counts:
        counts = data["count"].to_numpy()
        counts_ax.bar(lower_edge[filled], counts[filled], width=width[filled], align="edge", color="0.45",
                      linewidth=0)
        counts_ax.set_yscale("log")
        counts_ax.set_ylim(0.7, counts.max() * 2)
        counts_ax.set_ylabel("count")
        counts_ax.set_xlabel("confidence")
        counts_ax.grid(True, alpha=0.3, linewidth=0.6)
        ax.set_xlabel("")
        ax.tick_params(labelbottom=False)
    return ax


def pit_histogram(pit, bins=20, ax=None, band=0.9):
    """Histogram of PIT values (density scale) with the band of uniform PITs.

    A calibrated model has uniform PITs: each bin count is
    Binomial(n, 1 / bins), whose central ``band`` interval (divided by its mean
    ``n / bins``) is shaded around the flat density 1. A U shape reveals an
    over-confident model, a hump an under-confident one.

    Parameters
    ----------
    pit : array_like of shape (n,)
        PIT values in [0, 1].
    bins : int, default 20
        Number of equal-width bins.
    ax : matplotlib.axes.Axes, optional
    band : float or None, default 0.9

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import numpy as np
    >>> ax = pit_histogram(np.random.default_rng(0).random(1000), bins=10)
    >>> len(ax.patches)
    11
    """
    pit = check_pit(pit)
    bins = check_int(bins, "bins", minimum=1)
    band = _check_band(band)
    ax = _get_ax(ax, figsize=(4.8, 3.4))
    n = pit.size
    counts, edges = np.histogram(pit, bins=bins, range=(0.0, 1.0))
    expected = n / bins
    if band is not None:
        tail = (1 - band) / 2
        lo = stats.binom.ppf(tail, n, 1 / bins) / expected
        hi = stats.binom.ppf(1 - tail, n, 1 / bins) / expected
        ax.axhspan(lo, hi, color=_BAND_COLOR, alpha=0.7, linewidth=0, gid=BAND_GID,
                   label=f"{band:.0%} band if calibrated")
    ax.bar(edges[:-1], counts / expected, width=np.diff(edges), align="edge", facecolor="C0",
           edgecolor="white", linewidth=0.6, alpha=0.8, label="PIT")
    ax.axhline(1.0, **_DIAGONAL_STYLE)
    ax.set_xlim(0, 1)
    ax.set_xlabel("PIT")
    ax.set_ylabel("density")
    ax.legend(loc="upper center", fontsize="small", frameon=False, ncols=2)
    ax.set_ylim(0, max(np.max(counts / expected), ax.get_ylim()[1]) * 1.15)
    return ax


def pit_reliability_diagram(pit, ax=None, band=0.9, levels=101, label="model"):
    """Observed frequency of ``PIT <= a`` against ``a``, with the calibrated band.

    Under probabilistic calibration ``n`` times the frequency is
    Binomial(n, a); its central ``band`` interval is shaded (pointwise in
    ``a``, as in Fig. 2 of paper 002).

    Parameters
    ----------
    pit : array_like of shape (n,)
        PIT values in [0, 1].
    ax : matplotlib.axes.Axes, optional
    band : float or None, default 0.9
    levels : int or array_like, default 101
        Evaluation grid of the PIT's CDF, strictly increasing in [0, 1] (0 and
        1 allowed); an int gives ``linspace(0, 1, levels)``.
    label : str, default "model"

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import numpy as np
    >>> ax = pit_reliability_diagram(np.random.default_rng(0).random(300))
    >>> ax.get_xlabel()
    'quantile level'
    """
    band = _check_band(band)
    data = pit_reliability_data(pit, levels=levels, alpha=0.1 if band is None else 1 - band)
    ax = _get_ax(ax)
    _unit_square(ax, "quantile level", "observed frequency")
    if band is not None:
        ax.fill_between(data["level"], data["band_lower"], data["band_upper"], color=_BAND_COLOR,
                        alpha=0.7, linewidth=0, gid=BAND_GID, label=f"{band:.0%} band if calibrated")
    ax.plot(data["level"], data["frequency"], color="C0", linewidth=1.6, label=label)
    ax.legend(loc="upper left", fontsize="small", frameon=False)
    return ax


def quantile_reliability_diagram(y, quantiles, levels, ax=None, band=0.9, label="model"):
    """Observed frequency of ``y <= q_a`` against the level ``a`` of quantile predictions.

    Parameters
    ----------
    y : array_like of shape (n,)
        Observations.
    quantiles : array_like of shape (n, n_levels)
        Predicted quantiles.
    levels : array_like of shape (n_levels,)
        Their levels, strictly increasing in (0, 1).
    ax : matplotlib.axes.Axes, optional
    band : float or None, default 0.9
        Pointwise binomial band of a calibrated model at each level.
    label : str, default "model"

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> levels = np.array([0.1, 0.5, 0.9])
    >>> q = np.tile([-1.28, 0.0, 1.28], (400, 1))
    >>> ax = quantile_reliability_diagram(rng.normal(size=400), q, levels)
    >>> ax.get_ylabel()
    'observed frequency'
    """
    y, quantiles, levels = check_quantiles(y, quantiles, levels)
    band = _check_band(band)
    freq = quantile_frequencies(y, quantiles, levels)
    ax = _get_ax(ax)
    _unit_square(ax, "quantile level", "observed frequency")
    if band is not None:
        n = y.size
        tail = (1 - band) / 2
        grid = np.concatenate([[0.0], levels, [1.0]])
        lo = stats.binom.ppf(tail, n, grid) / n
        hi = stats.binom.ppf(1 - tail, n, grid) / n
        ax.fill_between(grid, lo, hi, color=_BAND_COLOR, alpha=0.7, linewidth=0, gid=BAND_GID,
                        label=f"{band:.0%} band if calibrated")
    ax.plot(levels, freq, "o-", color="C0", markersize=4, linewidth=1.4, label=label)
    ax.legend(loc="upper left", fontsize="small", frameon=False)
    return ax


def plot_predictive_band(x, lower, upper, ax=None, *, center=None, y=None, label="prediction interval",
                         color="C0"):
    """Shaded prediction band over a 1-d input, with optional centre line and data.

    Points are sorted by ``x``; observations ``y`` outside the band are drawn
    in red, so coverage failures stand out.

    Parameters
    ----------
    x : array_like of shape (n,)
        Inputs (one feature).
    lower, upper : array_like of shape (n,)
        Band limits at each input (infinite limits are clipped to the axes).
    ax : matplotlib.axes.Axes, optional
    center : array_like of shape (n,), optional
        Point prediction (mean or median) drawn as a line.
    y : array_like of shape (n,), optional
        Observations drawn as dots.
    label : str, default "prediction interval"
    color : str, default "C0"

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import numpy as np
    >>> x = np.linspace(0, 1, 50)
    >>> ax = plot_predictive_band(x, x - 1, x + 1, center=x, y=x + 0.5)
    >>> len(ax.collections)
    3
    """
    x = as_float_array(x, "x", ndim=1)
    lower = as_float_array(lower, "lower", ndim=1, finite=False)
    upper = as_float_array(upper, "upper", ndim=1, finite=False)
    check_same_length(x=x, lower=lower, upper=upper)
    if np.any(np.isnan(lower)) or np.any(np.isnan(upper)):
        raise ValueError("lower and upper must not contain NaN")
    if np.any(lower > upper):
        raise ValueError("lower must be <= upper everywhere")
    ax = _get_ax(ax, figsize=(5.5, 3.6))
    order = np.argsort(x, kind="stable")
    ax.fill_between(x[order], lower[order], upper[order], color=color, alpha=0.25, linewidth=0, label=label)
    if center is not None:
        center = as_float_array(center, "center", ndim=1)
        check_same_length(x=x, center=center)
        ax.plot(x[order], center[order], color=color, linewidth=1.5, label="prediction")
    if y is not None:
        y = as_float_array(y, "y", ndim=1)
        check_same_length(x=x, y=y)
        inside = (y >= lower) & (y <= upper)
        ax.scatter(x[inside], y[inside], s=8, color="0.2", label="covered", zorder=3)
        ax.scatter(x[~inside], y[~inside], s=12, color="C3", marker="x", label="not covered", zorder=3)
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.legend(fontsize="small", frameon=False)
    return ax


def plot_calibration_maps(maps, ax=None, n_grid=1001):
    """Draw recalibration maps ``phi: [0, 1] -> [0, 1]`` side by side.

    Parameters
    ----------
    maps : dict of str to callable
        Label to map, each taking a 1-d array of levels in [0, 1] and returning
        values of the same shape, e.g. ``QuantileRecalibrator(...).transform``.
    ax : matplotlib.axes.Axes, optional
    n_grid : int, default 1001
        Number of evaluation points (step maps look like steps when this is
        much larger than the calibration set).

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import numpy as np
    >>> from calibtut.recalibration import QuantileRecalibrator
    >>> pit = np.random.default_rng(0).beta(2, 2, size=30)
    >>> maps = {m: QuantileRecalibrator(method=m).fit(pit).transform for m in ("emp", "lin", "kde")}
    >>> ax = plot_calibration_maps(maps)
    >>> len(ax.lines)
    4
    """
    if not isinstance(maps, dict) or not maps:
        raise TypeError("maps must be a non-empty dict of label -> callable")
    n_grid = check_int(n_grid, "n_grid", minimum=2)
    ax = _get_ax(ax)
    _unit_square(ax, "PIT level u", r"recalibrated level $\phi(u)$")
    grid = np.linspace(0.0, 1.0, n_grid)
    for i, (name, fn) in enumerate(maps.items()):
        if not callable(fn):
            raise TypeError(f"maps[{name!r}] must be callable, got {type(fn).__name__}")
        values = np.asarray(fn(grid), dtype=np.float64)
        if values.shape != grid.shape:
            raise ValueError(f"maps[{name!r}] must return shape {grid.shape}, got {values.shape}")
        ax.plot(grid, values, color=f"C{i}", linewidth=1.4, label=str(name))
    ax.legend(loc="upper left", fontsize="small", frameon=False)
    return ax


def coverage_histogram(coverage, n_cal, alpha, n_test, ax=None, band=0.9):
    """Histogram of empirical coverages over repeated runs against their exact law.

    Each entry of ``coverage`` is the fraction of ``n_test`` test points
    covered by one split conformal run with ``n_cal`` calibration points. The
    beta-binomial law of a valid method
    (:func:`calibtut.conformal.coverage.coverage_count_distribution`) is drawn as a
    step line, its central ``band`` interval shaded and ``1 - alpha`` marked.

    Parameters
    ----------
    coverage : array_like of shape (n_runs,)
        Empirical coverages in [0, 1].
    n_cal, n_test : int
        Calibration and test sizes of each run.
    alpha : float
        Nominal miscoverage.
    ax : matplotlib.axes.Axes, optional
    band : float or None, default 0.9

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import numpy as np
    >>> cov = np.random.default_rng(0).binomial(200, 0.9, size=100) / 200
    >>> ax = coverage_histogram(cov, n_cal=99, alpha=0.1, n_test=200)
    >>> ax.get_xlabel()
    'empirical coverage'
    """
    coverage = check_probabilities(coverage, "coverage", ndim=1)
    band = _check_band(band)
    law = coverage_count_distribution(n_cal, alpha, n_test)
    ax = _get_ax(ax, figsize=(4.8, 3.4))
    counts = np.arange(n_test + 1)
    pmf = law.pmf(counts)
    support = pmf > 1e-4 * pmf.max()
    lo_c, hi_c = counts[support].min(), counts[support].max()
    left = min((lo_c - 0.5) / n_test, coverage.min())
    right = max((hi_c + 0.5) / n_test, coverage.max())
    edges = np.linspace(left, right, int(min(40, round((right - left) * n_test) + 1)) + 1)
    ax.hist(coverage, bins=edges, density=True, color="C0", alpha=0.6, label="runs")
    ax.step(counts[support] / n_test, pmf[support] * n_test, where="mid", color="C3", linewidth=1.2,
            label="exact law")
    if band is not None:
        tail = (1 - band) / 2
        ax.axvspan(law.ppf(tail) / n_test, law.ppf(1 - tail) / n_test, color=_BAND_COLOR, alpha=0.6,
                   linewidth=0, gid=BAND_GID, label=f"{band:.0%} band", zorder=0)
    ax.axvline(1 - alpha, **_DIAGONAL_STYLE, label=r"$1-\alpha$")
    ax.set_xlabel("empirical coverage")
    ax.set_ylabel("density")
    ax.legend(fontsize="small", frameon=False)
    return ax


CROSSING_GID = "quantile-crossing"
_PATH_STYLES = ("-", ":", "--", "-.")


def plot_quantile_paths(quantiles, labels=None, true_quantiles=None, levels=None, ax=None, *, steps=None,
                        show=None, show_true=None, mark_crossings=False, title=None, legend=True, color="C0"):
    """Quantile forecasts of one series over time, with labels, true quantiles and crossings.

    Level ``k`` is drawn with the ``k``-th of the line styles ``-``, ``:``,
    ``--``, ``-.`` (cycled): predicted quantiles in ``color``, true ones in
    grey with the same style, labels as crosses. With ``mark_crossings`` a
    red vertical bar (``gid="quantile-crossing"``) marks every step where two
    neighbouring predicted quantiles cross or tie.

    Parameters
    ----------
    quantiles : array_like of shape (T, K)
        Predicted quantiles at each step.
    labels : array_like of shape (T,), optional
        Observed labels.
    true_quantiles : array_like of shape (T, K), optional
        The true quantiles at the same levels.
    levels : array_like of shape (K,), optional
        Quantile levels, used in the legend (``"predicted 25% quantile"``).
    ax : matplotlib.axes.Axes, optional
    steps : array_like of shape (T,), optional
        Time axis; default ``1..T``.
    show : sequence of int, optional
        Indices of the levels to draw (default all).
    show_true : sequence of int, optional
        Indices of the true quantiles to draw (default ``show``).
    mark_crossings : bool, default False
    title : str, optional
    legend : bool, default True
    color : str, default "C0"

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import numpy as np
    >>> q = np.array([[0.0, 1.0], [1.0, 0.5], [0.0, 2.0]])
    >>> ax = plot_quantile_paths(q, labels=[0.5, 0.2, 1.0], levels=[0.25, 0.75], mark_crossings=True)
    >>> [line.get_label() for line in ax.get_lines()[:3]]
    ['predicted 25% quantile', 'predicted 75% quantile', 'observed label']
    """
    q = as_float_array(quantiles, "quantiles", ndim=2)
    T, K = q.shape
    if levels is None:
        names = [f"quantile {k + 1}" for k in range(K)]
    else:
        lv = check_levels(levels, "levels")
        if lv.shape != (K,):
            raise ValueError(f"levels must have {K} entries (one per column of quantiles), got {lv.size}")
        names = [f"{a:.0%} quantile" for a in lv]
    x = np.arange(1, T + 1) if steps is None else as_float_array(steps, "steps", ndim=1)
    if x.shape != (T,):
        raise ValueError(f"steps must have shape ({T},), got {x.shape}")
    show = _check_indices(show, K, "show")
    show_true = show if show_true is None else _check_indices(show_true, K, "show_true")
    ax = _get_ax(ax, figsize=(7, 3.8))
    for k in show:
        ax.plot(x, q[:, k], _PATH_STYLES[k % len(_PATH_STYLES)], color=color, label=f"predicted {names[k]}")
    if true_quantiles is not None:
        truth = as_float_array(true_quantiles, "true_quantiles", ndim=2)
        if truth.shape != q.shape:
            raise ValueError(f"true_quantiles must have the shape of quantiles {q.shape}, got {truth.shape}")
        for k in show_true:
            ax.plot(x, truth[:, k], _PATH_STYLES[k % len(_PATH_STYLES)], color="0.6", label=f"true {names[k]}")
    if labels is not None:
        y = as_float_array(labels, "labels", ndim=1)
        if y.shape != (T,):
            raise ValueError(f"labels must have shape ({T},), got {y.shape}")
        ax.plot(x, y, "x", color="C4", markersize=4, label="observed label")
    if mark_crossings and K > 1:
        crossing = np.any(np.diff(q, axis=1) <= 0, axis=1)
        for i, t in enumerate(x[crossing]):
            ax.axvline(t, color="C3", alpha=0.3, linewidth=3, gid=CROSSING_GID, label="crossing" if i == 0 else None)
    ax.set_xlabel("time step")
    ax.set_ylabel("prediction / label")
    if title is not None:
        ax.set_title(title)
    if legend:
        ax.legend(fontsize="small", frameon=False, ncol=2, loc="upper right")
    return ax


def column_subplots(n_panels, *, ncols=None, panel_height=2.8, width=COLUMN_WIDTH_IN, **kwargs):
    """A figure of ``n_panels`` axes that fits the book's text column.

    The panels are laid out in rows of ``ncols`` (by default all of them up to
    three, two for four panels, three beyond) on a figure ``width`` inches
    wide, so that a figure with many panels grows downwards instead of being
    shrunk to the column with its text. Unused cells of the grid are removed.

    Parameters
    ----------
    n_panels : int
        Number of axes.
    ncols : int, optional
        Panels per row.
    panel_height : float, default 2.8
        Height of one row of panels, in inches.
    width : float, default COLUMN_WIDTH_IN
        Figure width, in inches.
    **kwargs
        Passed to :func:`matplotlib.pyplot.subplots` (``sharex``, ``sharey``,
        ``subplot_kw`` ...).

    Returns
    -------
    fig : matplotlib.figure.Figure
    axes : numpy.ndarray of shape (n_panels,)
        The axes, row by row.

    Examples
    --------
    >>> fig, axes = column_subplots(4)
    >>> axes.shape, fig.get_size_inches().tolist()
    ((4,), [7.0, 5.6])
    """
    n_panels = check_int(n_panels, "n_panels", minimum=1)
    if ncols is None:
        ncols = n_panels if n_panels <= 3 else 2 if n_panels == 4 else 3
    ncols = min(check_int(ncols, "ncols", minimum=1), n_panels)
    panel_height = check_real(panel_height, "panel_height", low=0.0, low_open=True)
    width = check_real(width, "width", low=0.0, low_open=True)
    nrows = -(-n_panels // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(width, panel_height * nrows), layout="constrained",
                             squeeze=False, **kwargs)
    axes = axes.ravel()
    for ax in axes[n_panels:]:
        ax.remove()
    return fig, axes[:n_panels]


def _check_indices(indices, size, name):
    if indices is None:
        return list(range(size))
    out = []
    for i in indices:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise TypeError(f"{name} must hold integer level indices, got {type(i).__name__}")
        if not 0 <= i < size:
            raise ValueError(f"{name} indices must lie in [0, {size - 1}], got {i}")
        out.append(int(i))
    return out
