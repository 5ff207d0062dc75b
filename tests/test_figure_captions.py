"""Every figure a chapter draws has a caption and a name.

A figure of a chapter is the image output of a code cell, which MyST-NB
wraps in a numbered, captioned figure when the cell's metadata says
``mystnb: {figure: {caption: ..., name: fig-...}}``. The chapters are
committed without outputs, so which cells draw is read from their code,
with Python's own parser (:func:`figures_drawn`):

* a call to a ``pyplot`` function (``plt.subplots``, ``plt.show``,
  ``plt.plot`` ...) other than the few that draw nothing (``plt.close``,
  ``plt.rc`` ...);
* a call to a function of :mod:`calibtut.plots` or to a plotting helper of
  the package, named ``plot_*``, ``*_diagram``, ``*_histogram``, ``*_plot``
  or ``*_figure`` or ``*_figures``, which makes a figure when no axes are passed;
* a pandas ``.plot(...)`` / ``.plot.<kind>(...)`` call on anything that is
  not an axes object (``ax``, ``axes[i]``).

A cell that ends with ``plt.close(...)`` shows nothing. The figure options
wrap every rich output of the cell and its name may be used once, so a cell
that shows several figures (``plt.show()`` twice, or in a loop) is refused,
and so is a figure cell that shows anything else (a ``display(...)`` call, or
a last expression whose value IPython prints: an Axes' repr, or a returned
Figure, which is then shown twice): one figure per cell, nothing beside it. The self-tests below hand the detector cells
of each kind.
"""

from __future__ import annotations

import ast
import re

import jupytext
import pytest
from nbformat import from_dict

from tools.pair_notebooks import sources

import calibtut.plots

#: pyplot functions that draw nothing.
NOT_DRAWING = frozenset({"close", "rc", "rcdefaults", "rc_context", "get_cmap", "ioff", "ion", "setp",
                         "style", "colormaps", "gcf", "gca"})
HELPER = re.compile(r"^plot_|_(diagram|histogram|plot|figures?)$")
PLOTS = frozenset(calibtut.plots.__all__)
NAME = re.compile(r"^fig-[a-z0-9]+(-[a-z0-9]+)*$")
AXES = re.compile(r"^(ax|axs|axes)\w*(\[.*\])?$")


def _python(source: str) -> ast.Module:
    """The cell's code without IPython magics and shell lines."""
    lines = ["pass" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()]
    return ast.parse("\n".join(lines))


def _draws(call: ast.Call) -> bool:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id in PLOTS or bool(HELPER.search(func.id))
    if not isinstance(func, ast.Attribute):
        return False
    owner = ast.unparse(func.value)
    if owner in ("plt", "pyplot", "matplotlib.pyplot"):
        return func.attr not in NOT_DRAWING
    if func.attr in PLOTS or HELPER.search(func.attr):
        return True
    plot_kind = owner.endswith(".plot")  # df.plot.bar(...)
    return (func.attr == "plot" or plot_kind) and not AXES.match(owner)


def _creates(call: ast.Call) -> bool:
    """Whether a drawing call makes a new figure: it is handed no axes to draw on."""
    name = ast.unparse(call.func)
    if name in ("plt.subplots", "plt.figure", "plt.subplot_mosaic", "column_subplots"):
        return True
    handed = [keyword.value for keyword in call.keywords if keyword.arg == "ax"] + [
        arg for arg in call.args if AXES.match(ast.unparse(arg))]
    return _draws(call) and not name.startswith("plt.") and not handed


def figures_drawn(source: str) -> int:
    """How many figures a code cell shows: 0, 1, or 2 for "several".

    A cell that only defines functions (and imports) draws nothing; a cell
    that calls ``plt.show()`` twice, or makes a new figure inside a loop or
    in two places, shows several.

    Examples
    --------
    >>> figures_drawn("fig, ax = plt.subplots()\\nax.plot([0, 1])\\nplt.show()")
    1
    >>> figures_drawn("ax.plot([0, 1])")
    0
    """
    tree = _python(source)
    body = [node for node in tree.body if not isinstance(node, (ast.FunctionDef, ast.Import, ast.ImportFrom))]
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    if not body or not any(_draws(call) for call in calls):
        return 0
    last = tree.body[-1]
    if isinstance(last, ast.Expr) and isinstance(last.value, ast.Call) and ast.unparse(last.value.func) == "plt.close":
        return 0
    looped = {id(node) for loop in ast.walk(tree) if isinstance(loop, (ast.For, ast.While, ast.comprehension))
              for node in ast.walk(loop)}
    shows = [call for call in calls if ast.unparse(call.func) == "plt.show"]
    made = [call for call in calls if _creates(call)]
    several = len(shows) > 1 or len(made) > 1 or any(id(call) in looped for call in shows + made)
    return 2 if several else 1


def other_outputs(source: str) -> bool:
    """Whether a cell shows something beside its figures: a ``display(...)`` call, or a last
    expression whose value IPython prints (a returned Figure is even shown twice).

    Ending with ``plt.show()``, ``fig.tight_layout()``, ``print(...)`` or a statement shows
    nothing more; an ending ``widgets.interactive(...)`` is the figure itself (drawn in the widget).

    Examples
    --------
    >>> other_outputs("fig, ax = plt.subplots()\\nax"), other_outputs("fig, ax = plt.subplots()\\nplt.show()")
    (True, False)
    """
    tree = _python(source)
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    if any(ast.unparse(call.func) == "display" for call in calls):
        return True
    last = tree.body[-1] if tree.body else None
    if not isinstance(last, ast.Expr) or isinstance(last.value, ast.Constant):
        return False
    name = ast.unparse(last.value.func) if isinstance(last.value, ast.Call) else ""
    # print writes a stream, which stays outside the figure; an interactive widget draws the figure
    return not (name in ("plt.show", "plt.close", "print") or name.endswith((".tight_layout", "interactive")))


def interactive(source: str) -> bool:
    """Whether a cell ends with an interactive widget (``widgets.interactive(...)``).

    Examples
    --------
    >>> interactive("widgets.interactive(f, n=(1, 5))"), interactive("plt.show()")
    (True, False)
    """
    tree = _python(source)
    last = tree.body[-1] if tree.body else None
    return (isinstance(last, ast.Expr) and isinstance(last.value, ast.Call)
            and ast.unparse(last.value.func).endswith("interactive"))


def figure_problems(cells) -> list[str]:
    """What the figure cells of a chapter lack; empty when each has a caption and a name."""
    found = []
    for index, cell in enumerate(cells):
        if cell.cell_type != "code":
            continue
        count = figures_drawn(cell.source)
        options = cell.metadata.get("mystnb", {}).get("figure", {})
        if interactive(cell.source):
            # a widget's cell has several outputs, and MyST-NB gives each the figure's name (a
            # duplicate target that fails the strict build): its caption is the line above it
            if options:
                found.append(f"cell {index} is an interactive widget: no figure options, a caption line above")
            continue
        if count > 1:
            found.append(f"cell {index} shows several figures: one figure per cell")
        elif count and other_outputs(cell.source):
            found.append(f"cell {index} shows more than its figure: end it with plt.show(), display the rest apart")
        elif count and not str(options.get("caption", "")).strip():
            found.append(f"cell {index} draws a figure without a caption")
        elif count and not NAME.match(str(options.get("name", ""))):
            found.append(f"cell {index} draws a figure without a name fig-...")
        elif not count and options:
            found.append(f"cell {index} has figure options but draws no figure")
    return found


CHAPTERS = sources()


def _cells(chapter):
    return jupytext.read(chapter).cells


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda path: path.stem)
def test_figures_have_captions_and_names(chapter):
    assert not figure_problems(_cells(chapter)), f"{chapter.name}: {figure_problems(_cells(chapter))}"


def test_figure_names_are_unique():
    names = [cell.metadata["mystnb"]["figure"]["name"] for chapter in CHAPTERS for cell in _cells(chapter)
             if "figure" in cell.metadata.get("mystnb", {})]
    assert names and len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


@pytest.mark.parametrize(
    ("source", "count"),
    [
        ("fig, ax = plt.subplots()\nax.plot(x, y)\nplt.show()", 1),
        ("fig, axes = column_subplots(3)\nfor ax in axes:\n    ax.plot(x)\nfig.tight_layout()", 1),
        ("reliability_diagram(probs, labels)", 1),
        ("fig = plot_claim_verdicts(table)", 1),
        ("critical_difference_diagram(result)", 1),
        ("df.plot(x='a', y='b')", 1),
        ("df.plot.bar()", 1),
        ("plt.hist(x)", 1),
        ("%matplotlib inline\nplt.plot(x)", 1),
        ("ax.plot(x, y)\naxes[0].plot(x)", 0),
        ("fig, ax = plt.subplots()\nax.plot(x)\nplt.close(fig)", 0),
        ("plt.rc('font', size=9)\nx = np.linspace(0, 1)", 0),
        ("table.round(3)", 0),
        ("def draw(x):\n    fig, ax = plt.subplots()\n    ax.plot(x)", 0),
        ("def draw(x):\n    fig, ax = plt.subplots()\n\ndraw(x)", 1),
        ("fig, axes = column_subplots(2)\nfor a, x in zip(axes, xs):\n    plot_base(x, a)", 2),
        ("fig, axes = column_subplots(2)\nfor ax_pair, x in zip(axes, xs):\n    plot_base(x, ax_pair)", 1),
        ("for d in data:\n    plt.plot(d)\n    plt.show()", 2),
        ("for d in data:\n    reliability_diagram(d)", 2),
        ("plot_calibration_test(table)\nplot_reliability(curves, shown)", 2),
        ("plt.plot(a)\nplt.show()\nplt.plot(b)\nplt.show()", 2),
    ],
)
def test_figures_drawn(source, count):
    assert figures_drawn(source) == count


def test_figure_problems_are_found():
    cell = {"cell_type": "code", "source": "plt.plot(x)\nplt.show()", "metadata": {}}
    named = {"mystnb": {"figure": {"caption": "A line.", "name": "fig-line"}}}
    table = {"cell_type": "code", "source": "table.round(3)", "metadata": named}
    cells = [from_dict(cell), from_dict({**cell, "metadata": named}), from_dict(table)]
    assert figure_problems(cells) == [
        "cell 0 draws a figure without a caption",
        "cell 2 has figure options but draws no figure",
    ]
    returned = from_dict({**cell, "source": "fig = plot_x(data)\nfig", "metadata": named})
    assert figure_problems([returned]) == [
        "cell 0 shows more than its figure: end it with plt.show(), display the rest apart"]
    no_name = from_dict({**cell, "metadata": {"mystnb": {"figure": {"caption": "A line."}}}})
    assert figure_problems([no_name]) == ["cell 0 draws a figure without a name fig-..."]
    widget = {**cell, "source": "def show(n):\n    plt.plot(x[:n])\n    plt.show()\n\n\nwidgets.interactive(show, n=(1, 9))"}
    assert figure_problems([from_dict(widget)]) == []
    assert figure_problems([from_dict({**widget, "metadata": named})]) == [
        "cell 0 is an interactive widget: no figure options, a caption line above"]
