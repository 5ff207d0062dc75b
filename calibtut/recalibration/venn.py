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

:class:`VennPredictor` and :class:`VennABERS` hold the methods;
:func:`venn_multiprobabilities`, :func:`venn_probability_bounds` and
:func:`venn_abers` are their one-call wrappers.
"""

from __future__ import annotations

import numpy as np
from sklearn.isotonic import IsotonicRegression

from calibtut._validation import (
    as_float_array,
    check_categories,
    check_class_probs,
    check_fitted,
    check_int,
    check_labels,
    check_positive,
    check_same_length,
)

__all__ = ["VennPredictor", "VennABERS", "venn_multiprobabilities", "venn_probability_bounds", "venn_abers"]


class VennPredictor:
    """Inductive Venn predictor over a taxonomy of a classifier's probabilities.

    Numpy in, numpy out: the classifier is never called. A Venn predictor
    sees the prediction only through its taxonomy: by default the category
    of a point is its predicted class (the argmax of its probabilities), and
    ``categories`` replaces it by any integer codes, or by a function of the
    probabilities. When ``categories`` is an array the probabilities are not
    needed and may be None (the one-call functions pass categories only).

    Parameters
    ----------
    n_classes : int
        Number of classes (at least 2).

    Attributes
    ----------
    categories_ : numpy.ndarray of int
        The calibration categories, sorted, each once.
    counts_ : numpy.ndarray of shape (n_categories, n_classes)
        Label counts of the calibration points of each category.

    Examples
    --------
    >>> cal = [[0.8, 0.2], [0.7, 0.3], [0.6, 0.4], [0.4, 0.6], [0.3, 0.7]]
    >>> venn = VennPredictor(2).fit(cal, [0, 0, 1, 1, 1])  # categories: predicted class 0 or 1
    >>> venn.counts_
    array([[2., 1.],
           [0., 2.]])
    >>> venn.predict_proba([[0.9, 0.1]])[0]  # category 0, the test point as label 0 and as label 1
    array([[0.75, 0.25],
           [0.5 , 0.5 ]])
    >>> lower, upper = venn.predict_bounds([[0.9, 0.1]])
    >>> lower, upper
    (array([[0.5 , 0.25]]), array([[0.75, 0.5 ]]))
    """

    def __init__(self, n_classes):
        self.n_classes = check_int(n_classes, "n_classes", minimum=2)

    def _categories(self, probs, categories, probs_name, n=None):
        """Category codes of the points: given, computed from the probabilities, or their argmax."""
        if categories is not None and not callable(categories):
            return check_categories(categories, "categories", n=n)
        if probs is None:
            raise ValueError(f"{probs_name} may be None only when categories is an array of category codes")
        probs = check_class_probs(probs, probs_name, n=n)
        if probs.shape[1] != self.n_classes:
            raise ValueError(f"{probs_name} has {probs.shape[1]} classes, the Venn predictor has {self.n_classes}")
        if categories is None:
            return np.argmax(probs, axis=1)
        return check_categories(categories(probs), "categories", n=len(probs))

    def fit(self, cal_probs, cal_y, *, categories=None):
        """Count the calibration labels in each category.

        Parameters
        ----------
        cal_probs : array_like of shape (n, n_classes) or None
            Calibration probabilities (rows sum to one); None when
            ``categories`` is an array.
        cal_y : array_like of int, shape (n,)
            Calibration labels in ``0..n_classes - 1``.
        categories : array_like of int or callable, optional
            Category codes of the calibration points, shape ``(n,)``, or a
            function of the probabilities returning them; default: the
            predicted class.

        Returns
        -------
        VennPredictor
            ``self``.
        """
        cal_y = check_labels(cal_y, "cal_y", n_classes=self.n_classes)
        codes = self._categories(cal_probs, categories, "cal_probs", n=cal_y.size)
        self.categories_, inverse = np.unique(codes, return_inverse=True)
        self.counts_ = np.zeros((self.categories_.size, self.n_classes))
        np.add.at(self.counts_, (inverse, cal_y), 1.0)
        return self

    def _test_counts(self, test_probs, categories, test_weight):
        """Label counts ``(m, n_classes)`` of each test point's category and the weights ``(m,)``."""
        check_fitted(self, "counts_")
        codes = self._categories(test_probs, categories, "test_probs")
        weight = check_positive(test_weight, "test_weight", ndim=(0, 1))
        weight = np.broadcast_to(weight, codes.shape) if weight.ndim == 0 else weight
        if weight.shape != codes.shape:
            raise ValueError(f"test_weight must be a number or one per test point ({codes.size}), got {weight.size}")
        position = np.minimum(np.searchsorted(self.categories_, codes), self.categories_.size - 1)
        seen = self.categories_[position] == codes
        counts = np.where(seen[:, None], self.counts_[position], 0.0)  # an unseen category is empty
        return counts, weight

    def predict_proba(self, test_probs, *, categories=None, test_weight=1.0):
        """All ``n_classes`` Venn distributions of each test point (its multiprobability).

        Parameters
        ----------
        test_probs : array_like of shape (m, n_classes) or None
            Test probabilities; None when ``categories`` is an array.
        categories : array_like of int or callable, optional
            Category codes of the test points, shape ``(m,)``, or a function
            of the probabilities; by default the taxonomy of :meth:`fit` with
            its default, the predicted class. A category that does not depend
            on the hypothesised label.
        test_weight : float or array_like of shape (m,), default 1.0
            Positive, finite weight of the test point inside its category
            (1 = the standard Venn predictor; Schmaltz & Rasooly up-weight it
            by ``1 / psi' >= 1``).

        Returns
        -------
        numpy.ndarray of shape (m, n_classes, n_classes)
            ``p[j, c, c']``: probability of label ``c'`` when the test point is
            added with label ``c``; each ``p[j, c]`` sums to one.
        """
        counts, weight = self._test_counts(test_probs, categories, test_weight)
        total = counts.sum(axis=1) + weight
        eye = np.eye(self.n_classes)
        return (counts[:, None, :] + weight[:, None, None] * eye[None]) / total[:, None, None]

    def predict_bounds(self, test_probs, *, categories=None, test_weight=1.0):
        """Lower and upper Venn probabilities of every label.

        With ``n_c`` calibration points of label ``c`` among the ``|T|`` of the
        test point's category and weight ``w``, the lower probability is
        ``n_c / (|T| + w)`` and the upper ``(n_c + w) / (|T| + w)``: the
        extremes of :meth:`predict_proba` over the hypothesised label. An
        empty category gives ``[0, 1]``.

        Parameters
        ----------
        test_probs, categories, test_weight
            As for :meth:`predict_proba`.

        Returns
        -------
        lower, upper : numpy.ndarray of shape (m, n_classes)
        """
        counts, weight = self._test_counts(test_probs, categories, test_weight)
        total = counts.sum(axis=1, keepdims=True) + weight[:, None]
        return counts / total, (counts + weight[:, None]) / total


def _fitted_on_codes(cal_categories, cal_y, n_classes):
    """The one-call functions' Venn predictor; the categories are checked under their own name."""
    codes = check_categories(cal_categories, "cal_categories", n=np.size(cal_y))
    return VennPredictor(n_classes).fit(None, cal_y, categories=codes)


def venn_multiprobabilities(cal_categories, cal_y, test_categories, n_classes, *, test_weight=1.0):
    """All ``n_classes`` Venn distributions of each test point, in one call (:class:`VennPredictor`).

    Parameters
    ----------
    cal_categories : array_like of int, shape (n,)
        Category code of each calibration point.
    cal_y : array_like of int, shape (n,)
        Calibration labels in ``0..n_classes - 1``.
    test_categories : array_like of int, shape (m,)
        Category code of each test point (a category that does not depend
        on the hypothesised label).
    n_classes : int
        Number of classes (at least 2).
    test_weight : float or array_like of shape (m,), default 1.0
        Positive, finite weight of the test point inside its category
        (1 = the standard Venn predictor).

    Returns
    -------
    numpy.ndarray of shape (m, n_classes, n_classes)
        ``p[j, c, c']``: probability of label ``c'`` when the test point is
        added with label ``c``; each ``p[j, c]`` sums to one.

    Examples
    --------
    >>> p = venn_multiprobabilities([0, 0, 0, 1], [1, 1, 0, 0], [0], 2)
    >>> p[0]
    array([[0.5 , 0.5 ],
           [0.25, 0.75]])
    """
    model = _fitted_on_codes(cal_categories, cal_y, n_classes)
    return model.predict_proba(None, categories=check_categories(test_categories, "test_categories"),
                               test_weight=test_weight)


def venn_probability_bounds(cal_categories, cal_y, test_categories, n_classes, *, test_weight=1.0):
    """Lower and upper Venn probabilities of every label, in one call (:class:`VennPredictor`).

    Parameters
    ----------
    cal_categories : array_like of int, shape (n,)
        Category code of each calibration point.
    cal_y : array_like of int, shape (n,)
        Calibration labels in ``0..n_classes - 1``.
    test_categories : array_like of int, shape (m,)
        Category code of each test point.
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
    model = _fitted_on_codes(cal_categories, cal_y, n_classes)
    return model.predict_bounds(None, categories=check_categories(test_categories, "test_categories"),
                                test_weight=test_weight)


class VennABERS:
    """Venn-ABERS probabilities ``(p0, p1)`` of label 1 for a binary classifier (Vovk & Petej 2014).

    For each test score ``s``, isotonic regression (scikit-learn's
    ``IsotonicRegression``) of the calibration labels on the calibration
    scores, with ``(s, 0)`` added, evaluated at ``s`` gives ``p0``; with
    ``(s, 1)`` added, ``p1``. Then ``p0 <= p1``, and one of them (the one of
    the true label) is perfectly calibrated. ``p1 / (1 - p0 + p1)`` is the
    usual single-number summary. One pair of fits per distinct test score,
    so :meth:`fit` only stores the calibration set.

    Attributes
    ----------
    scores_ : numpy.ndarray of shape (n,)
        Calibration scores.
    labels_ : numpy.ndarray of int, shape (n,)
        Calibration labels.

    Examples
    --------
    >>> model = VennABERS().fit([0.1, 0.4, 0.6, 0.9], [0, 1, 0, 1])
    >>> p0, p1 = model.predict_proba([0.5, 0.95])
    >>> p0.round(3), p1.round(3)
    (array([0.333, 0.5  ]), array([0.667, 1.   ]))
    """

    def fit(self, cal_scores, cal_y):
        """Store the calibration scores and labels.

        Parameters
        ----------
        cal_scores : array_like of shape (n,)
            Calibration scores of the classifier (larger = more likely label 1;
            any monotone transform of a probability gives the same result).
        cal_y : array_like of int, shape (n,)
            Calibration labels in ``{0, 1}``.

        Returns
        -------
        VennABERS
            ``self``.
        """
        scores = as_float_array(cal_scores, "cal_scores", ndim=1)
        labels = check_labels(cal_y, "cal_y", n_classes=2)
        check_same_length(cal_scores=scores, cal_y=labels)
        self.scores_, self.labels_ = scores, labels
        return self

    def predict_proba(self, test_scores):
        """The pair ``(p0, p1)`` at each test score.

        Parameters
        ----------
        test_scores : array_like of shape (m,)
            Test scores.

        Returns
        -------
        p0, p1 : numpy.ndarray of shape (m,)
        """
        check_fitted(self, "scores_")
        test = as_float_array(test_scores, "test_scores", ndim=1)
        unique, inverse = np.unique(test, return_inverse=True)
        bounds = np.empty((unique.size, 2))
        for i, s in enumerate(unique):
            x = np.append(self.scores_, s)
            for label in (0, 1):
                fit = IsotonicRegression(out_of_bounds="clip", y_min=0.0, y_max=1.0)
                fit.fit(x, np.append(self.labels_, label).astype(float))
                bounds[i, label] = fit.predict([s])[0]
        return bounds[inverse, 0], bounds[inverse, 1]


def venn_abers(cal_scores, cal_y, test_scores):
    """Venn-ABERS probabilities ``(p0, p1)`` of label 1 in one call (:class:`VennABERS`).

    Parameters
    ----------
    cal_scores : array_like of shape (n,)
        Calibration scores of the classifier.
    cal_y : array_like of int, shape (n,)
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
    return VennABERS().fit(cal_scores, cal_y).predict_proba(test_scores)
