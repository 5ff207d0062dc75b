"""Paper 002 (Dheur & Ben Taieb): the large-scale study of calibration in neural regression.

One package for the six chapters of ``notebooks/regression_study``; notebooks
and tests import from here. Its files, by role:

* :mod:`~calibtut.experiments.regression_study.tasks`: the task lists
  (:func:`study_tasks`), the one-configuration runner that
  :func:`calibtut.run.sweep` calls (:func:`run_study_task`: one dataset, run
  and base model, its lambda grid trained batched) and the stored full run
  (:func:`full_study`, :func:`complete_runs`);
* :mod:`~calibtut.experiments.regression_study.tables`: the tables of
  chapters 1-3 (the per-dataset PCE test, reliability, post-hoc gains,
  coverage shifts), the lambda rule and the run means and effect sizes, the
  authors' per-batch metrics against the full-set PCE test (chapter 1) and
  what the full run cost, measured on its stored tasks;
* :mod:`~calibtut.experiments.regression_study.figures`: Figures 2-10, which
  methods each compares, their Cohen's d and the plots;
* :mod:`~calibtut.experiments.regression_study.ablations`: the Appendix C
  ablations (Figures 17-19);
* :mod:`~calibtut.experiments.regression_study.claims`: the paper's
  seventeen claims, each checked on our rows;
* :mod:`~calibtut.experiments.regression_study.sqr_forms`: the paper's SQR
  (nonlinear in the level) beside the authors' affine one;
* :mod:`~calibtut.experiments.regression_study.map_rerun`: the mixtures'
  post-hoc maps refitted on retrained bases (the authors' Rec-KDE resample,
  the merged-tie Rec-LIN);
* :mod:`~calibtut.experiments.regression_study.chapters`: chapter 3's
  set-ups, synthetic, where the QR and Trunc penalties alone lead a
  forecast.

The sweep stores under ``results/regression_study/`` record the runner as
``calibtut.experiments.regression_study:run_study_task``, which the
re-export below keeps importable.
"""

# first: where torch is not installed, calibtut._torch raises an ImportError that says how to
# install it (pip install "calibtut[torch]")
from calibtut import _torch  # noqa: F401
from calibtut.experiments.regression_study.ablations import (
    ABLATIONS,
    ablation_effects,
    ablation_median_table,
    ablation_summary,
    ablation_tasks,
    complete_ablation_runs,
    full_ablations,
    plot_ablation_figures,
)
from calibtut.experiments.regression_study.claims import (
    CLAIM_SHORT,
    claim_verdicts,
    claims_from_parts,
    claims_overview,
    claims_table,
    full_calibration_test,
    full_claim_parts,
    plot_claim_verdicts,
    published_calibration_test,
)
from calibtut.experiments.regression_study.figures import (
    MAIN_FIGURES,
    PER_BASE_FIGURES,
    combination_effects,
    combined_results,
    figure_comparisons,
    figure_effects,
    figure_methods,
    median_effects,
    method_family,
    per_base_effects,
    plot_calibration_test,
    plot_cd_diagrams,
    plot_main_figures,
    plot_reliability,
)
from calibtut.experiments.regression_study.map_rerun import (
    MAP_RERUN_BASES,
    REFIT_LABELS,
    calibration_ties,
    full_map_rerun,
    kde_resampling_summary,
    kde_resampling_table,
    lin_refit_summary,
    lin_refit_table,
    map_rerun_tasks,
    rerun_claim_parts,
    rerun_claims_table,
    with_rerun_maps,
)
from calibtut.experiments.regression_study.sqr_forms import (
    SQR_FORM_DATASETS,
    SQR_FORMS,
    full_sqr_forms,
    sqr_form_summary,
    sqr_form_table,
    sqr_form_tasks,
)
from calibtut.experiments.regression_study.chapters import (
    plot_qr_scale_curve,
    qr_scale_curve,
    qr_scale_optimum,
    trunc_adam_level,
    trunc_stationary_level,
    trunc_stationary_table,
)
from calibtut.experiments.regression_study.tables import (
    calibration_test_table,
    cohens_d_table,
    coverage_shift,
    method_means,
    per_batch_reading,
    per_batch_test_table,
    posthoc_gains,
    published_per_batch_test,
    rejection_counts,
    reliability_table,
    run_mean_table,
    selected_lambdas,
    study_cost,
    study_results,
    trainings_per_task,
)
from calibtut.experiments.regression_study.tasks import (
    BASE_LABELS,
    FREQ_COLUMNS,
    OFFLINE_DATASETS,
    POSTHOC_LABELS,
    REGULARIZER_LABELS,
    STUDY_BASES,
    STUDY_RUNS,
    TRAINERS,
    FullStudy,
    complete_runs,
    format_grid,
    full_study,
    method_label,
    StudySplit,
    run_study_task,
    study_split,
    study_tasks,
)

__all__ = [
    # tables: the per-batch reading of the PCE test
    "per_batch_reading",
    "per_batch_test_table",
    "published_per_batch_test",
    # tasks
    "BASE_LABELS",
    "FREQ_COLUMNS",
    "OFFLINE_DATASETS",
    "POSTHOC_LABELS",
    "REGULARIZER_LABELS",
    "STUDY_BASES",
    "STUDY_RUNS",
    "TRAINERS",
    "FullStudy",
    "complete_runs",
    "format_grid",
    "full_study",
    "method_label",
    "run_study_task",
    "study_split",
    "study_tasks",
    "StudySplit",
    # tables
    "calibration_test_table",
    "cohens_d_table",
    "coverage_shift",
    "method_means",
    "posthoc_gains",
    "rejection_counts",
    "reliability_table",
    "run_mean_table",
    "selected_lambdas",
    "study_results",
    # figures
    "MAIN_FIGURES",
    "PER_BASE_FIGURES",
    "combination_effects",
    "combined_results",
    "figure_comparisons",
    "figure_effects",
    "figure_methods",
    "median_effects",
    "method_family",
    "per_base_effects",
    "plot_calibration_test",
    "plot_cd_diagrams",
    "plot_main_figures",
    "plot_reliability",
    # ablations
    "ABLATIONS",
    "ablation_effects",
    "ablation_median_table",
    "ablation_summary",
    "ablation_tasks",
    "complete_ablation_runs",
    "full_ablations",
    "plot_ablation_figures",
    # claims
    "CLAIM_SHORT",
    "claim_verdicts",
    "claims_from_parts",
    "claims_overview",
    "claims_table",
    "full_calibration_test",
    "full_claim_parts",
    "plot_claim_verdicts",
    "published_calibration_test",
    # map_rerun
    "MAP_RERUN_BASES",
    "calibration_ties",
    "full_map_rerun",
    "kde_resampling_summary",
    "kde_resampling_table",
    "lin_refit_summary",
    "lin_refit_table",
    "map_rerun_tasks",
    "REFIT_LABELS",
    "rerun_claim_parts",
    "rerun_claims_table",
    "with_rerun_maps",
    # sqr_forms
    "SQR_FORMS",
    "SQR_FORM_DATASETS",
    "full_sqr_forms",
    "sqr_form_summary",
    "sqr_form_table",
    "sqr_form_tasks",
    # tables: the full run's cost
    "study_cost",
    "trainings_per_task",
    # chapters
    "plot_qr_scale_curve",
    "qr_scale_curve",
    "qr_scale_optimum",
    "trunc_adam_level",
    "trunc_stationary_level",
    "trunc_stationary_table",
]
