"""Paper 003 (Utpala & Rai, quantile regularization): the UCI experiments of Tables 1, 2, 4-7 and Figures 5-12.

One package for the chapters of ``notebooks/quantile_regularization``;
notebooks and tests import from here. Its files, by role:

* :mod:`~calibtut.experiments.quantile_regularization.tasks`: the task lists
  (:func:`qr_tasks`, :func:`fold_order_tasks`), the folds
  (:func:`calibtut.data.splits.kfold_indices`) and the one-configuration runner that
  :func:`calibtut.run.sweep` calls (:func:`run_qr_config`: one dataset, fold,
  model and regularizer weight, trained and evaluated);
* :mod:`~calibtut.experiments.quantile_regularization.tables`: our runs
  summarized as the paper prints them, every cell beside the paper's numbers,
  the comparisons behind the chapters' claims and the tables behind the
  ablation figures.

The sweep store under ``results/quantile_regularization/`` records the runner
as ``calibtut.experiments.quantile_regularization:run_qr_config``, which the
re-export below keeps importable. Importing this part imports torch.
"""

# first: where torch is not installed, calibtut._torch raises an ImportError that says how to
# install it (pip install "calibtut[torch]")
from calibtut import _torch  # noqa: F401
from calibtut.experiments.quantile_regularization.tables import (
    PAPER_TABLES,
    SHORT_METRIC_LABELS,
    ablation_tables,
    fold_order_summary,
    mean_pm_std,
    paper_numbers,
    paper_setting,
    paper_vs_ours_cells,
    paper_vs_ours_view,
    qr_effect,
    recalibration_raises_error,
    spacing_share_below,
    uci_claims,
)
from calibtut.experiments.quantile_regularization.tasks import (
    METRIC_LABELS,
    PAPER_LAMBDA,
    fold_order_tasks,
    qr_tasks,
    run_qr_config,
)

__all__ = [
    "METRIC_LABELS",
    "PAPER_LAMBDA",
    "PAPER_TABLES",
    "SHORT_METRIC_LABELS",
    "ablation_tables",
    "fold_order_summary",
    "fold_order_tasks",
    "mean_pm_std",
    "paper_numbers",
    "paper_setting",
    "paper_vs_ours_cells",
    "paper_vs_ours_view",
    "qr_effect",
    "qr_tasks",
    "recalibration_raises_error",
    "run_qr_config",
    "spacing_share_below",
    "uci_claims",
]
