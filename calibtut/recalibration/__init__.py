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
* :mod:`calibtut.recalibration.venn`: inductive Venn predictors over a
  taxonomy and Venn-ABERS.

Conformalized quantile regression and distributional conformal prediction
produce intervals with a coverage guarantee, so they live in
:mod:`calibtut.conformal`.
"""

from calibtut.recalibration.density import map_density, recalibrated_nll
from calibtut.recalibration.isotonic import IsotonicRecalibrator, gaussian_mean_shift
from calibtut.recalibration.quantile import (
    QuantileRecalibrator,
    gaussian_quantile_function,
    mixture_quantile_function,
)
from calibtut.recalibration.temperature import TemperatureScaling
from calibtut.recalibration.venn import venn_abers, venn_multiprobabilities, venn_probability_bounds

__all__ = [
    "TemperatureScaling",
    "QuantileRecalibrator",
    "gaussian_quantile_function",
    "mixture_quantile_function",
    "IsotonicRecalibrator",
    "gaussian_mean_shift",
    "map_density",
    "recalibrated_nll",
    "venn_abers",
    "venn_multiprobabilities",
    "venn_probability_bounds",
]
