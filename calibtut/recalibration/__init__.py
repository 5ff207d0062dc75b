"""Post-hoc recalibration: a prediction in, a recalibrated prediction of the same type out.

numpy in, numpy out.

* :class:`TemperatureScaling`: one temperature on classifier logits, optionally
  importance-weighted.
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
(:func:`temperature_scaled_probs`, :func:`recalibrated_quantiles`,
:func:`isotonic_recalibrated_quantiles`, the Venn functions) are thin wrappers
around them.

Conformalized quantile regression and distributional conformal prediction
produce intervals with a coverage guarantee, so they live in
:mod:`calibtut.conformal`.
"""

from calibtut.recalibration.density import map_density, recalibrated_nll
from calibtut.recalibration.isotonic import IsotonicRecalibrator, gaussian_mean_shift, isotonic_recalibrated_quantiles
from calibtut.recalibration.quantile import (
    QuantileRecalibrator,
    gaussian_quantile_function,
    mixture_quantile_function,
    recalibrated_quantiles,
)
from calibtut.recalibration.temperature import TemperatureScaling, temperature_scaled_probs
from calibtut.recalibration.venn import (
    VennABERS,
    VennPredictor,
    venn_abers,
    venn_multiprobabilities,
    venn_probability_bounds,
)

__all__ = [
    "TemperatureScaling",
    "temperature_scaled_probs",
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
