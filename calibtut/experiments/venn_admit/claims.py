"""Paper 001, chapter 8: the paper's claims, each checked on its own tables and on our runs, one verdict a row.

:func:`claims_vs_paper` reads six of the paper's claims (C4,
C6, C7/C8, C10, C12, C15) on the paper's Tables 2, 4 and 5
(:func:`calibtut.papers.paper_table`) and on the rows of our runners
(:func:`~calibtut.experiments.venn_admit.run_va_config`,
:func:`~calibtut.experiments.venn_admit.run_protein_config`,
:func:`~calibtut.experiments.venn_admit.run_grammar_config`), at ``ci`` and in
the published full runs, and gives each claim (per task, where the claim is
about one) one number per source and a verdict. The rules, by claim:

* C10, "the KNN matches the network": the largest gap between the KNN's and
  the memory layer's accuracy (F0.5 of the error class on Grammar, as Table 2
  prints it) over tasks and splits; it holds within the paper's own largest gap;
* C4, "conformal singletons fall below 1 - alpha where the network does": in
  the true class where the conformal baselines' singletons are least
  accurate, the highest accuracy among them; it holds when every baseline is
  below ``1 - alpha`` there by more than three binomial standard deviations
  (:func:`~calibtut.stats.accuracy_gap_sd`);
* C6, "Venn-ADMIT's admitted points reach 1 - alpha": the lowest accuracy of
  its admitted points over the true classes; it holds when no class with
  admitted points is below ``1 - alpha`` by more than three standard
  deviations, and holds only vacuously when nothing is admitted;
* C7/C8, "censoring to q = K and weighting the test point only remove
  admissions": the share of (task, split) blocks in which each censored or
  weighted variant admits no more than its parent; it holds at 1;
* C12, "no cost to qK": the smallest share of the uncensored variant's
  admissions that its q = K form keeps, per task (pooled over calibration
  splits, as the paper's shares average them); it holds at ``qk_kept`` or more;
* C15, "RAPS_size collapses to singletons when accuracy exceeds 1 - alpha":
  the share of RAPS_size's Sentiment sets that are singletons; not testable
  when the network's calibration accuracy is below ``1 - alpha``, else it
  holds at 0.99 or more.

The verdict reads the full run where it has the task, else the ``ci`` run.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from calibtut._validation import check_alpha, check_frame, check_real
from calibtut.experiments.venn_admit.tables import (
    PAPER_DATASETS,
    PROTEIN_CLASSES,
    SEQUENCE_DATASETS,
    pooled_singletons,
)
from calibtut.papers import paper_table
from calibtut.run import Verdict, verdict_table
from calibtut.stats import accuracy_gap_sd

__all__ = ["CLAIM_TASKS", "CONFORMAL_BASELINES", "claims_vs_paper"]

#: The paper's tasks, in the order of the verdict table (Protein is the paper's ts115 test set).
CLAIM_TASKS = ("Sentiment", "SentimentOOD", "Protein", "GrammarOOD")

#: The conformal baselines of Tables 4 and 5 (Table 4 has no Conf_base).
CONFORMAL_BASELINES = ("Conf_base", "APS", "RAPS_size", "RAPS_adapt")

#: (variant, parent): the variant's admissions are a subset of its parent's (Propositions 2 and 3).
_NESTED = (("Venn-ADMIT", "Venn-ADMIT-w"), ("Venn-ADMIT_qK", "Venn-ADMIT"),
           ("Venn-ADMIT_qK-w", "Venn-ADMIT-w"), ("Venn-ADMIT-w", "ADMIT"))

#: (censored, uncensored) pairs of "no cost to qK".
_CENSORED = (("Venn-ADMIT_qK", "Venn-ADMIT"), ("Venn-ADMIT_qK-w", "Venn-ADMIT-w"))

_ROW_COLUMNS = ["table", "dataset", "seed", "method", "class", "n", "accuracy", "share", "n_test"]

_SOURCES = ("paper", "ours (ci)", "ours (full)")


def _paper_cells():
    """The paper's Tables 4 (ts115, as "Protein") and 5, indexed by (dataset, method, class, metric)."""
    t4 = paper_table("venn_admit", "table4")
    t4 = t4[t4["dataset"] == "ts115"].assign(dataset="Protein")
    cells = pd.concat([t4, paper_table("venn_admit", "table5")], ignore_index=True)
    return cells.set_index(["dataset", "method", "class", "metric"])["value"]


def _at_alpha(rows, alpha):
    """``rows`` run at ``alpha`` (rows without an ``alpha`` column, or with NaN there, are at the default)."""
    if "alpha" not in rows.columns:
        return rows
    return rows[rows["alpha"].isna() | np.isclose(rows["alpha"].astype(float), alpha)]


def _our_cells(rows, alpha):
    """Our rows, pooled over calibration splits per (paper's dataset, method, class), with the gap in sd."""
    names = {**PAPER_DATASETS, **SEQUENCE_DATASETS}
    chosen = rows[(rows["table"] == "singletons") & rows["dataset"].isin(list(names))]
    protein = {str(i): c for i, c in enumerate(PROTEIN_CLASSES)}
    classes = chosen["class"].astype(str)
    classes = classes.where(chosen["dataset"] != "protein", classes.map(lambda c: protein.get(c, c)))
    chosen = chosen.assign(dataset=chosen["dataset"].map(names), **{"class": classes})
    pooled = pooled_singletons(chosen, by=("dataset", "method", "class"))
    return pooled.assign(gap=accuracy_gap_sd(pooled, alpha))


def _our_models(rows):
    """Run-mean Table 2 metric per (paper's dataset, split, method): accuracy, or F0.5 on Grammar."""
    names = {**PAPER_DATASETS, **SEQUENCE_DATASETS}
    chosen = rows[(rows["table"] == "model") & rows["dataset"].isin(list(names))]
    if chosen.empty:
        return pd.Series(dtype=float)
    grammar = chosen["dataset"] == "grammar"
    if grammar.any():
        check_frame(rows, "rows", ["f05"])
    value = chosen["accuracy"].where(~grammar, chosen.get("f05", np.nan))
    frame = chosen.assign(dataset=chosen["dataset"].map(names), value=value)
    return frame.groupby(["dataset", "split", "method"])["value"].mean()


def _knn_gap(models):
    """Largest |KNN - memory layer| over (dataset, split); NaN without both."""
    if models.empty:
        return np.nan
    wide = models.unstack("method")
    if not {"KNN", "memory layer"} <= set(wide.columns):
        return np.nan
    return float((wide["KNN"] - wide["memory layer"]).abs().max())


def _weakest_class(cells, task, methods):
    """The true class (not "all") whose singletons, pooled over ``methods``, are least accurate."""
    level = cells.index.get_level_values
    chosen = cells[(level("dataset") == task) & level("method").isin(methods) & (level("class") != "all")]
    totals = chosen.groupby(level="class")[["correct", "n"]].sum()
    accuracy = (totals["correct"] / totals["n"].where(totals["n"] > 0)).dropna()
    return None if accuracy.empty else accuracy.idxmin()


def _c4(paper, ours, task):
    """C4 on one task: (paper, {source: (value, holds)})."""
    accuracy = paper.xs("accuracy", level="metric").xs(task, level="dataset")
    accuracy = accuracy[accuracy.index.get_level_values("method").isin(CONFORMAL_BASELINES)].unstack("method")
    accuracy = accuracy.drop(index="all", errors="ignore")
    paper_value = float(accuracy.loc[accuracy.mean(axis=1).idxmin()].max()) if not accuracy.empty else np.nan
    found = {}
    for source, cells in ours.items():
        if task not in cells.index.get_level_values("dataset"):
            continue
        weakest = _weakest_class(cells, task, CONFORMAL_BASELINES)
        if weakest is None:
            continue
        cell = cells.xs((task, weakest), level=("dataset", "class"))
        cell = cell[cell.index.isin(CONFORMAL_BASELINES)]
        found[source] = (float(cell["accuracy"].max()), bool((cell["gap"] < -3).all()))
    return paper_value, found


def _c6(paper, ours, task):
    """C6 on one task: (paper, {source: (value, verdict)})."""
    accuracy = paper.xs(("accuracy", task, "Venn-ADMIT"), level=("metric", "dataset", "method"))
    paper_value = float(accuracy.drop(index="all", errors="ignore").min())
    found = {}
    for source, cells in ours.items():
        if (task, "Venn-ADMIT") not in cells.index.droplevel("class"):
            continue
        cell = cells.xs((task, "Venn-ADMIT"), level=("dataset", "method")).drop(index="all", errors="ignore")
        admitted = cell[cell["n"] > 0]
        if admitted.empty:
            found[source] = (np.nan, Verdict.VACUOUS)
        else:
            holds = (admitted["gap"] >= -3).all()
            found[source] = (float(admitted["accuracy"].min()), Verdict.HOLDS if holds else Verdict.DOES_NOT_HOLD)
    return paper_value, found


def _nested_share(admitted):
    """Share of (block, pair) comparisons where the variant admits no more than its parent; NaN without any."""
    checks = [admitted[variant] <= admitted[parent] + 1e-12 for variant, parent in _NESTED
              if {variant, parent} <= set(admitted.columns)]
    if not checks:
        return np.nan
    return float(pd.concat(checks).mean())


def _kept_share(admitted):
    """Smallest censored / uncensored admissions over blocks where the uncensored admits something."""
    ratios = [(admitted[censored] / admitted[parent].where(admitted[parent] > 0)).dropna()
              for censored, parent in _CENSORED if {censored, parent} <= set(admitted.columns)]
    ratios = [r for r in ratios if not r.empty]
    return float(pd.concat(ratios).min()) if ratios else np.nan


def _our_blocks(rows, by):
    """Admitted points of class "all" per block ``by`` and method, wide."""
    chosen = rows[(rows["table"] == "singletons") & (rows["class"].astype(str) == "all")]
    return chosen.pivot_table(index=by, columns="method", values="n", aggfunc="sum")


def _verdict(found, rule):
    """The verdict of the full run where it exists, else of ci; ``rule`` maps a value to a verdict."""
    for source in ("ours (full)", "ours (ci)"):
        if source in found and not (isinstance(found[source], float) and np.isnan(found[source])):
            return rule(found[source])
    return Verdict.NOT_RUN


def claims_vs_paper(ci, full=None, *, alpha=0.1, qk_kept=0.8):
    """The verdict table of chapter 8: each claim (per task where it names one), the paper's number, ours, a verdict.

    Parameters
    ----------
    ci : pandas.DataFrame
        Rows of the live ``ci`` run (one or more of
        :func:`~calibtut.experiments.venn_admit.run_va_config`,
        :func:`~calibtut.experiments.venn_admit.run_protein_config`,
        :func:`~calibtut.experiments.venn_admit.run_grammar_config`,
        concatenated), with columns ``table``, ``dataset``, ``method``,
        ``class``, ``n``, ``accuracy``, ``share``, ``n_test`` (and ``split``,
        ``seed`` for the model rows and blocks, ``f05`` for Grammar's).
    full : pandas.DataFrame, optional
        The published full runs' rows, concatenated likewise; rows with an
        ``alpha`` other than ``alpha`` (Protein's run at several levels) are
        left out.
    alpha : float, default 0.1
        Miscoverage level in (0, 1) of the runs.
    qk_kept : float, default 0.8
        Smallest share of admissions that censoring to q = K may drop to for
        "no cost to qK" to hold, in (0, 1] (chapter 5 asserts 0.8 per run).

    Returns
    -------
    pandas.DataFrame
        One row per claim and task: ``claim`` (its number in the reading
        notes and its words, short), ``task`` (the paper's name, ``"all"``
        for a claim over every task), ``measure``, ``paper``, ``ours (ci)``,
        ``ours (full)`` (NaN where a source lacks the task) and ``verdict``
        (see :mod:`~calibtut.experiments.venn_admit.claims`).

    Examples
    --------
    >>> rows = pd.DataFrame({"table": "singletons", "dataset": "sentiment", "seed": 0,
    ...     "method": ["Venn-ADMIT", "Venn-ADMIT", "RAPS_size"], "class": ["0", "1", "all"],
    ...     "n": [100, 0, 300], "accuracy": [0.95, np.nan, 0.8], "share": [0.1, 0.0, 0.3],
    ...     "n_test": 1000})
    >>> table = claims_vs_paper(rows)
    >>> c6 = table[table["claim"].str.startswith("C6") & (table["task"] == "Sentiment")]
    >>> c6[["paper", "ours (ci)", "verdict"]].values.tolist()
    [[0.94, 0.95, 'holds']]
    """
    alpha = check_alpha(alpha)
    qk_kept = check_real(qk_kept, "qk_kept", low=0, high=1, low_open=True)
    sources = {}
    for source, rows, name in (("ours (ci)", ci, "ci"), ("ours (full)", full, "full")):
        if rows is None and name == "full":
            continue
        check_frame(rows, name, _ROW_COLUMNS)
        if (rows["table"] == "model").any():
            check_frame(rows, name, ["split"])
        sources[source] = _at_alpha(rows, alpha)
    paper = _paper_cells()
    cells = {s: _our_cells(rows, alpha) for s, rows in sources.items()}
    out = []

    def add(claim, task, measure, paper_value, values, verdict):
        out.append({"claim": claim, "task": task, "measure": measure, "paper": paper_value,
                    **{s: values.get(s, np.nan) for s in _SOURCES[1:]}, "verdict": verdict})

    # C10: the KNN matches the network (Table 2)
    t2 = paper_table("venn_admit", "table2").set_index(["dataset", "split", "method"])["value"]
    models = {s: _our_models(rows) for s, rows in sources.items()}
    gaps = {s: _knn_gap(m) for s, m in models.items()}
    gaps = {s: g for s, g in gaps.items() if not np.isnan(g)}
    paper_gap = _knn_gap(t2)
    add("C10: the KNN matches the network", "all", "max |KNN - network|", paper_gap, gaps,
        _verdict(gaps, lambda g: Verdict.HOLDS if g <= paper_gap + 1e-9 else Verdict.DOES_NOT_HOLD))
    # C4: conformal singletons fall below 1 - alpha where the network does (Corollary 1)
    for task in CLAIM_TASKS[1:]:
        paper_value, found = _c4(paper, cells, task)
        verdicts = {s: Verdict.HOLDS if holds else Verdict.DOES_NOT_HOLD for s, (_, holds) in found.items()}
        add("C4: conformal singletons below 1 - α", task, "best baseline, weakest class",
            paper_value, {s: v for s, (v, _) in found.items()},
            verdicts.get("ours (full)", verdicts.get("ours (ci)", Verdict.NOT_RUN)))
    # C6: Venn-ADMIT's admitted points reach 1 - alpha (Proposition 1, up to its slack)
    for task in CLAIM_TASKS:
        paper_value, found = _c6(paper, cells, task)
        verdicts = {s: v for s, (_, v) in found.items()}
        add("C6: admitted points reach 1 - α", task, "lowest class accuracy",
            paper_value, {s: v for s, (v, _) in found.items()},
            verdicts.get("ours (full)", verdicts.get("ours (ci)", Verdict.NOT_RUN)))
    # C7/C8 and C12 on the admissions of class "all": the paper per test set, ours per calibration split (C7/C8)
    # and per task (C12)
    paper_blocks = paper.xs(("share", "all"), level=("metric", "class")).unstack("method")
    blocks = {s: _our_blocks(rows, ["dataset", "seed"]) for s, rows in sources.items()}
    nested = {s: _nested_share(b) for s, b in blocks.items()}
    nested = {s: v for s, v in nested.items() if not np.isnan(v)}
    add("C7/C8: qK and weights only remove", "all", "share of blocks in order",
        _nested_share(paper_blocks), nested,
        _verdict(nested, lambda v: Verdict.HOLDS if v == 1 else Verdict.DOES_NOT_HOLD))
    pooled = {s: _our_blocks(rows, ["dataset"]) for s, rows in sources.items()}
    kept = {s: _kept_share(b) for s, b in pooled.items()}
    kept = {s: v for s, v in kept.items() if not np.isnan(v)}
    add("C12: no cost to qK", "all", "least share kept by qK", _kept_share(paper_blocks), kept,
        _verdict(kept, lambda v: Verdict.HOLDS if v >= qk_kept else Verdict.DOES_NOT_HOLD)
        if kept else Verdict.NOT_TESTABLE_EMPTY)
    # C15: RAPS_size collapses to singletons when the network is above 1 - alpha (Sentiment)
    singles = {s: float(c.loc[("Sentiment", "RAPS_size", "all"), "share"]) for s, c in cells.items()
               if ("Sentiment", "RAPS_size", "all") in c.index}
    network = [m.get(("Sentiment", "calibration", "memory layer"), np.nan) for m in models.values()]
    network = [a for a in network if not np.isnan(a)]
    if not singles:
        verdict = Verdict.NOT_RUN
    elif network and network[-1] < 1 - alpha:
        verdict = Verdict.NOT_TESTABLE_NETWORK
    else:
        verdict = _verdict(singles, lambda v: Verdict.HOLDS if v >= 0.99 else Verdict.DOES_NOT_HOLD)
    add("C15: RAPS_size only singletons", "Sentiment", "singleton share",
        float(paper.loc[("Sentiment", "RAPS_size", "all", "share")]), singles, verdict)
    return verdict_table(out)
