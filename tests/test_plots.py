"""Tests for calibtut.plots: figures build, artists are sane, bands have their coverage."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from calibtut import plots  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _band_artists(ax):
    return [a for a in ax.get_children() if a.get_gid() == plots.BAND_GID]


def _band_rectangles(ax):
    """(x0, x1, y0, y1) of the band bars of a reliability diagram."""
    return [
        (p.get_x(), p.get_x() + p.get_width(), p.get_y(), p.get_y() + p.get_height())
        for p in ax.patches
        if p.get_gid() == plots.BAND_GID
    ]


# --- figures build, with sane artists -------------------------------------------------------


def test_reliability_diagram_artists():
    rng = np.random.default_rng(0)
    conf = rng.uniform(0.4, 1.0, 300)
    ax = plots.reliability_diagram(conf, rng.random(300) < conf, n_bins=10)
    assert isinstance(ax, matplotlib.axes.Axes)
    filled = 6  # bins above 0.4 (0.4 is an edge: bins (0.4, 0.5], ..., (0.9, 1])
    assert len(_band_rectangles(ax)) == filled
    assert len(ax.patches) == 2 * filled  # band + accuracy bar per filled bin
    fig = ax.figure
    assert len(fig.axes) == 2  # the counts panel
    counts_ax = fig.axes[1]
    assert sum(p.get_height() for p in counts_ax.patches) == 300
    assert counts_ax.get_xlabel() == "confidence"
    assert ax.get_ylabel() == "accuracy"


def test_reliability_diagram_on_given_axes_without_extras():
    fig, axes = plt.subplots(1, 2)
    rng = np.random.default_rng(1)
    conf = rng.uniform(0, 1, 100)
    ax = plots.reliability_diagram(conf, rng.random(100) < conf, ax=axes[1], show_counts=False, band=None,
                                   strategy="quantile", n_bins=5)
    assert ax is axes[1]
    assert len(fig.axes) == 2
    assert _band_artists(ax) == []
    assert len(ax.patches) == 5
    assert ax.get_xlabel() == "confidence"


def test_pit_histogram_artists():
    pit = np.random.default_rng(2).random(500)
    ax = plots.pit_histogram(pit, bins=12)
    bars = [p for p in ax.patches if p.get_gid() != plots.BAND_GID]
    assert len(bars) == 12
    # density scale: mean bar height is 1
    assert np.mean([p.get_height() for p in bars]) == pytest.approx(1.0)
    assert len(_band_artists(ax)) == 1
    assert ax.get_xlabel() == "PIT"


def test_pit_reliability_and_quantile_diagrams():
    rng = np.random.default_rng(3)
    y = rng.normal(size=200)
    ax = plots.pit_reliability_diagram(rng.random(200), levels=51)
    assert len(ax.lines) == 2  # diagonal + ECDF
    np.testing.assert_allclose(ax.lines[1].get_xdata(), np.linspace(0, 1, 51))
    levels = np.array([0.1, 0.5, 0.9])
    q = np.tile([-1.28, 0.0, 1.28], (200, 1))
    ax = plots.quantile_reliability_diagram(y, q, levels, band=None)
    assert _band_artists(ax) == []
    np.testing.assert_allclose(ax.lines[1].get_ydata(), np.mean(y[:, None] <= q, axis=0))


def test_predictive_band_and_coverage_histogram():
    x = np.linspace(0, 1, 30)
    y = np.where(x > 0.5, 3.0, 0.0)
    ax = plots.plot_predictive_band(x[::-1], x[::-1] - 1, x[::-1] + 1, center=x[::-1], y=y[::-1])
    assert len(ax.collections) == 3
    missed = ax.collections[2].get_offsets()
    assert len(missed) == np.sum(x > 0.5)
    ax = plots.coverage_histogram(np.array([0.88, 0.9, 0.93, 0.7]), n_cal=99, alpha=0.1, n_test=100)
    assert len(_band_artists(ax)) == 1
    assert ax.get_xlim()[0] <= 0.7  # a bad run stays visible


def test_calibration_maps_plot():
    from calibtut.recalibration import QuantileRecalibrator

    pit = np.random.default_rng(7).random(20)
    rec = QuantileRecalibrator(method="dcp").fit(pit)
    ax = plots.plot_calibration_maps({"DCP": rec.transform, "identity": lambda u: u}, n_grid=101)
    assert [line.get_label() for line in ax.lines][1:] == ["DCP", "identity"]
    np.testing.assert_allclose(ax.lines[1].get_ydata(), rec.transform(np.linspace(0, 1, 101)))
    with pytest.raises(TypeError, match="maps"):
        plots.plot_calibration_maps([rec.transform])
    with pytest.raises(ValueError, match="shape"):
        plots.plot_calibration_maps({"bad": lambda u: u[:3]})


def test_plot_argument_checks():
    with pytest.raises(ValueError, match="pit"):
        plots.pit_histogram([0.2, 1.2])
    with pytest.raises(ValueError, match="band"):
        plots.pit_reliability_diagram([0.2, 0.4], band=1.5)
    with pytest.raises(TypeError, match="bins"):
        plots.pit_histogram([0.2, 0.4], bins=2.5)
    with pytest.raises(ValueError, match="lower"):
        plots.plot_predictive_band([0, 1], [1, 1], [0, 0])
    with pytest.raises(ValueError, match=r"coverage must lie in \[0, 1\], got 1.2"):
        plots.coverage_histogram([1.2], n_cal=99, alpha=0.1, n_test=10)
    with pytest.raises(TypeError, match="coverage must hold real numbers"):
        plots.coverage_histogram(np.array([0.9 + 0.1j]), n_cal=99, alpha=0.1, n_test=10)
    with pytest.raises(TypeError, match="confidence must hold numbers"):
        plots.reliability_diagram(np.array(["0.9", "0.8"]), [1, 0])


# --- bands have their coverage (simulation of calibrated models) ----------------------------


def test_reliability_band_coverage():
    rng = np.random.default_rng(4)
    conf = rng.uniform(0.3, 1.0, 1500)
    ax = plots.reliability_diagram(conf, rng.random(conf.size) < conf, n_bins=10, show_counts=False)
    rects = _band_rectangles(ax)
    edges = np.linspace(0, 1, 11)
    idx = np.clip(np.searchsorted(edges, conf, side="left") - 1, 0, 9)
    inside = []
    for _ in range(300):
        correct = rng.random(conf.size) < conf
        for x0, _x1, lo, hi in rects:
            b = int(round(x0 * 10))
            acc = correct[idx == b].mean()
            inside.append(lo - 1e-12 <= acc <= hi + 1e-12)
    inside = np.mean(inside)
    # the binomial band is conservative (at least 90%), yet not trivially wide
    assert 0.88 <= inside <= 0.98


def test_pit_histogram_band_coverage():
    rng = np.random.default_rng(5)
    n, bins = 400, 10
    ax = plots.pit_histogram(rng.random(n), bins=bins, band=0.8)
    span = _band_artists(ax)[0]
    lo, hi = span.get_y(), span.get_y() + span.get_height()
    heights = np.array([np.histogram(rng.random(n), bins=bins, range=(0, 1))[0] for _ in range(500)]) * bins / n
    inside = np.mean((heights >= lo - 1e-12) & (heights <= hi + 1e-12))
    assert 0.78 <= inside <= 0.9


def test_pit_reliability_band_coverage():
    rng = np.random.default_rng(6)
    n = 250
    ax = plots.pit_reliability_diagram(rng.random(n), levels=11)
    band = _band_artists(ax)[0]
    vertices = band.get_paths()[0].vertices
    grid = np.linspace(0, 1, 11)[1:-1]
    # fill_between polygon: the lower edge comes first, then the upper edge reversed
    lower_pts = vertices[1:12]
    upper_pts = vertices[13:24][::-1]
    lo = np.interp(grid, lower_pts[:, 0], lower_pts[:, 1])
    hi = np.interp(grid, upper_pts[:, 0], upper_pts[:, 1])
    assert np.all(lo <= grid) and np.all(hi >= grid)
    freq = np.array([np.mean(rng.random(n)[:, None] <= grid, axis=0) for _ in range(400)])
    inside = np.mean((freq >= lo - 1e-12) & (freq <= hi + 1e-12))
    assert 0.88 <= inside <= 0.97


# --- quantile paths (online calibration notebooks) ------------------------------------------


def test_plot_quantile_paths_artists():
    rng = np.random.default_rng(0)
    q = np.sort(rng.normal(size=(30, 3)), axis=1)
    q[10] = [1.0, 0.5, 2.0]  # one crossing step
    q[20] = [0.0, 0.0, 1.0]  # one tie
    ax = plots.plot_quantile_paths(q, labels=rng.normal(size=30), true_quantiles=q + 0.1, levels=[0.25, 0.5, 0.75],
                                   show_true=[0, 2], mark_crossings=True, title="t")
    names = [line.get_label() for line in ax.get_lines()]
    assert names[:6] == ["predicted 25% quantile", "predicted 50% quantile", "predicted 75% quantile",
                         "true 25% quantile", "true 75% quantile", "observed label"]
    assert [line.get_linestyle() for line in ax.get_lines()[:3]] == ["-", ":", "--"]
    crossings = [line for line in ax.get_lines() if line.get_gid() == plots.CROSSING_GID]
    assert sorted(line.get_xdata()[0] for line in crossings) == [11, 21]
    np.testing.assert_array_equal(ax.get_lines()[0].get_xdata(), np.arange(1, 31))
    assert ax.get_title() == "t" and ax.get_legend() is not None


def test_plot_quantile_paths_subset_steps_and_existing_axes():
    fig, ax = plt.subplots()
    q = np.tile([0.0, 1.0, 2.0], (5, 1))
    out = plots.plot_quantile_paths(q, ax=ax, steps=np.arange(10, 15), show=[0, 2], legend=False)
    assert out is ax and ax.get_legend() is None
    assert [line.get_label() for line in ax.get_lines()] == ["predicted quantile 1", "predicted quantile 3"]
    np.testing.assert_array_equal(ax.get_lines()[1].get_ydata(), 2.0)
    assert not [line for line in ax.get_lines() if line.get_gid() == plots.CROSSING_GID]


def test_plot_quantile_paths_errors():
    q = np.tile([0.0, 1.0], (4, 1))
    with pytest.raises(ValueError, match="quantiles"):
        plots.plot_quantile_paths(q[0])
    with pytest.raises(ValueError, match="labels"):
        plots.plot_quantile_paths(q, labels=np.zeros(3))
    with pytest.raises(ValueError, match="true_quantiles"):
        plots.plot_quantile_paths(q, true_quantiles=np.zeros((4, 3)))
    with pytest.raises(ValueError, match="levels"):
        plots.plot_quantile_paths(q, levels=[0.5])
    with pytest.raises(ValueError, match="steps"):
        plots.plot_quantile_paths(q, steps=np.arange(3))
    with pytest.raises(ValueError, match="show"):
        plots.plot_quantile_paths(q, show=[2])
    with pytest.raises(TypeError, match="show_true"):
        plots.plot_quantile_paths(q, show_true=[0.5])


# --- figures for the text column: legible text once shrunk to it ----------------------------

COLUMN_PX = 700  # the book's text column at a 1280-pixel window (tests/browser/test_pages.py)
MIN_TEXT_PX = 9.0


def _smallest_text_px(fig, column_px=COLUMN_PX):
    """Height in page pixels of the figure's smallest text once its PNG is shrunk to the column."""
    fig.canvas.draw()
    natural_px = fig.get_tightbbox(fig.canvas.get_renderer()).width * fig.dpi  # bbox_inches="tight"
    scale = min(1.0, column_px / natural_px)
    sizes = [t.get_fontsize() for t in fig.findobj(matplotlib.text.Text) if t.get_visible() and t.get_text()]
    return min(sizes) / 72 * fig.dpi * scale, min(sizes)


def _column_figure(n):
    fig, axes = plots.column_subplots(n)
    for i, ax in enumerate(axes):
        ax.plot([0, 1], [0, 1], label=f"line {i}")
        ax.set(xlabel="quantile level", ylabel="observed frequency", title=f"panel {i}")
        ax.legend(fontsize="small")
    return fig


_RNG = np.random.default_rng(8)
_CONF = _RNG.uniform(0.4, 1.0, 300)
_X = np.linspace(0, 1, 40)
_Q = np.sort(_RNG.normal(size=(40, 3)), axis=1)
HELPER_FIGURES = {
    "reliability_diagram": lambda: plots.reliability_diagram(_CONF, _RNG.random(300) < _CONF).figure,
    "pit_histogram": lambda: plots.pit_histogram(_RNG.random(300)).figure,
    "pit_reliability_diagram": lambda: plots.pit_reliability_diagram(_RNG.random(300)).figure,
    "quantile_reliability_diagram": lambda: plots.quantile_reliability_diagram(
        _RNG.normal(size=300), np.tile([-1.28, 0.0, 1.28], (300, 1)), [0.1, 0.5, 0.9]).figure,
    "plot_predictive_band": lambda: plots.plot_predictive_band(_X, _X - 1, _X + 1, center=_X, y=_X + 0.5).figure,
    "plot_calibration_maps": lambda: plots.plot_calibration_maps({"identity": lambda u: u}).figure,
    "coverage_histogram": lambda: plots.coverage_histogram(
        _RNG.binomial(100, 0.9, 50) / 100, n_cal=99, alpha=0.1, n_test=100).figure,
    "plot_quantile_paths": lambda: plots.plot_quantile_paths(_Q, labels=_Q[:, 1], levels=[0.25, 0.5, 0.75]).figure,
    **{f"column_subplots({n})": (lambda n=n: _column_figure(n)) for n in range(1, 7)},
}


@pytest.mark.parametrize("name", list(HELPER_FIGURES))
def test_helper_figures_are_legible_in_the_column(name):
    px, smallest_pt = _smallest_text_px(HELPER_FIGURES[name]())
    assert smallest_pt >= plots.MIN_FONT_PT - 0.05  # the browser check assumes no smaller text
    assert px >= MIN_TEXT_PX, f"{name}: smallest text {px:.1f}px at a {COLUMN_PX}px column"


def test_a_wide_row_of_panels_is_illegible_and_column_subplots_wraps_it():
    fig, _ = plt.subplots(1, 4, figsize=(15, 3.6))  # the old chapters' layout
    for ax in fig.axes:
        ax.plot([0, 1], [0, 1], label="line")
        ax.legend(fontsize="small")
    px, _ = _smallest_text_px(fig)
    assert px < MIN_TEXT_PX  # its legends are under 7 pixels high in the column
    fig, axes = plots.column_subplots(4, sharey=True)
    assert axes.shape == (4,)
    np.testing.assert_allclose(fig.get_size_inches(), (plots.COLUMN_WIDTH_IN, 5.6))
    assert axes[1].get_shared_y_axes().joined(axes[0], axes[1])
    fig, axes = plots.column_subplots(5, panel_height=2.0)
    assert len(fig.axes) == 5
    np.testing.assert_allclose(fig.get_size_inches(), (plots.COLUMN_WIDTH_IN, 4.0))
    assert [ax.get_subplotspec().colspan.start for ax in axes] == [0, 1, 2, 0, 1]
    fig, axes = plots.column_subplots(3, ncols=1)
    np.testing.assert_allclose(fig.get_size_inches(), (plots.COLUMN_WIDTH_IN, 8.4))


def test_column_subplots_argument_checks():
    with pytest.raises(ValueError, match="n_panels"):
        plots.column_subplots(0)
    with pytest.raises(TypeError, match="ncols"):
        plots.column_subplots(2, ncols=1.5)
    with pytest.raises(ValueError, match="panel_height"):
        plots.column_subplots(2, panel_height=0.0)
    with pytest.raises(ValueError, match="width"):
        plots.column_subplots(2, width=-7.0)
