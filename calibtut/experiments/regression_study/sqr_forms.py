"""Paper 002: the paper's SQR (nonlinear in the level) beside the authors' affine one.

The paper describes simultaneous quantile regression with the level fed into
the whole network; the authors' code, which drew every figure, makes the
network affine in the level (``"sqr"`` and ``"sqr-affine"`` in
:data:`calibtut.models.study_training.BASE_MODEL_NAMES`). The full study runs
the affine form only: the paper's form trains tens of times slower. This
module compares the two on the smaller offline datasets, the vanilla model
and its CQR map: :func:`sqr_form_tasks` lists the sweep, :func:`full_sqr_forms`
reads the published or stored full run, :func:`sqr_form_table` and
:func:`sqr_form_summary` compare the forms.
"""

from __future__ import annotations

import functools

import pandas as pd
import scipy.stats

from calibtut._validation import check_frame
from calibtut.experiments.regression_study._common import FullRun, read_full_run
from calibtut.experiments.regression_study.tasks import STUDY_RUNS, complete_runs, study_tasks

__all__ = ["SQR_FORMS", "SQR_FORM_DATASETS", "full_sqr_forms", "sqr_form_summary", "sqr_form_table", "sqr_form_tasks"]

#: The two SQR networks, the paper's first.
SQR_FORMS = ("sqr", "sqr-affine")

#: The offline datasets with fewer than 2,000 training points (80% split), smallest first.
SQR_FORM_DATASETS = ("CPU", "Yacht", "MPG", "boston", "Energy", "Fish", "Concrete", "Airfoil", "Crime",
                     "us_crime", "quake")

_MODELS = {"vanilla": ("none", 0.8), "+ CQR": ("cqr", 0.65)}
_METRICS = ("pce", "wis", "std_quantile")


def sqr_form_tasks(datasets, runs, **fixed):
    """Tasks comparing the SQR forms: one vanilla model of each form, and its post-hoc maps, per (dataset, run).

    Parameters
    ----------
    datasets : sequence of str
        Keys of :data:`calibtut.data.regression_study.STUDY_DATASETS`.
    runs : sequence of int
    **fixed
        Further arguments of :func:`~calibtut.experiments.regression_study.run_study_task`
        (e.g. ``epochs``).

    Returns
    -------
    list of dict
        Tasks for :func:`calibtut.run.sweep` (no regularizer, no lambda grid).

    Examples
    --------
    >>> tasks = sqr_form_tasks(["Yacht"], [0], epochs=30)
    >>> [(t["base"], t["lambdas"], t["regularizers"]) for t in tasks]
    [('sqr', '', ''), ('sqr-affine', '', '')]
    """
    return study_tasks(datasets, runs, SQR_FORMS, lambdas=(), regularizers=(), **fixed)


#: The full comparison of the SQR forms (:data:`SQR_FORM_DATASETS` x 5 runs x both forms).
_FULL_SQR_FORMS = FullRun("06_paper_vs_ours", "sqr_forms", "sqr_forms", ("dataset", "run", "base"),
                          functools.partial(complete_runs, datasets=SQR_FORM_DATASETS, bases=SQR_FORMS),
                          len(SQR_FORM_DATASETS) * len(SQR_FORMS) * STUDY_RUNS, "SQR-form run",
                          "every dataset and both forms")


def full_sqr_forms(*, min_runs=2, root=None):
    """The full comparison of the SQR forms, the ``full`` profile of chapter ``06_paper_vs_ours``.

    Read as :func:`~calibtut.experiments.regression_study.full_study` reads
    the full run (same arguments, same ``FullStudy``).

    Examples
    --------
    >>> import tempfile
    >>> full_sqr_forms(root=tempfile.mkdtemp()).note
    'The full SQR-form run is not yet published and its store holds no complete runs (0 of 110 tasks stored).'
    """
    return read_full_run(_FULL_SQR_FORMS, min_runs=min_runs, root=root)


def sqr_form_table(rows):
    """Run-mean test metrics per dataset of both SQR forms, vanilla and with CQR.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`~calibtut.experiments.regression_study.run_study_task` for
        :func:`sqr_form_tasks`, with the sweep's ``seconds`` column.

    Returns
    -------
    pandas.DataFrame
        One row per (dataset, n_train), smallest first; columns (model, metric, form) for
        PCE, the 19-level WIS and the quantile STD, and ``("cost", "seconds", form)``,
        the mean seconds of one task.

    Examples
    --------
    >>> rows = pd.DataFrame({"dataset": "a", "run": [0, 0, 1, 1], "base": ["sqr", "sqr-affine"] * 2,
    ...                      "posthoc": "none", "train_fraction": 0.8, "n_train": 10, "seconds": 1.0,
    ...                      "test_pce": [0.1, 0.2, 0.3, 0.2], "test_wis": 1.0, "test_std_quantile": 2.0})
    >>> table = sqr_form_table(rows)
    >>> [table[("vanilla", "pce", form)].round(2).tolist() for form in SQR_FORMS]
    [[0.2], [0.2]]
    """
    check_frame(rows, "rows", ["dataset", "run", "base", "posthoc", "train_fraction", "n_train", "seconds",
                               *(f"test_{m}" for m in _METRICS)])
    unknown = set(rows["base"]) - set(SQR_FORMS)
    if unknown:
        raise ValueError(f"rows must hold only the SQR forms {SQR_FORMS}, got base {sorted(unknown)}")
    parts = {}
    for model, (posthoc, fraction) in _MODELS.items():
        picked = rows[(rows["posthoc"] == posthoc) & (rows["train_fraction"] == fraction)]
        if picked.empty:
            continue
        means = picked.groupby(["dataset", "base"])[[f"test_{m}" for m in _METRICS]].mean()
        means.columns = list(_METRICS)
        parts[model] = means.unstack("base").reindex(columns=list(SQR_FORMS), level="base")
    if not parts:
        raise ValueError("rows hold neither vanilla (80%) nor CQR rows of the SQR forms")
    cost = rows.drop_duplicates(["dataset", "run", "base"]).groupby(["dataset", "base"])["seconds"].mean()
    parts["cost"] = pd.concat({"seconds": cost.unstack("base").reindex(columns=list(SQR_FORMS))}, axis=1)
    table = pd.concat(parts, axis=1)
    table.columns.names = ["model", "metric", "form"]
    n_train = rows[rows["train_fraction"] == 0.8].groupby("dataset")["n_train"].first()
    table.index = pd.MultiIndex.from_arrays([table.index, n_train.reindex(table.index)], names=["dataset", "n_train"])
    return table.sort_index(level="n_train")


def sqr_form_summary(table):
    """How the paper's SQR compares with the authors' over the datasets of :func:`sqr_form_table`.

    Parameters
    ----------
    table : pandas.DataFrame
        As :func:`sqr_form_table` returns it.

    Returns
    -------
    pandas.DataFrame
        One row per (model, metric): ``lower`` (datasets on which the paper's
        form has the lower run mean), ``datasets``, ``median_ratio`` (paper's
        over authors'), and ``p`` (two-sided Wilcoxon signed-rank test, zero
        method "pratt"; missing with fewer than two datasets or no difference). The row
        ``("cost", "seconds")`` compares the time of one task.

    Examples
    --------
    >>> rows = pd.DataFrame({"dataset": list("aabbcc"), "run": 0, "base": ["sqr", "sqr-affine"] * 3,
    ...                      "posthoc": "none", "train_fraction": 0.8, "n_train": 10,
    ...                      "seconds": [9.0, 1.0] * 3, "test_pce": [0.1, 0.2, 0.3, 0.2, 0.1, 0.3],
    ...                      "test_wis": 1.0, "test_std_quantile": 2.0})
    >>> summary = sqr_form_summary(sqr_form_table(rows))
    >>> summary.loc[("vanilla", "pce"), ["lower", "datasets"]].tolist()
    [2, 3]
    >>> float(summary.loc[("cost", "seconds"), "median_ratio"])
    9.0
    """
    if not isinstance(table, pd.DataFrame) or table.columns.nlevels != 3 or "n_train" not in table.index.names:
        raise TypeError("table must be the DataFrame sqr_form_table returns")
    out = {}
    for model, metric in dict.fromkeys((m, k) for m, k, _ in table.columns):
        pair = table[[(model, metric, form) for form in SQR_FORMS]].dropna()
        paper, authors = pair.iloc[:, 0], pair.iloc[:, 1]
        p = float("nan")
        if len(pair) >= 2 and (paper != authors).any():
            p = float(scipy.stats.wilcoxon(paper, authors, zero_method="pratt").pvalue)
        out[(model, metric)] = {"lower": int((paper < authors).sum()), "datasets": len(pair),
                                "median_ratio": float((paper / authors).median()), "p": p}
    summary = pd.DataFrame.from_dict(out, orient="index")
    summary.index.names = ["model", "metric"]
    return summary
