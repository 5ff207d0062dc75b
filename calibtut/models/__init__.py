"""Torch regression models with Gaussian outputs and a seeded training loop (paper 003)."""

from calibtut.models.adversarial import feature_range_eps, fgsm_perturb
from calibtut.models.classifier_training import extract_features, fit_classifier, predict_logits
from calibtut.models.dropout import MCDropoutGaussian
from calibtut.models.ensemble import DeepEnsemble, fit_ensemble
from calibtut.models.lenet import LeNet5
from calibtut.models.marginal import MarginalKDE, silverman_bandwidth
from calibtut.models.mlp import GaussianMLP
from calibtut.models.training import FitHistory, fit, predict, resolve_device, to_tensor

__all__ = [
    "DeepEnsemble",
    "FitHistory",
    "GaussianMLP",
    "LeNet5",
    "MarginalKDE",
    "MCDropoutGaussian",
    "extract_features",
    "feature_range_eps",
    "fgsm_perturb",
    "fit",
    "fit_classifier",
    "fit_ensemble",
    "predict",
    "predict_logits",
    "resolve_device",
    "silverman_bandwidth",
    "to_tensor",
]
