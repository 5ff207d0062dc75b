"""Paper 002, chapters 1-3: tables of the study's rows, one per question a chapter asks.

Every function takes rows of :func:`calibtut.experiments.regression_study.run_study_task`
(one per dataset, run, method, lambda and post-hoc map) and returns one table:

* :func:`calibration_test_table` and :func:`rejection_counts`: the
  per-dataset PCE test of Section 4 (Figure 2);
* :func:`reliability_table`: the PIT reliability diagrams' frequencies;
* :func:`posthoc_gains` and :func:`coverage_shift`: what a post-hoc map or a
  regularizer does to PCE and to the central intervals;
* :func:`selected_lambdas` and :func:`study_results`: the lambda rule, one
  selected model per (dataset, run, method);
* :func:`run_mean_table`, :func:`method_means` and :func:`cohens_d_table`:
  the run means and effect sizes behind the letter-value plots and the CD
  diagrams.
* :func:`trainings_per_task` and :func:`study_cost`: what the full run
  cost, measured on its own stored tasks (every row of a task carries the
  task's ``seconds``): trainings, task-hours per base model and the
  projected cost of the whole run;
* :func:`per_batch_reading`, :func:`per_batch_test_table` and
  :func:`published_per_batch_test`: the authors' per-batch metrics (PCE
  averaged over batches of 512 rows, :func:`calibtut.metrics.batch_pce`)
  read against the full-set PCE test of Section 4, under which a calibrated
  model is rejected more often than the level says.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from calibtut._validation import check_frame, check_int, check_real, check_rng
from calibtut.experiments.regression_study._common import check_base, published_table
from calibtut.experiments.regression_study.tasks import (
    BASE_LABELS,
    FREQ_COLUMNS,
    POSTHOC_LABELS,
    REGULARIZER_LABELS,
    method_label,
)
from calibtut.metrics import pce_null_distribution
from calibtut.models.sqr import EVAL_LEVELS
from calibtut.models.study_evaluation import AUTHORS_BATCH
from calibtut.stats import cohens_d, holm, select_lambda

__all__ = [
    "calibration_test_table",
    "cohens_d_table",
    "coverage_shift",
    "method_means",
    "per_batch_reading",
    "per_batch_test_table",
    "posthoc_gains",
    "published_per_batch_test",
    "rejection_counts",
    "reliability_table",
    "run_mean_table",
    "selected_lambdas",
    "study_cost",
    "study_results",
    "trainings_per_task",
]


def _vanilla(rows, base):
    label = BASE_LABELS[check_base(base)]
    mask = (rows["method"] == label) & (rows["train_fraction"] == 0.8)
    if not mask.any():
        raise ValueError(f"rows holds no vanilla {label} model trained on 80% of the data")
    return rows[mask]


def calibration_test_table(rows, base="mix-nll", *, n_sim=10_000, alpha=0.01, seed=0):
    """Figure 2 and Section 4 of paper 002: mean test PCE per dataset against a calibrated model's.

    The statistic is the mean over runs of the test PCE of the vanilla model
    (sorted-PIT form for mixtures, the 19-level frequency form for SQR). Its
    null distribution is that of the same mean, in the same form, for
    uniform PITs of the same test sizes
    (:func:`calibtut.metrics.pce_null_distribution`); ``calibrated_pce`` is
    its mean (the orange bars of Figure 2). Two p-values: the paper's
    (fraction of null draws strictly above the statistic, which can be 0)
    and ``(1 + #>=) / (1 + n_sim)``; each is Holm-corrected across datasets.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`~calibtut.experiments.regression_study.run_study_task` (with ``dataset`` and ``run`` columns).
    base : str, default "mix-nll"
    n_sim : int, default 10000
        Null draws per dataset, >= 1.
    alpha : float, default 0.01
        Family-wise level of Holm's correction, in (0, 1).
    seed : int, default 0
        Dataset ``i`` (in sorted order) uses ``seed + i``; >= 0.

    Returns
    -------
    pandas.DataFrame
        One row per dataset, sorted by ``pce``: ``dataset``, ``n_runs``,
        ``pce`` (run mean), ``pce_se`` (standard error over runs, NaN for one
        run), ``calibrated_pce``, ``pvalue_paper``, ``pvalue``,
        ``reject_paper``, ``reject``.

    Examples
    --------
    >>> rows = pd.DataFrame({"dataset": ["a", "a", "b", "b"], "run": [0, 1, 0, 1],
    ...                      "method": "MIX-NLL", "train_fraction": 0.8,
    ...                      "test_pce": [0.2, 0.25, 0.02, 0.03], "n_test": 100})
    >>> t = calibration_test_table(rows, n_sim=2000)
    >>> t["dataset"].tolist(), t["reject"].tolist()
    (['b', 'a'], [False, True])
    """
    check_frame(rows, "rows", ["dataset", "run", "method", "train_fraction", "test_pce", "n_test"])
    n_sim = check_int(n_sim, "n_sim", minimum=1)
    seed = check_int(seed, "seed", minimum=0)
    vanilla = _vanilla(rows, base)
    # the statistic's own form: sorted PITs for mixtures, the 19 evaluation levels for SQR
    levels = EVAL_LEVELS if base.startswith("sqr") else None
    records = []
    for i, (name, group) in enumerate(vanilla.sort_values("run").groupby("dataset", sort=True)):
        stat = float(group["test_pce"].mean())
        null = pce_null_distribution([int(n) for n in group["n_test"]], n_sim=n_sim, levels=levels, seed=seed + i)
        records.append({
            "dataset": name,
            "n_runs": len(group),
            "pce": stat,
            "pce_se": float(group["test_pce"].std(ddof=1) / np.sqrt(len(group))) if len(group) > 1 else math.nan,
            "calibrated_pce": float(null.mean()),
            "pvalue_paper": float(np.mean(null > stat)),
            "pvalue": float((1 + np.sum(null >= stat)) / (1 + n_sim)),
        })
    table = pd.DataFrame(records)
    table["reject_paper"] = holm(table["pvalue_paper"].to_numpy(), alpha)[0]
    table["reject"] = holm(table["pvalue"].to_numpy(), alpha)[0]
    return table.sort_values("pce", kind="stable").reset_index(drop=True)


def rejection_counts(test_table, printed=11, total=57):
    """The two readings of the paper's "rejected for 11 datasets out of 57", beside our counts.

    The paper says most p-values are zero, which Holm rejects at any level,
    yet reports 11 rejections of 57; "not rejected for 11" (46 rejected) is
    the other reading. Ours are counted with both p-value conventions.

    Parameters
    ----------
    test_table : pandas.DataFrame
        From :func:`calibration_test_table`.
    printed : int, default 11
        The count the paper prints, >= 0.
    total : int, default 57
        The paper's number of datasets, >= ``printed``.

    Returns
    -------
    pandas.DataFrame
        Long: ``reading``, ``paper_rejected``, ``paper_share``,
        ``ours_rejected`` (paper's p-value), ``ours_rejected_conservative``
        (``(1 + #>=)/(1 + n)``), ``ours_datasets``, ``ours_share``.

    Examples
    --------
    >>> t = pd.DataFrame({"reject_paper": [True, True, False], "reject": [True, False, False]})
    >>> rejection_counts(t)[["reading", "paper_rejected", "ours_rejected"]].values.tolist()
    [['rejected for 11', 11, 2], ['not rejected for 11', 46, 2]]
    """
    check_frame(test_table, "test_table", ["reject_paper", "reject"])
    printed = check_int(printed, "printed", minimum=0)
    total = check_int(total, "total", minimum=max(printed, 1))
    n = len(test_table)
    ours = int(test_table["reject_paper"].sum())
    conservative = int(test_table["reject"].sum())
    return pd.DataFrame([
        {"reading": f"{label} {printed}", "paper_rejected": count, "paper_share": count / total,
         "ours_rejected": ours, "ours_rejected_conservative": conservative, "ours_datasets": n,
         "ours_share": ours / n}
        for label, count in (("rejected for", printed), ("not rejected for", total - printed))
    ])


def reliability_table(rows, method="MIX-NLL", train_fraction=0.8):
    """Long table of the PIT reliability diagrams: test frequency of ``PIT <= a`` per run.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`~calibtut.experiments.regression_study.run_study_task`.
    method : str, default "MIX-NLL"
        A label of :func:`~calibtut.experiments.regression_study.method_label`; regularized methods at every lambda.
    train_fraction : {0.8, 0.65}, default 0.8

    Returns
    -------
    pandas.DataFrame
        ``dataset``, ``run``, ``lam``, ``n_test``, ``level``, ``frequency``.

    Examples
    --------
    >>> row = {"dataset": "a", "run": 0, "method": "MIX-NLL", "train_fraction": 0.8, "lam": 0.0,
    ...        "n_test": 10, **{c: 0.5 for c in FREQ_COLUMNS}}
    >>> t = reliability_table(pd.DataFrame([row]))
    >>> len(t), float(t["level"].iloc[0]), float(t["frequency"].iloc[0])
    (19, 0.05, 0.5)
    """
    check_frame(rows, "rows", ["dataset", "run", "method", "train_fraction", "lam", "n_test", *FREQ_COLUMNS])
    chosen = rows[(rows["method"] == method) & (rows["train_fraction"] == train_fraction)]
    if chosen.empty:
        raise ValueError(f"rows holds no {method!r} at train_fraction {train_fraction!r}")
    long = chosen.melt(id_vars=["dataset", "run", "lam", "n_test"], value_vars=list(FREQ_COLUMNS),
                       var_name="column", value_name="frequency")
    long["level"] = long["column"].map(dict(zip(FREQ_COLUMNS, EVAL_LEVELS)))
    long = long.drop(columns="column").sort_values(["dataset", "run", "lam", "level"], kind="stable")
    return long[["dataset", "run", "lam", "n_test", "level", "frequency"]].reset_index(drop=True)


def posthoc_gains(rows, metric="pce"):
    """How often each post-hoc map improves on the network it corrects, per base model.

    The map, fitted on the calibration split, is compared with the unmapped
    vanilla network trained on 65% of the data (the one it corrects), on the
    run-mean test metric per dataset. Maps of regularized networks and maps
    fitted on the training split are left out.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`~calibtut.experiments.regression_study.run_study_task` with the post-hoc base (``fit_posthoc``).
    metric : str, default "pce"
        A test metric (reads ``test_<metric>``); lower is better.

    Returns
    -------
    pandas.DataFrame
        ``base``, ``posthoc`` (the map's label), ``datasets``, ``share_lower``
        (datasets where the map's run mean is below the network's) and
        ``median_ratio`` (median over datasets of map / network).

    Examples
    --------
    >>> r = pd.DataFrame({"dataset": ["a", "a", "b", "b"], "run": 0, "base": "mix-nll",
    ...                   "regularizer": "none", "train_fraction": 0.65,
    ...                   "posthoc": ["none", "lin"] * 2, "map_split": ["none", "calibration"] * 2,
    ...                   "test_pce": [0.10, 0.05, 0.04, 0.06]})
    >>> posthoc_gains(r).round(2).values.tolist()
    [['MIX-NLL', 'Rec-LIN', 2, 0.5, 1.0]]
    """
    if not isinstance(rows, pd.DataFrame):
        raise TypeError(f"rows must be a pandas DataFrame, got {type(rows).__name__}")
    column = f"test_{metric}"
    check_frame(rows, "rows", ["dataset", "run", "base", "regularizer", "train_fraction", "posthoc", "map_split",
                               column])
    own = rows[(rows["regularizer"] == "none") & (rows["train_fraction"] == 0.65)]
    means = own.groupby(["base", "posthoc", "dataset"])[column].mean()
    out = []
    for (base, posthoc), mapped in means.groupby(level=["base", "posthoc"]):
        if posthoc == "none" or (base, "none") not in means.index.droplevel("dataset"):
            continue
        network = means.loc[(base, "none")]
        mapped = mapped.droplevel(["base", "posthoc"])
        both = network.index.intersection(mapped.index)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = mapped[both] / network[both]
        out.append({"base": BASE_LABELS[base], "posthoc": POSTHOC_LABELS[posthoc], "datasets": len(both),
                    "share_lower": float(np.mean(mapped[both] < network[both])),
                    "median_ratio": float(np.median(ratio))})
    if not out:
        raise ValueError("rows hold no post-hoc map beside the 65% network it corrects")
    return pd.DataFrame(out)


def coverage_shift(rows, lambdas=None):
    """How each penalty moves the 90% central interval's test coverage, per strength.

    The interval is ``[Q(0.05), Q(0.95)]``, so its coverage is
    ``freq_95 - freq_05``; an over-confident model covers less than 0.9. Each
    regularized network (80% of the data, no map) is compared with the vanilla
    network of its base on the run-mean coverage and test PCE per dataset.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`~calibtut.experiments.regression_study.run_study_task`.
    lambdas : sequence of float, optional
        The strengths to report (default: every strength in ``rows``).

    Returns
    -------
    pandas.DataFrame
        ``base`` and ``regularizer`` (labels), ``lam``, ``datasets``,
        ``vanilla_pce`` and ``vanilla_coverage`` (medians over datasets of the
        vanilla network's), ``coverage_change``
        (median of regularized minus vanilla), ``lower_on`` (datasets where the
        coverage falls) and ``pce_ratio`` (median of regularized / vanilla PCE).

    Examples
    --------
    >>> r = pd.DataFrame({"dataset": ["a", "a", "b", "b"], "run": 0, "base": "mix-nll",
    ...                   "regularizer": ["none", "qr"] * 2, "lam": [0.0, 1.0] * 2,
    ...                   "posthoc": "none", "train_fraction": 0.8, "test_pce": 0.05,
    ...                   "freq_05": [0.05, 0.10] * 2, "freq_95": [0.95, 0.90] * 2})
    >>> coverage_shift(r)[["lam", "vanilla_coverage", "coverage_change", "lower_on"]].round(3).values.tolist()
    [[1.0, 0.9, -0.1, 2.0]]
    """
    check_frame(rows, "rows", ["dataset", "run", "base", "regularizer", "lam", "posthoc", "train_fraction", "test_pce",
                               "freq_05", "freq_95"])
    nets = rows[(rows["posthoc"] == "none") & (rows["train_fraction"] == 0.8)]
    nets = nets.assign(coverage=nets["freq_95"] - nets["freq_05"])
    means = nets.groupby(["base", "regularizer", "lam", "dataset"])[["coverage", "test_pce"]].mean()
    if lambdas is not None:
        lambdas = [check_real(lam, "lambdas", low=0, low_open=True) for lam in lambdas]
    out = []
    for (base, reg, lam), regularized in means.groupby(level=["base", "regularizer", "lam"]):
        if reg == "none" or (lambdas is not None and lam not in lambdas):
            continue
        if (base, "none", 0.0) not in means.index.droplevel("dataset"):
            continue
        vanilla = means.loc[(base, "none", 0.0)]
        regularized = regularized.droplevel(["base", "regularizer", "lam"])
        both = vanilla.index.intersection(regularized.index)
        change = regularized.loc[both, "coverage"] - vanilla.loc[both, "coverage"]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = regularized.loc[both, "test_pce"] / vanilla.loc[both, "test_pce"]
        out.append({"base": BASE_LABELS[base], "regularizer": REGULARIZER_LABELS[reg], "lam": lam,
                    "datasets": len(both), "vanilla_pce": float(vanilla.loc[both, "test_pce"].median()),
                    "vanilla_coverage": float(vanilla.loc[both, "coverage"].median()),
                    "coverage_change": float(change.median()), "lower_on": int((change < 0).sum()),
                    "pce_ratio": float(np.median(ratio))})
    if not out:
        raise ValueError("rows hold no regularized network beside the vanilla network of its base")
    return pd.DataFrame(out)


def selected_lambdas(rows, tolerance=0.1, score="val_wis"):
    """The lambda rule of paper 002 per (dataset, base, regularizer).

    Among the strengths whose run-mean validation score is within
    ``1 + tolerance`` of the vanilla model's (lambda = 0, the same base on the
    same 80% split), the one of smallest run-mean validation PCE
    (:func:`calibtut.stats.select_lambda`).

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`~calibtut.experiments.regression_study.run_study_task` with ``dataset``, ``run``, ``base``.
    tolerance : float, default 0.1
        >= 0.
    score : {"val_wis", "val_crps"}, default "val_wis"
        The authors' code uses the WIS; the paper's text says CRPS.

    Returns
    -------
    pandas.DataFrame
        ``dataset``, ``base``, ``regularizer``, ``lam``.

    Examples
    --------
    >>> rows = pd.DataFrame({"dataset": "a", "run": 0, "base": "mix-nll", "train_fraction": 0.8,
    ...     "posthoc": "none", "regularizer": ["none", "qr", "qr"], "lam": [0.0, 1.0, 5.0],
    ...     "val_wis": [1.0, 1.05, 1.5], "val_pce": [0.1, 0.05, 0.01]})
    >>> selected_lambdas(rows).values.tolist()
    [['a', 'mix-nll', 'qr', 1.0]]
    """
    check_frame(rows, "rows", ["dataset", "run", "base", "train_fraction", "posthoc", "regularizer", "lam", "val_pce"])
    if score not in ("val_wis", "val_crps"):
        raise ValueError(f"score must be 'val_wis' or 'val_crps', got {score!r}")
    check_frame(rows, "rows", [score])
    tolerance = check_real(tolerance, "tolerance", low=0)
    trained = rows[(rows["train_fraction"] == 0.8) & (rows["posthoc"] == "none")]
    out = []
    for (dataset, base), group in trained.groupby(["dataset", "base"], sort=True):
        vanilla = group[group["regularizer"] == "none"].groupby("lam")[[score, "val_pce"]].mean()
        for reg, sub in group[group["regularizer"] != "none"].groupby("regularizer", sort=True):
            means = pd.concat([vanilla, sub.groupby("lam")[[score, "val_pce"]].mean()]).sort_index()
            lam = select_lambda(means.index.to_numpy(), means[score].to_numpy(), means["val_pce"].to_numpy(),
                                tolerance)
            out.append({"dataset": dataset, "base": base, "regularizer": reg, "lam": lam})
    return pd.DataFrame(out, columns=["dataset", "base", "regularizer", "lam"])


def study_results(rows, tolerance=0.1):
    """The rows the figures compare: vanilla, post-hoc, and regularized at the selected lambda.

    A regularized method whose selected lambda is 0 is the vanilla model
    itself (the authors' ``duplicate_baseline_per_regul``): its rows are the
    vanilla rows under the regularized label.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`~calibtut.experiments.regression_study.run_study_task` with ``dataset``, ``run``, ``base``.
    tolerance : float, default 0.1
        Of :func:`selected_lambdas`, >= 0.

    Returns
    -------
    pandas.DataFrame
        The selected rows, with ``method`` the figure label and
        ``selected_lam`` (NaN for unregularized methods).

    Examples
    --------
    >>> rows = pd.DataFrame({"dataset": "a", "run": 0, "base": "mix-nll", "train_fraction": 0.8,
    ...     "posthoc": "none", "regularizer": ["none", "qr"], "lam": [0.0, 1.0],
    ...     "method": ["MIX-NLL", "MIX-NLL + QR"], "val_wis": [1.0, 2.0], "val_pce": [0.1, 0.05]})
    >>> study_results(rows)[["method", "lam"]].values.tolist()  # QR too costly: lambda = 0 kept
    [['MIX-NLL', 0.0], ['MIX-NLL + QR', 0.0]]
    """
    check_frame(rows, "rows", ["method", "base"])
    chosen = selected_lambdas(rows, tolerance)
    fixed = rows[rows["regularizer"] == "none"].assign(selected_lam=math.nan)
    parts = [fixed]
    for sel in chosen.itertuples(index=False):
        trained = rows[(rows["dataset"] == sel.dataset) & (rows["base"] == sel.base)
                       & (rows["train_fraction"] == 0.8) & (rows["posthoc"] == "none")]
        if sel.lam == 0:
            pick = trained[trained["regularizer"] == "none"]
        else:
            pick = trained[(trained["regularizer"] == sel.regularizer) & (trained["lam"] == sel.lam)]
        parts.append(pick.assign(method=method_label(sel.base, sel.regularizer), regularizer=sel.regularizer,
                                 selected_lam=sel.lam))
    return pd.concat(parts, ignore_index=True)


def run_mean_table(results, metric):
    """Datasets x methods table of run means of one test metric (input of the CD diagrams).

    Vanilla models trained on 65% for a post-hoc map are left out (their
    label is the base model's; the vanilla model of the figures is the 80% one).

    Parameters
    ----------
    results : pandas.DataFrame
        From :func:`study_results`.
    metric : str
        A metric name, e.g. ``"pce"`` (reads ``test_pce``).

    Returns
    -------
    pandas.DataFrame

    Examples
    --------
    >>> r = pd.DataFrame({"dataset": ["a", "a", "a"], "run": [0, 1, 0], "method": ["M", "M", "N"],
    ...                   "train_fraction": 0.8, "posthoc": "none", "test_pce": [0.1, 0.3, 0.05]})
    >>> run_mean_table(r, "pce").round(2).values.tolist()
    [[0.2, 0.05]]
    """
    check_frame(results, "results", ["dataset", "method", "train_fraction", "posthoc", f"test_{metric}"])
    keep = (results["train_fraction"] == 0.8) | (results["posthoc"] != "none")
    table = results[keep].pivot_table(index="dataset", columns="method", values=f"test_{metric}", aggfunc="mean")
    table.columns.name = None
    return table


def method_means(rows, metrics=("pce", "wis", "nll", "std")):
    """Mean test metrics per method over datasets and runs, the 65% post-hoc bases labelled apart.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`~calibtut.experiments.regression_study.run_study_task`.
    metrics : sequence of str, default ("pce", "wis", "nll", "std")
        Metric names (read from the ``test_`` columns).

    Returns
    -------
    pandas.DataFrame
        Indexed by method; the unrecalibrated network a post-hoc map corrects
        (trained on 65%) is labelled ``"<base> (65%)"``.

    Examples
    --------
    >>> r = pd.DataFrame({"method": ["M", "M", "M + Rec-EMP"], "train_fraction": [0.8, 0.65, 0.65],
    ...                   "posthoc": ["none", "none", "emp"], "test_pce": [0.1, 0.2, 0.05]})
    >>> method_means(r, ["pce"])["test_pce"].to_dict()
    {'M': 0.1, 'M (65%)': 0.2, 'M + Rec-EMP': 0.05}
    """
    if isinstance(metrics, str) or not hasattr(metrics, "__iter__"):
        raise TypeError(f"metrics must be a sequence of metric names, got {metrics!r}")
    columns = [f"test_{m}" for m in metrics]
    check_frame(rows, "rows", ["method", "train_fraction", "posthoc", *columns])
    base65 = (rows["train_fraction"] == 0.65) & (rows["posthoc"] == "none")
    labels = rows["method"].where(~base65, rows["method"] + " (65%)")
    return rows.assign(method=labels).groupby("method")[columns].mean()


def cohens_d_table(results, metric, baseline="MIX-NLL", form="authors"):
    """Cohen's d of every method against a baseline, per dataset (Figures 3-10).

    Parameters
    ----------
    results : pandas.DataFrame
        From :func:`study_results` (several runs per dataset).
    metric : str
        E.g. ``"pce"``, ``"wis"``, ``"nll"``, ``"std"``.
    baseline : str, default "MIX-NLL"
        A method label present in ``results``.
    form : {"authors", "textbook"}, default "authors"
        See :func:`calibtut.stats.cohens_d` (authors' d = sqrt(runs) x textbook d).

    Returns
    -------
    pandas.DataFrame
        Datasets x methods (the baseline column left out); NaN where the
        metric is undefined (NLL of quantile models), +-inf where a mean is.

    Examples
    --------
    >>> r = pd.DataFrame({"dataset": "a", "run": [0, 1, 2, 0, 1, 2], "method": ["B"] * 3 + ["M"] * 3,
    ...                   "train_fraction": 0.8, "posthoc": "none",
    ...                   "test_pce": [0.3, 0.4, 0.5, 0.1, 0.2, 0.3]})
    >>> cohens_d_table(r, "pce", baseline="B", form="textbook").round(3).values.tolist()
    [[-2.0]]
    """
    column = f"test_{metric}"
    check_frame(results, "results", ["dataset", "method", "train_fraction", "posthoc", column])
    if form not in ("authors", "textbook"):
        raise ValueError(f"form must be 'authors' or 'textbook', got {form!r}")
    keep = (results["train_fraction"] == 0.8) | (results["posthoc"] != "none")
    data = results[keep]
    if baseline not in set(data["method"]):
        raise ValueError(f"baseline {baseline!r} is not a method of results")
    out = {}
    for dataset, group in data.groupby("dataset", sort=True):
        ref = group.loc[group["method"] == baseline, column].to_numpy(dtype=float)
        row = {}
        for method, sub in group[group["method"] != baseline].groupby("method", sort=True):
            values = sub[column].to_numpy(dtype=float)
            if len(ref) == 0 or np.isnan(values).any() or np.isnan(ref).any() or len(ref) + len(values) < 3:
                row[method] = math.nan
            elif np.isinf(values).any() and np.isinf(ref).any():
                row[method] = math.nan  # both infinite (e.g. Rec-EMP's NLL with and without a penalty)
            elif np.isinf(values).any() or np.isinf(ref).any():
                row[method] = float(np.sign(values.mean() - ref.mean())) * math.inf
            else:
                row[method] = cohens_d(values, ref, form)
        out[dataset] = row
    table = pd.DataFrame.from_dict(out, orient="index")
    table.index.name = "dataset"
    return table


# ------------------------------ what the full run cost (the appendix's cost chapter)


_TASK = ["dataset", "run", "base"]
# a training is one (penalty, strength, training split); maps reuse its model
_TRAINING = ["regularizer", "lam", "train_fraction"]


def _check_study_rows(rows, needed):
    check_frame(rows, "rows", needed)
    if rows.empty:
        raise ValueError("rows must hold at least one task, got no rows")


def trainings_per_task(rows):
    """Number of models each task trained: its distinct (penalty, strength, split).

    Post-hoc maps and the Appendix B combinations reuse a trained model, so a
    mixture task of the full run trains 32 models (the vanilla model and 15
    regularized ones, on 80% and on 65% of the data) and an SQR task 22.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of ``run_study_task`` with ``dataset``, ``run``, ``base``,
        ``regularizer``, ``lam`` and ``train_fraction``.

    Returns
    -------
    pandas.Series
        Trainings, indexed by (dataset, run, base).

    Examples
    --------
    >>> rows = pd.DataFrame({"dataset": "A", "run": 0, "base": "mix-nll",
    ...                      "regularizer": ["none", "none", "qr"], "lam": [0.0, 0.0, 1.0],
    ...                      "train_fraction": [0.8, 0.8, 0.8]})
    >>> trainings_per_task(rows).tolist()
    [2]
    """
    _check_study_rows(rows, _TASK + _TRAINING)
    return rows.groupby(_TASK)[_TRAINING].apply(lambda g: len(g.drop_duplicates())).rename("trainings")


def study_cost(rows, *, n_runs=5, workers=2):
    """Measured cost of the stored tasks per base model, and the whole run projected from it.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of ``run_study_task`` with the columns of :func:`trainings_per_task`
        and ``seconds`` (the task's wall seconds on one worker thread, the same
        on each of its rows).
    n_runs : int, default 5
        Runs of the whole study: the projection of a base model is the mean
        task time of each of its datasets in ``rows`` times ``n_runs``, summed
        over them.
    workers : int, default 2
        Worker processes of the sweep, for the projected wall time.

    Returns
    -------
    pandas.DataFrame
        One row per base model and one ``"all"``: ``tasks``, ``trainings``,
        ``task_hours``, ``minutes_per_task``, ``trainings_per_task_hour``,
        ``projected_task_hours`` and ``projected_wall_hours`` (task-hours over
        ``workers``, ignoring idle workers at the end of the run).

    Examples
    --------
    >>> rows = pd.DataFrame({"dataset": ["A", "A", "B"], "run": 0, "base": "mix-nll",
    ...                      "regularizer": ["none", "qr", "none"], "lam": [0.0, 1.0, 0.0],
    ...                      "train_fraction": 0.8, "seconds": [1800.0, 1800.0, 3600.0]})
    >>> study_cost(rows, n_runs=2).loc["all", ["tasks", "trainings", "task_hours", "projected_task_hours"]].tolist()
    [2.0, 3.0, 1.5, 3.0]
    """
    _check_study_rows(rows, _TASK + _TRAINING + ["seconds"])
    n_runs = check_int(n_runs, "n_runs", minimum=1)
    workers = check_int(workers, "workers", minimum=1)
    seconds = rows.groupby(_TASK)["seconds"].agg(["first", "nunique"])
    if (seconds["nunique"] > 1).any():
        raise ValueError("rows must carry one seconds value per task, got several for "
                         f"{seconds.index[seconds['nunique'] > 1][0]}")
    if not np.isfinite(seconds["first"]).all() or (seconds["first"] < 0).any():
        raise ValueError("rows' seconds must be finite and non-negative")
    tasks = pd.concat([seconds["first"].rename("seconds"), trainings_per_task(rows)], axis=1).reset_index()
    per_dataset = tasks.groupby(["base", "dataset"])["seconds"].mean()
    out = tasks.groupby("base").agg(tasks=("seconds", "size"), trainings=("trainings", "sum"),
                                    seconds=("seconds", "sum"))
    out.loc["all"] = out.sum()
    out["projected_task_hours"] = per_dataset.groupby("base").sum() * n_runs / 3600
    out.loc["all", "projected_task_hours"] = out["projected_task_hours"].iloc[:-1].sum()
    out["task_hours"] = out.pop("seconds") / 3600
    out["minutes_per_task"] = 60 * out["task_hours"] / out["tasks"]
    out["trainings_per_task_hour"] = out["trainings"] / out["task_hours"]
    out["projected_wall_hours"] = out["projected_task_hours"] / workers
    columns = ["tasks", "trainings", "task_hours", "minutes_per_task", "trainings_per_task_hour",
               "projected_task_hours", "projected_wall_hours"]
    return out[columns].astype(float)


# ------------------------------ the authors' per-batch metrics against the full-set PCE test (chapter 1)


#: The three readings of :func:`per_batch_test_table`: (statistic, null) columns.
_READINGS = {"full set": ("pce", None), "per batch, full-set null": ("pce_batch", None),
             "per batch, per-batch null": ("pce_batch", AUTHORS_BATCH)}


def per_batch_reading(sizes, batch_size=512, n_sim=2000, level=0.01, seed=0):
    """How a calibrated model fares when its per-batch PCE is tested against the full-set null.

    For each test size ``n``, ``n_sim`` calibrated (uniform) PIT samples give
    the null distribution of the full-set PCE and, independently, that of the
    per-batch PCE (:func:`~calibtut.metrics.pce_null_distribution` with and
    without ``batch_size``). A calibrated model's per-batch statistic is a
    draw of the second; the authors' reading rejects it when it exceeds the
    ``1 - level`` quantile of the first.

    Parameters
    ----------
    sizes : sequence of int
        Test-set sizes (each at least 2).
    batch_size : int, default 512
        Rows per batch (the authors' loaders).
    n_sim : int, default 2000
        Null draws per size and reading.
    level : float, default 0.01
        Significance level in (0, 1).
    seed : int, default 0
        Seed of the draws.

    Returns
    -------
    pandas.DataFrame
        One row per size: ``n``, ``batches``, ``pce_full`` and ``pce_batch``
        (mean PCE of calibrated PITs, full set and per batch) and
        ``rejected`` (share of calibrated models rejected at ``level`` by the
        per-batch statistic against the full-set null; ``level`` when the
        reading is consistent, which it is for ``n <= batch_size``).

    Examples
    --------
    >>> t = per_batch_reading([400, 2064], n_sim=400, seed=0)
    >>> t["batches"].tolist(), bool(t["rejected"].iloc[0] < 0.05), bool(t["rejected"].iloc[1] > 0.9)
    ([1, 5], True, True)
    """
    if isinstance(sizes, (str, bytes)) or not hasattr(sizes, "__iter__"):
        raise TypeError(f"sizes must be a sequence of int, got {sizes!r}")
    sizes = [check_int(n, "sizes", minimum=2) for n in sizes]
    if not sizes:
        raise ValueError("sizes must not be empty")
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    n_sim = check_int(n_sim, "n_sim", minimum=10)
    level = check_real(level, "level", low=0, high=1, low_open=True, high_open=True)
    rng = check_rng(seed)
    rows = []
    for n in sizes:
        full = pce_null_distribution(n, n_sim=n_sim, seed=rng)
        batch = pce_null_distribution(n, n_sim=n_sim, seed=rng, batch_size=batch_size)
        threshold = np.quantile(full, 1 - level)
        rows.append({"n": n, "batches": -(-n // batch_size), "pce_full": float(full.mean()),
                     "pce_batch": float(batch.mean()), "rejected": float(np.mean(batch > threshold))})
    return pd.DataFrame(rows)


def per_batch_test_table(rows, *, n_sim=10_000, alpha=0.01, seed=0):
    """Our vanilla MIX-NLL's per-dataset PCE test, read with the full-set and the authors' per-batch PCE.

    For each dataset the statistic is a run mean of the test PCE: of the
    whole test set (``test_pce``), or averaged over batches of 512 rows as
    the authors' code reports it (``test_pce_batch``). Its null is the same
    mean for uniform PITs of the runs' test sizes
    (:func:`~calibtut.metrics.pce_null_distribution`), simulated on the whole
    set or per batch. Three readings: the full-set statistic against the
    full-set null (the paper's Section 4, and ours); the per-batch statistic
    against the full-set null (what the paper's statistic, as its code
    computes it, meets in its test); the per-batch statistic against the
    per-batch null (a consistent per-batch test). p-values are
    ``(1 + #null >= statistic) / (1 + n_sim)``, Holm-corrected across
    datasets.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`~calibtut.experiments.regression_study.run_study_task`
        with ``test_pce_batch``: the vanilla MIX-NLL trained on 80% is read.
    n_sim : int, default 10000
        Null draws per dataset and null, >= 10.
    alpha : float, default 0.01
        Family-wise level of Holm's correction, in (0, 1).
    seed : int, default 0
        Dataset ``i`` (sorted by name) draws from ``[seed, i]``; >= 0.

    Returns
    -------
    pandas.DataFrame
        One row per dataset, sorted by name: ``dataset``, ``n_test`` (of the
        first run), ``batches``, ``pce`` and ``pce_batch`` (run means), and for
        each reading (``full set``, ``per batch, full-set null``, ``per batch,
        per-batch null``) ``p (<reading>)`` and ``reject (<reading>)``.

    Examples
    --------
    >>> rows = pd.DataFrame({"dataset": ["a", "a", "b", "b"], "run": [0, 1, 0, 1], "method": "MIX-NLL",
    ...                      "train_fraction": 0.8, "n_test": [2064, 2064, 100, 100],
    ...                      "test_pce": [0.007, 0.007, 0.2, 0.2], "test_pce_batch": [0.027, 0.027, 0.2, 0.2]})
    >>> t = per_batch_test_table(rows, n_sim=500)
    >>> t.filter(like="reject").values.tolist()
    [[False, True, False], [True, True, True]]
    """
    check_frame(rows, "rows", ["dataset", "run", "method", "train_fraction", "n_test", "test_pce", "test_pce_batch"])
    n_sim = check_int(n_sim, "n_sim", minimum=10)
    alpha = check_real(alpha, "alpha", low=0, high=1, low_open=True, high_open=True)
    seed = check_int(seed, "seed", minimum=0)
    vanilla = rows[(rows["method"] == "MIX-NLL") & (rows["train_fraction"] == 0.8)]
    if vanilla.empty:
        raise ValueError("rows hold no vanilla MIX-NLL model trained on 80% of the data")
    if vanilla["test_pce_batch"].isna().any():
        raise ValueError("rows lack the per-batch PCE (test_pce_batch) of some MIX-NLL model")
    records = []
    for i, (name, group) in enumerate(vanilla.sort_values("run").groupby("dataset", sort=True)):
        sizes = [int(n) for n in group["n_test"]]
        record = {"dataset": name, "n_test": sizes[0], "batches": -(-sizes[0] // AUTHORS_BATCH),
                  "pce": float(group["test_pce"].mean()), "pce_batch": float(group["test_pce_batch"].mean())}
        rng = np.random.default_rng([seed, i])
        nulls = {batch: pce_null_distribution(sizes, n_sim=n_sim, seed=rng, batch_size=batch)
                 for batch in (None, AUTHORS_BATCH)}
        for reading, (statistic, batch) in _READINGS.items():
            null = nulls[batch]
            record[f"p ({reading})"] = float((1 + np.sum(null >= record[statistic])) / (1 + n_sim))
        records.append(record)
    table = pd.DataFrame(records)
    for reading in _READINGS:
        table[f"reject ({reading})"] = holm(table[f"p ({reading})"].to_numpy(), alpha=alpha)[0]
    return table


def published_per_batch_test(*, seed=0, root=None):
    """The full run's :func:`per_batch_test_table` as chapter 6 published it, if drawn with ``seed``; else None.

    Chapter 6's full profile retrains the vanilla MIX-NLL of every offline
    dataset and run (the per-batch PCE is not in the stored study) and
    publishes the table; chapter 1 reads it.

    Parameters
    ----------
    seed : int, default 0
        Seed the published table must have been drawn with, >= 0.
    root : str or path-like, optional
        Repository root; found from the working directory by default.

    Returns
    -------
    pandas.DataFrame or None

    Examples
    --------
    >>> import tempfile
    >>> published_per_batch_test(root=tempfile.mkdtemp()) is None
    True
    """
    return published_table("per_batch_test", seed, root)
