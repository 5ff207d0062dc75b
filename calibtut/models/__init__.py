"""Torch regression models with Gaussian outputs and a seeded training loop (paper 003)."""

from calibtut._torch import resolve_device, to_tensor
from calibtut.models.adversarial import feature_range_eps, fgsm_perturb
from calibtut.models.batched import fit_study_batched
from calibtut.models.classifier_training import extract_features, fit_classifier, predict_logits
from calibtut.models.dropout import MCDropoutGaussian
from calibtut.models.ensemble import DeepEnsemble, fit_ensemble
from calibtut.models.lenet import AUTHORS_NETWORKS, LeNet5, authors_network
from calibtut.models.marginal import MarginalKDE, silverman_bandwidth
from calibtut.models.mixture import MixtureMLP, predict_mixture
from calibtut.models.mlp import GaussianMLP
from calibtut.models.sqr import EVAL_LEVELS, QuantileFunction, SQRNet, predict_quantiles
from calibtut.models.study_training import BASE_MODEL_NAMES, fit_study, make_study_model
from calibtut.models.training import FitHistory, fit, gaussian_nll_loss, predict

__all__ = [
    "BASE_MODEL_NAMES",
    "fit_study",
    "fit_study_batched",
    "make_study_model",
    "EVAL_LEVELS",
    "MixtureMLP",
    "QuantileFunction",
    "SQRNet",
    "predict_mixture",
    "predict_quantiles",
    "DeepEnsemble",
    "FitHistory",
    "GaussianMLP",
    "AUTHORS_NETWORKS",
    "LeNet5",
    "authors_network",
    "MarginalKDE",
    "MCDropoutGaussian",
    "extract_features",
    "feature_range_eps",
    "fgsm_perturb",
    "fit",
    "fit_classifier",
    "fit_ensemble",
    "gaussian_nll_loss",
    "predict",
    "predict_logits",
    "resolve_device",
    "silverman_bandwidth",
    "to_tensor",
]
