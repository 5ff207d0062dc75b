"""Paper 000 (online calibration under drift): the experiments of Section 5 and Appendix C.

One package for the chapters of ``notebooks/drift``; notebooks and tests import
from here. Its files, by role:

* :mod:`~calibtut.experiments.drift.tasks`: the drifted regression benchmark
  (its streams, the methods of Table 1, the task list
  :func:`benchmark_tasks` and the runner :func:`run_benchmark_task`) and the
  hyper-parameter search of Appendix B.1 (:func:`search_tasks`,
  :func:`run_search_task`);
* :mod:`~calibtut.experiments.drift.tables`: Table 1's rows and blocks, the
  paired comparison behind its claims, Tables 1 and 2 beside the paper's
  numbers;
* :mod:`~calibtut.experiments.drift.chapters`: the decision task of
  Appendix C.1 that chapter 6 plays on the COVID forecasts.

The sweep stores under ``results/drift/`` record the runners as
``calibtut.experiments.drift:run_benchmark_task`` and
``calibtut.experiments.drift:run_search_task``, which the re-export below
keeps importable. Nothing here imports torch.
"""

from calibtut.experiments.drift.chapters import (
    COVID_LOSS,
    COVID_LOSS_THRESHOLDS,
    SHUTDOWN_LOSS,
    best_action,
    decision_loss,
)
from calibtut.experiments.drift.tables import (
    METHOD_LABELS,
    paired_difference,
    table1_rows,
    table1_summary,
    table1_vs_paper,
    table2_vs_paper,
)
from calibtut.experiments.drift.tasks import (
    BENCHMARK_DATASETS,
    BENCHMARK_DRIFTS,
    BENCHMARK_METHODS,
    SEARCH_SPACE,
    BenchmarkStream,
    benchmark_streams,
    benchmark_table,
    benchmark_tasks,
    evaluate_params,
    gaussian_base_forecasts,
    make_method,
    random_drift_params,
    run_benchmark_task,
    run_search_task,
    score_stream,
    search_candidates,
    search_streams,
    search_tasks,
    stack_streams,
)

__all__ = [
    "BENCHMARK_DATASETS",
    "BENCHMARK_DRIFTS",
    "BENCHMARK_METHODS",
    "COVID_LOSS",
    "COVID_LOSS_THRESHOLDS",
    "METHOD_LABELS",
    "SEARCH_SPACE",
    "SHUTDOWN_LOSS",
    "BenchmarkStream",
    "benchmark_streams",
    "benchmark_table",
    "benchmark_tasks",
    "best_action",
    "decision_loss",
    "evaluate_params",
    "gaussian_base_forecasts",
    "make_method",
    "paired_difference",
    "random_drift_params",
    "run_benchmark_task",
    "run_search_task",
    "score_stream",
    "search_candidates",
    "search_streams",
    "search_tasks",
    "stack_streams",
    "table1_rows",
    "table1_summary",
    "table1_vs_paper",
    "table2_vs_paper",
]
