"""Paper 004's Table 1 from the runs of :func:`~calibtut.experiments.covariate_shift.run_cs_config`.

* :func:`table1_summary`: our Table 1, mean and spread over repeats;
* :func:`table1_vs_paper`: every cell of the paper's Table 1 beside ours,
  with the stand-in shifts of :data:`STAND_INS` for those we cannot run offline;
* :func:`ece_vs_rotation`: the data of the rotation-severity figure;
* :func:`repeats_by_method`: one shift's metric repeat by repeat.
"""

from __future__ import annotations

import pandas as pd

from calibtut.experiments.covariate_shift._common import check_frame
from calibtut.experiments.covariate_shift.tasks import METHODS
from calibtut.papers import paper_table
from calibtut.run import paper_vs_ours

__all__ = ["STAND_INS", "ece_vs_rotation", "repeats_by_method", "table1_summary", "table1_vs_paper"]

#: The paper's shifts that we cannot run offline -> the stand-in shift we run for them (None: no stand-in).
STAND_INS = {"S->M": "T->M", "M->S": "M->T", "A->W": "U->D8", "D->A": "D8->U", "W->A": None}


def _long(runs, name="runs"):
    """Runs in long format: shift, method, metric (ece, oce, cls_error), value."""
    check_frame(runs, name, ["shift", "method", "ece", "oce", "cls_error"])
    metrics = runs.melt(id_vars=["shift", "method"], value_vars=["ece", "oce"], var_name="metric")
    cls = runs[runs["method"] == "None"][["shift", "method", "cls_error"]].rename(columns={"cls_error": "value"})
    return pd.concat([cls.assign(metric="cls_error"), metrics], ignore_index=True)[["shift", "method", "metric",
                                                                                  "value"]]


def table1_summary(runs):
    """Our Table 1: mean and standard deviation (ddof 1, as the paper) over repeats, per shift, method, metric.

    Parameters
    ----------
    runs : pandas.DataFrame
        Rows of :func:`run_cs_config` with a ``shift`` column (the output of
        :func:`calibtut.run.sweep` over :func:`cs_tasks`).

    Returns
    -------
    pandas.DataFrame
        Long: ``shift``, ``method``, ``metric`` (``cls_error``, ``ece``,
        ``oce``), ``mean``, ``std`` (NaN for a single run), ``runs``; shifts
        in the order they first appear, methods in :data:`METHODS` order.

    Examples
    --------
    >>> runs = pd.DataFrame({"shift": "U->M", "method": ["None", "Temp", "None", "Temp"],
    ...                      "ece": [40.0, 36.0, 42.0, 38.0], "oce": [40.0, 36.0, 42.0, 38.0],
    ...                      "cls_error": 50.0})
    >>> table1_summary(runs).query("metric == 'ece'")[["method", "mean", "std"]].values.tolist()
    [['None', 41.0, 1.4142135623730951], ['Temp', 37.0, 1.4142135623730951]]
    """
    long = _long(runs)
    shifts = list(dict.fromkeys(long["shift"]))
    out = long.groupby(["shift", "method", "metric"], sort=False)["value"].agg(["mean", "std", "count"])
    out = out.rename(columns={"count": "runs"}).reset_index()
    rank = {m: i for i, m in enumerate(METHODS)}
    metric_rank = {"cls_error": 0, "ece": 1, "oce": 2}
    key = out["shift"].map({s: i for i, s in enumerate(shifts)}) * 10_000 + out["metric"].map(metric_rank) * 100
    out = out.assign(_k=key + out["method"].map(rank)).sort_values("_k").drop(columns="_k")
    return out.reset_index(drop=True)


def table1_vs_paper(ours, *, full=None):
    """Every cell of the paper's Table 1 beside ours, long: one row per (shift, method, metric).

    Paper shifts we cannot run offline are compared with their stand-in
    (:data:`STAND_INS`, named in the column ``ours shift``; ``"none"`` when
    there is none, with NaN for ours).

    Parameters
    ----------
    ours : pandas.DataFrame
        Our ``ci`` runs (rows of :func:`run_cs_config` with ``shift``); repeats are averaged.
    full : pandas.DataFrame, optional
        The full run, laid out like ``ours``.

    Returns
    -------
    pandas.DataFrame
        Columns ``shift``, ``ours shift``, ``method``, ``metric``, ``paper``,
        ``paper std``, ``source`` (where the paper's number was read),
        ``ours (ci)``, ``ours (full)`` (with ``full``) and ``difference``
        (ours minus paper, the full run where given), rounded to 2 decimals.

    Examples
    --------
    >>> runs = pd.DataFrame({"shift": "U->M", "method": ["None", "Temp"], "ece": [40.0, 36.0],
    ...                      "oce": [40.0, 36.0], "cls_error": 50.0})
    >>> t = table1_vs_paper(runs)
    >>> t.query("shift == 'U->M' and metric == 'ece'")[["method", "paper", "ours (ci)"]].values.tolist()[:2]
    [['None', 42.43, 40.0], ['Temp', 36.89, 36.0]]
    """
    paper = paper_table("covariate_shift", "table1")
    ours_shift = paper["shift"].map(lambda s: STAND_INS.get(s, s) or "none")
    key = ["shift", "method", "metric"]

    def relabel(runs, name):
        long = _long(runs, name)
        back = {v: k for k, v in STAND_INS.items() if v is not None}
        return long.assign(shift=long["shift"].map(lambda s: back.get(s, s)))

    table = paper_vs_ours(paper.rename(columns={"mean": "value"})[[*key, "value"]], relabel(ours, "ours"), on=key,
                          full=None if full is None else relabel(full, "full"), decimals=2)
    table.insert(1, "ours shift", ours_shift.to_numpy())
    table.insert(table.columns.get_loc("paper") + 1, "paper std", paper["std"].round(2).to_numpy())
    table.insert(table.columns.get_loc("paper std") + 1, "source", paper["source"].to_numpy())
    return table


def ece_vs_rotation(runs, metric="ece"):
    """Mean ECE (or another metric) per rotation angle and method: the severity figure's data.

    Parameters
    ----------
    runs : pandas.DataFrame
        Rows of :func:`run_cs_config` with ``shift``; only ``M->M`` (angle 0)
        and ``M->R<angle>`` shifts are used.
    metric : {"ece", "oce", "cls_error"}, default "ece"

    Returns
    -------
    pandas.DataFrame
        Index ``angle`` (degrees, increasing), one column per method
        (:data:`METHODS` order), the mean over repeats.

    Examples
    --------
    >>> runs = pd.DataFrame({"shift": ["M->M", "M->R30"], "method": "Temp", "ece": [1.0, 9.0],
    ...                      "oce": [0.5, 8.0], "cls_error": [2.0, 20.0]})
    >>> ece_vs_rotation(runs).to_dict()
    {'Temp': {0.0: 1.0, 30.0: 9.0}}
    """
    if metric not in ("ece", "oce", "cls_error"):
        raise ValueError(f"metric must be 'ece', 'oce' or 'cls_error', got {metric!r}")
    check_frame(runs, "runs", ["shift", "method", metric])
    angle = runs["shift"].map(lambda s: 0.0 if s == "M->M" else (float(s[4:]) if s.startswith("M->R") else None))
    kept = runs.assign(angle=angle).dropna(subset=["angle"])
    if kept.empty:
        raise ValueError("runs has no M->M or M->R<angle> shift")
    table = kept.pivot_table(index="angle", columns="method", values=metric, aggfunc="mean").sort_index()
    table = table[[m for m in METHODS if m in table.columns]]
    table.columns.name = None
    return table


def repeats_by_method(runs, shift, metric="ece"):
    """One shift's metric per calibrator repeat (rows) and method (columns).

    The repeats of a shift share the source classifier and differ only in the
    calibrators (their discriminator, DANN head and temperatures), so this
    table shows whether a method's effect holds repeat by repeat or only on
    average.

    Parameters
    ----------
    runs : pandas.DataFrame
        Rows of :func:`run_cs_config` with ``shift`` and ``repeat`` columns.
    shift : str
        The shift to show, e.g. ``"U->M"``; it must occur in ``runs``.
    metric : {"ece", "oce", "cls_error"}, default "ece"

    Returns
    -------
    pandas.DataFrame
        Index ``repeat``, one column per method (:data:`METHODS` order).

    Examples
    --------
    >>> runs = pd.DataFrame({"shift": "U->M", "repeat": [0, 0, 1, 1], "method": ["Temp", "IW+Temp"] * 2,
    ...                      "ece": [34.0, 27.0, 34.0, 33.0]})
    >>> repeats_by_method(runs, "U->M").values.tolist()
    [[34.0, 27.0], [34.0, 33.0]]
    """
    if metric not in ("ece", "oce", "cls_error"):
        raise ValueError(f"metric must be 'ece', 'oce' or 'cls_error', got {metric!r}")
    check_frame(runs, "runs", ["shift", "repeat", "method", metric])
    chosen = runs[runs["shift"] == shift]
    if chosen.empty:
        raise ValueError(f"runs has no shift {shift!r}; it has {sorted(runs['shift'].unique())}")
    table = chosen.pivot_table(index="repeat", columns="method", values=metric, aggfunc="mean")
    table = table[[m for m in METHODS if m in table.columns]]
    table.columns.name = None
    return table
