"""Heteroscedastic Gaussian multilayer perceptron: ``x -> (mean, std)``."""

from __future__ import annotations

import numbers

import numpy as np
import torch
from torch import nn

from calibtut._torch import check_features, seeded_rng
from calibtut._validation import check_int, check_real

__all__ = ["GaussianMLP"]

def check_hidden(hidden):
    """Validate a tuple of hidden-layer widths (or one width) and return it as a tuple of ints.

    Examples
    --------
    >>> check_hidden([128, 128])
    (128, 128)
    """
    if isinstance(hidden, (numbers.Number, np.generic)):
        hidden = (hidden,)
    try:
        widths = tuple(hidden)
    except TypeError:
        raise TypeError(f"hidden must be a sequence of ints, got {type(hidden).__name__}") from None
    return tuple(check_int(w, "hidden", minimum=1) for w in widths)


def check_std_map(min_std, std_scale):
    """Validate the parameters of ``std = min_std + std_scale * softplus(raw)``.

    Examples
    --------
    >>> check_std_map(0.1, 0.9)
    (0.1, 0.9)
    """
    return check_real(min_std, "min_std", low=0), check_real(std_scale, "std_scale", low=0, low_open=True)


class GaussianMLP(nn.Module):
    """MLP with a Gaussian head: mean and ``std = min_std + std_scale * softplus``.

    Parameters
    ----------
    in_features : int
        Input dimension.
    hidden : sequence of int, default (128, 128)
        Hidden widths (ReLU); paper 003 uses two layers of 128.
    min_std : float, default 1e-3
        Lower bound on the predicted standard deviation.
    std_scale : float, default 1.0
        Multiplier of the softplus.
    seed : int or numpy.random.Generator, optional
        Seeds the weight initialization (global torch RNG untouched).

    Examples
    --------
    >>> import torch
    >>> model = GaussianMLP(3, hidden=(8,), seed=0)
    >>> mean, std = model(torch.zeros(5, 3))
    >>> mean.shape, bool((std > 0).all())
    (torch.Size([5]), True)
    """

    def __init__(self, in_features, hidden=(128, 128), *, min_std=1e-3, std_scale=1.0, seed=None):
        super().__init__()
        self.in_features = check_int(in_features, "in_features", minimum=1)
        widths = check_hidden(hidden)
        self.min_std, self.std_scale = check_std_map(min_std, std_scale)
        dims = (in_features, *widths)
        with seeded_rng(seed):
            self.hidden_layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
            self.head = nn.Linear(dims[-1], 2)

    def features(self, x):
        """Last hidden representation of ``x`` (ReLU activations)."""
        check_features(x, "x", self.in_features)
        for layer in self.hidden_layers:
            x = torch.relu(layer(x))
        return x

    def gaussian_head(self, h):
        """Map hidden features to ``(mean, std)``, each of shape ``(n,)``."""
        out = self.head(h)
        mean = out[..., 0]
        std = self.min_std + self.std_scale * nn.functional.softplus(out[..., 1])
        return mean, std

    def forward(self, x):
        return self.gaussian_head(self.features(x))
