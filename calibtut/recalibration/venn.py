"""Inductive Venn predictors: multiprobabilities from a taxonomy, and Venn-ABERS.

An inductive Venn predictor (Vovk, Gammerman & Shafer 2005; Lambrou et al.
2015) puts every calibration point and the test point into categories of a
taxonomy. For each hypothesised label ``c`` of the test point, the label
frequencies of its category, with the test point added under label ``c``,
form one probability distribution: with ``n_c'`` calibration points of label
``c'`` among the ``|T|`` points of the category and a test-point weight ``w``
(``w = 1`` is the standard predictor),

.. code-block:: text

    p_c(c') = (n_c' + w [c = c']) / (|T| + w).

One of these ``n_classes`` distributions, the one of the true label, is
perfectly calibrated under exchangeability (Vovk & Petej 2014, Theorem 1).
The lower and upper Venn probabilities of ``c'`` are the smallest and largest
of them over ``c``: ``n_c' / (|T| + w)`` and ``(n_c' + w) / (|T| + w)``.

Venn-ABERS (Vovk & Petej 2014) is the Venn predictor of a binary classifier
whose taxonomy is given by isotonic regression of the labels on the
classifier's score: ``p0`` and ``p1`` are the isotonic fits at the test
score with the test point added under label 0 and label 1.
"""

from __future__ import annotations

import numpy as np
from sklearn.isotonic import IsotonicRegression

from calibtut._validation import (
    as_float_array,
    check_int,
    check_same_length,
)

__all__ = ["venn_multiprobabilities", "venn_probability_bounds", "venn_abers"]


def _labels(labels, n_classes, name):
    labels_f = as_float_array(labels, name, ndim=1)
    bad = (labels_f != np.round(labels_f)) | (labels_f < 0) | (labels_f >= n_classes)
    if np.any(bad):
        raise ValueError(f"{name} must be integers in 0..{n_classes - 1}, got {float(labels_f[bad][0])!r}")
    return labels_f.astype(np.int64)


def _category_counts(cal_categories, cal_labels, test_categories, n_classes, test_weight):
    """Label counts ``(m, n_classes)`` of each test point's category and the weights ``(m,)``."""
    n_classes = check_int(n_classes, "n_classes", minimum=2)
    cal_categories = np.asarray(cal_categories)
    test_categories = np.asarray(test_categories)
    if cal_categories.ndim != 1 or test_categories.ndim != 1:
        raise ValueError(
            f"cal_categories and test_categories must be 1-d, got shapes {cal_categories.shape} "
            f"and {test_categories.shape}"
        )
    if test_categories.size == 0:
        raise ValueError("test_categories must not be empty")
    labels = _labels(cal_labels, n_classes, "cal_labels")
    check_same_length(cal_categories=cal_categories, cal_labels=labels)
    weight = as_float_array(test_weight, "test_weight", ndim=(0, 1))
    if np.any(weight <= 0):
        raise ValueError(f"test_weight must be > 0, got {weight.min()}")
    weight = np.broadcast_to(weight, test_categories.shape) if weight.ndim == 0 else weight
    if weight.shape != test_categories.shape:
        raise ValueError(
            f"test_weight must be a number or one per test point ({test_categories.size}), got {weight.size}"
        )
    _, codes = np.unique(np.concatenate([cal_categories, test_categories]), return_inverse=True)
    counts = np.zeros((codes.max() + 1, n_classes))
    np.add.at(counts, (codes[: labels.size], labels), 1.0)
    return counts[codes[labels.size:]], weight


def venn_multiprobabilities(cal_categories, cal_labels, test_categories, n_classes, *, test_weight=1.0):
    """All ``n_classes`` Venn distributions of each test point.

    Parameters
    ----------
    cal_categories : array_like of shape (n,)
        Category of each calibration point (any values that compare equal).
    cal_labels : array_like of int, shape (n,)
        Calibration labels in ``0..n_classes - 1``.
    test_categories : array_like of shape (m,)
        Category of each test point (a category that does not depend on
        the hypothesised label).
    n_classes : int
        Number of classes (at least 2).
    test_weight : float or array_like of shape (m,), default 1.0
        Positive, finite weight of the test point inside its category
        (1 = the standard Venn predictor; Schmaltz & Rasooly up-weight it by
        ``1 / psi' >= 1``).

    Returns
    -------
    numpy.ndarray of shape (m, n_classes, n_classes)
        ``p[j, c, c']``: probability of label ``c'`` when the test point is
        added with label ``c``; each ``p[j, c]`` sums to one.

    Examples
    --------
    >>> p = venn_multiprobabilities(["a", "a", "a", "b"], [1, 1, 0, 0], ["a"], 2)
    >>> p[0]
    array([[0.5 , 0.5 ],
           [0.25, 0.75]])
    """
    counts, weight = _category_counts(cal_categories, cal_labels, test_categories, n_classes, test_weight)
    total = counts.sum(axis=1) + weight
    eye = np.eye(counts.shape[1])
    return (counts[:, None, :] + weight[:, None, None] * eye[None]) / total[:, None, None]


def venn_probability_bounds(cal_categories, cal_labels, test_categories, n_classes, *, test_weight=1.0):
    """Lower and upper Venn probabilities of every label.

    With ``n_c`` calibration points of label ``c`` among the ``|T|`` of the
    test point's category and weight ``w``, the lower probability is
    ``n_c / (|T| + w)`` and the upper ``(n_c + w) / (|T| + w)``: the
    extremes of :func:`venn_multiprobabilities` over the hypothesised label.
    An empty category gives ``[0, 1]``.

    Parameters
    ----------
    cal_categories : array_like of shape (n,)
        Category of each calibration point.
    cal_labels : array_like of int, shape (n,)
        Calibration labels in ``0..n_classes - 1``.
    test_categories : array_like of shape (m,)
        Category of each test point.
    n_classes : int
        Number of classes (at least 2).
    test_weight : float or array_like of shape (m,), default 1.0
        Positive, finite weight of the test point.

    Returns
    -------
    lower, upper : numpy.ndarray of shape (m, n_classes)

    Examples
    --------
    >>> lower, upper = venn_probability_bounds([0, 0, 0, 0], [1, 1, 1, 0], [0, 1], 2)
    >>> lower
    array([[0.2, 0.6],
           [0. , 0. ]])
    >>> upper
    array([[0.4, 0.8],
           [1. , 1. ]])
    """
    counts, weight = _category_counts(cal_categories, cal_labels, test_categories, n_classes, test_weight)
    total = counts.sum(axis=1, keepdims=True) + weight[:, None]
    return counts / total, (counts + weight[:, None]) / total


def venn_abers(cal_scores, cal_labels, test_scores):
    """Venn-ABERS probabilities ``(p0, p1)`` of label 1 for a binary classifier.

    For each test score ``s``, isotonic regression (scikit-learn's
    ``IsotonicRegression``) of the calibration labels on the calibration
    scores, with ``(s, 0)`` added, evaluated at ``s`` gives ``p0``; with
    ``(s, 1)`` added, ``p1``. Then ``p0 <= p1``, and one of them (the one of
    the true label) is perfectly calibrated. ``p1 / (1 - p0 + p1)`` is the
    usual single-number summary. One pair of fits per distinct test score.

    Parameters
    ----------
    cal_scores : array_like of shape (n,)
        Calibration scores of the classifier (larger = more likely label 1;
        any monotone transform of a probability gives the same result).
    cal_labels : array_like of int, shape (n,)
        Calibration labels in ``{0, 1}``.
    test_scores : array_like of shape (m,)
        Test scores.

    Returns
    -------
    p0, p1 : numpy.ndarray of shape (m,)

    Examples
    --------
    >>> p0, p1 = venn_abers([0.1, 0.4, 0.6, 0.9], [0, 1, 0, 1], [0.5, 0.95])
    >>> p0.round(3), p1.round(3)
    (array([0.333, 0.5  ]), array([0.667, 1.   ]))
    """
    scores = as_float_array(cal_scores, "cal_scores", ndim=1)
    labels = _labels(cal_labels, 2, "cal_labels")
    check_same_length(cal_scores=scores, cal_labels=labels)
    test = as_float_array(test_scores, "test_scores", ndim=1)
    unique, inverse = np.unique(test, return_inverse=True)
    bounds = np.empty((unique.size, 2))
    for i, s in enumerate(unique):
        x = np.append(scores, s)
        for label in (0, 1):
            fit = IsotonicRegression(out_of_bounds="clip", y_min=0.0, y_max=1.0)
            fit.fit(x, np.append(labels, label).astype(float))
            bounds[i, label] = fit.predict([s])[0]
    return bounds[inverse, 0], bounds[inverse, 1]
