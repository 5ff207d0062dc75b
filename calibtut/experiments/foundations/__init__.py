"""The Foundations chapters' shared set-ups (``chapters.py``).

Modules
-------
chapters
    :func:`mnist_network`, the classifier that Foundations 4 (recalibration
    maps) and Foundations 5 (conformal prediction sets) train on MNIST; and
    Foundations 7's simulation: a forecaster with a Beta confidence and a
    power calibration curve, its true errors by quadrature
    (:func:`power_curve_truth`), every calibration-error estimator over many
    data sets (:func:`estimator_draws`) and their bias, spread and RMSE
    (:func:`estimator_summary`).
"""

from calibtut.experiments.foundations.chapters import (
    ESTIMATORS,
    draw_power_curve,
    estimator_draws,
    estimator_summary,
    mnist_network,
    power_curve_truth,
)

__all__ = [
    "ESTIMATORS",
    "draw_power_curve",
    "estimator_draws",
    "estimator_summary",
    "mnist_network",
    "power_curve_truth",
]
