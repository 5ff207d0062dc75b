"""Torch regression models with Gaussian outputs and a seeded training loop (paper 003)."""

from calibtut.models.adversarial import feature_range_eps, fgsm_perturb
from calibtut.models.dropout import MCDropoutGaussian
from calibtut.models.ensemble import DeepEnsemble, fit_ensemble
from calibtut.models.marginal import MarginalKDE, silverman_bandwidth
from calibtut.models.mlp import GaussianMLP
from calibtut.models.training import FitHistory, fit, predict, resolve_device, to_tensor

__all__ = [
    "DeepEnsemble",
    "FitHistory",
    "GaussianMLP",
    "MarginalKDE",
    "MCDropoutGaussian",
    "feature_range_eps",
    "fgsm_perturb",
    "fit",
    "fit_ensemble",
    "predict",
    "resolve_device",
    "silverman_bandwidth",
    "to_tensor",
]
