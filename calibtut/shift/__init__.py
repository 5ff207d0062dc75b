"""Calibration under covariate shift (paper 004): weights, discriminators, the bound, DANN.

* :mod:`calibtut.shift.weights`: importance weights ``1/g - 1`` and the
  paper's ``1/g - 1/2`` from a domain discriminator, the clamp
  ``g >= 1/(1+U)``, the effective sample size, and two diagnostics: how few
  points carry the weights and how calibrated the discriminator is.
* :mod:`calibtut.shift.discriminators`: logistic-regression and MLP
  discriminators, each temperature-calibrated on held-out source-vs-target
  data (``Discriminator(seed=...).fit(X_source, X_target).weights(X)``).
* :mod:`calibtut.shift.theory`: Theorem 1 (Eq. 8) term by term, exact on
  discrete instances and Gaussian shifts with a known ratio; the
  counterexample to step (5) of the printed proof and the corrected step.
* :mod:`calibtut.shift.dann`: gradient reversal, its schedule, the DANN head on
  frozen features and its training loop with the paper's stopping rule.

* :mod:`calibtut.shift.temperature`: temperature scaling fitted by minibatch
  SGD, as paper 004's code fits it (:class:`SGDTemperatureScaling`).

Importance-weighted temperature scaling is
:class:`calibtut.recalibration.TemperatureScaling` with ``cal_weight``;
weighted conformal prediction under covariate shift is in
:mod:`calibtut.conformal`.
"""

# first: where torch is not installed, calibtut._torch raises an ImportError that says how to
# install it (pip install "calibtut[torch]")
from calibtut import _torch  # noqa: F401
from calibtut.shift.dann import DANNHead, DANNHistory, GradientReversal, fit_dann, grad_reverse, grl_coefficient
from calibtut.shift.discriminators import LogisticDiscriminator, MLPDiscriminator, check_domains
from calibtut.shift.temperature import SGDTemperatureScaling
from calibtut.shift.theory import (
    BoundTerms,
    GaussianShift,
    bound_violation_search,
    gaussian_bound_terms,
    step5_counterexample,
    theorem1_terms,
)
from calibtut.shift.weights import (
    DiscriminatorReliability,
    check_discriminator_output,
    discriminator_reliability,
    discriminator_weights,
    effective_sample_size,
    weight_summary,
)

__all__ = [
    "BoundTerms",
    "DANNHead",
    "DANNHistory",
    "DiscriminatorReliability",
    "GaussianShift",
    "GradientReversal",
    "LogisticDiscriminator",
    "MLPDiscriminator",
    "SGDTemperatureScaling",
    "bound_violation_search",
    "check_discriminator_output",
    "check_domains",
    "discriminator_reliability",
    "discriminator_weights",
    "effective_sample_size",
    "fit_dann",
    "gaussian_bound_terms",
    "grad_reverse",
    "grl_coefficient",
    "step5_counterexample",
    "theorem1_terms",
    "weight_summary",
]
