"""Mixture density network of paper 002: ``x -> (weights, means, stds)`` of K Gaussians.

The network is the shared multilayer perceptron of the study (3 hidden ReLU
layers of 128 units in the authors' code, where the paper says 100; one
dropout of rate 0.2 after the last hidden layer, active only in training)
and a single linear head of ``3 K`` outputs split into the component means,
the pre-activations ``rho`` of the scales, ``sigma = softplus(rho) + 0.01``,
and the logits of the weights (softmax). It is trained by the mixture NLL
(MIX-NLL) or by the closed-form mixture CRPS (MIX-CRPS), see
:mod:`calibtut.regularizers.calibration_penalties`.
"""

from __future__ import annotations

import torch
from torch import nn

from calibtut._torch import check_features, resolve_device, seeded_rng, to_tensor
from calibtut._validation import check_int, check_real
from calibtut.models.mlp import check_hidden

__all__ = ["MixtureMLP", "predict_mixture", "relu_body"]

_SQRT2 = 2.0**0.5


def check_dropout(dropout):
    """Validate a dropout rate in [0, 1) and return it as a float.

    Examples
    --------
    >>> check_dropout(0.2)
    0.2
    """
    return check_real(dropout, "dropout", low=0, high=1, high_open=True)


def relu_body(in_features, hidden, dropout):
    """Linear-ReLU layers of the given widths, then one dropout layer.

    Parameters
    ----------
    in_features : int
        Input dimension, >= 1.
    hidden : sequence of int
        Widths of the Linear-ReLU layers, each >= 1 (may be empty: then only
        the dropout layer).
    dropout : float
        Dropout rate in [0, 1).

    Returns
    -------
    torch.nn.Sequential

    Examples
    --------
    >>> relu_body(2, (4, 4), 0.2)
    Sequential(
      (0): Linear(in_features=2, out_features=4, bias=True)
      (1): ReLU()
      (2): Linear(in_features=4, out_features=4, bias=True)
      (3): ReLU()
      (4): Dropout(p=0.2, inplace=False)
    )
    """
    dims = (check_int(in_features, "in_features", minimum=1), *check_hidden(hidden))
    dropout = check_dropout(dropout)
    layers = []
    for a, b in zip(dims[:-1], dims[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    layers.append(nn.Dropout(dropout))
    return nn.Sequential(*layers)


class MixtureMLP(nn.Module):
    """Gaussian mixture density network (MIX-NLL / MIX-CRPS of paper 002).

    Parameters
    ----------
    in_features : int
        Input dimension.
    n_components : int, default 3
        Number K of Gaussian components (the study's value).
    hidden : sequence of int, default (128, 128, 128)
        Hidden widths (the authors' code; the paper says 100).
    dropout : float, default 0.2
        Dropout rate after the last hidden layer.
    min_std : float, default 0.01
        Added to the softplus of every component scale.
    seed : int or numpy.random.Generator, optional
        Seeds the weight initialization (global torch RNG untouched).

    Examples
    --------
    >>> import torch
    >>> model = MixtureMLP(4, seed=0)
    >>> weights, means, stds = model(torch.zeros(5, 4))
    >>> weights.shape, bool(torch.allclose(weights.sum(1), torch.ones(5))), bool((stds > 0.01).all())
    (torch.Size([5, 3]), True, True)
    """

    def __init__(self, in_features, n_components=3, hidden=(128, 128, 128), *, dropout=0.2, min_std=0.01, seed=None):
        super().__init__()
        self.in_features = in_features = check_int(in_features, "in_features", minimum=1)
        self.n_components = check_int(n_components, "n_components", minimum=1)
        widths = check_hidden(hidden)
        self.min_std = check_real(min_std, "min_std", low=0)
        with seeded_rng(seed):
            self.body = relu_body(in_features, widths, dropout)
            self.head = nn.Linear(widths[-1], 3 * self.n_components)

    def forward(self, x):
        check_features(x, "x", self.in_features)
        means, rho, logits = self.head(self.body(x)).split(self.n_components, dim=-1)
        stds = nn.functional.softplus(rho) + self.min_std
        return torch.softmax(logits, dim=-1), means, stds


def predict_mixture(model, X, *, batch_size=4096, device="cpu"):
    """Eval-mode mixture parameters of a ``x -> (weights, means, stds)`` model, as numpy.

    Parameters
    ----------
    model : torch.nn.Module
    X : array_like or torch.Tensor, shape (n, d)
    batch_size : int, default 4096
    device : {"cpu", "cuda"} or torch.device, default "cpu"

    Returns
    -------
    tuple of numpy.ndarray
        ``(weights, means, stds)``, each of shape ``(n, K)``, float64.

    Examples
    --------
    >>> import numpy as np
    >>> w, m, s = predict_mixture(MixtureMLP(2, seed=0), np.zeros((4, 2)))
    >>> w.shape, m.dtype
    ((4, 3), dtype('float64'))
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    dev = resolve_device(device)
    X_t = to_tensor(X, "X", ndim=2, dtype=next(model.parameters()).dtype)
    model.to(dev).eval()
    parts = []
    with torch.no_grad():
        for xb in torch.split(X_t, batch_size):
            parts.append([t.cpu() for t in model(xb.to(dev))])
    return tuple(torch.cat(col).double().numpy() for col in zip(*parts))
