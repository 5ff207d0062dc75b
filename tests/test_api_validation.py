"""Every numeric parameter of the public API rejects NaN, +-inf and out-of-range values.

The test walks every public module of ``calibtut`` (any module whose dotted
name has no part starting with ``_``), takes every function and class in its
``__all__`` and finds the numeric parameters of each from the numpydoc
``Parameters`` section (a type naming ``float`` or ``int``) and from the
signature (a default that is a real number). Each such parameter is then set,
one at a time, to NaN, +inf, -inf and an out-of-range value while the other
arguments stay valid, and the call must raise a ``ValueError`` or
``TypeError`` whose message names the parameter and shows the value. A new
public function or constructor is covered as soon as it is listed in an
``__all__``; if the walker cannot build a valid call for it, the test says
which argument needs an entry in ``VALID``.

Parameters named ``levels`` (quantile levels) must in addition reject levels
that are not strictly increasing or not strictly inside (0, 1).
"""

from __future__ import annotations

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

N, K = 40, 3
_rng = np.random.default_rng(0)
_y = _rng.normal(size=N)
_probs = _rng.dirichlet(np.ones(3), size=N)
_levels = np.array([0.25, 0.5, 0.75])
_quantiles = np.stack([np.full(N, -0.67), np.zeros(N), np.full(N, 0.67)], axis=1)


def _model():
    from calibtut.models import GaussianMLP

    return GaussianMLP(2, hidden=(4,), seed=0)


#: Valid values by parameter name (callables are called to build a fresh value).
VALID = {
    "n": 100,
    "k": 10,
    "x": _rng.uniform(size=N),
    "level": 0.9,
    "scores": np.abs(_y),
    "alpha": 0.1,
    "cal_pred": _y,
    "cal_y": _y + 0.1,
    "test_pred": _y[:5],
    "n_cal": 100,
    "n_test": 50,
    "confidence": _probs.max(axis=1),
    "correct": (_y > 0).astype(float),
    "edges": np.linspace(0, 1, 5),
    "count": np.array([10, 20]),
    "mean_confidence": np.array([0.3, 0.8]),
    "probs": _probs,
    "labels": np.arange(N) % 3,
    "pit": _rng.uniform(size=N),
    "y": _y,
    "mean": np.zeros(N),
    "std": np.ones(N),
    "weights": np.full((N, 2), 0.5),
    "means": np.zeros((N, 2)),
    "stds": np.ones((N, 2)),
    "quantiles": _quantiles,
    "levels": _levels,
    "lower": np.full(N, -1.0),
    "upper": np.full(N, 1.0),
    "in_features": 2,
    "X": _rng.normal(size=(N, 2)),
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

def _paper_table():
    import pandas as pd

    return pd.DataFrame({"m": ["a", "b"], "value": [1.0, 2.0]})


def _runs_table():
    import pandas as pd

    return pd.DataFrame({"lam": [0, 1], "rmse": [1.0, 2.0]})


def _study_rows():
    """Rows shaped like calibtut.experiments.regression_study.run_study_task's (two runs, one dataset)."""
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
    """A small pool of calibtut.experiments.venn_admit_theory.synthetic_knn_pipeline (built once)."""
    from calibtut.experiments.venn_admit_theory import synthetic_knn_pipeline

    return synthetic_knn_pipeline(0, n_train=300, n_pool=200, n_knn=40, epochs=1)


def _singleton_runs():
    import pandas as pd

    return pd.DataFrame({"method": ["split"], "class": [0], "n": [10], "covered": [9], "singletons": [8],
                         "correct_singletons": [7]})


#: Valid arguments of the paper 002 modules (rows of run_study_task and the names they take).
_STUDY_VALID = {
    "datasets": ["Yacht"], "runs": [0], "bases": ["mix-nll"], "dataset": "Yacht", "metric": "pce",
    "rows": lambda: _study_rows(), "results": lambda: _study_rows(), "test_table": lambda: _study_rows(),
    "base": "mix-nll", "values": (0.1, 1.0),
}

#: Valid arguments that differ from ``VALID`` for one callable (qualified name -> {parameter: value}).
VALID_FOR = {
    "calibtut.conformal.intervals.SplitConformalRegressor": {},
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
    "calibtut.models.predict": {},
    "calibtut.models.fit_ensemble": {"ensemble": lambda: _ensemble()},
    "calibtut.data.bins_to_quantiles": {
        "lower": np.array([-np.inf, 0.0, 1.0]),
        "upper": np.array([0.0, 1.0, np.inf]),
        "probability": np.array([0.2, 0.5, 0.3]),
    },
    "calibtut.plots.plot_calibration_maps": {"maps": {"identity": lambda u: u}},
    "calibtut.plots.plot_predictive_band": {"x": np.arange(N, dtype=float)},
    "calibtut.plots.plot_quantile_paths": {"quantiles": np.zeros((10, K)) + [-1.0, 0.0, 1.0]},
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
    "calibtut.stats": {
        "pits": {"a": [_rng.uniform(size=N)]},
        "pvalues": [0.001, 0.02, 0.004],
        "lambdas": [0.0, 1.0],
        "val_score": [1.0, 1.05],
        "val_pce": [0.1, 0.05],
        "values": lambda: _method_table(),
        "effects": lambda: _method_table(),
    },
    "calibtut.stats.pce_study_test": {"n_sim": 100},
    **{f"calibtut.experiments.regression_study{part}": _STUDY_VALID
       for part in ("", "_tables", "_figures", "_ablations", "_claims", "_sqr_forms")},
    "calibtut.experiments.study_cost": {"rows": lambda: _study_rows().assign(seconds=60.0), "n_runs": 5, "workers": 2},
    "calibtut.experiments.penalty_optima": {
        "curve": lambda: calibtut.experiments.penalty_optima.qr_scale_curve(64, (8,), [0.9, 1.0], 1, "hard"),
        "spacings": (8,), "scales": [0.9, 1.0], "seeds": 1, "sort": "hard", "level": 0.9, "batch": 16,
        "batches": (16,), "levels": (0.05, 0.95), "steps": 3, "burn_in": 1,
    },
    "calibtut.experiments.venn_admit_theory": {
        "accuracy": 0.85, "pool": lambda: _tiny_knn_pool(), "n_seeds": 1, "n_cal": 100, "n_mc": 50, "n_vp": 50,
        "runs": lambda: _singleton_runs(), "hard_share": 0.05, "across": 0.5,
    },
    "calibtut.data.regression_study": {"frame": lambda: _method_table(), "X": lambda: _method_table(), "run": 0},
    "calibtut.run.progress.SweepProgress": {"total": 4, "done": 1, "desc": "demo", "bar": False, "slots": 2},
    "calibtut.run.recheck.recheck": {"store": "missing.jsonl"},  # bad arguments are refused before it is read
    "calibtut.online.theorem1_bound": {"delta": 0.1},
    "calibtut.online.spring_bound_check": {"quantiles": np.zeros((10, K)) + [-1.0, 0.0, 1.0],
                                           "labels": np.zeros(10), "delta": 0.1},
    "calibtut.online.interval_likelihood": {"quantiles": np.zeros((10, K)) + [-1.0, 0.0, 1.0],
                                            "labels": np.zeros(10)},
    "calibtut.online": {"labels": np.zeros((1, 10)), "quantiles": np.zeros((1, 10, K)) + [-1.0, 0.0, 1.0]},
    "calibtut.online.PIDController": {"n_series": 1},
    "calibtut.online.RegretCalibrator": {"lower": -3.0, "upper": 3.0},
    "calibtut.online.drift_offsets": {"kind": "jump"},
    "calibtut.run.paper_vs_ours": {"paper": lambda: _paper_table(), "ours": lambda: _paper_table(), "on": "m"},
    "calibtut.run.sweep": {"tasks": [{"seed": 0}], "fn": lambda: _square_task, "progress": False},
    "calibtut.run.sweep.summarize_entries": {"entries": [{"seconds": 1.0, "finished": "2026-01-01T00:00:00"}]},
    "calibtut.online.apply_drift": {"kind": "jump", "labels": np.zeros(10)},
    "calibtut.online.drifting_gaussian_stream": {"kind": "jump"},
    "calibtut.online.adversarial_labels": {
        "calibrator": lambda: calibtut.online.OriginalForecast(_levels, B=5.0),
        "forecasts": np.array([[-1.0, 0.0, 1.0]]),
        "n_steps": 10,
    },
    "calibtut.online.conformal_pit_levels": {"levels": _levels},
    "calibtut.data.uci_split": {"split": 0},
    "calibtut.models.feature_range_eps": {"X": lambda: torch.zeros(N, 2)},
    "calibtut.conformal": {"cal_scores": np.abs(_y), "cal_weights": np.ones(N), "test_weights": np.ones(5),
                           "cal_probs": _probs, "cal_labels": np.arange(N) % 3, "test_probs": _probs[:5]},
    "calibtut.data.resize_images": {"X": np.zeros((2, 16))},
    "calibtut.data.rotate_images": {"X": np.zeros((2, 16))},
    "calibtut.data.texture_images": {"X": np.zeros((2, 16))},
    "calibtut.data.selection_shift": {"feature": np.linspace(-1.0, 1.0, N)},
    "calibtut.models.fit_classifier": {"model": lambda: torch.nn.Linear(2, 3), "y": np.arange(N) % 3,
                                       "epochs": 1, "progress": False},
    "calibtut.shift.DANNHead": {"n_in": 4, "n_classes": 3},
    "calibtut.shift.fit_dann": {
        "model": lambda: calibtut.shift.DANNHead(2, 3, hidden=4, hidden_d=4, seed=0),
        "Z_source": np.zeros((N, 2)), "y_source": np.arange(N) % 3, "Z_target": np.zeros((N, 2)),
        "epochs": 1, "progress": False,
    },
    "calibtut.shift.grl_coefficient": {"step": 10},
    "calibtut.shift.bound_violation_search": {"n_draws": 10},
    "calibtut.shift.discriminator_weights": {"g": np.full(N, 0.5)},
    # The experiments layer: bad numbers are refused before any data is loaded or model trained.
    "calibtut.experiments.drift": {
        "datasets": ["yacht"], "seeds": [0], "dataset": "yacht", "seed": 0, "B": 5,
        "forecasts": np.zeros((1, 10, K)) + [-1.0, 0.0, 1.0], "labels": np.zeros((1, 10)),
        "quantiles": np.zeros((1, 10, K)) + [-1.0, 0.0, 1.0], "method": "ours", "candidate": "paper",
        "params": lambda: calibtut.online.PRESETS["paper"], "n_candidates": 1, "syn_series": 2, "syn_steps": 10,
        "z_forecast": np.array([1.0, 5.0]), "action": np.array([0, 1]), "z": np.array([3.0, 9.0]),
    },
    "calibtut.experiments": {"n_folds": 5, "fold": 0, "datasets": ["yacht"], "folds": [0], "seeds": [0],
                             "dataset": "yacht", "runs": lambda: _runs_table(), "by": "lam", "metrics": "rmse"},
    "calibtut.shift.gaussian_bound_terms": {"shift": lambda: calibtut.shift.GaussianShift(1.0, 0.7), "n_grid": 101},
    # Paper 001 (Venn-ADMIT): conformal classification sets, Venn predictors, nearest neighbours.
    "calibtut.conformal.sets": {"cal_probs": _probs, "cal_labels": np.arange(N) % 3,
                                          "test_probs": _probs[:5], "too_small": "include",
                                          "kernel": np.ones((5, N))},
    "calibtut.conformal.scores.class_scores": {"score": "raps"},
    "calibtut.recalibration.venn": {"cal_categories": np.arange(N) % 2, "cal_labels": np.arange(N) % 3,
                      "test_categories": np.array([0, 1]), "n_classes": 3,
                      "cal_scores": _rng.uniform(size=N), "test_scores": _rng.uniform(size=5)},
    "calibtut.recalibration.venn.venn_abers": {"cal_labels": np.arange(N) % 2},
    "calibtut.selective.neighbors": {"queries": lambda: torch.zeros(5, 2), "reference": lambda: torch.ones(N, 2), "k": 3},
    "calibtut.selective.knn_approximation": {
        "n_classes": 3, "model": lambda: calibtut.selective.knn_approximation.KNNApproximation(3),
        "distances": lambda: torch.rand(N, 4), "neighbor_logits": lambda: torch.randn(N, 4, 3),
        "neighbor_labels": lambda: torch.arange(4 * N).reshape(N, 4) % 3, "teacher_logits": lambda: torch.randn(N, 3),
        "epochs": 1, "knn_prediction": np.arange(N) % 2, "neighbor_predictions": np.zeros((N, 4)),
        "nearest_distance": _rng.uniform(size=N), "q": np.arange(N) % 3, "correct": np.ones(N, dtype=bool),
    },
    "calibtut.selective.knn_approximation.fit_localizer": {"model": lambda: calibtut.selective.knn_approximation.Localizer(),
                                                  "support_logits": lambda: torch.randn(4, 3)},
    "calibtut.selective.admit": {
        **{f"{split}_{key}": value for split in ("cal", "mc", "vp") for key, value in (
            ("probs", _probs), ("labels", np.arange(N) % 3), ("q", np.arange(N) % 2), ("d", _rng.uniform(size=N)))},
        "probs": _probs[:5], "q": np.array([0, 1, 0, 1, 0]), "d": _rng.uniform(size=5), "omega": 0.3, "kappa": 9,
    },
    "calibtut.selective.admit.admitted_accuracy_by_class": {"admitted": np.arange(N) % 2 == 0, "predictions": np.arange(N) % 3,
                                                  "labels": np.arange(N) % 3, "n_classes": 3},
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
    "calibtut.experiments.venn_admit.accuracy_gap_sd": {
        "pooled": lambda: __import__("pandas").DataFrame({"n": [10], "accuracy": [0.8]})},
    "calibtut.experiments.venn_admit.table3_by_q_and_distance": {"points": lambda: __import__("pandas").DataFrame(
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

_NUMERIC_TYPE = re.compile(r"\b(float|int|integer)\b")
_ARRAY_TYPE = re.compile(r"array|tensor|Tensor|sequence|tuple")
#: "float or array_like", "int or None": a single number is one of the accepted forms.
_SCALAR_FIRST = re.compile(r"^(?:None,? or |None, )?(?:float|int)\b")
_SEQUENCE_TYPE = re.compile(r"(?:tuple|sequence) of (?:float|int)")
#: Parameters that are never a single number (handled by their own checks and tests).
NOT_SCALAR = {"seed", "levels"}


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


def _ensemble():
    from calibtut.models import DeepEnsemble

    return DeepEnsemble(2, n_members=2, hidden=(4,), seed=0)


def _method_table():
    """A datasets x methods table (also a frame whose last column is a numeric target)."""
    import pandas as pd

    return pd.DataFrame(np.random.default_rng(1).normal(size=(N, 3)), columns=["a", "b", "c"])


def _public_modules():
    for info in pkgutil.walk_packages(calibtut.__path__, "calibtut."):
        parts = info.name.split(".")
        if any(p.startswith("_") for p in parts[1:]):
            continue
        yield importlib.import_module(info.name)


@functools.cache
def _public_callables():
    """(qualified name, object) of every public function and class, each once."""
    seen = {}
    for module in _public_modules():
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if not (inspect.isfunction(obj) or inspect.isclass(obj)) or id(obj) in seen:
                continue
            if inspect.isclass(obj) and (issubclass(obj, (tuple, BaseException)) or name in RESULT_RECORDS):
                continue
            if inspect.isclass(obj) and inspect.isabstract(obj):
                continue
            seen[id(obj)] = (f"{module.__name__}.{name}", obj)
    return tuple(sorted(seen.values(), key=lambda item: item[0]))


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


def _locally_numeric(obj):
    """Parameters documented as scalars (float/int) or with a real default."""
    types = _documented_types(obj)
    found = []
    for p in inspect.signature(obj).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name in NOT_SCALAR:
            continue
        default_numeric = isinstance(p.default, (int, float)) and not isinstance(p.default, bool)
        kind = types.get(p.name, "")
        scalar_type = _NUMERIC_TYPE.search(kind) and not _ARRAY_TYPE.search(kind)
        if default_numeric or scalar_type or _SCALAR_FIRST.match(kind):
            found.append(p.name)
    return found


def _sequence_parameters(obj):
    """Parameters documented as a tuple or sequence of numbers (``hidden``, ``bounds``, ...)."""
    types = _documented_types(obj)
    return [name for name in inspect.signature(obj).parameters if _SEQUENCE_TYPE.search(types.get(name, ""))]


def _numeric_parameters(obj):
    """Numeric parameters of ``obj``: its own, plus any parameter whose name is a
    numeric parameter elsewhere in the API (unless documented here as an array)."""
    vocabulary = _numeric_vocabulary()
    types = _documented_types(obj)
    own = _locally_numeric(obj)
    return [
        name for name in inspect.signature(obj).parameters
        if name in own or (name in vocabulary and not _ARRAY_TYPE.search(types.get(name, "")))
    ]


def _sequence_cases():
    """A bad entry (NaN, inf, -inf, -1) in each numeric sequence parameter, the rest valid."""
    cases = []
    for qualname, obj in _public_callables():
        for name in _sequence_parameters(obj):
            default = inspect.signature(obj).parameters[name].default
            valid = np.atleast_1d(default if default is not inspect.Parameter.empty else _valid_value(qualname, name))
            valid = valid.tolist()
            for value in (math.nan, math.inf, -math.inf, -1):
                bad = tuple([value] + valid[1:])
                cases.append(pytest.param(qualname, obj, name, bad, id=f"{qualname}.{name}={bad}"))
    return cases


@functools.cache
def _numeric_vocabulary():
    return frozenset(name for _, obj in _public_callables() for name in _locally_numeric(obj))


def _valid_value(qualname, name):
    for key in (qualname, qualname.rsplit(".", 1)[0], qualname.rsplit(".", 2)[0]):
        if name in VALID_FOR.get(key, {}):
            value = VALID_FOR[key][name]
            break
    else:
        if name not in VALID:
            pytest.fail(f"{qualname}: no valid value for its required argument {name!r}; add one to VALID")
        value = VALID[name]
    return value() if callable(value) and not isinstance(value, type) else value


def _call(qualname, obj, **bad):
    sig = inspect.signature(obj)
    kwargs = {}
    for p in sig.parameters.values():
        if p.name in bad or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.default is p.empty or p.name in VALID_FOR.get(qualname, {}):
            kwargs[p.name] = _valid_value(qualname, p.name)
    return obj(**kwargs, **bad)


def _cases():
    cases = []
    for qualname, obj in _public_callables():
        for name in _numeric_parameters(obj):
            key = f"{qualname}.{name}"
            bad = [math.nan, math.inf, -math.inf]
            if key in ALLOW_INF:
                bad = [math.nan]
            if key in OUT_OF_RANGE:
                bad.append(OUT_OF_RANGE[key])
            elif key not in UNBOUNDED:
                bad.append(OUT_OF_RANGE_BY_NAME.get(name, -1))
            cases.extend(pytest.param(qualname, obj, name, value, id=f"{key}={value}") for value in bad)
    return cases


def _level_cases():
    cases = []
    for qualname, obj in _public_callables():
        if "levels" in inspect.signature(obj).parameters:
            bad = [[0.25, 0.75, 0.5], [0.25, 0.25, 0.5], [-0.1, 0.5, 0.75], [0.25, 0.5, 1.5], [0.25, 0.5, math.nan]]
            if qualname in WORKING_LEVELS:
                bad = [[0.25, 0.5, math.nan], [0.25, 0.5, math.inf]]
            elif qualname not in CLOSED_LEVEL_GRIDS:
                bad += [[0.0, 0.5, 0.75], [0.25, 0.5, 1.0]]
            cases.extend(pytest.param(qualname, obj, value, id=f"{qualname}.levels={value}") for value in bad)
    return cases


def _shown(value):
    return str(float(value)) if isinstance(value, float) else str(value)


@pytest.mark.parametrize(("qualname", "obj", "name", "value"), _cases())
def test_numeric_parameter_rejects_bad_value(qualname, obj, name, value):
    with pytest.raises((ValueError, TypeError)) as info:
        _call(qualname, obj, **{name: value})
    message = str(info.value)
    assert name in message, f"{qualname}({name}={value}): the error does not name {name!r}: {message}"
    assert _shown(value) in message, f"{qualname}({name}={value}): the error does not show the value: {message}"


@pytest.mark.parametrize(("qualname", "obj", "name", "value"), _sequence_cases())
def test_numeric_sequence_rejects_a_bad_entry(qualname, obj, name, value):
    with pytest.raises((ValueError, TypeError), match=name):
        _call(qualname, obj, **{name: value})


@pytest.mark.parametrize(("qualname", "obj", "value"), _level_cases())
def test_levels_must_increase_strictly_inside_unit_interval(qualname, obj, value):
    with pytest.raises((ValueError, TypeError), match="levels"):
        _call(qualname, obj, levels=np.array(value))


def test_the_walker_finds_the_public_api():
    names = {qualname for qualname, _ in _public_callables()}
    assert len(names) > 80
    covered = {f"{qualname}.{name}" for qualname, obj in _public_callables() for name in _numeric_parameters(obj)}
    # The three cases of issue 10, found without being named anywhere above.
    assert {"calibtut.regularizers.entropy.spacing_entropy.eps", "calibtut.online.theorem1_bound.beta",
            "calibtut.online.ACICalibrator.gamma"} <= covered


def test_allowed_infinity_is_documented():
    for key in sorted(ALLOW_INF):
        qualname, name = key.rsplit(".", 1)
        module, attr = qualname.rsplit(".", 1)
        obj = getattr(importlib.import_module(module), attr)
        kind = _documented_types(obj).get(name, "")
        doc = inspect.getdoc(obj) or ""
        described = re.search(rf"^{name} :.*(?:\n    .*)*", doc, flags=re.M)
        assert "inf" in kind or (described and "inf" in described.group(0)), f"{key} accepts inf without saying so"


def test_every_public_module_declares_all():
    missing = [m.__name__ for m in _public_modules() if not hasattr(m, "__all__")]
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
