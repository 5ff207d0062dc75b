"""Paper 001's tables: Tables 2-5 from the runs' rows, beside the paper's, and the theory chapters' summaries.

* Tables 2-5 (chapters 2, 5-8): :func:`table2_model_approximation`,
  :func:`table3_by_q_and_distance`, :func:`table4_singletons`,
  :func:`table5_singletons` and :func:`table5_by_features` summarise the rows
  of the runners of :mod:`calibtut.experiments.venn_admit.tasks` over
  calibration splits; :func:`table2_vs_paper`, :func:`table4_vs_paper` and
  :func:`table5_vs_paper` put them beside the paper's numbers
  (:func:`calibtut.papers.paper_table`); :func:`pooled_singletons`
  pools the admitted points of several splits (whose accuracy against
  ``1 - alpha`` :func:`calibtut.stats.accuracy_gap_sd` measures), and
  :func:`admitted_accuracy_gap` does so with a standard error that counts
  correlated points of one sequence and the Venn categories' sizes;
* the theory chapters (1, 3, 4): :func:`singleton_summary`,
  :func:`category_coverage_table` and :func:`admission_summary` summarise the
  simulation loops of :mod:`calibtut.experiments.venn_admit.chapters`;
* the spread over the random splits of one pool (chapter 4): the splits of
  :func:`~calibtut.experiments.venn_admit.venn_admit_runs` share their pool,
  so pooling their admitted points under a binomial interval is too narrow;
  a statistic computed once per split is an independent sample whose mean
  follows Student's ``t``: :func:`admissions_by_run` (admitted and correct
  points of one method per split), whose mean
  :func:`calibtut.stats.mean_lower_bound` bounds from below.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from calibtut._validation import (
    check_alpha,
    check_bool,
    check_choice,
    check_choices,
    check_frame,
    check_int,
    check_real,
)
from calibtut.conformal.quantiles import conformal_quantile
from calibtut.experiments.venn_admit._common import method_list
from calibtut.experiments.venn_admit.tasks import DATASETS, METHODS
from calibtut.papers import paper_table
from calibtut.run import find_root, paper_vs_ours, stored_path
from calibtut.stats import clustered_proportion_se

__all__ = [
    "admission_summary",
    "admissions_by_run",
    "admitted_accuracy_gap",
    "category_accuracy",
    "category_coverage_table",
    "exemplar_gpu_runs",
    "exemplar_gpu_signals",
    "MODELS",
    "PAPER_DATASETS",
    "pooled_singletons",
    "PROTEIN_CLASSES",
    "SEQUENCE_DATASETS",
    "singleton_summary",
    "table2_model_approximation",
    "table2_vs_paper",
    "table3_by_q_and_distance",
    "table4_singletons",
    "table4_vs_paper",
    "table5_by_features",
    "table5_singletons",
    "table5_vs_paper",
]

#: Our dataset name -> the paper's.
PAPER_DATASETS = {"sentiment": "Sentiment", "sentiment_ood": "SentimentOOD"}

#: The three protein states, in label order, as the paper's Table 4 names them (Helix, Strand, Other).
PROTEIN_CLASSES = ("H", "S", "O")

#: The per-token tasks beyond Sentiment (our name -> the paper's); Grammar is the paper's GrammarOOD in domain.
SEQUENCE_DATASETS = {"protein": "Protein", "grammar": "GrammarOOD"}

#: The models of Table 2: the network's memory layer, its KNN approximation and the localizer.
MODELS = ("memory layer", "KNN", "localizer")

#: The binary tasks of Table 5, in its order: Sentiment, SentimentOOD, then Grammar (the paper's GrammarOOD).
_BINARY_DATASETS = (*DATASETS, "grammar")

#: The GPU run's ``features`` values, by the name the tables give them.
_EXEMPLAR_FEATURES = {"exemplar (frozen)": "exemplar", "exemplar (fine-tuned)": "exemplar-finetuned"}


def _dataset_names(datasets, allowed):
    """``{our name: the paper's}`` for ``datasets``, each one of ``allowed``."""
    if isinstance(datasets, str):
        raise TypeError("datasets must be a sequence of dataset names, not one str")
    names = {**PAPER_DATASETS, **SEQUENCE_DATASETS}
    check_choices(datasets, "datasets", allowed)
    return {d: names[d] for d in datasets}


def _summary(rows, keys, metrics):
    long = rows.melt(id_vars=keys, value_vars=metrics, var_name="metric")
    out = long.groupby([*keys, "metric"], sort=False)["value"].agg(["mean", "std", "count"])
    return out.rename(columns={"count": "runs"}).reset_index()


def table5_singletons(rows):
    """Our Table 5: per test set, method and true class, accuracy among singletons and their share.

    Mean, standard deviation (ddof 1) and number of calibration splits.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`~calibtut.experiments.venn_admit.run_va_config` (a sweep over
        :func:`~calibtut.experiments.venn_admit.va_tasks`) or of
        :func:`~calibtut.experiments.venn_admit.run_grammar_config` (class ``"1"``: a token in an error).

    Returns
    -------
    pandas.DataFrame
        Long: ``dataset``, ``method``, ``class``, ``metric`` (``accuracy``,
        ``share``), ``mean``, ``std``, ``runs``; Sentiment, SentimentOOD then
        Grammar, methods in :data:`~calibtut.experiments.venn_admit.METHODS` order.

    Examples
    --------
    >>> rows = pd.DataFrame({"table": "singletons", "dataset": "sentiment", "method": "ADMIT",
    ...                      "class": "all", "seed": [0, 1], "accuracy": [0.9, 0.8], "share": 0.5})
    >>> table5_singletons(rows)[["metric", "mean", "runs"]].round(3).values.tolist()
    [['accuracy', 0.85, 2], ['share', 0.5, 2]]
    """
    check_frame(rows, "rows", ["table", "dataset", "method", "class", "accuracy", "share"])
    chosen = rows[rows["table"] == "singletons"]
    out = _summary(chosen, ["dataset", "method", "class"], ["accuracy", "share"])
    rank = {m: i for i, m in enumerate(METHODS)}
    key = out["dataset"].map({d: i for i, d in enumerate(_BINARY_DATASETS)}) * 1000 + out["method"].map(rank) * 10
    key = key + out["metric"].map({"accuracy": 0, "share": 5}) + out["class"].map({"0": 0, "1": 1, "all": 2})
    return out.assign(_k=key).sort_values("_k", kind="stable").drop(columns="_k").reset_index(drop=True)


def pooled_singletons(rows, by=("method", "class")):
    """Singletons pooled over calibration splits: admitted points, correct ones, accuracy and share, per group.

    Pooling (rather than averaging the splits' accuracies) weighs every
    admitted point once. The splits share one test set, so pooled points are
    not independent draws: a binomial standard deviation of the pooled
    accuracy is too small (by up to the square root of the number of splits),
    which makes a lower tolerance built on it stricter, not looser, and an
    upper one unreliable.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`~calibtut.experiments.venn_admit.run_va_config`,
        :func:`~calibtut.experiments.venn_admit.run_protein_config` or
        :func:`~calibtut.experiments.venn_admit.run_grammar_config` (several splits).
    by : sequence of str, default ("method", "class")
        The grouping columns.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``by``: ``n`` (admitted points), ``correct``,
        ``accuracy`` (``correct / n``, NaN when nothing is admitted),
        ``n_test`` (test points over the pooled splits) and ``share``
        (``n / n_test``).

    Examples
    --------
    >>> rows = pd.DataFrame({"table": "singletons", "method": "ADMIT", "class": "1",
    ...                      "n": [10, 30], "accuracy": [0.5, 0.9], "n_test": 100})
    >>> pooled_singletons(rows).round(3).values.tolist()
    [[40.0, 32.0, 0.8, 200.0, 0.2]]
    """
    if isinstance(by, str):
        by = [by]
    by = list(by)
    check_frame(rows, "rows", ["table", "n", "accuracy", "n_test", *by])
    chosen = rows[rows["table"] == "singletons"]
    chosen = chosen.assign(correct=chosen["accuracy"].fillna(0) * chosen["n"])
    out = chosen.groupby(by, sort=False)[["n", "correct", "n_test"]].sum().astype(float)
    out["correct"] = out["correct"].round()
    out.insert(2, "accuracy", (out["correct"] / out["n"]).where(out["n"] > 0))
    out["share"] = out["n"] / out["n_test"]
    return out


def admitted_accuracy_gap(rows, alpha, by="method", *, min_errors=5):
    r"""Accuracy of admitted points minus :math:`1 - \alpha`, in standard errors that count what is correlated.

    :func:`calibtut.stats.accuracy_gap_sd` divides by the binomial standard deviation of
    independent points. Two things make the admitted points of Venn-ADMIT
    less informative than that, and this function counts both:

    * **the test side**: the points of one sequence (a protein's residues,
      a sentence's tokens) are correlated, and calibration splits that share
      one test set admit some points twice. The rows are pooled per sequence
      over the splits, and the standard error of the pooled accuracy is the
      cluster-robust one over sequences
      (:func:`calibtut.stats.clustered_proportion_se`), never less than the
      binomial :math:`\sqrt{\alpha (1 - \alpha) / n}` of :math:`n`
      independent points at :math:`1 - \alpha` (a clustered estimate from a
      few dozen sequences can fall below it by chance, not by design);
    * **the calibration side**: a point is admitted because the lower Venn
      probability of its category, an accuracy estimated on the category's
      :math:`|T|` calibration points, reaches :math:`1 - \alpha`. Admission
      selects the categories whose estimate came out high, and the admitted
      points of a category are right with its *true* accuracy, which can sit
      below :math:`1 - \alpha` by about the estimate's sampling error
      :math:`\sqrt{\alpha (1 - \alpha) / |T|}`: the slack of the corrected
      Proposition 1 (chapter 4). A category of 20 points that is really 0.8
      accurate is admitted at :math:`\alpha = 0.1` whenever 19 of its 20
      points are right, about 7 % of the time. Every admitted category errs
      in the same direction, so these slacks do not average out over
      categories: their scale is the mean over the admitted points,
      :math:`\text{se}_\text{category} = \sqrt{\alpha (1 - \alpha)}\,
      \overline{|T|^{-1/2}}`.

    The gap then compares two estimates of the admitted categories'
    accuracy made on disjoint data, the test points' and the calibration
    points' (at least :math:`1 - \alpha` where a point is admitted), so
    their variances add:
    :math:`\text{se} = \sqrt{\text{se}_\text{test}^2 +
    \text{se}_\text{category}^2}`. A method without Venn categories (ADMIT,
    the conformal sets) has the test side only.

    A check needs enough admitted points for the normal approximation
    behind "so many standard errors": at least ``min_errors`` errors
    expected at :math:`1 - \alpha` (:math:`n \alpha \ge 5`, the usual
    condition for a binomial count) and points from at least two sequences
    (the clustered standard error needs two). ``testable`` says whether a
    cell meets both; a chapter says which cells do not, and does not test
    them.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`~calibtut.experiments.venn_admit.run_protein_admissions`
        or :func:`~calibtut.experiments.venn_admit.run_grammar_admissions`
        (several splits): columns ``sequence``, ``n``, ``correct``,
        ``category_rsqrt`` and those of ``by``.
    alpha : float
        The miscoverage level, in (0, 1).
    by : str or sequence of str, default "method"
        The grouping columns (a cell of the result pools its rows).
    min_errors : float, default 5
        Errors expected at :math:`1 - \alpha` below which a cell is not
        testable (positive).

    Returns
    -------
    pandas.DataFrame
        Indexed by ``by``: ``n`` (admitted points), ``correct``,
        ``accuracy`` (NaN when nothing is admitted), ``sequences`` (those
        holding admitted points), ``se_test``, ``se_category`` (NaN without
        categories), ``se``, ``gap`` (:math:`(\text{accuracy} - (1 -
        \alpha)) / \text{se}`) and ``testable``.

    Examples
    --------
    Twelve admitted residues in three proteins, over two splits (the first
    protein's residues admitted in both), their categories of 25 and 100
    calibration residues. The proteins differ (5 of 6, 4 of 4, 0 of 2
    right), so the clustered standard error, 0.191, exceeds the binomial
    0.115:

    >>> rows = pd.DataFrame({"method": "Venn-ADMIT", "sequence": [7, 7, 8, 9],
    ...                      "n": [3, 3, 4, 2], "correct": [3, 2, 4, 0],
    ...                      "category_rsqrt": [3 / 5, 3 / 5, 4 / 10, 2 / 10]})
    >>> out = admitted_accuracy_gap(rows, 0.2, min_errors=2)
    >>> cell = out.loc["Venn-ADMIT"]
    >>> cell[["accuracy", "se_test", "se_category", "se", "gap"]].astype(float).round(3).to_dict()
    {'accuracy': 0.75, 'se_test': 0.191, 'se_category': 0.06, 'se': 0.2, 'gap': -0.25}
    >>> bool(cell["testable"])
    True
    >>> admitted_accuracy_gap(rows, 0.2)["testable"].item()  # 12 * 0.2 < 5 errors
    False
    """
    alpha = check_alpha(alpha)
    min_errors = check_real(min_errors, "min_errors", low=0, low_open=True)
    by = [by] if isinstance(by, str) else list(by)
    check_frame(rows, "rows", ["sequence", "n", "correct", "category_rsqrt", *by])
    n = pd.to_numeric(rows["n"], errors="coerce")
    correct = pd.to_numeric(rows["correct"], errors="coerce")
    if n.isna().any() or (n < 0).any() or correct.isna().any() or (correct < 0).any() or (correct > n).any():
        raise ValueError("rows['n'] and rows['correct'] must be counts with correct <= n")
    cells = rows.assign(n=n.astype(float), correct=correct.astype(float)).groupby(
        [*by, "sequence"], sort=False).agg(n=("n", "sum"), correct=("correct", "sum"),
                                           category_rsqrt=("category_rsqrt", lambda x: x.sum(min_count=1)))
    spread = np.sqrt(alpha * (1 - alpha))
    out = {}
    for key, cell in cells.groupby(level=by, sort=False):
        cell = cell[cell["n"] > 0]
        total, right = cell["n"].sum(), cell["correct"].sum()
        binomial = spread / np.sqrt(total) if total else np.nan
        se_test = np.fmax(binomial, clustered_proportion_se(cell["correct"], cell["n"])) if total else np.nan
        rsqrt = cell["category_rsqrt"].sum(min_count=1)
        se_category = spread * rsqrt / total if total else np.nan
        se = np.sqrt(se_test ** 2 + np.nan_to_num(se_category) ** 2)
        accuracy = right / total if total else np.nan
        out[key] = {"n": total, "correct": right, "accuracy": accuracy, "sequences": len(cell),
                    "se_test": se_test, "se_category": se_category, "se": se,
                    "gap": (accuracy - (1 - alpha)) / se,
                    "testable": bool(total * alpha >= min_errors and len(cell) >= 2)}
    columns = ["n", "correct", "accuracy", "sequences", "se_test", "se_category", "se", "gap", "testable"]
    index = pd.MultiIndex.from_tuples(list(out), names=by) if len(by) > 1 else pd.Index(
        [k[0] if isinstance(k, tuple) else k for k in out], name=by[0])
    return pd.DataFrame(list(out.values()), index=index, columns=columns)


def _protein_classes(frame):
    """``class`` "0", "1", "2" renamed to the paper's "H", "S", "O" ("all" kept)."""
    names = {str(i): c for i, c in enumerate(PROTEIN_CLASSES)}
    return frame.assign(**{"class": frame["class"].astype(str).map(lambda c: names.get(c, c))})


def table4_singletons(rows):
    """Our Table 4: per method and true class (Helix, Strand, Other, all), accuracy among admitted and n/N.

    Mean, standard deviation (ddof 1) and number of calibration splits.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`~calibtut.experiments.venn_admit.run_protein_config` (a sweep over
        :func:`~calibtut.experiments.venn_admit.protein_tasks`).

    Returns
    -------
    pandas.DataFrame
        Long: ``method``, ``class`` (``"H"``, ``"S"``, ``"O"``, ``"all"``),
        ``metric`` (``accuracy``, ``share``), ``mean``, ``std``, ``runs``;
        methods in :data:`~calibtut.experiments.venn_admit.METHODS` order.

    Examples
    --------
    >>> rows = pd.DataFrame({"table": "singletons", "dataset": "protein", "method": "ADMIT",
    ...                      "class": ["2", "2"], "seed": [0, 1], "accuracy": [0.7, 0.8],
    ...                      "share": 0.1})
    >>> table4_singletons(rows)[["class", "metric", "mean", "runs"]].round(3).values.tolist()
    [['O', 'accuracy', 0.75, 2], ['O', 'share', 0.1, 2]]
    """
    check_frame(rows, "rows", ["table", "dataset", "method", "class", "accuracy", "share"])
    chosen = _protein_classes(rows[(rows["table"] == "singletons") & (rows["dataset"] == "protein")])
    out = _summary(chosen, ["method", "class"], ["accuracy", "share"])
    rank = {m: i for i, m in enumerate(METHODS)}
    classes = {c: i for i, c in enumerate((*PROTEIN_CLASSES, "all"))}
    key = out["method"].map(rank) * 100 + out["metric"].map({"accuracy": 0, "share": 10}) + out["class"].map(classes)
    return out.assign(_k=key).sort_values("_k", kind="stable").drop(columns="_k").reset_index(drop=True)


def table4_vs_paper(ours, *, full=None, live="ci"):
    """Every ts115 cell of the paper's Table 4 beside ours, long (casp12 is not available offline).

    Parameters
    ----------
    ours : pandas.DataFrame
        Rows of :func:`~calibtut.experiments.venn_admit.run_protein_config` from the live run (splits averaged).
    full : pandas.DataFrame, optional
        The full run's rows.
    live : {"ci", "full"}, default "ci"
        The profile ``ours`` was run at; it names the column ``ours (<live>)``
        (see :func:`calibtut.run.paper_vs_ours`).

    Returns
    -------
    pandas.DataFrame
        Columns ``method``, ``class`` (``"H"``, ``"S"``, ``"O"``, ``"all"``),
        ``metric``, ``paper``, ``ours (<live>)``, ``ours (full)`` (with ``full``)
        and ``difference``, rounded to 2 decimals; the paper's methods only
        (it has no KNN or Conf_base rows in Table 4, nor our ablations).

    Examples
    --------
    >>> rows = pd.DataFrame({"table": ["singletons"], "dataset": "protein", "method": "ADMIT",
    ...                      "class": "2", "seed": 0, "accuracy": 0.7, "share": 0.1})
    >>> t = table4_vs_paper(rows)
    >>> t.query("method == 'ADMIT' and `class` == 'O'")[["metric", "paper", "ours (ci)"]].values.tolist()
    [['accuracy', 0.76, 0.7], ['share', 0.14, 0.1]]
    """
    paper = paper_table("venn_admit", "table4")
    paper = paper[paper["dataset"] == "ts115"]
    key = ["method", "class", "metric"]

    def relabel(rows, name):
        check_frame(rows, name, ["table", "dataset", "method", "class", "accuracy", "share"])
        chosen = _protein_classes(rows[(rows["table"] == "singletons") & (rows["dataset"] == "protein")])
        return chosen.melt(id_vars=["method", "class"], value_vars=["accuracy", "share"], var_name="metric")

    return paper_vs_ours(paper[[*key, "value"]], relabel(ours, "ours"), on=key,
                         full=None if full is None else relabel(full, "full"), live=live, decimals=2)


def table2_model_approximation(rows):
    """Our Table 2: accuracy of the memory layer, its KNN approximation and the localizer, and their agreement.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`~calibtut.experiments.venn_admit.run_va_config`.

    Returns
    -------
    pandas.DataFrame
        Long: ``dataset``, ``split``, ``method`` (:data:`MODELS`), ``metric``
        (``accuracy``; ``agreement``: share of points where the argmax equals
        the memory layer's; ``f05``: F0.5 of class 1, for the rows of
        :func:`~calibtut.experiments.venn_admit.run_grammar_config`), ``mean``, ``std``, ``runs``. The
        calibration rows of the two Sentiment test sets are the same points,
        listed under both.

    Examples
    --------
    >>> rows = pd.DataFrame({"table": "model", "dataset": "sentiment", "split": "test",
    ...                      "method": "KNN", "seed": [0, 1], "accuracy": [0.8, 0.9],
    ...                      "agreement": [0.9, 1.0]})
    >>> table2_model_approximation(rows)[["metric", "mean"]].round(2).values.tolist()
    [['accuracy', 0.85], ['agreement', 0.95]]
    """
    check_frame(rows, "rows", ["table", "dataset", "split", "method", "accuracy", "agreement"])
    chosen = rows[rows["table"] == "model"]
    metrics = ["accuracy", "agreement", *(["f05"] if "f05" in chosen else [])]
    out = _summary(chosen, ["dataset", "split", "method"], metrics)
    return out[out["runs"] > 0].reset_index(drop=True)


def table3_by_q_and_distance(points, alpha=0.1, *, cap=25):
    """Our Table 3: calibration points by ``q`` and distance, per true class: threshold, KNN accuracy, share.

    Subsets: ``q = 0``, ``q = cap`` and all ``q``, each over all distances and
    below / at or above the median distance. The median is that of ``d`` over
    the calibration points the KNN classifies correctly (the paper's shares
    show that its median is not that of all points; this is our reading). For
    each true class ``c``: ``tau`` = 1 minus the conformal ``1 - alpha``
    quantile of the LAC scores ``1 - pi^c`` of the subset's class-``c`` points
    (about the ``alpha`` quantile of ``pi^c``; NaN below ``ceil(1/alpha) - 1``
    points), the KNN's accuracy on them and their share of all calibration
    points; class ``"all"`` uses the marginal score.

    Parameters
    ----------
    points : pandas.DataFrame
        :func:`~calibtut.experiments.venn_admit.va_points`; the rows whose ``split`` is ``"mc"`` or ``"vp"`` are used.
    alpha : float, default 0.1
    cap : int, default 25
        The ``q`` of the most reliable partition (``K``).

    Returns
    -------
    pandas.DataFrame
        Columns ``q`` (``"0"``, ``"K"``, ``"all"``), ``distance`` (``"all"``,
        ``"below median"``, ``"above median"``), ``class``, ``tau``,
        ``accuracy``, ``share``, ``n``.

    Examples
    --------
    >>> pts = pd.DataFrame({"split": "mc", "label": [0, 0, 1, 1], "knn_pred": [0, 1, 1, 1],
    ...                     "p0": [0.9, 0.4, 0.2, 0.1], "p1": [0.1, 0.6, 0.8, 0.9],
    ...                     "q": [25, 0, 25, 25], "d": [1.0, 2.0, 1.0, 3.0]})
    >>> t = table3_by_q_and_distance(pts, 0.5)
    >>> t.query("q == 'K' and distance == 'all'")[["class", "accuracy", "share"]].values.tolist()
    [['0', 1.0, 0.25], ['1', 1.0, 0.5], ['all', 1.0, 0.75]]
    """
    check_frame(points, "points", ["split", "label", "knn_pred", "p0", "p1", "q", "d"])
    alpha = check_alpha(alpha)
    cap = check_int(cap, "cap", minimum=1)
    cal = points[points["split"].isin(["mc", "vp"])]
    if cal.empty:
        raise ValueError("points has no calibration rows (split 'mc' or 'vp')")
    probs = cal[["p0", "p1"]].to_numpy()
    y = cal["label"].to_numpy(int)
    correct = cal["knn_pred"].to_numpy(int) == y
    median = float(np.median(cal["d"][correct])) if correct.any() else float(np.median(cal["d"]))
    q, d = cal["q"].to_numpy(), cal["d"].to_numpy()
    own = probs[np.arange(len(y)), y]
    rows = []
    for q_name, q_mask in (("0", q == 0), ("K", q == cap), ("all", np.ones(len(q), bool))):
        for d_name, d_mask in (("all", np.ones(len(d), bool)), ("below median", d < median),
                               ("above median", d >= median)):
            for c in ("0", "1", "all"):
                chosen = q_mask & d_mask & ((y == int(c)) if c != "all" else True)
                n = int(chosen.sum())
                tau = np.nan
                if n >= np.ceil(1 / alpha) - 1:
                    tau = 1 - float(conformal_quantile(1 - own[chosen], alpha))
                rows.append({"q": q_name, "distance": d_name, "class": c, "tau": tau,
                             "accuracy": float(correct[chosen].mean()) if n else np.nan,
                             "share": n / len(y), "n": n})
    return pd.DataFrame(rows)


def table5_by_features(runs, methods=("KNN", "APS", "ADMIT", "Venn-ADMIT", "Venn-ADMIT-w", "Venn-ABERS"),
                       *, by_class=False):
    """Pooled Table 5 cells per network input (TF-IDF, MiniLM, ...) beside the paper's.

    Parameters
    ----------
    runs : dict of str to pandas.DataFrame
        Rows of :func:`~calibtut.experiments.venn_admit.run_va_config` for each input, e.g.
        ``{"TF-IDF": tfidf_rows, "MiniLM": minilm_rows}`` (splits averaged).
    methods : sequence of str
        The methods shown, in this order (those absent from every run are dropped).
    by_class : bool, default False
        Show the cells of each true class (``"0"``, ``"1"``) beside the pooled
        ``"all"``; the index then has a ``class`` level.

    Returns
    -------
    pandas.DataFrame
        Index ``dataset`` (the paper's name), ``method``, (``class`` with
        ``by_class``), ``metric`` (``accuracy`` among admitted points, their
        ``share``); columns ``paper`` and one per input, rounded to 2 decimals.

    Examples
    --------
    >>> rows = pd.DataFrame({"table": "singletons", "dataset": "sentiment", "method": "ADMIT",
    ...                      "class": "all", "seed": [0, 1], "accuracy": [0.9, 0.8], "share": 0.5})
    >>> table5_by_features({"TF-IDF": rows}).loc[("Sentiment", "ADMIT")].values.tolist()
    [[0.94, 0.85], [0.82, 0.5]]
    >>> per_class = table5_by_features({"TF-IDF": rows.assign(**{"class": "0"})}, by_class=True)
    >>> per_class.loc[("Sentiment", "ADMIT", "0")].values.tolist()
    [[0.95, 0.85], [0.42, 0.5]]
    """
    if not isinstance(runs, dict) or not runs:
        raise TypeError(f"runs must be a non-empty dict of input name to rows, got {type(runs).__name__}")
    check_bool(by_class, "by_class")
    methods = method_list(list(methods), METHODS)
    key = ["dataset", "method", "class", "metric"] if by_class else ["dataset", "method", "metric"]
    paper = paper_table("venn_admit", "table5")
    paper = paper[paper["dataset"].isin(PAPER_DATASETS.values()) & (by_class | (paper["class"] == "all"))]
    columns = {"paper": paper.set_index(key)["value"]}
    for name, rows in runs.items():
        check_frame(rows, f"runs[{name!r}]", ["table", "dataset", "method", "class", "accuracy", "share"])
        pooled = table5_singletons(rows.assign(**{"class": rows["class"].astype(str)}))
        pooled = pooled[by_class | (pooled["class"] == "all")]
        pooled = pooled.assign(dataset=pooled["dataset"].map(PAPER_DATASETS))
        columns[name] = pooled.set_index(key)["mean"]
    out = pd.DataFrame(columns)
    shown = out.index.get_level_values("method").isin(methods) & out.drop(columns="paper").notna().any(axis=1)
    out = out[shown].reset_index()
    order = {m: i for i, m in enumerate(methods)}
    out = out.sort_values(key, key=lambda c: c.map(order) if c.name == "method" else c)
    return out.set_index(key).round(2)


def exemplar_gpu_runs(*, root=None):
    """The published GPU run of paper 001's exemplar recipe, one table of rows per representation.

    ``benchmarks/gpu_venn_admit.py`` wrote it on one GPU (see the README in
    ``results/venn_admit/05_experiments/exemplar_gpu/``): MiniLM token states
    under a width-1 convolutional memory layer, frozen and fine-tuned jointly
    with the encoder, 10 calibration seeds each.

    Parameters
    ----------
    root : str or path-like, optional
        Repository root; found by walking up from the working directory by default.

    Returns
    -------
    dict of str to pandas.DataFrame
        ``{"exemplar (frozen)": rows, "exemplar (fine-tuned)": rows}``, the
        rows of the published ``runs.csv`` (or ``runs.csv.gz``; class as
        text), ready for :func:`table5_by_features`.

    Raises
    ------
    FileNotFoundError
        If the run is not published under ``root``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> folder = root / "results/venn_admit/05_experiments/exemplar_gpu"; folder.mkdir(parents=True)
    >>> _ = (folder / "runs.csv").write_text("features,class\\nexemplar,0\\nexemplar-finetuned,all\\n")
    >>> {k: v["class"].tolist() for k, v in exemplar_gpu_runs(root=root).items()}
    {'exemplar (frozen)': ['0'], 'exemplar (fine-tuned)': ['all']}
    """
    return _exemplar_gpu_file("runs.csv", root)


def exemplar_gpu_signals(*, root=None):
    """The separation signals and admissions of the published GPU run, one table per representation.

    Written beside :func:`exemplar_gpu_runs` by ``benchmarks/gpu_venn_admit.py``
    (``signals.csv``): per calibration split and test set, the rows of
    :func:`~calibtut.experiments.venn_admit.run_sentiment_signals`.

    Parameters
    ----------
    root : str or path-like, optional
        Repository root; found by walking up from the working directory by default.

    Returns
    -------
    dict of str to pandas.DataFrame
        ``{"exemplar (frozen)": rows, "exemplar (fine-tuned)": rows}``, ready
        for :func:`~calibtut.experiments.venn_admit.representation_signals`.

    Raises
    ------
    FileNotFoundError
        If the run is not published under ``root``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> folder = root / "results/venn_admit/05_experiments/exemplar_gpu"; folder.mkdir(parents=True)
    >>> _ = (folder / "signals.csv").write_text("features,class,n\\nexemplar,0,3\\nexemplar,all,3\\n")
    >>> {k: len(v) for k, v in exemplar_gpu_signals(root=root).items()}
    {'exemplar (frozen)': 2, 'exemplar (fine-tuned)': 0}
    """
    return _exemplar_gpu_file("signals.csv", root)


def _exemplar_gpu_file(name, root):
    """One CSV of the published GPU run, split by representation (class as text)."""
    root = find_root() if root is None else Path(root)
    path = stored_path(root / "results" / "venn_admit" / "05_experiments" / "exemplar_gpu" / name)
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found; produce it with `python benchmarks/gpu_venn_admit.py` on a GPU")
    rows = pd.read_csv(path, dtype={"class": str}, keep_default_na=False, na_values=[""])
    return {label: rows[rows["features"] == features].reset_index(drop=True)
            for label, features in _EXEMPLAR_FEATURES.items()}


def category_accuracy(points, alpha=0.1, *, cap=25, split="vp"):
    """The calibration accuracy of the Venn categories that can admit: ``(q = K, predicted class)``.

    A Venn category admits a test point only when its lower probability
    ``correct / (n + 1)`` (at weight 1) reaches ``1 - alpha``; the band of
    ``d`` narrows a category further, so these cells are an upper bound on
    what can admit. Where the network leaves nothing to admit, this table
    says why: the cells are below ``1 - alpha``, or too small.

    Parameters
    ----------
    points : pandas.DataFrame
        Per-point frame (:func:`~calibtut.experiments.venn_admit.va_points`,
        or the ``points`` of :func:`~calibtut.experiments.venn_admit.run_protein_config`):
        columns ``split``, ``label``, ``knn_pred`` and ``q``.
    alpha : float, default 0.1
        Miscoverage level in (0, 1).
    cap : int, default 25
        ``K``, the largest ``q``.
    split : str, default "vp"
        The calibration part whose points form the categories (``D_ca^vp``).

    Returns
    -------
    pandas.DataFrame
        Indexed by ``q`` (``"q = K"``, ``"q < K"``) and ``predicted`` class:
        ``n`` (calibration points), ``accuracy``, ``lower`` (``correct / (n +
        1)``) and ``can_admit`` (``lower >= 1 - alpha``).

    Examples
    --------
    >>> points = pd.DataFrame({"split": "vp", "label": [0] * 10 + [1] * 10,
    ...                        "knn_pred": [0] * 10 + [1] * 9 + [0], "q": [25] * 18 + [3] * 2})
    >>> category_accuracy(points).loc["q = K"].round(3).values.tolist()
    [[10.0, 1.0, 0.909, True], [8.0, 1.0, 0.889, False]]
    """
    check_frame(points, "points", ["split", "label", "knn_pred", "q"])
    alpha = check_alpha(alpha)
    cap = check_int(cap, "cap", minimum=1)
    chosen = points[points["split"] == split]
    if chosen.empty:
        raise ValueError(f"points has no rows of split {split!r}; splits: {sorted(points['split'].unique())}")
    cells = chosen.assign(q=np.where(chosen["q"] >= cap, "q = K", "q < K"), predicted=chosen["knn_pred"],
                          correct=chosen["knn_pred"] == chosen["label"])
    table = cells.groupby(["q", "predicted"])["correct"].agg(n="size", correct="sum").astype(float)
    table["accuracy"] = table["correct"] / table["n"]
    table["lower"] = table["correct"] / (table["n"] + 1)
    table["can_admit"] = table["lower"] >= 1 - alpha
    return table[["n", "accuracy", "lower", "can_admit"]]


def table5_vs_paper(ours, *, full=None, datasets=DATASETS, live="ci"):
    """Every cell of the paper's Table 5 for the chosen tasks beside ours, long.

    Parameters
    ----------
    ours : pandas.DataFrame
        Rows of :func:`~calibtut.experiments.venn_admit.run_va_config` or
        :func:`~calibtut.experiments.venn_admit.run_grammar_config` from the live run (splits averaged).
    full : pandas.DataFrame, optional
        The full run's rows.
    live : {"ci", "full"}, default "ci"
        The profile ``ours`` was run at; it names the column ``ours (<live>)``
        (see :func:`calibtut.run.paper_vs_ours`).
    datasets : sequence of str, default :data:`~calibtut.experiments.venn_admit.DATASETS`
        Our tasks whose cells are compared: ``"sentiment"``,
        ``"sentiment_ood"`` and ``"grammar"`` (beside the paper's
        GrammarOOD, whose test set also holds 2,000 newswire sentences that
        ours lacks; three of its cells are printed "<<0.01" and are NaN).

    Returns
    -------
    pandas.DataFrame
        Columns ``dataset`` (the paper's name), ``method``, ``class``,
        ``metric``, ``paper``, ``ours (<live>)``, ``ours (full)`` (with ``full``)
        and ``difference``, rounded to 2 decimals. Our ablations are not in
        the paper and do not appear.

    Examples
    --------
    >>> rows = pd.DataFrame({"table": ["singletons"], "dataset": "sentiment", "method": "ADMIT",
    ...                      "class": "all", "seed": 0, "accuracy": 0.9, "share": 0.5})
    >>> t = table5_vs_paper(rows)
    >>> cells = t.query("dataset == 'Sentiment' and method == 'ADMIT' and `class` == 'all'")
    >>> cells[["metric", "paper", "ours (ci)"]].values.tolist()
    [['accuracy', 0.94, 0.9], ['share', 0.82, 0.5]]
    """
    names = _dataset_names(datasets, _BINARY_DATASETS)
    paper = paper_table("venn_admit", "table5")
    paper = paper[paper["dataset"].isin(names.values())]
    key = ["dataset", "method", "class", "metric"]

    def relabel(rows, name):
        check_frame(rows, name, ["table", "dataset", "method", "class", "accuracy", "share"])
        chosen = rows[(rows["table"] == "singletons") & rows["dataset"].isin(list(names))]
        long = chosen.melt(id_vars=["dataset", "method", "class"], value_vars=["accuracy", "share"],
                           var_name="metric")
        return long.assign(dataset=long["dataset"].map(names))

    return paper_vs_ours(paper[[*key, "value"]], relabel(ours, "ours"), on=key,
                         full=None if full is None else relabel(full, "full"), live=live, decimals=2)


def table2_vs_paper(ours, *, full=None, datasets=DATASETS, live="ci"):
    """The paper's Table 2 beside ours, long: accuracy (Sentiment, SentimentOOD, Protein) or F0.5 (Grammar).

    Parameters
    ----------
    ours : pandas.DataFrame
        Rows of :func:`~calibtut.experiments.venn_admit.run_va_config`,
        :func:`~calibtut.experiments.venn_admit.run_protein_config` or
        :func:`~calibtut.experiments.venn_admit.run_grammar_config` from the live run (splits averaged).
    full : pandas.DataFrame, optional
        The full run's rows.
    live : {"ci", "full"}, default "ci"
        The profile ``ours`` was run at; it names the column ``ours (<live>)``
        (see :func:`calibtut.run.paper_vs_ours`).
    datasets : sequence of str, default :data:`~calibtut.experiments.venn_admit.DATASETS`
        Our tasks whose columns are compared: names from :data:`~calibtut.experiments.venn_admit.DATASETS`,
        ``"protein"`` (its test split is the paper's ts115; casp12 is not
        available offline and is left out) and ``"grammar"`` (the paper's
        GrammarOOD, compared by F0.5 of the error class; its ``D_te`` holds
        newswire sentences that ours lacks).

    Returns
    -------
    pandas.DataFrame
        Columns ``dataset``, ``split`` (the paper's ``D_ca``, ``D_te`` or
        ``ts115``), ``method`` (:data:`MODELS`), ``metric`` (``accuracy``,
        or ``f05`` for Grammar), ``paper``, ``ours (<live>)``, ``ours (full)``
        (with ``full``) and ``difference``, rounded to 2 decimals.

    Examples
    --------
    >>> rows = pd.DataFrame({"table": "model", "dataset": "sentiment", "split": ["test"],
    ...                      "method": "KNN", "seed": 0, "accuracy": 0.85, "agreement": 1.0})
    >>> t = table2_vs_paper(rows)
    >>> t.query("dataset == 'Sentiment' and split == 'D_te' and method == 'KNN'")[
    ...     ["paper", "ours (ci)"]].values.tolist()
    [[0.93, 0.85]]
    """
    names = _dataset_names(datasets, (*DATASETS, *SEQUENCE_DATASETS))
    paper = paper_table("venn_admit", "table2")
    paper = paper[paper["dataset"].isin(names.values()) & (paper["split"] != "casp12")].dropna(subset=["value"])
    key = ["dataset", "split", "method", "metric"]

    def relabel(rows, name):
        check_frame(rows, name, ["table", "dataset", "split", "method", "accuracy"])
        chosen = rows[(rows["table"] == "model") & rows["dataset"].isin(list(names))]
        dataset = chosen["dataset"].map(names)
        test = np.where(dataset == "Protein", "ts115", "D_te")
        split = np.where(chosen["split"] == "calibration", "D_ca", test)
        grammar = (chosen["dataset"] == "grammar").to_numpy()
        if grammar.any():
            check_frame(rows, name, ["f05"])
        value = np.where(grammar, chosen["f05"] if "f05" in chosen else np.nan, chosen["accuracy"])
        return pd.DataFrame({"dataset": dataset, "split": split, "method": chosen["method"],
                             "metric": np.where(grammar, "f05", "accuracy"), "value": value})

    return paper_vs_ours(paper[[*key, "value"]], relabel(ours, "ours"), on=key,
                         full=None if full is None else relabel(full, "full"), live=live, decimals=2)


# ------------------------------------------------------------------------------------------ theory chapters


def singleton_summary(runs, alpha):
    """Pooled coverage and singleton accuracy per method and true class, with binomial intervals.

    Parameters
    ----------
    runs : pandas.DataFrame
        The output of :func:`~calibtut.experiments.venn_admit.conformal_singleton_runs` (or any table with its
        columns ``method``, ``class``, ``n``, ``covered``, ``singletons``,
        ``correct_singletons``).
    alpha : float
        Miscoverage level in (0, 1): the target ``1 - alpha`` is a column.

    Returns
    -------
    pandas.DataFrame
        One row per method and class: ``coverage``, ``singleton_share``
        (singletons among the class's points), ``singleton_accuracy``
        (correct among them), its exact (Clopper-Pearson) 99 % interval
        ``accuracy_low`` and ``accuracy_high``, and ``target``.

    Examples
    --------
    >>> runs = pd.DataFrame({"method": ["split"] * 2, "class": [0, 0], "n": [10, 10], "covered": [9, 10],
    ...                      "singletons": [8, 6], "correct_singletons": [7, 6]})
    >>> singleton_summary(runs, 0.1)[["coverage", "singleton_share", "singleton_accuracy"]]
       coverage  singleton_share  singleton_accuracy
    0      0.95              0.7            0.928571
    """
    alpha = check_alpha(alpha)
    needed = {"method", "class", "n", "covered", "singletons", "correct_singletons"}
    if not isinstance(runs, pd.DataFrame) or not needed <= set(runs.columns):
        raise ValueError(f"runs must be a DataFrame with columns {sorted(needed)}")
    total = runs.groupby(["method", "class"], sort=False)[sorted(needed - {"method", "class"})].sum().reset_index()
    interval = stats.binomtest
    bounds = [interval(int(k), int(m)).proportion_ci(0.99) if m else (np.nan, np.nan)
              for k, m in zip(total["correct_singletons"], total["singletons"])]
    return pd.DataFrame({
        "method": total["method"], "class": total["class"],
        "coverage": total["covered"] / total["n"],
        "singleton_share": total["singletons"] / total["n"],
        "singleton_accuracy": total["correct_singletons"] / total["singletons"].where(total["singletons"] > 0),
        "accuracy_low": [b[0] for b in bounds], "accuracy_high": [b[1] for b in bounds],
        "target": 1 - alpha,
    })


def category_coverage_table(runs, alpha, *, min_cal=None, min_runs=20):
    """Coverage per method, fixed category and class over runs, beside the exact conformal mean.

    For a category and class with ``n_e`` calibration points, Mondrian
    conformal coverage averaged over test points and calibration draws is
    exactly ``ceil((n_e + 1)(1 - alpha)) / (n_e + 1)`` for continuous scores;
    ``expected`` averages that over the runs kept. Runs where the cell has
    fewer than ``min_cal`` calibration points are dropped (a cell too small
    for a finite threshold gets the full set), and so are cells kept in fewer
    than ``min_runs`` runs.

    Parameters
    ----------
    runs : pandas.DataFrame
        The output of :func:`~calibtut.experiments.venn_admit.category_coverage_runs`.
    alpha : float
        Miscoverage level in (0, 1) of those runs.
    min_cal : int, optional
        Smallest calibration count of a cell in a run; default
        ``ceil(1 / alpha) - 1`` (the smallest with a finite threshold).
    min_runs : int, default 20
        Smallest number of runs of a cell (at least 2, for a standard error).

    Returns
    -------
    pandas.DataFrame
        Columns ``method``, ``category``, ``class``, ``runs``, ``n_cal`` (mean),
        ``coverage`` (mean over runs of the cell's test coverage), ``sem``
        (its standard error over runs), ``expected`` and ``z``
        (``(coverage - expected) / sem``).

    Examples
    --------
    >>> runs = pd.DataFrame({"run": [0, 1, 2], "method": "m", "category": 7, "class": 0,
    ...                      "n_cal": [9, 19, 9], "n": 10, "covered": [9, 10, 8]})
    >>> category_coverage_table(runs, 0.1, min_runs=3)[["runs", "coverage", "expected"]]
       runs  coverage  expected
    0     3       0.9       0.9
    """
    alpha = check_alpha(alpha)
    min_cal = math.ceil(1 / alpha) - 1 if min_cal is None else check_int(min_cal, "min_cal", minimum=1)
    min_runs = check_int(min_runs, "min_runs", minimum=2)
    needed = {"run", "method", "category", "class", "n_cal", "n", "covered"}
    if not isinstance(runs, pd.DataFrame) or not needed <= set(runs.columns):
        raise ValueError(f"runs must be a DataFrame with columns {sorted(needed)}")
    kept = runs[(runs["n_cal"] >= min_cal) & (runs["n"] > 0)].copy()
    kept["coverage"] = kept["covered"] / kept["n"]
    kept["expected"] = np.ceil((kept["n_cal"] + 1) * (1 - alpha) - 1e-9) / (kept["n_cal"] + 1)
    table = kept.groupby(["method", "category", "class"]).agg(
        runs=("coverage", "size"), n_cal=("n_cal", "mean"), coverage=("coverage", "mean"),
        sem=("coverage", "sem"), expected=("expected", "mean"),
    ).reset_index()
    table = table[table["runs"] >= min_runs].reset_index(drop=True)
    table["z"] = (table["coverage"] - table["expected"]) / table["sem"]
    return table


def admission_summary(runs, alpha, *, by="true"):
    """Pooled admission share and accuracy among admitted points per method and class.

    Parameters
    ----------
    runs : pandas.DataFrame
        The output of :func:`~calibtut.experiments.venn_admit.venn_admit_runs` (columns ``method``, ``class``,
        ``n``, ``admitted``, ``correct``).
    alpha : float
        Miscoverage level in (0, 1): the target ``1 - alpha`` is a column.
    by : {"true", "predicted"}, default "true"
        Which stratification of the runs to pool (rows of the other are
        dropped; a table without a ``by`` column is taken as is).

    Returns
    -------
    pandas.DataFrame
        One row per method and class, plus a row ``"all"`` per method:
        ``admitted``, ``share`` (admitted among the class's points),
        ``accuracy`` (correct among the admitted; NaN when none), its exact
        99 % interval ``accuracy_low``, ``accuracy_high``, and ``target``.

    Examples
    --------
    >>> runs = pd.DataFrame({"method": "m", "class": [0, 1], "n": [50, 50], "admitted": [20, 10],
    ...                      "correct": [20, 9]})
    >>> admission_summary(runs, 0.1)[["class", "share", "accuracy"]]
      class  share  accuracy
    0     0    0.4  1.000000
    1     1    0.2  0.900000
    2   all    0.3  0.966667
    """
    alpha = check_alpha(alpha)
    if by not in ("true", "predicted"):
        raise ValueError(f"by must be 'true' or 'predicted', got {by!r}")
    needed = {"method", "class", "n", "admitted", "correct"}
    if not isinstance(runs, pd.DataFrame) or not needed <= set(runs.columns):
        raise ValueError(f"runs must be a DataFrame with columns {sorted(needed)}")
    if "by" in runs.columns:
        runs = runs[runs["by"] == by]
    columns = ["n", "admitted", "correct"]
    by_class = runs.groupby(["method", "class"], sort=False)[columns].sum().reset_index()
    pooled = runs.groupby("method", sort=False)[columns].sum().reset_index().assign(**{"class": "all"})
    total = pd.concat([by_class, pooled], ignore_index=True).sort_values("method", kind="stable")
    bounds = [stats.binomtest(int(k), int(m)).proportion_ci(0.99) if m else (np.nan, np.nan)
              for k, m in zip(total["correct"], total["admitted"])]
    return pd.DataFrame({
        "method": total["method"].to_numpy(), "class": total["class"].to_numpy(),
        "admitted": total["admitted"].to_numpy(), "share": (total["admitted"] / total["n"]).to_numpy(),
        "accuracy": (total["correct"] / total["admitted"].where(total["admitted"] > 0)).to_numpy(),
        "accuracy_low": [b[0] for b in bounds], "accuracy_high": [b[1] for b in bounds], "target": 1 - alpha,
    })


# ------------------------------ the spread of a statistic over the random splits of one pool (chapter 4)


def admissions_by_run(runs, method):
    """Admitted and correct points of one method in each run, and the run's accuracy among them.

    Parameters
    ----------
    runs : pandas.DataFrame
        The output of :func:`~calibtut.experiments.venn_admit.venn_admit_runs`
        (columns ``run``, ``method``, ``admitted`` and ``correct``; with a
        ``by`` column only its ``"true"`` rows are summed, since both
        stratifications count the same points).
    method : str
        The method whose runs are summed (a value of ``runs["method"]``).

    Returns
    -------
    pandas.DataFrame
        Indexed by ``run``: ``admitted``, ``correct`` and ``accuracy``
        (``correct / admitted``, NaN for a run that admits nothing).

    Examples
    --------
    >>> import pandas as pd
    >>> runs = pd.DataFrame({"run": [0, 0, 1, 1], "method": "m", "class": [0, 1, 0, 1],
    ...                      "admitted": [30, 10, 0, 0], "correct": [29, 9, 0, 0]})
    >>> table = admissions_by_run(runs, "m")
    >>> table.index.tolist(), table["admitted"].tolist(), table["accuracy"].tolist()
    ([0, 1], [40, 0], [0.95, nan])
    """
    runs = check_frame(runs, "runs", ["run", "method", "admitted", "correct"])
    check_choice(method, "method", sorted(set(runs["method"])))
    rows = runs[runs["method"] == method]
    if "by" in rows.columns:
        rows = rows[rows["by"] == "true"]
    table = rows.groupby("run")[["admitted", "correct"]].sum()
    table["accuracy"] = table["correct"] / table["admitted"].where(table["admitted"] > 0)
    return table

