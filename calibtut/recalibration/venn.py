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
score with the test point added under label 0 and label 1, computed for
every test score at once by Vovk, Petej & Fedorova's (2015) construction.

:class:`VennPredictor` and :class:`VennABERS` hold the methods;
:func:`venn_multiprobabilities`, :func:`venn_probability_bounds` and
:func:`venn_abers` are their one-call wrappers.
"""

from __future__ import annotations

import numpy as np

from calibtut._estimator import Estimator, optional
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

__all__ = ["VennABERS", "VennPredictor", "venn_abers", "venn_multiprobabilities", "venn_probability_bounds"]


class VennPredictor(Estimator):
    """Inductive Venn predictor over a taxonomy of a classifier's probabilities.

    Numpy in, numpy out: the classifier is never called. A Venn predictor
    sees the prediction only through its taxonomy: by default the category
    of a point is its predicted class (the argmax of its probabilities), and
    ``categories`` replaces it by any integer codes, or by a function of the
    probabilities. When ``categories`` is an array the probabilities are not
    needed and may be None (the one-call functions pass categories only).

    Parameters
    ----------
    n_classes : int or None, default None
        Number of classes (at least 2); None: the number of columns of
        ``cal_probs`` (required when :meth:`fit` gets category codes and no
        probabilities).

    Attributes
    ----------
    n_classes_ : int
        The number of classes.
    categories_ : numpy.ndarray of int
        The calibration categories, sorted, each once.
    counts_ : numpy.ndarray of shape (n_categories, n_classes)
        Label counts of the calibration points of each category.

    See Also
    --------
    VennABERS : the Venn predictor whose taxonomy is an isotonic fit.
    venn_multiprobabilities, venn_probability_bounds : the one-call functions.
    calibtut.selective.VennADMIT : Venn categories built from ADMIT's sets.

    References
    ----------
    - Vovk, Gammerman & Shafer (2005), *Algorithmic Learning in a Random World*, Springer.

    Examples
    --------
    >>> cal = [[0.8, 0.2], [0.7, 0.3], [0.6, 0.4], [0.4, 0.6], [0.3, 0.7]]
    >>> venn = VennPredictor().fit(cal, [0, 0, 1, 1, 1])  # categories: predicted class 0 or 1
    >>> venn.counts_
    array([[2., 1.],
           [0., 2.]])
    >>> venn.predict_multiprobabilities([[0.9, 0.1]])[0]  # category 0, the test point as label 0 and as label 1
    array([[0.75, 0.25],
           [0.5 , 0.5 ]])
    >>> lower, upper = venn.predict_bounds([[0.9, 0.1]])
    >>> lower, upper
    (array([[0.5 , 0.25]]), array([[0.75, 0.5 ]]))
    """

    _parameter_constraints = {"n_classes": optional(check_int, minimum=2)}

    def __init__(self, *, n_classes=None):
        self.n_classes = n_classes

    def _categories(self, probs, categories, probs_name, n_classes, n=None):
        """Category codes of the points: given, computed from the probabilities, or their argmax."""
        if categories is not None and not callable(categories):
            return check_categories(categories, "categories", n=n)
        if probs is None:
            raise ValueError(f"{probs_name} may be None only when categories is an array of category codes")
        probs = check_class_probs(probs, probs_name, n=n)
        if n_classes is not None and probs.shape[1] != n_classes:
            raise ValueError(f"{probs_name} has {probs.shape[1]} classes, the Venn predictor has {n_classes}")
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
        n_classes = self._validate_params().n_classes
        if n_classes is None:
            if cal_probs is None:
                raise ValueError("cal_probs may be None only when n_classes is given")
            n_classes = check_class_probs(cal_probs, "cal_probs").shape[1]
        cal_y = check_labels(cal_y, "cal_y", n_classes=n_classes)
        codes = self._categories(cal_probs, categories, "cal_probs", n_classes, n=cal_y.size)
        self.n_classes_ = n_classes
        self.categories_, inverse = np.unique(codes, return_inverse=True)
        self.counts_ = np.zeros((self.categories_.size, n_classes))
        np.add.at(self.counts_, (inverse, cal_y), 1.0)
        return self

    def _test_counts(self, test_probs, categories, test_weight):
        """Label counts ``(m, n_classes)`` of each test point's category and the weights ``(m,)``."""
        check_fitted(self, "counts_")
        codes = self._categories(test_probs, categories, "test_probs", self.n_classes_)
        weight = check_positive(test_weight, "test_weight", ndim=(0, 1))
        weight = np.broadcast_to(weight, codes.shape) if weight.ndim == 0 else weight
        if weight.shape != codes.shape:
            raise ValueError(f"test_weight must be a number or one per test point ({codes.size}), got {weight.size}")
        position = np.minimum(np.searchsorted(self.categories_, codes), self.categories_.size - 1)
        seen = self.categories_[position] == codes
        counts = np.where(seen[:, None], self.counts_[position], 0.0)  # an unseen category is empty
        return counts, weight

    def predict_multiprobabilities(self, test_probs, *, categories=None, test_weight=1.0):
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
        eye = np.eye(self.n_classes_)
        return (counts[:, None, :] + weight[:, None, None] * eye[None]) / total[:, None, None]

    def predict_bounds(self, test_probs, *, categories=None, test_weight=1.0):
        """Lower and upper Venn probabilities of every label.

        With ``n_c`` calibration points of label ``c`` among the ``|T|`` of the
        test point's category and weight ``w``, the lower probability is
        ``n_c / (|T| + w)`` and the upper ``(n_c + w) / (|T| + w)``: the
        extremes of :meth:`predict_multiprobabilities` over the hypothesised label. An
        empty category gives ``[0, 1]``.

        Parameters
        ----------
        test_probs, categories, test_weight
            As for :meth:`predict_multiprobabilities`.

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
    return VennPredictor(n_classes=n_classes).fit(None, cal_y, categories=codes)


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
    return model.predict_multiprobabilities(None, categories=check_categories(test_categories, "test_categories"),
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


def _label_one_probabilities(weights, ones):
    """``p1`` at each of the ``k + 1`` gaps between ``k`` sorted distinct calibration scores.

    Gap ``g`` is a test score above the ``g`` smallest distinct scores (and
    at most the next); ``weights[j]`` calibration points share score ``j``,
    ``ones[j]`` of them with label 1. Adding the test point with label 1 at
    gap ``g`` and shifting its left by ``(1, 1)``, the cumulative sum diagram
    is ``L_a = P_a - (1, 1)`` for ``a <= g`` and ``P_b`` for ``b >= g``; the
    isotonic fit at the test point is the slope of the greatest convex
    minorant over it, the lower common tangent (bridge) of the lower hull of
    ``{L_a}`` and that of ``{P_b}`` (Vovk, Petej & Fedorova 2015, Section 2).
    The sweep over ``g`` keeps the left hull on a stack, reads the right
    (suffix) hulls from pointers computed once from the right, and walks the
    two tangent points forward only: the bridge slope does not decrease with
    ``g``, so each moves ``O(k)`` times in all. Integer cross products make
    every comparison exact.
    """
    k = len(weights)
    x, y = [0] * (k + 1), [0] * (k + 1)  # the cumulative sum diagram P_0..P_k
    for j in range(k):
        x[j + 1], y[j + 1] = x[j] + weights[j], y[j] + ones[j]
    following = [-1] * (k + 1)  # the next vertex of the lower hull of P_j..P_k
    stack = [k]
    for j in range(k - 1, -1, -1):
        while len(stack) >= 2:
            a, c = stack[-1], stack[-2]
            if (x[a] - x[j]) * (y[c] - y[j]) - (y[a] - y[j]) * (x[c] - x[j]) > 0:
                break
            stack.pop()
        following[j] = stack[-1]
        stack.append(j)
    p1 = [1.0] * (k + 1)  # above every calibration score the test point pools alone
    left, p, b = [], 0, 0  # the lower hull of L_0..L_g, the left tangent's place in it, the right tangent
    for g in range(k):
        while len(left) >= 2:
            a0, a1 = left[-2], left[-1]
            if (x[a1] - x[a0]) * (y[g] - y[a0]) - (y[a1] - y[a0]) * (x[g] - x[a0]) > 0:
                break
            left.pop()
        p = min(p, max(len(left) - 1, 0))
        left.append(g)
        b = max(b, g)
        ax, ay = x[left[p]] - 1, y[left[p]] - 1
        while True:
            dx, dy = x[b] - ax, y[b] - ay
            nb = following[b]
            if nb != -1 and dx * (y[nb] - ay) - dy * (x[nb] - ax) < 0:  # P_nb below the line: move right
                b = nb
            elif p + 1 < len(left) and dx * (y[left[p + 1]] - 1 - ay) - dy * (x[left[p + 1]] - 1 - ax) < 0:
                p += 1
                ax, ay = x[left[p]] - 1, y[left[p]] - 1
            else:
                break
        p1[g] = (y[b] - ay) / (x[b] - ax)
    return np.array(p1)


class VennABERS(Estimator):
    """Venn-ABERS probabilities ``(p0, p1)`` of label 1 for a binary classifier (Vovk & Petej 2014).

    For a test score ``s``, ``p0`` is the isotonic regression of the
    calibration labels on the calibration scores with ``(s, 0)`` added,
    evaluated at ``s``, and ``p1`` the same with ``(s, 1)`` (tied scores are
    pooled, as scikit-learn's ``IsotonicRegression`` pools them). Then
    ``p0 <= p1``, and one of them (the one of the true label) is perfectly
    calibrated; ``p1 / (1 - p0 + p1)`` is the usual single-number summary.

    :meth:`fit` computes ``p0`` and ``p1`` once for every place a test score
    can fall among the ``k`` distinct calibration scores (Vovk, Petej &
    Fedorova 2015: the greatest convex minorant of the cumulative sum diagram,
    by stacks, ``O(n log n)`` with the sort); :meth:`predict_multiprobabilities` looks each
    test score up, ``O(m log k)``. A test score equal to a calibration score
    gets the ``p1`` of a score just below it and the ``p0`` of one just
    above it. Written here because no maintained library offers the
    construction as a dependency (the ``venn-abers`` package, its test
    oracle, has a quadratic worst case).

    Attributes
    ----------
    scores_ : numpy.ndarray of shape (k,)
        The distinct calibration scores, increasing.
    p0_, p1_ : numpy.ndarray of shape (k + 1,)
        ``p0`` and ``p1`` of a test score above exactly ``g`` of them
        (``p0_[g]``: above or equal; ``p1_[g]``: strictly above).

    See Also
    --------
    VennPredictor : the Venn predictor of a given taxonomy.
    calibtut.recalibration.PlattScaling : a parametric map of one score.

    References
    ----------
    - Vovk & Petej (2014), "Venn-Abers predictors", Proceedings of the Thirtieth Conference on
      Uncertainty in Artificial Intelligence (UAI), 829-838.

    Examples
    --------
    >>> model = VennABERS().fit([0.1, 0.4, 0.6, 0.9], [0, 1, 0, 1])
    >>> p0, p1 = model.predict_multiprobabilities([0.5, 0.95])
    >>> p0.round(3), p1.round(3)
    (array([0.333, 0.5  ]), array([0.667, 1.   ]))
    """

    def fit(self, cal_scores, cal_y):
        """Compute ``p0`` and ``p1`` between every two consecutive distinct calibration scores.

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
        self._validate_params()
        scores = as_float_array(cal_scores, "cal_scores", ndim=1)
        labels = check_labels(cal_y, "cal_y", n_classes=2)
        check_same_length(cal_scores=scores, cal_y=labels)
        self.scores_, inverse = np.unique(scores, return_inverse=True)
        weights = np.bincount(inverse)
        ones = np.bincount(inverse, weights=labels).astype(np.int64)
        self.p1_ = _label_one_probabilities(weights.tolist(), ones.tolist())
        # p0 is p1 of the mirrored problem: scores reversed, labels flipped
        self.p0_ = 1.0 - _label_one_probabilities(weights[::-1].tolist(), (weights - ones)[::-1].tolist())[::-1]
        return self

    def predict_multiprobabilities(self, test_scores):
        """The pair ``(p0, p1)`` at each test score.

        Parameters
        ----------
        test_scores : array_like of shape (m,)
            Test scores.

        Returns
        -------
        p0, p1 : numpy.ndarray of shape (m,)
        """
        check_fitted(self, "p1_")
        test = as_float_array(test_scores, "test_scores", ndim=1)
        return (self.p0_[np.searchsorted(self.scores_, test, side="right")],
                self.p1_[np.searchsorted(self.scores_, test, side="left")])


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
    return VennABERS().fit(cal_scores, cal_y).predict_multiprobabilities(test_scores)
