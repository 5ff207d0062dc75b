"""The base models of paper 002 by name, trained with the study's schedule.

:func:`make_study_model` builds one of the base models and its training loss;
:func:`fit_study` trains it with the authors' settings through
:func:`calibtut.models.fit`: Adam at 1e-2 without weight decay, batches of
``min(n, 512)`` with the last incomplete batch dropped, early stopping with a
patience of 30 epochs and the best weights restored.

Early stopping and the restored checkpoint follow the validation **base
loss** alone, as the authors' code does (``EarlyStopping`` and
``ModelCheckpoint`` both monitor ``val/base_loss``: the NLL or CRPS of a
mixture, the pinball loss at fresh random levels for SQR; see
``shared/notes/papers/002-regression-study.md``, Section 1.2, and the paper's
Appendix C, "the lowest base loss on the validation dataset"), never the
regularized objective ``base + lam * R`` that the training steps minimise
(:meth:`calibtut.regularizers.calibration_penalties.StudyLoss.base_loss`).

One documented deviation: the authors validate every second epoch with a
patience of 15 validations; :func:`calibtut.models.fit` validates after every
epoch, so patience 30 here stops after the same 30 epochs without
improvement, but the best epoch may also be an odd one.
"""

from __future__ import annotations

from calibtut._validation import check_int
from calibtut.models.mixture import MixtureMLP
from calibtut.models.sqr import SQRNet
from calibtut.models.training import fit
from calibtut.regularizers.calibration_penalties import StudyLoss

__all__ = ["BASE_MODEL_NAMES", "fit_study", "make_study_model"]

#: Base-model names: (network, score); "sqr" is the paper's form, "sqr-affine" the authors'.
BASE_MODEL_NAMES = {
    "mix-nll": ("mixture", "nll"),
    "mix-crps": ("mixture", "crps"),
    "sqr": ("paper", "crps"),
    "sqr-affine": ("affine", "crps"),
}


def make_study_model(name, in_features, *, regularizer="none", lam=0.0, seed=None, n_components=3, n_hidden=3,
                     **options):
    """A base model of paper 002 and its (regularized) training loss.

    Parameters
    ----------
    name : {"mix-nll", "mix-crps", "sqr", "sqr-affine"}
        MIX-NLL, MIX-CRPS, SQR-CRPS in the paper's form, or in the authors'
        affine-in-level form.
    in_features : int
        Input dimension, >= 1.
    regularizer : {"none", "pce-kde", "pce-sort", "qr", "trunc"}, default "none"
    lam : float, default 0.0
        Weight of the regularizer, >= 0.
    seed : int, optional
        Weight initialization.
    n_components : int, default 3
        Mixture components, >= 1 (mixtures only: the paper's Appendix C).
    n_hidden : int, default 3
        Hidden layers of 128 units, >= 1 (Appendix C).
    **options
        Passed to :class:`calibtut.regularizers.calibration_penalties.StudyLoss` (e.g.
        ``n_levels``, ``sort``, ``strength``).

    Returns
    -------
    model : torch.nn.Module
    loss : calibtut.regularizers.calibration_penalties.StudyLoss

    Examples
    --------
    >>> model, loss = make_study_model("mix-crps", 4, regularizer="qr", lam=0.2, seed=0)
    >>> type(model).__name__, loss
    ('MixtureMLP', StudyLoss('mixture', 'crps', 'qr', lam=0.2))
    >>> make_study_model("gaussian", 4)
    Traceback (most recent call last):
    ...
    ValueError: name must be one of ('mix-nll', 'mix-crps', 'sqr', 'sqr-affine'), got 'gaussian'
    """
    if name not in BASE_MODEL_NAMES:
        raise ValueError(f"name must be one of {tuple(BASE_MODEL_NAMES)}, got {name!r}")
    form, score = BASE_MODEL_NAMES[name]
    n_components = check_int(n_components, "n_components", minimum=1)
    hidden = (128,) * check_int(n_hidden, "n_hidden", minimum=1)
    if form == "mixture":
        model = MixtureMLP(in_features, n_components, hidden, seed=seed)
        return model, StudyLoss("mixture", score, regularizer, lam, **options)
    if n_components != 3:
        raise ValueError(f"n_components applies to mixture models, not {name!r}")
    return SQRNet(in_features, form=form, hidden=hidden, seed=seed), StudyLoss("sqr", score, regularizer, lam, **options)


def fit_study(model, X, y, *, loss, val, seed, epochs=5000, patience=30, batch_size=512, progress=False, **kwargs):
    """Train a model with paper 002's schedule (see the module docstring).

    Parameters
    ----------
    model : torch.nn.Module
    X, y : array_like
        Standardized training data.
    loss : callable
        From :func:`make_study_model`. A
        :class:`~calibtut.regularizers.calibration_penalties.StudyLoss` is monitored on
        ``val`` without its regularizer (its
        :meth:`~calibtut.regularizers.calibration_penalties.StudyLoss.base_loss`, the
        authors' rule); any other callable is monitored as it is.
    val : tuple (X_val, y_val)
    seed : int
    epochs : int, default 5000
        Upper bound (the authors' maximum).
    patience : int, default 30
    batch_size : int, default 512
        Capped at the training size, so small sets still get one batch.
    progress : bool, default False
    **kwargs
        Passed to :func:`calibtut.models.fit` (e.g. ``device``; ``val_loss``
        replaces the monitored loss).

    Returns
    -------
    calibtut.models.FitHistory

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(100, 2)), rng.normal(size=100)
    >>> model, loss = make_study_model("mix-nll", 2, seed=0)
    >>> hist = fit_study(model, X, y, loss=loss, val=(X[:20], y[:20]), seed=0, epochs=3)
    >>> len(hist.val_loss)
    3
    """
    batch_size = min(check_int(batch_size, "batch_size", minimum=1), len(X))
    if isinstance(loss, StudyLoss):
        kwargs.setdefault("val_loss", loss.base_loss())
    return fit(
        model,
        X,
        y,
        loss=loss,
        epochs=epochs,
        batch_size=batch_size,
        lr=1e-2,
        patience=patience,
        val=val,
        seed=seed,
        progress=progress,
        drop_last=True,
        **kwargs,
    )
