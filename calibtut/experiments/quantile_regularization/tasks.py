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
import numbers
from collections.abc import Mapping

import numpy as np
import pandas as pd
import torch

from calibtut._validation import check_int, check_real
from calibtut.data import Standardizer, load_regression
from calibtut.metrics import l2_calibration_error, nll_gaussian, pit_gaussian
from calibtut.models import DeepEnsemble, MCDropoutGaussian, fit, fit_ensemble, resolve_device
from calibtut.papers import paper_table
from calibtut.recalibration.isotonic import IsotonicRecalibrator
from calibtut.regularizers.entropy import resolve_spacing
from calibtut.regularizers.quantile_regularization import QuantileRegularizedLoss
from calibtut.run import paper_vs_ours

__all__ = [
    "METRIC_LABELS",
    "PAPER_LAMBDA",
    "PAPER_TABLES",
    "SHORT_METRIC_LABELS",
    "ablation_tables",
    "fold_order_summary",
    "fold_order_tasks",
    "kfold_indices",
    "mean_pm_std",
    "paper_numbers",
    "paper_setting",
    "paper_vs_ours_cells",
    "paper_vs_ours_view",
    "qr_effect",
    "qr_tasks",
    "recalibration_raises_error",
    "run_qr_config",
    "spacing_share_below",
    "summarize_runs",
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


def kfold_indices(n, n_folds, fold, seed=None):
    """Train and test indices of one fold of a K-fold split of ``range(n)``.

    The rows are permuted with ``seed`` (``None``: kept in order, as scikit-learn's
    ``KFold(shuffle=False)`` used by the authors' code) and cut into ``n_folds``
    contiguous folds whose sizes differ by at most one (the first ``n % n_folds``
    folds are one larger, as in ``KFold``).

    Parameters
    ----------
    n : int
        Number of rows.
    n_folds : int
        Number of folds, at least 2 and at most ``n``.
    fold : int
        The test fold, ``0 <= fold < n_folds``.
    seed : int, numpy.random.Generator or None
        Permutation of the rows before cutting.

    Returns
    -------
    train_idx, test_idx : numpy.ndarray of int64
        Sorted, disjoint, covering ``range(n)``.

    Examples
    --------
    >>> train, test = kfold_indices(10, 5, 1)
    >>> test.tolist(), len(train)
    ([2, 3], 8)
    >>> sorted(np.concatenate([kfold_indices(7, 3, k, seed=0)[1] for k in range(3)]).tolist()) == list(range(7))
    True
    """
    n = check_int(n, "n", minimum=2)
    n_folds = check_int(n_folds, "n_folds", minimum=2)
    if n_folds > n:
        raise ValueError(f"n_folds ({n_folds}) must not exceed the number of rows n ({n})")
    fold = check_int(fold, "fold", minimum=0)
    if fold >= n_folds:
        raise ValueError(f"fold must be < n_folds ({n_folds}), got {fold}")
    if seed is None:
        order = np.arange(n)
    else:
        if isinstance(seed, bool) or not isinstance(seed, (numbers.Integral, np.random.Generator)):
            raise TypeError(f"seed must be None, an int or a numpy Generator, got {type(seed).__name__}")
        order = np.random.default_rng(seed).permutation(n)
    parts = np.array_split(order, n_folds)
    test = np.sort(parts[fold])
    train = np.sort(np.concatenate([p for k, p in enumerate(parts) if k != fold]))
    return train.astype(np.int64), test.astype(np.int64)


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


def _rmse(y, mean):
    return float(np.sqrt(np.mean((y - mean) ** 2)))


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
    if model not in _MODELS:
        raise ValueError(f"model must be one of {_MODELS}, got {model!r}")
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
    if not isinstance(shuffle, bool):
        raise TypeError(f"shuffle must be a bool, got {type(shuffle).__name__}")
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
        "rmse": _rmse(y_te, mean),
        "nll": float(nll_gaussian(y_te, mean, std)),
        "calib_error_iso": l2_calibration_error(rec.transform(pit)),
        "rmse_iso": _rmse(y_te, rec.mean(mean, std)),
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
        "rmse_kfold": _rmse(y_te, average["mean"]),
        "rmse_kfold_iso": _rmse(y_te, average["mean_iso"]),
        "nll_kfold": _mixture_nll(average["lik"]),
        "nll_kfold_iso": _mixture_nll(average["lik_iso"]),
    }


def paper_setting(runs):
    """Boolean mask of the runs in the setting of Tables 1-2: base or the paper's ``L``, ``k = sqrt(n)``.

    Parameters
    ----------
    runs : pandas.DataFrame
        Rows of a sweep of :func:`run_qr_config` with the columns ``model``,
        ``lam``, ``spacing`` and ``spacing_mult`` (``spacing`` may hold
        ``"sqrt"`` and integers, or their text after a round trip through CSV).

    Returns
    -------
    pandas.Series of bool

    Examples
    --------
    >>> runs = pd.DataFrame({"model": ["dropout"] * 3, "lam": [0.0, 1.0, 3.0], "spacing": ["sqrt"] * 3,
    ...                      "spacing_mult": [1.0] * 3})
    >>> paper_setting(runs).tolist()
    [True, True, False]
    """
    if not isinstance(runs, pd.DataFrame):
        raise TypeError(f"runs must be a pandas DataFrame, got {type(runs).__name__}")
    missing = [c for c in ("model", "lam", "spacing", "spacing_mult") if c not in runs.columns]
    if missing:
        raise ValueError(f"runs lacks column(s) {missing}; it has {list(runs.columns)}")
    paper_lam = runs["model"].map(PAPER_LAMBDA)
    return ((runs["spacing"].astype(str) == "sqrt") & (runs["spacing_mult"] == 1.0)
            & ((runs["lam"] == 0) | (runs["lam"] == paper_lam)))


def summarize_runs(runs, by, metrics, *, decimals=None):
    """Mean and standard deviation of metrics over folds and repeats, one row per group.

    The paper reports "mean ± std" over its splits and repeats; this builds the
    same summary from the rows of a sweep of :func:`run_qr_config`.

    Parameters
    ----------
    runs : pandas.DataFrame
        One row per run, with the columns ``by`` and ``metrics``.
    by : str or list of str
        Grouping columns, e.g. ``["model", "dataset", "lam"]``.
    metrics : list of str
        Metric columns to summarize.
    decimals : int, optional
        Round for display.

    Returns
    -------
    pandas.DataFrame
        Columns ``by``, ``n_runs``, then ``<metric>_mean`` and ``<metric>_std``
        (sample std, ddof = 1; NaN for a single run) for each metric.

    Examples
    --------
    >>> runs = pd.DataFrame({"lam": [0, 0, 1], "rmse": [1.0, 3.0, 2.0]})
    >>> summarize_runs(runs, "lam", ["rmse"])
       lam  n_runs  rmse_mean  rmse_std
    0    0       2        2.0  1.414214
    1    1       1        2.0       NaN
    """
    if not isinstance(runs, pd.DataFrame):
        raise TypeError(f"runs must be a pandas DataFrame, got {type(runs).__name__}")
    by = [by] if isinstance(by, str) else list(by)
    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    missing = [c for c in [*by, *metrics] if c not in runs.columns]
    if missing:
        raise ValueError(f"runs lacks column(s) {missing}; it has {list(runs.columns)}")
    if decimals is not None:
        decimals = check_int(decimals, "decimals", minimum=0)
    groups = runs.groupby(by, sort=False)
    table = groups.size().rename("n_runs").reset_index()
    for metric in metrics:
        stats = groups[metric].agg(["mean", "std"]).rename(columns=lambda c: f"{metric}_{c}").reset_index()
        table = table.merge(stats, on=by, how="left")
    if decimals is not None:
        numeric = [c for c in table.columns if c.endswith(("_mean", "_std"))]
        table[numeric] = table[numeric].round(decimals)
    return table


#: The paper's UCI tables shipped in :mod:`calibtut.papers`: Tables 1-2 (base vs QR), 4-5 (after isotonic), 6-7 (K-fold).
PAPER_TABLES = ("table1", "table2", "table4", "table5", "table6", "table7")

_CELL = ["model", "dataset", "method"]


def _frame(df, columns, name):
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"{name} must be a pandas DataFrame, got {type(df).__name__}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{name} lacks column(s) {missing}; it has {list(df.columns)}")
    return df


def paper_numbers():
    """The paper's Tables 1, 2 and 4-7 in one long frame, read from :mod:`calibtut.papers`.

    Returns
    -------
    pandas.DataFrame
        Columns ``table`` (``"table1"``, ...), ``model``, ``dataset``,
        ``method``, ``metric`` (a :data:`METRIC_LABELS` key), ``mean`` and
        ``std`` as printed.

    Examples
    --------
    >>> paper = paper_numbers()
    >>> sorted(paper["table"].unique()) == sorted(PAPER_TABLES)
    True
    >>> paper.query("table == 'table2' and dataset == 'yacht' and metric == 'calib_error'")["mean"].tolist()
    [24.18, 26.81]
    """
    frames = [paper_table("quantile_regularization", t).assign(table=t) for t in PAPER_TABLES]
    return pd.concat(frames, ignore_index=True)[["table", *_CELL, "metric", "mean", "std"]]


def paper_vs_ours_cells(paper, ours, metrics, *, full=None, methods=("base", "QR"), datasets=None):
    """Every cell of some of the paper's tables beside ours, one line per (metric, model, dataset, method).

    Parameters
    ----------
    paper : pandas.DataFrame
        Rows of :func:`paper_numbers`, one per cell (select the tables first:
        Tables 1-2 and 6-7 both hold ``calib_error``).
    ours : pandas.DataFrame
        Our ``ci`` runs with the columns ``model``, ``dataset``, ``method``
        (``"base"`` or ``"QR"``) and the ``metrics``; folds are averaged.
    metrics : list of str
        Metric columns, in display order.
    full : pandas.DataFrame, optional
        The full run, laid out like ``ours``.
    methods : sequence of str, default ("base", "QR")
    datasets : sequence of str, optional
        Keep only these datasets (default: all of the paper's).

    Returns
    -------
    pandas.DataFrame
        Index ``(metric, model, dataset, method)`` in the paper's order;
        columns ``paper``, ``paper std``, ``ours (ci)``, then with ``full``
        ``ours (full)`` and ``ours (full) std`` (the spread over the full
        run's folds), and ``difference`` (ours minus paper, the full run
        where given). Rounded to 2 decimals.

    Examples
    --------
    >>> paper = paper_numbers().query("table == 'table1'")
    >>> ours = pd.DataFrame({"model": "dropout", "dataset": "yacht", "method": ["base", "QR"],
    ...                      "calib_error": [10.0, 8.0]})
    >>> cells = paper_vs_ours_cells(paper, ours, ["calib_error"], datasets=["yacht"])
    >>> cells.index.tolist()
    [('calib_error', 'dropout', 'yacht', 'base'), ('calib_error', 'dropout', 'yacht', 'QR')]
    >>> cells.to_dict("list")
    {'paper': [29.52, 29.0], 'paper std': [3.36, 2.7], 'ours (ci)': [10.0, 8.0], 'difference': [-19.52, -21.0]}
    """
    _frame(paper, [*_CELL, "metric", "mean", "std"], "paper")
    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    _frame(ours, [*_CELL, *metrics], "ours")
    if full is not None:
        _frame(full, [*_CELL, *metrics], "full")
    parts = []
    for metric in metrics:
        want = paper[(paper["metric"] == metric) & paper["method"].isin(methods)]
        if datasets is not None:
            want = want[want["dataset"].isin(list(datasets))]
        if want.empty:
            raise ValueError(f"paper has no cell of metric {metric!r} for methods {list(methods)}")
        runs = None if full is None else full[[*_CELL, metric]]
        table = paper_vs_ours(want.rename(columns={"mean": metric})[[*_CELL, metric]], ours[[*_CELL, metric]],
                              on=_CELL, value=metric, full=runs, decimals=2)
        table.insert(len(_CELL) + 1, "paper std", want["std"].round(2).to_numpy())
        if runs is not None:
            spread = runs.groupby(_CELL)[metric].std().round(2).rename("ours (full) std").reset_index()
            table = table.merge(spread, on=_CELL, how="left")
            table.insert(table.columns.get_loc("ours (full)") + 1, "ours (full) std", table.pop("ours (full) std"))
        parts.append(table.assign(metric=metric))
    return pd.concat(parts, ignore_index=True).set_index(["metric", *_CELL])


def qr_effect(cells, source):
    """Per (model, dataset): does QR lower the calibration error, and the QR / base RMSE ratio, for one source.

    Parameters
    ----------
    cells : pandas.DataFrame
        What :func:`paper_vs_ours_cells` returns for ``calib_error`` and ``rmse``.
    source : str
        One of its columns: ``"paper"``, ``"ours (ci)"`` or ``"ours (full)"``.

    Returns
    -------
    pandas.DataFrame
        Index ``(model, dataset)``; columns ``qr_lowers_ce`` (bool) and
        ``rmse_ratio``.

    Examples
    --------
    >>> paper = paper_numbers().query("table == 'table1' and dataset == 'yacht'")
    >>> ours = pd.DataFrame({"model": "dropout", "dataset": "yacht", "method": ["base", "QR"],
    ...                      "calib_error": [10.0, 8.0], "rmse": [4.0, 5.0]})
    >>> qr_effect(paper_vs_ours_cells(paper, ours, ["calib_error", "rmse"]), "ours (ci)").values.tolist()
    [[True, 1.25]]
    """
    _frame(cells, [source], "cells")
    wide = cells[source].unstack("method")
    return pd.DataFrame({
        "qr_lowers_ce": wide.loc["calib_error", "QR"] < wide.loc["calib_error", "base"],
        "rmse_ratio": wide.loc["rmse", "QR"] / wide.loc["rmse", "base"],
    })


def _share_raised(after, before):
    raised = (after > before).where(after.notna() & before.notna())
    return raised.groupby("model").mean()


def recalibration_raises_error(runs, paper):
    """Share of datasets, per model, on which isotonic recalibration raises the base model's calibration error.

    Three columns: the paper (Tables 1-2 against 4-5), our runs with the map
    fitted on the training PITs, and our runs with the K-fold variant, whose
    maps are fitted on held-out folds (against the K-fold average before its
    maps). A dataset enters a column only where
    both numbers exist.

    Parameters
    ----------
    runs : pandas.DataFrame
        Rows of :func:`run_qr_config` with a ``method`` column; the ``"base"``
        rows are averaged over folds.
    paper : pandas.DataFrame
        :func:`paper_numbers`.

    Returns
    -------
    pandas.DataFrame
        Index ``model``; columns ``paper: train PITs``, ``ours: train PITs``,
        ``ours: held-out folds``, shares in [0, 1].

    Examples
    --------
    >>> runs = pd.DataFrame({"model": "ensemble", "dataset": ["yacht", "boston"], "method": "base",
    ...                      "calib_error": [5.0, 5.0], "calib_error_iso": [7.0, 4.0],
    ...                      "calib_error_kfold": [4.5, 4.5], "calib_error_kfold_iso": [4.0, 4.0]})
    >>> recalibration_raises_error(runs, paper_numbers()).round(2).to_dict("records")
    [{'paper: train PITs': 1.0, 'ours: train PITs': 0.5, 'ours: held-out folds': 0.0}]
    """
    columns = ["calib_error", "calib_error_iso", "calib_error_kfold", "calib_error_kfold_iso"]
    _frame(runs, ["model", "dataset", "method", *columns], "runs")
    _frame(paper, ["table", *_CELL, "metric", "mean"], "paper")
    ours = runs[runs["method"] == "base"].groupby(["model", "dataset"])[columns].mean()
    printed = paper[paper["table"].isin(["table1", "table2", "table4", "table5"]) & (paper["method"] == "base")]
    printed = printed.pivot(index=["model", "dataset"], columns="metric", values="mean").reindex(ours.index)
    return pd.DataFrame({
        "paper: train PITs": _share_raised(printed["calib_error_iso"], printed["calib_error"]),
        "ours: train PITs": _share_raised(ours["calib_error_iso"], ours["calib_error"]),
        "ours: held-out folds": _share_raised(ours["calib_error_kfold_iso"], ours["calib_error_kfold"]),
    })


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


def fold_order_summary(order):
    """Mean and spread of the calibration error over contiguous and over shuffled folds, one row per dataset.

    Parameters
    ----------
    order : pandas.DataFrame
        Rows of a sweep of :func:`fold_order_tasks`.

    Returns
    -------
    pandas.DataFrame
        Index ``dataset``; columns ``CE mean, contiguous folds``,
        ``CE mean, shuffled folds``, ``CE std, contiguous folds`` and
        ``CE std, shuffled folds``.

    Examples
    --------
    >>> order = pd.DataFrame({"dataset": "concrete", "shuffle": [False, False, True, True],
    ...                       "calib_error": [9.0, 11.0, 2.0, 4.0]})
    >>> fold_order_summary(order).iloc[0].tolist()
    [10.0, 3.0, 1.4142135623730951, 1.4142135623730951]
    """
    _frame(order, ["dataset", "shuffle", "calib_error"], "order")
    table = order.pivot_table(index="dataset", columns="shuffle", values="calib_error", aggfunc=["mean", "std"])
    table.columns = [f"CE {stat}, {'shuffled' if shuffled else 'contiguous'} folds" for stat, shuffled in
                     table.columns]
    return table


#: Short metric names for the book's comparison tables (the full names are :data:`METRIC_LABELS`).
SHORT_METRIC_LABELS = {
    "calib_error": "CE (%)",
    "rmse": "RMSE",
    "nll": "NLL",
    "calib_error_iso": "CE iso (%)",
    "rmse_iso": "RMSE iso",
    "max_lik_iso": "max lik. iso",
    "calib_error_kfold": "CE K-fold (%)",
    "calib_error_kfold_iso": "CE K-fold iso (%)",
}


def _plus_minus(mean, std):
    if pd.isna(mean):
        return ""
    return f"{mean:.2f}" if pd.isna(std) else f"{mean:.2f} ± {std:.2f}"


def paper_vs_ours_view(cells):
    """The comparison of :func:`paper_vs_ours_cells` as the book shows it: paper, ours (ci), ours (full), difference.

    Means and standard deviations share a cell (``"29.52 ± 3.36"``), and
    metrics get their short names (:data:`SHORT_METRIC_LABELS`), so the table
    fits the page; the numbers stay in ``cells``.

    Parameters
    ----------
    cells : pandas.DataFrame
        What :func:`paper_vs_ours_cells` returns.

    Returns
    -------
    pandas.DataFrame
        Same index, text columns ``paper``, ``ours (ci)``, ``ours (full)``
        (when ``cells`` has it) and ``difference``; blank where a number is missing.

    Examples
    --------
    >>> paper = paper_numbers().query("table == 'table1'")
    >>> ours = pd.DataFrame({"model": "dropout", "dataset": "yacht", "method": ["base", "QR"],
    ...                      "calib_error": [10.0, 8.0]})
    >>> view = paper_vs_ours_view(paper_vs_ours_cells(paper, ours, ["calib_error"], datasets=["yacht"]))
    >>> view.values.tolist()
    [['29.52 ± 3.36', '10.00', '-19.52'], ['29.00 ± 2.70', '8.00', '-21.00']]
    >>> view.index[0]
    ('CE (%)', 'dropout', 'yacht', 'base')
    """
    _frame(cells, ["paper", "paper std", "ours (ci)", "difference"], "cells")
    nothing = pd.Series(float("nan"), index=cells.index)
    view = pd.DataFrame(index=cells.index)
    view["paper"] = [_plus_minus(m, s) for m, s in zip(cells["paper"], cells["paper std"])]
    view["ours (ci)"] = [_plus_minus(m, None) for m in cells["ours (ci)"]]
    if "ours (full)" in cells:
        spread = cells.get("ours (full) std", nothing)
        view["ours (full)"] = [_plus_minus(m, s) for m, s in zip(cells["ours (full)"], spread)]
    view["difference"] = [_plus_minus(m, None) for m in cells["difference"]]
    return view.rename(index=SHORT_METRIC_LABELS, level="metric")


def mean_pm_std(table, metrics):
    """The paper's "mean ± std" cells from :func:`summarize_runs`, one row per (model, dataset, method).

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`summarize_runs` by ``["model", "dataset", "method"]``.
    metrics : list of str
        Metrics summarized in ``table`` (its ``<metric>_mean`` and
        ``<metric>_std`` columns).

    Returns
    -------
    pandas.DataFrame
        Index ``(model, dataset, method)``; one text column per metric, named
        by :data:`SHORT_METRIC_LABELS`; a single run's missing spread reads ``NA``.

    Examples
    --------
    >>> runs = pd.DataFrame({"model": "dropout", "dataset": "yacht", "method": ["base", "base", "QR"],
    ...                      "rmse": [1.0, 3.0, 2.0]})
    >>> mean_pm_std(summarize_runs(runs, ["model", "dataset", "method"], ["rmse"]), ["rmse"])["RMSE"].tolist()
    ['2.00 ± 1.41', '2.00 ± NA']
    """
    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    columns = [f"{m}_{stat}" for m in metrics for stat in ("mean", "std")]
    _frame(table, [*_CELL, *columns], "table")
    unknown = [m for m in metrics if m not in SHORT_METRIC_LABELS]
    if unknown:
        raise ValueError(f"metrics must be among {list(SHORT_METRIC_LABELS)}, got {unknown}")
    view = table.set_index(_CELL)[[]].copy()
    for m in metrics:
        view[SHORT_METRIC_LABELS[m]] = [
            f"{mean:.2f} ± {'NA' if pd.isna(std) else f'{std:.2f}'}"
            for mean, std in zip(table[f"{m}_mean"], table[f"{m}_std"])
        ]
    return view


def ablation_tables(runs):
    """The three tables behind the ablation figures (Figures 5-12), from the rows of the ablation runs.

    Every run's RMSE is divided by the RMSE of the base model (``lam == 0``)
    of the same model, dataset and fold, then calibration error and RMSE
    ratio are averaged per setting.

    Parameters
    ----------
    runs : pandas.DataFrame
        Rows of :func:`run_qr_config` for the ablation grid (one seed), with
        the base model's runs among them.

    Returns
    -------
    by_lam : pandas.DataFrame
        ``k = sqrt(n)``, per ``(model, dataset, lam)``: ``calib_error``, ``rmse_ratio``.
    by_mult : pandas.DataFrame
        At the paper's ``L``, per ``(model, dataset, spacing_mult)``.
    fixed64 : pandas.DataFrame
        The authors' fixed spacing ``k = 64``, per ``(model, dataset)``.

    Examples
    --------
    >>> runs = pd.DataFrame({"model": "dropout", "dataset": "yacht", "fold": 0, "lam": [0.0, 1.0, 1.0, 1.0],
    ...                      "spacing": ["sqrt", "sqrt", "sqrt", "64"], "spacing_mult": [1.0, 1.0, 2.0, 1.0],
    ...                      "calib_error": [20.0, 10.0, 12.0, 15.0], "rmse": [2.0, 2.5, 3.0, 2.2]})
    >>> by_lam, by_mult, fixed64 = ablation_tables(runs)
    >>> by_lam["rmse_ratio"].tolist(), by_mult["spacing_mult"].tolist(), fixed64["calib_error"].tolist()
    ([1.0, 1.25], [1.0, 2.0], [15.0])
    """
    _frame(runs, ["model", "dataset", "fold", "lam", "spacing", "spacing_mult", "calib_error", "rmse"], "runs")
    keys = ["model", "dataset", "fold"]
    base_rmse = runs[runs["lam"] == 0].set_index(keys)["rmse"]
    runs = runs.assign(rmse_ratio=runs["rmse"].to_numpy()
                       / base_rmse.reindex(pd.MultiIndex.from_frame(runs[keys])).to_numpy())
    sqrt_rule = runs["spacing"].astype(str) == "sqrt"
    values = ["calib_error", "rmse_ratio"]

    def mean_by(rows, by):
        return rows.groupby(by)[values].mean().reset_index()

    by_lam = mean_by(runs[sqrt_rule & (runs["spacing_mult"] == 1.0)], ["model", "dataset", "lam"])
    by_mult = mean_by(runs[sqrt_rule & (runs["lam"] == runs["model"].map(PAPER_LAMBDA))],
                      ["model", "dataset", "spacing_mult"])
    fixed64 = mean_by(runs[runs["spacing"].astype(str) == "64"], ["model", "dataset"])
    return by_lam, by_mult, fixed64


def spacing_share_below(by_lam, by_mult):
    """Per model, the share of the spacing ablation's settings whose calibration error is below the base model's.

    Parameters
    ----------
    by_lam, by_mult : pandas.DataFrame
        The first two tables of :func:`ablation_tables`; the base model is the
        row of ``by_lam`` with ``lam == 0`` of the same model and dataset.

    Returns
    -------
    pandas.Series
        Indexed by model: the share of ``(dataset, spacing_mult)`` rows of
        ``by_mult`` below the base model's calibration error.

    Examples
    --------
    >>> by_lam = pd.DataFrame({"model": "dropout", "dataset": "yacht", "lam": [0.0, 1.0],
    ...                        "calib_error": [20.0, 10.0], "rmse_ratio": [1.0, 1.1]})
    >>> by_mult = pd.DataFrame({"model": "dropout", "dataset": "yacht", "spacing_mult": [1.0, 2.0, 3.0],
    ...                         "calib_error": [10.0, 25.0, 15.0], "rmse_ratio": 1.1})
    >>> spacing_share_below(by_lam, by_mult).round(3).to_dict()
    {'dropout': 0.667}
    """
    _frame(by_lam, ["model", "dataset", "lam", "calib_error"], "by_lam")
    _frame(by_mult, ["model", "dataset", "calib_error"], "by_mult")
    base = by_lam[by_lam["lam"] == 0].set_index(["model", "dataset"])["calib_error"]
    if base.index.has_duplicates:
        raise ValueError("by_lam has several base rows (lam == 0) for one model and dataset")
    base_ce = base.reindex(pd.MultiIndex.from_frame(by_mult[["model", "dataset"]])).to_numpy()
    if np.isnan(base_ce).any():
        raise ValueError("by_mult has a model and dataset without a base row (lam == 0) in by_lam")
    below = pd.Series(by_mult["calib_error"].to_numpy() < base_ce, index=by_mult["model"].to_numpy())
    return below.groupby(level=0).mean().rename("share_below_base")
