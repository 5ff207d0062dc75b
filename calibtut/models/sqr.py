"""Simultaneous quantile regression (SQR) networks of paper 002: ``(x, alpha) -> Q(alpha | x)``.

Two forms share the study's 3 x 128 ReLU body and dropout 0.2:

``"paper"``
    Tagasovska & Lopez-Paz (2019), as paper 002 describes it: the level is
    an input of the nonlinear network, ``Q(alpha | x) = g([x, alpha])``.
``"affine"``
    The authors' public code (``MLP_QuantilePredictionIndependent``): the
    body's last layer is linear, an embedding ``W_a alpha + b_a`` is added to
    its output and a linear head follows, so
    ``Q(alpha | x) = g(x) + kappa * alpha`` with one slope ``kappa`` for all
    inputs: every prediction is a uniform distribution of the same width,
    shifted by the input.

Calling the network on a batch returns a :class:`QuantileFunction` of that
batch; calling it on levels gives the ``(n, m)`` quantiles. The training loss
(:mod:`calibtut.regularizers.calibration_penalties`) draws its levels at each step; the
metrics use the 19 levels :data:`EVAL_LEVELS` = 0.05, ..., 0.95.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from calibtut._torch import check_features, resolve_device, seeded_rng, to_tensor
from calibtut._validation import check_int, check_levels
from calibtut.models.mixture import relu_body
from calibtut.models.mlp import check_hidden

__all__ = ["EVAL_LEVELS", "QuantileFunction", "SQRNet", "predict_quantiles"]

#: The 19 evaluation levels of paper 002's code, 0.05, 0.10, ..., 0.95.
EVAL_LEVELS = np.arange(1, 20) / 20

_FORMS = ("paper", "affine")


class QuantileFunction:
    """The quantile function of an :class:`SQRNet` at a fixed batch of inputs.

    Parameters
    ----------
    net : SQRNet
    x : torch.Tensor, shape (n, d)

    Examples
    --------
    >>> import torch
    >>> qf = SQRNet(2, seed=0)(torch.zeros(3, 2))
    >>> qf(torch.tensor([0.1, 0.5, 0.9])).shape
    torch.Size([3, 3])
    """

    def __init__(self, net, x):
        self.net = net
        self.x = x

    def __len__(self):
        return len(self.x)

    def __call__(self, levels):
        if not isinstance(levels, torch.Tensor) or levels.ndim != 1:
            raise TypeError("levels must be a 1-dimensional torch.Tensor")
        return self.net.quantiles(self.x, levels.to(self.x.dtype))


class SQRNet(nn.Module):
    """SQR network in the paper's form or the authors' affine-in-level form.

    Parameters
    ----------
    in_features : int
        Input dimension (without the level).
    form : {"paper", "affine"}, default "paper"
        See the module docstring.
    hidden : sequence of int, default (128, 128, 128)
    dropout : float, default 0.2
    seed : int or numpy.random.Generator, optional
        Seeds the weight initialization (global torch RNG untouched).

    Examples
    --------
    >>> import torch
    >>> net = SQRNet(3, form="affine", seed=0)
    >>> q = net.quantiles(torch.randn(4, 3), torch.tensor([0.2, 0.4, 0.6]))
    >>> slopes = q.diff(dim=1) / 0.2  # one slope for every input and level
    >>> bool(torch.allclose(slopes, slopes[0, 0], atol=1e-5))
    True
    """

    def __init__(self, in_features, form="paper", hidden=(128, 128, 128), *, dropout=0.2, seed=None):
        super().__init__()
        self.in_features = in_features = check_int(in_features, "in_features", minimum=1)
        if form not in _FORMS:
            raise ValueError(f"form must be one of {_FORMS}, got {form!r}")
        widths = check_hidden(hidden)
        self.form = form
        with seeded_rng(seed):
            if form == "paper":
                self.body = relu_body(in_features + 1, widths, dropout)
                self.head = nn.Linear(widths[-1], 1)
            else:
                last_in = (in_features, *widths)[-2]
                self.body = nn.Sequential(*relu_body(in_features, widths[:-1], dropout), nn.Linear(last_in, widths[-1]))
                self.level_embedding = nn.Linear(1, widths[-1])
                self.head = nn.Linear(widths[-1], 1)

    def forward(self, x):
        return QuantileFunction(self, check_features(x, "x", self.in_features))

    def _scalar_head(self, h):
        """The 1-output head as a product and a sum (batched matrix products with one
        output column are slow on CPU under ``torch.func.vmap``)."""
        return torch.sum(h * self.head.weight[0], dim=-1) + self.head.bias[0]

    def quantiles(self, x, levels):
        """Quantiles ``Q(levels_j | x_i)`` as an ``(n, m)`` tensor (not sorted).

        The affine form is computed as ``head(z(x)) + W_o emb(alpha)``, which
        equals the authors' ``head(z(x) + emb(alpha))`` by linearity without
        building the ``(n, m, width)`` sum.
        """
        n, m = x.shape[0], levels.shape[0]
        if self.form == "paper":
            rows = torch.cat([x.repeat_interleave(m, 0), levels.repeat(n)[:, None]], dim=1)
            return self._scalar_head(self.body(rows)).reshape(n, m)
        shift = torch.sum(self.level_embedding(levels[:, None]) * self.head.weight[0], dim=-1)
        return self._scalar_head(self.body(x))[:, None] + shift[None, :]


def predict_quantiles(model, X, levels=EVAL_LEVELS, *, batch_size=4096, device="cpu"):
    """Eval-mode quantiles of an :class:`SQRNet` at given levels, as numpy.

    Parameters
    ----------
    model : SQRNet
    X : array_like or torch.Tensor, shape (n, d)
    levels : array_like, shape (m,), default :data:`EVAL_LEVELS`
        Strictly increasing, in (0, 1).
    batch_size : int, default 4096
    device : {"cpu", "cuda"} or torch.device, default "cpu"

    Returns
    -------
    numpy.ndarray, shape (n, m)
        Float64; not re-sorted (the authors do not sort either).

    Examples
    --------
    >>> import numpy as np
    >>> q = predict_quantiles(SQRNet(2, seed=0), np.zeros((4, 2)))
    >>> q.shape
    (4, 19)
    """
    if not isinstance(model, SQRNet):
        raise TypeError(f"model must be an SQRNet, got {type(model).__name__}")
    levels = check_levels(levels)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    dev = resolve_device(device)
    dtype = next(model.parameters()).dtype
    X_t = to_tensor(X, "X", ndim=2, dtype=dtype)
    lv = torch.as_tensor(levels, dtype=dtype, device=dev)
    model.to(dev).eval()
    with torch.no_grad():
        parts = [model.quantiles(xb.to(dev), lv).cpu() for xb in torch.split(X_t, batch_size)]
    return torch.cat(parts).double().numpy()
