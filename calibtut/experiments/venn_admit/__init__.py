"""Paper 001 (Venn-ADMIT, Schmaltz & Rasooly): the experiments of its tables and the set-ups of its theory chapters.

One package for the chapters of ``notebooks/venn_admit``; notebooks and tests
import from here. Its files, by role:

* :mod:`~calibtut.experiments.venn_admit.tasks`: the whole pipeline of the
  Sentiment, Protein and Grammar tasks (network, KNN approximation, ``q``,
  ``d``, localizer, every method), one calibration split per call
  (:func:`run_va_config`, :func:`run_protein_config`,
  :func:`run_grammar_config`), their task lists, the per-point features
  (:func:`va_points`) and what each method admits per test sequence
  (:func:`run_protein_admissions`, :func:`run_grammar_admissions`);
* :mod:`~calibtut.experiments.venn_admit.tables`: Tables 2-5 from those rows
  and beside the paper's, pooled admissions and their accuracy gap
  (:func:`admitted_accuracy_gap`), the summaries of the theory
  chapters' simulations and the spread of a statistic over the random
  splits of one pool, by Student's ``t`` (chapter 4);
* :mod:`~calibtut.experiments.venn_admit.claims`: chapter 8's verdict
  table, each claim of the paper on its tables and on our runs;
* :mod:`~calibtut.experiments.venn_admit.figures`: accuracy among admitted
  points, the paper's beside ours;
* :mod:`~calibtut.experiments.venn_admit.chapters`: the set-ups of the
  theory chapters (1, 3 and 4), synthetic, and their simulation loops;
* :mod:`~calibtut.experiments.venn_admit.protection`: chapter 9's test worlds
  (exchangeable, off-support, toward the boundary, label noise), where the
  guarantee holds and where it fails, and Sentiment placed on that map.

The sweep stores under ``results/venn_admit/`` record the runners as
``calibtut.experiments.venn_admit:run_va_config``,
``calibtut.experiments.venn_admit:run_protein_config``,
``calibtut.experiments.venn_admit:run_grammar_config``,
``calibtut.experiments.venn_admit:run_sentiment_signals`` and
``calibtut.experiments.venn_admit:run_protection_config``, which the re-export
below keeps importable.
"""

# first: where torch is not installed, calibtut._torch raises an ImportError that says how to
# install it (pip install "calibtut[torch]")
from calibtut import _torch  # noqa: F401
from calibtut.experiments.venn_admit.claims import CLAIM_TASKS, CONFORMAL_BASELINES, claims_vs_paper
from calibtut.experiments.venn_admit.figures import plot_admitted_accuracy, plot_claim_accuracy
from calibtut.experiments.venn_admit.protection import (
    PROTECTION_METHODS,
    SHIFTS,
    plot_accuracy_share,
    plot_protection_map,
    protection_map,
    protection_runs,
    protection_side_by_side,
    protection_summary,
    protection_tables,
    representation_signals,
    run_protection_config,
    run_sentiment_signals,
    sentiment_by_class,
    sentiment_map_points,
    sentiment_signals,
    separation_signals,
    shifted_sample,
)
from calibtut.experiments.venn_admit.chapters import (
    binomial_admission,
    category_coverage_runs,
    conformal_singleton_runs,
    naive_lcp_population_coverage,
    rare_class_sample,
    synthetic_knn_pipeline,
    two_group_sample,
    venn_admit_runs,
    venn_calibration_table,
)
from calibtut.experiments.venn_admit.tables import (
    MODELS,
    PAPER_DATASETS,
    PROTEIN_CLASSES,
    SEQUENCE_DATASETS,
    admission_summary,
    admissions_by_run,
    admitted_accuracy_gap,
    category_coverage_table,
    category_accuracy,
    exemplar_gpu_runs,
    exemplar_gpu_signals,
    pooled_singletons,
    singleton_summary,
    table2_model_approximation,
    table2_vs_paper,
    table3_by_q_and_distance,
    table4_singletons,
    table4_vs_paper,
    table5_by_features,
    table5_singletons,
    table5_vs_paper,
)
from calibtut.experiments.venn_admit.tasks import (
    DATASETS,
    FEATURES,
    METHODS,
    PROTEIN_METHODS,
    grammar_tasks,
    protein_tasks,
    run_grammar_admissions,
    run_grammar_config,
    run_protein_admissions,
    run_protein_config,
    run_va_config,
    va_points,
    va_rows,
    va_tasks,
)

__all__ = [
    "CLAIM_TASKS",
    "CONFORMAL_BASELINES",
    "DATASETS",
    "FEATURES",
    "METHODS",
    "MODELS",
    "PAPER_DATASETS",
    "PROTECTION_METHODS",
    "PROTEIN_CLASSES",
    "PROTEIN_METHODS",
    "SEQUENCE_DATASETS",
    "SHIFTS",
    "admission_summary",
    "admissions_by_run",
    "admitted_accuracy_gap",
    "binomial_admission",
    "category_coverage_runs",
    "category_coverage_table",
    "conformal_singleton_runs",
    "category_accuracy",
    "claims_vs_paper",
    "exemplar_gpu_runs",
    "exemplar_gpu_signals",
    "grammar_tasks",
    "naive_lcp_population_coverage",
    "plot_accuracy_share",
    "plot_admitted_accuracy",
    "plot_claim_accuracy",
    "plot_protection_map",
    "pooled_singletons",
    "protection_map",
    "protection_runs",
    "protection_side_by_side",
    "protection_summary",
    "protection_tables",
    "protein_tasks",
    "rare_class_sample",
    "run_grammar_admissions",
    "run_grammar_config",
    "run_protein_admissions",
    "run_protein_config",
    "representation_signals",
    "run_protection_config",
    "run_sentiment_signals",
    "run_va_config",
    "sentiment_by_class",
    "sentiment_map_points",
    "sentiment_signals",
    "separation_signals",
    "shifted_sample",
    "singleton_summary",
    "synthetic_knn_pipeline",
    "table2_model_approximation",
    "table2_vs_paper",
    "table3_by_q_and_distance",
    "table4_singletons",
    "table4_vs_paper",
    "table5_by_features",
    "table5_singletons",
    "table5_vs_paper",
    "two_group_sample",
    "va_points",
    "va_rows",
    "va_tasks",
    "venn_admit_runs",
    "venn_calibration_table",
]
