"""Conformal prediction sets for classifiers: split, Mondrian, weighted, localized and RAPS.

A conformal classifier turns predicted class probabilities into a set of
labels. With a nonconformity score ``s(x, y)`` (larger = stranger) computed on
a calibration set, a candidate label ``c`` enters the set of a test point when
``s(x, c)`` is at most the ``ceil((n + 1)(1 - alpha))``-th smallest
calibration score (:func:`calibtut.conformal.quantiles.conformal_quantile`); the set
then contains the true label with probability at least ``1 - alpha``.

A Mondrian (category-conditional) conformal classifier computes one threshold
per category of a taxonomy, using only the calibration points of that
category, and compares each candidate label with the threshold of the
category the test point would fall in if that label were true. With the
label as category this is label-conditional ("class-conditional") conformal
prediction (Vovk et al. 2005; Sadinle et al. 2019): the coverage holds within
every true class. Under covariate shift, weighting the calibration scores by
the likelihood ratio gives weighted conformal sets (Tibshirani et al. 2019).

Scores:

- ``"lac"``: ``1 - p_y`` (Sadinle et al. 2019);
- ``"aps"``: the total probability of the classes ranked at or above ``y``
  (Romano et al. 2020);
- ``"raps"``: APS plus ``lam * max(0, rank(y) - k_reg)`` with ``rank`` 1-based
  (Angelopoulos et al. 2021).

The randomised APS/RAPS score subtracts ``u * p_y`` with ``u ~ U(0, 1)``
drawn once per point; with the same ``u`` for every candidate label of a test
point, the set ``{c : s(x, c, u) <= q}`` is exactly Romano et al.'s randomised
set (it may be empty unless ``allow_empty=False``).

Localized conformal prediction (:class:`LocalizedConformalClassifier`, Guan
2023) weights the calibration scores by a kernel around each test point
instead, in Guan's naive form or in his finite-sample-valid form.
:class:`RAPSClassifier` tunes the RAPS penalty on part of the calibration set.

Each method is a class (``fit(cal_probs, cal_y)``, then ``predict_set``) with a
one-call function beside it: :class:`SplitConformalClassifier` behind
:func:`split_conformal_sets`, :func:`mondrian_conformal_sets`,
:func:`label_conditional_sets` and :func:`weighted_conformal_sets`;
:class:`LocalizedConformalClassifier` behind :func:`localized_conformal_sets`;
:class:`RAPSClassifier` behind :func:`raps_sets`.
"""

from __future__ import annotations

import numpy as np

from calibtut._estimator import Estimator, check_seed, rule
from calibtut._numeric import ceil_rank, conformal_rank
from calibtut._validation import (
    as_float_array,
    check_alpha,
    check_bool,
    check_callable,
    check_categories,
    check_choice,
    check_class_probs,
    check_fitted,
    check_int,
    check_labels,
    check_n_classes,
    check_real,
    check_weights,
)
from calibtut.conformal.quantiles import _test_weights, weighted_conformal_quantile
from calibtut.conformal.scores import _SCORES, _score_options, _scores

__all__ = [
    "LocalizedConformalClassifier",
    "RAPSClassifier",
    "SplitConformalClassifier",
    "label_conditional_sets",
    "localized_conformal_sets",
    "mondrian_conformal_sets",
    "raps_sets",
    "split_conformal_sets",
    "weighted_conformal_sets",
]

_TOO_SMALL = ("raise", "include")


def _check_test_probs(test_probs, n_classes):
    return check_n_classes(check_class_probs(test_probs, "test_probs"), "test_probs", n_classes)


def _category_thresholds(cal_scores, cal_categories, alpha, too_small):
    """The sorted category codes and their conformal thresholds, with the count check of ``too_small``.

    One sort by (category, score): category ``e`` with ``n_e`` points starting
    at ``start_e`` has its threshold at ``start_e + k_e - 1``, ``k_e`` the
    conformal rank ``ceil((n_e + 1)(1 - alpha))``; ``inf`` when ``k_e > n_e``.
    """
    order = np.lexsort((cal_scores, cal_categories))
    codes, start, counts = np.unique(cal_categories[order], return_index=True, return_counts=True)
    rank = ceil_rank((counts + 1) * (1 - alpha))
    finite = rank <= counts
    if too_small == "raise" and not finite.all():
        small = np.flatnonzero(~finite)[0]
        raise ValueError(
            f"the calibration set is too small for alpha={alpha}: category {int(codes[small])!r} has "
            f"{counts[small]} calibration points, fewer than the {int(np.ceil(1 / alpha)) - 1} "
            f"needed for a finite threshold (pass too_small='include' to put every such label in the set)"
        )
    values = np.full(codes.size, np.inf)
    values[finite] = cal_scores[order][(start + rank - 1)[finite]]
    return codes, values


class SplitConformalClassifier(Estimator):
    """Split conformal prediction sets over a classifier's probabilities: plain, Mondrian or weighted.

    Numpy in, numpy out: the classifier is never called. :meth:`fit` takes
    its probabilities and the labels on a calibration set, :meth:`predict_set`
    its probabilities at test inputs. One class covers the three split
    methods, chosen by the keywords of :meth:`fit`:

    - neither ``categories`` nor ``cal_weight``: split conformal sets, one
      threshold, the ``ceil((n + 1)(1 - alpha))``-th smallest calibration
      score of the true labels; marginal coverage ``>= 1 - alpha``.
    - ``categories``: Mondrian sets, one such threshold per category of the
      taxonomy, from its own calibration points; candidate label ``c`` of a
      test point enters the set when its score is at most the threshold of
      the category the point falls in with label ``c``. Under
      exchangeability within categories the coverage is ``>= 1 - alpha`` in
      every category (Vovk et al. 2005). ``categories="label"`` is
      label-conditional conformal prediction (Sadinle et al. 2019).
    - ``cal_weight``: weighted conformal sets under covariate shift
      (Tibshirani et al. 2019, Corollary 1). The calibration weights and
      each test point's weight (the density ratio ``q/p`` of target to
      source) give that point its own threshold,
      :func:`calibtut.conformal.weighted_conformal_quantile`, with the test
      point's mass at ``+inf``; equal weights give split conformal sets.
      Weighted Mondrian sets are not implemented: ``categories`` and
      ``cal_weight`` are exclusive.

    Parameters
    ----------
    alpha : float, default 0.1
        Miscoverage level in (0, 1).
    score : {"lac", "aps", "raps"}, default "lac"
        Nonconformity score (see :func:`calibtut.conformal.class_scores`).
    randomized : bool, default False
        Randomised APS/RAPS scores, one ``u`` per calibration and test point.
    allow_empty : bool, default True
        When False, an empty set gets the most probable class.
    lam : float, default 0.0
        RAPS penalty per rank beyond ``k_reg`` (non-negative; RAPS only).
    k_reg : int, default 0
        RAPS unpenalised ranks (RAPS only).
    too_small : {"raise", "include"}, default "raise"
        What to do when a category (the whole calibration set for plain split
        sets) has fewer than ``ceil(1 / alpha) - 1`` calibration points, so
        that no finite threshold exists: raise a ``ValueError`` saying so, or
        put the label in the set (the valid but uninformative infinite
        threshold). A test category with no calibration point at all counts
        as too small. Weighted thresholds are infinite when the weighted
        calibration mass falls short for a test point, and the label then
        enters the set: that is the method, not an error.
    seed : int, numpy.random.Generator or None
        Source of the randomisation: :meth:`fit` draws the calibration
        points' ``u`` from it and each :meth:`predict_set` call the test
        points' ``u``, continuing the same stream.

    Attributes
    ----------
    scores_ : numpy.ndarray of shape (n,)
        Calibration scores of the true labels.
    thresholds_ : dict or None
        ``{category: threshold}`` (the single category 0 for plain split
        sets, the labels for ``categories="label"``); ``inf`` for a category
        too small under ``too_small="include"``. None for a weighted fit,
        whose threshold depends on each test point's weight.
    cal_weight_ : numpy.ndarray of shape (n,) or None
        Calibration weights of a weighted fit.
    n_classes_ : int

    See Also
    --------
    RAPSClassifier : RAPS sets whose penalty is tuned on part of the calibration set.
    LocalizedConformalClassifier : one kernel-weighted threshold per test point.
    split_conformal_sets : the one-call function.

    References
    ----------
    - Vovk, Gammerman & Shafer (2005), *Algorithmic Learning in a Random World*, Springer.
    - Sadinle, Lei & Wasserman (2019), "Least ambiguous set-valued classifiers with bounded error
      levels", Journal of the American Statistical Association 114, 223-234 (the LAC score).
    - Romano, Sesia & Candès (2020), "Classification with valid and adaptive coverage", Advances in
      Neural Information Processing Systems 33, 3581-3591 (the APS score).
    - Tibshirani, Barber, Candès & Ramdas (2019), "Conformal prediction under covariate shift",
      Advances in Neural Information Processing Systems 32 (the weighted sets).

    Examples
    --------
    >>> cal = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]]
    >>> model = SplitConformalClassifier(alpha=0.4).fit(cal, [0, 0, 1, 1])
    >>> round(model.thresholds_[0], 3)  # the 3rd smallest of the scores 0.1, 0.2, 0.3, 0.6
    0.3
    >>> model.predict_set([[0.75, 0.25], [0.5, 0.5]])
    array([[ True, False],
           [False, False]])
    >>> by_label = SplitConformalClassifier(alpha=0.4).fit(cal, [0, 0, 1, 1], categories="label")
    >>> by_label.predict_set([[0.5, 0.5]])
    array([[False,  True]])
    >>> weighted = SplitConformalClassifier(alpha=0.4).fit(cal, [0, 0, 1, 1], cal_weight=[1, 1, 1, 3])
    >>> weighted.predict_set([[0.5, 0.5]], test_weight=[0.5])
    array([[ True,  True]])
    """

    def __init__(self, *, alpha=0.1, score="lac", randomized=False, allow_empty=True, lam=0.0, k_reg=0,
                 too_small="raise", seed=None):
        self.alpha = alpha
        self.score = score
        self.randomized = randomized
        self.allow_empty = allow_empty
        self.lam = lam
        self.k_reg = k_reg
        self.too_small = too_small
        self.seed = seed

    _parameter_constraints = {
        "alpha": check_alpha,
        "score": rule(check_choice, choices=_SCORES),
        "randomized": check_bool,
        "allow_empty": check_bool,
        "lam": rule(check_real, low=0),
        "k_reg": rule(check_int, minimum=0),
        "too_small": rule(check_choice, choices=_TOO_SMALL),
        "seed": check_seed,
    }

    def _check_params(self, p):
        _score_options(p.score, p.randomized, p.lam, p.k_reg)

    def fit(self, cal_probs, cal_y, *, categories=None, cal_weight=None):
        """Compute the calibration scores and the threshold(s).

        Parameters
        ----------
        cal_probs : array_like of shape (n, n_classes)
            Calibration probabilities (rows sum to one).
        cal_y : array_like of int, shape (n,)
            Calibration labels in ``0..n_classes - 1``.
        categories : None, "label", callable or array_like of int, optional
            The Mondrian taxonomy. ``"label"``: the category is the
            (candidate) label. A callable ``f(probs, labels)`` returning one
            integer category per row, called here with the calibration labels
            and by :meth:`predict_set` with each candidate label. An array of
            shape ``(n,)``: the calibration points' category codes, and then
            :meth:`predict_set` needs the test points' categories.
        cal_weight : array_like of shape (n,), optional
            Non-negative likelihood ratios ``w(x_i)`` of the calibration points
            (weighted conformal sets); :meth:`predict_set` then needs the test
            points' weights.

        Returns
        -------
        SplitConformalClassifier
            ``self``.
        """
        p = self._validate_params()
        cal_probs = check_class_probs(cal_probs, "cal_probs")
        n, n_classes = cal_probs.shape
        cal_y = check_labels(cal_y, "cal_y", n_classes=n_classes, n=n)
        if cal_weight is not None:
            if categories is not None:
                raise ValueError("categories (Mondrian sets) and cal_weight (weighted sets) cannot be combined")
            cal_weight = check_weights(cal_weight, "cal_weight", n=n)
        cal_categories = self._cal_categories(categories, cal_probs, cal_y)
        self._rng = p.seed
        u = self._rng.uniform(size=n) if p.randomized else None
        self.scores_ = _scores(cal_probs, p.score, u, p.lam, p.k_reg)[np.arange(n), cal_y]
        if cal_weight is None:
            self._codes, self._values = _category_thresholds(self.scores_, cal_categories, p.alpha, p.too_small)
            self.thresholds_ = dict(zip(self._codes.tolist(), self._values.tolist()))
        else:
            self.thresholds_ = None
        self.cal_weight_ = cal_weight
        self.n_classes_ = n_classes
        self._categories = categories if categories is None or isinstance(categories, str) or callable(
            categories) else "codes"
        return self

    @staticmethod
    def _cal_categories(categories, cal_probs, cal_y):
        n = len(cal_probs)
        if categories is None:
            return np.zeros(n, dtype=np.int64)
        if isinstance(categories, str):
            if categories != "label":
                raise ValueError(f"categories must be 'label', a function or an array of codes, got {categories!r}")
            return cal_y
        if callable(categories):
            return check_categories(categories(cal_probs, cal_y), "categories", n=n)
        return check_categories(categories, "categories", n=n)

    def _test_categories(self, categories, test_probs):
        """Category codes that broadcast to ``(m, n_classes)``: one per (test point, candidate label).

        Shape ``(1,)`` without a taxonomy, ``(n_classes,)`` for ``"label"``,
        ``(m, 1)`` for codes that do not depend on the label, ``(m, n_classes)``
        otherwise.
        """
        m, n_classes = test_probs.shape
        fitted = self._categories
        if fitted != "codes":
            if categories is not None:
                raise ValueError(
                    "categories at predict_set are for a fit on category codes; this classifier was fitted with "
                    f"categories={fitted!r}, which already gives the test categories"
                )
            if fitted is None:
                return np.zeros(1, dtype=np.int64)
            if fitted == "label":
                return np.arange(n_classes)
            categories = fitted
        elif categories is None:
            raise ValueError("this classifier was fitted on category codes: predict_set needs the test categories")
        if callable(categories):
            columns = [check_categories(categories(test_probs, np.full(m, c)), "categories", n=m)
                       for c in range(n_classes)]
            return np.stack(columns, axis=1)
        shape = np.shape(categories)
        if shape not in ((m,), (m, n_classes)):
            raise ValueError(f"the test categories must have shape ({m},) or ({m}, {n_classes}), got {shape}")
        codes = check_categories(np.ravel(categories), "categories").reshape(shape)
        return codes[:, None] if codes.ndim == 1 else codes

    def predict_set(self, test_probs, *, categories=None, test_weight=None):
        """Prediction sets of the test points.

        Parameters
        ----------
        test_probs : array_like of shape (m, n_classes)
            Test probabilities.
        categories : callable or array_like of int, optional
            Only after a fit on category codes, and then required: the test
            points' categories, shape ``(m,)`` (categories that do not depend
            on the label) or ``(m, n_classes)`` (one per candidate label), or
            a callable ``f(probs, labels)`` called with each candidate label.
        test_weight : float or array_like of shape (m,), optional
            Only after a weighted fit, and then required: the test points'
            non-negative weights, on the calibration weights' scale.

        Returns
        -------
        numpy.ndarray of bool, shape (m, n_classes)
            ``sets[j, c]`` is True when class ``c`` is in the set of test point ``j``.
        """
        check_fitted(self, "scores_")
        p = self.params_
        test_probs = _check_test_probs(test_probs, self.n_classes_)
        m = len(test_probs)
        if self.cal_weight_ is None:
            if test_weight is not None:
                raise ValueError("test_weight was given but the classifier was fitted without calibration weights")
            threshold = self._mondrian_thresholds(self._test_categories(categories, test_probs))
        else:
            if test_weight is None:
                raise ValueError("test_weight is required: the classifier was fitted with calibration weights")
            if categories is not None:
                raise ValueError("categories (Mondrian sets) and test_weight (weighted sets) cannot be combined")
            weights = _test_weights(test_weight, "test_weight", m)
            threshold = weighted_conformal_quantile(self.scores_, self.cal_weight_, weights, p.alpha)[:, None]
        u = self._rng.uniform(size=m) if p.randomized else None
        sets = _scores(test_probs, p.score, u, p.lam, p.k_reg) <= threshold
        if not p.allow_empty:
            empty = ~sets.any(axis=1)
            sets[empty, np.argmax(test_probs[empty], axis=1)] = True
        return sets

    def _mondrian_thresholds(self, test_categories):
        """The threshold of every test category code (any shape), by one ``searchsorted`` and one gather."""
        position = np.minimum(np.searchsorted(self._codes, test_categories), self._codes.size - 1)
        seen = self._codes[position] == test_categories
        if seen.all():
            return self._values[position]
        if self.params_.too_small == "raise":
            raise ValueError(
                f"the calibration set is too small for alpha={self.params_.alpha}: test category "
                f"{int(np.min(test_categories[~seen]))!r} has no calibration point (pass too_small='include' to "
                "put every such label in the set)"
            )
        return np.where(seen, self._values[position], np.inf)


def split_conformal_sets(
    cal_probs, cal_y, test_probs, alpha, *, score="lac", randomized=False, allow_empty=True,
    lam=0.0, k_reg=0, seed=None,
):
    """Split conformal prediction sets with marginal coverage ``1 - alpha`` (:class:`SplitConformalClassifier`).

    One threshold for all points: the ``ceil((n + 1)(1 - alpha))``-th smallest
    calibration score of the true labels (a Mondrian taxonomy with a single
    category). Raises a ``ValueError`` when ``n < ceil(1 / alpha) - 1``: no
    finite threshold then exists and the set would always be every label.

    Parameters
    ----------
    cal_probs : array_like of shape (n, n_classes)
        Calibration probabilities (rows sum to one).
    cal_y : array_like of int, shape (n,)
        Calibration labels in ``0..n_classes - 1``.
    test_probs : array_like of shape (m, n_classes)
        Test probabilities.
    alpha : float
        Miscoverage level in (0, 1).
    score : {"lac", "aps", "raps"}, default "lac"
        Nonconformity score (see :func:`calibtut.conformal.class_scores`).
    randomized : bool, default False
        Randomised APS/RAPS scores.
    allow_empty : bool, default True
        When False, an empty set gets the most probable class.
    lam : float, default 0.0
        RAPS penalty (RAPS only).
    k_reg : int, default 0
        RAPS unpenalised ranks (RAPS only).
    seed : int, numpy.random.Generator or None
        Source of the randomisation.

    Returns
    -------
    numpy.ndarray of bool, shape (m, n_classes)

    Examples
    --------
    >>> cal = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]]
    >>> split_conformal_sets(cal, [0, 0, 1, 1], [[0.75, 0.25]], 0.4)
    array([[ True, False]])
    """
    model = SplitConformalClassifier(alpha=alpha, score=score, randomized=randomized, allow_empty=allow_empty, lam=lam,
                                     k_reg=k_reg, seed=seed)
    return model.fit(cal_probs, cal_y).predict_set(test_probs)


def mondrian_conformal_sets(
    cal_probs, cal_y, test_probs, alpha, *, categories=None, cal_categories=None, test_categories=None,
    score="lac", randomized=False, allow_empty=True, lam=0.0, k_reg=0, too_small="raise", seed=None,
):
    """Mondrian (category-conditional) split conformal prediction sets (:class:`SplitConformalClassifier`).

    Each category of the taxonomy gets its own conformal threshold, the
    ``ceil((n_e + 1)(1 - alpha))``-th smallest score among its ``n_e``
    calibration points; candidate label ``c`` of a test point enters the set
    when its score is at most the threshold of the category the point falls
    in with label ``c``. Under exchangeability within categories the set
    covers the true label with probability at least ``1 - alpha`` in every
    category (Vovk et al. 2005, Theorem 2 of Schmaltz & Rasooly).

    Parameters
    ----------
    cal_probs : array_like of shape (n, n_classes)
        Calibration probabilities (rows sum to one).
    cal_y : array_like of int, shape (n,)
        Calibration labels in ``0..n_classes - 1``.
    test_probs : array_like of shape (m, n_classes)
        Test probabilities.
    alpha : float
        Miscoverage level in (0, 1).
    categories : "label", callable or None, default None
        The taxonomy as a rule. ``"label"``: the category is the (candidate)
        label, i.e. label-conditional sets. A callable ``f(probs, labels)``
        returning one integer category per row, called with the calibration
        labels and with each candidate label on the test points. None: the
        codes ``cal_categories`` and ``test_categories`` when given, else
        ``"label"``.
    cal_categories : array_like of int, shape (n,), optional
        The calibration points' category codes (with ``test_categories``,
        instead of ``categories``).
    test_categories : array_like of int, shape (m,) or (m, n_classes), optional
        The test points' category codes: one per point (categories that do
        not depend on the label) or one per candidate label.
    score : {"lac", "aps", "raps"}, default "lac"
        Nonconformity score (see :func:`calibtut.conformal.class_scores`).
    randomized : bool, default False
        Randomised APS/RAPS scores, one ``u`` per calibration and test point.
    allow_empty : bool, default True
        When False, an empty set gets the most probable class.
    lam : float, default 0.0
        RAPS penalty (RAPS only).
    k_reg : int, default 0
        RAPS unpenalised ranks (RAPS only).
    too_small : {"raise", "include"}, default "raise"
        What to do when a category has fewer than ``ceil(1 / alpha) - 1``
        calibration points (no finite threshold exists): raise a
        ``ValueError`` saying so, or put the label in the set (the valid but
        uninformative infinite threshold). A test category with no
        calibration point at all counts as too small.
    seed : int, numpy.random.Generator or None
        Source of the randomisation.

    Returns
    -------
    numpy.ndarray of bool, shape (m, n_classes)
        ``sets[j, c]`` is True when class ``c`` is in the set of test point ``j``.

    Examples
    --------
    >>> cal = [[0.9, 0.1], [0.8, 0.2], [0.7, 0.3], [0.4, 0.6], [0.3, 0.7], [0.1, 0.9]]
    >>> mondrian_conformal_sets(cal, [0, 0, 0, 1, 1, 1], [[0.75, 0.25], [0.5, 0.5]], 0.25)
    array([[ True, False],
           [False, False]])
    >>> mondrian_conformal_sets(cal, [0, 0, 0, 1, 1, 1], [[0.75, 0.25], [0.5, 0.5]], 0.25,
    ...                         cal_categories=[0, 0, 0, 1, 1, 1], test_categories=[0, 1])
    array([[ True, False],
           [False, False]])
    """
    fit_categories, test_categories = _mondrian_categories(categories, cal_categories, test_categories)
    model = SplitConformalClassifier(alpha=alpha, score=score, randomized=randomized, allow_empty=allow_empty, lam=lam,
                                     k_reg=k_reg, too_small=too_small, seed=seed)
    model.fit(cal_probs, cal_y, categories=fit_categories)
    return model.predict_set(test_probs, categories=test_categories)


def _mondrian_categories(categories, cal_categories, test_categories):
    """What :func:`mondrian_conformal_sets` fits and predicts on: the rule and None, or the codes, checked."""
    if categories is not None and not (isinstance(categories, str) or callable(categories)):
        raise TypeError("categories is the taxonomy as a rule, 'label' or a function f(probs, labels); pass "
                        "category codes as cal_categories=... and test_categories=... (the (cal, test) pair "
                        "of codes is no longer accepted)")
    if (cal_categories is None) != (test_categories is None):
        given, missing = ("cal", "test") if test_categories is None else ("test", "cal")
        raise ValueError(f"{given}_categories needs {missing}_categories: give the category codes of both the "
                         "calibration and the test points")
    if cal_categories is None:
        return ("label" if categories is None else categories), None
    if categories is not None:
        raise ValueError(f"categories={categories!r} and cal_categories/test_categories both give the taxonomy: "
                         "pass the rule or the codes, not both")
    test_codes = check_categories(np.ravel(test_categories), "test_categories")
    return check_categories(cal_categories, "cal_categories"), test_codes.reshape(np.shape(test_categories))


def label_conditional_sets(cal_probs, cal_y, test_probs, alpha, *, score="lac", too_small="raise"):
    """Label-conditional (class-conditional) conformal sets: coverage ``1 - alpha`` within each true class.

    The Mondrian sets of :class:`SplitConformalClassifier` with the label as
    category: class ``c`` enters a test set when its score is at most the
    conformal threshold of the calibration points whose label is ``c``.

    Parameters
    ----------
    cal_probs : array_like of shape (n, n_classes)
        Calibration probabilities (rows sum to one).
    cal_y : array_like of int, shape (n,)
        Calibration labels in ``0..n_classes - 1``.
    test_probs : array_like of shape (m, n_classes)
        Test probabilities.
    alpha : float
        Miscoverage level in (0, 1).
    score : {"lac", "aps"}, default "lac"
        Nonconformity score.
    too_small : {"raise", "include"}, default "raise"
        A class with too few calibration points: raise, or always include it.

    Returns
    -------
    numpy.ndarray of bool, shape (m, n_classes)

    Examples
    --------
    >>> cal = [[0.9, 0.1], [0.6, 0.4], [0.2, 0.8], [0.45, 0.55]]
    >>> label_conditional_sets(cal, [0, 0, 1, 1], [[0.65, 0.35], [0.5, 0.5]], 0.4)
    array([[ True, False],
           [False, False]])
    """
    model = SplitConformalClassifier(alpha=alpha, score=score, too_small=too_small)
    return model.fit(cal_probs, cal_y, categories="label").predict_set(test_probs)


def weighted_conformal_sets(cal_probs, cal_y, cal_weight, test_probs, test_weight, alpha, *, score="lac"):
    """Weighted split conformal prediction sets under covariate shift (:class:`SplitConformalClassifier`).

    The calibration scores of the true labels and their weights give, for
    every test point, the threshold of :func:`calibtut.conformal.weighted_conformal_quantile`;
    a class is in the set when its score is at most that threshold. With
    weights ``w = q/p`` (the target-to-source density ratio) the sets cover
    the label of a target point with probability at least ``1 - alpha``
    (Tibshirani et al. 2019, Corollary 1); equal weights give split conformal sets.

    Parameters
    ----------
    cal_probs : array_like of shape (n, n_classes)
    cal_y : array_like of int, shape (n,)
    cal_weight : array_like of shape (n,)
        Non-negative density-ratio weights of the calibration points, not all zero.
    test_probs : array_like of shape (m, n_classes)
    test_weight : array_like of shape (m,)
        Non-negative weights of the test points, on the same scale.
    alpha : float
        Miscoverage level in (0, 1).
    score : {"lac", "aps", "raps"}, default "lac"
        Nonconformity score (see :func:`calibtut.conformal.class_scores`).

    Returns
    -------
    numpy.ndarray of bool, shape (m, n_classes)
        ``sets[j, k]`` is True when class ``k`` is in the set of test point ``j``.

    Examples
    --------
    >>> cal = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]]
    >>> weighted_conformal_sets(cal, [0, 0, 1, 1], [1, 1, 1, 1], [[0.75, 0.25]], [1.0], 0.4)
    array([[ True, False]])
    """
    model = SplitConformalClassifier(alpha=alpha, score=score).fit(cal_probs, cal_y,
                                                             cal_weight=check_weights(cal_weight, "cal_weight"))
    return model.predict_set(test_probs, test_weight=_test_weights(test_weight, "test_weight"))


_LOCALIZED_FORMS = ("naive", "valid")
# largest number of (test point, calibration point) cells held at once by the valid form
_BLOCK_CELLS = 2_000_000


def _naive_localized_thresholds(cal_scores, kernel, alpha):
    """Guan's naive LCP: each test row's weighted ``1 - alpha`` quantile, the test mass 1 at ``+inf``."""
    order = np.argsort(cal_scores, kind="stable")
    cumulative = np.cumsum(kernel[:, order], axis=1)
    # relative slack so that equal weights reproduce the conformal rank when (n + 1)(1 - alpha) is an integer
    target = (1 - alpha) * (cumulative[:, -1] + 1.0) * (1 - 1e-12)
    rank = (cumulative < target[:, None]).sum(axis=1)
    return np.append(cal_scores[order], np.inf)[rank]



def _valid_localized_sets(cal_scores, own_mass, row_total, kernel, test_scores, alpha):
    """Guan's finite-sample-valid LCP for every (test point, candidate score); see the class docstring."""
    n = cal_scores.size
    k = conformal_rank(n, 1 - alpha)
    if k > n:  # ceil((n + 1)(1 - alpha)) = n + 1: the test point always ranks among the k smallest
        return np.ones(test_scores.shape, dtype=bool)
    sets = np.empty(test_scores.shape, dtype=bool)
    step = max(1, _BLOCK_CELLS // n)
    for start in range(0, len(kernel), step):
        h = kernel[start:start + step]  # H(x_t, x_i) = H(x_i, x_t)
        denominator = row_total[None, :] + h
        test_total = h.sum(axis=1) + 1.0
        for c in range(test_scores.shape[1]):
            v = test_scores[start:start + step, c, None]
            cal_level = (own_mass[None, :] + h * (v < cal_scores[None, :])) / denominator
            test_level = np.sum(h * (cal_scores[None, :] < v), axis=1) / test_total
            sets[start:start + step, c] = np.sum(cal_level < test_level[:, None], axis=1) < k
    return sets


def _kernel_matrix(kernel, a, b, what):
    """``kernel(a, b)`` checked: finite, non-negative, of shape ``(len(a), len(b))``."""
    name = f"kernel({what})"
    values = as_float_array(kernel(a, b), name, ndim=2)
    if values.shape != (len(a), len(b)):
        raise ValueError(f"{name} must have shape {(len(a), len(b))}, got {values.shape}")
    if np.any(values < 0):
        raise ValueError(f"{name} must be non-negative, got {float(values.min())}")
    return values


def _check_points(x, name, n, n_features=None):
    """Localizer coordinates: ``(n,)`` or ``(n, d)``, finite, returned as ``(n, d)``."""
    x = as_float_array(x, name, ndim=(1, 2))
    x = x[:, None] if x.ndim == 1 else x
    if len(x) != n:
        raise ValueError(f"{name} must have one row per point ({n}), got {len(x)}")
    if n_features is not None and x.shape[1] != n_features:
        raise ValueError(f"{name} must have {n_features} column(s) as at fit, got {x.shape[1]}")
    return x


_KERNEL_CALL = "kernel(a, b) returning the (len(a), len(b)) array of weights H between the rows of a and b"


class LocalizedConformalClassifier(Estimator):
    """Localized conformal sets (Guan 2023): a kernel-weighted conformal threshold per test point.

    A localizer ``H(x, x') >= 0`` with ``H(x, x) = 1`` (for instance
    ``exp(-||r - r'|| / eta)``), the hyper-parameter ``kernel``, turns the
    calibration scores ``V_1..V_n`` into a distribution around each point
    ``x_i``: the localized law ``F_i = sum_j p_ij delta_{V_j}`` with
    ``p_ij = H(x_i, x_j) / sum_l H(x_i, x_l)``, the sums running over the
    calibration points and the test point. The points' coordinates ``x``
    (any features the kernel reads) are data, given to :meth:`fit` with the
    calibration probabilities and to :meth:`predict_set` with the test ones.

    ``form="naive"``: the set of test point ``t`` is every class whose score
    is at most the ``1 - alpha`` quantile of ``F_t``, with the test point's
    own (unknown) score placed at ``+inf``: the smallest calibration score
    whose cumulative weight reaches ``(1 - alpha)(sum_j H[t, j] + 1)``. This
    is Guan's "naive" LCP, and our reading of Schmaltz & Rasooly's Local_conf
    baseline (the paper names no level adjustment). It
    does not guarantee marginal coverage in finite samples: a test point
    from a rare region whose scores are larger than those of its
    neighbours borrows their small scores through the kernel, and the
    over-coverage of the common region need not pay this back (the first
    Venn-ADMIT chapter builds such a case, a hard group of 5 %, where it
    covers about 0.88 at ``alpha = 0.1``).

    ``form="valid"``: Guan's finite-sample-valid LCP. Write ``L_i`` for the
    weight that ``F_i`` puts strictly below ``V_i`` (the localized rank of
    point ``i`` in its own neighbourhood, with the test point's score
    included in every ``F_i``). The level of the test point's quantile is
    not ``1 - alpha`` but the smallest level at which at least
    ``k = ceil((n + 1)(1 - alpha))`` of the ``n + 1`` points lie at or below
    the quantile of their own localized law. Guan states the rule for a grid
    of candidate levels; we allow every level in ``(0, 1]`` (the limit of
    fine grids, which gives the smallest valid sets). Point ``i`` lies at or
    below the level-``beta`` quantile of its law exactly when ``L_i < beta``,
    so candidate class ``c`` with score ``v`` enters the set when fewer than
    ``k`` calibration points have ``L_i(v) < L_t(v)``.
    The ``L`` values are a symmetric function of the ``n + 1`` points, so by
    exchangeability the test point ranks among the ``k`` smallest with
    probability at least ``k / (n + 1) >= 1 - alpha`` (exactly that when no
    two ``L`` values tie). ``L_t`` grows and each
    ``L_i`` shrinks with ``v``, so the set is still ``{c : score <= threshold}``.
    This needs the kernel among the calibration points, which :meth:`fit`
    evaluates (``O(n^2)``; the sets then cost ``O(m n C)``), and a
    symmetric kernel, since ``H(x_t, x_i)`` serves as ``H(x_i, x_t)``.

    With ``H = 1`` everywhere both forms are :class:`SplitConformalClassifier` exactly.

    Parameters
    ----------
    kernel : callable
        ``kernel(a, b)``: the ``(len(a), len(b))`` array of non-negative,
        finite weights ``H`` between the rows of two coordinate arrays
        (each of shape ``(k, d)``), on the scale where ``H(x, x) = 1``;
        symmetric for ``form="valid"``. Required; :meth:`fit` checks that it
        is callable and checks its values.
    alpha : float, default 0.1
        Miscoverage level in (0, 1).
    score : {"lac", "aps"}, default "lac"
        Nonconformity score.
    form : {"naive", "valid"}, default "naive"
        Guan's naive LCP, or his finite-sample-valid LCP.

    Attributes
    ----------
    scores_ : numpy.ndarray of shape (n,)
        Calibration scores of the true labels.
    cal_x_ : numpy.ndarray of shape (n, d)
        The calibration points' coordinates.
    n_classes_ : int

    See Also
    --------
    SplitConformalClassifier : one threshold shared by every test point.
    localized_conformal_sets : the one-call function.

    References
    ----------
    - Guan (2023), "Localized conformal prediction: a generalized inference framework for conformal
      prediction", Biometrika 110, 33-50.

    Examples
    --------
    >>> import numpy as np
    >>> def triangle(a, b):  # 1 at distance 0, 0.5 at distance 1, 0 from distance 2
    ...     return np.maximum(0.0, 1.0 - np.abs(a - b.T) / 2)
    >>> cal = [[0.8, 0.2], [0.6, 0.4], [0.4, 0.6]]
    >>> naive = LocalizedConformalClassifier(kernel=triangle, alpha=0.4)
    >>> naive.fit(cal, [0, 0, 0], [0.0, 1.0, 2.0]).predict_set([[0.7, 0.3]], [0.0])
    array([[ True, False]])
    >>> valid = LocalizedConformalClassifier(kernel=triangle, alpha=0.4, form="valid")
    >>> valid.fit(cal, [0, 0, 0], [0.0, 1.0, 2.0]).predict_set([[0.7, 0.3]], [0.0])
    array([[ True, False]])
    """

    def __init__(self, *, kernel, alpha=0.1, score="lac", form="naive"):
        self.kernel = kernel
        self.alpha = alpha
        self.score = score
        self.form = form

    _parameter_constraints = {
        "kernel": rule(check_callable, signature=_KERNEL_CALL),
        "alpha": check_alpha,
        "score": rule(check_choice, choices=("lac", "aps")),
        "form": rule(check_choice, choices=_LOCALIZED_FORMS),
    }

    def fit(self, cal_probs, cal_y, cal_x):
        """Compute the calibration scores (and, for the valid form, each point's localized rank mass).

        Parameters
        ----------
        cal_probs : array_like of shape (n, n_classes)
            Calibration probabilities (rows sum to one).
        cal_y : array_like of int, shape (n,)
            Calibration labels in ``0..n_classes - 1``.
        cal_x : array_like of shape (n,) or (n, d)
            The calibration points' coordinates, as ``kernel`` reads them.

        Returns
        -------
        LocalizedConformalClassifier
            ``self``.
        """
        p = self._validate_params()
        cal_probs = check_class_probs(cal_probs, "cal_probs")
        n, n_classes = cal_probs.shape
        cal_y = check_labels(cal_y, "cal_y", n_classes=n_classes, n=n)
        cal_x = _check_points(cal_x, "cal_x", n)
        scores = _scores(cal_probs, p.score, None, 0.0, 0)[np.arange(n), cal_y]
        if p.form == "valid":
            cal_kernel = _kernel_matrix(p.kernel, cal_x, cal_x, "cal_x, cal_x")
            diagonal = np.diag(cal_kernel)
            if not np.allclose(diagonal, 1.0):
                raise ValueError(f"kernel(cal_x, cal_x) must have ones on its diagonal (H(x, x) = 1), got "
                                 f"{float(diagonal[~np.isclose(diagonal, 1.0)][0])}")
            if not np.allclose(cal_kernel, cal_kernel.T):
                raise ValueError("kernel must be symmetric (H(x_i, x_j) = H(x_j, x_i)) for form='valid'")
            below_own = scores[None, :] < scores[:, None]  # [i, j]: V_j < V_i
            self._own_mass = np.sum(cal_kernel * below_own, axis=1)  # A_i
            self._row_total = cal_kernel.sum(axis=1)
        self.scores_ = scores
        self.cal_x_ = cal_x
        self.n_classes_ = n_classes
        return self

    def predict_set(self, test_probs, test_x):
        """Localized prediction sets of the test points.

        Parameters
        ----------
        test_probs : array_like of shape (m, n_classes)
            Test probabilities.
        test_x : array_like of shape (m,) or (m, d)
            The test points' coordinates, with the columns of ``cal_x``.

        Returns
        -------
        numpy.ndarray of bool, shape (m, n_classes)
        """
        check_fitted(self, "scores_")
        p = self.params_
        test_probs = _check_test_probs(test_probs, self.n_classes_)
        test_x = _check_points(test_x, "test_x", len(test_probs), self.cal_x_.shape[1])
        kernel = _kernel_matrix(p.kernel, test_x, self.cal_x_, "test_x, cal_x")
        test_scores = _scores(test_probs, p.score, None, 0.0, 0)
        if p.form == "valid":
            return _valid_localized_sets(self.scores_, self._own_mass, self._row_total, kernel, test_scores, p.alpha)
        return test_scores <= _naive_localized_thresholds(self.scores_, kernel, p.alpha)[:, None]


def localized_conformal_sets(cal_probs, cal_y, cal_x, test_probs, test_x, alpha, *, kernel, score="lac",
                             form="naive"):
    """Localized conformal sets (Guan 2023) in one call (:class:`LocalizedConformalClassifier`).

    Parameters
    ----------
    cal_probs : array_like of shape (n, n_classes)
        Calibration probabilities (rows sum to one).
    cal_y : array_like of int, shape (n,)
        Calibration labels in ``0..n_classes - 1``.
    cal_x : array_like of shape (n,) or (n, d)
        The calibration points' coordinates, as ``kernel`` reads them.
    test_probs : array_like of shape (m, n_classes)
        Test probabilities.
    test_x : array_like of shape (m,) or (m, d)
        The test points' coordinates.
    alpha : float
        Miscoverage level in (0, 1).
    kernel : callable
        ``kernel(a, b)``: the ``(len(a), len(b))`` array of non-negative,
        finite weights ``H`` between the rows of two coordinate arrays, on
        the scale where ``H(x, x) = 1``; symmetric for ``form="valid"``.
    score : {"lac", "aps"}, default "lac"
        Nonconformity score.
    form : {"naive", "valid"}, default "naive"
        Guan's naive LCP, or his finite-sample-valid LCP.

    Returns
    -------
    numpy.ndarray of bool, shape (m, n_classes)

    Examples
    --------
    >>> import numpy as np
    >>> def same_group(a, b):  # 1 within a group, 0.1 across
    ...     return np.where(a == b.T, 1.0, 0.1)
    >>> cal = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]]
    >>> localized_conformal_sets(cal, [0, 0, 1, 1], [0, 0, 0, 0], [[0.45, 0.55]], [0], 0.4,
    ...                          kernel=same_group)
    array([[False, False]])
    >>> localized_conformal_sets(cal, [0, 0, 1, 1], [0, 0, 1, 1], [[0.45, 0.55]], [1], 0.4,
    ...                          kernel=same_group)
    array([[ True,  True]])
    >>> localized_conformal_sets(cal, [0, 0, 1, 1], [0, 0, 1, 1], [[0.45, 0.55]], [1], 0.4,
    ...                          kernel=same_group, form="valid")
    array([[ True,  True]])
    """
    model = LocalizedConformalClassifier(kernel=kernel, alpha=alpha, score=score, form=form)
    return model.fit(cal_probs, cal_y, cal_x).predict_set(test_probs, test_x)


#: RAPS_size's and RAPS_adapt's grids of the penalty (Angelopoulos et al. 2021, their code).
_RAPS_GRIDS = {
    "size": (0.001, 0.01, 0.1, 0.2, 0.5),
    "adaptiveness": (0.0, 1e-5, 1e-4, 8e-4, 9e-4, 1e-3, 1.5e-3, 2e-3),
}
#: set-size strata of the adaptiveness criterion
_SIZE_STRATA = ((0, 1), (2, 3), (4, 6), (7, 10), (11, 100), (101, 1000))


class RAPSClassifier(Estimator):
    """RAPS sets with the penalty tuned on part of the calibration set (RAPS_size or RAPS_adapt).

    A random ``tune_fraction`` of the calibration points chooses ``k_reg``
    (the conformal ``1 - alpha`` quantile of the 1-based rank of the true
    label) and ``lam`` from the authors' grid: the smallest mean set size
    (``criterion="size"``) or the smallest worst coverage gap
    ``max |coverage - (1 - alpha)|`` over set-size strata
    (``"adaptiveness"``), each evaluated with split conformal sets calibrated
    and measured on the tuning points. The remaining points calibrate the
    final sets (:class:`SplitConformalClassifier` with ``score="raps"``).
    Differences from the authors' code: the conformal ``(n + 1)`` quantile
    everywhere (they use the plain ``1 - alpha`` quantile for the threshold)
    and no temperature scaling (apply :class:`calibtut.recalibration.TemperatureScaling` first).

    Parameters
    ----------
    alpha : float, default 0.1
        Miscoverage level in (0, 1).
    criterion : {"size", "adaptiveness"}, default "size"
        How ``lam`` is chosen.
    tune_fraction : float, default 0.3
        Share of the calibration points used for tuning, in (0, 1).
    randomized : bool, default True
        Randomised scores (the authors' default).
    allow_empty : bool, default False
        Whether empty sets are kept (the authors' default: no).
    seed : int, numpy.random.Generator or None
        Source of the tuning split and of the randomisation (:meth:`fit`
        draws the split and the calibration points' ``u``, each
        :meth:`predict_set` call the test points' ``u``).

    Attributes
    ----------
    lam_ : float
        The chosen penalty.
    k_reg_ : int
        The chosen number of unpenalised ranks.
    classifier_ : SplitConformalClassifier
        The RAPS sets calibrated on the points not used for tuning.

    See Also
    --------
    SplitConformalClassifier : RAPS scores with a fixed penalty (``score="raps"``).
    raps_sets : the one-call function.

    References
    ----------
    - Angelopoulos, Bates, Malik & Jordan (2021), "Uncertainty sets for image classifiers using
      conformal prediction", International Conference on Learning Representations (ICLR).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> probs = rng.dirichlet(np.ones(4), size=400)
    >>> labels = (rng.uniform(size=(400, 1)) > probs.cumsum(axis=1)).sum(axis=1)
    >>> model = RAPSClassifier(alpha=0.1, seed=0).fit(probs[:300], labels[:300])
    >>> model.lam_ in (0.001, 0.01, 0.1, 0.2, 0.5), model.k_reg_ >= 1
    (True, True)
    >>> model.predict_set(probs[300:]).shape
    (100, 4)
    """

    def __init__(self, *, alpha=0.1, criterion="size", tune_fraction=0.3, randomized=True, allow_empty=False,
                 seed=None):
        self.alpha = alpha
        self.criterion = criterion
        self.tune_fraction = tune_fraction
        self.randomized = randomized
        self.allow_empty = allow_empty
        self.seed = seed

    _parameter_constraints = {
        "alpha": check_alpha,
        "criterion": rule(check_choice, choices=tuple(_RAPS_GRIDS)),
        "tune_fraction": rule(check_real, low=0, high=1, low_open=True, high_open=True),
        "randomized": check_bool,
        "allow_empty": check_bool,
        "seed": check_seed,
    }

    def _split_classifier(self, lam, k_reg, rng):
        p = self.params_
        return SplitConformalClassifier(alpha=p.alpha, score="raps", randomized=p.randomized, allow_empty=p.allow_empty,
                                        lam=lam, k_reg=k_reg, seed=rng)

    def fit(self, cal_probs, cal_y):
        """Tune ``lam`` and ``k_reg`` on a random part of the calibration set, calibrate on the rest.

        Parameters
        ----------
        cal_probs : array_like of shape (n, n_classes)
            Calibration probabilities (rows sum to one).
        cal_y : array_like of int, shape (n,)
            Calibration labels in ``0..n_classes - 1``.

        Returns
        -------
        RAPSClassifier
            ``self``.
        """
        p = self._validate_params()
        cal_probs = check_class_probs(cal_probs, "cal_probs")
        cal_y = check_labels(cal_y, "cal_y", n_classes=cal_probs.shape[1], n=len(cal_probs))
        alpha, rng = p.alpha, p.seed
        order = rng.permutation(len(cal_probs))
        n_tune = round(p.tune_fraction * len(order))
        tune, rest = order[:n_tune], order[n_tune:]
        needed = int(np.ceil(1 / alpha)) - 1
        if min(tune.size, rest.size) < needed:
            raise ValueError(
                f"the calibration set is too small for alpha={alpha}: its tuning part ({tune.size}) and the rest "
                f"({rest.size}) each need at least {needed} points"
            )
        ranks = np.argsort(np.argsort(-cal_probs[tune], axis=1, kind="stable"), axis=1)[np.arange(tune.size),
                                                                                        cal_y[tune]] + 1
        k_reg = int(np.sort(ranks)[conformal_rank(tune.size, 1 - alpha) - 1])
        best = None
        for lam in _RAPS_GRIDS[p.criterion]:
            sets = self._split_classifier(lam, k_reg, rng).fit(cal_probs[tune], cal_y[tune]).predict_set(
                cal_probs[tune])
            if p.criterion == "size":
                loss = sets.sum(axis=1).mean()
            else:
                covered, size = sets[np.arange(tune.size), cal_y[tune]], sets.sum(axis=1)
                gaps = [abs(covered[(size >= a) & (size <= b)].mean() - (1 - alpha))
                        for a, b in _SIZE_STRATA if np.any((size >= a) & (size <= b))]
                loss = max(gaps)
            if best is None or loss < best[0]:
                best = (loss, lam)
        self.lam_, self.k_reg_ = best[1], k_reg
        self.classifier_ = self._split_classifier(self.lam_, k_reg, rng).fit(cal_probs[rest], cal_y[rest])
        return self

    def predict_set(self, test_probs):
        """RAPS prediction sets of the test points.

        Parameters
        ----------
        test_probs : array_like of shape (m, n_classes)
            Test probabilities.

        Returns
        -------
        numpy.ndarray of bool, shape (m, n_classes)
        """
        check_fitted(self, "classifier_")
        return self.classifier_.predict_set(test_probs)


def raps_sets(cal_probs, cal_y, test_probs, alpha, *, criterion="size", tune_fraction=0.3, randomized=True,
              allow_empty=False, seed=None):
    """RAPS sets with a tuned penalty in one call (:class:`RAPSClassifier`).

    Parameters
    ----------
    cal_probs : array_like of shape (n, n_classes)
        Calibration probabilities (rows sum to one).
    cal_y : array_like of int, shape (n,)
        Calibration labels in ``0..n_classes - 1``.
    test_probs : array_like of shape (m, n_classes)
        Test probabilities.
    alpha : float
        Miscoverage level in (0, 1).
    criterion : {"size", "adaptiveness"}, default "size"
        How ``lam`` is chosen.
    tune_fraction : float, default 0.3
        Share of the calibration points used for tuning, in (0, 1).
    randomized : bool, default True
        Randomised scores (the authors' default).
    allow_empty : bool, default False
        Whether empty sets are kept (the authors' default: no).
    seed : int, numpy.random.Generator or None
        Source of the tuning split and of the randomisation.

    Returns
    -------
    sets : numpy.ndarray of bool, shape (m, n_classes)
    params : dict
        ``{"lam": ..., "k_reg": ...}`` as chosen.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> probs = rng.dirichlet(np.ones(4), size=400)
    >>> labels = (rng.uniform(size=(400, 1)) > probs.cumsum(axis=1)).sum(axis=1)
    >>> sets, params = raps_sets(probs[:300], labels[:300], probs[300:], 0.1, seed=0)
    >>> sets.shape, sorted(params)
    ((100, 4), ['k_reg', 'lam'])
    """
    model = RAPSClassifier(alpha=alpha, criterion=criterion, tune_fraction=tune_fraction, randomized=randomized,
                           allow_empty=allow_empty, seed=seed).fit(cal_probs, cal_y)
    return model.predict_set(test_probs), {"lam": model.lam_, "k_reg": model.k_reg_}
