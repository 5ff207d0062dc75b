"""Nonconformity scores of conformal classifiers: LAC, APS and RAPS.

- ``"lac"``: ``1 - p_y`` (Sadinle et al. 2019);
- ``"aps"``: the total probability of the classes ranked at or above ``y``
  (Romano et al. 2020);
- ``"raps"``: APS plus ``lam * max(0, rank(y) - k_reg)`` with ``rank`` 1-based
  (Angelopoulos et al. 2021).
"""

from __future__ import annotations

import numpy as np

from calibtut._validation import (
    as_float_array,
    check_int,
    check_probabilities,
    check_real,
    check_rng,
)

__all__ = ["lac_scores", "aps_scores", "class_scores"]

def _check_class_probs(probs, name):
    probs = as_float_array(probs, name, ndim=2)
    if probs.shape[1] < 2:
        raise ValueError(f"{name} must have at least 2 columns (n, n_classes), got shape {probs.shape}")
    if np.any(probs < 0) or np.any(probs > 1):
        raise ValueError(f"{name} must lie in [0, 1]")
    return probs


def _check_class_labels(labels, n, n_classes, name):
    labels_f = as_float_array(labels, name, ndim=1)
    if labels_f.size != n:
        raise ValueError(f"{name} must have one entry per row ({n}), got {labels_f.size}")
    if np.any(labels_f != np.round(labels_f)) or np.any(labels_f < 0) or np.any(labels_f >= n_classes):
        raise ValueError(f"{name} must be integers in [0, {n_classes - 1}]")
    return labels_f.astype(np.int64)


def lac_scores(probs, labels=None):
    """LAC scores ``1 - p_y`` (least ambiguous set-valued classifier; Sadinle et al. 2019).

    Parameters
    ----------
    probs : array_like of shape (n, n_classes)
        Predicted class probabilities.
    labels : array_like of int, shape (n,), optional
        When given, the score of each row's label; otherwise every class's score.

    Returns
    -------
    numpy.ndarray of shape (n,) or (n, n_classes)

    Examples
    --------
    >>> lac_scores([[0.7, 0.2, 0.1]], [1])
    array([0.8])
    """
    probs = _check_class_probs(probs, "probs")
    scores = 1.0 - probs
    if labels is None:
        return scores
    labels = _check_class_labels(labels, len(probs), probs.shape[1], "labels")
    return scores[np.arange(len(probs)), labels]


def aps_scores(probs, labels=None):
    """APS scores: the probability mass of the classes ranked at or above a class (Romano et al. 2020).

    The non-randomised adaptive prediction set score: sort the classes by
    decreasing probability and sum the probabilities down to the class itself
    (ties broken by class index).

    Parameters
    ----------
    probs : array_like of shape (n, n_classes)
    labels : array_like of int, shape (n,), optional

    Returns
    -------
    numpy.ndarray of shape (n,) or (n, n_classes)

    Examples
    --------
    >>> aps_scores([[0.2, 0.7, 0.1]])
    array([[0.9, 0.7, 1. ]])
    """
    probs = _check_class_probs(probs, "probs")
    order = np.argsort(-probs, axis=1, kind="stable")
    cumulative = np.cumsum(np.take_along_axis(probs, order, axis=1), axis=1)
    scores = np.empty_like(probs)
    np.put_along_axis(scores, order, cumulative, axis=1)
    if labels is None:
        return scores
    labels = _check_class_labels(labels, len(probs), probs.shape[1], "labels")
    return scores[np.arange(len(probs)), labels]


_CLASS_SCORES = {"lac": lac_scores, "aps": aps_scores}

_SCORES = ("lac", "aps", "raps")


def _class_probs(probs, name):
    """Class probabilities ``(n, n_classes)``, each row summing to one."""
    probs = check_probabilities(probs, name, simplex_axis=1, ndim=2)
    if probs.shape[1] < 2:
        raise ValueError(f"{name} must have at least 2 columns (n, n_classes), got shape {probs.shape}")
    return probs


def _class_labels(labels, n, n_classes, name):
    labels_f = as_float_array(labels, name, ndim=1)
    if labels_f.size != n:
        raise ValueError(f"{name} must have one entry per row ({n}), got {labels_f.size}")
    bad = (labels_f != np.round(labels_f)) | (labels_f < 0) | (labels_f >= n_classes)
    if np.any(bad):
        raise ValueError(f"{name} must be integers in 0..{n_classes - 1}, got {float(labels_f[bad][0])!r}")
    return labels_f.astype(np.int64)


def _score_options(score, randomized, lam, k_reg):
    if score not in _SCORES:
        raise ValueError(f"score must be one of {_SCORES}, got {score!r}")
    if not isinstance(randomized, bool):
        raise TypeError(f"randomized must be a bool, got {randomized!r}")
    if randomized and score == "lac":
        raise ValueError("randomized=True applies to score='aps' or 'raps', got score='lac'")
    lam = check_real(lam, "lam", low=0)
    k_reg = check_int(k_reg, "k_reg", minimum=0)
    if score != "raps" and (lam != 0 or k_reg != 0):
        raise ValueError(f"lam and k_reg apply to score='raps' only, got lam={lam}, k_reg={k_reg}")
    return lam, k_reg


def _scores(probs, score, u, lam, k_reg):
    """Every class's score, shape ``(n, n_classes)``; ``u`` is ``None`` or shape ``(n,)``."""
    if score == "lac":
        return lac_scores(probs)
    scores = aps_scores(probs)
    if u is not None:
        scores = scores - u[:, None] * probs
    if score == "raps":
        rank = np.argsort(np.argsort(-probs, axis=1, kind="stable"), axis=1) + 1
        scores = scores + lam * np.maximum(rank - k_reg, 0)
    return scores


def class_scores(probs, labels=None, *, score="lac", randomized=False, lam=0.0, k_reg=0, seed=None):
    """Nonconformity scores of a classifier's probabilities: LAC, APS or RAPS.

    Parameters
    ----------
    probs : array_like of shape (n, n_classes)
        Predicted class probabilities (rows sum to one).
    labels : array_like of int, shape (n,), optional
        When given, the score of each row's label; otherwise every class's score.
    score : {"lac", "aps", "raps"}, default "lac"
        The score (see the module docstring).
    randomized : bool, default False
        Subtract ``u * p_y`` with one ``u ~ U(0, 1)`` per row (APS and RAPS only).
    lam : float, default 0.0
        RAPS penalty per rank beyond ``k_reg`` (non-negative; RAPS only).
    k_reg : int, default 0
        Number of top ranks that RAPS leaves unpenalised (RAPS only).
    seed : int, numpy.random.Generator or None
        Source of ``u`` when ``randomized``.

    Returns
    -------
    numpy.ndarray of shape (n,) or (n, n_classes)

    Examples
    --------
    >>> class_scores([[0.2, 0.5, 0.3]], score="aps")
    array([[1. , 0.5, 0.8]])
    >>> class_scores([[0.2, 0.5, 0.3]], [0], score="raps", lam=0.1, k_reg=1)
    array([1.2])
    """
    probs = _class_probs(probs, "probs")
    lam, k_reg = _score_options(score, randomized, lam, k_reg)
    rng = check_rng(seed)
    if labels is not None:
        labels = _class_labels(labels, len(probs), probs.shape[1], "labels")
    u = rng.uniform(size=len(probs)) if randomized else None
    scores = _scores(probs, score, u, lam, k_reg)
    if labels is None:
        return scores
    return scores[np.arange(len(probs)), labels]
