"""What the full run of paper 002's study cost, measured on its own stored tasks.

A task of the study (:func:`calibtut.experiments.regression_study.run_study_task`)
trains several models on one dataset and run and times itself: every row it
returns carries the same ``seconds``. From the rows of a (possibly partial)
full run this module counts the trainings, sums the task-hours per base model
and projects the whole run from the per-dataset means, to set beside the
estimate made before the run (``results/regression_study/study_task_cost``).

* :func:`trainings_per_task`: the models trained by each task.
* :func:`study_cost`: trainings, task-hours and trainings per task-hour per
  base model, and the projected cost of the whole run.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from calibtut._validation import check_frame, check_int

__all__ = ["study_cost", "trainings_per_task"]

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
