"""Torch networks and their seeded training loops: regressors, classifiers, memory heads, encoders.

Gaussian regressors (MLP, MC dropout, deep ensembles; paper 003), paper 002's
mixture and SQR networks, its batched study training and its evaluation of a
fitted model, classifiers (LeNet
for paper 004; paper 001's memory heads, token and protein CNNs, exemplar
layer and cached sentence embeddings), and marginal kernel-density predictors
that ignore the input. The default loss is the Gaussian NLL; the calibration
losses live in :mod:`calibtut.regularizers`.

Modules
-------
adversarial
    Fast-gradient-sign (FGSM) adversarial examples for adversarial training.
batched
    Train several study models on the same data at once, each exactly as
    :func:`fit_study` would.
batched_engine
    The study engine: many study models as one batched program (stacked
    parameters, one draw per seed, losses over the model axis, device-side
    early stopping).
classifier_training
    Seeded training of torch classifiers, and their logits and features as
    numpy arrays.
dropout
    Heteroscedastic MC-dropout (Dropout-VI) regression network.
ensemble
    Deep ensembles of Gaussian MLPs with adversarial training
    (Lakshminarayanan et al., 2017).
exemplar
    Paper 001's memory layer over token states: document logits and an
    exemplar vector per text.
lenet
    LeNet-5 for 28 x 28 grey images (LeCun et al. 1998), as in paper 004's
    code.
marginal
    Marginal kernel-density predictors: calibrated models that ignore the
    input.
memory_head
    A classifier head whose hidden "memory layer" gives every instance an
    exemplar vector (paper 001).
mixture
    Mixture density network of paper 002: ``x -> (weights, means, stds)`` of
    K Gaussians.
mlp
    Heteroscedastic Gaussian multilayer perceptron: ``x -> (mean, std)``.
protein_cnn
    A small 1-D convolutional network for protein secondary structure, with
    a memory layer (paper 001).
sentence_embeddings
    Sentence embeddings computed once per (texts, model) and cached on disk
    by content hash (paper 001).
sqr
    Simultaneous quantile regression (SQR) networks of paper 002:
    ``(x, alpha) -> Q(alpha | x)``.
study_evaluation
    A fitted study model's predictions in original units and paper 002's
    metrics of mixture and quantile predictions.
study_training
    The base models of paper 002 by name, trained with the study's schedule.
token_cnn
    A per-token 1-D convolutional classifier with a memory layer, on integer
    token sequences (paper 001).
training
    A small, seeded training loop with early stopping for
    ``x -> prediction`` models.
"""

from calibtut._torch import resolve_device, to_tensor
from calibtut.models.adversarial import feature_range_eps, fgsm_perturb
from calibtut.models.batched import fit_study_batched
from calibtut.models.batched_engine import fit_study_engine
from calibtut.models.classifier_training import extract_features, fit_classifier, predict_logits
from calibtut.models.dropout import MCDropoutGaussian
from calibtut.models.ensemble import DeepEnsemble, fit_ensemble
from calibtut.models.lenet import AUTHORS_NETWORKS, LeNet5, authors_network
from calibtut.models.marginal import MarginalKDE, silverman_bandwidth
from calibtut.models.mixture import MixtureMLP, predict_mixture
from calibtut.models.mlp import GaussianMLP
from calibtut.models.sqr import EVAL_LEVELS, QuantileFunction, SQRNet, predict_quantiles
from calibtut.models.study_evaluation import (
    AUTHORS_BATCH,
    CRPS_LEVELS,
    StudyPredictor,
    mixture_metrics,
    quantile_metrics,
)
from calibtut.models.study_training import BASE_MODEL_NAMES, fit_study, make_study_model
from calibtut.models.training import FitHistory, fit, gaussian_nll_loss, predict

__all__ = [
    "BASE_MODEL_NAMES",
    "fit_study",
    "fit_study_batched",
    "fit_study_engine",
    "make_study_model",
    "AUTHORS_BATCH",
    "CRPS_LEVELS",
    "StudyPredictor",
    "mixture_metrics",
    "quantile_metrics",
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
