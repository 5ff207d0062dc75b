"""The UCI experiments of paper 003 (Utpala & Rai), one configuration per call.

:func:`run_qr_config` reproduces one cell of the paper's Tables 1, 2 and 4-7 for
one dataset and one test fold: it loads the data, splits it into ``n_folds``
folds as the paper does (Sec. 5.2: five splits, repeated), standardises inputs
and target on the training folds, trains a heteroscedastic Dropout-VI network
or an adversarially trained deep ensemble with or without the quantile
regularizer (:class:`calibtut.regularizers.QuantileRegularizedLoss`), and
evaluates on the test fold, in the original units of the target:

* the l2 calibration error in percent (:func:`calibtut.metrics.l2_calibration_error`,
  the "Calibration Error (%)" of the tables), the RMSE and the Gaussian NLL
  (Tables 1-2);
* the same after isotonic recalibration fitted on the training PITs, as in
  Kuleshov et al. (2018) and the paper (Tables 4-5), with the recalibrated mean
  of Claim 3, the recalibrated density of Eq. 10, the maximum test likelihood
  the paper reports and the fraction of test points given zero likelihood;
* optionally (``kfold_iso``) the paper's K-fold variant of Appendix C.5: K models
  trained on K-1 inner folds of the training data, each recalibrated on its
  held-out inner fold, averaged into one mixture, with and without the
  recalibration (Tables 6-7).

Choices the paper leaves open follow the authors' public code: minibatches of
512 (the last, incomplete one is dropped, so that every batch has the same
spacing), Adam at learning rate 1e-2, and the network details of
:class:`calibtut.models.MCDropoutGaussian`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping

import numpy as np
import torch

from calibtut._validation import check_bool, check_choice, check_int, check_real
from calibtut.data import Standardizer, load_regression
from calibtut.data.splits import kfold_indices
from calibtut.metrics import l2_calibration_error, nll_gaussian, pit_gaussian, rmse
from calibtut.models import DeepEnsemble, MCDropoutGaussian, fit, fit_ensemble, resolve_device
from calibtut.recalibration.isotonic import IsotonicRecalibrator
from calibtut.regularizers.entropy import resolve_spacing
from calibtut.regularizers.quantile_regularization import QuantileRegularizedLoss

__all__ = [
    "METRIC_LABELS",
    "PAPER_LAMBDA",
    "fold_order_tasks",
    "qr_tasks",
    "run_qr_config",
]


_MODELS = ("dropout", "ensemble")

#: Column name -> label of the paper's tables, for the metrics :func:`run_qr_config` returns.
METRIC_LABELS = {
    "calib_error": "Calibration Error (%)",
    "rmse": "RMSE",
    "nll": "NLL",
    "calib_error_iso": "Calibration Error (%) after isotonic",
    "rmse_iso": "RMSE after isotonic",
    "nll_iso": "NLL after isotonic",
    "max_lik": "maximum test likelihood",
    "max_lik_iso": "maximum test likelihood after isotonic",
    "zero_lik_frac_iso": "fraction of test points with zero likelihood after isotonic",
    "calib_error_kfold": "Calibration Error (%), K-fold average",
    "calib_error_kfold_iso": "Calibration Error (%), K-fold isotonic",
    "rmse_kfold": "RMSE, K-fold average",
    "rmse_kfold_iso": "RMSE, K-fold isotonic",
    "nll_kfold": "NLL, K-fold average",
    "nll_kfold_iso": "NLL, K-fold isotonic",
}


#: The regularizer weight ``L`` of the paper's Tables 1-2 (Sec. 5.2); the authors' code uses 4 for ensembles.
PAPER_LAMBDA = {"dropout": 1.0, "ensemble": 5.0}


def qr_tasks(datasets, folds, seeds, *, models=("dropout", "ensemble"), lam=None, kfold_iso=0, **fixed):
    """The task list of Tables 1-2 for :func:`calibtut.run.sweep`: base and QR runs.

    One task per model, dataset, seed and fold with ``lam=0`` (base) and one with
    the model's QR weight; seeds vary slowest after models, so a partial sweep has
    whole repeats of the smaller datasets first when ``datasets`` is ordered by size.

    Parameters
    ----------
    datasets, folds, seeds : sequence
        Dataset names, test folds and seeds (repeats).
    models : sequence of {"dropout", "ensemble"}
    lam : dict, optional
        QR weight per model; default :data:`PAPER_LAMBDA`.
    kfold_iso : int, default 0
        Passed to the base runs only (Tables 6-7 concern base models).
    **fixed
        Further keyword arguments of :func:`run_qr_config`, the same for every task.

    Returns
    -------
    list of dict

    Examples
    --------
    >>> tasks = qr_tasks(["yacht"], [0, 1], [0], models=["dropout"], epochs=5, kfold_iso=3)
    >>> [(t["fold"], t["lam"], t["kfold_iso"]) for t in tasks]
    [(0, 0.0, 3), (0, 1.0, 0), (1, 0.0, 3), (1, 1.0, 0)]
    """
    if lam is not None and not isinstance(lam, Mapping):
        raise TypeError(f"lam must be a dict of model -> weight, got {lam!r} ({type(lam).__name__})")
    lam = dict(PAPER_LAMBDA) if lam is None else {m: check_real(w, f"lam[{m!r}]", low=0) for m, w in lam.items()}
    kfold_iso = check_int(kfold_iso, "kfold_iso", minimum=0)
    if kfold_iso == 1:
        raise ValueError("kfold_iso must be 0 (skip) or at least 2")
    tasks = []
    for model in models:
        if model not in lam:
            raise ValueError(f"lam has no weight for model {model!r}")
        for seed in seeds:
            for dataset in datasets:
                for fold in folds:
                    for weight in (0.0, float(lam[model])):
                        tasks.append({"dataset": dataset, "fold": fold, "seed": seed, "model": model, "lam": weight,
                                      "kfold_iso": kfold_iso if weight == 0 else 0, **fixed})
    return tasks


@functools.lru_cache(maxsize=16)
def _load(dataset):
    data = load_regression(dataset)
    data.X.setflags(write=False)
    data.y.setflags(write=False)
    return data.X, data.y


def _spacing_rule(spacing, spacing_mult):
    spacing_mult = check_real(spacing_mult, "spacing_mult", low=0, low_open=True)
    if isinstance(spacing, str):
        if spacing != "sqrt":
            raise ValueError(f"spacing must be 'sqrt' or an int, got {spacing!r}")
        if spacing_mult == 1:
            return "sqrt"
        return lambda n: max(1, round(spacing_mult * math.sqrt(n)))
    spacing = check_int(spacing, "spacing", minimum=1)
    if spacing_mult != 1:
        raise ValueError("spacing_mult multiplies the 'sqrt' rule only; use spacing='sqrt' with it")
    return spacing


def _seeds(seed, fold, count):
    return [int(s) for s in np.random.SeedSequence([seed, fold]).generate_state(count)]


def _build(model, d, hidden, n_members, n_mc, dropout_std, seed):
    if model == "dropout":
        return MCDropoutGaussian(d, hidden, n_samples=n_mc, predictive_std=dropout_std, mc_seed=seed, seed=seed)
    return DeepEnsemble(d, n_members=n_members, hidden=hidden, seed=seed)


def _train(net, model, X, y, seed, **fit_kwargs):
    if model == "dropout":
        fit(net, X, y, seed=seed, **fit_kwargs)
    else:
        fit_ensemble(net, X, y, adversarial_eps=0.01, seed=seed, **fit_kwargs)
    net.eval()
    return net


def _predict(net, X, device, scaler):
    """Predictive mean and std of ``net`` at standardised ``X``, in original units."""
    with torch.no_grad():
        mean, std = net(torch.as_tensor(X, dtype=torch.float32, device=device))
    mean = mean.double().cpu().numpy()
    std = std.double().cpu().numpy()
    return scaler.inverse_transform_y(mean), scaler.inverse_transform_y(std, scale_only=True)


def _mixture_nll(lik):
    with np.errstate(divide="ignore"):
        return float(-np.mean(np.log(lik)))


def _gaussian_pdf(y, mean, std):
    return np.exp(-0.5 * ((y - mean) / std) ** 2) / (std * math.sqrt(2 * math.pi))


def run_qr_config(
    dataset,
    fold=0,
    *,
    model="dropout",
    lam=0.0,
    spacing="sqrt",
    spacing_mult=1.0,
    epochs=64,
    seed=0,
    device="cpu",
    n_folds=5,
    shuffle=True,
    batch_size=512,
    lr=1e-2,
    width=128,
    depth=2,
    n_members=5,
    n_mc=64,
    dropout_std="mixture",
    kfold_iso=0,
    num_threads=1,
):
    """Train and evaluate one configuration of paper 003's UCI experiments.

    Parameters
    ----------
    dataset : str
        A name for :func:`calibtut.data.load_regression` (``"airfoil"``,
        ``"boston"``, ``"concrete"``, ``"fish-toxicity"``, ``"kin8nm"``,
        ``"protein"``, ``"wine-red"``, ``"wine-white"``, ``"yacht"``;
        ``"year-msd"`` is downloaded on first use).
    fold : int, default 0
        Test fold, ``0 <= fold < n_folds``.
    model : {"dropout", "ensemble"}, default "dropout"
        Heteroscedastic Dropout-VI or a deep ensemble with adversarial (FGSM)
        training.
    lam : float, default 0.0
        Weight of the quantile regularizer (the paper's ``L``); 0 trains the base
        model. The paper uses 1 for Dropout-VI and 5 for ensembles.
    spacing : "sqrt" or int, default "sqrt"
        Spacing rule of the entropy estimator: ``round(sqrt(n))`` for a batch of
        ``n`` (the paper) or a fixed spacing (64 in the authors' code).
    spacing_mult : float, default 1.0
        Multiplier ``t`` of the ``"sqrt"`` rule, ``k = round(t sqrt(n))``
        (Appendix C.4).
    epochs : int, default 64
        Training epochs (64 in the authors' code).
    seed : int, default 0
        Seeds the fold permutation, the initializations, the minibatch order and
        the dropout masks: equal seeds give equal results on the CPU. A new seed
        is one "repeat" of the paper's experiment.
    device : {"cpu", "cuda"}, default "cpu"
    n_folds : int, default 5
        Number of outer folds (five in the paper).
    shuffle : bool, default True
        Permute the rows (with ``seed``) before cutting folds. ``False`` gives the
        contiguous folds of the authors' code, the same for every repeat.
    batch_size : int, default 512
        Minibatch size (authors' code), capped at the training-set size.
    lr : float, default 1e-2
        Adam learning rate (the paper).
    width, depth : int, default 128, 2
        Hidden layers (the paper: two of 128 ReLU units).
    n_members : int, default 5
        Ensemble size (the paper and the authors' code: 5).
    n_mc : int, default 64
        Monte Carlo dropout passes at prediction (authors' code).
    dropout_std : {"mixture", "authors"}, default "mixture"
        How the dropout passes combine into one std
        (:class:`calibtut.models.MCDropoutGaussian`).
    kfold_iso : int, default 0
        If at least 2, also run Appendix C.5 with this many inner folds of the
        training data (5 in the paper); 0 skips it.
    num_threads : int or None, default 1
        Torch CPU threads while this call runs (restored afterwards). Networks of
        this size train fastest on one thread, and several threads on shared
        cores spin against each other; ``None`` leaves torch's setting alone.

    Returns
    -------
    dict
        Flat dict of floats and ints: ``n_train``, ``n_test``, ``spacing_k`` (the
        spacing used for full batches; 0 for the base model) and the metrics named
        in :data:`METRIC_LABELS` (the ``*_kfold*`` ones only with ``kfold_iso``).
        RMSE, NLL and likelihoods are in the original units of the target.
        ``nll_iso`` is ``inf`` when isotonic recalibration gives a test point zero
        likelihood (the truncation of the paper's Sec. 3).

    Examples
    --------
    >>> import os
    >>> r = run_qr_config("yacht", epochs=2, n_mc=4, width=16) if os.environ.get("CALIBTUT_DATA_MIRROR") else None
    >>> r is None or (r["n_train"], r["n_test"]) == (246, 62)
    True
    """
    if not isinstance(dataset, str):
        raise TypeError(f"dataset must be a str, got {type(dataset).__name__}")
    check_choice(model, "model", _MODELS)
    lam = check_real(lam, "lam", low=0)
    seed = check_int(seed, "seed", minimum=0)
    n_folds = check_int(n_folds, "n_folds", minimum=2)
    fold = check_int(fold, "fold", minimum=0, maximum=n_folds - 1)
    epochs = check_int(epochs, "epochs", minimum=1)
    batch_size = check_int(batch_size, "batch_size", minimum=2)
    lr = check_real(lr, "lr", low=0, low_open=True)
    n_members = check_int(n_members, "n_members", minimum=1)
    n_mc = check_int(n_mc, "n_mc", minimum=1)
    hidden = (check_int(width, "width", minimum=1),) * check_int(depth, "depth", minimum=1)
    kfold_iso = check_int(kfold_iso, "kfold_iso", minimum=0)
    if kfold_iso == 1:
        raise ValueError("kfold_iso must be 0 (skip) or at least 2")
    check_bool(shuffle, "shuffle")
    rule = _spacing_rule(spacing, spacing_mult)
    dev = resolve_device(device)
    if num_threads is None:
        return _run(dataset, fold, model, lam, rule, epochs, seed, dev, n_folds, shuffle, batch_size, lr, hidden,
                    n_members, n_mc, dropout_std, kfold_iso)
    num_threads = check_int(num_threads, "num_threads", minimum=1)
    previous = torch.get_num_threads()
    torch.set_num_threads(num_threads)
    try:
        return _run(dataset, fold, model, lam, rule, epochs, seed, dev, n_folds, shuffle, batch_size, lr, hidden,
                    n_members, n_mc, dropout_std, kfold_iso)
    finally:
        torch.set_num_threads(previous)


def _run(dataset, fold, model, lam, rule, epochs, seed, dev, n_folds, shuffle, batch_size, lr, hidden, n_members,
         n_mc, dropout_std, kfold_iso):
    X_all, y_all = _load(dataset)
    train, test = kfold_indices(len(y_all), n_folds, fold, seed if shuffle else None)
    scaler = Standardizer().fit(X_all[train], y_all[train])
    X_tr, X_te = scaler.transform(X_all[train]), scaler.transform(X_all[test])
    y_tr, y_te = y_all[train], y_all[test]
    batch = min(batch_size, len(train))
    loss = QuantileRegularizedLoss(lam=float(lam), spacing=rule)
    fit_kwargs = {"loss": loss, "epochs": epochs, "batch_size": batch, "lr": lr, "device": dev,
                  "progress": False, "drop_last": True}
    init_seed, train_seed, inner_seed = _seeds(seed, fold, 3)

    net = _build(model, X_tr.shape[1], hidden, n_members, n_mc, dropout_std, init_seed)
    _train(net, model, X_tr, scaler.transform_y(y_tr), train_seed, **fit_kwargs)
    mean, std = _predict(net, X_te, dev, scaler)
    mean_tr, std_tr = _predict(net, X_tr, dev, scaler)

    pit = pit_gaussian(y_te, mean, std)
    rec = IsotonicRecalibrator().fit(pit_gaussian(y_tr, mean_tr, std_tr))
    lik_iso = rec.pdf(y_te, mean, std)
    result = {
        "n_train": len(train),
        "n_test": len(test),
        "spacing_k": resolve_spacing(rule, batch) if lam > 0 else 0,
        "calib_error": l2_calibration_error(pit),
        "rmse": rmse(y_te, mean),
        "nll": float(nll_gaussian(y_te, mean, std)),
        "calib_error_iso": l2_calibration_error(rec.transform(pit)),
        "rmse_iso": rmse(y_te, rec.mean(mean, std)),
        "nll_iso": _mixture_nll(lik_iso),
        "max_lik": float(_gaussian_pdf(y_te, mean, std).max()),
        "max_lik_iso": float(lik_iso.max()),
        "zero_lik_frac_iso": float(np.mean(lik_iso == 0)),
    }
    if kfold_iso:
        result.update(_kfold_isotonic(model, X_tr, y_tr, X_te, y_te, scaler, kfold_iso, inner_seed, hidden,
                                      n_members, n_mc, dropout_std, fit_kwargs))
    return result


def _kfold_isotonic(model, X_tr, y_tr, X_te, y_te, scaler, k, seed, hidden, n_members, n_mc, dropout_std,
                    fit_kwargs):
    """Appendix C.5: K models on K-1 inner folds, each recalibrated on its held-out fold, averaged."""
    seeds = np.random.SeedSequence(seed).generate_state(2 * k + 1)
    pits, pits_iso, means, means_iso, liks, liks_iso = [], [], [], [], [], []
    for i in range(k):
        inner_tr, inner_cal = kfold_indices(len(y_tr), k, i, int(seeds[-1]))
        kwargs = dict(fit_kwargs, batch_size=min(fit_kwargs["batch_size"], len(inner_tr)))
        net = _build(model, X_tr.shape[1], hidden, n_members, n_mc, dropout_std, int(seeds[2 * i]))
        _train(net, model, X_tr[inner_tr], scaler.transform_y(y_tr[inner_tr]), int(seeds[2 * i + 1]), **kwargs)
        mean_cal, std_cal = _predict(net, X_tr[inner_cal], fit_kwargs["device"], scaler)
        rec = IsotonicRecalibrator().fit(pit_gaussian(y_tr[inner_cal], mean_cal, std_cal))
        mean, std = _predict(net, X_te, fit_kwargs["device"], scaler)
        pit = pit_gaussian(y_te, mean, std)
        pits.append(pit)
        pits_iso.append(rec.transform(pit))
        means.append(mean)
        means_iso.append(rec.mean(mean, std))
        liks.append(_gaussian_pdf(y_te, mean, std))
        liks_iso.append(rec.pdf(y_te, mean, std))
    average = {name: np.mean(values, axis=0) for name, values in
               {"pit": pits, "pit_iso": pits_iso, "mean": means, "mean_iso": means_iso, "lik": liks,
                "lik_iso": liks_iso}.items()}
    return {
        "calib_error_kfold": l2_calibration_error(average["pit"]),
        "calib_error_kfold_iso": l2_calibration_error(average["pit_iso"]),
        "rmse_kfold": rmse(y_te, average["mean"]),
        "rmse_kfold_iso": rmse(y_te, average["mean_iso"]),
        "nll_kfold": _mixture_nll(average["lik"]),
        "nll_kfold_iso": _mixture_nll(average["lik_iso"]),
    }


def fold_order_tasks(datasets, seed, **fixed):
    """The task list of the fold-order check: the base Dropout-VI model on five contiguous and five shuffled folds.

    Parameters
    ----------
    datasets : sequence of str
    seed : int
    **fixed
        Further keyword arguments of :func:`run_qr_config` shared by every task
        (``epochs``, ``device``, ...).

    Returns
    -------
    list of dict

    Examples
    --------
    >>> tasks = fold_order_tasks(["concrete"], 0, epochs=2)
    >>> len(tasks), tasks[0]["shuffle"], tasks[-1]["shuffle"], tasks[0]["lam"], tasks[0]["epochs"]
    (10, False, True, 0.0, 2)
    """
    datasets = [datasets] if isinstance(datasets, str) else list(datasets)
    seed = check_int(seed, "seed", minimum=0)
    return [{**fixed, "dataset": name, "fold": fold, "seed": seed, "model": "dropout", "lam": 0.0,
             "shuffle": shuffle} for name in datasets for shuffle in (False, True) for fold in range(5)]
