"""Paper 002, Appendix C: the architecture ablations (Figures 17-19).

Each factor of :data:`ABLATIONS` (mixture size, number of SQR levels, depth)
is varied one value at a time on a vanilla model, all else at the study's
defaults. :func:`ablation_tasks` lists the sweep's tasks (each a
:func:`calibtut.experiments.regression_study.run_study_task` call without
the lambda grid), :func:`full_ablations` reads the published or stored full
run, and :func:`ablation_effects`, :func:`ablation_summary`, :func:`ablation_median_table` and
:func:`plot_ablation_figures` compare every value with the default.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from calibtut._validation import check_choice, check_frame, check_int
from calibtut.experiments.regression_study._common import FullRun, read_full_run
from calibtut.experiments.regression_study.figures import median_effects
from calibtut.experiments.regression_study.tables import cohens_d_table
from calibtut.experiments.regression_study.tasks import (
    OFFLINE_DATASETS,
    STUDY_RUNS,
    complete_runs,
    study_tasks,
)
from calibtut.plots import column_subplots
from calibtut.stats import letter_value_plot

__all__ = [
    "ablation_effects",
    "ablation_median_table",
    "ablation_summary",
    "ablation_tasks",
    "ABLATIONS",
    "complete_ablation_runs",
    "full_ablations",
    "plot_ablation_figures",
]


#: The architecture factors of Appendix C: (task argument, default, base model, figure).
ABLATIONS = {
    "n_components": (3, "mix-nll", "17"),
    "n_levels": (64, "sqr-affine", "18"),
    "n_hidden": (3, "mix-nll", "19"),
}


def ablation_tasks(datasets, runs, values=None, **fixed):
    """Tasks of the Appendix C ablations: one vanilla model per (dataset, run, factor value).

    Parameters
    ----------
    datasets : sequence of str
    runs : sequence of int
    values : dict, optional
        ``{factor: values}`` for the factors of :data:`ABLATIONS`; default the
        paper's grids (components 1, 3, 5, 10, 20, 50; levels 1, 4, 16, 64;
        hidden layers 1, 2, 3, 5, 10, 20). Each grid must hold the default.
    **fixed
        Further arguments of :func:`~calibtut.experiments.regression_study.run_study_task` (e.g. ``epochs``).

    Returns
    -------
    list of dict
        The default model of each factor appears once per base model. The
        tasks go run by run (every factor, value and dataset of a run before
        the next run), so a sweep stopped part way holds whole runs.

    Examples
    --------
    >>> tasks = ablation_tasks(["Yacht"], [0], {"n_components": (1, 3), "n_hidden": (3, 5)}, epochs=5)
    >>> [(t["base"], t.get("n_components"), t.get("n_hidden")) for t in tasks]
    [('mix-nll', 1, None), ('mix-nll', None, None), ('mix-nll', None, 5)]
    """
    if values is None:
        values = {"n_components": (1, 3, 5, 10, 20, 50), "n_levels": (1, 4, 16, 64),
                  "n_hidden": (1, 2, 3, 5, 10, 20)}
    if not isinstance(values, dict):
        raise TypeError(f"values must be a dict {{factor: values}}, got {type(values).__name__}")
    tasks, seen = [], set()
    for factor, grid in values.items():
        if factor not in ABLATIONS:
            raise ValueError(f"values must name factors of {tuple(ABLATIONS)}, got {factor!r}")
        default, base, _ = ABLATIONS[factor]
        grid = [check_int(v, factor, minimum=1) for v in grid]
        if default not in grid:
            raise ValueError(f"values[{factor!r}] must hold the default {default}, got {grid}")
        for value in grid:
            extra = {} if value == default else {factor: value}
            for task in study_tasks(datasets, runs, [base], lambdas=(), fit_posthoc=False, **fixed, **extra):
                key = tuple(sorted(task.items()))
                if key not in seen:
                    seen.add(key)
                    tasks.append(task)
    order = {run: i for i, run in enumerate(dict.fromkeys(task["run"] for task in tasks))}
    return sorted(tasks, key=lambda task: order[task["run"]])


def _ablation_model(base, values):
    """One label per ablated model: its base and the factors it sets, e.g. ``"mix-nll n_hidden=5"``."""
    return base + "".join(f" {f}={int(v)}" for f, v in zip(ABLATIONS, values) if v is not None and not pd.isna(v))


def complete_ablation_runs(rows, datasets=OFFLINE_DATASETS):
    """The rows of the ablation runs that hold every model of :func:`ablation_tasks`, the others dropped.

    :func:`~calibtut.experiments.regression_study.complete_runs` with each ablated model (its base and the factors it
    sets) in place of the base model.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`~calibtut.experiments.regression_study.run_study_task` for :func:`ablation_tasks` with the
        paper's grids, with the task keys (``dataset``, ``run``, ``base`` and
        the factor columns that the grids set).
    datasets : sequence of str
        What a complete run holds (default: the offline datasets).

    Returns
    -------
    pandas.DataFrame
        The rows of the complete runs; of no run when none is complete.

    Examples
    --------
    >>> tasks = ablation_tasks(["Yacht"], [0, 1], epochs=1)
    >>> rows = pd.DataFrame(tasks[:-1]).assign(test_pce=0.1)  # run 1 lacks its last model
    >>> complete_ablation_runs(rows, ["Yacht"])["run"].unique().tolist()
    [0]
    """
    if not isinstance(rows, pd.DataFrame):
        raise TypeError(f"rows must be a pandas DataFrame, got {type(rows).__name__}")
    if isinstance(datasets, (str, bytes)) or not hasattr(datasets, "__iter__") or not len(datasets):
        raise TypeError(f"datasets must be a non-empty sequence of names, got {datasets!r}")
    if rows.empty:
        return rows
    check_frame(rows, "rows", ["dataset", "run", "base"])
    models = {_ablation_model(t["base"], [t.get(f) for f in ABLATIONS]) for t in ablation_tasks(datasets[:1], [0])}
    factors = rows.reindex(columns=list(ABLATIONS)).itertuples(index=False)
    # positions, not labels: the index of rows need not be unique
    labelled = rows.reset_index(drop=True).assign(base=[_ablation_model(b, v) for b, v in zip(rows["base"], factors)])
    return rows.iloc[complete_runs(labelled, datasets, sorted(models)).index]


def full_ablations(*, min_runs=2, root=None):
    """The Appendix C ablations at full scale (chapter ``05_combining_and_where_to_fit``, 1,725 trainings).

    Read as :func:`~calibtut.experiments.regression_study.full_study` reads
    the full run (same arguments, same ``FullStudy``); an unpublished run
    shows its complete runs (:func:`complete_ablation_runs`) as an interim result.

    Examples
    --------
    >>> import tempfile
    >>> found = full_ablations(root=tempfile.mkdtemp())
    >>> found.rows is None, found.note
    (True, 'The full ablation run is not yet published and its store holds no complete runs (0 of 1725 tasks stored).')
    """
    run = FullRun("05_combining_and_where_to_fit", "ablations", "ablations", ("run", "dataset", "base", *ABLATIONS),
                  complete_ablation_runs, len(ablation_tasks(OFFLINE_DATASETS, range(STUDY_RUNS))), "ablation run",
                  "every dataset and ablated model")
    return read_full_run(run, min_runs=min_runs, root=root)


def ablation_effects(rows, factor, metric, form="authors"):
    """Cohen's d per dataset of each value of one Appendix C factor against its default (Figures 17-19).

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`~calibtut.experiments.regression_study.run_study_task` for :func:`ablation_tasks`.
    factor : {"n_components", "n_levels", "n_hidden"}
    metric : str
        E.g. ``"pce"``.
    form : {"authors", "textbook"}, default "authors"

    Returns
    -------
    pandas.DataFrame
        Datasets x values (columns such as ``"n_components = 1"``).

    Examples
    --------
    >>> rows = pd.DataFrame({"dataset": "a", "run": [0, 1, 0, 1], "base": "mix-nll", "method": "MIX-NLL",
    ...                      "train_fraction": 0.8, "posthoc": "none", "n_components": [None, None, 1, 1],
    ...                      "test_nll": [1.0, 1.2, 1.5, 1.7]})
    >>> ablation_effects(rows, "n_components", "nll", form="textbook").round(3).values.tolist()
    [[3.536]]
    """
    check_choice(factor, "factor", tuple(ABLATIONS))
    default, base, _ = ABLATIONS[factor]
    check_frame(rows, "rows", ["dataset", "run", "base", "method", "train_fraction", "posthoc", f"test_{metric}"])
    others = [f for f in ABLATIONS if f != factor and f in rows.columns]
    chosen = rows[(rows["base"] == base) & rows[others].isna().all(axis=1)] if others else rows[rows["base"] == base]
    values = chosen[factor].fillna(default) if factor in chosen.columns else pd.Series(default, index=chosen.index)
    labelled = chosen.assign(method=[f"{factor} = {int(v)}" for v in values], train_fraction=0.8, posthoc="none")
    return cohens_d_table(labelled, metric, f"{factor} = {default}", form)


def ablation_summary(rows, metrics=("pce", "wis", "nll", "std")):
    """Median Cohen's d of every ablated model against its default, per figure and metric (Figures 17-19).

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`~calibtut.experiments.regression_study.run_study_task` for :func:`ablation_tasks`.
    metrics : sequence of str, default ("pce", "wis", "nll", "std")
        A metric that a factor's models lack (the NLL of quantile models) is
        left out for that factor.

    Returns
    -------
    pandas.DataFrame
        The columns of :func:`~calibtut.experiments.regression_study.median_effects` and ``figure``.

    Examples
    --------
    >>> rows = pd.DataFrame({"dataset": "a", "run": [0, 1, 0, 1], "base": "mix-nll", "method": "MIX-NLL",
    ...                      "train_fraction": 0.8, "posthoc": "none", "n_components": [None, None, 1, 1],
    ...                      "test_nll": [1.0, 1.2, 1.5, 1.7]})
    >>> ablation_summary(rows, ["nll"])[["figure", "method", "metric"]].values.tolist()
    [['17', 'n_components = 1', 'nll']]
    """
    check_frame(rows, "rows", ["dataset", "run", "base"])
    if isinstance(metrics, str) or not len(metrics):
        raise TypeError(f"metrics must be a non-empty sequence of metric names, got {metrics!r}")
    out = []
    for factor, (_, _, figure) in ABLATIONS.items():
        if factor not in rows.columns:
            continue
        for metric in metrics:
            if f"test_{metric}" not in rows.columns:
                continue
            d = ablation_effects(rows, factor, metric)
            if d.notna().any().any():
                out.append(median_effects({metric: d}).assign(figure=figure))
    if not out:
        raise ValueError("rows hold no ablated model with one of the metrics")
    return pd.concat(out, ignore_index=True)


def ablation_median_table(summary):
    """The median d of :func:`ablation_summary` as one table: (figure, model) x metric.

    Parameters
    ----------
    summary : pandas.DataFrame
        As :func:`ablation_summary` returns it.

    Returns
    -------
    pandas.DataFrame
        Median authors' Cohen's d against the default; a metric a model lacks is missing.

    Examples
    --------
    >>> summary = pd.DataFrame({"figure": "17", "method": "n_components = 1", "metric": ["nll", "pce"],
    ...                         "median_d": [1.5, 0.2]})
    >>> ablation_median_table(summary).values.tolist()
    [[1.5, 0.2]]
    """
    check_frame(summary, "summary", ["figure", "method", "metric", "median_d"])
    return summary.pivot_table(index=["figure", "method"], columns="metric", values="median_d")


def plot_ablation_figures(rows, title=""):
    """Figures 17-19: letter-value plots of each ablated model's Cohen's d against its default.

    One row of panels per factor (mixture components, quantiles per step,
    hidden layers) and one column per metric (PCE, CRPS as the 19-level WIS,
    NLL, STD); quantile models have no NLL.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`~calibtut.experiments.regression_study.run_study_task` for :func:`ablation_tasks`.
    title : str, default ""
        Added to each panel's title, e.g. ``" (full)"``.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> rows = pd.DataFrame({"dataset": np.repeat(["a", "b"], 4), "run": [0, 1] * 4, "base": "mix-nll",
    ...                      "method": "MIX-NLL", "train_fraction": 0.8, "posthoc": "none",
    ...                      "n_components": [None, None, 1, 1] * 2, "test_pce": [0.1, 0.2, 0.3, 0.2] * 2,
    ...                      "test_wis": 1.0, "test_nll": [1.0, 1.2, 1.5, 1.7] * 2, "test_std": 1.0})
    >>> plot_ablation_figures(rows).axes[2].get_title()
    'Figure 17: NLL'
    """
    check_frame(rows, "rows", ["dataset", "run", "base"])
    metrics = ("pce", "wis", "nll", "std")
    fig, axes = column_subplots(len(ABLATIONS) * len(metrics), ncols=2, panel_height=2.8)
    for row, (factor, (default, _, figure)) in zip(axes.reshape(len(ABLATIONS), len(metrics)), ABLATIONS.items()):
        for ax, metric in zip(row, metrics):
            name = "CRPS (19-level WIS)" if metric == "wis" else metric.upper()
            ax.set_title(f"Figure {figure}{title}: {name}")
            effects = pd.DataFrame()
            if factor in rows.columns and f"test_{metric}" in rows.columns:
                effects = ablation_effects(rows, factor, metric).replace([np.inf, -np.inf], np.nan)
                effects = effects.dropna(axis=1, how="all")
            if effects.empty:
                ax.text(0.5, 0.5, f"no {name} d for {factor}", ha="center", va="center", transform=ax.transAxes)
                ax.set_axis_off()
            else:
                letter_value_plot(effects, ax=ax)
                ax.set_xlabel(f"Cohen's d against {factor} = {default}")
                ax.set_ylabel("")
    return fig
