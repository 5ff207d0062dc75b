"""The figures of paper 001's part: accuracy among admitted points, the paper's beside ours (chapters 6 and 7)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from calibtut._validation import check_alpha
from calibtut.experiments.venn_admit._common import check_rows
from calibtut.plots import MIN_FONT_PT, column_subplots

__all__ = ["plot_admitted_accuracy"]


def plot_admitted_accuracy(table, admitted, methods, classes, *, alpha=0.1, live="ci", titles=("paper", "ours"),
                           unit="points"):
    """Bars of the accuracy among admitted points per method and true class: the paper's panel beside ours.

    Parameters
    ----------
    table : pandas.DataFrame
        A long paper-vs-ours table with the rows of metric ``accuracy``
        (:func:`~calibtut.experiments.venn_admit.tables.table4_vs_paper`,
        :func:`~calibtut.experiments.venn_admit.tables.table5_vs_paper`):
        columns ``method``, ``class``, ``metric``, ``paper`` and ``ours (<live>)``.
    admitted : pandas.Series
        Admitted points over all calibration splits, indexed by
        ``(method, class)`` with the classes of ``table`` (the ``n`` of
        :func:`~calibtut.experiments.venn_admit.tables.pooled_singletons`);
        written above our bars, so that a bar over a handful of points reads as such.
    methods : sequence of str
        The methods shown, in this order.
    classes : dict of str to str
        The classes of ``table`` shown, in this order, and their legend labels.
    alpha : float, default 0.1
        Miscoverage level in (0, 1): a dashed line marks ``1 - alpha``.
    live : str, default "ci"
        The profile of our column, ``ours (<live>)``.
    titles : tuple of str, default ("paper", "ours")
        Titles of the two panels.
    unit : str, default "points"
        What a point is (``"residues"``, ``"tokens"``), for the axis label.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> table = pd.DataFrame({"method": "ADMIT", "class": ["0", "1"], "metric": "accuracy",
    ...                       "paper": [0.95, 0.8], "ours (ci)": [0.9, 0.7]})
    >>> admitted = pd.Series([40, 3], index=pd.MultiIndex.from_tuples([("ADMIT", "0"), ("ADMIT", "1")]))
    >>> fig = plot_admitted_accuracy(table, admitted, ["ADMIT"], {"0": "correct", "1": "error"})
    >>> [t.get_text() for t in fig.axes[1].texts]
    ['40', '3']
    """
    ours = f"ours ({live})"
    check_rows(table, ["method", "class", "metric", "paper", ours], "table")
    if not isinstance(admitted, pd.Series):
        raise TypeError(f"admitted must be a pandas Series indexed by (method, class), got {type(admitted).__name__}")
    alpha = check_alpha(alpha)
    methods, classes = list(methods), dict(classes)
    if not methods or not classes:
        raise ValueError(f"methods and classes must not be empty, got {methods} and {classes}")
    cells = table[(table["metric"] == "accuracy") & table["method"].isin(methods)]
    fig, axes = column_subplots(2, panel_height=3.6, sharey=True)
    width = 0.75 / len(classes)
    x = np.arange(len(methods))
    for ax, column, title in ((axes[0], "paper", titles[0]), (axes[1], ours, titles[1])):
        for i, (c, label) in enumerate(classes.items()):
            offset = (i - (len(classes) - 1) / 2) * width
            values = cells[cells["class"] == c].set_index("method")[column].reindex(methods)
            ax.bar(x + offset, values.fillna(0), width, label=label)
            if column == "paper":
                continue
            for j, method in enumerate(methods):
                ax.text(x[j] + offset, np.nan_to_num(values.iloc[j]) + 0.01, int(admitted.loc[(method, c)]),
                        rotation=90, fontsize=MIN_FONT_PT, ha="center", va="bottom")
        ax.axhline(1 - alpha, color="k", ls="--", lw=1)
        ax.set(xticks=x, title=title, ylim=(0, 1.25))
        ax.set_xticklabels(methods, rotation=30, ha="right")
    axes[0].set_ylabel(f"accuracy among admitted {unit}")
    axes[0].legend(title="true class", loc="upper center", ncol=len(classes), fontsize=MIN_FONT_PT,
                   title_fontsize=MIN_FONT_PT)
    return fig
