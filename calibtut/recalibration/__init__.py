"""Post-hoc recalibration maps: numpy in, numpy out.

* :class:`TemperatureScaling`: one temperature on classifier logits, optionally
  importance-weighted.
* :class:`QuantileRecalibrator`: quantile recalibration of a predictive CDF
  through a map of its PIT values (EMP, LIN, KDE and the DCP map of paper 002).
* :class:`ConformalizedQuantileRegression`, :class:`OneSidedCQR`: conformalized
  quantile regression, two-sided and per level.
* :class:`DistributionalConformal`: distributional conformal prediction from
  PIT values, and :func:`recalibration_conformal_table`, its link with
  quantile recalibration (paper 002, Theorem 1).
* :func:`map_density`, :func:`recalibrated_nll`: the derivative of a fitted
  quantile-recalibration map and the NLL of the recalibrated model (infinite
  for the step maps EMP and DCP; paper 002).
* :class:`IsotonicRecalibrator`: isotonic recalibration of Gaussian regression
  (Kuleshov et al. 2018), with its density, closed-form mean and truncation
  point (paper 003).
"""

from calibtut.recalibration.cqr import ConformalizedQuantileRegression, OneSidedCQR
from calibtut.recalibration.density import map_density, recalibrated_nll
from calibtut.recalibration.dcp import DistributionalConformal, recalibration_conformal_table
from calibtut.recalibration.isotonic import IsotonicRecalibrator, gaussian_mean_shift
from calibtut.recalibration.quantile import (
    QuantileRecalibrator,
    gaussian_quantile_function,
    mixture_quantile_function,
)
from calibtut.recalibration.temperature import TemperatureScaling

__all__ = [
    "TemperatureScaling",
    "QuantileRecalibrator",
    "gaussian_quantile_function",
    "mixture_quantile_function",
    "ConformalizedQuantileRegression",
    "OneSidedCQR",
    "DistributionalConformal",
    "recalibration_conformal_table",
    "IsotonicRecalibrator",
    "gaussian_mean_shift",
    "map_density",
    "recalibrated_nll",
]
