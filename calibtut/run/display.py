"""How the book shows tables and figures in a notebook.

Tables: pandas shows a missing value as ``NaN`` and numbers the rows of every
table 0, 1, 2, ...; in a reader's table the first means "not reported" and the
second means nothing. :func:`table_html` shows "–" and drops the numbers.

Figures: a figure of several panels side by side, drawn for the text column,
is shrunk on a phone until its legends cannot be read. :func:`figure_html`
shows it twice, as drawn and re-laid out one panel per row
(:func:`stacked_figure_png`), and a CSS media query (in the output itself and
in the book's ``calibtut.css``) shows the second below :data:`PHONE_BREAK_PX`
pixels of window width. A figure of one panel, or of one column of panels,
keeps matplotlib's own PNG.

:func:`use_book_display` registers both as the notebook's HTML form of every
``pandas.DataFrame`` and every matplotlib ``Figure`` (the plain-text form, the
data and every computation are untouched). :func:`calibtut.run.settings`
calls it, so every chapter that picks its profile shows its tables and
figures this way, in the book as on Colab or in Jupyter.
"""

from __future__ import annotations

import base64
import io
import sys

import pandas as pd

__all__ = [
    "MISSING",
    "PHONE_BREAK_PX",
    "STACKED_WIDTH_IN",
    "figure_html",
    "stacked_figure_png",
    "table_html",
    "use_book_display",
]

#: How a missing value reads in a table of the book.
MISSING = "–"
#: Below this window width (CSS pixels) a figure of side-by-side panels is shown stacked.
PHONE_BREAK_PX = 600
#: Width of a stacked figure, in inches at 100 dpi: shown in a 390-pixel phone's
#: column (340 to 360 pixels) its smallest text, 8.3 points, stays above 9 pixels.
STACKED_WIDTH_IN = 4.0
_STYLE = (  # "!important": Jupyter's own rules for an output's images are more specific
    "<style>img.calibtut-stacked{display:none!important}"
    f"@media (max-width:{PHONE_BREAK_PX - 0.02}px){{img.calibtut-wide{{display:none!important}}"
    "img.calibtut-stacked{display:block!important}}</style>"
)


def table_html(df):
    """A DataFrame as the book's HTML table.

    Missing values read :data:`MISSING`; a default row index (0, 1, 2, ...
    without a name) is left out, while a meaningful index (a named one, or
    labels) is kept. Long and wide tables are cut as pandas cuts them
    (``display.max_rows``, ``display.max_columns``).

    Parameters
    ----------
    df : pandas.DataFrame

    Returns
    -------
    str
        HTML, as ``DataFrame._repr_html_`` gives it.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> html = table_html(pd.DataFrame({"method": ["a", "b"], "ece": [0.1, np.nan]}))
    >>> "–" in html, "NaN" in html, "<th>0</th>" in html
    (True, False, False)
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame, got {type(df).__name__}")
    default_index = isinstance(df.index, pd.RangeIndex) and df.index.name is None
    return df.to_html(
        notebook=True,
        na_rep=MISSING,
        index=not default_index,
        max_rows=pd.get_option("display.max_rows"),
        max_cols=pd.get_option("display.max_columns"),
        show_dimensions=pd.get_option("display.show_dimensions"),
    )


def _panels(fig):
    """The figure's panels in reading order, each a list of axes sharing one grid cell; None
    when the axes are not all laid out by one grid (insets, nested grids)."""
    grids, panels = set(), {}
    for ax in fig.axes:
        spec = ax.get_subplotspec()
        if spec is None:
            if ax.get_axes_locator() is None:  # placed by hand: not a grid's
                return None
            continue  # an axes appended to a panel (colorbar, marginal): follows it
        grids.add(id(spec.get_gridspec()))
        panels.setdefault((spec.rowspan.start, spec.colspan.start), []).append(ax)
    return None if len(grids) != 1 else [panels[key] for key in sorted(panels)]


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight")
    return buffer.getvalue()


def stacked_figure_png(fig):
    """The figure re-laid out one panel per row, :data:`STACKED_WIDTH_IN` inches wide, as PNG.

    Each panel keeps its aspect ratio (between 0.55 and 1 of its width in
    height); the figure itself is left as it was.

    Parameters
    ----------
    fig : matplotlib.figure.Figure

    Returns
    -------
    bytes or None
        The PNG; None when the panels are already one per row, not laid out by
        one grid, or hold a colorbar another layout engine placed (then the
        figure is shown as drawn).

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from PIL import Image
    >>> fig, axes = plt.subplots(1, 3, figsize=(7, 2.6))
    >>> png = stacked_figure_png(fig)
    >>> width, height = Image.open(io.BytesIO(png)).size
    >>> height > 2 * width, fig.get_size_inches().tolist()
    (True, [7.0, 2.6])
    >>> stacked_figure_png(plt.subplots(2, 1)[0]) is None
    True
    """
    from matplotlib.figure import Figure  # optional: only notebooks that draw import it
    from matplotlib.gridspec import GridSpec

    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    panels = _panels(fig)
    if panels is None or len(panels) < 2:
        return None
    nrows, ncols = panels[0][0].get_subplotspec().get_gridspec().get_geometry()
    if ncols == 1:
        return None
    size, engine = fig.get_size_inches().copy(), fig.get_layout_engine()
    axes = [ax for panel in panels for ax in panel]
    specs = [ax.get_subplotspec() for ax in axes]
    # shared axes show their tick labels on the outer panels only: on every panel once stacked
    labels = [(ax.xaxis.get_tick_params().get("labelbottom", True), ax.yaxis.get_tick_params().get("labelleft", True))
              for ax in axes]
    aspect = min(max((size[1] / nrows) / (size[0] / ncols), 0.55), 1.0)
    grid = GridSpec(len(panels), 1, figure=fig)
    # a figure laid out once (fig.tight_layout()) keeps its positions only in its axes
    positions = [(ax.get_position(original=True).frozen(), ax.get_position().frozen()) for ax in axes]
    legends = list(fig.legends)
    renderer = fig.canvas.get_renderer()
    sides = [_below(fig, legend, renderer) for legend in legends]
    try:
        for row, panel in enumerate(panels):
            for ax in panel:
                ax.set_subplotspec(grid[row, 0])
            # panels sharing an axis label only the outer ones: every panel, once stacked
            shown = {key: True for key, which in (("labelbottom", "x"), ("labelleft", "y"))
                     if _shares(panel[0], which, panels)}
            panel[0].tick_params(**shown)
        height = STACKED_WIDTH_IN * aspect * len(panels)
        fig.set_size_inches(STACKED_WIDTH_IN, height)
        # axes appended to a panel (a reliability diagram's counts) are not laid
        # out by the engine: more room between the rows for their tick labels
        appended = any(ax.get_subplotspec() is None for ax in fig.axes)
        fig.set_layout_engine("constrained", hspace=0.12 if appended else 0.02)
        fig.legends.clear()
        for legend, below in zip(legends, sides):
            _two_columns(fig, legend, below)
        _leave_room_for_legends(fig, height, sides)
        return _png(fig)
    except RuntimeError:  # a colorbar laid out by another engine: shown as drawn
        return None
    finally:
        fig.legends[:] = legends
        for ax, spec, (bottom, left), (original, active) in zip(axes, specs, labels, positions):
            ax.set_subplotspec(spec)
            # the public set_position would also take the axes out of the layout
            ax._set_position(original, which="original")  # noqa: SLF001
            ax._set_position(active, which="active")  # noqa: SLF001
            ax.tick_params(labelbottom=bottom, labelleft=left)
        fig.set_layout_engine(engine)
        fig.set_size_inches(size)


def _shares(ax, which, panels):
    """Whether the axes shares its ``which`` axis with another panel (not only with an appended axes)."""
    siblings = getattr(ax, f"get_shared_{which}_axes")().get_siblings(ax)
    return any(panel[0] in siblings for panel in panels if panel[0] is not ax)


def _below(fig, legend, renderer):
    box = legend.get_window_extent(renderer)
    return (box.y0 + box.y1) / 2 < fig.bbox.height / 2


def _two_columns(fig, legend, below):
    """The figure legend again, in at most two columns, at the bottom or the top of the figure."""
    texts = legend.get_texts()
    fig.legend(legend.legend_handles, [text.get_text() for text in texts], loc="lower center" if below else
               "upper center", ncols=min(2, len(texts)), frameon=legend.get_frame_on(),
               fontsize=texts[0].get_fontsize() if texts else None)


def _leave_room_for_legends(fig, height, sides):
    """Grow the figure by the height of its figure legends and keep the panels out of it."""
    if not fig.legends:
        return
    renderer = fig.canvas.get_renderer()
    below = above = 0.0
    for legend, under in zip(fig.legends, sides):
        extent = legend.get_window_extent(renderer).height / fig.dpi
        below, above = (max(below, extent), above) if under else (below, max(above, extent))
    total = height + below + above
    fig.set_size_inches(STACKED_WIDTH_IN, total)
    fig.get_layout_engine().set(rect=(0, below / total, 1, (total - below - above) / total))


def figure_html(fig):
    """A figure of side-by-side panels as drawn and stacked, the CSS choosing by width.

    Parameters
    ----------
    fig : matplotlib.figure.Figure

    Returns
    -------
    str or None
        Two ``<img>`` (classes ``calibtut-wide`` and ``calibtut-stacked``) and
        the media query; None for a figure :func:`stacked_figure_png` leaves as
        it is, which then shows as matplotlib's PNG.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> html = figure_html(plt.subplots(1, 2)[0])
    >>> html.count("<img"), "calibtut-stacked" in html
    (2, True)
    >>> figure_html(plt.subplots()[0]) is None
    True
    """
    stacked = stacked_figure_png(fig)
    if stacked is None:
        return None
    images = [(_png(fig), "wide", "figure"), (stacked, "stacked", "figure, one panel per row")]
    tags = "".join(
        f'<img class="calibtut-{kind}" alt="{alt}" src="data:image/png;base64,'
        f'{base64.b64encode(png).decode("ascii")}"/>'
        for png, kind, alt in images
    )
    return _STYLE + tags


def use_book_display(shell=None):
    """Show every DataFrame of this IPython session with :func:`table_html`, every figure with
    :func:`figure_html`.

    Parameters
    ----------
    shell : IPython.core.interactiveshell.InteractiveShell or None
        The session; None: the running one, if any.

    Returns
    -------
    bool
        Whether a session was found and set up (False in a plain Python
        process, where nothing changes).

    Examples
    --------
    >>> use_book_display() in (True, False)  # False outside IPython: nothing to set up
    True
    """
    if shell is None:
        try:
            from IPython import get_ipython  # optional: only notebooks have a session
        except ImportError:
            return False
        shell = get_ipython()
        if shell is None:
            return False
    html = shell.display_formatter.formatters["text/html"]
    html.for_type(pd.DataFrame, table_html)
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        # matplotlib's inline backend, loaded with the first figure, removes every
        # formatter of Figure: load it now, before the formatter is added
        pyplot.switch_backend(pyplot.get_backend())
    _show_figures(html)
    if not getattr(shell, "_calibtut_figures", False):
        # pyplot imported later: the formatter is put back after each cell
        shell.events.register("post_execute", lambda: _show_figures(html))
        shell._calibtut_figures = True
    return True


def _show_figures(html_formatter):
    html_formatter.for_type_by_name("matplotlib.figure", "Figure", figure_html)
