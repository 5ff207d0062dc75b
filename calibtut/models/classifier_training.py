"""Seeded training of torch classifiers, and their logits and features as numpy arrays.

:func:`fit_classifier` is the package's training loop
(:func:`calibtut.models.fit`: Adam, shuffled minibatches in a forked RNG,
progress bar, CPU/GPU switch, best weights restored) with the cross-entropy
loss and early stopping on the **validation error** (the paper 004 code keeps
the best-validation-error snapshot).
"""

from __future__ import annotations

import numpy as np
import torch

from calibtut._torch import resolve_device, to_tensor
from calibtut._validation import as_float_array, check_int
from calibtut.models.training import fit

__all__ = ["extract_features", "fit_classifier", "predict_logits"]


def _cross_entropy(logits, y):
    return torch.nn.functional.cross_entropy(logits, y.long())


def _error_rate(logits, y):
    return (logits.argmax(dim=1) != y.long()).float().mean()


def _check_labels(y, name, n_classes):
    y = as_float_array(y, name, ndim=1)
    if np.any(y != np.round(y)) or np.any(y < 0) or (n_classes is not None and np.any(y >= n_classes)):
        upper = "" if n_classes is None else f" below {n_classes}"
        raise ValueError(f"{name} must hold non-negative integer classes{upper}")
    return y


def fit_classifier(model, X, y, *, val=None, epochs=20, batch_size=100, lr=1e-3, weight_decay=0.0,
                   patience=None, lr_step=None, lr_gamma=0.5, seed=None, device="cpu", progress=True):
    """Train a classifier by cross-entropy, keeping the weights of the best validation error.

    Parameters
    ----------
    model : torch.nn.Module
        Maps a batch of rows ``(b, d)`` to logits ``(b, n_classes)`` (e.g.
        :class:`calibtut.models.LeNet5` on 784-pixel rows).
    X : array_like or torch.Tensor, shape (n, d)
    y : array_like of int, shape (n,)
    val : tuple (X_val, y_val), optional
        Validation data: the error rate after each epoch selects the weights
        and drives ``patience``; without it the training loss does.
    epochs : int, default 20
    batch_size : int, default 100
    lr : float, default 1e-3
        Initial Adam learning rate (paper 004's source models: 0.01 with StepLR).
    weight_decay : float, default 0.0
    patience : int, optional
        Stop after this many epochs without a lower validation error.
    lr_step : int, optional
        StepLR: multiply the learning rate by ``lr_gamma`` every ``lr_step``
        epochs (>= 1; paper 004's source models: 100); ``None`` keeps it constant.
    lr_gamma : float, default 0.5
        The StepLR factor (> 0), used with ``lr_step``.
    seed : int or None
    device : {"cpu", "cuda"}, default "cpu"
    progress : bool, default True

    Returns
    -------
    calibtut.models.FitHistory
        ``val_loss`` holds the validation error rates.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2)); y = (X[:, 0] > 0).astype(int)
    >>> _ = torch.manual_seed(0)
    >>> model = torch.nn.Linear(2, 2)
    >>> hist = fit_classifier(model, X, y, val=(X, y), epochs=5, batch_size=20, lr=0.1, seed=0,
    ...                       progress=False)
    >>> hist.best_loss < 0.1
    True

    Paper 004's schedule, the learning rate halved every ``lr_step`` epochs:

    >>> hist = fit_classifier(torch.nn.Linear(2, 2), X, y, epochs=3, batch_size=20, lr=0.01, lr_step=2,
    ...                       seed=0, progress=False)
    >>> hist.lr
    [0.01, 0.01, 0.005]
    """
    n_classes = getattr(model, "n_classes", None)
    y = _check_labels(y, "y", n_classes)
    if val is not None:
        if not isinstance(val, (tuple, list)) or len(val) != 2:
            raise TypeError("val must be a pair (X_val, y_val)")
        val = (val[0], _check_labels(val[1], "val[1]", n_classes))
    return fit(model, X, y, loss=_cross_entropy, val=val, val_loss=_error_rate if val is not None else None,
               epochs=epochs, batch_size=batch_size, lr=lr, weight_decay=weight_decay, patience=patience,
               lr_step=lr_step, lr_gamma=lr_gamma, seed=seed, device=device, progress=progress)


def _batched(fn, model, X, batch_size, device):
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    dev = resolve_device(device)
    X_t = to_tensor(X, "X", ndim=2)
    model.to(dev).eval()
    with torch.no_grad():
        out = [fn(xb.to(dev)).cpu() for xb in torch.split(X_t, batch_size)]
    return torch.cat(out).double().numpy()


def predict_logits(model, X, *, batch_size=4096, device="cpu"):
    """Eval-mode logits of a classifier, as a float64 array ``(n, n_classes)``.

    Examples
    --------
    >>> from calibtut.models import LeNet5
    >>> predict_logits(LeNet5(seed=0), np.zeros((3, 784))).shape
    (3, 10)
    """
    return _batched(lambda xb: model(xb), model, X, batch_size, device)


def extract_features(model, X, *, batch_size=4096, device="cpu"):
    """Eval-mode ``model.features(X)`` (the frozen ``phi`` of paper 004), float64.

    Examples
    --------
    >>> from calibtut.models import LeNet5
    >>> extract_features(LeNet5(seed=0), np.zeros((3, 784))).shape
    (3, 84)
    """
    if not hasattr(model, "features"):
        raise TypeError(f"model must have a features method, got {type(model).__name__}")
    return _batched(lambda xb: model.features(xb), model, X, batch_size, device)
