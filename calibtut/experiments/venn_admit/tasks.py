"""The runs behind Tables 2-5 of paper 001 (Schmaltz & Rasooly): Sentiment, Protein and Grammar, one per call.

:func:`run_va_config` runs one task, a test set (``"sentiment"``: the 488 CAD
test reviews; ``"sentiment_ood"``: the 4,750 balanced SemEval-2017 tweets)
and a calibration-split seed, through the whole pipeline of the paper:

1. **network**: a :class:`~calibtut.models.memory_head.MemoryHead` on TF-IDF
   vectors (word 1-2-grams, fitted on the training reviews only; or, with
   ``features="minilm"``, on cached MiniLM sentence embeddings), trained on
   the 3,414 CAD reviews; its hidden layer gives the exemplar vectors ``r``.
   It depends on ``model_seed`` and its settings only, never on ``seed``, so
   every calibration split of a sweep sees the same network (the paper has
   one network and one split);
2. **calibration data** ``D_valid``: ``n_calibration`` Maas et al. reviews
   disjoint from CAD (:func:`calibtut.data.sentiment.load_sentiment`), drawn
   with ``seed`` and split with it into ``D_knn`` (10 %), ``D_ca^mc`` (45 %)
   and ``D_ca^vp`` (45 %) as in the paper's Section 5;
3. **KNN approximation** (:mod:`calibtut.selective.knn_approximation`): the 25 nearest
   training exemplars of every point, the ``2C + 1``-parameter KNN fitted on
   ``D_knn``, the features ``q`` and ``d`` (with the KNN's probabilities and
   the labels, one :class:`~calibtut.selective.features.KNNFeatures` bundle
   per split) and the band half-width ``omega`` (on ``D_ca^mc``); the
   one-parameter localizer fitted on ``D_knn`` with
   ``D_ca^vp`` as support;
4. **methods** (:data:`METHODS`) on the test set, every set method with the
   point prediction added (the paper's convention): the baselines calibrated on
   all of ``D_valid`` (Conf_base, APS and RAPS on the temperature-scaled
   memory layer, Local_conf with the localizer's kernel, and our ablation
   LAC-class, label-conditional LAC without bands), ADMIT on ``D_ca^mc``
   (sliding band; ``ADMIT-fixed`` on fixed ``2 omega`` bins), the four
   Venn-ADMIT variants on ``D_ca^mc`` and ``D_ca^vp``, and Venn-ABERS on the
   KNN's probability (admit when the lower probability of the predicted class
   is at least ``1 - alpha``; not in the paper).

Rows are stratified by the **true** class (the paper's Tables 4-5): for each
class, the number ``n`` of admitted points (singletons), the accuracy among
them and their share of the test set. The network, the KNN and the localizer
also get their accuracy on the calibration points (``D_ca^mc`` and
``D_ca^vp``) and the test set (Table 2). :func:`va_points` returns the
per-point features behind Table 3.

:func:`run_protein_config` runs the same steps 3-4 on the Protein task
(Table 4), per residue: a :class:`~calibtut.models.protein_cnn.ProteinCNN`
trained on 60 % of the CB513 proteins, the other 40 % as ``D_valid`` (split
into its three parts by protein), TS115 as the test set.

:func:`run_grammar_config` runs them on the Grammar task, per token (the
paper's GrammarOOD in domain only: its FCE development set and newswire
sentences are not offline): a :class:`~calibtut.models.token_cnn.TokenCNN`
on FCE words trained on the FCE training sentences less a held-out
``D_valid`` of 2,200 sentences (split into its three parts by sentence), the
FCE test set as the test set; F0.5 of the error class joins its Table 2 rows.

The task lists :func:`va_tasks`, :func:`protein_tasks` and
:func:`grammar_tasks` feed :func:`calibtut.run.sweep`; the tables built from
the rows are in :mod:`calibtut.experiments.venn_admit.tables`.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import torch

from calibtut._torch import resolve_device
from calibtut._validation import (
    as_float_array,
    check_alpha,
    check_bool,
    check_choice,
    check_choices,
    check_int,
    check_labels,
    check_real,
)
from calibtut.conformal.sets import (
    LocalizedConformalClassifier,
    label_conditional_sets,
    raps_sets,
    split_conformal_sets,
)
from calibtut.data.grammar import load_fce
from calibtut.data.splits import calibration_parts
from calibtut.data.protein import load_protein_ss
from calibtut.data.sentiment import load_sentiment, sentiment_pool
from calibtut.experiments.venn_admit._common import N_NEIGHBORS, f05_score, method_list, with_prediction
from calibtut.models.exemplar import ExemplarCNN, exemplar_outputs, fit_exemplar_cnn
from calibtut.models.memory_head import MemoryHead, fit_memory_head, memory_head_outputs
from calibtut.models.protein_cnn import ProteinCNN, encode_proteins, fit_protein_cnn, protein_cnn_outputs
from calibtut.models.sentence_embeddings import (
    cached_embeddings,
    cached_token_states,
    minilm_encoder,
    minilm_token_encoder,
)
from calibtut.models.token_cnn import TokenCNN, WordVocabulary, fit_token_cnn, token_cnn_outputs
from calibtut.recalibration import TemperatureScaling
from calibtut.recalibration.venn import venn_abers
from calibtut.selective.admit import BLOCK_CELLS, VennADMIT, admit_sets, admitted_accuracy_by_class, venn_admit
from calibtut.selective.knn_approximation import band_width
from calibtut.selective.neighbors import pairwise_distances
from calibtut.selective.pipeline import KNNFeaturePipeline

__all__ = [
    "DATASETS",
    "FEATURES",
    "METHODS",
    "PROTEIN_METHODS",
    "grammar_tasks",
    "protein_tasks",
    "run_grammar_admissions",
    "run_grammar_config",
    "run_protein_admissions",
    "run_protein_config",
    "run_va_config",
    "va_points",
    "va_rows",
    "va_tasks",
]

#: Our test sets (the paper's Sentiment and SentimentOOD).
DATASETS = ("sentiment", "sentiment_ood")

#: The stand-in network's representation: a memory head on TF-IDF vectors or on all-MiniLM-L6-v2 sentence
#: embeddings, or paper 001's exemplar memory layer on MiniLM's token states (``"exemplar"``,
#: :mod:`calibtut.models.exemplar`); MiniLM's outputs are cached by content hash
#: (:mod:`calibtut.models.sentence_embeddings`; needs the ``embeddings`` extra).
FEATURES = ("tfidf", "minilm", "exemplar")

#: Every method, in the order of the paper's Table 5, then our ablations and extra calibrator.
METHODS = ("KNN", "Conf_base", "RAPS_adapt", "RAPS_size", "APS", "Local_conf", "ADMIT", "Venn-ADMIT-w",
           "Venn-ADMIT_qK-w", "Venn-ADMIT", "Venn-ADMIT_qK", "LAC-class", "ADMIT-fixed", "Venn-ABERS")

#: The methods of the three-class Protein task: all of :data:`METHODS` but the binary Venn-ABERS.
PROTEIN_METHODS = tuple(m for m in METHODS if m != "Venn-ABERS")



def _check_settings(seed, model_seed, n_calibration, hidden, epochs, max_features):
    check_int(seed, "seed", minimum=0)
    check_int(model_seed, "model_seed", minimum=0)
    check_int(n_calibration, "n_calibration", minimum=200)
    check_int(hidden, "hidden", minimum=2)
    check_int(epochs, "epochs", minimum=1)
    check_int(max_features, "max_features", minimum=10)


# ------------------------------------------------------------------------------------------ pipeline


@functools.lru_cache(maxsize=2)
def _network(features, model_seed, hidden, epochs, max_features):
    """The network trained on the CAD reviews: its output map and its outputs on the training reviews.

    The output map ``outputs(texts, part) -> (exemplars, logits)`` reads the
    texts through a TF-IDF vectoriser fitted on the training reviews, or
    through the MiniLM caches (sentence embeddings, or token states for
    ``"exemplar"``): each data part's whole pool
    (:func:`~calibtut.data.sentiment.sentiment_pool`) is encoded once, so the
    seeded calibration samples and tweet samples are looked up, not encoded.
    """
    texts, labels = load_sentiment("train")
    if features == "exemplar":
        outputs = _exemplar_network(texts, labels, model_seed, hidden, epochs)
    else:
        outputs = _head_network(texts, labels, features, model_seed, hidden, epochs, max_features)
    r, logits = outputs(texts, "train")
    return outputs, r, logits, labels


def _head_network(texts, labels, features, model_seed, hidden, epochs, max_features):
    """A :class:`~calibtut.models.memory_head.MemoryHead` on TF-IDF vectors or MiniLM sentence embeddings."""
    if features == "tfidf":
        from sklearn.feature_extraction.text import TfidfVectorizer

        vectorizer = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True, max_features=max_features)
        vectorizer.fit(texts)

        def transform(batch, part):
            return vectorizer.transform(batch)
    else:
        encode, model_id = minilm_encoder()

        def transform(batch, part):
            return cached_embeddings(batch, encode, model_id, pool=sentiment_pool(part))

    X = transform(texts, "train")
    head = MemoryHead(X.shape[1], 2, hidden=hidden, seed=model_seed)
    fit_memory_head(head, X, labels, epochs=epochs, batch_size=256, lr=3e-3, seed=model_seed)
    return lambda batch, part: memory_head_outputs(head, transform(batch, part))


def _exemplar_network(texts, labels, model_seed, filters, epochs):
    """Paper 001's memory layer (:class:`~calibtut.models.exemplar.ExemplarCNN`) over frozen MiniLM token states."""
    encode_tokens, model_id = minilm_token_encoder()

    def states(batch, part):
        return cached_token_states(batch, encode_tokens, model_id, pool=sentiment_pool(part))

    net = ExemplarCNN(states(texts[:1], "train").dim, 2, filters=filters, seed=model_seed)
    fit_exemplar_cnn(net, states(texts, "train"), labels, epochs=epochs, seed=model_seed)
    return lambda batch, part: exemplar_outputs(net, states(batch, part))


@functools.lru_cache(maxsize=4)
def _encoded(part, seed, n_calibration, network_key):
    """Exemplars, network logits and labels of one data part."""
    outputs = _network(*network_key)[0]
    texts, labels = load_sentiment(part, seed=seed, n_calibration=n_calibration)
    return (*outputs(texts, part), labels)


@functools.lru_cache(maxsize=4)
def _pipeline(dataset, seed, n_calibration, network_key):
    """Every per-point quantity of one Sentiment task (:func:`_approximation` on its data)."""
    _, train_r, train_logits, train_y = _network(*network_key)
    cal = _encoded("calibration", seed, n_calibration, network_key)
    test_part = "test" if dataset == "sentiment" else "ood"
    test = _encoded(test_part, seed, n_calibration, network_key)
    return _approximation((train_r, train_logits, train_y), cal, test, seed, 2)


def _training_neighbours(train, cal_r, test_r):
    """The ``K`` nearest training exemplars of the calibration and test points (``kneighbors``)."""
    search = KNNFeaturePipeline(n_neighbors=N_NEIGHBORS).fit(*train)
    return {"cal": search.kneighbors(cal_r), "test": search.kneighbors(test_r)}


def _approximation(train, cal, test, seed, n_classes, *, neighbours=None, localizer_points=None, groups=None):
    """Every per-point quantity of one task: a dict of splits, each a dict of arrays.

    ``train``, ``cal`` and ``test`` are ``(exemplars, logits, labels)`` of the
    network's training points, of ``D_valid`` and of the test set; ``seed``
    splits ``D_valid`` into ``D_knn``, ``D_ca^mc`` and ``D_ca^vp`` (by sequence
    when ``groups`` gives each row's sequence, :func:`calibtut.data.splits.calibration_parts`) and
    seeds the KNN and localizer fits (:class:`~calibtut.selective.pipeline.KNNFeaturePipeline`: the KNN's
    distance temperature starts at 1, the localizer's at the median ``d`` of ``D_valid``).
    ``neighbours`` (``{"cal": (dist, idx), "test": ...}``, :func:`_training_neighbours`) saves the search
    when the same points serve several splits; ``localizer_points`` caps the ``D_knn`` points
    the localizer is fitted on (its cost is their number times ``|D_ca^vp|``).
    """
    parts = calibration_parts(len(cal[2]), seed, groups)
    if neighbours is None:
        neighbours = _training_neighbours(train, cal[0], test[0])
    pipe = KNNFeaturePipeline(n_neighbors=N_NEIGHBORS, knn_eta=1.0, epochs=30).fit(*train)
    cal_nb = neighbours["cal"]

    def rows(nb, i):
        return nb[0][torch.as_tensor(i)], nb[1][i]

    pipe.fit_knn(None, cal[1][parts["knn"]], neighbours=rows(cal_nb, parts["knn"]), seed=seed)
    split = {}
    for name, (r, logits, y) in {"cal": cal, "test": test}.items():
        s = split[name] = {"r": r, "logits": logits, "y": y}
        s["features"] = pipe.transform(labels=y, neighbours=neighbours[name])
        s["knn_probs"], s["q"], s["d"] = s["features"].probs, s["features"].q, s["features"].d
        s["knn_pred"] = s["knn_probs"].argmax(axis=1)
    cal_split = split["cal"]
    omega = band_width(cal_split["features"][parts["mc"]])
    vp, fitting = parts["vp"], parts["knn"][:localizer_points]
    pipe.fit_localizer(cal[0][fitting], cal[0][vp], eta=float(np.median(cal_split["d"])) or 1.0,
                       neighbours=rows(cal_nb, fitting), support_neighbours=rows(cal_nb, vp), seed=seed)
    vp_logits = pipe.knn_logits(neighbours=rows(cal_nb, vp))
    test_r = test[0]

    def psi(rows):
        """The localizer's weights of test points ``rows`` over ``D_ca^vp`` (dense only block by block)."""
        return pipe.localizer_weights(test_r[rows])

    step = max(1, BLOCK_CELLS // len(vp))  # the block budget of calibtut.selective.admit
    split["test"]["psi"] = psi
    split["test"]["localizer_pred"] = np.concatenate(
        [(psi(np.arange(i, min(i + step, len(test_r)))) @ vp_logits).argmax(axis=1)
         for i in range(0, len(test_r), step)])
    return {"split": split, "parts": parts, "omega": omega, "eta": pipe.localizer_.eta, "n_classes": n_classes}


# ------------------------------------------------------------------------------------------ methods


def _local_kernel(test_r, cal_r, eta):
    return np.exp(-pairwise_distances(test_r, cal_r).numpy() / eta)


def _method_sets(p, alpha, kappa, seed, methods):
    """``{method: (admitted, prediction, sets or None)}`` on the test set."""
    cal, test, parts = p["split"]["cal"], p["split"]["test"], p["parts"]
    valid = np.concatenate([parts["knn"], parts["mc"], parts["vp"]])
    out = {}

    def sets_method(name, sets, probs):
        sets = with_prediction(sets, probs)
        out[name] = (sets.sum(axis=1) == 1, probs.argmax(axis=1), sets)

    want = set(methods)
    knn_cal, y_cal, knn_test = cal["knn_probs"][valid], cal["y"][valid], test["knn_probs"]
    if "KNN" in want:
        out["KNN"] = (np.ones(len(knn_test), bool), test["knn_pred"], None)
    if "Conf_base" in want:
        sets_method("Conf_base", split_conformal_sets(knn_cal, y_cal, knn_test, alpha), knn_test)
    if want & {"APS", "RAPS_size", "RAPS_adapt"}:
        ts = TemperatureScaling(loss="nll").fit(cal["logits"][valid], y_cal)
        mem_cal, mem_test = ts.predict_proba(cal["logits"][valid]), ts.predict_proba(test["logits"])
        rng = np.random.default_rng([seed, 2])
        if "APS" in want:
            sets_method("APS", split_conformal_sets(mem_cal, y_cal, mem_test, alpha, score="aps", randomized=True,
                                                    allow_empty=False, seed=rng), mem_test)
        for name, criterion in (("RAPS_size", "size"), ("RAPS_adapt", "adaptiveness")):
            if name in want:
                sets_method(name, raps_sets(mem_cal, y_cal, mem_test, alpha, criterion=criterion, seed=rng)[0],
                            mem_test)
    if "Local_conf" in want:
        local = LocalizedConformalClassifier(kernel=functools.partial(_local_kernel, eta=p["eta"]), alpha=alpha)
        local.fit(knn_cal, y_cal, cal["r"][valid])
        blocks = [local.predict_set(knn_test[i:i + 1000], test["r"][i:i + 1000])
                  for i in range(0, len(knn_test), 1000)]
        sets_method("Local_conf", np.concatenate(blocks), knn_test)
    if "LAC-class" in want:
        sets_method("LAC-class", label_conditional_sets(knn_cal, y_cal, knn_test, alpha), knn_test)
    mc, vp = cal["features"][parts["mc"]], cal["features"][parts["vp"]]
    for name, partition in (("ADMIT", "band"), ("ADMIT-fixed", "fixed")):
        if name in want:
            sets_method(name, admit_sets(mc, test["features"], alpha, omega=p["omega"], kappa=kappa,
                                         partition=partition), knn_test)
    for name in ("Venn-ADMIT-w", "Venn-ADMIT_qK-w", "Venn-ADMIT", "Venn-ADMIT_qK"):
        if name in want:
            admitted, _ = venn_admit(mc, vp, test["features"], alpha, omega=p["omega"], kappa=kappa,
                                     localizer_psi=None if name.endswith("-w") else test["psi"],
                                     require_q=N_NEIGHBORS if "_qK" in name else None)
            out[name] = (admitted, test["knn_pred"], None)
    if "Venn-ABERS" in want:
        p0, p1 = venn_abers(knn_cal[:, 1], y_cal, knn_test[:, 1])
        lower = np.where(test["knn_pred"] == 1, p0, 1 - p1)
        out["Venn-ABERS"] = (lower >= 1 - alpha, test["knn_pred"], None)
    return out


# ------------------------------------------------------------------------------------------ runner


def _arguments(dataset, seed, n_calibration, model_seed, hidden, epochs, max_features, features):
    check_choice(dataset, "dataset", DATASETS)
    check_choice(features, "features", FEATURES)
    _check_settings(seed, model_seed, n_calibration, hidden, epochs, max_features)
    key = (features, int(model_seed), int(hidden), int(epochs), int(max_features))
    return dataset, int(seed), int(n_calibration), key


def _accuracy_rows(p, f05=False):
    cal, test, parts = p["split"]["cal"], p["split"]["test"], p["parts"]
    held = np.concatenate([parts["mc"], parts["vp"]])
    rows = []
    for split, y, preds in (
        ("calibration", cal["y"][held], {"memory layer": cal["logits"][held].argmax(axis=1),
                                         "KNN": cal["knn_pred"][held]}),
        ("test", test["y"], {"memory layer": test["logits"].argmax(axis=1), "KNN": test["knn_pred"],
                             "localizer": test["localizer_pred"]}),
    ):
        for model, pred in preds.items():
            rows.append({"table": "model", "split": split, "method": model, "class": "all", "n": int(y.size),
                         "accuracy": float(np.mean(pred == y)), "share": 1.0,
                         "agreement": float(np.mean(pred == preds["memory layer"])),
                         **({"f05": f05_score(y, pred)} if f05 else {})})
    return rows


def run_va_config(dataset="sentiment", seed=0, *, n_calibration=16000, alpha=0.1, kappa=1000, methods=None,
                  model_seed=0, hidden=128, epochs=10, max_features=20000, features="tfidf"):
    """One test set and one calibration split through the whole pipeline: every method's singletons by class.

    Parameters
    ----------
    dataset : {"sentiment", "sentiment_ood"}, default "sentiment"
        The test set (:data:`DATASETS`).
    seed : int, default 0
        Draws the calibration reviews (and the negative tweets of the OOD test
        set) and splits them into ``D_knn``, ``D_ca^mc`` and ``D_ca^vp``; also
        seeds the KNN and localizer fits and the randomised APS/RAPS scores.
    n_calibration : int, default 16000
        Size of ``D_valid`` (at least 200; the paper: 16,000).
    alpha : float, default 0.1
        Miscoverage level in (0, 1) (the paper: 0.1).
    kappa : int, default 1000
        ADMIT's smallest band count per class (the paper: 1000).
    methods : sequence of str or str, optional
        A subset of :data:`METHODS` (default: all), as a list or one
        comma-separated str (the form a task of :func:`va_tasks` holds).
    model_seed : int, default 0
        Seed of the network (fixed across calibration splits).
    hidden : int, default 128
        Width of the memory layer (for ``"exemplar"``: its number of filters,
        the paper's 1000; the exemplar vectors have twice as many entries).
    epochs : int, default 10
        Training epochs of the network (memory head: Adam, learning rate
        0.003, batches of 256; exemplar layer: Adadelta, learning rate 1, batches of 32).
    max_features : int, default 20000
        Largest TF-IDF vocabulary.
    features : {"tfidf", "minilm", "exemplar"}, default "tfidf"
        The network (:data:`FEATURES`); ``"minilm"`` and ``"exemplar"`` need
        the ``embeddings`` extra and encode each part's pool of texts once
        into the cache (``"exemplar"``: MiniLM's token states, about 150 KB
        a review; the whole Sentiment pool takes about 4 GB).

    Returns
    -------
    pandas.DataFrame
        Columns ``table`` (``"model"``: Table 2 rows; ``"singletons"``: Table
        5 rows), ``split`` (``"calibration"`` or ``"test"``), ``method``,
        ``class`` (``"0"``, ``"1"`` or ``"all"``), ``n``, ``accuracy``,
        ``share``, ``agreement`` (model rows: agreement of the argmax with the
        memory layer's), ``coverage`` and ``mean_size`` (set methods), and
        ``omega``, ``eta``, ``n_test``; :func:`calibtut.run.sweep` adds the
        task's ``dataset`` and ``seed``.

    Examples
    --------
    >>> rows = run_va_config("sentiment", n_calibration=2000, kappa=50,
    ...                      methods=["ADMIT"], epochs=2)  # doctest: +SKIP
    >>> sorted(rows["method"].unique())  # doctest: +SKIP
    ['ADMIT', 'KNN', 'localizer', 'memory layer']
    """
    dataset, seed, n_calibration, network_key = _arguments(dataset, seed, n_calibration, model_seed, hidden, epochs,
                                                           max_features, features)
    alpha = check_alpha(alpha)
    kappa = check_int(kappa, "kappa", minimum=1)
    methods = method_list(methods, METHODS)
    return _result_rows(_pipeline(dataset, seed, n_calibration, network_key), alpha, kappa, seed, methods)


def va_rows(train, cal, test, seed=0, *, alpha=0.1, kappa=1000, methods=None, points=False):
    """Steps 3-4 of :func:`run_va_config` on a network's outputs computed elsewhere (e.g. on a GPU).

    Parameters
    ----------
    train, cal, test : tuple of (array_like, array_like, array_like)
        ``(exemplars (n, dim), logits (n, n_classes), labels (n,))`` of the
        network's training points, of ``D_valid`` (at least 20 points) and of the test set.
    seed : int, default 0
        Splits ``D_valid`` into ``D_knn``, ``D_ca^mc`` and ``D_ca^vp``; seeds
        the KNN and localizer fits and the randomised APS/RAPS scores.
    alpha : float, default 0.1
        Miscoverage level in (0, 1).
    kappa : int, default 1000
        ADMIT's smallest band count per class.
    methods : sequence of str or str, optional
        A subset of :data:`METHODS` (default: all).
    points : bool, default False
        Also return the per-point frame of :func:`va_points` (the same
        pipeline, so it costs nothing more).

    Returns
    -------
    rows : pandas.DataFrame
        The rows of :func:`run_va_config`.
    points : pandas.DataFrame
        Only with ``points=True``: the frame of :func:`va_points`.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> def part(n):
    ...     y = rng.integers(2, size=n)
    ...     r = rng.normal(size=(n, 4)) + y[:, None]
    ...     return r, np.column_stack([-r[:, 0], r[:, 0]]), y
    >>> rows, pts = va_rows(part(60), part(200), part(30), kappa=20, methods=["ADMIT"], points=True)
    >>> sorted(rows["method"].unique()), pts["split"].value_counts()["test"]
    (['ADMIT', 'KNN', 'localizer', 'memory layer'], np.int64(30))
    """
    parts = []
    for name, (r, logits, y) in (("train", train), ("cal", cal), ("test", test)):
        r = as_float_array(r, f"{name} exemplars", ndim=2).astype(np.float32)
        logits = as_float_array(logits, f"{name} logits", ndim=2)
        y = check_labels(y, f"{name} labels", n_classes=logits.shape[1], n=len(r))
        if len(logits) != len(r) or logits.shape[1] < 2:
            raise ValueError(f"{name} logits must have one row of at least 2 classes per exemplar, "
                             f"got shape {logits.shape} for {len(r)} exemplars")
        parts.append((r, logits, y))
    if len({p[0].shape[1] for p in parts}) != 1 or len({p[1].shape[1] for p in parts}) != 1:
        raise ValueError("train, cal and test must share the exemplar width and the number of classes")
    if len(parts[1][0]) < 20 or len(parts[0][0]) < N_NEIGHBORS:
        raise ValueError(f"cal must have at least 20 points and train at least {N_NEIGHBORS}")
    seed = check_int(seed, "seed", minimum=0)
    alpha = check_alpha(alpha)
    kappa = check_int(kappa, "kappa", minimum=1)
    methods = method_list(methods, METHODS if parts[0][1].shape[1] == 2 else PROTEIN_METHODS)
    check_bool(points, "points")
    p = _approximation(*parts, seed, parts[0][1].shape[1])
    rows = _result_rows(p, alpha, kappa, seed, methods)
    return (rows, _points_frame(p)) if points else rows


def _result_rows(p, alpha, kappa, seed, methods, *, f05=False):
    """Table 2 rows (with F0.5 of class 1 when ``f05``) and every method's singletons by true class."""
    y = p["split"]["test"]["y"]
    rows = _accuracy_rows(p, f05)
    for method, (admitted, pred, sets) in _method_sets(p, alpha, kappa, seed, methods).items():
        table = admitted_accuracy_by_class(admitted, pred, y, p["n_classes"])
        extra = {}
        if sets is not None:
            extra = {"coverage": float(sets[np.arange(len(y)), y].mean()), "mean_size": float(sets.sum(axis=1).mean())}
        for rec in table.to_dict("records"):
            rows.append({"table": "singletons", "split": "test", "method": method, "class": str(rec["class"]),
                         "n": int(rec["n"]), "accuracy": float(rec["accuracy"]), "share": float(rec["share"]),
                         **extra})
    out = pd.DataFrame(rows)
    return out.assign(omega=p["omega"], eta=p["eta"], n_test=int(y.size))


def _admission_rows(p, alpha, kappa, seed, methods):
    """Per method and test sequence: admitted points, correct ones and ``sum 1 / sqrt(|T|)`` of their categories."""
    test = p["split"]["test"]
    sets = _method_sets(p, alpha, kappa, seed, methods)
    size = None
    if any(name.startswith("Venn-ADMIT") for name in sets):
        # the four variants share their categories: neither the weight nor q = K changes one
        cal, parts = p["split"]["cal"], p["parts"]
        venn = VennADMIT(alpha=alpha, omega=p["omega"], kappa=kappa).fit(cal["features"][parts["mc"]],
                                                                   cal["features"][parts["vp"]])
        size = venn.predict_category_size(test["features"])
    frames = []
    for method, (admitted, pred, _) in sets.items():
        if not admitted.any():  # one empty row, so that a method that admits nothing is not lost
            frames.append(pd.DataFrame({"table": "admitted", "method": method, "sequence": [-1], "n": [0],
                                        "correct": [0], "category_rsqrt": [np.nan]}))
            continue
        ids, inverse = np.unique(p["test_sequence"][admitted], return_inverse=True)
        right = (pred == test["y"])[admitted]
        rsqrt = (np.bincount(inverse, 1 / np.sqrt(size[admitted]), ids.size) if method.startswith("Venn-ADMIT")
                 else np.full(ids.size, np.nan))
        frames.append(pd.DataFrame({"table": "admitted", "method": method, "sequence": ids,
                                    "n": np.bincount(inverse, minlength=ids.size),
                                    "correct": np.bincount(inverse, right, ids.size).astype(np.int64),
                                    "category_rsqrt": rsqrt}))
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["table", "method", "sequence", "n", "correct", "category_rsqrt"])
    return out.assign(n_test=int(test["y"].size))


def va_points(dataset="sentiment", seed=0, *, n_calibration=16000, model_seed=0, hidden=128, epochs=10,
              max_features=20000, features="tfidf"):
    """The per-point features behind Tables 2-3: labels, predictions, KNN probabilities, ``q`` and ``d``.

    Parameters are those of :func:`run_va_config` (the calls share one cache,
    so this costs nothing after a run with the same arguments).

    Parameters
    ----------
    dataset : {"sentiment", "sentiment_ood"}, default "sentiment"
    seed : int, default 0
    n_calibration : int, default 16000
    model_seed : int, default 0
    hidden : int, default 128
    epochs : int, default 10
    max_features : int, default 20000
    features : {"tfidf", "minilm", "exemplar"}, default "tfidf"

    Returns
    -------
    pandas.DataFrame
        One row per calibration point (``split`` is ``"knn"``, ``"mc"`` or
        ``"vp"``) and test point (``"test"``): ``label``, ``network_pred``,
        ``knn_pred``, ``p0``, ``p1`` (the KNN's probabilities), ``q``, ``d``.

    Examples
    --------
    >>> pts = va_points("sentiment", n_calibration=2000, epochs=2)  # doctest: +SKIP
    >>> sorted(pts["split"].unique())  # doctest: +SKIP
    ['knn', 'mc', 'test', 'vp']
    """
    dataset, seed, n_calibration, network_key = _arguments(dataset, seed, n_calibration, model_seed, hidden, epochs,
                                                           max_features, features)
    return _points_frame(_pipeline(dataset, seed, n_calibration, network_key))


def _points_frame(p):
    """The per-point frame of :func:`va_points` from a pipeline's splits (one ``p<c>`` column per class)."""
    frames = []
    for name, s in p["split"].items():
        probs = {f"p{c}": s["knn_probs"][:, c] for c in range(s["knn_probs"].shape[1])}
        frame = pd.DataFrame({"label": s["y"], "network_pred": s["logits"].argmax(axis=1), "knn_pred": s["knn_pred"],
                              **probs, "q": s["q"], "d": s["d"]})
        if name == "cal":
            labels = np.empty(len(frame), dtype=object)
            for part, idx in p["parts"].items():
                labels[idx] = part
            frame.insert(0, "split", labels)
        else:
            frame.insert(0, "split", "test")
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


# ------------------------------------------------------------------------------------------ protein


@functools.lru_cache(maxsize=2)
def _protein_network(model_seed, n_proteins, hidden, channels, epochs, batch_size, lr, device):
    """CB513 split by protein, the CNN trained on ``D_tr``: its encoder and the outputs of ``D_tr`` and ``D_valid``.

    Returns the network, the encoder, the per-residue outputs of ``D_tr``
    and ``D_valid`` and each ``D_valid`` residue's protein (:func:`_sequence_ids`).
    """
    sequences, labels = load_protein_ss("cb513")
    chosen = np.random.default_rng([model_seed, 3]).permutation(len(sequences))[:n_proteins]
    n_train = int(round(0.6 * chosen.size))
    net = ProteinCNN(3, hidden=hidden, channels=channels, seed=model_seed)
    parts = []
    for i, index in enumerate((chosen[:n_train], chosen[n_train:])):
        seqs, ys = [sequences[j] for j in index], [labels[j] for j in index]
        if i == 0:
            fit_protein_cnn(net, seqs, ys, epochs=epochs, batch_size=batch_size, lr=lr, seed=model_seed,
                            device=device)
        parts.append((*protein_cnn_outputs(net, seqs, device=device), np.concatenate(ys)))
    return net, encode_proteins, parts[0], parts[1], _sequence_ids(ys)


@functools.lru_cache(maxsize=2)
def _grammar_network(model_seed, n_valid_sentences, n_sentences, min_count, embedding, width, n_layers, hidden,
                     channels, epochs, batch_size, lr, class_weight, device):
    """FCE train split by sentence into ``D_valid`` and ``D_tr``, the word CNN trained on ``D_tr``.

    Returns the network, the word encoder (the vocabulary of ``D_tr``), the
    per-token outputs of ``D_tr`` and ``D_valid`` and each ``D_valid`` token's
    sentence (:func:`_sequence_ids`).
    """
    sentences, labels = load_fce("train")
    order = np.random.default_rng([model_seed, 3]).permutation(len(sentences))
    valid, train = order[:n_valid_sentences], order[n_valid_sentences:n_valid_sentences + n_sentences]
    vocab = WordVocabulary([sentences[j] for j in train], min_count=min_count)
    net = TokenCNN(vocab.n_tokens, 2, embedding=embedding, channels=channels, width=width, n_layers=n_layers,
                   hidden=hidden, seed=model_seed)
    parts = []
    for i, index in enumerate((train, valid)):
        tokens, ys = vocab.encode([sentences[j] for j in index]), [labels[j] for j in index]
        if i == 0:
            fit_token_cnn(net, tokens, ys, epochs=epochs, batch_size=batch_size, lr=lr, seed=model_seed,
                          class_weight=None if class_weight is None else (1.0, class_weight), device=device)
        parts.append((*token_cnn_outputs(net, tokens, device=device), np.concatenate(ys)))
    return net, vocab.encode, parts[0], parts[1], _sequence_ids(ys)


def _sequence_ids(labels):
    """Each token's sequence number, for per-sequence label arrays ``labels``."""
    return np.repeat(np.arange(len(labels)), [len(y) for y in labels])


def _sequence_task(task):
    """The network builder, the test-set loader and the class count of a per-token task ("protein" or "grammar")."""
    if task == "protein":
        return _protein_network, functools.partial(load_protein_ss, "ts115"), 3
    return _grammar_network, functools.partial(load_fce, "test"), 2


@functools.lru_cache(maxsize=2)
def _sequence_data(task, n_test, network_key):
    """A per-token task's network outputs on ``D_tr``, ``D_valid`` and ``n_test`` test sequences; their neighbours.

    Also each ``D_valid`` token's sequence, by which the calibration splits are drawn, and each test
    token's sequence (its index in the test set).

    ``network_key`` holds the network builder's arguments, ``model_seed``
    first and ``device`` last; the test sequences are drawn with ``model_seed``.
    """
    network, load_test, _ = _sequence_task(task)
    net, encode, train, cal, cal_groups = network(*network_key)
    sequences, labels = load_test()
    chosen = np.sort(np.random.default_rng([network_key[0], 4]).permutation(len(sequences))[:n_test])
    r, logits = token_cnn_outputs(net, encode([sequences[j] for j in chosen]), device=network_key[-1])
    test = (r, logits, np.concatenate([labels[j] for j in chosen]))
    test_groups = chosen[_sequence_ids([labels[j] for j in chosen])]
    return train, cal, test, _training_neighbours(train, cal[0], test[0]), cal_groups, test_groups


@functools.lru_cache(maxsize=4)
def _sequence_pipeline(task, seed, n_test, localizer_points, network_key):
    """Every per-point quantity of one per-token task (the network and neighbours are shared by every split).

    ``D_valid`` is split by sequence: a protein's residues or a sentence's
    tokens fall in one of ``D_knn``, ``D_ca^mc`` and ``D_ca^vp``.
    """
    train, cal, test, neighbours, groups, test_groups = _sequence_data(task, n_test, network_key)
    p = _approximation(train, cal, test, seed, _sequence_task(task)[2], neighbours=neighbours,
                       localizer_points=localizer_points, groups=groups)
    return {**p, "test_sequence": test_groups}


def _training_settings(model_seed, hidden, channels, epochs, batch_size, lr):
    """The validated network settings shared by the per-token tasks."""
    return (check_int(model_seed, "model_seed", minimum=0), check_int(hidden, "hidden", minimum=2),
            check_int(channels, "channels", minimum=1), check_int(epochs, "epochs", minimum=1),
            check_int(batch_size, "batch_size", minimum=1), check_real(lr, "lr", low=0, low_open=True))


def _calibration_settings(seed, alpha, kappa, methods, allowed, localizer_points):
    """The validated calibration-split settings shared by the per-token tasks."""
    seed = check_int(seed, "seed", minimum=0)
    alpha = check_alpha(alpha)
    kappa = check_int(kappa, "kappa", minimum=1)
    methods = method_list(methods, allowed)
    if localizer_points is not None:
        localizer_points = check_int(localizer_points, "localizer_points", minimum=2)
    return seed, alpha, kappa, methods, localizer_points


def run_protein_config(dataset="protein", seed=0, *, n_proteins=None, n_test_proteins=None, alpha=0.1,
                       kappa=1000, methods=None, model_seed=0, hidden=256, channels=128, epochs=6, batch_size=16,
                       lr=1e-3, localizer_points=None, device="cpu", points=False):
    """The Protein task on one calibration split: CB513 for training and calibration, TS115 for testing.

    The paper's Table 4 protocol at small scale (its TAPE data, casp12 and
    the TAPE Transformer are not available offline):

    1. **network**: ``n_proteins`` CB513 proteins, drawn with ``model_seed``,
       are split by protein into ``D_tr`` (60 %) and ``D_valid`` (40 %); a
       :class:`~calibtut.models.protein_cnn.ProteinCNN` is trained on
       ``D_tr`` (once per ``model_seed`` and settings: every calibration split
       sees the same network, as in the paper). Its memory layer gives every
       residue an exemplar vector;
    2. ``seed`` splits the proteins of ``D_valid`` into ``D_knn`` (10 %),
       ``D_ca^mc`` and ``D_ca^vp`` (45 % each): a protein's residues stay
       together, so no part holds neighbours of the same chain;
    3. the KNN approximation, ``q``, ``d``, the localizer and every method of
       :data:`PROTEIN_METHODS` (:data:`METHODS` less Venn-ABERS, which is
       binary) on the residues of ``n_test_proteins`` TS115 proteins.

    Parameters
    ----------
    dataset : {"protein"}, default "protein"
        The task's name (so that :func:`protein_tasks` rows read like the others).
    seed : int, default 0
        The calibration split; also seeds the KNN and localizer fits and the
        randomised APS/RAPS scores.
    n_proteins : int, optional
        CB513 proteins used (at least 20; default all 511).
    n_test_proteins : int, optional
        TS115 proteins tested, drawn with ``model_seed`` (at least 1; default
        all 115, the paper's N = 29,704 residues).
    alpha : float, default 0.1
        Miscoverage level in (0, 1).
    kappa : int, default 1000
        ADMIT's smallest band count per class (the paper: 1000).
    methods : sequence of str or str, optional
        A subset of :data:`PROTEIN_METHODS` (default: all), a list or one comma-separated str.
    model_seed : int, default 0
        Seed of the CB513 subset and split, the network and the TS115 subset.
    hidden : int, default 256
        Width of the memory layer.
    channels : int, default 128
        Channels of the three width-11 convolutions.
    epochs : int, default 6
        Training epochs (Adam).
    batch_size : int, default 16
        Proteins per training batch.
    lr : float, default 1e-3
        Adam's learning rate (positive).
    localizer_points : int, optional
        Fit the localizer on the first ``localizer_points`` residues of
        ``D_knn`` only (at least 2; default all): its cost is their number
        times ``|D_ca^vp|``.
    device : {"cpu", "cuda"}, default "cpu"
        Where the network is trained and evaluated (the KNN search stays on the CPU).
    points : bool, default False
        Also return the per-residue frame of :func:`va_points` (columns
        ``p0``-``p2``), for :func:`~calibtut.experiments.venn_admit.category_accuracy`.

    Returns
    -------
    rows : pandas.DataFrame
        The columns of :func:`run_va_config`; ``class`` is ``"0"`` (Helix),
        ``"1"`` (Strand), ``"2"`` (Other) or ``"all"``; ``n_test`` is the
        number of test residues.
    points : pandas.DataFrame
        Only with ``points=True``.

    Examples
    --------
    >>> rows = run_protein_config(n_proteins=40, n_test_proteins=5, kappa=20,
    ...                           methods=["ADMIT"], epochs=1)  # doctest: +SKIP
    >>> sorted(rows["method"].unique())  # doctest: +SKIP
    ['ADMIT', 'KNN', 'localizer', 'memory layer']
    """
    check_bool(points, "points")
    p, alpha, kappa, seed, methods = _protein_pipeline(
        dataset, seed, n_proteins, n_test_proteins, alpha, kappa, methods, model_seed, hidden, channels, epochs,
        batch_size, lr, localizer_points, device)
    rows = _result_rows(p, alpha, kappa, seed, methods)
    return (rows, _points_frame(p)) if points else rows


def _protein_pipeline(dataset, seed, n_proteins, n_test_proteins, alpha, kappa, methods, model_seed, hidden,
                      channels, epochs, batch_size, lr, localizer_points, device):
    """The arguments of :func:`run_protein_config` checked, and its pipeline (cached)."""
    if dataset != "protein":
        raise ValueError(f"dataset must be 'protein', got {dataset!r}")
    n_proteins = 511 if n_proteins is None else check_int(n_proteins, "n_proteins", minimum=20, maximum=511)
    n_test_proteins = 115 if n_test_proteins is None else check_int(n_test_proteins, "n_test_proteins", minimum=1,
                                                                    maximum=115)
    seed, alpha, kappa, methods, localizer_points = _calibration_settings(seed, alpha, kappa, methods,
                                                                         PROTEIN_METHODS, localizer_points)
    model_seed, hidden, channels, epochs, batch_size, lr = _training_settings(model_seed, hidden, channels, epochs,
                                                                              batch_size, lr)
    network_key = (model_seed, n_proteins, hidden, channels, epochs, batch_size, lr, str(resolve_device(device)))
    p = _sequence_pipeline("protein", seed, n_test_proteins, localizer_points, network_key)
    return p, alpha, kappa, seed, methods


def run_protein_admissions(dataset="protein", seed=0, *, n_proteins=None, n_test_proteins=None, alpha=0.1,
                           kappa=1000, methods=None, model_seed=0, hidden=256, channels=128, epochs=6,
                           batch_size=16, lr=1e-3, localizer_points=None, device="cpu"):
    """What each method admits in each test protein of one calibration split, for a clustered accuracy check.

    The same task as :func:`run_protein_config` (and the same pipeline,
    cached), summarised per TS115 protein instead of per true class:
    the residues of one protein are correlated, so a check of the admitted
    accuracy counts proteins, not residues
    (:func:`~calibtut.experiments.venn_admit.admitted_accuracy_gap`).

    Parameters
    ----------
    dataset, seed, n_proteins, n_test_proteins, alpha, kappa, methods, model_seed, hidden, channels, epochs, \
batch_size, lr, localizer_points, device
        As in :func:`run_protein_config`.

    Returns
    -------
    pandas.DataFrame
        One row per method and test protein with at least one admitted
        residue (a method that admits none has one row, with ``sequence``
        -1 and ``n`` 0): ``table`` (``"admitted"``), ``method``, ``sequence`` (the
        protein's index in TS115), ``n`` (admitted residues), ``correct``
        (those predicted right), ``category_rsqrt`` (the sum over them of
        ``1 / sqrt(|T|)``, ``|T|`` the size of the residue's Venn category,
        :meth:`~calibtut.selective.VennADMIT.predict_category_size`; NaN
        for a method without categories) and ``n_test`` (all test residues).

    Examples
    --------
    >>> rows = run_protein_admissions(n_proteins=40, n_test_proteins=5, kappa=20,
    ...                               methods=["ADMIT"], epochs=1)  # doctest: +SKIP
    >>> list(rows.columns)  # doctest: +SKIP
    ['table', 'method', 'sequence', 'n', 'correct', 'category_rsqrt', 'n_test']
    """
    p, alpha, kappa, seed, methods = _protein_pipeline(
        dataset, seed, n_proteins, n_test_proteins, alpha, kappa, methods, model_seed, hidden, channels, epochs,
        batch_size, lr, localizer_points, device)
    return _admission_rows(p, alpha, kappa, seed, methods)


def protein_tasks(seeds=(0, 1, 2), *, model_seed=0, **fixed):
    """The task list of the Protein experiment for :func:`calibtut.run.sweep`: one task per calibration split.

    Parameters
    ----------
    seeds : sequence of int, default (0, 1, 2)
        Calibration-split seeds (the paper: one split).
    model_seed : int, default 0
        The network's seed (:func:`run_protein_config`), the same for every task. A task
        holds it only when it is not 0, the runner's default, so that the tasks
        of the runs published before it could be set keep their keys
        (:func:`calibtut.run.sweep.task_key`).
    **fixed
        Further keyword arguments of :func:`run_protein_config`, the same for every task.

    Returns
    -------
    list of dict

    Examples
    --------
    >>> [(t["dataset"], t["seed"]) for t in protein_tasks([0, 1], kappa=100)]
    [('protein', 0), ('protein', 1)]
    """
    return _sequence_tasks("protein", PROTEIN_METHODS, seeds, model_seed, fixed)


def _sequence_tasks(dataset, allowed, seeds, model_seed, fixed):
    """One task per calibration-split seed of a per-token task, ``methods`` as one comma-separated str."""
    if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
        raise TypeError(f"seeds must be a sequence of int, got {seeds!r}")
    seeds = [check_int(s, "seeds", minimum=0) for s in seeds]
    if fixed.get("methods") is not None:
        fixed = {**fixed, "methods": ",".join(method_list(fixed["methods"], allowed))}
    return [{"dataset": dataset, "seed": seed, **_with_model_seed(model_seed, fixed)} for seed in seeds]


def _with_model_seed(model_seed, fixed):
    """``fixed`` with ``model_seed`` added unless it is 0 (the runners' default: earlier tasks keep their keys)."""
    model_seed = check_int(model_seed, "model_seed", minimum=0)
    return {**fixed, "model_seed": model_seed} if model_seed else fixed


# ------------------------------------------------------------------------------------------ grammar

#: Sentences of the offline FCE splits (:func:`calibtut.data.grammar.load_fce`).
_FCE_SENTENCES = {"train": 28731, "test": 2720}


def run_grammar_config(dataset="grammar", seed=0, *, n_sentences=None, n_valid_sentences=2200,
                       n_test_sentences=None, alpha=0.1, kappa=100, methods=None, model_seed=0, min_count=2,
                       embedding=64, width=5, n_layers=2, hidden=128, channels=128, epochs=4, batch_size=32,
                       lr=3e-3, class_weight=None, localizer_points=None, device="cpu"):
    """The Grammar task on one calibration split: token-level error detection on FCE, in domain.

    The paper's GrammarOOD protocol (its Table 5) at small scale and in
    domain only: its ``D_valid`` is the FCE development set and its test set
    adds 2,000 newswire sentences (all tokens correct) to the FCE test set;
    neither is offline, nor is its BERT-large network. So:

    1. **network**: the 28,731 FCE training sentences are split by sentence,
       with ``model_seed``, into ``D_valid`` (``n_valid_sentences``, about
       35,000 tokens at the default, the size of the paper's ``D_valid``) and
       ``D_tr`` (``n_sentences`` of the rest); a
       :class:`~calibtut.models.token_cnn.TokenCNN` on the words of
       ``D_tr`` (:class:`~calibtut.models.token_cnn.WordVocabulary`:
       lower-cased, seen at least ``min_count`` times) is trained on ``D_tr``,
       once per ``model_seed`` and settings. Its memory layer gives every
       token an exemplar vector;
    2. ``seed`` splits the sentences of ``D_valid`` into ``D_knn`` (10 %),
       ``D_ca^mc`` and ``D_ca^vp`` (45 % each): a sentence's tokens stay
       together;
    3. the KNN approximation, ``q``, ``d``, the localizer and every method of
       :data:`METHODS` on the tokens of ``n_test_sentences`` FCE test
       sentences.

    Class 1 is a token inside a grammatical error (13 % of the training
    tokens, 15 % of the test tokens), class 0 a correct token.

    Parameters
    ----------
    dataset : {"grammar"}, default "grammar"
        The task's name (so that :func:`grammar_tasks` rows read like the others).
    seed : int, default 0
        The calibration split; also seeds the KNN and localizer fits and the
        randomised APS/RAPS scores.
    n_sentences : int, optional
        FCE training sentences in ``D_tr`` (at least 10; default all that
        ``D_valid`` leaves, 26,531 at the default ``n_valid_sentences``).
    n_valid_sentences : int, default 2200
        FCE training sentences held out as ``D_valid`` (at least 100, at most 28,000).
    n_test_sentences : int, optional
        FCE test sentences tested, drawn with ``model_seed`` (at least 1;
        default all 2,720, 41,477 tokens).
    alpha : float, default 0.1
        Miscoverage level in (0, 1).
    kappa : int, default 100
        ADMIT's smallest band count per class (the paper's GrammarOOD value: 100).
    methods : sequence of str or str, optional
        A subset of :data:`METHODS` (default: all), a list or one comma-separated str.
    model_seed : int, default 0
        Seed of the ``D_valid`` / ``D_tr`` split, the network and the test subset.
    min_count : int, default 2
        Smallest count in ``D_tr`` of a word with its own index (at least 1).
    embedding : int, default 64
        Width of the word embedding.
    width : int, default 5
        Kernel width of the convolutions (odd).
    n_layers : int, default 2
        Convolutions before the memory layer.
    hidden : int, default 128
        Width of the memory layer (the exemplar vectors).
    channels : int, default 128
        Channels of the convolutions.
    epochs : int, default 4
        Training epochs (Adam).
    batch_size : int, default 32
        Sentences per training batch.
    lr : float, default 3e-3
        Adam's learning rate (positive).
    class_weight : float, optional
        Weight of the error class in the training loss (positive; default:
        plain cross-entropy, weight 1).
    localizer_points : int, optional
        Fit the localizer on the first ``localizer_points`` tokens of
        ``D_knn`` only (at least 2; default all).
    device : {"cpu", "cuda"}, default "cpu"
        Where the network is trained and evaluated (the KNN search stays on the CPU).

    Returns
    -------
    pandas.DataFrame
        The columns of :func:`run_va_config` and ``f05`` (the model rows:
        F0.5 of the error class); ``class`` is ``"0"`` (correct), ``"1"``
        (error) or ``"all"``; ``n_test`` is the number of test tokens.

    Examples
    --------
    >>> rows = run_grammar_config(n_sentences=300, n_valid_sentences=200, n_test_sentences=20,
    ...                           kappa=10, methods=["ADMIT"], epochs=1)  # doctest: +SKIP
    >>> sorted(rows["method"].unique())  # doctest: +SKIP
    ['ADMIT', 'KNN', 'localizer', 'memory layer']
    """
    p, alpha, kappa, seed, methods = _grammar_pipeline(
        dataset, seed, n_sentences, n_valid_sentences, n_test_sentences, alpha, kappa, methods, model_seed,
        min_count, embedding, width, n_layers, hidden, channels, epochs, batch_size, lr, class_weight,
        localizer_points, device)
    return _result_rows(p, alpha, kappa, seed, methods, f05=True)


def _grammar_pipeline(dataset, seed, n_sentences, n_valid_sentences, n_test_sentences, alpha, kappa, methods,
                      model_seed, min_count, embedding, width, n_layers, hidden, channels, epochs, batch_size, lr,
                      class_weight, localizer_points, device):
    """The arguments of :func:`run_grammar_config` checked, and its pipeline (cached)."""
    if dataset != "grammar":
        raise ValueError(f"dataset must be 'grammar', got {dataset!r}")
    n_valid_sentences = check_int(n_valid_sentences, "n_valid_sentences", minimum=100, maximum=28000)
    rest = _FCE_SENTENCES["train"] - n_valid_sentences
    n_sentences = rest if n_sentences is None else check_int(n_sentences, "n_sentences", minimum=10, maximum=rest)
    n_test_sentences = _FCE_SENTENCES["test"] if n_test_sentences is None else check_int(
        n_test_sentences, "n_test_sentences", minimum=1, maximum=_FCE_SENTENCES["test"])
    seed, alpha, kappa, methods, localizer_points = _calibration_settings(seed, alpha, kappa, methods, METHODS,
                                                                         localizer_points)
    model_seed, hidden, channels, epochs, batch_size, lr = _training_settings(model_seed, hidden, channels, epochs,
                                                                              batch_size, lr)
    min_count = check_int(min_count, "min_count", minimum=1)
    embedding = check_int(embedding, "embedding", minimum=1)
    width = check_int(width, "width", minimum=1)
    if width % 2 == 0:
        raise ValueError(f"width must be odd (the convolutions keep the length), got {width}")
    n_layers = check_int(n_layers, "n_layers", minimum=1)
    if class_weight is not None:
        class_weight = check_real(class_weight, "class_weight", low=0, low_open=True)
    network_key = (model_seed, n_valid_sentences, n_sentences, min_count, embedding, width, n_layers, hidden,
                   channels, epochs, batch_size, lr, class_weight, str(resolve_device(device)))
    p = _sequence_pipeline("grammar", seed, n_test_sentences, localizer_points, network_key)
    return p, alpha, kappa, seed, methods


def run_grammar_admissions(dataset="grammar", seed=0, *, n_sentences=None, n_valid_sentences=2200,
                           n_test_sentences=None, alpha=0.1, kappa=100, methods=None, model_seed=0, min_count=2,
                           embedding=64, width=5, n_layers=2, hidden=128, channels=128, epochs=4, batch_size=32,
                           lr=3e-3, class_weight=None, localizer_points=None, device="cpu"):
    """What each method admits in each test sentence of one calibration split, for a clustered accuracy check.

    The same task as :func:`run_grammar_config` (and the same pipeline,
    cached), summarised per FCE test sentence instead of per true class:
    the tokens of one sentence are correlated, so a check of the admitted
    accuracy counts sentences, not tokens
    (:func:`~calibtut.experiments.venn_admit.admitted_accuracy_gap`).

    Parameters
    ----------
    dataset, seed, n_sentences, n_valid_sentences, n_test_sentences, alpha, kappa, methods, model_seed, \
min_count, embedding, width, n_layers, hidden, channels, epochs, batch_size, lr, class_weight, \
localizer_points, device
        As in :func:`run_grammar_config`.

    Returns
    -------
    pandas.DataFrame
        One row per method and test sentence with at least one admitted
        token (a method that admits none has one row, with ``sequence``
        -1 and ``n`` 0): ``table`` (``"admitted"``), ``method``, ``sequence`` (the
        sentence's index in the FCE test set), ``n`` (admitted tokens), ``correct``
        (those predicted right), ``category_rsqrt`` (the sum over them of
        ``1 / sqrt(|T|)``, ``|T|`` the size of the token's Venn category,
        :meth:`~calibtut.selective.VennADMIT.predict_category_size`; NaN
        for a method without categories) and ``n_test`` (all test tokens).

    Examples
    --------
    >>> rows = run_grammar_admissions(n_sentences=300, n_valid_sentences=200, n_test_sentences=20,
    ...                               kappa=10, methods=["ADMIT"], epochs=1)  # doctest: +SKIP
    >>> list(rows.columns)  # doctest: +SKIP
    ['table', 'method', 'sequence', 'n', 'correct', 'category_rsqrt', 'n_test']
    """
    p, alpha, kappa, seed, methods = _grammar_pipeline(
        dataset, seed, n_sentences, n_valid_sentences, n_test_sentences, alpha, kappa, methods, model_seed,
        min_count, embedding, width, n_layers, hidden, channels, epochs, batch_size, lr, class_weight,
        localizer_points, device)
    return _admission_rows(p, alpha, kappa, seed, methods)


def grammar_tasks(seeds=(0, 1, 2), *, model_seed=0, **fixed):
    """The task list of the Grammar experiment for :func:`calibtut.run.sweep`: one task per calibration split.

    Parameters
    ----------
    seeds : sequence of int, default (0, 1, 2)
        Calibration-split seeds (the paper: one split).
    model_seed : int, default 0
        The network's seed (:func:`run_grammar_config`), the same for every task. A task
        holds it only when it is not 0, the runner's default, so that the tasks
        of the runs published before it could be set keep their keys
        (:func:`calibtut.run.sweep.task_key`).
    **fixed
        Further keyword arguments of :func:`run_grammar_config`, the same for every task.

    Returns
    -------
    list of dict

    Examples
    --------
    >>> [(t["dataset"], t["seed"], t["methods"]) for t in grammar_tasks([0, 1], methods=["ADMIT", "APS"])]
    [('grammar', 0, 'ADMIT,APS'), ('grammar', 1, 'ADMIT,APS')]
    """
    return _sequence_tasks("grammar", METHODS, seeds, model_seed, fixed)


# ------------------------------------------------------------------------------------------ tasks and tables


def va_tasks(datasets=DATASETS, seeds=(0, 1, 2), *, model_seed=0, **fixed):
    """The task list for :func:`calibtut.run.sweep`: one task per test set and calibration-split seed.

    Every method runs inside one task (they share the pipeline's network, KNN
    and features); ``methods=[...]`` in ``fixed`` restricts them (stored as
    one comma-separated str, since task values are scalars).

    Parameters
    ----------
    datasets : sequence of str, default :data:`DATASETS`
    seeds : sequence of int, default (0, 1, 2)
        Calibration-split seeds (the paper: one split).
    model_seed : int, default 0
        The network's seed (:func:`run_va_config`), the same for every task. A task
        holds it only when it is not 0, the runner's default, so that the tasks
        of the runs published before it could be set keep their keys
        (:func:`calibtut.run.sweep.task_key`).
    **fixed
        Further keyword arguments of :func:`run_va_config`, the same for every task.

    Returns
    -------
    list of dict
        Seeds vary slowest, so a partial sweep covers every test set.

    Examples
    --------
    >>> [(t["dataset"], t["seed"]) for t in va_tasks(seeds=[0, 1], kappa=100)][:3]
    [('sentiment', 0), ('sentiment_ood', 0), ('sentiment', 1)]
    """
    if isinstance(datasets, str):
        raise TypeError("datasets must be a sequence of dataset names, not one str")
    check_choices(datasets, "datasets", DATASETS)
    seeds = [check_int(s, "seeds", minimum=0) for s in seeds]
    if fixed.get("methods") is not None:
        fixed = {**fixed, "methods": ",".join(method_list(fixed["methods"], METHODS))}
    fixed = _with_model_seed(model_seed, fixed)
    return [{"dataset": dataset, "seed": seed, **fixed} for seed in seeds for dataset in datasets]
