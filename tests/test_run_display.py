"""The book's display of figures: side-by-side panels shown as drawn and stacked."""

from __future__ import annotations

import base64
import io
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402
from IPython.core.pylabtools import select_figure_formats  # noqa: E402
from PIL import Image  # noqa: E402

from calibtut.run.display import STACKED_WIDTH_IN, figure_html, stacked_figure_png, use_book_display  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _size(png):
    return Image.open(io.BytesIO(png)).size


def _state(fig):
    return [(ax.get_position().bounds, ax.get_position(original=True).bounds, ax.get_in_layout(), ax.xaxis.get_tick_params().get("labelbottom"),
             ax.yaxis.get_tick_params().get("labelleft")) for ax in fig.axes], fig.get_size_inches().tolist()


@pytest.mark.parametrize("layout", ["constrained", "tight once", None])
@pytest.mark.parametrize(("rows", "cols"), [(1, 2), (1, 3), (2, 2), (2, 3)])
def test_panels_are_stacked_one_per_row_and_the_figure_is_left_as_drawn(rows, cols, layout):
    engine = None if layout == "tight once" else layout
    fig, axes = plt.subplots(rows, cols, figsize=(7, 2.8 * rows), sharex=True, sharey=True, layout=engine)
    for ax in axes.flat:
        ax.plot([0, 1], [0, 1], label="line")
        ax.legend()
    if layout == "tight once":
        fig.tight_layout()
    fig.legend(*axes.flat[0].get_legend_handles_labels(), loc="lower center", ncols=3)
    before = _state(fig), fig.legends[0]._ncols
    width, height = _size(stacked_figure_png(fig))
    assert (_state(fig), fig.legends[0]._ncols) == before
    # STACKED_WIDTH_IN at 100 dpi, give or take the tight box's trim and its 0.1-inch pad
    assert (STACKED_WIDTH_IN - 0.4) * 100 < width <= (STACKED_WIDTH_IN + 0.2) * 100 + 1
    assert height > 0.5 * width * rows * cols


def test_every_stacked_panel_shows_its_tick_labels():
    fig, axes = plt.subplots(2, 2, sharex=True, sharey=True)
    shown = []
    original = fig.savefig

    def record(*args, **kwargs):  # the tick labels as they are when the stacked PNG is drawn
        shown.extend((ax.xaxis.get_tick_params()["labelbottom"], ax.yaxis.get_tick_params()["labelleft"])
                     for ax in fig.axes)
        return original(*args, **kwargs)

    fig.savefig = record
    stacked_figure_png(fig)
    assert shown == [(True, True)] * 4
    assert [ax.yaxis.get_tick_params()["labelleft"] for ax in axes.flat] == [True, False, True, False]


def test_a_twin_axes_stays_in_its_panel():
    fig, (left, right) = plt.subplots(1, 2)
    twin = right.twinx()
    stacked_figure_png(fig)
    assert twin.get_subplotspec().get_geometry() == right.get_subplotspec().get_geometry() == (1, 2, 1, 1)
    assert not twin.yaxis.get_tick_params().get("labelleft")


@pytest.mark.parametrize(
    "make",
    [
        lambda: plt.subplots()[0],  # one panel
        lambda: plt.subplots(3, 1)[0],  # already one per row
        lambda: _nested(),  # a grid inside a grid
        lambda: _inset(),  # an axes placed by hand
    ],
)
def test_figures_left_as_drawn(make):
    fig = make()
    assert stacked_figure_png(fig) is None
    assert figure_html(fig) is None


def _nested():
    fig = plt.figure()
    outer = fig.add_gridspec(1, 2)
    inner = outer[0, 1].subgridspec(2, 1)
    fig.add_subplot(outer[0, 0]), fig.add_subplot(inner[0, 0]), fig.add_subplot(inner[1, 0])
    return fig


def _inset():
    fig, axes = plt.subplots(1, 2)
    fig.add_axes([0.1, 0.1, 0.2, 0.2])
    return fig


def test_figure_html_holds_both_pngs_and_the_media_query():
    fig, axes = plt.subplots(1, 2, figsize=(7, 2.6))
    html = figure_html(fig)
    pngs = [base64.b64decode(src) for src in re.findall(r'src="data:image/png;base64,([^"]+)"', html)]
    assert re.findall(r'class="(calibtut-\w+)"', html) == ["calibtut-wide", "calibtut-stacked"]
    (wide_w, wide_h), (stacked_w, stacked_h) = map(_size, pngs)
    assert wide_w > stacked_w and stacked_h > wide_h
    assert "@media (max-width:599.98px)" in html


def test_figure_html_refuses_what_is_not_a_figure():
    with pytest.raises(TypeError, match="fig must be a matplotlib Figure"):
        stacked_figure_png(np.zeros((2, 2)))


def test_the_figure_display_survives_the_inline_backend():
    """The inline backend removes every formatter of Figure when it loads; the display puts it back."""
    shell = InteractiveShell.instance()
    assert use_book_display(shell)
    fig, _ = plt.subplots(1, 2)
    assert "text/html" in shell.display_formatter.format(fig)[0]
    select_figure_formats(shell, {"png"})  # what the backend does with the first figure
    assert "text/html" not in shell.display_formatter.format(fig)[0]
    shell.events.trigger("post_execute")
    assert "text/html" in shell.display_formatter.format(fig)[0]
    single, _ = plt.subplots()
    assert "text/html" not in shell.display_formatter.format(single)[0]
