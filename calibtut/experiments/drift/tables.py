"""The drift paper's tables: Table 1's rows and blocks, the paired comparisons behind its claims, Tables 1 and 2
beside the paper's numbers.

:func:`table1_rows` and :func:`table1_summary` turn the benchmark's rows
(:func:`~calibtut.experiments.drift.benchmark_table`) into Table 1's block,
:func:`paired_difference` is the paired comparison behind the claims, and
:func:`table1_vs_paper` / :func:`table2_vs_paper` put Tables 1 and 2 beside
the paper's numbers (:func:`calibtut.papers.paper_table`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from calibtut._validation import check_choice, check_choices, check_frame
from calibtut.papers import paper_table
from calibtut.run import paper_vs_ours

__all__ = [
    "METHOD_LABELS",
    "paired_difference",
    "table1_rows",
    "table1_summary",
    "table1_vs_paper",
    "table2_vs_paper",
]


METHOD_LABELS = {"original": "orig.", "conformal": "conf.", "ours": "ours", "regret": "regret", "aci": "ACI"}
"""Method name -> its column label in the paper's Table 1 (ACI is not in the paper)."""

TABLE1_METRICS = ("pinball", "ece", "sharpness")
"""The three scores of Table 1, in its order."""

TABLE1_COLUMNS = ("dataset", "seed", "drift", "method", "sequence", *TABLE1_METRICS)


def table1_rows(bench):
    """The benchmark's rows as Table 1 labels them: methods renamed (:data:`METHOD_LABELS`), Table 1's columns.

    Parameters
    ----------
    bench : pandas.DataFrame
        What :func:`benchmark_table` returns.

    Returns
    -------
    pandas.DataFrame
        Columns ``dataset``, ``seed``, ``drift``, ``method``, ``sequence``,
        ``pinball``, ``ece``, ``sharpness``.

    Examples
    --------
    >>> bench = pd.DataFrame({"dataset": ["yacht"], "seed": [0], "drift": ["jump"], "method": ["conformal"],
    ...                       "sequence": [0], "pinball": [0.5], "ece": [0.1], "sharpness": [2.0], "n_steps": [100]})
    >>> table1_rows(bench).to_dict("records")
    [{'dataset': 'yacht', 'seed': 0, 'drift': 'jump', 'method': 'conf.', 'sequence': 0, 'pinball': 0.5, 'ece': 0.1, \
'sharpness': 2.0}]
    """
    check_frame(bench, "bench", TABLE1_COLUMNS)
    unknown = sorted(set(bench["method"]) - set(METHOD_LABELS))
    if unknown:
        raise ValueError(f"bench['method'] holds names outside {list(METHOD_LABELS)}: {unknown}")
    return bench.assign(method=bench["method"].map(METHOD_LABELS))[list(TABLE1_COLUMNS)]


def table1_summary(rows):
    """Table 1's block for some rows: the mean of each score per drift (or row) and method.

    Parameters
    ----------
    rows : pandas.DataFrame
        Columns ``drift``, ``method`` and the three scores, e.g. :func:`table1_rows`.

    Returns
    -------
    pandas.DataFrame
        Index ``(drift, metric)``, one column per method in the order of
        :data:`METHOD_LABELS`: the mean over datasets, seeds and sequences.

    Examples
    --------
    >>> rows = pd.DataFrame({"drift": ["jump"] * 3, "method": ["ours", "ours", "conf."], "pinball": [1.0, 2.0, 4.0],
    ...                      "ece": [0.1, 0.3, 0.4], "sharpness": [1.0, 1.0, 2.0]})
    >>> summary = table1_summary(rows)
    >>> summary.index.tolist(), summary.columns.tolist()
    ([('jump', 'pinball'), ('jump', 'ece'), ('jump', 'sharpness')], ['conf.', 'ours'])
    >>> summary.values.tolist()
    [[4.0, 1.5], [0.4, 0.2], [2.0, 1.0]]
    """
    check_frame(rows, "rows", ["drift", "method", *TABLE1_METRICS])
    means = rows.groupby(["drift", "method"], sort=False)[list(TABLE1_METRICS)].mean()
    long = means.rename_axis(columns="metric").stack().unstack("method")
    order = [m for m in METHOD_LABELS.values() if m in long.columns]
    return long[order + [m for m in long.columns if m not in order]].rename_axis(columns=None)


def paired_difference(rows, metric, a, b, alternative="two-sided"):
    """Mean of ``metric`` of method ``a`` minus method ``b`` per drift, paired by base model, with a t-test.

    The sequences of one base model (one ``dataset`` and ``seed``) share its
    forecasts, so they are not independent: the differences are first
    averaged over each base model's sequences, and the mean, its standard
    error and the t-test are taken over base models.

    Parameters
    ----------
    rows : pandas.DataFrame
        Columns ``dataset``, ``seed``, ``sequence``, ``drift``, ``method`` and ``metric``.
    metric : {"pinball", "ece", "sharpness"}
    a, b : str
        Two different method labels in ``rows["method"]``.
    alternative : {"two-sided", "greater", "less"}, default "two-sided"
        The t-test's alternative for the mean of ``a`` minus ``b``: a claim
        that ``a`` is larger is tested with ``"greater"``.

    Returns
    -------
    pandas.DataFrame
        Index ``drift``; columns ``mean``, ``se`` (sample standard deviation
        over the base models' mean differences divided by the square root of
        their number), ``n`` (the number of base models) and ``p`` (the
        p-value of the one-sample t-test of a zero mean against
        ``alternative``, from :func:`scipy.stats.ttest_1samp`; NaN with one
        base model).

    Examples
    --------
    >>> rows = pd.DataFrame({"dataset": "d", "seed": [0, 0, 1, 1], "drift": "jump", "sequence": 0,
    ...                      "method": ["ours", "conf.", "ours", "conf."], "ece": [0.1, 0.3, 0.2, 0.6]})
    >>> paired_difference(rows, "ece", "conf.", "ours").round(3).to_dict("records")
    [{'mean': 0.3, 'se': 0.1, 'n': 2, 'p': 0.205}]
    >>> round(paired_difference(rows, "ece", "conf.", "ours", alternative="greater")["p"].item(), 3)
    0.102
    """
    check_choice(metric, "metric", list(TABLE1_METRICS))
    check_frame(rows, "rows", ["dataset", "seed", "sequence", "drift", "method", metric])
    for name, label in (("a", a), ("b", b)):
        if label not in set(rows["method"]):
            raise ValueError(f"{name} must be a method of rows, one of {sorted(set(rows['method']))}, got {label!r}")
    if a == b:
        raise ValueError(f"a and b must be two different methods, got {a!r} twice")
    if alternative not in ("two-sided", "greater", "less"):
        raise ValueError(f"alternative must be 'two-sided', 'greater' or 'less', got {alternative!r}")
    wide = rows.pivot_table(index=["dataset", "seed", "sequence", "drift"], columns="method", values=metric)
    per_model = (wide[a] - wide[b]).groupby(level=["drift", "dataset", "seed"]).mean().dropna()
    d = per_model.groupby(level="drift")
    p = d.apply(lambda x: stats.ttest_1samp(x.to_numpy(), 0.0, alternative=alternative).pvalue
                if len(x) > 1 else np.nan)
    return pd.DataFrame({"mean": d.mean(), "se": d.std(ddof=1) / np.sqrt(d.count()), "n": d.count(), "p": p})


def table1_vs_paper(ours, *, rows, full=None, by="drift", live="ci"):
    """Table 1 of the paper beside ours, one line per (row, metric, method).

    The paper's numbers are :func:`calibtut.papers.paper_table` ``("drift",
    "table1")``; the two cells unreadable in our copy are left out.

    Parameters
    ----------
    ours : pandas.DataFrame
        Our scores: the column ``by`` holds Table 1's row (a drift, ``"COVID"``,
        ``"stock"``), ``method`` a label of :data:`METHOD_LABELS`, and the three scores.
    rows : sequence of str
        Table 1's rows to compare.
    full : pandas.DataFrame, optional
        The published full run, laid out like ``ours``.
    by : str, default "drift"
        The column of ``ours`` (and ``full``) that holds Table 1's row.
    live : {"ci", "full"}, default "ci"
        The profile ``ours`` was run at; it names the column ``ours (<live>)``
        (see :func:`calibtut.run.paper_vs_ours`).

    Returns
    -------
    pandas.DataFrame
        Columns ``row``, ``metric``, ``method``, ``paper``, ``ours (<live>)``,
        ``ours (full)`` (with ``full``) and ``difference``, rounded to 3
        decimals, in the paper's order.

    Examples
    --------
    >>> ours = pd.DataFrame({"drift": "jump", "method": ["ours", "ours"], "pinball": [0.5, 0.6],
    ...                      "ece": [0.07, 0.09], "sharpness": [2.0, 2.0]})
    >>> table = table1_vs_paper(ours, rows=["jump"])
    >>> table.columns.tolist()
    ['row', 'metric', 'method', 'paper', 'ours (ci)', 'difference']
    >>> table.query("method == 'ours'")[["metric", "paper", "ours (ci)"]].values.tolist()
    [['pinball', 0.533, 0.55], ['ece', 0.073, 0.08], ['sharpness', 1.972, 2.0]]
    """
    paper = paper_table("drift", "table1").dropna()
    rows = check_choices(rows, "rows", tuple(paper["row"].unique()))

    def long(frame, name):
        check_frame(frame, name, [by, "method", *TABLE1_METRICS])
        return frame.melt(id_vars=[by, "method"], value_vars=list(TABLE1_METRICS), var_name="metric").rename(
            columns={by: "row"})

    full_long = None if full is None else long(full, "full")
    table = paper_vs_ours(paper[paper["row"].isin(rows)], long(ours, "ours"), on=["row", "metric", "method"],
                          full=full_long, live=live, decimals=3)
    return table.reset_index(drop=True)


def table2_vs_paper(table2, *, live="ci"):
    """Table 2 of the paper (Appendix B.1) beside ours, one line per (``w_mix``, metric).

    Parameters
    ----------
    table2 : pandas.DataFrame
        Index ``w_mix``; columns ``candidate``, ``pinball``, ``ece`` and
        ``sharpness``: the chosen candidate for each weight, scored on fresh
        synthetic tasks.
    live : {"ci", "full"}, default "ci"
        The profile ``table2`` was run at; it names the column ``ours (<live>)``
        (see :func:`calibtut.run.paper_vs_ours`).

    Returns
    -------
    pandas.DataFrame
        Columns ``w_mix``, ``metric``, ``paper``, ``ours (<live>)``, ``difference``,
        rounded to 3 decimals, in the paper's order; the paper's numbers are
        :func:`calibtut.papers.paper_table` ``("drift", "table2")``.

    Examples
    --------
    >>> ours = pd.DataFrame({"candidate": ["c1", "c2"], "pinball": [0.16, 0.17], "ece": [0.02, 0.01],
    ...                      "sharpness": [0.8, 0.9]}, index=pd.Index([0.0, 1.0], name="w_mix"))
    >>> table = table2_vs_paper(ours)
    >>> table.query("w_mix == 1.0")[["metric", "paper", "ours (ci)"]].values.tolist()
    [['pinball', 0.178, 0.17], ['ece', 0.008, 0.01], ['sharpness', 0.972, 0.9]]
    """
    check_frame(table2, "table2", ["candidate", *TABLE1_METRICS])
    if table2.index.name != "w_mix":
        raise ValueError(f"table2 must be indexed by w_mix, got index {table2.index.name!r}")
    ours = table2.reset_index().melt(id_vars=["w_mix", "candidate"], value_vars=list(TABLE1_METRICS),
                                     var_name="metric")
    return paper_vs_ours(paper_table("drift", "table2"), ours.astype({"value": float}), on=["w_mix", "metric"],
                         live=live, decimals=3)
