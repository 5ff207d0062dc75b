"""Every public callable refuses bad numbers and bad arrays with an error that names the argument.

The test walks every public module of ``calibtut`` (any module whose dotted
name has no part starting with ``_``) and takes every function and class in
its ``__all__``; for a class it walks the constructor and the methods of the
estimator contract (``fit``, ``predict_*``, ``transform``), called on an
instance built and fitted from valid values. An estimator (a subclass of
``calibtut._estimator.Estimator``) stores its hyper-parameters unchanged and
checks them at ``fit``, so a bad constructor argument is fed to the
constructor and must be refused by the ``fit`` that follows. A new public callable is
covered as soon as it is listed in an ``__all__``; if the walker cannot build
a valid call for it, the test says which argument needs a valid value.

Valid example values are keyed by parameter name (:data:`VALID`), where a
name means the same thing across the package (``alpha``, ``levels``,
``cal_probs``, ...); :data:`CLASSIFICATION` gives the values of ``y`` and
``cal_y`` in a classifier (a callable, or a class, that takes class
probabilities or logits); :data:`VALID_FOR` overrides them for one callable,
one class or one module (keyed by a dotted prefix of where the callable is
listed or defined, or by its bare name). Every per-point array has ``N``
entries, calibration and test alike.

The checks:

* a numeric parameter (numpydoc type ``float``/``int``, or a real default)
  set to NaN, +inf, -inf or an out-of-range value raises a ``ValueError`` or
  ``TypeError`` that names it and shows the value; a numeric sequence
  refuses a bad entry; ``levels`` refuses levels that are not strictly
  increasing inside (0, 1);
* an array parameter (its valid value is a numeric numpy array) given
  complex numbers or strings raises a ``TypeError`` naming it;
* class probabilities (``probs``, ``*_probs``) whose rows do not sum to 1,
  labels (``labels``, ``*_labels``; ``y`` and ``cal_y`` of a classifier)
  that are not integers or out of range, and negative distances (``d``,
  ``*_d``, ``*distance*``) or weights (``*weight*``) raise an error naming
  the argument.

Each array check first makes the call with the valid values (so that a
refusal for another reason cannot pass for the check).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import importlib
import inspect
import math
import pkgutil
import re

import numpy as np
import pytest
import torch

import calibtut
from calibtut._estimator import Estimator

#: ``qualified name.parameter`` of numeric parameters that legitimately accept
#: infinity; each one must say so in its docstring (checked below). None today.
ALLOW_INF = set()

#: Functions whose ``levels`` is an evaluation grid of the PIT's CDF, where 0
#: and 1 are meaningful points (documented as such); still strictly increasing.
CLOSED_LEVEL_GRIDS = {
    "calibtut.metrics.pce",
    "calibtut.metrics.pce_null_distribution",
    "calibtut.metrics.pce_test",
    "calibtut.metrics.pit_reliability_data",
    "calibtut.plots.pit_reliability_diagram",
}

#: Functions whose ``levels`` are working levels that an online method moves
#: freely (ACI's ``a_k``), clipped to [0, 1] by design as documented; they
#: must still be finite.
WORKING_LEVELS = {"calibtut.online.conformal_pit_levels"}

#: Parameters for which every finite real number is valid (no out-of-range value).
UNBOUNDED = {
    # Survey years bounding a filter: any integer year is a valid bound.
    "calibtut.data.spf_quantile_streams.start",
    "calibtut.data.spf_quantile_streams.end",
    # A rotation by any finite angle in degrees; the mean of a Gaussian target law.
    "calibtut.data.rotate_images.angle",
    "calibtut.shift.GaussianShift.mean",
}

#: Out-of-range value per parameter name; names not listed get -1 (every size,
#: count, rate, tolerance, temperature, gain, bound and width must be >= 0).
OUT_OF_RANGE_BY_NAME = {
    "alpha": 1.5,
    "level": 1.5,
    "delta": 1.5,
    "w_mix": 1.5,
    "shrink": 1.5,
    "band": 1.5,
}

#: Out-of-range values that differ from the by-name rule, keyed by ``qualified name.parameter``.
OUT_OF_RANGE = {
    "calibtut.models.MCDropoutGaussian.p": 1.5,  # the dropout probability, in [0, 1)
    "calibtut.online.RegretCalibrator.lower": 5.0,  # above upper
    "calibtut.online.RegretCalibrator.upper": -5.0,  # below lower
}

#: Methods of a class walked besides its constructor (the estimator contract).
WALKED_METHODS = re.compile(r"^(fit|transform|predict_\w+)$")

N, K = 40, 3
_rng = np.random.default_rng(0)
_y = _rng.normal(size=N)
_probs = _rng.dirichlet(np.ones(K), size=N)
_labels = np.arange(N) % K
_levels = np.array([0.25, 0.5, 0.75])
_quantiles = np.stack([np.full(N, -0.67), np.zeros(N), np.full(N, 0.67)], axis=1)


def _model():
    from calibtut.models import GaussianMLP

    return GaussianMLP(2, hidden=(4,), seed=0)


def _uniform_kernel(a, b):
    """A localizer's kernel that weighs every pair 1 (localized sets are then split sets)."""
    return np.ones((len(a), len(b)))


def _knn_features(labelled=True):
    from calibtut.selective import KNNFeatures

    return KNNFeatures(_probs, _labels if labelled else None, np.arange(N) % 2, _rng.uniform(size=N))


#: Valid values by parameter name (callables are called to build a fresh value).
VALID = {
    "n": 100,
    "k": 10,
    "x": _rng.uniform(size=N),
    "level": 0.9,
    "scores": np.abs(_y),
    "alpha": 0.1,
    "omega": 0.3,
    "cal_pred": _y,
    "cal_y": _y + 0.1,
    "test_pred": _y,
    "cal_pit": _rng.uniform(size=N),
    "cal_quantiles": np.stack([_y - 1.0, _y + 1.0], axis=1),
    "test_quantiles": np.stack([_y - 1.0, _y + 1.0], axis=1),
    "n_cal": 100,
    "n_test": 50,
    "confidence": _probs.max(axis=1),
    "correct": (_y > 0).astype(float),
    "edges": np.linspace(0, 1, 5),
    "count": np.array([10, 20]),
    "mean_confidence": np.array([0.3, 0.8]),
    "probs": _probs,
    "cal_probs": _probs,
    "test_probs": _probs,
    "logits": np.log(_probs),
    "cal_logits": np.log(_probs),
    "test_logits": np.log(_probs),
    "labels": _labels,
    "cal_labels": _labels,
    "n_classes": K,
    "cal_scores": np.abs(_y),
    "test_scores": _rng.uniform(size=N),
    "cal_weight": np.ones(N),
    "test_weight": np.ones(N),
    "cal_categories": np.arange(N) % 2,
    "test_categories": np.arange(N) % 2,
    "kernel": lambda: _uniform_kernel,
    "cal_x": _rng.normal(size=(N, 2)),
    "test_x": _rng.normal(size=(N, 2)),
    "q": np.arange(N) % 2,
    "d": _rng.uniform(size=N),
    "cal": lambda: _knn_features(),
    "mc": lambda: _knn_features(),
    "vp": lambda: _knn_features(),
    "test": lambda: _knn_features(labelled=False),
    "pit": _rng.uniform(size=N),
    "y": _y,
    "mean": np.zeros(N),
    "std": np.ones(N),
    "weights": np.full((N, 2), 0.5),
    "means": np.zeros((N, 2)),
    "stds": np.ones((N, 2)),
    "quantiles": _quantiles,
    "levels": _levels,
    "quantile_function": lambda: calibtut.recalibration.gaussian_quantile_function(np.zeros(N), np.ones(N)),
    "lower": np.full(N, -1.0),
    "upper": np.full(N, 1.0),
    "in_features": 2,
    "X": _rng.normal(size=(N, 2)),
    "X_source": _rng.normal(size=(N, 2)),
    "X_target": _rng.normal(size=(N, 2)) + 0.5,
    "model": _model,
    "values": _y,
    "fractions": (0.5, 0.2, 0.2, 0.1),
    "kind": "linear",
    "n_steps": 10,
    "n_series": 2,
    "n_levels": 3,
    "B": 5.0,
    "beta": 0.16,
    "eta": 0.96,
    "kp": 1.0,
    "kd": 0.08,
    "ki": np.full(K, 0.05),
    "ki_max": 0.09,
    "ki_min": 0.04,
    "max_likelihood": 1.0,
    "counts": np.zeros((1, K)),
    "t": 5,
    "tolerance": np.ones(K),
    "base": np.array([[-1.0, 0.0, 1.0]]),
    "adjustment": np.zeros((1, K)),
    "z": np.array([[-1.0, 0.0, 1.0]]),
    "sorted_pits": np.sort(_rng.uniform(size=(2, 20)), axis=1),
    "coverage": _rng.uniform(0.8, 0.95, size=20),
    "variable": "real_gdp",
    "delta": 0.1,
    "path": "cqr_yromano/LICENSE",
    "name": "yacht",
    "spacing": "sqrt",
}

#: Values of a classifier's targets (a callable or class taking class probabilities or logits).
CLASSIFICATION = {"y": _labels, "cal_y": _labels, "test_y": _labels}

#: Optional parameters that the walk also exercises wherever they appear (when
#: the call with the valid value is accepted: a method may need its class
#: fitted with the same option).
OPTIONAL = {"cal_weight": np.ones(N), "test_weight": np.ones(N)}
#: The fit option that a prediction option needs (test weights predict only after calibration weights).
FIT_OPTION = {"test_weight": "cal_weight"}


def _paper_table():
    import pandas as pd

    return pd.DataFrame({"m": ["a", "b"], "value": [1.0, 2.0]})


def _runs_table():
    import pandas as pd

    return pd.DataFrame({"lam": [0, 1], "rmse": [1.0, 2.0]})


def _study_rows():
    """Rows shaped like ``run_study_task``'s of paper 002 (two runs, one dataset)."""
    import pandas as pd

    from calibtut.experiments.regression_study import FREQ_COLUMNS

    return pd.DataFrame([
        {"dataset": "a", "run": r, "base": "mix-nll", "method": m, "regularizer": reg, "lam": lam, "posthoc": "none",
         "train_fraction": 0.8, "n_test": 50, "val_pce": 0.1, "test_pce": 0.1 + 0.01 * r, "val_wis": 1.0,
         "reject": False, "reject_paper": False, **{c: 0.5 for c in FREQ_COLUMNS}}
        for r in range(2) for m, reg, lam in (("MIX-NLL", "none", 0.0), ("MIX-NLL + QR", "qr", 1.0))
    ])


def _square_task(seed):
    return {"v": seed * seed}


@functools.cache
def _tiny_knn_pool():
    """A small pool of paper 001's synthetic KNN pipeline (built once)."""
    from calibtut.experiments.venn_admit import synthetic_knn_pipeline

    return synthetic_knn_pipeline(0, n_train=300, n_pool=200, n_knn=40, epochs=1)


def _singleton_runs():
    import pandas as pd

    return pd.DataFrame({"method": ["split"], "class": [0], "n": [10], "covered": [9], "singletons": [8],
                         "correct_singletons": [7]})


def _ensemble():
    from calibtut.models import DeepEnsemble

    return DeepEnsemble(2, n_members=2, hidden=(4,), seed=0)


def _method_table():
    """A datasets x methods table (also a frame whose last column is a numeric target)."""
    import pandas as pd

    return pd.DataFrame(np.random.default_rng(1).normal(size=(N, 3)), columns=["a", "b", "c"])


_STEPS = np.zeros((10, K)) + [-1.0, 0.0, 1.0]


def _token_states():
    """Token states of ``N`` texts of two word pieces of width 3 (paper 001's exemplar inputs)."""
    from calibtut.models.sentence_embeddings import TokenStates

    return TokenStates([np.ones((2 * N, 3), np.float16)], [[0, 2 * i, 2] for i in range(N)])


def _encode_tokens(batch):
    """A toy token encoder: two states of width 3 per text."""
    return [np.ones((2, 3)) for _ in batch]


class _ToyTokenizer:
    """What ``TokenizedTexts`` asks of a transformers tokenizer: one word piece per character."""

    pad_token_id = 0

    def __call__(self, texts, *, truncation, max_length, return_special_tokens_mask):
        ids = [[1] + [2] * len(t[:max_length - 2]) + [3] for t in texts]
        return {"input_ids": ids, "special_tokens_mask": [[1] + [0] * (len(i) - 2) + [1] for i in ids]}


def _va_part(n):
    """``(exemplars, logits, labels)`` of ``n`` points of two classes, as :func:`va_rows` takes them."""
    y = np.arange(n) % 2
    r = np.random.default_rng(n).normal(size=(n, 4)) + y[:, None]
    return r, np.column_stack([-r[:, 0], r[:, 0]]), y

#: Valid arguments that differ from ``VALID`` for one callable, class or module: the key is a
#: dotted prefix of where the callable is defined or listed (``calibtut.online``,
#: ``calibtut.conformal.SplitConformalClassifier.fit``) or its bare name; the most specific
#: key wins (the definition's path before the listing's).
VALID_FOR = {
    "calibtut.metrics.torch": {
        "y": lambda: torch.zeros(N),
        "mean": lambda: torch.zeros(N),
        "std": lambda: torch.ones(N),
        "quantiles": lambda: torch.tensor(_quantiles),
        "levels": lambda: torch.tensor(_levels),
        "weights": lambda: torch.full((N, 2), 0.5),
        "means": lambda: torch.zeros((N, 2)),
        "stds": lambda: torch.ones((N, 2)),
    },
    "calibtut.regularizers.entropy.spacing_entropy_torch": {"x": lambda: torch.rand(N, dtype=torch.float64)},
    "calibtut.regularizers.sorting": {"scores": lambda: torch.rand(N)},
    "calibtut.regularizers": {"pit": lambda: torch.rand(N), "nll": lambda: torch.tensor(1.0)},
    "calibtut.models.fgsm_perturb": {
        "loss": lambda: (lambda out, y: torch.mean(out[0] ** 2)),
        "x": lambda: torch.zeros(N, 2),
        "y": lambda: torch.zeros(N),
    },
    "calibtut.models.fit": {"epochs": 1},
    # one weight for the one draw: a number, not an array
    "calibtut.experiments.venn_admit.binomial_admission": {"test_weight": 1.0},
    "calibtut.models.QuantileFunction": {"net": lambda: calibtut.models.SQRNet(2, hidden=(4,), seed=0),
                                         "x": lambda: torch.zeros(N, 2)},
    "calibtut.models.fit_ensemble": {"ensemble": lambda: _ensemble()},
    "calibtut.data.bins_to_quantiles": {
        "lower": np.array([-np.inf, 0.0, 1.0]),
        "upper": np.array([0.0, 1.0, np.inf]),
        "probability": np.array([0.2, 0.5, 0.3]),
    },
    "calibtut.plots.column_subplots": {"n_panels": 2},
    "calibtut.experiments.regression_study.per_batch_reading": {"sizes": [100], "n_sim": 20},
    "calibtut.experiments.regression_study.per_batch_test_table": {
        "rows": lambda: _study_rows().assign(test_pce_batch=0.1), "n_sim": 20},
    "calibtut.plots.plot_calibration_maps": {"maps": {"identity": lambda u: u}},
    "calibtut.plots.plot_predictive_band": {"x": np.arange(N, dtype=float)},
    "calibtut.plots.plot_quantile_paths": {"quantiles": _STEPS},
    # Paper 002 (regression study): torch batches, study models and losses, result tables.
    "calibtut.regularizers.calibration_penalties": {
        "pit": lambda: torch.rand(N, dtype=torch.float64),
        "values": lambda: torch.rand(N, dtype=torch.float64),
        "quantiles": lambda: torch.tensor(_quantiles),
        "y": lambda: torch.zeros(N, dtype=torch.float64),
        "levels": lambda: torch.tensor(_levels),
        "model": "sqr",
    },
    "calibtut.models.mixture.relu_body": {"hidden": (4, 4), "dropout": 0.2},
    "calibtut.models.make_study_model": {"name": "mix-nll"},
    "calibtut.models.study_evaluation": {"quantiles": np.zeros((N, 19)), "crps_quantiles": np.zeros((N, 64)),
                                         "model": lambda: calibtut.models.MixtureMLP(2, hidden=(4,), seed=0),
                                         "scaler": lambda: calibtut.data.Standardizer().fit(np.zeros((N, 2)), _y),
                                         "family": "mixture"},
    "calibtut.models.predict_quantiles": {"model": lambda: calibtut.models.SQRNet(2, hidden=(4,), seed=0)},
    "calibtut.models.fit_study": {
        "model": lambda: calibtut.models.MixtureMLP(2, hidden=(4,), seed=0),
        "loss": lambda: calibtut.regularizers.calibration_penalties.StudyLoss("mixture"),
        "val": (VALID["X"][:10], _y[:10]),
        "seed": 0,
        "epochs": 1,
    },
    "calibtut.models.fit_study_batched": {
        "models": lambda: [calibtut.models.MixtureMLP(2, hidden=(4,), seed=0)],
        "losses": lambda: [calibtut.regularizers.calibration_penalties.StudyLoss("mixture")],
        "val": (VALID["X"][:10], _y[:10]),
        "seeds": [0],
        "epochs": 1,
    },
    "calibtut.models.fit_study_engine": {
        "models": lambda: [calibtut.models.MixtureMLP(2, hidden=(4,), seed=0)],
        "losses": lambda: [calibtut.regularizers.calibration_penalties.StudyLoss("mixture")],
        "val": (VALID["X"][:10], _y[:10]),
        "seeds": [0],
        "epochs": 1,
    },
    "calibtut.stats": {
        "pits": {"a": [_rng.uniform(size=N)]},
        "pvalues": np.array([0.001, 0.02, 0.004]),
        "lambdas": np.array([0.0, 1.0]),
        "val_score": np.array([1.0, 1.05]),
        "val_pce": np.array([0.1, 0.05]),
        "values": lambda: _method_table(),
        "effects": lambda: _method_table(),
    },
    "calibtut.stats.pce_study_test": {"n_sim": 100},
    "calibtut.experiments.regression_study": {
        "datasets": ["Yacht"], "runs": [0], "bases": ["mix-nll"], "dataset": "Yacht", "metric": "pce",
        "rows": lambda: _study_rows(), "results": lambda: _study_rows(), "test_table": lambda: _study_rows(),
        "base": "mix-nll", "values": (0.1, 1.0),
    },
    "calibtut.experiments.regression_study.tables.study_cost": {
        "rows": lambda: _study_rows().assign(seconds=60.0), "n_runs": 5, "workers": 2},
    "calibtut.experiments.regression_study.tables.trainings_per_task": {
        "rows": lambda: _study_rows().assign(seconds=60.0)},
    "calibtut.experiments.regression_study.chapters": {
        "curve": lambda: calibtut.experiments.regression_study.qr_scale_curve(64, (8,), [0.9, 1.0], 1, "hard"),
        "spacings": (8,), "scales": [0.9, 1.0], "seeds": 1, "sort": "hard", "level": 0.9, "batch": 16,
        "batches": (16,), "levels": (0.05, 0.95), "steps": 3, "burn_in": 1,
    },
    "calibtut.data.regression_study": {"frame": lambda: _method_table(), "X": lambda: _method_table(), "run": 0},
    "calibtut.run.progress.SweepProgress": {"total": 4, "done": 1, "desc": "demo", "bar": False, "slots": 2},
    "calibtut.run.recheck.recheck": {"store": "missing.jsonl"},  # bad arguments are refused before it is read
    "calibtut.run.store.entry_rows": {"entry": {"key": "k", "status": "ok", "task": {"seed": 1}, "records": [{"v": 1}]}},
    "calibtut.run.stored_rows": {"part": "p0", "notebook": "01_demo", "sweep": "grid"},
    # a bad stall is refused at the call, before the client (a dask Client) is used
    "calibtut.run.engine.run_dask": {"client": None, "fn": lambda: _square_task, "todo": [("k0", {"seed": 0})],
                                     "reserved": (), "threads": 1, "label": "demo"},
    "calibtut.run.engine.run_task": {"fn": lambda: _square_task, "task": {"seed": 0}, "reserved": ()},
    "calibtut.online": {"y": np.zeros((1, 10)), "labels": np.zeros((1, 10)), "quantiles": _STEPS[None]},
    "calibtut.online.theorem1_bound": {"delta": 0.1},
    "calibtut.online.spring_bound_check": {"quantiles": _STEPS, "y": np.zeros(10), "labels": np.zeros(10),
                                           "delta": 0.1},
    "calibtut.online.interval_likelihood": {"quantiles": _STEPS, "y": np.zeros(10), "labels": np.zeros(10)},
    "calibtut.online.PIDController": {"n_series": 1},
    "calibtut.online.RegretCalibrator": {"lower": -3.0, "upper": 3.0},
    "calibtut.online.drift_offsets": {"kind": "jump"},
    "calibtut.online.apply_drift": {"kind": "jump", "labels": np.zeros(10), "y": np.zeros(10)},
    "calibtut.online.drifting_gaussian_stream": {"kind": "jump"},
    "calibtut.online.adversarial_labels": {
        "calibrator": lambda: calibtut.online.OriginalForecast(_levels, B=5.0),
        "forecasts": np.array([[-1.0, 0.0, 1.0]]),
        "n_steps": 10,
    },
    "calibtut.online.conformal_pit_levels": {"levels": _levels},
    "calibtut.run.paper_vs_ours": {"paper": lambda: _paper_table(), "ours": lambda: _paper_table(), "on": "m"},
    "calibtut.run.sweep": {"tasks": [{"seed": 0}], "fn": lambda: _square_task, "progress": False},
    "calibtut.run.sweep.summarize_entries": {"entries": [{"seconds": 1.0, "finished": "2026-01-01T00:00:00"}]},
    "calibtut.data.uci_split": {"split": 0},
    "calibtut.models.feature_range_eps": {"X": lambda: torch.zeros(N, 2)},
    "resize_images": {"X": np.zeros((2, 16)), "size": 8},
    "rotate_images": {"X": np.zeros((2, 16)), "angle": 10.0},
    "texture_images": {"X": np.zeros((2, 16))},
    "ink_mass": {"X": np.zeros((2, 16))},
    "to_tensor": {"ndim": 1, "name": "x"},
    "gaussian_nll_loss": {"output": lambda: (torch.zeros(N), torch.ones(N)), "y": lambda: torch.zeros(N)},
    "predict_logits": {"model": lambda: torch.nn.Linear(2, 3)},
    "calibtut.recalibration.density": {
        "recalibrator": lambda: calibtut.recalibration.QuantileRecalibrator().fit(VALID["pit"]),
        "log_density": np.zeros(N)},
    "misspecified_classifier_logits": {"X": _rng.normal(size=(N, 1))},
    "top_weight_spread": {"weights": np.ones((3, N))},
    "calibtut.data.selection_shift": {"feature": np.linspace(-1.0, 1.0, N)},
    "calibtut.models.fit_classifier": {"model": lambda: torch.nn.Linear(2, 3), "y": _labels, "epochs": 1,
                                       "progress": False},
    "calibtut.shift.DANNHead": {"n_in": 4, "n_classes": 3},
    "calibtut.shift.MLPDiscriminator": {"hidden": (4,), "epochs": 1},
    "calibtut.shift.fit_dann": {
        "model": lambda: calibtut.shift.DANNHead(2, 3, hidden=4, hidden_d=4, seed=0),
        "Z_source": np.zeros((N, 2)), "y_source": _labels, "Z_target": np.zeros((N, 2)),
        "epochs": 1, "progress": False,
    },
    "calibtut.shift.grl_coefficient": {"step": 10},
    "calibtut.shift.grad_reverse": {"x": lambda: torch.zeros(N, 2)},
    "calibtut.shift.effective_sample_size": {"weights": np.ones(N)},
    "calibtut.shift.weight_summary": {"weights": np.ones(N)},
    "calibtut.shift.bound_violation_search": {"n_draws": 10},
    "calibtut.shift.discriminator_weights": {"g": np.full(N, 0.5)},
    "calibtut.shift.discriminator_reliability": {"g_source": np.full(N, 0.6), "g_target": np.full(N, 0.4)},
    "calibtut.shift.theorem1_terms": {"p": np.array([0.5, 0.5]), "q": np.array([0.9, 0.1]),
                                      "g_hat": np.array([1 / 1.8, 1 / 1.2]), "loss": np.array([2.0, 0.0])},
    "calibtut.shift.gaussian_bound_terms": {"shift": lambda: calibtut.shift.GaussianShift(1.0, 0.7), "n_grid": 101},
    # The experiments layer: bad numbers are refused before any data is loaded or model trained.
    "calibtut.experiments.drift": {
        "datasets": ["yacht"], "seeds": [0], "dataset": "yacht", "seed": 0, "B": 5,
        "forecasts": _STEPS[None], "labels": np.zeros((1, 10)), "y": np.zeros((1, 10)),
        "quantiles": _STEPS[None], "method": "ours", "candidate": "paper",
        "params": lambda: calibtut.online.PRESETS["paper"], "n_candidates": 1, "syn_series": 2, "syn_steps": 10,
        "z_forecast": np.array([1.0, 5.0]), "action": np.array([0, 1]), "z": np.array([3.0, 9.0]),
    },
    "calibtut.experiments.drift.gaussian_base_forecasts": {"y": _y, "n_steps": 10},
    "calibtut.experiments.foundations": {
        "a": 4.0, "b": 1.5, "power": 1.2, "n_seeds": 2, "n_bins": 5, "n_grid": 200,
        "draws": lambda: calibtut.experiments.foundations.estimator_draws(50, 5, 4.0, 1.5, 1.2, 2, n_grid=200),
        "truth": {"l1": 0.05, "l2": 0.06},
    },
    # paper 004's U->M rows run on the authors' network and on ours
    "authors_network_vs_paper": {
        "authors": lambda: __import__("pandas").DataFrame(
            {"shift": "U->M", "method": ["None", "IW+Temp"], "ece": [42.4, 7.0], "oce": 0.0, "cls_error": 47.44}),
        "ours": lambda: __import__("pandas").DataFrame(
            {"shift": "U->M", "method": ["None", "IW+Temp"], "ece": [41.5, 27.7], "oce": 0.0, "cls_error": 52.0})},
    "authors_network_tables": {
        "table": lambda: calibtut.experiments.covariate_shift.authors_network_vs_paper(
            __import__("pandas").DataFrame({"shift": "U->M", "method": ["None"], "ece": [42.4], "oce": 0.0,
                                            "cls_error": 47.44}),
            __import__("pandas").DataFrame({"shift": "U->M", "method": ["None"], "ece": [41.5], "oce": 0.0,
                                            "cls_error": 52.0}))},
    # paper 004's network study: one network per recipe is enough to reach the checks
    "network_study_conclusion": {
        "summary": lambda: __import__("pandas").DataFrame(
            {"IW+Temp": [28.0, 9.0], "error_gap": [-40.0, -12.0]},
            index=__import__("pandas").MultiIndex.from_tuples([("ours", 0), ("authors", 0)],
                                                              names=["recipe", "seed"]))},
    # paper 003's claims: the paper's tables and one base/QR pair of ours
    "uci_claims": {
        "paper": lambda: calibtut.experiments.quantile_regularization.paper_numbers(),
        "ours": lambda: __import__("pandas").DataFrame(
            {"model": "dropout", "dataset": "yacht", "method": ["base", "QR"], "calib_error": [10.0, 8.0],
             "rmse": [2.0, 2.1], "calib_error_iso": [9.0, 8.0], "max_lik_iso": [5.0, 6.0]})},
    "calibtut.experiments": {"n_folds": 5, "fold": 0, "datasets": ["yacht"], "folds": [0], "seeds": [0],
                             "dataset": "yacht", "runs": lambda: _runs_table(), "by": "lam", "metrics": "rmse"},
    # Issue 44's foundations: a regressor to refit, prediction sets to score.
    "calibtut.conformal.CrossConformalRegressor": {"estimator": lambda: __import__(
        "sklearn.linear_model", fromlist=["LinearRegression"]).LinearRegression()},
    "calibtut.conformal.cross_conformal_interval": {
        "estimator": lambda: __import__("sklearn.linear_model", fromlist=["LinearRegression"]).LinearRegression(),
        "X_test": _rng.normal(size=(N, 2))},
    "calibtut.metrics.sets": {"y": _labels, "sets": _probs > 0.3},
    # seeded splits (issue 46 moved them from the experiments layer)
    "calibtut.data.splits.kfold_indices": {"n": 10, "n_folds": 5, "fold": 0},
    "calibtut.data.splits.calibration_parts": {"n": 20, "seed": 0},
    # summaries of repeated runs (issue 46 moved them from the experiments layer)
    "calibtut.stats.mean_lower_bound": {"values": _y},
    "calibtut.stats.summarize_runs": {"runs": lambda: _runs_table(), "by": "lam", "metrics": "rmse"},
    # Paper 001 (Venn-ADMIT): conformal classification sets, Venn predictors, nearest neighbours.
    "calibtut.conformal.OneSidedConformalRegressor": {"cal_quantiles": _quantiles, "test_quantiles": _quantiles},
    "calibtut.conformal.one_sided_cqr_quantiles": {"cal_quantiles": _quantiles, "test_quantiles": _quantiles},
    "calibtut.conformal.scores.class_scores": {"score": "raps"},
    "calibtut.recalibration.venn.venn_abers": {"cal_y": np.arange(N) % 2},
    "calibtut.recalibration.venn.venn_multiprobabilities": {"cal_y": _labels},
    "calibtut.recalibration.venn.venn_probability_bounds": {"cal_y": _labels},
    "calibtut.recalibration.VennABERS": {"cal_y": np.arange(N) % 2},
    "calibtut.selective.neighbors": {"queries": lambda: torch.zeros(5, 2), "reference": lambda: torch.ones(N, 2),
                                     "k": 3},
    "calibtut.selective.knn_approximation": {
        "n_classes": 3, "model": lambda: calibtut.selective.KNNApproximation(3),
        "distances": lambda: torch.rand(N, 4), "neighbor_logits": lambda: torch.randn(N, 4, 3),
        "neighbor_labels": lambda: torch.arange(4 * N).reshape(N, 4) % 3, "teacher_logits": lambda: torch.randn(N, 3),
        "epochs": 1, "knn_prediction": np.arange(N) % 2, "neighbor_predictions": np.zeros((N, 4)),
        "nearest_distance": _rng.uniform(size=N), "correct": np.ones(N, dtype=bool),
    },
    "calibtut.selective.knn_approximation.fit_localizer": {"model": lambda: calibtut.selective.Localizer(),
                                                           "support_logits": lambda: torch.randn(4, 3)},
    "calibtut.selective.pipeline": {
        "n_neighbors": 5, "train_exemplars": _rng.normal(size=(N, 2)), "train_logits": _rng.normal(size=(N, 2)),
        "train_labels": np.arange(N) % 2, "exemplars": _rng.normal(size=(N, 2)), "labels": np.arange(N) % 2},
    "ADMIT": {"kappa": 9},
    "VennADMIT": {"kappa": 9},
    "admitted_accuracy_by_class": {"admitted": np.arange(N) % 2 == 0, "predictions": _labels, "n_classes": 3},
    "calibtut.models.memory_head": {
        "n_features": 4, "n_classes": 2, "model": lambda: calibtut.models.memory_head.MemoryHead(4, 2, hidden=3),
        "features": np.ones((N, 4)), "labels": np.arange(N) % 2, "epochs": 1,
    },
    "calibtut.models.protein_cnn": {
        "model": lambda: calibtut.models.protein_cnn.ProteinCNN(hidden=3, channels=4, width=3),
        "sequences": ["ACDE", "FG"], "labels": [np.array([0, 1, 2, 0]), np.array([1, 1])], "epochs": 1,
    },
    "calibtut.models.token_cnn": {
        "model": lambda: calibtut.models.token_cnn.TokenCNN(10, 2, hidden=3, channels=4, width=3),
        "n_tokens": 10, "n_classes": 2, "tokens": [np.array([1, 2, 3, 9]), np.array([4, 5])],
        "labels": [np.array([0, 1, 1, 0]), np.array([1, 0])], "sentences": [["a", "b"], ["a"]], "epochs": 1,
    },
    "calibtut.models.sentence_embeddings": {
        "texts": ["a", "b"], "model_id": "toy", "encode": lambda: (lambda batch: np.ones((len(batch), 2))),
        "cache_dir": lambda: __import__("tempfile").mkdtemp(),
    },
    "calibtut.models.exemplar": {"n_inputs": 3, "model": lambda: calibtut.models.exemplar.ExemplarCNN(3, K, filters=2),
                                 "data": lambda: _token_states()},
    "calibtut.models.exemplar.fit_exemplar_cnn": {"epochs": 1},
    "calibtut.models.exemplar.minmax_global_loss": {
        "logits": lambda: torch.zeros(N, K), "token_scores": lambda: torch.zeros(N, 2, K),
        "mask": lambda: torch.ones(N, 2, dtype=torch.bool), "y": lambda: torch.arange(N) % K},
    "calibtut.models.sentence_embeddings.token_states": {"encode_tokens": lambda: _encode_tokens},
    "calibtut.models.sentence_embeddings.cached_token_states": {"encode_tokens": lambda: _encode_tokens},
    "calibtut.models.sentence_embeddings.TokenizedTexts": {"tokenizer": lambda: _ToyTokenizer()},
    "calibtut.experiments.venn_admit.va_rows": {"train": _va_part(60), "cal": _va_part(200), "test": _va_part(30)},
    "calibtut.experiments.venn_admit": {
        "accuracy": 0.85, "pool": lambda: _tiny_knn_pool(), "n_seeds": 1, "n_cal": 100, "n_mc": 50, "n_vp": 50,
        "runs": lambda: _singleton_runs(), "hard_share": 0.05, "across": 0.5,
    },
    "plot_admitted_accuracy": {
        "table": lambda: __import__("pandas").DataFrame({"method": ["ADMIT"], "class": ["0"], "metric": ["accuracy"],
                                                         "paper": [0.9], "ours (ci)": [0.8]}),
        "admitted": lambda: __import__("pandas").Series(
            [10], index=__import__("pandas").MultiIndex.from_tuples([("ADMIT", "0")], names=["method", "class"])),
        "methods": ["ADMIT"], "classes": {"0": "class 0"}},
    "accuracy_gap_sd": {"pooled": lambda: __import__("pandas").DataFrame({"n": [10], "accuracy": [0.8]})},
    "admitted_accuracy_gap": {"rows": lambda: __import__("pandas").DataFrame(
        {"method": "V", "sequence": [1, 2], "n": [30, 30], "correct": [27, 26], "category_rsqrt": [3.0, 3.0]})},
    "claims_vs_paper": {"ci": lambda: __import__("pandas").DataFrame(
        {"table": "singletons", "dataset": "sentiment", "seed": 0, "method": ["Venn-ADMIT", "RAPS_size"],
         "class": ["0", "all"], "n": 10, "accuracy": 0.9, "share": 0.1, "n_test": 100})},
    "plot_claim_accuracy": {
        "cells": lambda: __import__("pandas").DataFrame({"dataset": "A", "method": ["APS"], "class": ["0"],
                                                         "metric": "accuracy", "paper": [0.9], "ours (full)": [0.8]}),
        "methods": ["APS"], "classes": {"A": {"0": "class 0"}}},
    "category_accuracy": {"points": lambda: __import__("pandas").DataFrame(
        {"split": "vp", "label": np.arange(40) % 2, "knn_pred": np.arange(40) % 2, "q": 25})},
    "representation_signals": {"signals": lambda: {"A": __import__("pandas").DataFrame(
        {"dataset": "sentiment", "by": "true", "class": ["0", "1", "all"], "n": 5, "accuracy": 0.9, "share": 0.1,
         "separation": 0.5, "error_auroc": 0.5, "qk_share_cal": 0.8, "qk_share_test": 0.8,
         "qk_accuracy_cal_pred0": 0.9, "qk_accuracy_cal_pred1": 0.9})}},
    "admissions_by_run": {"runs": lambda: __import__("pandas").DataFrame(
        {"run": [0, 1], "method": "m", "class": 0, "admitted": [20, 10], "correct": [19, 9]}), "method": "m"},
    # chapter 9 (calibtut.experiments.venn_admit.protection): small tables of the shapes its functions return
    "protection_summary": {"admissions": lambda: __import__("pandas").DataFrame(
        {"run": 0, "shift": "exchangeable", "strength": 0.0, "method": "m", "by": "true", "class": [0, 1],
         "n": 50, "admitted": 20, "correct": 19})},
    "protection_side_by_side": {"summaries": lambda: {"ci": __import__("pandas").DataFrame(
        {"shift": ["exchangeable", "boundary"], "strength": [0.0, 1.0], "method": "Venn-ADMIT", "by": "true",
         "class": "all", "share": [0.3, 0.1], "accuracy": [0.99, 0.95], "band": 0.88, "holds": True})}},
    "plot_accuracy_share": {"summary": lambda: __import__("pandas").DataFrame(
        {"shift": ["exchangeable", "boundary"], "strength": [0.0, 1.0], "method": "m", "by": "true",
         "class": "all", "share": [0.3, 0.1], "accuracy": [0.99, 0.95]}), "methods": ["m"], "shifts": ["boundary"]},
    "plot_protection_map": {"world_map": lambda: __import__("pandas").DataFrame(
        {"shift": "boundary", "strength": [0.5, 1.0], "separation": [0.6, 0.8], "qk_drop": [0.0, 0.05],
         "accuracy": [0.97, 0.9]})},
    "separation_signals": {
        "cal": lambda: __import__("calibtut.selective", fromlist=["KNNFeatures"]).KNNFeatures(
            np.tile([[0.8, 0.2]], (40, 1)), np.arange(40) % 2, np.full(40, 25), _rng.uniform(size=40)),
        "test": lambda: __import__("calibtut.selective", fromlist=["KNNFeatures"]).KNNFeatures(
            np.tile([[0.8, 0.2]], (40, 1)), np.arange(40) % 2, np.full(40, 25), _rng.uniform(size=40))},
    "sentiment_signals": {"points": lambda: __import__("pandas").DataFrame(
        {"split": np.repeat(["mc", "vp", "test"], [150, 150, 100]), "label": np.arange(400) % 2,
         "p0": np.where(np.arange(400) % 2, 0.2, 0.8), "p1": np.where(np.arange(400) % 2, 0.8, 0.2), "q": 25,
         "d": _rng.uniform(size=400)}), "kappa": 9},

    "table3_by_q_and_distance": {"points": lambda: __import__("pandas").DataFrame(
        {"split": "mc", "label": np.arange(N) % 2, "knn_pred": np.arange(N) % 2, "p0": 0.7, "p1": 0.3,
         "q": np.arange(N) % 26, "d": _rng.uniform(size=N)})},
}

#: Public names that are result records (returned by the library, never
#: built by a user from numbers), so they have no arguments to validate.
RESULT_RECORDS = {"FitHistory", "DataFile", "Collection", "RegressionData", "ForecastStreams", "DriftStream"}
# Paper 004: the exact selection shift, the terms of Theorem 1, and what fit_dann did.
RESULT_RECORDS |= {"SelectionShift", "BoundTerms", "DANNHistory"}
# The drift benchmark's streams.
RESULT_RECORDS |= {"BenchmarkStream"}
# Paper 001: what fit_knn_approximation did.
RESULT_RECORDS |= {"KNNFitHistory"}
# Paper 002: a row of Table 1 in the dataset registry.
RESULT_RECORDS |= {"StudyDataset"}
# A profile's settings, built by calibtut.run.settings.
RESULT_RECORDS |= {"Settings"}

_NUMERIC_TYPE = re.compile(r"\b(float|int|integer)\b")
_ARRAY_TYPE = re.compile(r"array|tensor|Tensor|sequence|tuple")
_STRING_TYPE = re.compile(r"str\b")
#: "float or array_like", "int or None": a single number is one of the accepted forms.
_SCALAR_FIRST = re.compile(r"^(?:None,? or |None, )?(?:float|int)\b")
_SEQUENCE_TYPE = re.compile(r"(?:tuple|sequence) of (?:float|int)")
#: Parameters that are never a single number (handled by their own checks and tests).
NOT_SCALAR = {"seed", "levels"}
_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
_MISSING = object()


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


@dataclasses.dataclass(frozen=True)
class Target:
    """A public function, a class's constructor, or a method of a class (called on a fitted instance)."""

    qualname: str  # where it is listed: module of the ``__all__`` + name (+ ``.method``)
    obj: object  # the function or class; for a method, the function defined on the class
    owner: type | None = None
    method: str | None = None

    @property
    def defined(self):
        """Dotted path of the definition (``calibtut.conformal.sets.split_conformal_sets``)."""
        if self.owner is not None:
            return f"{self.owner.__module__}.{self.owner.__qualname__}.{self.method}"
        return f"{self.obj.__module__}.{self.obj.__qualname__}"

    @property
    def aliases(self):
        return (self.qualname, self.defined)

    @functools.cached_property
    def parameters(self):
        params = list(inspect.signature(self.obj).parameters.values())
        return params[1:] if self.owner is not None else params

    @property
    def names(self):
        return [p.name for p in self.parameters]

    def keys(self, exact=False):
        """Keys of ``VALID_FOR`` that apply, the most specific first; ``exact``: only those naming
        the callable itself (or, for a method, its class), not its module."""
        keys = [self.qualname, self.defined]
        if self.owner is None:
            keys.append(self.obj.__name__)
        else:
            keys += [path.rsplit(".", 1)[0] for path in keys] + [f"{self.owner.__name__}.{self.method}",
                                                                 self.owner.__name__]
        if not exact:
            for path in (self.defined, self.qualname):
                parts = path.split(".")
                keys += [".".join(parts[:i]) for i in range(len(parts) - 1, 1, -1)]
        return keys

    def fit_target(self):
        return Target(self.qualname.rsplit(".", 1)[0] + ".fit", self.owner.fit, self.owner, "fit")

    def constructor(self):
        return Target(self.qualname.rsplit(".", 1)[0], self.owner)

    @functools.cached_property
    def classifier(self):
        """Whether it (or its class's ``fit``) takes class probabilities or logits."""
        names = list(self.names)
        if self.owner is not None and hasattr(self.owner, "fit"):
            names += list(inspect.signature(self.owner.fit).parameters)
        return any(_is_probs(n) or n == "logits" or n.endswith("_logits") for n in names)

    @functools.cached_property
    def knows_n_classes(self):
        names = list(self.names)
        if self.owner is not None:
            names += list(inspect.signature(self.owner).parameters)
        return self.classifier or "n_classes" in names

    def call(self, **given):
        kwargs = _valid_kwargs(self, given)
        if self.owner is None:
            result = self.obj(**kwargs, **given)
            if isinstance(result, Estimator):
                # an estimator stores its hyper-parameters unchanged and checks them at fit
                fit = Target(f"{self.qualname}.fit", self.obj.fit, self.obj, "fit")
                result.fit(**_valid_kwargs(fit, {}))
            return result
        instance = self.owner(**_valid_kwargs(self.constructor(), {}))
        if self.method != "fit" and hasattr(instance, "fit"):
            fit = self.fit_target()
            # an option exercised on a prediction method brings its fit option (calibration weights)
            needed = {FIT_OPTION.get(name, name) for name in given}
            options = {name: OPTIONAL[name] for name in needed if name in OPTIONAL and name in fit.names}
            instance.fit(**_valid_kwargs(fit, options), **options)
        return getattr(instance, self.method)(**kwargs, **given)


def _override(target, name, exact=False):
    """The ``VALID_FOR`` value of ``name`` for ``target`` (uncalled), else ``_MISSING``."""
    for key in target.keys(exact):
        if name in VALID_FOR.get(key, {}):
            return VALID_FOR[key][name]
    return _MISSING


def _raw_value(target, name):
    value = _override(target, name)
    if value is _MISSING and target.classifier:
        value = CLASSIFICATION.get(name, _MISSING)
    if value is _MISSING:
        value = VALID.get(name, _MISSING)
    return value


def _valid_value(target, name):
    value = _raw_value(target, name)
    if value is _MISSING:
        pytest.fail(f"{target.qualname}: no valid value for its required argument {name!r}; add one to VALID")
    return value() if callable(value) and not isinstance(value, type) else value


def _valid_kwargs(target, given):
    return {
        p.name: _valid_value(target, p.name)
        for p in target.parameters
        if p.name not in given and p.kind not in _VARIADIC
        and (p.default is p.empty or _override(target, p.name, exact=True) is not _MISSING)
    }


def _public_modules():
    """Every public module, and the names and errors of those that fail to import."""
    modules, broken = [], {}
    for info in pkgutil.walk_packages(calibtut.__path__, "calibtut.", onerror=lambda name: None):
        if any(p.startswith("_") for p in info.name.split(".")[1:]):
            continue
        try:
            modules.append(importlib.import_module(info.name))
        except Exception as exc:  # reported by test_every_public_module_imports, the walk goes on
            broken[info.name] = f"{type(exc).__name__}: {exc}"
    return modules, broken


@functools.cache
def _walk():
    return _public_modules()


def _is_generated_record(cls):
    """A NamedTuple without a ``__new__`` of its own: a plain record, nothing to validate."""
    code = getattr(cls.__new__, "__code__", None)
    return code is None or code.co_filename.startswith("<")


@functools.cache
def _public_targets():
    """Every public function, class constructor and contract method, each once."""
    seen = {}
    for module in _walk()[0]:
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name, None)
            if not (inspect.isfunction(obj) or inspect.isclass(obj)) or id(obj) in seen:
                continue
            if inspect.isclass(obj) and (name in RESULT_RECORDS or inspect.isabstract(obj)
                                         or issubclass(obj, (BaseException, enum.Enum))
                                         or (issubclass(obj, tuple) and _is_generated_record(obj))):
                continue
            seen[id(obj)] = [Target(f"{module.__name__}.{name}", obj)]
            if inspect.isclass(obj):
                seen[id(obj)] += [
                    Target(f"{module.__name__}.{name}.{method}", getattr(obj, method), obj, method)
                    for method in sorted(dir(obj))
                    if WALKED_METHODS.match(method) and inspect.isfunction(getattr(obj, method))
                ]
    return tuple(sorted((t for targets in seen.values() for t in targets), key=lambda t: t.qualname))


def _documented_types(obj):
    """{parameter: numpydoc type} from the ``Parameters`` section of the docstring."""
    doc = inspect.getdoc(obj) or ""
    section = re.search(r"^Parameters\n-+\n(.*?)(?:^\w[\w ]*\n-+\n|\Z)", doc, flags=re.S | re.M)
    types = {}
    if section:
        for names, kind in re.findall(r"^(\w+(?:, \w+)*) : (.+)$", section.group(1), flags=re.M):
            for name in names.split(", "):
                types[name] = kind
    return types


def _locally_numeric(target):
    """Parameters documented as scalars (float/int) or with a real default."""
    types = _documented_types(target.obj)
    found = []
    for p in target.parameters:
        if p.kind in _VARIADIC or p.name in NOT_SCALAR:
            continue
        default_numeric = isinstance(p.default, (int, float)) and not isinstance(p.default, bool)
        kind = types.get(p.name, "")
        scalar_type = _NUMERIC_TYPE.search(kind) and not _ARRAY_TYPE.search(kind)
        if default_numeric or scalar_type or _SCALAR_FIRST.match(kind):
            found.append(p.name)
    return found


@functools.cache
def _numeric_vocabulary():
    return frozenset(name for target in _public_targets() for name in _locally_numeric(target))


def _numeric_parameters(target):
    """Numeric parameters of ``target``: its own, plus any parameter whose name is a
    numeric parameter elsewhere in the API (unless documented here as an array or a
    string: ``a, b : str`` are method labels in one place, Beta parameters in another)."""
    vocabulary = _numeric_vocabulary()
    types = _documented_types(target.obj)
    own = _locally_numeric(target)
    return [name for name in target.names
            if name in own or (name in vocabulary and not _ARRAY_TYPE.search(types.get(name, ""))
                               and not _STRING_TYPE.match(types.get(name, "")))]


def _sequence_parameters(target):
    """Parameters documented as a tuple or sequence of numbers (``hidden``, ``bounds``, ...)."""
    types = _documented_types(target.obj)
    return [name for name in target.names if _SEQUENCE_TYPE.search(types.get(name, ""))]


def _param(target, key, *values):
    return pytest.param(target, *values, id=f"{key}={values[-1]}")


def _cases():
    cases = []
    for target in _public_targets():
        for name in _numeric_parameters(target):
            keys = {f"{alias}.{name}" for alias in target.aliases}
            bad = [math.nan] if keys & ALLOW_INF else [math.nan, math.inf, -math.inf]
            out = [OUT_OF_RANGE[k] for k in keys if k in OUT_OF_RANGE]
            if out:
                bad.append(out[0])
            elif not keys & UNBOUNDED:
                bad.append(OUT_OF_RANGE_BY_NAME.get(name, -1))
            cases += [_param(target, f"{target.qualname}.{name}", name, value) for value in bad]
    return cases


def _sequence_cases():
    """A bad entry (NaN, inf, -inf, -1) in each numeric sequence parameter, the rest valid."""
    cases = []
    for target in _public_targets():
        for name in _sequence_parameters(target):
            default = inspect.signature(target.obj).parameters[name].default
            valid = default if default is not inspect.Parameter.empty else _valid_value(target, name)
            valid = np.atleast_1d(valid).tolist()
            for value in (math.nan, math.inf, -math.inf, -1):
                cases.append(_param(target, f"{target.qualname}.{name}", name, tuple([value] + valid[1:])))
    return cases


def _level_cases():
    cases = []
    for target in _public_targets():
        if "levels" in target.names:
            bad = [[0.25, 0.75, 0.5], [0.25, 0.25, 0.5], [-0.1, 0.5, 0.75], [0.25, 0.5, 1.5], [0.25, 0.5, math.nan]]
            if set(target.aliases) & WORKING_LEVELS:
                bad = [[0.25, 0.5, math.nan], [0.25, 0.5, math.inf]]
            elif not set(target.aliases) & CLOSED_LEVEL_GRIDS:
                bad += [[0.0, 0.5, 0.75], [0.25, 0.5, 1.0]]
            cases += [_param(target, f"{target.qualname}.levels", value) for value in bad]
    return cases


def _is_probs(name):
    return name == "probs" or name.endswith("_probs")


def _is_labels(name, target):
    return name == "labels" or name.endswith("_labels") or (target.classifier and name in CLASSIFICATION)


def _is_non_negative(name):
    return name in ("d", "distances") or name.endswith("_d") or "distance" in name or "weight" in name


def _array_parameters(target):
    """(name, valid numpy array) of every array parameter the walk gives a value."""
    found = []
    for p in target.parameters:
        if p.kind in _VARIADIC:
            continue
        value = _raw_value(target, p.name)
        if p.default is not p.empty and _override(target, p.name, exact=True) is _MISSING:
            value = OPTIONAL.get(p.name, _MISSING)
        if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
            found.append((p.name, value))
    return found


def _with_first(valid, entry):
    bad = valid.astype(type(entry)) if isinstance(entry, float) else valid.copy()
    bad.flat[0] = entry
    return bad


def _array_cases():
    """(kind of check, target, name, bad value) for every array parameter."""
    cases = []
    for target in _public_targets():
        for name, valid in _array_parameters(target):
            bad = {"complex": valid + 1j, "strings": valid.astype(str)}
            if _is_probs(name) and valid.ndim == 2:
                bad["rows not summing to 1"] = valid * 0.9
            if _is_labels(name, target) and valid.ndim == 1 and valid.dtype.kind in "iu":
                bad["fractional label"] = _with_first(valid, 0.5)
                bad["negative label"] = _with_first(valid, -1)
                if target.knows_n_classes:
                    bad["label out of range"] = _with_first(valid, int(valid.max()) + 1)
            if _is_non_negative(name):
                bad["negative entry"] = _with_first(valid, -1.0)
            cases += [pytest.param(check, target, name, value, id=f"{target.qualname}.{name}: {check}")
                      for check, value in bad.items()]
    return cases


@functools.cache
def _valid_call_error(target, name):
    """The error of the call with valid values (``name`` set to its valid value), or None."""
    optional = next(p for p in target.parameters if p.name == name).default is not inspect.Parameter.empty
    given = {name: OPTIONAL[name]} if optional and _override(target, name, exact=True) is _MISSING else {}
    try:
        target.call(**given)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def _names(name, message):
    return re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", message) is not None


def _shown(value):
    return str(float(value)) if isinstance(value, float) else str(value)


@pytest.mark.parametrize(("target", "name", "value"), _cases())
def test_numeric_parameter_rejects_bad_value(target, name, value):
    with pytest.raises((ValueError, TypeError)) as info:
        target.call(**{name: value})
    message = str(info.value)
    assert name in message, f"{target.qualname}({name}={value}): the error does not name {name!r}: {message}"
    assert _shown(value) in message, f"{target.qualname}({name}={value}): the error does not show the value: {message}"


@pytest.mark.parametrize(("target", "name", "value"), _sequence_cases())
def test_numeric_sequence_rejects_a_bad_entry(target, name, value):
    with pytest.raises((ValueError, TypeError), match=name):
        target.call(**{name: value})


@pytest.mark.parametrize(("target", "value"), _level_cases())
def test_levels_must_increase_strictly_inside_unit_interval(target, value):
    with pytest.raises((ValueError, TypeError), match="levels"):
        target.call(levels=np.array(value))


@pytest.mark.parametrize(("check", "target", "name", "value"), _array_cases())
def test_array_parameter_rejects_bad_entries(check, target, name, value):
    error = _valid_call_error(target, name)
    if error is not None and name in OPTIONAL:
        pytest.skip(f"{target.qualname} refuses {name} in the walk's valid call: {error}")
    assert error is None, f"{target.qualname}: the walk's valid call fails ({error}); fix its VALID values"
    expected = TypeError if check in ("complex", "strings") else (ValueError, TypeError)
    try:
        target.call(**{name: value})
    except expected as exc:
        assert _names(name, str(exc)), f"{target.qualname}({name}: {check}): the error does not name {name!r}: {exc}"
    except Exception as exc:
        pytest.fail(f"{target.qualname}({name}: {check}) raised {type(exc).__name__} instead of a clear "
                    f"{'TypeError' if expected is TypeError else 'ValueError'} naming {name!r}: {exc}")
    else:
        pytest.fail(f"{target.qualname} accepted {name} with {check}")


def test_every_array_check_applies_somewhere():
    checks = {case.values[0] for case in _array_cases()}
    assert checks == {"complex", "strings", "rows not summing to 1", "fractional label", "negative label",
                      "label out of range", "negative entry"}


def test_the_walker_finds_the_public_api():
    targets = _public_targets()
    assert len({t.qualname for t in targets if t.owner is None}) > 80
    covered = {f"{alias}.{name}" for t in targets for name in _numeric_parameters(t) for alias in t.aliases}
    # The three cases of issue 10, found without being named anywhere above.
    assert {"calibtut.regularizers.entropy.spacing_entropy.eps", "calibtut.online.theorem1_bound.beta",
            "calibtut.online.ACICalibrator.gamma"} <= covered
    # Classes are walked through the methods of the estimator contract too.
    assert {"calibtut.recalibration.TemperatureScaling.fit", "calibtut.recalibration.QuantileRecalibrator.transform",
            "calibtut.data.Standardizer.transform"} <= {t.qualname for t in targets}


def test_allowed_infinity_is_documented():
    for key in sorted(ALLOW_INF):
        qualname, name = key.rsplit(".", 1)
        module, attr = qualname.rsplit(".", 1)
        obj = getattr(importlib.import_module(module), attr)
        kind = _documented_types(obj).get(name, "")
        doc = inspect.getdoc(obj) or ""
        described = re.search(rf"^{name} :.*(?:\n    .*)*", doc, flags=re.M)
        assert "inf" in kind or (described and "inf" in described.group(0)), f"{key} accepts inf without saying so"


def test_every_public_module_imports():
    broken = _walk()[1]
    assert not broken, f"public modules that fail to import (the walker cannot see them): {broken}"


def test_every_public_module_declares_all():
    missing = [m.__name__ for m in _walk()[0] if not hasattr(m, "__all__")]
    assert not missing, f"public modules without __all__ (the walker cannot see them): {missing}"


def test_scipy_distribution_with_a_nonfinite_parameter_is_rejected_where_passed():
    from scipy import stats

    from calibtut.online import ConformalCalibrator, DriftCalibrator

    scale = np.ones((1, 5))
    scale[0, 2] = np.nan
    with pytest.raises(ValueError, match=r"forecasts has a NaN or infinite parameter \(scale\)"):
        DriftCalibrator(_levels, B=5.0).run(stats.norm(np.zeros((1, 5)), scale), np.zeros((1, 5)))
    calibrator = ConformalCalibrator(_levels, B=5.0).reset(1)
    with pytest.raises(ValueError, match=r"forecast has a NaN or infinite parameter \(loc\)"):
        calibrator.predict(stats.norm([np.inf], [1.0]))
    with pytest.raises(ValueError, match=r"forecast has a NaN or infinite parameter \(df\)"):
        calibrator.predict(stats.t([np.nan], 0.0, 1.0))
    # A finite distribution is accepted and gives finite quantiles.
    assert np.all(np.isfinite(calibrator.predict(stats.t([3.0], 0.0, 1.0))))


@pytest.mark.parametrize(("name", "bad", "error"), [
    ("logits", lambda t: t.numpy(), TypeError), ("logits", lambda t: t + 1j, TypeError),
    ("token_scores", lambda t: t.int(), TypeError), ("mask", lambda t: t.int(), TypeError),
    ("y", lambda t: t.float(), TypeError), ("y", lambda t: t - 1, ValueError), ("y", lambda t: t + 1, ValueError),
    ("y", lambda t: t[1:], ValueError),
])
def test_exemplar_loss_refuses_bad_tensors(name, bad, error):
    """The walk gives minmax_global_loss tensors (its arrays are not numpy), so its array checks are here."""
    from calibtut.models.exemplar import minmax_global_loss

    args = {name: value() for name, value in VALID_FOR["calibtut.models.exemplar.minmax_global_loss"].items()}
    assert torch.isfinite(minmax_global_loss(**args))
    args[name] = bad(args[name])
    with pytest.raises(error, match=rf"\b{name}\b"):
        minmax_global_loss(**args)
