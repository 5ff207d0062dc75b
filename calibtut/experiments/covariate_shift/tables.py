"""Paper 004's Table 1 from the runs of :func:`~calibtut.experiments.covariate_shift.run_cs_config`.

* :func:`table1_summary`: our Table 1, mean and spread over repeats;
* :func:`table1_vs_paper`: every cell of the paper's Table 1 beside ours,
  with the stand-in shifts of :data:`STAND_INS` for those we cannot run offline;
* :func:`ece_vs_rotation`: the data of the rotation-severity figure;
* :func:`repeats_by_method`: one shift's metric repeat by repeat;
* :func:`iw_gain_by_shift`: per shift, the effective sample size of the
  importance weights beside what IW+Temp. gains over Temp.;
* :func:`weight_variants_summary`: the runs of
  :func:`~calibtut.experiments.covariate_shift.run_weight_variants` averaged
  per variant, beside the paper's IW+Temp. and Temp.;
* :func:`source_recipe_vs_paper`: Temp., the paper's IW+Temp. pipeline and the
  oracle temperature per source recipe and discriminator schedule (the book's
  or the authors'), beside the paper;
* :func:`authors_network_vs_paper`: the digit rows of Table 1 as the paper
  prints them, run on the authors' trained source networks and on ours, with
  a verdict per cell;
* :func:`network_study_summary` and :func:`network_study_conclusion`: the
  network study of
  :func:`~calibtut.experiments.covariate_shift.run_network_study`, one row
  per source network (IW+Temp.'s ECE beside its mechanism), and what it
  concludes, with bootstrap intervals and a permutation test.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import stats

from calibtut._validation import check_frame, check_int, check_real, check_rng
from calibtut.experiments.covariate_shift.tasks import METHODS, parse_shift
from calibtut.papers import paper_table
from calibtut.run import Verdict, paper_vs_ours, verdict_table

__all__ = ["STAND_INS", "authors_network_tables", "authors_network_vs_paper", "ece_vs_rotation", "iw_gain_by_shift",
           "network_study_conclusion", "network_study_summary", "repeats_by_method", "source_recipe_vs_paper", "table1_claims",
           "table1_summary", "table1_vs_paper", "weight_variants_summary"]

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


#: Table 1's columns, without our two ablations.
_PAPER_METHODS = METHODS[:5]


#: Captions of the metrics of :func:`authors_network_vs_paper`.
_METRIC_CAPTIONS = {"cls_error": "Target error (%)", "ece": "ECE × 100"}


def authors_network_tables(table):
    """:func:`authors_network_vs_paper` as one captioned table per metric, for reading.

    The ``metric``, ``runs`` and ``authors - paper`` columns are left out, so
    that each table fits the book's text column; numbers show two decimals
    and a cell not run shows "–".

    Parameters
    ----------
    table : pandas.DataFrame
        The output of :func:`authors_network_vs_paper`.

    Returns
    -------
    list of pandas.io.formats.style.Styler
        One per metric, in the order of ``table``.

    Examples
    --------
    >>> runs = pd.DataFrame({"shift": "U->M", "method": ["None", "IW+Temp"], "ece": [42.4, 7.0],
    ...                      "oce": 0.0, "cls_error": 47.44})
    >>> tables = authors_network_tables(authors_network_vs_paper(runs, runs))
    >>> [t.caption for t in tables]
    ['Target error (%)', 'ECE × 100']
    """
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table must be a pandas DataFrame, got {type(table).__name__}")
    missing = {"metric", "runs", "authors - paper"} - set(table.columns)
    if missing:
        raise ValueError(f"table must be the output of authors_network_vs_paper (lacks {sorted(missing)})")
    shown = table.drop(columns=["runs", "authors - paper"])
    return [
        part.drop(columns="metric").style.hide(axis="index").format(precision=2, na_rep="–")
        .set_caption(_METRIC_CAPTIONS.get(metric, metric))
        for metric, part in shown.groupby("metric", sort=False)
    ]


def authors_network_vs_paper(authors, ours, *, exact_tolerance=0.5):
    """U->M and M->U as the paper prints them, beside the authors' network and ours, with verdicts.

    One row per shift, method of Table 1 and metric (the target error
    ``cls_error`` and the ``ece``, both in %): the paper's mean and standard
    deviation, the mean and standard deviation over the repeats run on the
    authors' trained source network (``source_network="authors"``) and on
    ours, and whether the authors' network reproduces the paper's cell:

    ``"reproduced"`` when the difference of the means is within two of its
    standard errors, ``sqrt(sd_paper**2 / 10 + sd**2 / n)``, with ``sd`` and
    ``n`` those of the authors'-network runs (one run: the paper's ``sd``,
    the spread of a single draw), or within ``exact_tolerance`` points
    whatever the spread (the floor for the cells that have none, the target
    error and ``None``, and for Temp., whose spread over SGD runs is 0.01 in
    the paper); ``"differs"`` otherwise.

    Parameters
    ----------
    authors, ours : pandas.DataFrame
        Rows of :func:`~calibtut.experiments.covariate_shift.run_cs_config`
        with ``shift`` (sweeps over ``U->M`` and ``M->U``); repeats are averaged.
    exact_tolerance : float, default 0.5
        Points within which a cell counts as reproduced whatever its spread (> 0).

    Returns
    -------
    pandas.DataFrame
        Columns ``verdict`` (a :class:`~calibtut.run.Verdict`: reproduced,
        differs, or not run), ``shift``, ``method``, ``metric``, ``paper``,
        ``paper sd``, ``authors' network``, ``authors' sd``, ``ours``,
        ``ours sd``, ``runs`` (of the authors' network) and
        ``authors - paper``, rounded to 2 decimals; every
        U->M and M->U cell of the paper's ``cls_error`` and ``ece``.

    Examples
    --------
    >>> runs = pd.DataFrame({"shift": "U->M", "method": ["None", "IW+Temp"] * 2, "ece": [42.4, 7.0, 42.4, 9.0],
    ...                      "oce": 0.0, "cls_error": 47.44})
    >>> t = authors_network_vs_paper(runs, runs.assign(ece=runs["ece"] + 20))
    >>> t = t.query("metric == 'ece'").dropna(subset=["authors' network"])  # the cells run
    >>> t[["method", "paper", "authors' network", "ours", "verdict"]].values.tolist()
    [['None', 42.43, 42.4, 62.4, 'reproduced'], ['IW+Temp', 7.68, 8.0, 28.0, 'reproduced']]
    """
    check_real(exact_tolerance, "exact_tolerance", low=0, low_open=True)
    paper = paper_table("covariate_shift", "table1")
    paper = paper[paper["shift"].isin(["U->M", "M->U"]) & paper["metric"].isin(["cls_error", "ece"])]
    key = ["shift", "method", "metric"]
    table = paper[key].assign(**{"paper": paper["mean"], "paper sd": paper["std"]})
    for name, sd, runs in (("authors' network", "authors' sd", authors), ("ours", "ours sd", ours)):
        stats = table1_summary(runs).rename(columns={"mean": name, "std": sd})
        table = table.merge(stats[[*key, name, sd]], on=key, how="left")
    table = table.merge(table1_summary(authors)[[*key, "runs"]], on=key, how="left")
    diff = table["authors' network"] - table["paper"]
    own_sd = table["authors' sd"].where(table["runs"] > 1, table["paper sd"])
    se = np.sqrt(table["paper sd"] ** 2 / 10 + own_sd ** 2 / table["runs"]).fillna(0)
    close = diff.abs() <= np.maximum(2 * se, exact_tolerance)
    verdict = np.where(diff.isna(), Verdict.NOT_RUN, np.where(close, Verdict.REPRODUCED, Verdict.DIFFERS))
    table = table.assign(**{"authors - paper": diff, "verdict": verdict})
    return verdict_table(table[table["method"].isin(_PAPER_METHODS)].round(2))


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


#: The methods of the paper's Table 1, in its column order.
_PAPER_METHODS = ("None", "Temp", "IW+Temp", "FL+Temp", "FL+IW+Temp")


class _Reading(NamedTuple):
    """Table 1 as one source reads it: ECE and over-confident ECE means and the ECE spread, shift x method.

    ``runs`` holds our rows (None for the paper); ``rotation`` the mean ECE by
    angle (None where the source has no rotation sweep).
    """

    ece: pd.DataFrame
    oce: pd.DataFrame
    ece_std: pd.DataFrame
    runs: pd.DataFrame | None
    rotation: pd.DataFrame | None


def _wide(long, metric, stat):
    rows = long[long["metric"] == metric]
    table = rows.pivot(index="shift", columns="method", values=stat)
    shifts = list(dict.fromkeys(rows["shift"]))
    return table.reindex(index=shifts, columns=[m for m in _PAPER_METHODS if m in table.columns])


def _paper_reading():
    paper = paper_table("covariate_shift", "table1")
    return _Reading(_wide(paper, "ece", "mean"), _wide(paper, "oce", "mean"), _wide(paper, "ece", "std"), None, None)


def _our_reading(runs, name):
    """Our runs on the paper's shifts and their stand-ins (paper order), and the rotation sweep if run."""
    check_frame(runs, name, ["shift", "repeat", "method", "ece", "oce", "cls_error"], allow_empty=False)
    order = [STAND_INS.get(s, s) for s in dict.fromkeys(paper_table("covariate_shift", "table1")["shift"])]
    table = runs[runs["shift"].isin([s for s in order if s])]
    if table.empty:
        raise ValueError(f"{name} has none of the paper's shifts or their stand-ins; it has "
                         f"{sorted(runs['shift'].unique())}")
    long = table1_summary(table)
    long = long.assign(_k=long["shift"].map({s: i for i, s in enumerate(order)})).sort_values("_k", kind="stable")
    rotated = runs["shift"].astype(str).str.startswith("M->R").any()
    return _Reading(_wide(long, "ece", "mean"), _wide(long, "oce", "mean"), _wide(long, "ece", "std"), table,
                    ece_vs_rotation(runs) if rotated else None)


def _arrow(shift):
    return shift.replace("->", "→")


def _count(holds, what="shifts"):
    """``("k of n <what> (not a, b)", verdict)``: a plain direction holds on a majority."""
    holds = holds.dropna().astype(bool)
    if holds.empty:
        return "", Verdict.NOT_RUN
    text = f"{int(holds.sum())} of {len(holds)} {what}"
    misses = [_arrow(k) if isinstance(k, str) else f"{k[0]} on {_arrow(k[1])}" for k in holds.index[~holds]]
    if 0 < len(misses) <= 3:
        text += f" (not {', '.join(misses)})"
    return text, Verdict.HOLDS if holds.sum() > len(holds) / 2 else Verdict.DOES_NOT_HOLD


def _below(table, a, b):
    """Per shift: is method ``a``'s value below method ``b``'s (NaN where either is missing)."""
    return (table[a] < table[b]).where(table[a].notna() & table[b].notna())


def _pairs(table, pairs):
    """:func:`_below` for several (a, b) pairs, indexed by (shift, a) so each pair counts once per shift."""
    return pd.concat({a: _below(table, a, b) for a, b in pairs}, names=["pair", "shift"])


def _outperforms(r):
    return _count(_below(r.ece, "FL+IW+Temp", "Temp") & _below(r.ece, "FL+IW+Temp", "None"))


def _best(r):
    return _count((r.ece.idxmin(axis=1) == "FL+IW+Temp").where(r.ece.notna().all(axis=1)))


def _oce(r):
    return _count(_below(r.oce, "FL+IW+Temp", "Temp"), "readable shifts" if r.runs is None else "shifts")


def _no_shift(r):
    if "M->M" not in r.ece.index:
        return "", Verdict.NOT_RUN
    row = r.ece.loc["M->M"]
    return (f"{row['FL+IW+Temp']:.2f} (None {row['None']:.2f})",
            Verdict.HOLDS if row["FL+IW+Temp"] < row["None"] else Verdict.DOES_NOT_HOLD)


def _feature_learning(r):
    return _count(_pairs(r.ece, [("FL+Temp", "Temp"), ("FL+IW+Temp", "IW+Temp")]), "pairs")


def _weights_alone_on_um(r):
    if "U->M" not in r.ece.index:
        return "", Verdict.NOT_RUN
    row = r.ece.loc["U->M"]
    return (f"{row['IW+Temp']:.2f} vs {row['FL+IW+Temp']:.2f}",
            Verdict.HOLDS if row["IW+Temp"] < row["FL+IW+Temp"] else Verdict.DOES_NOT_HOLD)


def _weighting(r):
    return _count(_pairs(r.ece, [("IW+Temp", "Temp"), ("FL+IW+Temp", "FL+Temp")]), "pairs")


def _largest_gain(r):
    gain = (r.ece["Temp"] - r.ece["IW+Temp"]).dropna()
    if "U->M" not in gain.index or len(gain) < 2:
        return "", Verdict.NOT_RUN
    top = gain.idxmax()
    text = f"largest on {_arrow(top)} ({gain[top]:.1f})"
    if top != "U->M":
        text += f", U→M {gain['U->M']:.1f}"
    return text, Verdict.HOLDS if top == "U->M" else Verdict.DOES_NOT_HOLD


def _temp_worse(r):
    worse = _below(r.ece, "None", "Temp").dropna().astype(bool)
    if worse.empty:
        return "", Verdict.NOT_RUN
    names = ", ".join(_arrow(s) for s in worse.index[worse])
    return (f"{int(worse.sum())} of {len(worse)} shifts" + (f" ({names})" if names else ""),
            Verdict.HOLDS if worse.any() else Verdict.DOES_NOT_HOLD)


def _variance(r):
    spread = r.ece_std.dropna(how="all")
    if spread.empty:
        return "one run per shift", Verdict.NOT_TESTABLE
    iw = spread[["IW+Temp", "FL+IW+Temp"]].max(axis=1)
    temp = spread["Temp"].max()
    text = f"IW ± {iw.max():.2f} ({_arrow(iw.idxmax())}), Temp. ± {temp:.2f}"
    return text, Verdict.HOLDS if iw.max() >= max(1.0, 10 * temp) else Verdict.DOES_NOT_HOLD


def _um_repeats(r):
    if "U->M" not in r.ece.index:
        return "", Verdict.NOT_RUN
    if r.runs is None:
        row = r.ece.loc["U->M"]
        lower = [row[m] < row["Temp"] for m in ("IW+Temp", "FL+IW+Temp")]
        return (f"{row['Temp']:.2f} → {row['IW+Temp']:.2f}, {row['FL+IW+Temp']:.2f} (means)",
                Verdict.HOLDS if all(lower) else Verdict.DOES_NOT_HOLD)
    per = r.runs[r.runs["shift"] == "U->M"].pivot_table(index="repeat", columns="method", values="ece")
    below = {m: int((per[m] < per["Temp"]).sum()) for m in ("IW+Temp", "FL+IW+Temp")}
    return (f"{below['IW+Temp']} and {below['FL+IW+Temp']} of {len(per)} repeats",
            Verdict.HOLDS if min(below.values()) == len(per) else Verdict.DOES_NOT_HOLD)


def _rotation(r):
    if r.runs is None:
        return "no such experiment", Verdict.NOT_RUN
    if r.rotation is None:
        return "", Verdict.NOT_RUN
    widest = r.rotation.iloc[-1]
    share = max(widest["IW+Temp"], widest["FL+IW+Temp"]) / widest["Temp"]
    return (f"{r.rotation.index[-1]:.0f}°: {share:.2f} of Temp.",
            Verdict.HOLDS if share < 2 / 3 else Verdict.DOES_NOT_HOLD)


#: (claim as the paper words it, what is checked, reader): the claims of Section 6 on Table 1, and the
#: chapter's reading of U→M repeat by repeat and of the rotation sweep. Shifts are the paper's and,
#: for ours, the stand-ins of :data:`STAND_INS`; a plain direction holds on a majority.
_TABLE1_CLAIMS = (
    ("FL+IW+Temp. outperforms both baselines", "ECE below Temp.'s and None's, per shift", _outperforms),
    ("FL+IW+Temp. is best (bold in Table 1)", "lowest ECE of the five methods, per shift", _best),
    ("the over-confident ECE also improves", "FL+IW+Temp. below Temp., per shift", _oce),
    ("remains good with no shift (M→M)", "FL+IW+Temp.'s M→M ECE below None's", _no_shift),
    ("feature learning in general improves ECE", "FL+Temp. < Temp., FL+IW+Temp. < IW+Temp.", _feature_learning),
    ("on U→M, IW without FL produces a better result", "U→M ECE: IW+Temp. below FL+IW+Temp.", _weights_alone_on_um),
    ("importance weighting substantially improves ECE", "IW+Temp. < Temp., FL+IW+Temp. < FL+Temp.", _weighting),
    ("the largest gains are on shifts like U→M", "Temp. minus IW+Temp. largest on U→M", _largest_gain),
    ("Temp. can be worse than none (D→A, W→A)", "Temp.'s ECE above None's on some shift", _temp_worse),
    ("some benchmarks exhibit high variance ECEs", "IW spread ≥ 1 and ≥ 10 × Temp.'s", _variance),
    ("U→M: IW+Temp., FL+IW+Temp. beat Temp.", "below Temp. in every repeat", _um_repeats),
    ("(ours) IW pays off as rotation grows", "both IW ≤ 2/3 of Temp. at the widest angle", _rotation),
)


def table1_claims(ours, *, full=None):
    """The paper's claims about its Table 1, each checked on the paper's numbers and on ours, with a verdict.

    One row per claim of Section 6 as the paper words it (shortened), plus
    the chapter's repeat-by-repeat reading of U→M and the rotation sweep
    (our experiment; the paper has none). Every claim is a comparison of
    ECE means per shift; a plain direction ("outperforms", "in general
    improves") holds on a majority of the shifts (or shift and method
    pairs) where both numbers exist, ties counting against it; "can be"
    needs one shift; the variance claim needs the repeats' standard
    deviation of an IW method to reach 1 ECE point and ten times Temp.'s.
    Our shifts are the paper's digit shifts and the stand-ins of
    :data:`STAND_INS` (rotations only in the last row).

    Parameters
    ----------
    ours : pandas.DataFrame
        Our ``ci`` runs: rows of :func:`run_cs_config` with ``shift`` and ``repeat``.
    full : pandas.DataFrame, optional
        The full run, laid out like ``ours``.

    Returns
    -------
    pandas.DataFrame
        Columns ``claim``, ``test`` (what is compared), ``paper`` (the
        paper's own numbers), ``ours (ci)``, ``ours (full)`` (with
        ``full``) and ``verdict`` (a :class:`~calibtut.run.Verdict`, first, from the
        full run when given, else from ``ours``).

    Examples
    --------
    >>> runs = pd.DataFrame({"shift": "U->M", "repeat": 0, "cls_error": 50.0,
    ...                      "method": ["None", "Temp", "IW+Temp", "FL+Temp", "FL+IW+Temp"],
    ...                      "ece": [40.0, 35.0, 20.0, 25.0, 30.0], "oce": 10.0})
    >>> t = table1_claims(runs).set_index("claim")
    >>> t.loc["on U→M, IW without FL produces a better result", ["paper", "ours (ci)", "verdict"]].tolist()
    ['7.68 vs 10.58', '20.00 vs 30.00', 'holds']
    """
    readings = {"paper": _paper_reading(), "ours (ci)": _our_reading(ours, "ours")}
    if full is not None:
        readings["ours (full)"] = _our_reading(full, "full")
    rows = []
    for claim, test, read in _TABLE1_CLAIMS:
        found = {name: read(reading) for name, reading in readings.items()}
        rows.append({"claim": claim, "test": test, **{name: text or "not run" for name, (text, _) in found.items()},
                     "verdict": found[list(readings)[-1]][1]})
    return verdict_table(rows)


def iw_gain_by_shift(runs):
    """Per shift: the effective sample size of the importance weights and what IW+Temp. gains over Temp.

    Parameters
    ----------
    runs : pandas.DataFrame
        Rows of :func:`run_cs_config` with ``shift`` and ``repeat`` (its
        ``ess_frac`` is that of the density-ratio weights of IW+Temp.).

    Returns
    -------
    pandas.DataFrame
        Index ``shift`` (first-appearance order), columns ``ess_frac`` (mean
        over repeats), ``Temp``, ``IW+Temp`` (mean ECE), ``gain`` (mean of
        ``ECE(Temp) - ECE(IW+Temp)`` per repeat; positive: the weights help),
        ``repeats_improved`` and ``repeats``.

    Examples
    --------
    >>> runs = pd.DataFrame({"shift": "U->M", "repeat": [0, 0, 1, 1], "method": ["Temp", "IW+Temp"] * 2,
    ...                      "ece": [34.0, 27.0, 34.0, 35.0], "ess_frac": [None, 0.002, None, 0.004]})
    >>> iw_gain_by_shift(runs).loc["U->M"].tolist()
    [0.003, 34.0, 31.0, 3.0, 1.0, 2.0]
    """
    check_frame(runs, "runs", ["shift", "repeat", "method", "ece", "ess_frac"], allow_empty=False)
    wide = runs[runs["method"].isin(["Temp", "IW+Temp"])].pivot_table(
        index=["shift", "repeat"], columns="method", values="ece", sort=False)
    missing = {"Temp", "IW+Temp"} - set(wide.columns)
    if missing:
        raise ValueError(f"runs lacks the method(s) {sorted(missing)}")
    ess = runs[runs["method"] == "IW+Temp"].groupby(["shift", "repeat"], sort=False)["ess_frac"].mean()
    wide = wide.assign(ess_frac=ess, gain=wide["Temp"] - wide["IW+Temp"])
    out = wide.groupby(level="shift", sort=False).agg(
        ess_frac=("ess_frac", "mean"), Temp=("Temp", "mean"), **{"IW+Temp": ("IW+Temp", "mean")},
        gain=("gain", "mean"), repeats_improved=("gain", lambda g: float((g > 0).sum())),
        repeats=("gain", "size"))
    out.columns.name = None
    return out.astype(float)


#: The columns that identify one variant of :func:`run_weight_variants`.
_VARIANT = ["shift", "discriminator", "beta_g", "upper", "kind", "temperature"]


def weight_variants_summary(variants):
    """The runs of :func:`run_weight_variants` averaged per variant, beside the paper's Table 1.

    Parameters
    ----------
    variants : pandas.DataFrame
        Rows of :func:`run_weight_variants` with ``shift`` and ``repeat``.

    Returns
    -------
    pandas.DataFrame
        One row per shift and variant (the ``Temp`` rows first, then in the
        order the runs list them): the variant's columns, ``ece`` and
        ``ece_std`` (mean and standard deviation, ddof 1, over repeats),
        ``ess_frac``, ``top_fraction_share``, ``max_over_mean``,
        ``disc_ece`` (means; NaN for Temp), ``repeats``, and the paper's
        ``paper IW+Temp`` and ``paper Temp`` ECE of the shift (NaN for a
        shift not in the paper).

    Examples
    --------
    >>> v = pd.DataFrame({"shift": "U->M", "repeat": [0, 1], "discriminator": "mlp", "beta_g": "fitted",
    ...                   "upper": 1000.0, "kind": "bound", "temperature": "sgd", "ece": [27.0, 29.0],
    ...                   "ess_frac": 0.01, "top_fraction_share": 0.5, "max_over_mean": 40.0, "disc_ece": 0.1})
    >>> weight_variants_summary(v)[["ece", "ece_std", "paper IW+Temp", "paper Temp"]].values.tolist()
    [[28.0, 1.4142135623730951, 7.68, 36.89]]
    """
    stats = ["ece", "ess_frac", "top_fraction_share", "max_over_mean", "disc_ece"]
    check_frame(variants, "variants", [*_VARIANT, "repeat", *stats], allow_empty=False)
    keyed = variants.assign(upper=variants["upper"].fillna(-1.0))  # Temp rows have no clip
    grouped = keyed.groupby(_VARIANT, sort=False)
    out = grouped[stats].mean().assign(ece_std=grouped["ece"].std(), repeats=grouped.size()).reset_index()
    out["upper"] = out["upper"].where(out["upper"] >= 0)
    out = out.sort_values("discriminator", key=lambda d: d != "none", kind="stable")
    paper = paper_table("covariate_shift", "table1").query("metric == 'ece'").set_index(["shift", "method"])["mean"]
    for method in ("IW+Temp", "Temp"):
        out[f"paper {method}"] = [paper.get((s, method), float("nan")) for s in out["shift"]]
    columns = [*_VARIANT, "ece", "ece_std", "ess_frac", "top_fraction_share", "max_over_mean", "disc_ece",
               "repeats", "paper IW+Temp", "paper Temp"]
    return out[columns].reset_index(drop=True)


#: The variant of :func:`run_weight_variants` that is the paper's IW+Temp. pipeline.
_PAPER_PIPELINE = ("discriminator == 'mlp' and beta_g == 'fitted' and upper == 1000 and kind == 'bound' "
                   "and temperature == 'sgd'")
_RECIPE = ["source_recipe", "disc_schedule"]


def _pipeline_parts(rows, missing):
    """The rows of the SGD temperature, of the paper's IW+Temp. pipeline and of the oracle temperature.

    ``missing`` is the message of the ValueError raised where one of the three
    is absent, with ``{name}`` standing for its key.
    """
    parts = {"Temp": rows.query("discriminator == 'none' and temperature == 'sgd'"),
             "IW+Temp": rows.query(_PAPER_PIPELINE), "oracle": rows.query("discriminator == 'oracle'")}
    for name, part in parts.items():
        if part.empty:
            raise ValueError(missing.replace("{name}", name))
    return parts


def source_recipe_vs_paper(book, recipes, shift="U->M"):
    """Temp., the paper's IW+Temp. pipeline and the oracle per source recipe and discriminator schedule.

    Parameters
    ----------
    book : pandas.DataFrame
        Rows of :func:`run_weight_variants` with ``shift`` and ``repeat``, run
        with the book's source recipe and discriminator schedule (the
        published study, ``results/covariate_shift/weight_variants/``).
    recipes : pandas.DataFrame
        Rows of ``benchmarks/cs_weight_variants.py`` run with other recipes:
        also ``source_recipe``, ``disc_schedule``, and the columns
        ``source_kept``, ``disc_epochs`` and ``disc_kept`` of
        :func:`run_weight_variants`. Its rows of the book's recipe and
        schedule, if any, are left out: that row of the table is ``book``'s.
    shift : str, default "U->M"

    Returns
    -------
    pandas.DataFrame
        Index ``(source_recipe, disc_schedule)``, the book's first, then in
        the order of ``recipes``; columns ``repeats``, ``cls_error`` (the
        source model's target error, %), ``Temp`` (SGD temperature),
        ``IW+Temp`` and ``IW+Temp sd`` (the paper's pipeline: network
        discriminator, fitted ``beta_g``, ``U = 1000``, ``1/g - 1/2``, SGD
        temperature; mean and sd, ddof 1, over repeats), ``oracle`` (the
        Brier temperature fitted on the target test labels), ``iw_below_temp``
        (the repeats in which IW+Temp.'s ECE is below Temp.'s of the same
        repeat), ``ess_frac`` (of the paper's weights), ``source_kept``,
        ``disc_epochs`` and ``disc_kept`` (means; NaN where ``book`` lacks
        them), and the paper's ``paper Temp``, ``paper IW+Temp`` and
        ``paper IW+Temp sd``. ECEs x 100.

    Examples
    --------
    >>> def rows(ece, **recipe):
    ...     return pd.DataFrame({"shift": "U->M", "repeat": [0, 0, 0], **recipe,
    ...                          "discriminator": ["none", "oracle", "mlp"], "beta_g": ["none", "none", "fitted"],
    ...                          "upper": [None, None, 1000.0], "kind": ["none", "target labels", "bound"],
    ...                          "temperature": ["sgd", "exact", "sgd"], "ece": [34.0, 3.0, ece],
    ...                          "ess_frac": [None, None, 0.004], "cls_error": 52.0})
    >>> new = rows(20.0, source_recipe="authors", disc_schedule="book", source_kept=300, disc_epochs=60,
    ...            disc_kept=40)
    >>> source_recipe_vs_paper(rows(28.0), new)[["IW+Temp", "paper IW+Temp"]].values.tolist()
    [[28.0, 7.68], [20.0, 7.68]]
    """
    need = [*_VARIANT, "repeat", "ece", "ess_frac", "cls_error"]
    check_frame(book, "book", need, allow_empty=False)
    check_frame(recipes, "recipes", [*need, *_RECIPE, "source_kept", "disc_epochs", "disc_kept"],
                allow_empty=False)
    parse_shift(shift)
    others = recipes[(recipes["source_recipe"] != "book") | (recipes["disc_schedule"] != "book")]
    rows = pd.concat([book.assign(source_recipe="book", disc_schedule="book"), others], ignore_index=True)
    rows = rows[rows["shift"] == shift]
    parts = _pipeline_parts(rows, "no {name} rows of shift " + repr(shift) + " in book and recipes")
    iw = parts["IW+Temp"].groupby(_RECIPE, sort=False)
    per_repeat = {name: part.groupby([*_RECIPE, "repeat"])["ece"].mean() for name, part in parts.items()}
    below = per_repeat["IW+Temp"] < per_repeat["Temp"].reindex(per_repeat["IW+Temp"].index)
    out = pd.DataFrame({
        "repeats": iw.size(), "cls_error": iw["cls_error"].mean(),
        "Temp": parts["Temp"].groupby(_RECIPE)["ece"].mean(),
        "IW+Temp": iw["ece"].mean(), "IW+Temp sd": iw["ece"].std(),
        "oracle": parts["oracle"].groupby(_RECIPE)["ece"].mean(),
        "iw_below_temp": below.groupby(level=_RECIPE).sum(),
        **{c: iw[c].mean() for c in ("ess_frac", "source_kept", "disc_epochs", "disc_kept")},
    }).reindex(iw.size().index)  # the book's first, then the order of recipes
    paper = paper_table("covariate_shift", "table1").query("metric == 'ece' and shift == @shift").set_index("method")
    for column, (method, stat) in {"paper Temp": ("Temp", "mean"), "paper IW+Temp": ("IW+Temp", "mean"),
                                   "paper IW+Temp sd": ("IW+Temp", "std")}.items():
        out[column] = paper[stat].get(method, float("nan"))
    return out


_NETWORK = ["recipe", "seed"]


def network_study_summary(rows):
    """One row per source network of the network study: IW+Temp.'s ECE beside its mechanism.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`~calibtut.experiments.covariate_shift.run_network_study`
        with the task's ``recipe``, ``seed`` and ``repeat`` (a sweep's rows).

    Returns
    -------
    pandas.DataFrame
        One row per ``(recipe, seed)``, in the order of ``rows``: ``repeats``;
        ``cls_error``, the network's target error (%); ``Temp``, the SGD
        temperature's ECE; ``IW+Temp`` and ``IW+Temp sd``, the paper's
        pipeline (network discriminator, fitted ``beta_g``, ``U = 1000``,
        ``1/g - 1/2``, SGD temperature; mean and sd, ddof 1, over the
        calibrator repeats); ``oracle``, the ECE of the temperature fitted on
        the target labels; ``fitted_t`` and ``oracle_t``, the two
        temperatures; ``ess_frac``, the effective sample fraction of the
        paper's weights; ``weighted_val_error``, the source validation error
        (%) under them; and ``error_gap``, that error minus ``cls_error``
        (what the weighted fit sees minus what the target needs). Means over
        the repeats; ECEs x 100.

    Examples
    --------
    >>> def net(recipe, seed, ece, werr):
    ...     return pd.DataFrame({"recipe": recipe, "seed": seed, "repeat": 0,
    ...                          "discriminator": ["none", "oracle", "mlp"], "beta_g": ["none", "none", "fitted"],
    ...                          "upper": [None, None, 1000.0], "kind": ["none", "target labels", "bound"],
    ...                          "temperature": ["sgd", "exact", "sgd"], "ece": [34.0, 3.0, ece],
    ...                          "fitted_t": [1.2, 8.0, 6.0], "ess_frac": [None, None, 0.01],
    ...                          "weighted_val_error": [2.0, 2.0, werr], "cls_error": 47.0})
    >>> table = network_study_summary(pd.concat([net("ours", 0, 28.0, 10.0), net("shipped", 0, 8.0, 35.0)]))
    >>> table[["IW+Temp", "error_gap", "oracle_t"]].values.tolist()
    [[28.0, -37.0, 8.0], [8.0, -12.0, 8.0]]
    """
    need = [*_NETWORK, *_VARIANT[1:], "repeat", "ece", "fitted_t", "ess_frac", "weighted_val_error", "cls_error"]
    check_frame(rows, "rows", need, allow_empty=False)
    parts = _pipeline_parts(rows, "rows holds no {name} rows of run_network_study")
    iw = parts["IW+Temp"].groupby(_NETWORK, sort=False)
    out = pd.DataFrame({
        "repeats": iw.size(), "cls_error": iw["cls_error"].mean(),
        "Temp": parts["Temp"].groupby(_NETWORK)["ece"].mean(),
        "IW+Temp": iw["ece"].mean(), "IW+Temp sd": iw["ece"].std(),
        "oracle": parts["oracle"].groupby(_NETWORK)["ece"].mean(),
        "fitted_t": iw["fitted_t"].mean(), "oracle_t": parts["oracle"].groupby(_NETWORK)["fitted_t"].mean(),
        "ess_frac": iw["ess_frac"].mean(), "weighted_val_error": iw["weighted_val_error"].mean(),
    }).reindex(iw.size().index)
    return out.assign(error_gap=out["weighted_val_error"] - out["cls_error"])


def _mean_difference(x, y, axis=-1):
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)


def network_study_conclusion(summary, *, recipes=("ours", "authors"), level=0.95, n_resamples=9999, seed=0):
    """What the network study concludes, each statistic with its uncertainty.

    Rows, over the networks of ``summary``:

    * ``mean IW+Temp, <recipe>``, for each of ``recipes``: the mean ECE of
      the paper's IW+Temp. pipeline over that recipe's networks, with a
      percentile bootstrap interval over networks
      (:func:`scipy.stats.bootstrap`);
    * ``difference, <second> - <first>``: the difference of the two means,
      with a bootstrap interval (the networks of each recipe resampled on
      their own);
    * ``Spearman, |error gap| and IW+Temp``: over every network (every
      recipe, the shipped network too), the rank correlation of the absolute
      gap between the weighted source-validation error and the target error
      with IW+Temp.'s ECE, and the p-value of a one-sided permutation test
      that it is positive (:func:`scipy.stats.permutation_test`; exact
      while the orderings of the networks are at most ``n_resamples``).

    Parameters
    ----------
    summary : pandas.DataFrame
        :func:`network_study_summary`'s table.
    recipes : pair of str, default ("ours", "authors")
        The two recipes whose means are compared.
    level : float, default 0.95
        Confidence level of the bootstrap intervals, in (0, 1).
    n_resamples : int, default 9999
        Bootstrap resamples and random permutations (>= 100).
    seed : int, numpy.random.Generator or None, default 0
        Seeds the resampling and the permutations.

    Returns
    -------
    pandas.DataFrame
        Columns ``statistic``, ``networks`` (how many it uses), ``estimate``,
        ``low`` and ``high`` (NaN with fewer than 2 networks per recipe, and
        for the correlation), ``p_value`` (the correlation's; NaN
        elsewhere, and with fewer than 3 networks).

    Examples
    --------
    >>> summary = pd.DataFrame({"IW+Temp": [28.0, 30.0, 26.0, 9.0, 12.0, 8.0],
    ...                         "error_gap": [-40.0, -42.0, -38.0, -10.0, -15.0, -12.0]},
    ...                        index=pd.MultiIndex.from_product([["ours", "authors"], [0, 1, 2]],
    ...                                                         names=["recipe", "seed"]))
    >>> table = network_study_conclusion(summary, n_resamples=999)
    >>> table["statistic"].tolist()[2:]
    ['difference, authors - ours', 'Spearman, |error gap| and IW+Temp']
    >>> table["estimate"].round(3).tolist()
    [28.0, 9.667, -18.333, 0.943]
    """
    check_frame(summary, "summary", ["IW+Temp", "error_gap"], allow_empty=False)
    if isinstance(recipes, str) or len(recipes) != 2:
        raise ValueError(f"recipes must be two recipe names, got {recipes!r}")
    level = check_real(level, "level", low=0, high=1, low_open=True, high_open=True)
    n_resamples = check_int(n_resamples, "n_resamples", minimum=100)
    rng = check_rng(seed)
    ece = summary["IW+Temp"]
    by_recipe = ece.groupby(level="recipe")
    samples = [by_recipe.get_group(r).to_numpy() if r in by_recipe.groups else np.array([]) for r in recipes]
    boot = {"confidence_level": level, "n_resamples": n_resamples, "method": "percentile", "rng": rng}

    def interval(data, statistic):
        if min(len(d) for d in data) < 2:
            return np.nan, np.nan
        ci = stats.bootstrap(data, statistic, **boot).confidence_interval
        return ci.low, ci.high

    rows = []
    for r, x in zip(recipes, samples):
        low, high = interval((x,), np.mean)
        rows.append({"statistic": f"mean IW+Temp, {r}", "networks": len(x),
                     "estimate": np.mean(x) if len(x) else np.nan, "low": low, "high": high, "p_value": np.nan})
    first, second = samples
    low, high = interval((second, first), _mean_difference)
    rows.append({"statistic": f"difference, {recipes[1]} - {recipes[0]}", "networks": len(first) + len(second),
                 "estimate": np.mean(second) - np.mean(first) if len(first) and len(second) else np.nan,
                 "low": low, "high": high, "p_value": np.nan})
    gap = summary["error_gap"].abs().to_numpy()
    rho, p_value = np.nan, np.nan
    if len(gap) >= 3:
        gap_ranks = stats.rankdata(gap)

        def spearman(x, axis=-1):  # Pearson's correlation of the ranks, over a batch of orderings
            return stats.pearsonr(stats.rankdata(x, axis=axis), gap_ranks, axis=axis).statistic

        test = stats.permutation_test((ece.to_numpy(),), spearman, permutation_type="pairings", vectorized=True,
                                      alternative="greater", n_resamples=n_resamples, rng=rng)
        rho, p_value = test.statistic, test.pvalue
    rows.append({"statistic": "Spearman, |error gap| and IW+Temp", "networks": len(gap), "estimate": rho,
                 "low": np.nan, "high": np.nan, "p_value": p_value})
    return pd.DataFrame(rows)
