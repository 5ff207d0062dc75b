"""Helpers private to the Venn-ADMIT part: the paper's ``K``, method selections, its sets' convention, the Grammar F0.5."""

from __future__ import annotations

import numpy as np

from calibtut._validation import check_choices

#: ``K``, the training neighbours of every point and the cap of ``q`` (the paper's 25), in every pipeline of the part.
N_NEIGHBORS = 25


def method_list(methods, allowed):
    """Names of ``allowed`` from None (all), a sequence or a comma-separated str (the form tasks hold)."""
    if methods is None:
        return allowed
    names = tuple(m.strip() for m in methods.split(",")) if isinstance(methods, str) else methods
    return check_choices(names, "methods", allowed)


def with_prediction(sets, probs):
    """A copy of ``sets`` that holds each point's predicted class (the paper's convention for conformal sets)."""
    sets = sets.copy()
    sets[np.arange(len(sets)), probs.argmax(axis=1)] = True
    return sets


def f05_score(y, pred):
    """F0.5 of class 1 (precision weighted over recall, the paper's Grammar metric); 0 when nothing is right.

    ``sklearn.metrics.fbeta_score(y, pred, beta=0.5, zero_division=0)`` to the
    last bits, but not bit for bit (scikit-learn sums counts in another order),
    so it is kept: the stored Grammar sweep holds its values and
    ``calibtut.run.recheck`` compares them exactly.
    """
    tp = float(np.sum((pred == 1) & (y == 1)))
    predicted, actual = float(np.sum(pred == 1)), float(np.sum(y == 1))
    if tp == 0:
        return 0.0
    precision, recall = tp / predicted, tp / actual
    return 1.25 * precision * recall / (0.25 * precision + recall)
