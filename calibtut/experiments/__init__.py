"""End-to-end experiments that reproduce the papers' tables, one configuration at a time.

Each function runs a single configuration (dataset, split, method, seed) and
returns a flat dict of numbers, so that :func:`calibtut.run.sweep` can store it
and resume a grid of them.

* :mod:`calibtut.experiments.quantile_regularization`: the UCI experiments of
  paper 003 (Tables 1, 2, 4-7 and the ablations of its Figures 5-12).
"""

from calibtut.experiments.quantile_regularization import (
    METRIC_LABELS,
    PAPER_LAMBDA,
    kfold_indices,
    paper_setting,
    qr_tasks,
    run_qr_config,
    summarize_runs,
)

__all__ = [
    "METRIC_LABELS",
    "PAPER_LAMBDA",
    "kfold_indices",
    "paper_setting",
    "qr_tasks",
    "run_qr_config",
    "summarize_runs",
]
