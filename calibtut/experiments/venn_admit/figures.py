"""The figures of paper 001's part: accuracy among admitted points, the paper's beside ours (chapters 6-8)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from calibtut._validation import check_alpha, check_frame
from calibtut.plots import MIN_FONT_PT, column_subplots

__all__ = ["plot_admitted_accuracy", "plot_claim_accuracy"]


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
    check_frame(table, "table", ["method", "class", "metric", "paper", ours])
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


def plot_claim_accuracy(cells, methods, classes, *, ours="ours (full)", alpha=0.1):
    """Accuracy among admitted points per method and true class, the paper's beside ours, one panel per task.

    Each cell is a pair of markers joined by a line: the paper's (open) and
    ours (filled), coloured by the true class; a dashed line marks
    ``1 - alpha``. Where the paper has a number and ours admits nothing
    (NaN), "none" is written at the foot of the panel.

    Parameters
    ----------
    cells : pandas.DataFrame
        Long paper-vs-ours cells of several tasks
        (:func:`~calibtut.experiments.venn_admit.tables.table4_vs_paper` with a
        ``dataset`` column added, :func:`~calibtut.experiments.venn_admit.tables.table5_vs_paper`,
        concatenated): columns ``dataset``, ``method``, ``class``, ``metric``,
        ``paper`` and ``ours``; only the rows of metric ``accuracy`` are drawn.
    methods : sequence of str
        The methods shown, in this order, on every panel.
    classes : dict of str to dict of str to str
        Per task (the ``dataset`` values, one panel each, in this order), its
        true classes shown and their legend labels.
    ours : str, default "ours (full)"
        The column of our numbers.
    alpha : float, default 0.1
        Miscoverage level in (0, 1).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> cells = pd.DataFrame({"dataset": "A", "method": "APS", "class": ["0", "1"], "metric": "accuracy",
    ...                       "paper": [0.95, 0.8], "ours (full)": [0.9, np.nan]})
    >>> fig = plot_claim_accuracy(cells, ["APS"], {"A": {"0": "neg.", "1": "pos."}})
    >>> [t.get_text() for t in fig.axes[0].texts]
    ['none']
    """
    check_frame(cells, "cells", ["dataset", "method", "class", "metric", "paper", ours])
    alpha = check_alpha(alpha)
    if isinstance(methods, str) or not isinstance(classes, dict):
        raise TypeError(f"methods must be a sequence of names and classes a dict, got {methods!r} and {classes!r}")
    methods = list(methods)
    if not methods or not classes:
        raise ValueError(f"methods and classes must not be empty, got {methods} and {classes}")
    accuracy = cells[cells["metric"] == "accuracy"].set_index(["dataset", "method", "class"])
    fig, axes = column_subplots(len(classes), ncols=2, panel_height=3.0, sharey=True)
    x = np.arange(len(methods))
    for ax, (task, labels) in zip(axes, classes.items()):
        width = 0.7 / len(labels)
        for i, (c, label) in enumerate(labels.items()):
            offset = x + (i - (len(labels) - 1) / 2) * width
            index = pd.MultiIndex.from_product([[task], methods, [c]])
            paper = accuracy["paper"].reindex(index).to_numpy(float)
            mine = accuracy[ours].reindex(index).to_numpy(float)
            colour = f"C{i}"
            ax.vlines(offset, paper, mine, color=colour, lw=1)
            ax.scatter(offset, paper, facecolors="none", edgecolors=colour, s=28)
            ax.scatter(offset, mine, color=colour, s=28, label=label)
            for at, p, m in zip(offset, paper, mine):
                if np.isnan(m) and not np.isnan(p):
                    ax.text(at, 0.03, "none", rotation=90, fontsize=MIN_FONT_PT, ha="center", va="bottom")
        ax.axhline(1 - alpha, color="k", ls="--", lw=1)
        ax.set(xticks=x, title=task, ylim=(0, 1.25), yticks=np.linspace(0, 1, 6))
        ax.set_xticklabels(methods, rotation=30, ha="right", fontsize=MIN_FONT_PT + 0.7)
        ax.legend(loc="upper center", fontsize=MIN_FONT_PT, ncol=len(labels), handletextpad=0.2, columnspacing=0.8)
    for ax in axes[::2]:
        ax.set_ylabel("accuracy among admitted")
    fig.suptitle("open: the paper's; filled: ours", fontsize=MIN_FONT_PT + 1)
    return fig
