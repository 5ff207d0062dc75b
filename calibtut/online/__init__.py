"""Online calibration of quantile forecasts under distribution drift (paper 000).

Every calibrator shares one interface (:class:`OnlineCalibrator`): ``run``
calibrates whole transcripts ``forecasts (n_series, T, K), labels (n_series, T)
-> (n_series, T, K)``, vectorised over series, and ``reset``/``predict``/
``update`` play the causal protocol step by step (nature may choose each label
after seeing the forecast).

Modules
-------
conformal
    Online conformal calibration, the binomial tolerance ``b_delta``.
adjustment
    The exponential adjustment of Eq. (3), the hyper-parameter presets, Eq. (45).
springs
    The feasibility equilibrium of Eq. (4): exact Newton solver and the damped iteration.
pid
    The PID controller of Eq. (6).
calibrator
    :class:`DriftCalibrator`, the paper's algorithm with every stage switchable.
baselines
    Original forecasts, regret minimisation (Kuleshov & Ermon 2017), ACI.
metrics
    ``L_ece``, pinball, sharpness per series; the oracle band; Theorem 1's bound.
drift
    Figure 1's stream, the tuning tasks of Eq. (44), the four benchmark drifts.
theory
    The likelihood of Eq. (5), Theorem 2 / Corollary 1 along a transcript, an adaptive adversary.
"""

from calibtut.online._base import OnlineCalibrator
from calibtut.online.adjustment import PAPER, PRESETS, TORCHUQ, DriftParams, exponential_adjustment, integral_gains
from calibtut.online.baselines import ACICalibrator, OriginalForecast, RegretCalibrator
from calibtut.online.calibrator import DriftCalibrator
from calibtut.online.conformal import (
    ConformalCalibrator,
    binomial_tolerance,
    conformal_pit_levels,
    equally_spaced_levels,
)
from calibtut.online.drift import (
    PAPER_DRIFT_BETA,
    DriftStream,
    apply_drift,
    drift_offsets,
    drifting_gaussian_stream,
    figure1_stream,
    synthetic_tasks,
)
from calibtut.online.metrics import (
    ece_loss,
    empirical_frequencies,
    mixed_loss,
    oracle_band,
    pinball_loss,
    reliability_data,
    sharpness,
    theorem1_bound,
)
from calibtut.online.pid import PIDController
from calibtut.online.springs import equilibrium_residual, solve_equilibrium, solve_equilibrium_damped, solve_tridiagonal
from calibtut.online.theory import (
    COROLLARY1_MARGIN,
    THEOREM2_MARGIN,
    SpringBoundCheck,
    admissible_c,
    adversarial_labels,
    count_deviation,
    interval_likelihood,
    spring_bound_check,
)

__all__ = [
    "ACICalibrator",
    "ConformalCalibrator",
    "DriftCalibrator",
    "DriftParams",
    "DriftStream",
    "OnlineCalibrator",
    "OriginalForecast",
    "PAPER",
    "PAPER_DRIFT_BETA",
    "PIDController",
    "PRESETS",
    "RegretCalibrator",
    "TORCHUQ",
    "apply_drift",
    "binomial_tolerance",
    "conformal_pit_levels",
    "drift_offsets",
    "drifting_gaussian_stream",
    "ece_loss",
    "empirical_frequencies",
    "equally_spaced_levels",
    "equilibrium_residual",
    "exponential_adjustment",
    "figure1_stream",
    "integral_gains",
    "mixed_loss",
    "oracle_band",
    "pinball_loss",
    "reliability_data",
    "sharpness",
    "solve_equilibrium",
    "solve_equilibrium_damped",
    "solve_tridiagonal",
    "synthetic_tasks",
    "theorem1_bound",
    "COROLLARY1_MARGIN",
    "THEOREM2_MARGIN",
    "SpringBoundCheck",
    "admissible_c",
    "adversarial_labels",
    "count_deviation",
    "interval_likelihood",
    "spring_bound_check",
]
