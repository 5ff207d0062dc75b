"""Post-hoc recalibration: a prediction in, a recalibrated prediction of the same type out.

numpy in, numpy out.

* :class:`TemperatureScaling`: one temperature on classifier logits, optionally
  importance-weighted (a :class:`TemperatureBoundWarning` when the fit ends on
  an end of its search range).
* :class:`PlattScaling`: a logistic map of binary scores, or one per class
  (one-vs-rest), with Platt's smoothed targets or 0/1 targets.
* :class:`VectorScaling`, :class:`MatrixScaling`: affine maps of multiclass
  logits fitted by the NLL (matrix scaling with an optional L2 penalty).
* :class:`HistogramBinning`: equal-width or equal-mass bins of class
  probabilities, top-label or one-vs-rest.
* :class:`QuantileRecalibrator`: quantile recalibration of a predictive CDF
  through a map of its PIT values (EMP, LIN, KDE and the DCP map of paper 002).
* :func:`map_density`, :func:`recalibrated_nll`: the derivative of a fitted
  quantile-recalibration map and the NLL of the recalibrated model (infinite
  for the step maps EMP and DCP; paper 002).
* :class:`IsotonicRecalibrator`: isotonic recalibration of Gaussian regression
  (Kuleshov et al. 2018), with its density, closed-form mean and truncation
  point (paper 003).
* :class:`VennPredictor` and :class:`VennABERS`: inductive Venn predictors
  over a taxonomy, and Venn-ABERS.

Every method is a class following the estimator contract of CONTRIBUTING.md
(``fit(cal_logits, cal_y)`` or ``fit(cal_pit)``, then ``predict_proba``,
``transform`` or ``predict_quantiles``), and the one-call functions
(:func:`temperature_scaled_probs`, :func:`platt_scaled_probs`,
:func:`vector_scaled_probs`, :func:`matrix_scaled_probs`,
:func:`histogram_binned_probs`, :func:`recalibrated_quantiles`,
:func:`isotonic_recalibrated_quantiles`, the Venn functions) are thin wrappers
around them.

Conformalized quantile regression and distributional conformal prediction
produce intervals with a coverage guarantee, so they live in
:mod:`calibtut.conformal`.

Modules
-------
affine
    Vector and matrix scaling of multiclass logits (Guo et al. 2017), fitted
    by minimising the NLL.
density
    Density of a quantile-recalibration map, and the NLL of the recalibrated
    model.
histogram
    Histogram binning of class probabilities (Zadrozny & Elkan 2001), top-
    label or one-vs-rest.
isotonic
    Isotonic recalibration of regression CDFs (Kuleshov et al., 2018) and
    its side effects.
platt
    Platt scaling: a logistic map of a classifier's score (Platt 1999),
    binary or one-vs-rest.
quantile
    Quantile recalibration of a predictive CDF through a map of its PIT
    values.
temperature
    Temperature scaling of classifier logits (Guo et al. 2017), optionally
    weighted.
venn
    Inductive Venn predictors: multiprobabilities from a taxonomy, and Venn-
    ABERS.
"""

from calibtut.recalibration.affine import MatrixScaling, VectorScaling, matrix_scaled_probs, vector_scaled_probs
from calibtut.recalibration.density import map_density, recalibrated_nll
from calibtut.recalibration.histogram import HistogramBinning, histogram_binned_probs
from calibtut.recalibration.isotonic import IsotonicRecalibrator, gaussian_mean_shift, isotonic_recalibrated_quantiles
from calibtut.recalibration.platt import PlattScaling, platt_scaled_probs
from calibtut.recalibration.quantile import (
    QuantileRecalibrator,
    gaussian_quantile_function,
    mixture_quantile_function,
    recalibrated_quantiles,
)
from calibtut.recalibration.temperature import TemperatureBoundWarning, TemperatureScaling, temperature_scaled_probs
from calibtut.recalibration.venn import (
    VennABERS,
    VennPredictor,
    venn_abers,
    venn_multiprobabilities,
    venn_probability_bounds,
)

__all__ = [
    "TemperatureBoundWarning",
    "TemperatureScaling",
    "temperature_scaled_probs",
    "PlattScaling",
    "platt_scaled_probs",
    "VectorScaling",
    "vector_scaled_probs",
    "MatrixScaling",
    "matrix_scaled_probs",
    "HistogramBinning",
    "histogram_binned_probs",
    "QuantileRecalibrator",
    "recalibrated_quantiles",
    "gaussian_quantile_function",
    "mixture_quantile_function",
    "IsotonicRecalibrator",
    "isotonic_recalibrated_quantiles",
    "gaussian_mean_shift",
    "map_density",
    "recalibrated_nll",
    "VennPredictor",
    "VennABERS",
    "venn_abers",
    "venn_multiprobabilities",
    "venn_probability_bounds",
]
