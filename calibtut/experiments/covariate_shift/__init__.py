"""Paper 004 (Park et al., calibration under covariate shift): the experiments of its book part.

* :mod:`~calibtut.experiments.covariate_shift.tasks`: the shift names, the
  task list and the one-configuration runner :func:`run_cs_config` of Table 1
  (the digit shifts, their stand-ins for SVHN and Office-31, the rotation
  sweep; our trained source networks or, for U->M and M->U, the authors'),
  the per-point predictions of its reliability diagrams, the Brier
  objectives of its temperature fits, and the network study's task list and
  runner (IW+Temp. on many trained source networks);
* :mod:`~calibtut.experiments.covariate_shift.tables`: our Table 1, the paper's
  beside it, the paper's claims with our verdicts, the digit rows on the
  authors' trained source networks, the tables behind the rotation
  figure and the per-repeat view, and the network study's summary and
  conclusion;
* :mod:`~calibtut.experiments.covariate_shift.chapters`: the fixed set-ups
  and tables that the teaching chapters (1-4 and 7) share.

Notebooks and tests import every name from this package.
"""

# first: where torch is not installed, calibtut._torch raises an ImportError that says how to
# install it (pip install "calibtut[torch]")
from calibtut import _torch  # noqa: F401
from calibtut.experiments.covariate_shift.chapters import (
    clip_median_summary,
    clip_summary,
    misspecified_classifier_logits,
    top_weight_spread,
)
from calibtut.experiments.covariate_shift.tables import (
    STAND_INS,
    authors_network_tables,
    authors_network_vs_paper,
    ece_vs_rotation,
    iw_gain_by_shift,
    network_study_conclusion,
    network_study_summary,
    repeats_by_method,
    source_recipe_vs_paper,
    table1_claims,
    table1_summary,
    table1_vs_paper,
    weight_variants_summary,
)
from calibtut.experiments.covariate_shift.tasks import (
    AUTHORS_SHIFTS,
    DIGIT_SHIFTS,
    DISC_SCHEDULES,
    METHODS,
    SOURCE_NETWORKS,
    SOURCE_RECIPES,
    cs_tasks,
    network_study_tasks,
    parse_shift,
    run_cs_config,
    run_network_study,
    run_weight_variants,
    shift_predictions,
    temperature_objective,
)

__all__ = [
    "AUTHORS_SHIFTS",
    "DIGIT_SHIFTS",
    "DISC_SCHEDULES",
    "METHODS",
    "SOURCE_NETWORKS",
    "SOURCE_RECIPES",
    "STAND_INS",
    "authors_network_tables",
    "authors_network_vs_paper",
    "clip_median_summary",
    "clip_summary",
    "cs_tasks",
    "ece_vs_rotation",
    "iw_gain_by_shift",
    "network_study_conclusion",
    "network_study_summary",
    "network_study_tasks",
    "misspecified_classifier_logits",
    "parse_shift",
    "repeats_by_method",
    "run_cs_config",
    "run_network_study",
    "run_weight_variants",
    "shift_predictions",
    "source_recipe_vs_paper",
    "table1_claims",
    "table1_summary",
    "table1_vs_paper",
    "temperature_objective",
    "top_weight_spread",
    "weight_variants_summary",
]
