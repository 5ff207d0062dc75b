"""calibtut's public kernels side by side with every installed peer library.

Run from the repository root::

    python benchmarks/bench_peers.py                     # realistic sizes, writes results/benchmarks/peers.csv
    python benchmarks/bench_peers.py --quick             # small sizes, under a minute (the smoke test)
    python benchmarks/bench_peers.py --only venn         # the cases whose name matches a regular expression
    python benchmarks/bench_peers.py --before results/benchmarks/peers_before.csv   # adds ratio_before

Each case runs one calibtut kernel and one peer (MAPIE, crepes, venn-abers,
netcal, torchmetrics, scoringrules, properscoring, uncertainty-toolbox, relplot,
scikit-learn, faiss-cpu, or plain numpy as a baseline) on the same seeded
inputs. The outputs are compared first: ``agreement`` is the largest absolute
difference of numeric outputs or the share of equal set memberships, and
``note`` states any difference of definition. Then the two sides are timed in
interleaved repeats (alternating which runs first), one thread each, and the
medians of wall time are kept; ``ratio = peer_seconds / calibtut_seconds``, so
a ratio at or above 1 means calibtut is as fast or faster. A peer that is not
installed is skipped. The CSV goes to ``--out`` with a JSON sidecar (machine,
versions, mode, repeats) beside it; ``--before`` joins the ratios of an
earlier run of the same cases as ``ratio_before``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_var] = "1"  # one thread per side, set before numpy loads a BLAS

import argparse
import importlib.metadata
import importlib.util
import json
import platform
import re
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin

from calibtut.conformal import (
    CrossConformalRegressor,
    class_scores,
    cqr_interval,
    mondrian_conformal_sets,
    split_conformal_interval,
    split_conformal_sets,
)
from calibtut.metrics import (
    crps_gaussian,
    crps_mixture,
    expected_calibration_error,
    mean_set_size,
    plugin_l2_ece,
    set_coverage,
    smooth_ece,
    top_label_ece,
)
from calibtut.recalibration import (
    HistogramBinning,
    PlattScaling,
    TemperatureScaling,
    VectorScaling,
    venn_abers,
)
from calibtut.selective.neighbors import nearest_neighbors

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "benchmarks" / "peers.csv"
PEERS = {"mapie": "MAPIE", "crepes": "crepes", "venn_abers": "venn-abers", "netcal": "netcal",
         "torchmetrics": "torchmetrics", "scoringrules": "scoringrules", "properscoring": "properscoring",
         "uncertainty_toolbox": "uncertainty-toolbox", "sklearn": "scikit-learn", "faiss": "faiss-cpu",
         "relplot": "relplot"}
#: (quick, full) sizes
SIZES = {
    "cal": (1_000, 10_000), "test": (3_000, 100_000), "classes": (10, 10), "many_classes": (100, 100),
    "many_test": (500, 20_000), "venn_small": (200, 200), "scores": (20_000, 1_000_000),
    "mixture": (5_000, 100_000), "logits": (3_000, 50_000), "knn_ref": (5_000, 45_000),
    "knn_query": (300, 2_000), "knn_dim": (64, 256),
}


class _Passthrough(BaseEstimator):
    """A 'prefit' model whose predictions are its input: the peers then see the same predictions."""

    def __init__(self, n_classes=2, column=0):
        self.n_classes = n_classes
        self.column = column

    def fit(self, X=None, y=None):
        self.classes_ = np.arange(self.n_classes)
        return self

    def predict_proba(self, X):
        return np.asarray(X)

    def predict(self, X):
        X = np.asarray(X)
        return np.argmax(X, axis=1) if isinstance(self, ClassifierMixin) else X[:, self.column]


class _PassthroughClassifier(ClassifierMixin, _Passthrough):
    pass


class _PassthroughRegressor(RegressorMixin, _Passthrough):
    pass


def _installed(module):
    return importlib.util.find_spec(module) is not None


def _max_diff(a, b):
    return float(np.max(np.abs(np.asarray(a, dtype=float) - np.asarray(b, dtype=float))))


def _same_share(a, b):
    return float(np.mean(np.asarray(a, dtype=bool) == np.asarray(b, dtype=bool)))


def _probs(rng, n, n_classes):
    """Dirichlet class probabilities and labels drawn from them (a calibrated classifier)."""
    probs = rng.dirichlet(np.full(n_classes, 0.5), size=n)
    labels = (rng.uniform(size=(n, 1)) > np.cumsum(probs, axis=1)).sum(axis=1).clip(0, n_classes - 1)
    return probs, labels


class Case:
    """One kernel against one peer: two callables on the same inputs, a comparison and a note."""

    def __init__(self, kernel, peer, size, ours, theirs, compare, note=""):
        self.kernel, self.peer, self.size = kernel, peer, size
        self.ours, self.theirs, self.compare, self.note = ours, theirs, compare, note

    @property
    def name(self):
        return f"{self.kernel} | {self.peer} | {self.size}"


def _set_cases(probs, labels, tests, n_classes):
    """Split LAC and APS sets on one data set, against MAPIE and crepes."""
    label = f"n={len(probs)}, m={len(tests)}, K={n_classes}"
    lac = lambda: split_conformal_sets(probs, labels, tests, 0.1)
    cases = []
    if _installed("mapie"):
        from mapie.classification import SplitConformalClassifier as MapieClassifier

        def mapie_sets(score):
            model = MapieClassifier(_PassthroughClassifier(n_classes).fit(), confidence_level=0.9,
                                    conformity_score=score, prefit=True).conformalize(probs, labels)
            params = {"include_last_label": True} if score == "aps" else None
            return model.predict_set(tests, conformity_score_params=params)[1][:, :, 0]

        cases.append(Case("split sets, LAC", "MAPIE", label, lac, lambda: mapie_sets("lac"), _same_share,
                          "MAPIE adds a 1e-8 tolerance to the threshold"))
        cases.append(Case("split sets, APS", "MAPIE", label,
                          lambda: split_conformal_sets(probs, labels, tests, 0.1, score="aps"),
                          lambda: mapie_sets("aps"), _same_share,
                          "MAPIE's APS includes the last label (include_last_label=True); "
                          "calibtut's non-randomised APS score is the mass at or above the label"))
    if _installed("crepes"):
        from crepes import ConformalClassifier

        def crepes_sets():
            model = ConformalClassifier().fit(1 - probs[np.arange(len(probs)), labels])
            return model.predict_set(1 - tests, confidence=0.9, smoothing=False)

        cases.append(Case("split sets, LAC", "crepes", label, lac, crepes_sets, _same_share, _CREPES_RANK))
    return cases


_CREPES_RANK = "crepes includes a label at p-value >= alpha, the conformal rank at p > alpha"


def classification_cases(size):
    rng = np.random.default_rng(0)
    n, m, k = size("cal"), size("test"), size("classes")
    cal, y = _probs(rng, n, k)
    test, _ = _probs(rng, m, k)
    cal_many, y_many = _probs(rng, n, size("many_classes"))
    test_many, _ = _probs(rng, size("many_test"), size("many_classes"))
    codes_cal, codes_test = rng.integers(0, 5, size=n), rng.integers(0, 5, size=m)
    cases = _set_cases(cal, y, test, k) + _set_cases(cal_many, y_many, test_many, size("many_classes"))
    if _installed("crepes"):
        from crepes import ConformalClassifier

        def crepes_mondrian():
            model = ConformalClassifier().fit(1 - cal[np.arange(n), y], bins=codes_cal)
            return model.predict_set(1 - test, bins=codes_test, confidence=0.9, smoothing=False)

        cases.append(Case("Mondrian sets, 5 category codes", "crepes", f"n={n}, m={m}, K={k}",
                          lambda: mondrian_conformal_sets(cal, y, test, 0.1, cal_categories=codes_cal,
                                                          test_categories=codes_test),
                          crepes_mondrian, _same_share, _CREPES_RANK))
    cases.append(Case("class_scores, LAC", "numpy 1 - p (baseline)", f"m={m}, K={k}",
                      lambda: class_scores(test), lambda: 1.0 - test, _max_diff,
                      "the baseline does no input check"))
    return cases


def venn_abers_cases(size):
    if not _installed("venn_abers"):
        return []
    from venn_abers import VennAbers

    rng = np.random.default_rng(1)
    n = size("cal")
    scores = np.round(rng.uniform(size=n), 3)  # ties, as a classifier's rounded scores have
    labels = (rng.uniform(size=n) < scores).astype(int)
    cases = []
    for m in (size("venn_small"), size("test")):
        test = rng.uniform(size=m)

        def package(test=test):
            model = VennAbers().fit(np.stack([1 - scores, scores], axis=1), labels)
            p0_p1 = model.predict_proba(np.stack([1 - test, test], axis=1))[1]
            return p0_p1[:, 0], p0_p1[:, 1]

        cases.append(Case("Venn-ABERS (p0, p1)", "venn-abers", f"n={n}, m={m}",
                          lambda test=test: venn_abers(scores, labels, test), package,
                          lambda a, b: _max_diff(np.stack(a), np.stack(b)), "scores rounded to 3 decimals (ties)"))
    return cases


def ece_cases(size):
    rng = np.random.default_rng(2)
    m, k = size("test"), size("classes")
    probs, labels = _probs(rng, m, k)
    confidence, correct = probs.max(axis=1), (np.argmax(probs, axis=1) == labels)
    tensor_probs, tensor_labels = torch.from_numpy(probs), torch.from_numpy(labels)
    label = f"n={m}, 15 bins"

    def numpy_ece():  # the plain baseline: two bincounts on a uniform grid, closed on the left
        idx = np.minimum((confidence * 15).astype(np.int64), 14)
        gap = np.bincount(idx, weights=correct - confidence, minlength=15)
        return float(np.abs(gap).sum() / m)

    cases = [Case("ECE (confidence, correct)", "numpy bincount (baseline)", label,
                  lambda: expected_calibration_error(confidence, correct, closed="left"), numpy_ece, _max_diff,
                  "the baseline does no input check; bins by multiplication (edges as floor(15 c))")]
    if _installed("netcal"):
        from netcal.metrics import ECE

        cases.append(Case("ECE (confidence, correct)", "netcal", label,
                          lambda: expected_calibration_error(confidence, correct, closed="left"),
                          lambda: float(ECE(bins=15).measure(confidence, correct.astype(int))), _max_diff,
                          "closed='left' is netcal's edge convention"))
        cases.append(Case("top-label ECE", "netcal", f"{label}, K={k}",
                          lambda: top_label_ece(probs, labels, closed="left"),
                          lambda: float(ECE(bins=15).measure(probs, labels)), _max_diff,
                          "closed='left' is netcal's edge convention"))
    if _installed("torchmetrics"):
        from torchmetrics.functional.classification import multiclass_calibration_error

        cases.append(Case("top-label ECE", "torchmetrics", f"{label}, K={k}",
                          lambda: top_label_ece(probs, labels),
                          lambda: float(multiclass_calibration_error(tensor_probs, tensor_labels, k, n_bins=15)),
                          _max_diff, "torchmetrics bins with bucketize (closed on the right); torch float64"))
    return cases


def temperature_cases(size):
    if not _installed("netcal"):
        return []
    from netcal.scaling import TemperatureScaling as NetcalTemperature

    rng = np.random.default_rng(3)
    n, k = size("logits"), size("classes")
    logits = rng.normal(scale=3.0, size=(n, k))
    true_probs = np.exp(logits / 2.0) / np.exp(logits / 2.0).sum(axis=1, keepdims=True)
    labels = (rng.uniform(size=(n, 1)) > np.cumsum(true_probs, axis=1)).sum(axis=1).clip(0, k - 1)
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)

    def ours():
        return TemperatureScaling().fit(logits, labels).predict_proba(logits)

    def netcal():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return NetcalTemperature().fit(probs, labels).transform(probs)

    return [Case("temperature scaling, fit + transform", "netcal", f"n={n}, K={k}", ours, netcal, _max_diff,
                 "netcal fits on log-probabilities with its own optimiser; the difference is the optimisers' "
                 "tolerance")]


def score_cases(size):
    rng = np.random.default_rng(4)
    n = size("scores")
    y, mean, std = rng.normal(size=n), rng.normal(size=n), rng.uniform(0.5, 2.0, size=n)
    label = f"n={n}"
    ours = lambda: crps_gaussian(y, mean, std, reduction="none")
    cases = []
    if _installed("scoringrules"):
        import scoringrules

        cases.append(Case("CRPS, Gaussian", "scoringrules", label, ours,
                          lambda: scoringrules.crps_normal(y, mean, std, backend="numpy"), _max_diff))
    if _installed("properscoring"):
        import properscoring

        cases.append(Case("CRPS, Gaussian", "properscoring", label, ours,
                          lambda: properscoring.crps_gaussian(y, mean, std), _max_diff))
    if _installed("uncertainty_toolbox"):
        from uncertainty_toolbox.metrics_scoring_rule import crps_gaussian as uct_crps

        cases.append(Case("CRPS, Gaussian (mean)", "uncertainty-toolbox", label,
                          lambda: crps_gaussian(y, mean, std), lambda: float(uct_crps(mean, std, y)), _max_diff))
    if _installed("scoringrules"):
        import scoringrules

        n_mix, comps = size("mixture"), 5
        ym = rng.normal(size=n_mix)
        weights = rng.dirichlet(np.ones(comps), size=n_mix)
        means, stds = rng.normal(size=(n_mix, comps)), rng.uniform(0.5, 2.0, size=(n_mix, comps))
        cases.append(Case("CRPS, Gaussian mixture", "scoringrules", f"n={n_mix}, 5 components",
                          lambda: crps_mixture(ym, weights, means, stds, reduction="none"),
                          lambda: scoringrules.crps_mixnorm(ym, means, stds, weights, backend="numpy"), _max_diff))
    return cases


def interval_cases(size):
    rng = np.random.default_rng(5)
    n, m = size("cal"), size("test")
    cal_pred, test_pred = rng.normal(size=n), rng.normal(size=m)
    cal_y = cal_pred + rng.normal(size=n)
    label = f"n={n}, m={m}"
    ours = lambda: np.stack(split_conformal_interval(cal_pred, cal_y, test_pred, 0.1))
    cases = []
    if _installed("mapie"):
        from mapie.regression import (
            ConformalizedQuantileRegressor,
            SplitConformalRegressor,
        )

        def mapie_split():
            model = SplitConformalRegressor(_PassthroughRegressor().fit(), confidence_level=0.9, prefit=True)
            model.conformalize(cal_pred[:, None], cal_y)
            return model.predict_interval(test_pred[:, None])[1][:, :, 0].T

        cases.append(Case("split conformal interval", "MAPIE", label, ours, mapie_split, _max_diff))
        spread_cal, spread_test = rng.uniform(0.5, 2, size=n), rng.uniform(0.5, 2, size=m)
        cal_q = np.stack([cal_pred - spread_cal, cal_pred + spread_cal, cal_pred], axis=1)
        test_q = np.stack([test_pred - spread_test, test_pred + spread_test, test_pred], axis=1)

        def mapie_cqr():
            model = ConformalizedQuantileRegressor([_PassthroughRegressor(column=c).fit() for c in range(3)],
                                                   confidence_level=0.9, prefit=True)
            model.conformalize(cal_q, cal_y)
            return model.predict_interval(test_q, symmetric_correction=True)[1][:, :, 0].T

        cases.append(Case("CQR interval", "MAPIE", label,
                          lambda: np.stack(cqr_interval(cal_q[:, :2], cal_y, test_q[:, :2], 0.1)), mapie_cqr,
                          _max_diff, "MAPIE with symmetric_correction=True, calibtut's symmetric=True default"))
    if _installed("crepes"):
        from crepes import ConformalRegressor

        def crepes_split():
            model = ConformalRegressor().fit(np.abs(cal_y - cal_pred))
            return model.predict_int(test_pred, confidence=0.9).T

        cases.append(Case("split conformal interval", "crepes", label, ours, crepes_split, _max_diff))
    return cases


def knn_cases(size):
    rng = np.random.default_rng(6)
    n, m, dim, k = size("knn_ref"), size("knn_query"), size("knn_dim"), 25
    reference = rng.normal(size=(n, dim)).astype(np.float32)
    queries = rng.normal(size=(m, dim)).astype(np.float32)
    ref_t, q_t = torch.from_numpy(reference), torch.from_numpy(queries)
    label = f"{m} queries, {n} x {dim} references, k={k}"
    ours = lambda: nearest_neighbors(q_t, ref_t, k)[1].numpy()
    cases = []
    if _installed("sklearn"):
        from sklearn.neighbors import NearestNeighbors

        cases.append(Case("exact k-NN", "scikit-learn", label, ours,
                          lambda: NearestNeighbors(n_neighbors=k, algorithm="brute").fit(reference)
                          .kneighbors(queries)[1], _same_index, "agreement: share of equal neighbour indices"))
    if _installed("faiss"):
        import faiss

        faiss.omp_set_num_threads(1)

        def faiss_search():
            index = faiss.IndexFlatL2(dim)
            index.add(reference)
            return index.search(queries, k)[1]

        cases.append(Case("exact k-NN", "faiss-cpu", label, ours, faiss_search, _same_index,
                          "agreement: share of equal neighbour indices (faiss ranks in float32)"))
    return cases


def _same_index(a, b):
    return float(np.mean(np.asarray(a) == np.asarray(b)))


def foundation_cases(size):
    """Issue 44's recalibration maps, equal-mass ECE, set metrics and jackknife+ / CV+ against their peers."""
    rng = np.random.default_rng(7)
    n, k = size("cal"), size("classes")
    probs, labels = _probs(rng, n, k)
    test, _ = _probs(rng, size("test"), k)
    scores = rng.normal(size=n)
    binary = (rng.uniform(size=n) < 1 / (1 + np.exp(-(2 * scores - 1)))).astype(int)
    cases = []
    if _installed("sklearn"):
        from scipy.special import expit
        from sklearn.calibration import CalibratedClassifierCV, _sigmoid_calibration
        from sklearn.frozen import FrozenEstimator

        def sklearn_platt():
            a, b = _sigmoid_calibration(scores, binary)
            return expit(-(a * scores + b))

        cases.append(Case("Platt scaling, binary, fit + predict", "scikit-learn", f"n={n}",
                          lambda: PlattScaling().fit(scores, binary).predict_proba(scores)[:, 1], sklearn_platt,
                          _max_diff, "scikit-learn's _sigmoid_calibration (Platt's targets); the difference is "
                                     "its L-BFGS stopping tolerance"))
        cases.append(Case("Platt scaling, one-vs-rest, fit + predict", "scikit-learn", f"n={n}, K={k}",
                          lambda: PlattScaling().fit(probs, labels).predict_proba(test),
                          lambda: CalibratedClassifierCV(FrozenEstimator(_PassthroughClassifier(k).fit()),
                                                         method="sigmoid").fit(probs, labels).predict_proba(test),
                          _max_diff, "CalibratedClassifierCV(method='sigmoid') on a frozen pass-through classifier"))
    if _installed("netcal"):
        from netcal.binning import HistogramBinning as NetcalBinning
        from netcal.metrics import ECE

        cases.append(Case("histogram binning, one-vs-rest, fit + predict", "netcal", f"n={n}, K={k}, 10 bins",
                          lambda: HistogramBinning(n_bins=10).fit(probs, labels).predict_proba(test),
                          lambda: NetcalBinning(bins=10).fit(probs, labels).transform(test), _max_diff))
        confidence, correct = probs.max(axis=1), (probs.argmax(axis=1) == labels).astype(int)
        cases.append(Case("ECE, equal-mass bins", "netcal", f"n={n}, 15 bins",
                          lambda: expected_calibration_error(confidence, correct, strategy="quantile", closed="left"),
                          lambda: float(ECE(bins=15, equal_intervals=False).measure(confidence, correct)), _max_diff,
                          "closed='left' is netcal's edge convention"))
    confidence = rng.uniform(size=n)
    outcome = (rng.uniform(size=n) < confidence**1.5).astype(int)
    if _installed("torchmetrics"):
        from torchmetrics.functional.classification import binary_calibration_error

        cases.append(Case("plug-in l2 ECE, 15 bins", "torchmetrics", f"n={n}",
                          lambda: plugin_l2_ece(confidence, outcome, n_bins=15, strategy="uniform"),
                          lambda: binary_calibration_error(torch.tensor(confidence), torch.tensor(outcome),
                                                           n_bins=15, norm="l2").item(), _max_diff,
                          "torchmetrics' binary calibration error with norm='l2', float64"))
    if _installed("relplot"):
        from relplot.metrics import smECE

        cases.append(Case("smooth ECE, fixed-point bandwidth", "relplot", f"n={n}",
                          lambda: smooth_ece(confidence, outcome), lambda: float(smECE(confidence, outcome)),
                          _max_diff, "relplot evaluates on a coarser mesh and bisects ten times: agreement to "
                                     "their resolution"))
    logits = rng.normal(scale=2.0, size=(n, k))
    logit_labels = (rng.uniform(size=(n, 1)) > np.cumsum(np.exp(logits * 0.7) / np.exp(logits * 0.7).sum(
        axis=1, keepdims=True), axis=1)).sum(axis=1).clip(0, k - 1)

    def torch_vector_scaling():
        z, y = torch.from_numpy(logits), torch.from_numpy(logit_labels)
        w = torch.ones(k, dtype=torch.float64, requires_grad=True)
        b = torch.zeros(k, dtype=torch.float64, requires_grad=True)
        opt = torch.optim.LBFGS([w, b], lr=1, max_iter=1000, tolerance_grad=1e-10, tolerance_change=1e-15,
                                history_size=30, line_search_fn="strong_wolfe")

        def closure():
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(z * w + b, y)
            loss.backward()
            return loss

        opt.step(closure)
        with torch.no_grad():
            return torch.softmax(z * w + b, dim=1).numpy()

    cases.append(Case("vector scaling, fit + predict", "torch L-BFGS", f"n={n}, K={k}",
                      lambda: VectorScaling().fit(logits, logit_labels).predict_proba(logits), torch_vector_scaling,
                      _max_diff, "an independent fit of the same convex NLL: the optimisers' tolerance"))
    if _installed("mapie"):
        from mapie.metrics.classification import classification_coverage_score, classification_mean_width_score
        from mapie.regression import CrossConformalRegressor as MapieCrossConformal
        from sklearn.linear_model import Ridge
        from sklearn.model_selection import PredefinedSplit

        sets = test > 0.1
        set_labels = rng.integers(0, k, size=len(test))
        cases.append(Case("set coverage + mean set size", "MAPIE", f"m={len(test)}, K={k}",
                          lambda: (set_coverage(set_labels, sets), mean_set_size(sets)),
                          lambda: (float(classification_coverage_score(set_labels, sets)[0]),
                                   float(classification_mean_width_score(sets))), _max_diff))
        for n_fit, folds in ((size("venn_small"), None), (n, 10)):
            X = rng.normal(size=(n_fit, 5))
            y = X @ rng.normal(size=5) + rng.normal(size=n_fit)
            X_test = rng.normal(size=(size("many_test"), 5))
            fold_ids = (np.arange(n_fit) if folds is None else rng.permutation(n_fit) % folds)

            def ours(X=X, y=y, X_test=X_test, fold_ids=fold_ids):
                model = CrossConformalRegressor(Ridge(), alpha=0.1).fit(X, y, folds=fold_ids)
                return np.stack(model.predict_interval(X_test))

            def mapie(X=X, y=y, X_test=X_test, fold_ids=fold_ids):
                model = MapieCrossConformal(Ridge(), confidence_level=0.9, cv=PredefinedSplit(fold_ids))
                bounds = model.fit_conformalize(X, y).predict_interval(X_test, aggregate_point_predictions=None)[1]
                return bounds[:, :, 0].T

            name = "jackknife+ interval" if folds is None else f"CV+ interval, {folds} folds"
            cases.append(Case(name, "MAPIE", f"n={n_fit}, m={len(X_test)}", ours, mapie, _max_diff,
                              "identical folds (PredefinedSplit)"))
    return cases


GROUPS = (venn_abers_cases, classification_cases, ece_cases, temperature_cases, score_cases, interval_cases,
          knn_cases, foundation_cases)


def _timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run_case(case, repeats, budget):
    """Compare the outputs, then time both sides in interleaved repeats; medians of wall seconds."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agreement = case.compare(case.ours(), case.theirs())
        ours, theirs = [], []
        spent = time.perf_counter()
        for r in range(repeats):
            pair = (case.ours, case.theirs) if r % 2 == 0 else (case.theirs, case.ours)
            first, second = _timed(pair[0]), _timed(pair[1])
            ours.append(first if r % 2 == 0 else second)
            theirs.append(second if r % 2 == 0 else first)
            if time.perf_counter() - spent > budget:  # a slow side: fewer repeats, at least one
                break
    ours_s, theirs_s = float(np.median(ours)), float(np.median(theirs))
    return {"kernel": case.kernel, "peer": case.peer, "size": case.size, "calibtut_s": ours_s,
            "peer_s": theirs_s, "ratio": theirs_s / ours_s, "repeats": len(ours), "agreement": agreement,
            "note": case.note}


def _machine(args, repeats):
    versions = {"python": platform.python_version()}
    for dist in ("calibtut", "numpy", "scipy", "torch", "MAPIE", "crepes", "venn-abers", "netcal", "torchmetrics",
                 "scoringrules", "properscoring", "uncertainty-toolbox", "scikit-learn", "faiss-cpu"):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = None
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else ""
    return {"machine": f"{cpu}, {os.cpu_count()} logical CPUs, {platform.system()} {platform.release()}",
            "threads_per_side": 1, "mode": "quick" if args.quick else "full", "repeats": repeats,
            "timing": "median wall seconds of interleaved repeats", "date": time.strftime("%Y-%m-%d"),
            "versions": versions}


def _markdown(table, machine):
    """The table for the book (``book/peer-benchmark.md`` includes it): long, narrow, notes below it."""
    before = "ratio_before" in table
    lines = [(f"Measured on {machine['date']}: {machine['machine']}; one thread per side, "
              f"{machine['timing']} (up to {machine['repeats']} each)."), "",
             "| kernel | peer | size | " + ("ratio before | " if before else "") + "ratio | agreement |",
             "|---|---|---|" + ("---:|" if before else "") + "---:|---:|"]
    notes = {}
    for row in table.itertuples():
        mark = ""
        if isinstance(row.note, str) and row.note:
            mark = f" [{notes.setdefault(row.note, len(notes) + 1)}]"
        cells = [row.kernel, row.peer + mark, row.size]
        if before:
            cells.append("" if pd.isna(row.ratio_before) else f"{row.ratio_before:.2f}")
        cells += [f"{row.ratio:.2f}", f"{row.agreement:.3g}"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [""] + [f"[{number}] {note}  " for note, number in notes.items()]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes and 3 repeats (under a minute)")
    parser.add_argument("--repeats", type=int, default=None, help="repeats per side (default 3 quick, 7 full)")
    parser.add_argument("--budget", type=float, default=30.0, help="stop repeating a case after this many seconds")
    parser.add_argument("--only", default=None, help="regular expression on 'kernel | peer | size'")
    parser.add_argument("--skip", default=None, help="regular expression of cases to leave out")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--before", type=Path, default=None, help="an earlier CSV: adds its ratios as ratio_before")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    repeats = args.repeats or (3 if args.quick else 7)
    column = 0 if args.quick else 1

    def size(name):
        return SIZES[name][column]

    rows = []
    for group in GROUPS:
        for case in group(size):
            if (args.only and not re.search(args.only, case.name)) or (args.skip and re.search(args.skip, case.name)):
                continue
            row = run_case(case, repeats, args.budget)
            rows.append(row)
            print(f"{case.name}: ratio {row['ratio']:.2f} (calibtut {row['calibtut_s']:.4f} s, "
                  f"{case.peer} {row['peer_s']:.4f} s), agreement {row['agreement']:.3g}", flush=True)
    table = pd.DataFrame(rows)
    if args.before is not None:
        before = pd.read_csv(args.before)[["kernel", "peer", "size", "ratio"]].rename(columns={"ratio": "ratio_before"})
        table = table.merge(before, on=["kernel", "peer", "size"], how="left")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False, float_format="%.4g")
    machine = _machine(args, repeats)
    args.out.with_suffix(".json").write_text(json.dumps(machine, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(_markdown(table, machine))
    print(f"wrote {args.out}")
    return table


if __name__ == "__main__":
    main()
