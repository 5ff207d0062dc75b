"""Calibration metrics, proper scores, sharpness, coverage and calibration tests.

numpy in, numpy out. Differentiable versions of the regression scores live in
:mod:`calibtut.metrics.torch` (imported on demand, so that this package does
not import torch).

Modules
-------
classification
    Binned ECE (equal-width / equal-mass, selectable edge convention),
    over-confident ECE, top-label and class-wise ECE, reliability data with
    binomial consistency bands, Brier score and its Murphy decomposition.
pit
    Probability integral transform of Gaussian, Gaussian-mixture and quantile
    predictions.
regression
    PCE_p, quantile calibration error (PCE of quantile models, drift-paper
    L_ece), the l2 calibration error, PIT reliability data, coverage and
    sharpness, the RMSE of point predictions, the exact PCE of a Gaussian
    forecast of the wrong scale.
interval_scores
    The CRPS and STD that paper 002's figures plot, in the authors' code's
    definitions (weighted interval score, quantile spread).
scores
    Pinball loss, CRPS (Gaussian, mixture, quantile approximation), NLL.
ece_estimators
    The plug-in and debiased binned l2 ECE (Kumar, Liang & Ma 2019), the
    smooth ECE with a reflected Gaussian kernel and its smoothed reliability
    curve (Błasiok & Nakkiran 2023).
sets
    Prediction-set coverage, mean set size, class-conditional coverage and
    coverage per group.
hypothesis_tests
    Monte Carlo tests of calibration (PCE simulation test, ECE consistency
    resampling).
"""

from calibtut.metrics.classification import (
    BrierDecomposition,
    assign_bins,
    bin_edges,
    brier_decomposition,
    brier_score,
    classwise_ece,
    consistency_band,
    expected_calibration_error,
    overconfidence_error,
    reliability_data,
    top_label_ece,
)
from calibtut.metrics.ece_estimators import debiased_ece, plugin_l2_ece, smooth_ece, smooth_reliability_curve
from calibtut.metrics.hypothesis_tests import (
    CalibrationTestResult,
    batch_pce,
    ece_test,
    pce_null_distribution,
    pce_test,
)
from calibtut.metrics.interval_scores import quantile_std, weighted_interval_score
from calibtut.metrics.pit import pit_gaussian, pit_mixture, pit_quantile
from calibtut.metrics.regression import (
    gaussian_scale_pce,
    interval_coverage,
    l2_calibration_error,
    mean_interval_width,
    mixture_std,
    pce,
    pit_reliability_data,
    quantile_calibration_error,
    quantile_frequencies,
    quantile_sharpness,
    rmse,
    sharpness,
)
from calibtut.metrics.sets import class_conditional_coverage, coverage_by_group, mean_set_size, set_coverage
from calibtut.metrics.scores import crps_gaussian, crps_mixture, crps_quantile, nll_gaussian, nll_mixture, pinball_loss

__all__ = [
    "coverage_by_group",
    "gaussian_scale_pce",
    "quantile_std",
    "weighted_interval_score",
    "BrierDecomposition",
    "CalibrationTestResult",
    "assign_bins",
    "bin_edges",
    "brier_decomposition",
    "brier_score",
    "classwise_ece",
    "class_conditional_coverage",
    "debiased_ece",
    "consistency_band",
    "crps_gaussian",
    "crps_mixture",
    "crps_quantile",
    "ece_test",
    "expected_calibration_error",
    "interval_coverage",
    "l2_calibration_error",
    "mean_interval_width",
    "mean_set_size",
    "mixture_std",
    "nll_gaussian",
    "nll_mixture",
    "overconfidence_error",
    "pce",
    "batch_pce",
    "pce_null_distribution",
    "pce_test",
    "pinball_loss",
    "plugin_l2_ece",
    "pit_gaussian",
    "pit_mixture",
    "pit_quantile",
    "pit_reliability_data",
    "quantile_calibration_error",
    "quantile_frequencies",
    "quantile_sharpness",
    "reliability_data",
    "rmse",
    "set_coverage",
    "sharpness",
    "smooth_ece",
    "smooth_reliability_curve",
    "top_label_ece",
]
