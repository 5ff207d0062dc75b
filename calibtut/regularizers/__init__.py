"""Training-time calibration losses (a loss never imports a model).

* :mod:`calibtut.regularizers.entropy`: the m-spacing entropy estimator.
* :mod:`calibtut.regularizers.sorting`: NeuralSort and the hard sort.
* :mod:`calibtut.regularizers.quantile_regularization`: the QR loss of
  paper 003 (NLL plus the negentropy of the PITs).
* :mod:`calibtut.regularizers.calibration_penalties`: paper 002's PCE-KDE,
  PCE-Sort and Trunc, and the study loss that adds one to a base score.
"""

# first: where torch is not installed, calibtut._torch raises an ImportError that says how to
# install it (pip install "calibtut[torch]")
from calibtut import _torch  # noqa: F401

from calibtut.regularizers.calibration_penalties import (
    BASE_MODELS,
    REGULARIZERS,
    StudyLoss,
    pce_kde_pit,
    pce_kde_quantile,
    pce_sort,
    qr_spacing_002,
    soft_sort_l2,
    trunc_penalty,
)
from calibtut.regularizers.entropy import (
    check_spacing,
    resolve_spacing,
    spacing_entropy,
    spacing_entropy_bias,
    spacing_entropy_torch,
)
from calibtut.regularizers.quantile_regularization import (
    QuantileRegularizedLoss,
    pit_negentropy,
    qr_loss,
)
from calibtut.regularizers.sorting import (
    abs_diff_row_sums,
    hard_sort_matrix,
    neural_sort_matrix,
    soft_sort,
)

__all__ = [
    "check_spacing",
    "resolve_spacing",
    "spacing_entropy",
    "spacing_entropy_bias",
    "spacing_entropy_torch",
    "abs_diff_row_sums",
    "hard_sort_matrix",
    "neural_sort_matrix",
    "soft_sort",
    "QuantileRegularizedLoss",
    "pit_negentropy",
    "qr_loss",
    "BASE_MODELS",
    "REGULARIZERS",
    "StudyLoss",
    "pce_kde_pit",
    "pce_kde_quantile",
    "pce_sort",
    "qr_spacing_002",
    "soft_sort_l2",
    "trunc_penalty",
]
