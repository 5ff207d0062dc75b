"""Paper 004's Table 1 runs (Park et al.): the task list and the one-configuration runner.

:func:`run_cs_config` runs one calibrator repeat of one shift: it builds the
source and target samples, trains (or takes from this process's cache) the
source LeNet-5, and fits every column of the paper's Table 1 on the source
validation set,

* ``None``: the source classifier as it is;
* ``Temp``: one temperature on the source validation logits (Brier score,
  as the paper's code; Guo et al. fit the NLL, reported as ``Temp (NLL)``);
* ``IW+Temp``: a domain discriminator on the frozen 84-d LeNet features
  ``phi`` (source train against target train, temperature-calibrated on the
  validation pair), weights ``1/g - 1/2`` clamped at ``U`` on the source
  validation set, then the weighted Brier temperature; the density-ratio
  weights ``1/g - 1`` give the extra row ``IW(ratio)+Temp``;
* ``FL+Temp``: a DANN head (:func:`calibtut.shift.fit_dann`) on the frozen
  ``phi``, with its temperature fitted on the source validation set;
* ``FL+IW+Temp``: the same DANN head, a discriminator refitted on its learned
  features ``psi`` and the weighted temperature. **One DANN is shared by
  FL+Temp and FL+IW+Temp** (a paired ablation at half the cost; the authors'
  code trains one per column).

Every method is scored as in the paper's code: the label is the *original*
classifier's prediction ``f(x)`` and the confidence is the recalibrated
forecaster's probability of that label; the ECE and its over-confident part
use 15 equal-width bins closed on the right (``[0, 1/15]``, then ``(l, u]``)
and are given times 100.

One task is **one shift and one calibrator repeat** (not one shift with its
repeats inside): the repeats are then spread over workers and a stopped sweep
resumes repeat by repeat. The source model depends only on the shift's source
domain, ``seed`` and its training settings, never on ``repeat``, so the ten
repeats of the paper share one fixed source classifier (the paper's setting);
each worker trains it once and keeps it (:func:`functools.lru_cache`), and
keeps the last runs too, so that :func:`shift_predictions` after
:func:`run_cs_config` with the same arguments costs nothing. :func:`cs_tasks` builds the
task list that :func:`calibtut.run.sweep` runs through :func:`run_cs_config`.
:func:`temperature_objective` gives the (weighted) Brier objectives of the
temperature fits over a grid of temperatures.
``source_network="authors"`` replaces the trained source network of U->M or
M->U by the authors' own (:func:`calibtut.models.authors_network`).
:func:`run_weight_variants` reruns IW+Temp. of one repeat under every way of
estimating and using the weights (discriminator, its temperature, the clip,
``1/g - 1/2`` or ``1/g - 1``, exact or SGD temperature), with the weights'
diagnostics; its ``lr_step`` and ``disc_schedule`` also give the authors'
source training (with ``epochs=500, lr=1e-2``) and discriminator schedule
(:data:`DISC_SCHEDULES`).

Shifts (``source->target``): ``M`` MNIST (the 15,000 offline images, halved
at random into a source half and a target half, so that ``M->M`` has disjoint
samples), ``U`` USPS (the authors' split: last 1,093 training images for
validation), ``R<angle>`` the MNIST target half rotated by ``angle`` degrees,
``T`` textured MNIST (:func:`calibtut.data.texture_images`, the book's
stand-in for SVHN) and ``D8`` scikit-learn's 8 x 8 digits upsampled to 28 x 28
(with USPS, the stand-in for Office-31's small domains).
"""

from __future__ import annotations

import functools
import re

import numpy as np
import pandas as pd
import torch
from scipy import special

from calibtut._validation import check_choice, check_int, check_positive, check_real
from calibtut.data import load_digits_8x8, load_mnist_pool, load_usps, rotate_images, texture_images
from calibtut.metrics import expected_calibration_error, overconfidence_error
from calibtut.models import LeNet5, authors_network, extract_features, fit_classifier
from calibtut.recalibration import TemperatureScaling
from calibtut.shift import (
    DANNHead,
    LogisticDiscriminator,
    MLPDiscriminator,
    SGDTemperatureScaling,
    discriminator_reliability,
    discriminator_weights,
    effective_sample_size,
    fit_dann,
    weight_summary,
)

__all__ = ["AUTHORS_SHIFTS", "DIGIT_SHIFTS", "DISC_SCHEDULES", "METHODS", "SOURCE_NETWORKS", "SOURCE_RECIPES",
           "cs_tasks", "network_study_tasks", "parse_shift", "run_cs_config", "run_network_study",
           "run_weight_variants", "shift_predictions", "temperature_objective"]

#: The columns of the paper's Table 1, then our two ablations (NLL temperature, density-ratio weights).
METHODS = ("None", "Temp", "IW+Temp", "FL+Temp", "FL+IW+Temp", "Temp (NLL)", "IW(ratio)+Temp")

#: The digit shifts of the paper's Table 1 that the offline data reproduce.
DIGIT_SHIFTS = ("M->M", "U->M", "M->U")

#: SGD learning rates of the paper's code for each temperature (used with ``temperature="sgd"``).
_SGD_LR = {"Temp": 1.0, "Temp (NLL)": 1.0, "IW+Temp": 0.1, "IW(ratio)+Temp": 0.1, "FL+Temp": 0.1,
           "FL+IW+Temp": 0.01}

_DISCRIMINATORS = ("logistic", "mlp")

#: Training settings of the network discriminator (:class:`calibtut.shift.MLPDiscriminator`):
#: the book's (Adam, 100 epochs, patience 20, pooled batches of 200) and the paper code's (SGD
#: lr 1e-3 with momentum 0.9 and weight decay 5e-4, StepLR(100, 0.5), at most 500 epochs,
#: batches of 200 source + 200 target, the best held-out loss kept, patience 100).
DISC_SCHEDULES = {
    "book": {"epochs": 100, "patience": 20},
    "authors": {"epochs": 500, "patience": 100, "optimizer": "sgd", "lr": 1e-3, "momentum": 0.9,
                "weight_decay": 5e-4, "lr_step": 100, "lr_gamma": 0.5, "balanced_batches": True},
}
_TEMPERATURES = ("exact", "sgd")

#: Where the source LeNet-5 comes from: trained here (``"ours"``) or the authors' trained network.
SOURCE_NETWORKS = ("ours", "authors")

#: The shifts whose source network the authors published (:func:`calibtut.models.authors_network`).
AUTHORS_SHIFTS = {"U->M": "USPS2MNIST", "M->U": "MNIST2USPS"}

#: Source LeNet-5 recipes of the network study (:func:`run_network_study`): the book's full profile
#: (Adam at 1e-3, 50 epochs) and the authors' code (Adam at 1e-2 halved every 100 epochs, 500 epochs);
#: ``"shipped"`` is the authors' own trained network, loaded rather than trained.
SOURCE_RECIPES = {"ours": {"epochs": 50, "lr": 1e-3, "lr_step": None},
                  "authors": {"epochs": 500, "lr": 1e-2, "lr_step": 100},
                  "shipped": {}}

#: The offline MNIST pool (:func:`calibtut.data.load_mnist_pool`): 5,000 training images, then the test set.
_MNIST_TRAIN = 5000

_DOMAIN = r"M|U|T|D8|R-?\d+(?:\.\d+)?"
_SHIFT = re.compile(rf"({_DOMAIN})->({_DOMAIN})")


def parse_shift(shift):
    """Split a shift name ``"source->target"`` into its two domains, checking both.

    Domains: ``M`` (MNIST), ``U`` (USPS), ``T`` (textured MNIST), ``D8``
    (scikit-learn 8 x 8 digits) and, as a target only, ``R<angle>`` (MNIST
    rotated by ``angle`` degrees).

    Parameters
    ----------
    shift : str

    Returns
    -------
    tuple of str

    Examples
    --------
    >>> parse_shift("U->M"), parse_shift("M->R30")
    (('U', 'M'), ('M', 'R30'))
    """
    if not isinstance(shift, str):
        raise TypeError(f"shift must be a str such as 'U->M', got {type(shift).__name__}")
    match = _SHIFT.fullmatch(shift)
    if match is None:
        raise ValueError(f"shift must look like 'M->U', 'U->M', 'M->R30', 'M->T' or 'D8->U', got {shift!r}")
    source, target = match.groups()
    if source.startswith("R"):
        raise ValueError(f"a rotated domain is a target only, got shift={shift!r}")
    if source == target == "U":
        raise ValueError("shift='U->U' would reuse the USPS training images as target data; use 'M->M' for no shift")
    return source, target


# ------------------------------------------------------------------------------------------- data


@functools.lru_cache(maxsize=4)
def _raw(name):
    if name == "M":
        return load_mnist_pool()
    if name == "D8":
        return load_digits_8x8(size=28)
    Xtr, ytr = load_usps("train", size=28)
    Xte, yte = load_usps("test", size=28)
    return np.vstack([Xtr, Xte]), np.concatenate([ytr, yte])


def _cap(index, n):
    return index if n is None else index[:n]


@functools.lru_cache(maxsize=16)
def _domain(name, role, seed, n_cap, network="ours"):
    """``(X_train, y_train, X_val, y_val, X_test, y_test)`` of a domain in the role of source or target.

    MNIST (and its rotated and textured versions) use the seed's random half of
    the pool for the source role and the other half for the target role; USPS
    uses the authors' split; the 8 x 8 digits a seeded split. With the
    authors' source network, MNIST is split as the paper's: as a target, its
    5,000 training images (80 % unlabelled training, 20 % unlabelled
    validation, in the seed's order) and the 10,000 test images as the
    labelled test set; as a source, the training images train the
    discriminator and the test images, which the authors' network never saw,
    are the validation set.
    """
    base = "M" if name == "T" or name.startswith("R") else name
    X, y = _raw(base)
    if base == "U":
        train, val, test = np.arange(6198), np.arange(6198, 7291), np.arange(7291, 9298)
    elif network == "authors":
        order = np.random.default_rng(seed).permutation(_MNIST_TRAIN)
        rest = np.arange(_MNIST_TRAIN, len(y))
        if role == "source":
            train, val, test = order, rest, rest[:0]
        else:
            cut = int(0.8 * _MNIST_TRAIN)
            train, val, test = order[:cut], order[cut:], rest
    else:
        order = np.random.default_rng(seed).permutation(len(y))
        half = len(y) // 2
        part = order[:half] if role == "source" else order[half:]
        if role == "source":
            cut = int(0.8 * len(part))
            train, val, test = part[:cut], part[cut:], part[:0]
        else:
            a, b = int(0.4 * len(part)), int(0.6 * len(part))
            train, val, test = part[:a], part[a:b], part[b:]
    train, val = _cap(train, n_cap), _cap(val, None if n_cap is None else max(n_cap // 4, 200))
    parts = [(X[i], y[i]) for i in (train, val, test)]
    if name == "T":
        rng = np.random.default_rng([seed, 1 if role == "source" else 2])
        parts = [(_texture(Xp, rng), yp) for Xp, yp in parts]
    elif name.startswith("R"):
        parts = [(rotate_images(Xp, float(name[1:])) if len(Xp) else Xp, yp) for Xp, yp in parts]
    return tuple(a for pair in parts for a in pair)


def _texture(X, rng):
    return texture_images(X, seed=rng) if len(X) else X


@functools.lru_cache(maxsize=8)
def _source_model(source, seed, n_source, epochs, lr, lr_step, device, network="ours"):
    """The source LeNet-5 and its :class:`calibtut.models.FitHistory` (Adam, StepLR if ``lr_step``).

    The authors' network (``network="authors"``) is loaded, not trained: its history is None.
    """
    if network == "authors":
        shift = next(k for k in AUTHORS_SHIFTS if k.startswith(f"{source}->"))
        return authors_network(AUTHORS_SHIFTS[shift]), None
    Xtr, ytr, Xval, yval, _, _ = _domain(source, "source", seed, n_source)
    model = LeNet5(seed=seed)
    history = fit_classifier(model, Xtr, ytr, val=(Xval, yval), epochs=epochs, batch_size=100, lr=lr,
                             lr_step=lr_step, seed=seed, device=device, progress=False)
    return model.cpu().eval(), history


# ------------------------------------------------------------------------------------------- methods


def _temperature(method, logits, labels, weights, temperature, seed):
    loss = "nll" if method == "Temp (NLL)" else "brier"
    if temperature == "sgd":
        ts = SGDTemperatureScaling(loss=loss, lr=_SGD_LR[method], seed=seed)
    else:
        ts = TemperatureScaling(loss=loss)
    return ts.fit(logits, labels, cal_weight=weights)


def _discriminator(kind, X_source, X_target, val, seed, device, schedule="book"):
    if kind == "logistic":
        d = LogisticDiscriminator(seed=seed)
    else:
        d = MLPDiscriminator(hidden=(84,), **DISC_SCHEDULES[schedule], seed=seed, device=device)
    return d.fit(X_source, X_target, val=val)


def _check_source(shift, seed, repeat, n_source, n_target, epochs, lr, source_network="ours"):
    parse_shift(shift)
    check_choice(source_network, "source_network", SOURCE_NETWORKS)
    if source_network == "authors" and shift not in AUTHORS_SHIFTS:
        raise ValueError(f"the authors published source networks for {sorted(AUTHORS_SHIFTS)} only, "
                         f"got shift={shift!r} with source_network='authors'")
    check_int(seed, "seed", minimum=0)
    check_int(repeat, "repeat", minimum=0)
    for name, value in (("n_source", n_source), ("n_target", n_target)):
        if value is not None:
            check_int(value, name, minimum=50)
    check_int(epochs, "epochs", minimum=1)
    check_real(lr, "lr", low=0, low_open=True)


def _check_run(shift, seed, repeat, n_source, n_target, epochs, lr, discriminator, dann_epochs, dann_lr, upper,
               temperature, source_network):
    _check_source(shift, seed, repeat, n_source, n_target, epochs, lr, source_network)
    check_int(dann_epochs, "dann_epochs", minimum=0)
    check_real(dann_lr, "dann_lr", low=0, low_open=True)
    check_real(upper, "upper", low=1)
    check_choice(discriminator, "discriminator", _DISCRIMINATORS)
    check_choice(temperature, "temperature", _TEMPERATURES)


@functools.lru_cache(maxsize=8)
def _features(shift, seed, n_source, n_target, epochs, lr, lr_step, device, network="ours"):
    """The source model's features ``phi``, its logits on the source validation and target test sets,
    the source validation labels and the target test labels."""
    source, target = parse_shift(shift)
    model, _ = _source_model(source, seed, n_source, epochs, lr, lr_step, device, network)
    Xs_tr, ys_tr, Xs_val, ys_val, _, _ = _domain(source, "source", seed, n_source, network)
    Xt_tr, _, Xt_val, _, Xt_te, yt_te = _domain(target, "target", seed, n_target, network)
    phi = {k: extract_features(model, X) for k, X in
           (("s_tr", Xs_tr), ("s_val", Xs_val), ("t_tr", Xt_tr), ("t_val", Xt_val), ("t_te", Xt_te))}
    with torch.no_grad():
        logits = {k: model.head(torch.as_tensor(phi[k], dtype=torch.float32)).double().numpy()
                  for k in ("s_val", "t_te")}
    return model, phi, logits, ys_tr, ys_val, yt_te


def _repeat_seeds(seed, repeat):
    """Seeds of one calibrator repeat: discriminator, DANN, SGD temperature, discriminator on ``psi``."""
    return tuple(int(s) for s in np.random.SeedSequence([seed, repeat]).generate_state(4))


@functools.lru_cache(maxsize=32)
def _run(shift, seed, repeat, n_source, n_target, epochs, lr, discriminator, dann_epochs, dann_lr, upper,
         temperature, device, source_network):
    model, phi, logits, ys_tr, ys_val, yt_te = _features(shift, seed, n_source, n_target, epochs, lr, None, device,
                                                          source_network)
    pred = logits["t_te"].argmax(axis=1)
    correct = pred == yt_te
    rows = np.arange(len(pred))
    disc_seed, dann_seed, sgd_seed, disc2_seed = _repeat_seeds(seed, repeat)
    probs, extra = {}, {}

    def add(method, val_logits, test_logits, weights=None, ess=None):
        ts = _temperature(method, val_logits, ys_val, weights, temperature, sgd_seed)
        probs[method] = ts.predict_proba(test_logits)[rows, pred]
        extra[method] = {"temperature": ts.temperature_, "ess_frac": ess}

    probs["None"] = torch.softmax(torch.as_tensor(logits["t_te"]), dim=1).numpy()[rows, pred]
    extra["None"] = {"temperature": 1.0, "ess_frac": None}
    add("Temp", logits["s_val"], logits["t_te"])
    add("Temp (NLL)", logits["s_val"], logits["t_te"])
    d = _discriminator(discriminator, phi["s_tr"], phi["t_tr"], (phi["s_val"], phi["t_val"]), disc_seed, device)
    ess = effective_sample_size(d.weights(phi["s_val"], kind="ratio", upper=upper)) / len(ys_val)
    add("IW+Temp", logits["s_val"], logits["t_te"], d.weights(phi["s_val"], kind="bound", upper=upper), ess)
    add("IW(ratio)+Temp", logits["s_val"], logits["t_te"], d.weights(phi["s_val"], kind="ratio", upper=upper), ess)
    if dann_epochs > 0:
        dann = DANNHead(phi["s_tr"].shape[1], model.n_classes, hidden=84, hidden_d=84, seed=dann_seed)
        history = fit_dann(dann, phi["s_tr"], ys_tr, phi["t_tr"], epochs=dann_epochs, lr=dann_lr, seed=dann_seed,
                           device=device, progress=False)
        with torch.no_grad():
            fl = {k: dann(torch.as_tensor(phi[k], dtype=torch.float32)).double().numpy() for k in phi}
            psi = {k: dann.features(torch.as_tensor(phi[k], dtype=torch.float32)).double().numpy() for k in phi}
        add("FL+Temp", fl["s_val"], fl["t_te"])
        d2 = _discriminator(discriminator, psi["s_tr"], psi["t_tr"], (psi["s_val"], psi["t_val"]), disc2_seed,
                            device)
        ess2 = effective_sample_size(d2.weights(psi["s_val"], kind="ratio", upper=upper)) / len(ys_val)
        add("FL+IW+Temp", fl["s_val"], fl["t_te"], d2.weights(psi["s_val"], kind="bound", upper=upper), ess2)
        for method in ("FL+Temp", "FL+IW+Temp"):
            extra[method]["dann_epochs"] = history.kept_epoch + 1
    common = {"cls_error": 100 * float(1 - correct.mean()), "n_source_val": len(ys_val), "n_target_test": len(pred)}
    return probs, correct, extra, common


def _run_arguments(shift, seed, repeat, n_source, n_target, epochs, lr, discriminator, dann_epochs, dann_lr, upper,
                   temperature, device, source_network):
    _check_run(shift, seed, repeat, n_source, n_target, epochs, lr, discriminator, dann_epochs, dann_lr, upper,
               temperature, source_network)
    return (shift, int(seed), int(repeat), n_source, n_target, int(epochs), float(lr), discriminator,
            int(dann_epochs), float(dann_lr), float(upper), temperature, device, source_network)


def shift_predictions(shift="U->M", seed=0, repeat=0, *, n_source=None, n_target=None, epochs=20, lr=1e-3,
                      discriminator="logistic", dann_epochs=100, dann_lr=1e-2, upper=1e3, temperature="exact",
                      device="cpu", source_network="ours"):
    """Every method's confidence in the source classifier's label, per target test point.

    The parameters are those of :func:`run_cs_config`; this is the raw
    material of its scores and of the reliability diagrams (the paper's
    Figures 3-9).

    Parameters
    ----------
    shift : str, default "U->M"
    seed : int, default 0
    repeat : int, default 0
    n_source : int or None, default None
    n_target : int or None, default None
    epochs : int, default 20
    lr : float, default 1e-3
    discriminator : {"logistic", "mlp"}, default "logistic"
    dann_epochs : int, default 100
    dann_lr : float, default 1e-2
    upper : float, default 1000
    temperature : {"exact", "sgd"}, default "exact"
    device : {"cpu", "cuda"}, default "cpu"
    source_network : {"ours", "authors"}, default "ours"

    Returns
    -------
    pandas.DataFrame
        Long: ``method``, ``confidence`` and ``correct`` (whether the
        classifier's label is right), one row per method and test point.

    Examples
    --------
    >>> pts = shift_predictions("U->M", n_source=300, n_target=300, epochs=1,
    ...                         dann_epochs=2)  # doctest: +SKIP
    >>> sorted(pts["method"].unique())[:2]  # doctest: +SKIP
    ['FL+IW+Temp', 'FL+Temp']
    """
    probs, correct, _, _ = _run(*_run_arguments(shift, seed, repeat, n_source, n_target, epochs, lr, discriminator,
                                                 dann_epochs, dann_lr, upper, temperature, device, source_network))
    return pd.concat([pd.DataFrame({"method": m, "confidence": p, "correct": correct}) for m, p in probs.items()],
                     ignore_index=True)


def run_cs_config(shift="U->M", seed=0, repeat=0, *, n_source=None, n_target=None, epochs=20, lr=1e-3,
                  discriminator="logistic", dann_epochs=100, dann_lr=1e-2, upper=1e3, temperature="exact",
                  device="cpu", source_network="ours"):
    """One calibrator repeat of one shift: every method's ECE and over-confident ECE (x 100).

    Parameters
    ----------
    shift : str, default "U->M"
        ``"source->target"``, see :func:`parse_shift`.
    seed : int, default 0
        Seeds the data split and the source LeNet-5 (fixed across repeats).
    repeat : int, default 0
        The calibrator run (>= 0): seeds the discriminators, the DANN head and
        the SGD temperatures.
    n_source : int or None, default None
        Use at most this many source training images (>= 50; a quarter as many,
        at least 200, for validation); None: all.
    n_target : int or None, default None
        Likewise for the unlabelled target training and validation images; the
        labelled target test set is always whole.
    epochs : int, default 20
        LeNet-5 training epochs (Adam; the best validation error is kept).
    lr : float, default 1e-3
        Adam learning rate of the source model (> 0).
    discriminator : {"logistic", "mlp"}, default "logistic"
        Scikit-learn logistic regression (the paper's Section 5.1) or the
        one-hidden-layer network of its experiments.
    dann_epochs : int, default 100
        At most this many DANN epochs (>= 0; 0 skips the FL columns).
    dann_lr : float, default 1e-2
        SGD learning rate of the DANN head (> 0; the code's 1e-3 needs its 500 epochs).
    upper : float, default 1000
        The bound ``U`` on the density ratio (>= 1); ``g`` is clamped at ``1/(1+U)``.
    temperature : {"exact", "sgd"}, default "exact"
        Brent's exact minimiser of the (weighted) score or the paper's SGD.
    device : {"cpu", "cuda"}, default "cpu"
    source_network : {"ours", "authors"}, default "ours"
        Train the source LeNet-5 here (``epochs``, ``lr``, ``n_source``,
        ``seed``) or take the authors' trained network of U->M or M->U
        (:func:`calibtut.models.authors_network`; the training arguments are
        then unused, and MNIST is split as the paper's: its 10,000 test
        images are the target test set of U->M and the source validation set
        of M->U, see :data:`AUTHORS_SHIFTS`). Every method runs on either
        network: FL adapts the frozen features of whichever network it is given.

    Returns
    -------
    pandas.DataFrame
        One row per method of :data:`METHODS` run: ``method``, ``ece``,
        ``oce``, ``fitted_t`` (the fitted temperature), ``ess_frac`` (Kish's
        effective sample size of the density-ratio weights on the source
        validation set, over its size; IW rows only), ``dann_kept`` (the
        DANN epochs kept by the stopping rule; FL rows), and the shift's
        ``cls_error`` (the source classifier's target error, %),
        ``n_source_val`` and ``n_target_test``.

    Examples
    --------
    >>> rows = run_cs_config("U->M", n_source=300, n_target=300, epochs=1,
    ...                      dann_epochs=2)  # doctest: +SKIP
    >>> rows["method"].tolist()[:3]  # doctest: +SKIP
    ['None', 'Temp', 'Temp (NLL)']
    """
    probs, correct, extra, common = _run(*_run_arguments(shift, seed, repeat, n_source, n_target, epochs, lr,
                                                         discriminator, dann_epochs, dann_lr, upper, temperature,
                                                         device, source_network))
    rows = []
    for method, p in probs.items():
        rows.append({
            "method": method,
            "ece": 100 * expected_calibration_error(p, correct, n_bins=15, closed="right"),
            "oce": 100 * overconfidence_error(p, correct, n_bins=15, closed="right"),
            "fitted_t": extra[method]["temperature"],
            "ess_frac": extra[method]["ess_frac"],
            "dann_kept": extra[method].get("dann_epochs"),
            **common,
        })
    order = {m: i for i, m in enumerate(METHODS)}
    return pd.DataFrame(rows).sort_values("method", key=lambda s: s.map(order), kind="stable").reset_index(drop=True)


def _sequence(values, name, check):
    if isinstance(values, str) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name} must be a sequence, got {values!r}")
    values = tuple(check(v) for v in values)
    if not values:
        raise ValueError(f"{name} must not be empty")
    return values


def run_weight_variants(shift="U->M", seed=0, repeat=0, *, n_source=None, n_target=None, epochs=20, lr=1e-3,
                        discriminators=_DISCRIMINATORS, uppers=(10.0, 100.0, 1e3), temperatures=("exact",),
                        lr_step=None, disc_schedule="book", device="cpu", source_network="ours"):
    """IW+Temp. under every way of estimating and using the weights: ECE and weight diagnostics.

    The source model, the data and the seeds are those of
    :func:`run_cs_config` with the same arguments, so the variant
    ``discriminator="mlp"``, ``beta_g="fitted"``, ``upper=1000``,
    ``kind="bound"``, ``temperature="sgd"`` is the ``IW+Temp`` of a full run
    with the network discriminator, to the last digit. The variants, a full
    grid:

    * the discriminator on the 84-d features ``phi``: logistic regression
      (the paper's Section 5.1) or the authors' network (84-84-1);
    * its temperature ``beta_g``: fitted by the balanced squared loss on the
      held-out source-vs-target pair (the paper) or left at 1 (``"none"``);
    * the clip ``U`` of ``g >= 1/(1+U)``;
    * the weights: ``1/g - 1/2`` (``"bound"``, the paper's) or the density
      ratio ``1/g - 1`` (``"ratio"``); both are used as they are, since a
      weighted temperature does not change when the weights are rescaled;
    * the temperature fit: exact (Brent) or the authors' SGD.

    Two settings held fixed by the grid can be changed for the whole call:
    the source model's StepLR (``lr_step``; the authors' source recipe is
    ``epochs=500, lr=1e-2, lr_step=100``: Adam, learning rate halved every
    100 epochs, batch 100, best validation error kept) and the network
    discriminator's training (``disc_schedule``, :data:`DISC_SCHEDULES`).
    With their defaults the results are those of :func:`run_cs_config`.

    A ``Temp`` row per temperature fit gives the unweighted baseline, and an
    ``oracle`` row the Brier temperature fitted on the labelled target test
    set itself: the lowest ECE that any weighting of the source validation
    set could reach with one temperature (as far as the Brier optimum is
    also the ECE optimum).

    Parameters
    ----------
    shift, seed, repeat, n_source, n_target, epochs, lr, device, source_network
        As for :func:`run_cs_config` (with ``source_network="authors"`` the
        source recipe ``epochs``, ``lr`` and ``lr_step`` is unused).
    discriminators : sequence of {"logistic", "mlp"}, default ("logistic", "mlp")
    uppers : sequence of float, default (10, 100, 1000)
        Clips ``U`` (each >= 1).
    temperatures : sequence of {"exact", "sgd"}, default ("exact",)
    lr_step : int or None, default None
        Halve the source model's Adam learning rate every ``lr_step`` epochs
        (>= 1; the authors: 100); ``None`` keeps it constant (the book).
    disc_schedule : {"book", "authors"}, default "book"
        How the network discriminator is trained (:data:`DISC_SCHEDULES`):
        the book's Adam for at most 100 epochs with patience 20, or the
        authors' SGD with momentum and StepLR for at most 500 epochs on
        200 + 200 batches, patience 100. The logistic discriminator has no
        schedule.

    Returns
    -------
    pandas.DataFrame
        One row per variant: ``discriminator`` (``"none"`` for Temp,
        ``"oracle"`` for the target-fitted temperature),
        ``beta_g`` (``"fitted"`` or ``"none"``), ``beta_g_value`` (the fitted
        discriminator temperature), ``upper``, ``kind``, ``temperature``,
        ``ece``, ``oce`` (x 100), ``fitted_t``; the weights on the source
        validation set as :func:`calibtut.shift.weight_summary` describes
        them (``ess_frac``, ``top_fraction_share`` on the heaviest 1 %,
        ``top_k_share`` on the heaviest 10, ``max_over_mean``, ``q0.5``,
        ``q0.99``) and ``clipped_frac``, the share of points at the clip;
        ``val_error`` and ``weighted_val_error``, the source classifier's
        error (%) on the source validation set, plain and under the
        variant's weights (the error the weighted temperature sees, to set
        beside ``cls_error``; plain for the Temp and oracle rows);
        ``disc_ece`` and ``disc_brier``, the balanced reliability of the
        ``g`` used on the held-out source-vs-target pair
        (:func:`calibtut.shift.discriminator_reliability`; with ``beta_g``
        fitted on that pair, one parameter fitted in-sample); ``disc_epochs``
        and ``disc_kept``, the network discriminator's epochs trained and
        epochs in the weights kept (NaN for the others); and, for every row,
        ``cls_error`` and ``source_kept``, the source model's epochs in the
        weights kept (its best validation error; NaN for the authors' network).

    Examples
    --------
    >>> rows = run_weight_variants("U->M", n_source=300, n_target=300, epochs=1,
    ...                            discriminators=["logistic"], uppers=[10.0])  # doctest: +SKIP
    >>> rows[["discriminator", "beta_g", "kind"]].values.tolist()[:2]  # doctest: +SKIP
    [['none', 'none', 'none'], ['logistic', 'fitted', 'bound']]

    The authors' source recipe and discriminator schedule (minutes at full size):

    >>> rows = run_weight_variants("U->M", epochs=500, lr=1e-2, lr_step=100, discriminators=["mlp"],
    ...                            uppers=[1e3], temperatures=["sgd"],
    ...                            disc_schedule="authors")  # doctest: +SKIP
    """
    _check_source(shift, seed, repeat, n_source, n_target, epochs, lr, source_network)
    discriminators = _sequence(discriminators, "discriminators",
                               lambda d: check_choice(d, "discriminators", _DISCRIMINATORS))
    uppers = _sequence(uppers, "uppers", lambda u: check_real(u, "uppers", low=1))
    temperatures = _sequence(temperatures, "temperatures", lambda m: check_choice(m, "temperatures", _TEMPERATURES))
    if lr_step is not None:
        lr_step = check_int(lr_step, "lr_step", minimum=1)
    if not isinstance(disc_schedule, str):
        raise TypeError(f"disc_schedule must be a str, one of {tuple(DISC_SCHEDULES)}, got {disc_schedule!r}")
    check_choice(disc_schedule, "disc_schedule", tuple(DISC_SCHEDULES))
    seed, epochs, lr = int(seed), int(epochs), float(lr)
    _, phi, logits, _, ys_val, yt_te = _features(shift, seed, n_source, n_target, epochs, lr, lr_step, device,
                                                 source_network)
    _, source_history = _source_model(parse_shift(shift)[0], seed, n_source, epochs, lr, lr_step, device,
                                      source_network)
    pred = logits["t_te"].argmax(axis=1)
    correct = pred == yt_te
    val_wrong = logits["s_val"].argmax(axis=1) != ys_val
    val_error = {"val_error": 100 * float(val_wrong.mean())}
    points = np.arange(len(pred))
    disc_seed, _, sgd_seed, _ = _repeat_seeds(seed, repeat)
    rows = []

    def score(ts):
        p = ts.predict_proba(logits["t_te"])[points, pred]
        return {"ece": 100 * expected_calibration_error(p, correct, n_bins=15, closed="right"),
                "oce": 100 * overconfidence_error(p, correct, n_bins=15, closed="right"),
                "fitted_t": ts.temperature_}

    for temperature in temperatures:
        rows.append({"discriminator": "none", "beta_g": "none", "kind": "none", "temperature": temperature,
                     **score(_temperature("Temp", logits["s_val"], ys_val, None, temperature, sgd_seed)),
                     **val_error, "weighted_val_error": val_error["val_error"]})
    rows.append({"discriminator": "oracle", "beta_g": "none", "kind": "target labels", "temperature": "exact",
                 **score(TemperatureScaling(loss="brier").fit(logits["t_te"], yt_te)), **val_error,
                 "weighted_val_error": val_error["val_error"]})
    for name in discriminators:
        d = _discriminator(name, phi["s_tr"], phi["t_tr"], (phi["s_val"], phi["t_val"]), disc_seed, device,
                           disc_schedule)
        trained = ({"disc_epochs": len(d.history_.train_loss), "disc_kept": d.history_.best_epoch + 1}
                   if name == "mlp" else {"disc_epochs": np.nan, "disc_kept": np.nan})
        for beta_g in ("fitted", "none"):
            scale = 1.0 if beta_g == "fitted" else d.temperature_
            g = {k: special.expit(scale * d.decision_function(phi[k])) for k in ("s_val", "t_val")}
            rel = discriminator_reliability(g["s_val"], g["t_val"])
            g_val = np.maximum(g["s_val"], np.finfo(float).tiny)
            for upper in uppers:
                for kind in ("bound", "ratio"):
                    w = discriminator_weights(g_val, kind=kind, upper=upper)
                    summary = weight_summary(w, quantiles=(0.5, 0.99))
                    diagnostics = {k: summary[k] for k in ("ess_frac", "top_fraction_share", "top_k_share",
                                                           "max_over_mean", "q0.5", "q0.99")}
                    for temperature in temperatures:
                        rows.append({"discriminator": name, "beta_g": beta_g, "beta_g_value": d.temperature_,
                                     "upper": upper, "kind": kind, "temperature": temperature,
                                     **score(_temperature("IW+Temp", logits["s_val"], ys_val, w, temperature,
                                                          sgd_seed)),
                                     **diagnostics, **val_error,
                                     "weighted_val_error": 100 * float(np.average(val_wrong, weights=w)),
                                     "clipped_frac": float(np.mean(g_val <= 1 / (1 + upper))),
                                     "disc_ece": rel.ece, "disc_brier": rel.brier, **trained})
    kept = np.nan if source_history is None else source_history.best_epoch + 1
    return pd.DataFrame(rows).assign(cls_error=100 * float(1 - correct.mean()), source_kept=kept)


def temperature_objective(shift="U->M", seed=0, repeat=0, *, temperatures=None, n_source=None, n_target=None,
                          epochs=20, lr=1e-3, discriminator="logistic", upper=1e3, device="cpu",
                          source_network="ours"):
    """The Brier objectives of the temperature fits as functions of the temperature ``T``.

    Three curves over ``temperatures``, each the mean (or weighted mean) over
    a data set of the multi-class Brier score of ``softmax(logits / T)``:

    * ``"Temp"``: the source validation set, unweighted (what Temp. minimises);
    * ``"IW+Temp"``: the source validation set under the paper's weights
      ``1/g - 1/2`` of this repeat's discriminator, clipped at ``upper``
      (what IW+Temp. minimises; the same weights as the ``IW+Temp`` of
      :func:`run_cs_config` with the same arguments);
    * ``"target"``: the labelled target test set (what the oracle temperature
      of :func:`run_weight_variants` minimises).

    Parameters
    ----------
    shift, seed, repeat, n_source, n_target, epochs, lr, discriminator, upper, device, source_network
        As for :func:`run_cs_config`.
    temperatures : array_like of float or None, default None
        Where to evaluate (each > 0); None: 201 points from 0.01 to 100 on a
        log scale, the search range of the exact fit.

    Returns
    -------
    pandas.DataFrame
        Long: ``objective`` (the curve's name above), ``temperature`` and ``brier``.

    Examples
    --------
    >>> curves = temperature_objective("U->M", n_source=300, n_target=300, epochs=1,
    ...                                temperatures=[0.5, 1.0, 2.0])  # doctest: +SKIP
    >>> curves["objective"].unique().tolist()  # doctest: +SKIP
    ['Temp', 'IW+Temp', 'target']
    """
    _check_run(shift, seed, repeat, n_source, n_target, epochs, lr, discriminator, 0, 1.0, upper, "exact",
               source_network)
    grid = np.geomspace(1e-2, 1e2, 201) if temperatures is None else check_positive(temperatures, "temperatures",
                                                                                    ndim=1)
    _, phi, logits, _, ys_val, yt_te = _features(shift, int(seed), n_source, n_target, int(epochs), float(lr), None,
                                                 device, source_network)
    disc_seed = _repeat_seeds(int(seed), int(repeat))[0]
    d = _discriminator(discriminator, phi["s_tr"], phi["t_tr"], (phi["s_val"], phi["t_val"]), disc_seed, device)
    sets = {"Temp": (logits["s_val"], ys_val, None),
            "IW+Temp": (logits["s_val"], ys_val, d.weights(phi["s_val"], kind="bound", upper=float(upper))),
            "target": (logits["t_te"], yt_te, None)}
    rows = []
    for name, (z, y, w) in sets.items():
        onehot = np.eye(z.shape[1])[y]
        for t in grid:
            per_point = np.sum((special.softmax(z / t, axis=1) - onehot) ** 2, axis=1)
            rows.append({"objective": name, "temperature": float(t), "brier": float(np.average(per_point, weights=w))})
    return pd.DataFrame(rows)


def run_network_study(recipe="ours", seed=0, repeat=0, *, shift="U->M", device="cpu"):
    """IW+Temp. of the paper's pipeline on one source network, with the mechanism's diagnostics.

    One network of the study of how much IW+Temp. depends on the network it
    corrects: a LeNet-5 trained from ``seed`` by one of
    :data:`SOURCE_RECIPES` (or the authors' shipped network), then one
    calibrator repeat of :func:`run_weight_variants` restricted to the
    paper's pipeline: the network discriminator (the book's schedule), its
    temperature fitted or not, ``U = 1000``, weights ``1/g - 1/2`` or
    ``1/g - 1``, exact and SGD temperature fits, with the unweighted Temp.
    and the target-fitted oracle rows. The row ``discriminator == "mlp"``,
    ``beta_g == "fitted"``, ``kind == "bound"``, ``temperature == "sgd"`` is
    the paper's IW+Temp.

    Parameters
    ----------
    recipe : {"ours", "authors", "shipped"}, default "ours"
        The source network: trained by the book's recipe, by the authors'
        recipe (:data:`SOURCE_RECIPES`), or the authors' shipped network
        (then MNIST is split as the paper's, see :func:`run_cs_config`).
    seed : int, default 0
        Seeds the source network, the data split and the calibrator.
    repeat : int, default 0
        The calibrator repeat (>= 0), as in :func:`run_cs_config`.
    shift : {"U->M", "M->U"}, default "U->M"
    device : {"cpu", "cuda"}, default "cpu"

    Returns
    -------
    pandas.DataFrame
        The rows of :func:`run_weight_variants` (:func:`calibtut.run.sweep`
        adds the task's ``recipe``, ``seed`` and ``repeat``).

    Examples
    --------
    >>> rows = run_network_study("ours", seed=0)  # doctest: +SKIP
    >>> rows.query("discriminator == 'mlp'")["upper"].unique().tolist()  # doctest: +SKIP
    [1000.0]
    """
    check_choice(recipe, "recipe", tuple(SOURCE_RECIPES))
    check_choice(shift, "shift", tuple(AUTHORS_SHIFTS))
    network = "authors" if recipe == "shipped" else "ours"
    return run_weight_variants(shift, seed, repeat, **SOURCE_RECIPES[recipe], discriminators=("mlp",), uppers=(1e3,),
                               temperatures=_TEMPERATURES, device=device, source_network=network)


# ------------------------------------------------------------------------------------------- tasks


def network_study_tasks(seeds=range(10), repeats=3, shift="U->M"):
    """The task list of the network study (:func:`run_network_study`), cheapest first, recipes interleaved.

    The authors' shipped network comes first (nothing to train), then, seed by
    seed, our recipe's network and the authors' recipe's network, each with
    its calibrator repeats side by side (a worker keeps the trained network
    for the next repeat), so that a stopped sweep holds about as many
    networks of each recipe.

    Parameters
    ----------
    seeds : sequence of int, default range(10)
        Source-network seeds of each recipe (each >= 0).
    repeats : int, default 3
        Calibrator repeats per network (>= 1).
    shift : {"U->M", "M->U"}, default "U->M"

    Returns
    -------
    list of dict

    Examples
    --------
    >>> [(t["recipe"], t["seed"], t["repeat"]) for t in network_study_tasks([0], repeats=1)]
    [('shipped', 0, 0), ('ours', 0, 0), ('authors', 0, 0)]
    >>> len(network_study_tasks())
    63
    """
    check_choice(shift, "shift", tuple(AUTHORS_SHIFTS))
    repeats = check_int(repeats, "repeats", minimum=1)
    if isinstance(seeds, str) or not hasattr(seeds, "__iter__"):
        raise TypeError(f"seeds must be a sequence of int, got {seeds!r}")
    seeds = [check_int(s, "seeds", minimum=0) for s in seeds]
    networks = [("shipped", 0)] + [(recipe, seed) for seed in seeds for recipe in ("ours", "authors")]
    return [{"recipe": recipe, "seed": seed, "repeat": repeat, "shift": shift}
            for recipe, seed in networks for repeat in range(repeats)]


def cs_tasks(shifts=DIGIT_SHIFTS, seeds=(0,), repeats=1, **fixed):
    """The task list for :func:`calibtut.run.sweep`: one task per shift, source seed and repeat.

    Parameters
    ----------
    shifts : sequence of str, default :data:`DIGIT_SHIFTS`
        Shift names (:func:`parse_shift`).
    seeds : sequence of int, default (0,)
        Source-model seeds (the paper: one).
    repeats : int, default 1
        Calibrator repeats per shift and seed (the paper: 10; >= 1).
    **fixed
        Further keyword arguments of :func:`run_cs_config`, the same for every task;
        with ``source_network="authors"`` every shift must be one of
        :data:`AUTHORS_SHIFTS` (a task without the key runs our network).

    Returns
    -------
    list of dict
        Repeats vary slowest, so a partial sweep already covers every shift.

    Examples
    --------
    >>> [(t["shift"], t["repeat"]) for t in cs_tasks(["M->U", "U->M"], [0], 2, epochs=3)]
    [('M->U', 0), ('U->M', 0), ('M->U', 1), ('U->M', 1)]
    >>> cs_tasks(["U->M"], source_network="authors")[0]["source_network"]
    'authors'
    """
    if isinstance(shifts, str):
        raise TypeError("shifts must be a sequence of shift names, not one str")
    network = check_choice(fixed.get("source_network", "ours"), "source_network", SOURCE_NETWORKS)
    for shift in shifts:
        parse_shift(shift)
        if network == "authors" and shift not in AUTHORS_SHIFTS:
            raise ValueError(f"the authors published source networks for {sorted(AUTHORS_SHIFTS)} only, "
                             f"got shift {shift!r} with source_network='authors'")
    repeats = check_int(repeats, "repeats", minimum=1)
    seeds = [check_int(s, "seeds", minimum=0) for s in seeds]
    return [{"shift": shift, "seed": seed, "repeat": repeat, **fixed}
            for repeat in range(repeats) for seed in seeds for shift in shifts]
