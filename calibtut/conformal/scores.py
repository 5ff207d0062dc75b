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
    check_bool,
    check_class_probs,
    check_int,
    check_labels,
    check_real,
    check_rng,
)

__all__ = ["lac_scores", "aps_scores", "class_scores"]


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
    probs = check_class_probs(probs, "probs")
    return _label_scores(1.0 - probs, labels)


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
    probs = check_class_probs(probs, "probs")
    return _label_scores(_aps(probs), labels)


_SCORES = ("lac", "aps", "raps")


def _label_scores(scores, labels):
    """Every class's scores ``(n, n_classes)``, or the score of each row's label when ``labels`` is given."""
    if labels is None:
        return scores
    labels = check_labels(labels, "labels", n_classes=scores.shape[1], n=len(scores))
    return scores[np.arange(len(scores)), labels]


def _aps(probs):
    """APS scores of every class of checked probabilities."""
    order = np.argsort(-probs, axis=1, kind="stable")
    cumulative = np.cumsum(np.take_along_axis(probs, order, axis=1), axis=1)
    scores = np.empty_like(probs)
    np.put_along_axis(scores, order, cumulative, axis=1)
    return scores


def _score_options(score, randomized, lam, k_reg):
    if score not in _SCORES:
        raise ValueError(f"score must be one of {_SCORES}, got {score!r}")
    check_bool(randomized, "randomized")
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
        return 1.0 - probs
    scores = _aps(probs)
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
    probs = check_class_probs(probs, "probs")
    lam, k_reg = _score_options(score, randomized, lam, k_reg)
    rng = check_rng(seed)
    u = rng.uniform(size=len(probs)) if randomized else None
    return _label_scores(_scores(probs, score, u, lam, k_reg), labels)
