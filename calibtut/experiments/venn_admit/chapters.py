"""The set-ups of the theory chapters on Venn-ADMIT, synthetic, and their simulation loops (paper 001, chapters 1, 3, 4).

The experiments chapters have :mod:`calibtut.experiments.venn_admit.tasks`;
this module holds what the teaching chapters simulate (their summaries are
in :mod:`calibtut.experiments.venn_admit.tables`):

* :func:`rare_class_sample`: a three-class Gaussian mixture with a rare class
  whose exact posterior is the classifier (chapter 1);
* :func:`conformal_singleton_runs`: split and label-conditional conformal sets
  over repeated draws, coverage and singleton accuracy per true class
  (chapter 1), summarised by
  :func:`~calibtut.experiments.venn_admit.tables.singleton_summary`;
* :func:`two_group_sample` and :func:`naive_lcp_population_coverage`: a
  common easy group and a rare hard group, where Guan's naive localized
  conformal sets under-cover (chapter 1);
* :func:`synthetic_knn_pipeline`: a small network on a Gaussian mixture, its
  exemplar vectors, the paper's KNN approximation, ``q``, ``d`` and ``omega``
  on a pool of held-out points, as one
  :class:`~calibtut.selective.features.KNNFeatures` bundle (chapters 3 and 4);
* :func:`category_coverage_runs`: coverage per fixed ``(q, d-bin)`` category
  and true class over random splits of that pool, for Mondrian conformal on
  the fixed partition and ADMIT on the fixed partition and on the sliding
  band (chapter 3), beside the exact conformal mean in
  :func:`~calibtut.experiments.venn_admit.tables.category_coverage_table`;
* :func:`venn_admit_runs`: Venn-ADMIT's variants over random splits of the
  pool (chapter 4), pooled by
  :func:`~calibtut.experiments.venn_admit.tables.admission_summary`;
* :func:`venn_calibration_table`: Theorem 3 (the Venn probability of the true
  label is calibrated) on one category, by simulation (chapter 4);
* :func:`binomial_admission`: Proposition 1's admission rule on one category
  of known accuracy, by simulation and exactly (chapter 4).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import torch
from scipy import stats
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier

from calibtut._validation import as_float_array, check_alpha, check_int, check_real, check_rng
from calibtut.conformal.sets import (
    label_conditional_sets,
    mondrian_conformal_sets,
    split_conformal_sets,
)
from calibtut.experiments.venn_admit._common import N_NEIGHBORS
from calibtut.selective.admit import VennADMIT, admit_sets
from calibtut.selective.features import KNNFeatures
from calibtut.selective.knn_approximation import band_width
from calibtut.selective.neighbors import pairwise_distances
from calibtut.selective.pipeline import KNNFeaturePipeline

__all__ = [
    "rare_class_sample",
    "conformal_singleton_runs",
    "two_group_sample",
    "naive_lcp_population_coverage",
    "synthetic_knn_pipeline",
    "category_coverage_runs",
    "venn_admit_runs",
    "venn_calibration_table",
    "binomial_admission",
]

_RARE_MEANS = np.array([[0.0, 0.0], [1.5, 0.0], [3.0, 0.0]])
_RARE_PRIORS = np.array([0.6, 0.34, 0.06])


def rare_class_sample(n, seed=None):
    """Features, exact posterior probabilities and labels of a mixture with a rare class.

    Three classes with priors 0.6, 0.34 and 0.06 and unit-variance Gaussian
    features in the plane around means 1.5 apart on a line. The classifier is
    the exact posterior, so it is perfectly calibrated, and its accuracy
    (about 0.73) is below ``1 - alpha`` for ``alpha = 0.1``; the rare class is
    rarely the most probable one.

    Parameters
    ----------
    n : int
        Number of points (at least 1).
    seed : int, numpy.random.Generator or None
        Source of the sample.

    Returns
    -------
    x : numpy.ndarray of shape (n, 2)
    probs : numpy.ndarray of shape (n, 3)
        The posterior ``P(y | x)``.
    labels : numpy.ndarray of int, shape (n,)

    Examples
    --------
    >>> x, probs, labels = rare_class_sample(4, seed=0)
    >>> x.shape, probs.shape, labels.tolist()
    ((4, 2), (4, 3), [1, 0, 0, 0])
    """
    n = check_int(n, "n", minimum=1)
    rng = check_rng(seed)
    labels = rng.choice(3, size=n, p=_RARE_PRIORS)
    x = _RARE_MEANS[labels] + rng.normal(size=(n, 2))
    log_joint = np.log(_RARE_PRIORS) - 0.5 * ((x[:, None, :] - _RARE_MEANS[None]) ** 2).sum(axis=2)
    probs = np.exp(log_joint - log_joint.max(axis=1, keepdims=True))
    return x, probs / probs.sum(axis=1, keepdims=True), labels


def _set_rows(sets, labels, n_classes):
    """Coverage, singleton count and correct singletons per true class of one run."""
    covered = sets[np.arange(len(labels)), labels]
    singleton = sets.sum(axis=1) == 1
    right = singleton & covered
    return [
        {"class": c, "n": int(np.sum(labels == c)), "covered": int(np.sum(covered[labels == c])),
         "singletons": int(np.sum(singleton[labels == c])), "correct_singletons": int(np.sum(right[labels == c]))}
        for c in range(n_classes)
    ]


def conformal_singleton_runs(n_seeds, n_cal, n_test, alpha, *, seed=0):
    """Split and label-conditional (Mondrian) LAC sets on :func:`rare_class_sample`, over repeated draws.

    Each run draws a calibration and a test sample (seed ``seed + run``) and
    counts, per method and true class: test points, covered points,
    singletons and correct singletons.

    Parameters
    ----------
    n_seeds : int
        Number of runs (at least 1).
    n_cal : int
        Calibration points per run (at least 1).
    n_test : int
        Test points per run (at least 1).
    alpha : float
        Miscoverage level in (0, 1).
    seed : int, default 0
        Seed of the first run (non-negative).

    Returns
    -------
    pandas.DataFrame
        Columns ``run``, ``method`` (``"split"`` or ``"label-conditional"``),
        ``class``, ``n``, ``covered``, ``singletons``, ``correct_singletons``.

    Examples
    --------
    >>> runs = conformal_singleton_runs(2, 200, 100, 0.1)
    >>> runs.shape, sorted(runs["method"].unique())
    ((12, 7), ['label-conditional', 'split'])
    """
    n_seeds = check_int(n_seeds, "n_seeds", minimum=1)
    n_cal = check_int(n_cal, "n_cal", minimum=1)
    n_test = check_int(n_test, "n_test", minimum=1)
    alpha = check_alpha(alpha)
    seed = check_int(seed, "seed", minimum=0)
    rows = []
    for run in range(n_seeds):
        rng = np.random.default_rng(seed + run)
        _, cal, y_cal = rare_class_sample(n_cal, rng)
        _, test, y_test = rare_class_sample(n_test, rng)
        methods = {
            "split": split_conformal_sets(cal, y_cal, test, alpha),
            "label-conditional": label_conditional_sets(cal, y_cal, test, alpha, too_small="include"),
        }
        for method, sets in methods.items():
            rows += [{"run": run, "method": method, **row} for row in _set_rows(sets, y_test, 3)]
    return pd.DataFrame(rows)


def two_group_sample(n, seed=None, *, hard_share=0.05):
    """A binary task with a common easy group and a rare hard group (the localized-conformal example).

    In the easy group the classifier gives the true label a probability
    uniform on ``[0.75, 1]`` (LAC score in ``[0, 0.25]``); in the hard group,
    a share ``hard_share`` of the points, uniform on ``[0, 0.5]`` (score in
    ``[0.5, 1]``). Labels are 0 or 1 with probability one half.

    Parameters
    ----------
    n : int
        Number of points (at least 1).
    seed : int, numpy.random.Generator or None
        Source of the sample.
    hard_share : float, default 0.05
        Probability of the hard group, in (0, 1).

    Returns
    -------
    probs : numpy.ndarray of shape (n, 2)
    labels : numpy.ndarray of int, shape (n,)
    hard : numpy.ndarray of bool, shape (n,)
        Group membership, the localizer's only feature.

    Examples
    --------
    >>> probs, labels, hard = two_group_sample(3, seed=1)
    >>> probs.sum(axis=1).tolist(), hard.dtype.name
    ([1.0, 1.0, 1.0], 'bool')
    """
    n = check_int(n, "n", minimum=1)
    hard_share = check_real(hard_share, "hard_share", low=0, high=1, low_open=True, high_open=True)
    rng = check_rng(seed)
    hard = rng.uniform(size=n) < hard_share
    p_true = np.where(hard, rng.uniform(0.0, 0.5, n), rng.uniform(0.75, 1.0, n))
    labels = rng.integers(0, 2, n)
    probs = np.empty((n, 2))
    probs[np.arange(n), labels] = p_true
    probs[np.arange(n), 1 - labels] = 1 - p_true
    return probs, labels, hard


def naive_lcp_population_coverage(alpha, hard_share, across):
    """Large-sample coverage of Guan's naive localized sets on :func:`two_group_sample`.

    The kernel is 1 within a group and ``h = across`` between groups. With
    ``n`` large, the localized law around a hard point puts the share
    ``h pi_e / (h pi_e + pi_h)`` (``pi_e``, ``pi_h`` the group shares) on the
    easy scores, which all lie below the hard ones, so the hard group's
    coverage is ``1 - alpha - alpha h pi_e / pi_h`` (clipped to ``[0, 1]``);
    around an easy point the hard share ``h pi_h / (pi_e + h pi_h)`` lies above,
    and the easy coverage is ``(1 - alpha)(1 + h pi_h / pi_e)`` (clipped). The
    marginal coverage is their mixture, ``1 - alpha + h((1 - alpha) pi_h -
    alpha pi_e)`` when neither is clipped: below ``1 - alpha`` whenever
    ``pi_h < alpha``.

    Parameters
    ----------
    alpha : float
        Miscoverage level in (0, 1).
    hard_share : float
        Share ``pi_h`` of the hard group, in (0, 1).
    across : float
        Kernel weight ``h`` between the groups, in [0, 1].

    Returns
    -------
    dict
        ``easy``, ``hard`` and ``marginal`` coverage.

    Examples
    --------
    >>> cov = naive_lcp_population_coverage(0.1, 0.05, 0.47)
    >>> {k: round(v, 4) for k, v in cov.items()}
    {'easy': 0.9223, 'hard': 0.007, 'marginal': 0.8765}
    """
    alpha = check_alpha(alpha)
    hard_share = check_real(hard_share, "hard_share", low=0, high=1, low_open=True, high_open=True)
    across = check_real(across, "across", low=0, high=1)
    easy_share = 1 - hard_share
    hard = float(np.clip(1 - alpha - alpha * across * easy_share / hard_share, 0.0, 1.0))
    easy = float(np.clip((1 - alpha) * (1 + across * hard_share / easy_share), 0.0, 1.0))
    return {"easy": easy, "hard": hard, "marginal": easy_share * easy + hard_share * hard}


#: priors of the chapter-3 mixture (class 2 is the smallest)
_PIPELINE_PRIORS = np.array([0.45, 0.35, 0.2])


def synthetic_knn_pipeline(seed=0, *, n_train=3000, n_pool=3000, n_knn=600, n_features=8, separation=2.2,
                           epochs=30, geometry="random"):
    """A small network, its exemplar vectors and the paper's KNN features on a pool of held-out points.

    Three Gaussian classes (priors 0.45, 0.35, 0.2, unit variance, means at
    distance ``separation`` from the origin in ``R^n_features``, placed as
    ``geometry`` says) give a training set, a KNN-fitting set and a pool. The
    "network" is a one-hidden-layer MLP (32 tanh units, scikit-learn, L-BFGS) trained
    on the training set; its hidden vector is the exemplar vector ``r``, its
    output layer the logits. The KNN approximation
    (:class:`calibtut.selective.pipeline.KNNFeaturePipeline`, ``K = 25``) and
    the localizer are fitted on the KNN-fitting set; every pool point then has
    the KNN's probabilities, ``q``, ``d`` and its exemplar vector. The band
    half-width ``omega`` comes from the whole pool's correct points with
    ``q > 0`` (the chapters split the pool afterwards; ``omega`` is then a
    fixed constant of the taxonomy, as the fixed-partition theorem needs).

    Parameters
    ----------
    seed : int, default 0
        Seed of the data, the network and the fits (non-negative).
    n_train : int, default 3000
        Training points (at least 100).
    n_pool : int, default 3000
        Pool points (at least 10).
    n_knn : int, default 600
        Points that fit the KNN approximation and the localizer (at least 10).
    n_features : int, default 8
        Input dimension (at least 2).
    separation : float, default 2.2
        Distance of the class means from the origin (positive).
    epochs : int, default 30
        Epochs of the KNN and localizer fits (at least 1).
    geometry : {"random", "equilateral"}, default "random"
        Where the class means lie. ``"random"``: each in an independent
        random direction, so the distances between them, and with them how
        hard the task is, are drawn with the seed (from 1.3 to 3.9 for seeds
        0-11 at ``separation=2.2``). ``"equilateral"``: the vertices of an
        equilateral triangle centred on the origin in a random plane, every
        pair ``separation * sqrt(3)`` apart, so that every seed draws the same
        task up to a rotation and only the samples and the fits change.

    Returns
    -------
    dict
        ``features``: the pool's :class:`~calibtut.selective.features.KNNFeatures`
        (the KNN's probabilities ``(n_pool, 3)``, labels, ``q`` and ``d``),
        ``exemplars`` ``(n_pool, 32)``, ``omega``, ``localizer_eta``,
        ``network_accuracy`` and ``knn_accuracy`` on the pool, ``agreement``
        (share of pool points where the KNN and the network predict the same
        class) and ``means`` ``(3, n_features)``, the class means.

    Examples
    --------
    >>> out = synthetic_knn_pipeline(0, n_train=300, n_pool=60, n_knn=40, epochs=2)
    >>> pool = out["features"]
    >>> pool.probs.shape, bool(pool.q.max() <= 25), out["omega"] > 0
    ((60, 3), True, True)
    >>> means = synthetic_knn_pipeline(0, n_train=300, n_pool=60, n_knn=40, epochs=2,
    ...                                geometry="equilateral")["means"]
    >>> np.linalg.norm(means[[0, 0, 1]] - means[[1, 2, 2]], axis=1).round(3)  # 2.2 sqrt(3)
    array([3.811, 3.811, 3.811])
    """
    if geometry not in ("random", "equilateral"):
        raise ValueError(f"geometry must be 'random' or 'equilateral', got {geometry!r}")
    seed = check_int(seed, "seed", minimum=0)
    n_train = check_int(n_train, "n_train", minimum=100)
    n_pool = check_int(n_pool, "n_pool", minimum=10)
    n_knn = check_int(n_knn, "n_knn", minimum=10)
    n_features = check_int(n_features, "n_features", minimum=2)
    separation = check_real(separation, "separation", low=0, low_open=True)
    epochs = check_int(epochs, "epochs", minimum=1)
    rng = np.random.default_rng(seed)
    if geometry == "random":
        directions = rng.normal(size=(3, n_features))
        means = separation * directions / np.linalg.norm(directions, axis=1, keepdims=True)
    else:  # unit vectors 120 degrees apart in the plane of two orthonormal random vectors
        plane = np.linalg.qr(rng.normal(size=(n_features, 2)))[0]
        angles = 2 * np.pi * np.arange(3) / 3
        means = separation * (np.cos(angles)[:, None] * plane[:, 0] + np.sin(angles)[:, None] * plane[:, 1])

    def draw(n):
        y = rng.choice(3, size=n, p=_PIPELINE_PRIORS)
        return means[y] + rng.normal(size=(n, n_features)), y

    (x_tr, y_tr), (x_knn, _), (x_pool, y_pool) = draw(n_train), draw(n_knn), draw(n_pool)
    net = MLPClassifier(hidden_layer_sizes=(32,), activation="tanh", solver="lbfgs", max_iter=300,
                        random_state=seed)
    with warnings.catch_warnings():  # a stand-in network: whether L-BFGS fully converged does not matter
        warnings.simplefilter("ignore", ConvergenceWarning)
        net.fit(x_tr, y_tr)

    def exemplars_and_logits(x):
        r = np.tanh(x @ net.coefs_[0] + net.intercepts_[0])
        return r, r @ net.coefs_[1] + net.intercepts_[1]

    r_tr, logits_tr = exemplars_and_logits(x_tr)
    r_knn, teacher = exemplars_and_logits(x_knn)
    r_pool, logits_pool = exemplars_and_logits(x_pool)
    # the KNN's distance temperature starts at the median distance of its fitting points to their
    # neighbours, the localizer's at the median d of the pool (its support)
    pipe = KNNFeaturePipeline(n_neighbors=N_NEIGHBORS, knn_eta="median", epochs=epochs).fit(r_tr, logits_tr, y_tr)
    fitting = pipe.kneighbors(r_knn)
    pipe.fit_knn(None, teacher, neighbours=fitting, seed=seed)
    pool = pipe.kneighbors(r_pool)
    features = pipe.transform(labels=y_pool, neighbours=pool)
    prediction = features.probs.argmax(axis=1)
    pipe.fit_localizer(r_knn, r_pool, eta=float(np.median(features.d)), neighbours=fitting, support_neighbours=pool,
                       seed=seed)
    return {
        "features": features, "exemplars": r_pool, "omega": band_width(features), "localizer_eta": pipe.localizer_.eta,
        "network_accuracy": float(np.mean(logits_pool.argmax(axis=1) == y_pool)),
        "knn_accuracy": float(np.mean(prediction == y_pool)),
        "agreement": float(np.mean(logits_pool.argmax(axis=1) == prediction)), "means": means,
    }


def _pool_features(pool):
    """The labelled :class:`~calibtut.selective.features.KNNFeatures` of a pipeline pool."""
    features = pool.get("features") if isinstance(pool, dict) else None
    if not isinstance(features, KNNFeatures) or features.labels is None:
        raise ValueError("pool must be the dict of synthetic_knn_pipeline (a labelled KNNFeatures under 'features')")
    return features


def _fixed_category(q, d, omega):
    """The fixed taxonomy ``(q, floor(d / (2 omega)))`` as one integer per point."""
    return q * 100_000 + np.floor(d / (2 * omega)).astype(np.int64)


def category_coverage_runs(pool, n_seeds, n_cal, alpha, *, kappa=None, seed=0):
    """Coverage per fixed ``(q, d-bin)`` category and true class over random splits of a pool.

    Each run permutes the pool (seed ``seed + run``): the first ``n_cal``
    points calibrate, the rest are test points. Three methods: label-
    conditional Mondrian conformal on the fixed taxonomy ``(q, d-bin, label)``
    with bins of width ``2 omega`` (``"mondrian fixed"``: Theorem 2 holds
    exactly), and ADMIT (:func:`calibtut.selective.admit.admit_sets`) on that fixed
    partition (``"admit fixed"``) and on the paper's sliding band
    (``"admit band"``); ADMIT adds the prediction to every set and gives the
    full set below ``kappa``, which only raises coverage.

    Parameters
    ----------
    pool : dict
        The output of :func:`synthetic_knn_pipeline`.
    n_seeds : int
        Number of random splits (at least 1).
    n_cal : int
        Calibration points per split (at least 1, fewer than the pool).
    alpha : float
        Miscoverage level in (0, 1).
    kappa : int, optional
        ADMIT's smallest class count per band; default ``ceil(1 / alpha) - 1``
        (no rejection beyond what a finite threshold needs).
    seed : int, default 0
        Seed of the first split (non-negative).

    Returns
    -------
    pandas.DataFrame
        Columns ``run``, ``method``, ``category`` (the fixed category code),
        ``class``, ``n_cal`` (calibration points of that category and class),
        ``n`` (test points) and ``covered``.

    Examples
    --------
    >>> pool = synthetic_knn_pipeline(0, n_train=300, n_pool=200, n_knn=40, epochs=2)
    >>> runs = category_coverage_runs(pool, 1, 100, 0.2)
    >>> sorted(runs["method"].unique())
    ['admit band', 'admit fixed', 'mondrian fixed']
    """
    features = _pool_features(pool)
    probs, labels, q, d = features.probs, features.labels, features.q, features.d
    omega = check_real(pool.get("omega"), "pool['omega']", low=0, low_open=True)
    n_seeds = check_int(n_seeds, "n_seeds", minimum=1)
    n_cal = check_int(n_cal, "n_cal", minimum=1, maximum=len(probs) - 1)
    alpha = check_alpha(alpha)
    kappa = math.ceil(1 / alpha) - 1 if kappa is None else check_int(kappa, "kappa", minimum=1)
    seed = check_int(seed, "seed", minimum=0)
    category = _fixed_category(q, d, omega)
    rows = []
    for run in range(n_seeds):
        order = np.random.default_rng(seed + run).permutation(len(probs))
        cal, test = order[:n_cal], order[n_cal:]
        cal_cat = category[cal] * 10 + labels[cal]
        test_cat = category[test][:, None] * 10 + np.arange(probs.shape[1])[None, :]
        admit = (features[cal], features[test], alpha)
        methods = {
            "mondrian fixed": mondrian_conformal_sets(probs[cal], labels[cal], probs[test], alpha,
                                                      cal_categories=cal_cat, test_categories=test_cat,
                                                      too_small="include"),
            "admit fixed": admit_sets(*admit, omega=omega, kappa=kappa, partition="fixed"),
            "admit band": admit_sets(*admit, omega=omega, kappa=kappa, partition="band"),
        }
        frame = pd.DataFrame({"category": category[test], "class": labels[test]})
        counts = pd.Series(cal_cat).value_counts()
        frame["n_cal"] = (frame["category"] * 10 + frame["class"]).map(counts).fillna(0).astype(int)
        for method, sets in methods.items():
            frame["covered"] = sets[np.arange(len(test)), labels[test]]
            table = frame.groupby(["category", "class", "n_cal"]).agg(n=("covered", "size"),
                                                                      covered=("covered", "sum"))
            rows.append(table.reset_index().assign(run=run, method=method))
    columns = ["run", "method", "category", "class", "n_cal", "n", "covered"]
    return pd.concat(rows, ignore_index=True)[columns]


def venn_admit_runs(pool, n_seeds, n_mc, n_vp, alpha, *, kappa=None, require_q=25, seed=0):
    """Venn-ADMIT's variants over random splits of a pool: admission, accuracy and the subset relations.

    Each run permutes the pool (seed ``seed + run``) into the ADMIT split
    (``n_mc`` points), the Venn split (``n_vp``) and test points. For every
    variant (``"Venn-ADMIT-w"`` unweighted, ``"Venn-ADMIT"`` weighted by the
    localizer's ``1 / psi'`` with ``psi`` the softmax of ``-||r_t - r_j|| / eta``
    over the Venn split, and both censored to ``q = require_q``, suffix
    ``_qK``) it records per true class the admitted test points and the
    correct ones, and whether each variant's admitted set lies inside its
    less restricted sibling's (Propositions 2-3).

    Parameters
    ----------
    pool : dict
        The output of :func:`synthetic_knn_pipeline`.
    n_seeds : int
        Number of random splits (at least 1).
    n_mc : int
        Points of ADMIT's calibration split (at least 1).
    n_vp : int
        Points of the Venn split (at least 1); ``n_mc + n_vp`` must leave test points.
    alpha : float
        Miscoverage level in (0, 1).
    kappa : int, optional
        ADMIT's smallest class count per band; default ``ceil(1 / alpha) - 1``.
    require_q : int, default 25
        The ``q`` that the censored variants keep (non-negative).
    seed : int, default 0
        Seed of the first split (non-negative).

    Returns
    -------
    pandas.DataFrame
        Columns ``run``, ``method``, ``by`` (``"true"``: ``class`` is the true
        class, the paper's stratification; ``"predicted"``: the predicted
        class, what Venn-ADMIT's categories condition on), ``class``, ``n``
        (test points of the class), ``admitted``, ``correct`` and ``nested``
        (the run's admitted set is inside the sibling's: weighted inside
        unweighted, censored inside uncensored; True for Venn-ADMIT-w itself).

    Examples
    --------
    >>> pool = synthetic_knn_pipeline(0, n_train=300, n_pool=300, n_knn=40, epochs=2)
    >>> runs = venn_admit_runs(pool, 1, 100, 100, 0.2)
    >>> runs["nested"].all()
    np.True_
    """
    features = _pool_features(pool)
    probs, labels, q = features.probs, features.labels, features.q
    omega = check_real(pool.get("omega"), "pool['omega']", low=0, low_open=True)
    eta = check_real(pool.get("localizer_eta"), "pool['localizer_eta']", low=0, low_open=True)
    exemplars = as_float_array(pool.get("exemplars"), "pool['exemplars']", ndim=2)
    n_seeds = check_int(n_seeds, "n_seeds", minimum=1)
    n_mc = check_int(n_mc, "n_mc", minimum=1)
    n_vp = check_int(n_vp, "n_vp", minimum=1, maximum=len(probs) - n_mc - 1)
    alpha = check_alpha(alpha)
    kappa = math.ceil(1 / alpha) - 1 if kappa is None else check_int(kappa, "kappa", minimum=1)
    require_q = check_int(require_q, "require_q", minimum=0)
    seed = check_int(seed, "seed", minimum=0)
    rows = []
    for run in range(n_seeds):
        order = np.random.default_rng(seed + run).permutation(len(probs))
        mc, vp, test = order[:n_mc], order[n_mc:n_mc + n_vp], order[n_mc + n_vp:]
        dist = pairwise_distances(exemplars[test], exemplars[vp])
        psi = torch.softmax(-dist / eta, dim=1).numpy()
        psi /= psi.sum(axis=1, keepdims=True)
        model = VennADMIT(alpha=alpha, omega=omega, kappa=kappa).fit(features[mc], features[vp])
        admitted = {}
        for name, weights in (("Venn-ADMIT-w", None), ("Venn-ADMIT", psi)):
            admitted[name] = model.predict_admitted(features[test], localizer_psi=weights)
            admitted[f"{name}_qK"] = admitted[name] & (q[test] == require_q)
        sibling = {"Venn-ADMIT-w": "Venn-ADMIT-w", "Venn-ADMIT": "Venn-ADMIT-w",
                   "Venn-ADMIT-w_qK": "Venn-ADMIT-w", "Venn-ADMIT_qK": "Venn-ADMIT"}
        correct = probs[test].argmax(axis=1) == labels[test]
        for name, chosen in admitted.items():
            nested = bool(np.all(admitted[sibling[name]][chosen]))
            for by, stratum in (("true", labels[test]), ("predicted", probs[test].argmax(axis=1))):
                for c in range(probs.shape[1]):
                    of_class = stratum == c
                    rows.append({"run": run, "method": name, "by": by, "class": c, "n": int(of_class.sum()),
                                 "admitted": int(np.sum(chosen & of_class)),
                                 "correct": int(np.sum(chosen & of_class & correct)), "nested": nested})
    return pd.DataFrame(rows)


def venn_calibration_table(n, accuracy, *, n_draws=200_000, seed=None):
    """Theorem 3 on one Venn category, by simulation: the true label's Venn probability is calibrated.

    A category holds ``n`` calibration points, each with label 1 with
    probability ``accuracy``, and a test point of the same law. With ``n_1``
    calibration labels equal to 1, the Venn predictor's probabilities of label
    1 are ``p_0 = n_1 / (n + 1)`` (test point added with label 0) and
    ``p_1 = (n_1 + 1) / (n + 1)``; Theorem 3 says that ``p_Y``, the one of the
    test point's true label ``Y``, is perfectly calibrated: ``E(Y | p_Y) = p_Y``.

    Parameters
    ----------
    n : int
        Calibration points in the category (at least 1).
    accuracy : float
        Probability of label 1, in [0, 1].
    n_draws : int, default 200000
        Simulated draws of the category and the test point (at least 1).
    seed : int, numpy.random.Generator or None
        Source of the simulation.

    Returns
    -------
    pandas.DataFrame
        One row per value taken by ``p_Y``: ``p_true`` (that value), ``draws``,
        ``frequency`` (mean of ``Y`` over those draws), ``sem`` (its binomial
        standard error at ``p_true``), and the means of ``p0`` and ``p1``.

    Examples
    --------
    >>> table = venn_calibration_table(4, 0.5, n_draws=1000, seed=0)
    >>> table["p_true"].tolist()
    [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    """
    n = check_int(n, "n", minimum=1)
    accuracy = check_real(accuracy, "accuracy", low=0, high=1)
    n_draws = check_int(n_draws, "n_draws", minimum=1)
    rng = check_rng(seed)
    ones = rng.binomial(n, accuracy, size=n_draws)
    y = (rng.uniform(size=n_draws) < accuracy).astype(float)
    frame = pd.DataFrame({"p_true": (ones + y) / (n + 1), "y": y, "p0": ones / (n + 1), "p1": (ones + 1) / (n + 1)})
    table = frame.groupby("p_true").agg(draws=("y", "size"), frequency=("y", "mean"), p0=("p0", "mean"),
                                        p1=("p1", "mean")).reset_index()
    table["sem"] = np.sqrt(table["p_true"] * (1 - table["p_true"]) / table["draws"])
    return table[["p_true", "draws", "frequency", "sem", "p0", "p1"]]


def binomial_admission(accuracy, n, alpha, *, n_draws=100_000, test_weight=1.0, seed=None):
    """Proposition 1's rule on one Venn category of known accuracy: simulated and exact admission.

    A category holds ``n`` calibration points, each correct with probability
    ``accuracy`` independently, and a test point of the same law. The lower
    Venn probability of the prediction is ``n_1 / (n + w)`` (``n_1`` correct
    calibration points, ``w`` the test weight); the point is admitted when it
    is at least ``1 - alpha``. Admission does not depend on the test point's
    own label, so the admitted accuracy is ``accuracy`` whatever the
    admission rate.

    Parameters
    ----------
    accuracy : float
        The category's true accuracy, in [0, 1].
    n : int
        Calibration points in the category (at least 1).
    alpha : float
        Miscoverage level in (0, 1).
    n_draws : int, default 100000
        Simulated calibration draws (at least 1).
    test_weight : float, default 1.0
        The test point's weight ``w >= 1``.
    seed : int, numpy.random.Generator or None
        Source of the simulation.

    Returns
    -------
    dict
        ``admission_rate`` (simulated), ``admission_exact`` (the binomial
        tail), ``admitted_accuracy`` (simulated, NaN if nothing was
        admitted), ``admitted`` (count) and ``hoeffding`` (the bound
        ``exp(-2 n (1 - alpha - accuracy)^2)`` on the admission rate when
        ``accuracy < 1 - alpha``, else 1).

    Examples
    --------
    >>> out = binomial_admission(0.89, 1000, 0.1, n_draws=20_000, seed=0)
    >>> round(out["admission_exact"], 3), out["admission_exact"] <= out["hoeffding"]
    (0.144, True)
    """
    accuracy = check_real(accuracy, "accuracy", low=0, high=1)
    n = check_int(n, "n", minimum=1)
    alpha = check_alpha(alpha)
    n_draws = check_int(n_draws, "n_draws", minimum=1)
    test_weight = check_real(test_weight, "test_weight", low=1)
    rng = check_rng(seed)
    n_correct = rng.binomial(n, accuracy, size=n_draws)
    test_correct = rng.uniform(size=n_draws) < accuracy
    admitted = n_correct / (n + test_weight) >= 1 - alpha
    needed = math.ceil((1 - alpha) * (n + test_weight) - 1e-9)
    gap = 1 - alpha - accuracy
    return {
        "admission_rate": float(admitted.mean()),
        "admission_exact": float(stats.binom.sf(needed - 1, n, accuracy)),
        "admitted_accuracy": float(test_correct[admitted].mean()) if admitted.any() else float("nan"),
        "admitted": int(admitted.sum()),
        "hoeffding": float(np.exp(-2 * n * gap**2)) if gap > 0 else 1.0,
    }
