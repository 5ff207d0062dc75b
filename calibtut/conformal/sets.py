"""Split and Mondrian conformal prediction sets for classifiers (LAC, APS, RAPS).

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
every true class.

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

Localized conformal prediction (:func:`localized_conformal_sets`, Guan 2023)
weights the calibration scores by a kernel around each test point instead, in
Guan's naive form or in his finite-sample-valid form.
"""

from __future__ import annotations

import numpy as np

from calibtut._numeric import conformal_rank
from calibtut._validation import (
    as_float_array,
    check_alpha,
    check_real,
    check_rng,
)
from calibtut.conformal.quantiles import _check_weights, weighted_conformal_quantile
from calibtut.conformal.scores import (
    _CLASS_SCORES,
    _check_class_probs,
    _class_labels,
    _class_probs,
    _score_options,
    _scores,
)

__all__ = ["weighted_conformal_sets", "mondrian_conformal_sets", "split_conformal_sets", "label_conditional_sets", "localized_conformal_sets", "raps_sets"]

def weighted_conformal_sets(cal_probs, cal_labels, cal_weights, test_probs, test_weights, alpha, *, score="lac"):
    """Weighted split conformal prediction sets for a classifier under covariate shift.

    The calibration scores of the true labels and their weights give, for
    every test point, the threshold of :func:`weighted_conformal_quantile`;
    a class is in the set when its score is at most that threshold. With
    weights ``w = q/p`` (the target-to-source density ratio) the sets cover
    the label of a target point with probability at least ``1 - alpha``
    (Tibshirani et al. 2019, Corollary 1); equal weights give split conformal sets.

    Parameters
    ----------
    cal_probs : array_like of shape (n, n_classes)
    cal_labels : array_like of int, shape (n,)
    cal_weights : array_like of shape (n,)
        Non-negative density-ratio weights of the calibration points.
    test_probs : array_like of shape (m, n_classes)
    test_weights : array_like of shape (m,)
        Weights of the test points, on the same scale.
    alpha : float
        Miscoverage level in (0, 1).
    score : {"lac", "aps"}, default "lac"

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
    if score not in _CLASS_SCORES:
        raise ValueError(f"score must be one of {tuple(_CLASS_SCORES)}, got {score!r}")
    cal_probs = _check_class_probs(cal_probs, "cal_probs")
    test_probs = _check_class_probs(test_probs, "test_probs")
    if test_probs.shape[1] != cal_probs.shape[1]:
        raise ValueError(f"test_probs has {test_probs.shape[1]} classes, cal_probs has {cal_probs.shape[1]}")
    test_weights = _check_weights(test_weights, "test_weights", len(test_probs))
    scores = _CLASS_SCORES[score](cal_probs, cal_labels)
    threshold = weighted_conformal_quantile(scores, cal_weights, test_weights, alpha)
    return _CLASS_SCORES[score](test_probs) <= threshold[:, None]
_TOO_SMALL = ("raise", "include")


def _category_thresholds(cal_scores, cal_categories, alpha, too_small):
    """{category: conformal threshold} with the count check of ``too_small``."""
    thresholds = {}
    for category in np.unique(cal_categories):
        chosen = np.sort(cal_scores[cal_categories == category])
        k = conformal_rank(chosen.size, 1 - alpha)
        if k > chosen.size:
            if too_small == "raise":
                shown = np.asarray(category).tolist()
                raise ValueError(
                    f"the calibration set is too small for alpha={alpha}: category {shown!r} has "
                    f"{chosen.size} calibration points, fewer than the {int(np.ceil(1 / alpha)) - 1} "
                    f"needed for a finite threshold (pass too_small='include' to put every such label in the set)"
                )
            thresholds[category] = np.inf
        else:
            thresholds[category] = chosen[k - 1]
    return thresholds


def _test_categories(categories, test_probs, n_classes):
    """Categories of every (test point, candidate label), shape ``(m, n_classes)``."""
    m = len(test_probs)
    if categories is None:
        return np.zeros((m, n_classes), dtype=np.int64)
    if categories == "label":
        return np.broadcast_to(np.arange(n_classes), (m, n_classes))
    if callable(categories):
        columns = [np.asarray(categories(test_probs, np.full(m, c))) for c in range(n_classes)]
        for c, col in enumerate(columns):
            if col.shape != (m,):
                raise ValueError(f"categories must return shape ({m},) for {m} points, got {col.shape} for label {c}")
        return np.stack(columns, axis=1)
    _, test = categories
    test = np.asarray(test)
    if test.shape == (m,):
        return np.broadcast_to(test[:, None], (m, n_classes))
    if test.shape != (m, n_classes):
        raise ValueError(f"the test categories must have shape ({m},) or ({m}, {n_classes}), got {test.shape}")
    return test


def _cal_categories(categories, cal_probs, cal_labels):
    n = len(cal_probs)
    if categories is None:
        return np.zeros(n, dtype=np.int64)
    if isinstance(categories, str):
        if categories != "label":
            raise ValueError(f"categories must be 'label', a function or a pair of arrays, got {categories!r}")
        return cal_labels
    if callable(categories):
        cal = np.asarray(categories(cal_probs, cal_labels))
    elif isinstance(categories, tuple) and len(categories) == 2:
        cal = np.asarray(categories[0])
    else:
        raise TypeError(f"categories must be 'label', a function or a pair of arrays, got {type(categories).__name__}")
    if cal.shape != (n,):
        raise ValueError(f"categories must give shape ({n},) for the {n} calibration points, got {cal.shape}")
    return cal


def mondrian_conformal_sets(
    cal_probs, cal_labels, test_probs, alpha, *, categories="label", score="lac", randomized=False,
    allow_empty=True, lam=0.0, k_reg=0, too_small="raise", seed=None,
):
    """Mondrian (category-conditional) split conformal prediction sets.

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
    cal_labels : array_like of int, shape (n,)
        Calibration labels in ``0..n_classes - 1``.
    test_probs : array_like of shape (m, n_classes)
        Test probabilities.
    alpha : float
        Miscoverage level in (0, 1).
    categories : "label", callable or (array, array), default "label"
        The taxonomy. ``"label"``: the category is the (candidate) label,
        i.e. label-conditional sets. A callable ``f(probs, labels)`` returning
        one category per row, called with the calibration labels and with each
        candidate label on the test points. A pair ``(cal_categories,
        test_categories)``: shape ``(n,)`` and ``(m,)`` (categories that do
        not depend on the label) or ``(m, n_classes)`` (one per candidate).
    score : {"lac", "aps", "raps"}, default "lac"
        Nonconformity score (see :func:`class_scores`).
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
    """
    cal_probs = _class_probs(cal_probs, "cal_probs")
    test_probs = _class_probs(test_probs, "test_probs")
    n_classes = cal_probs.shape[1]
    if test_probs.shape[1] != n_classes:
        raise ValueError(f"test_probs has {test_probs.shape[1]} classes, cal_probs has {n_classes}")
    cal_labels = _class_labels(cal_labels, len(cal_probs), n_classes, "cal_labels")
    alpha = check_alpha(alpha)
    lam, k_reg = _score_options(score, randomized, lam, k_reg)
    if not isinstance(allow_empty, bool):
        raise TypeError(f"allow_empty must be a bool, got {allow_empty!r}")
    if too_small not in _TOO_SMALL:
        raise ValueError(f"too_small must be one of {_TOO_SMALL}, got {too_small!r}")
    rng = check_rng(seed)
    cal_cat = _cal_categories(categories, cal_probs, cal_labels)
    test_cat = _test_categories(categories, test_probs, n_classes)
    u_cal = rng.uniform(size=len(cal_probs)) if randomized else None
    u_test = rng.uniform(size=len(test_probs)) if randomized else None
    cal_scores = _scores(cal_probs, score, u_cal, lam, k_reg)[np.arange(len(cal_probs)), cal_labels]
    thresholds = _category_thresholds(cal_scores, cal_cat, alpha, too_small)
    unseen = [c for c in np.unique(test_cat) if c not in thresholds]
    if unseen and too_small == "raise":
        shown = np.asarray(unseen[0]).tolist()
        raise ValueError(
            f"the calibration set is too small for alpha={alpha}: test category {shown!r} has no "
            "calibration point (pass too_small='include' to put every such label in the set)"
        )
    threshold = np.vectorize(lambda c: thresholds.get(c, np.inf), otypes=[float])(test_cat)
    sets = _scores(test_probs, score, u_test, lam, k_reg) <= threshold
    if not allow_empty:
        empty = ~sets.any(axis=1)
        sets[empty, np.argmax(test_probs[empty], axis=1)] = True
    return sets


def split_conformal_sets(
    cal_probs, cal_labels, test_probs, alpha, *, score="lac", randomized=False, allow_empty=True,
    lam=0.0, k_reg=0, seed=None,
):
    """Split conformal prediction sets with marginal coverage ``1 - alpha``.

    One threshold for all points: the ``ceil((n + 1)(1 - alpha))``-th smallest
    calibration score of the true labels (a Mondrian taxonomy with a single
    category). Raises a ``ValueError`` when ``n < ceil(1 / alpha) - 1``: no
    finite threshold then exists and the set would always be every label.

    Parameters
    ----------
    cal_probs : array_like of shape (n, n_classes)
        Calibration probabilities (rows sum to one).
    cal_labels : array_like of int, shape (n,)
        Calibration labels in ``0..n_classes - 1``.
    test_probs : array_like of shape (m, n_classes)
        Test probabilities.
    alpha : float
        Miscoverage level in (0, 1).
    score : {"lac", "aps", "raps"}, default "lac"
        Nonconformity score (see :func:`class_scores`).
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
    return mondrian_conformal_sets(
        cal_probs, cal_labels, test_probs, alpha, categories=None, score=score, randomized=randomized,
        allow_empty=allow_empty, lam=lam, k_reg=k_reg, seed=seed,
    )


def label_conditional_sets(cal_probs, cal_labels, test_probs, alpha, *, score="lac", too_small="raise"):
    """Label-conditional (class-conditional) conformal sets: coverage ``1 - alpha`` within each true class.

    The Mondrian sets of :func:`mondrian_conformal_sets` with the label as
    category: class ``c`` enters a test set when its score is at most the
    conformal threshold of the calibration points whose label is ``c``.

    Parameters
    ----------
    cal_probs : array_like of shape (n, n_classes)
        Calibration probabilities (rows sum to one).
    cal_labels : array_like of int, shape (n,)
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
    return mondrian_conformal_sets(
        cal_probs, cal_labels, test_probs, alpha, categories="label", score=score, too_small=too_small,
    )


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


def _valid_localized_sets(cal_scores, cal_kernel, kernel, test_scores, alpha):
    """Guan's finite-sample-valid LCP for every (test point, candidate score); see the caller's docstring."""
    n = cal_scores.size
    k = conformal_rank(n, 1 - alpha)
    if k > n:  # ceil((n + 1)(1 - alpha)) = n + 1: the test point always ranks among the k smallest
        return np.ones(test_scores.shape, dtype=bool)
    below_own = cal_scores[None, :] < cal_scores[:, None]  # [i, j]: V_j < V_i
    own_mass = np.sum(cal_kernel * below_own, axis=1)  # A_i
    row_total = cal_kernel.sum(axis=1)
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


def localized_conformal_sets(cal_probs, cal_labels, test_probs, kernel, alpha, *, score="lac", form="naive",
                             cal_kernel=None):
    """Localized conformal sets (Guan 2023): a kernel-weighted conformal threshold per test point.

    A localizer ``H(x, x') >= 0`` with ``H(x, x) = 1`` (for instance
    ``exp(-||r - r'|| / eta)``) turns the calibration scores ``V_1..V_n``
    into a distribution around each point ``x_i``: the localized law
    ``F_i = sum_j p_ij delta_{V_j}`` with ``p_ij = H(x_i, x_j) / sum_l H(x_i, x_l)``,
    the sums running over the calibration points and the test point.

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
    This needs the kernel among the calibration points (``cal_kernel``),
    costs ``O(n^2 + m n C)`` and requires a symmetric kernel, since
    ``H(x_t, x_i)`` serves as ``H(x_i, x_t)``.

    With ``H = 1`` everywhere both forms are :func:`split_conformal_sets` exactly.

    Parameters
    ----------
    cal_probs : array_like of shape (n, n_classes)
        Calibration probabilities (rows sum to one).
    cal_labels : array_like of int, shape (n,)
        Calibration labels in ``0..n_classes - 1``.
    test_probs : array_like of shape (m, n_classes)
        Test probabilities.
    kernel : array_like of shape (m, n)
        Non-negative, finite weights ``H(x_t, x_j)`` on the scale where
        ``H(x_t, x_t) = 1``.
    alpha : float
        Miscoverage level in (0, 1).
    score : {"lac", "aps"}, default "lac"
        Nonconformity score.
    form : {"naive", "valid"}, default "naive"
        Guan's naive LCP, or his finite-sample-valid LCP.
    cal_kernel : array_like of shape (n, n), optional
        ``H(x_i, x_j)`` among the calibration points: symmetric, non-negative,
        ones on the diagonal. Required by ``form="valid"`` only.

    Returns
    -------
    numpy.ndarray of bool, shape (m, n_classes)

    Examples
    --------
    >>> cal = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]]
    >>> localized_conformal_sets(cal, [0, 0, 1, 1], [[0.45, 0.55]], [[1.0, 1.0, 1.0, 1.0]], 0.4)
    array([[False, False]])
    >>> localized_conformal_sets(cal, [0, 0, 1, 1], [[0.45, 0.55]], [[1.0, 1.0, 0.1, 9.0]], 0.4)
    array([[ True,  True]])
    >>> cal = [[0.8, 0.2], [0.6, 0.4], [0.4, 0.6]]
    >>> near = [[1.0, 0.5, 0.0], [0.5, 1.0, 0.5], [0.0, 0.5, 1.0]]
    >>> localized_conformal_sets(cal, [0, 0, 0], [[0.7, 0.3]], [[0.0, 1.0, 0.0]], 0.4)
    array([[ True,  True]])
    >>> localized_conformal_sets(cal, [0, 0, 0], [[0.7, 0.3]], [[0.0, 1.0, 0.0]], 0.4, form="valid",
    ...                          cal_kernel=near)
    array([[ True, False]])
    """
    if score not in ("lac", "aps"):
        raise ValueError(f"score must be 'lac' or 'aps', got {score!r}")
    if form not in _LOCALIZED_FORMS:
        raise ValueError(f"form must be one of {_LOCALIZED_FORMS}, got {form!r}")
    cal_probs = _class_probs(cal_probs, "cal_probs")
    test_probs = _class_probs(test_probs, "test_probs")
    n, m = len(cal_probs), len(test_probs)
    if test_probs.shape[1] != cal_probs.shape[1]:
        raise ValueError(f"test_probs has {test_probs.shape[1]} classes, cal_probs has {cal_probs.shape[1]}")
    cal_labels = _class_labels(cal_labels, n, cal_probs.shape[1], "cal_labels")
    kernel = _kernel(kernel, "kernel", (m, n))
    alpha = check_alpha(alpha)
    if form == "naive":
        if cal_kernel is not None:
            raise ValueError("cal_kernel is used by form='valid' only; drop it or pass form='valid'")
    else:
        if cal_kernel is None:
            raise ValueError("form='valid' needs cal_kernel, the (n, n) kernel among the calibration points")
        cal_kernel = _kernel(cal_kernel, "cal_kernel", (n, n))
        if not np.allclose(np.diag(cal_kernel), 1.0):
            raise ValueError(f"cal_kernel must have ones on its diagonal (H(x, x) = 1), got "
                             f"{float(np.diag(cal_kernel)[~np.isclose(np.diag(cal_kernel), 1.0)][0])}")
        if not np.allclose(cal_kernel, cal_kernel.T):
            raise ValueError("cal_kernel must be symmetric (H(x_i, x_j) = H(x_j, x_i))")
    cal_scores = _scores(cal_probs, score, None, 0.0, 0)[np.arange(n), cal_labels]
    test_scores = _scores(test_probs, score, None, 0.0, 0)
    if form == "valid":
        return _valid_localized_sets(cal_scores, cal_kernel, kernel, test_scores, alpha)
    return test_scores <= _naive_localized_thresholds(cal_scores, kernel, alpha)[:, None]


def _kernel(kernel, name, shape):
    kernel = as_float_array(kernel, name, ndim=2)
    if kernel.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {kernel.shape}")
    if np.any(kernel < 0):
        raise ValueError(f"{name} must be non-negative, got {float(kernel.min())}")
    return kernel


#: RAPS_size's and RAPS_adapt's grids of the penalty (Angelopoulos et al. 2021, their code).
_RAPS_GRIDS = {
    "size": (0.001, 0.01, 0.1, 0.2, 0.5),
    "adaptiveness": (0.0, 1e-5, 1e-4, 8e-4, 9e-4, 1e-3, 1.5e-3, 2e-3),
}
#: set-size strata of the adaptiveness criterion
_SIZE_STRATA = ((0, 1), (2, 3), (4, 6), (7, 10), (11, 100), (101, 1000))


def raps_sets(cal_probs, cal_labels, test_probs, alpha, *, criterion="size", tune_fraction=0.3, randomized=True,
              allow_empty=False, seed=None):
    """RAPS sets with the penalty tuned on part of the calibration set (RAPS_size or RAPS_adapt).

    A random ``tune_fraction`` of the calibration points chooses ``k_reg``
    (the conformal ``1 - alpha`` quantile of the 1-based rank of the true
    label) and ``lam`` from the authors' grid: the smallest mean set size
    (``criterion="size"``) or the smallest worst coverage gap
    ``max |coverage - (1 - alpha)|`` over set-size strata
    (``"adaptiveness"``), each evaluated with split conformal sets calibrated
    and measured on the tuning points. The remaining points calibrate the
    final sets (:func:`split_conformal_sets` with ``score="raps"``).
    Differences from the authors' code: the conformal ``(n + 1)`` quantile
    everywhere (they use the plain ``1 - alpha`` quantile for the threshold)
    and no temperature scaling (apply :class:`calibtut.recalibration.TemperatureScaling` first).

    Parameters
    ----------
    cal_probs : array_like of shape (n, n_classes)
        Calibration probabilities (rows sum to one).
    cal_labels : array_like of int, shape (n,)
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
    if criterion not in _RAPS_GRIDS:
        raise ValueError(f"criterion must be one of {tuple(_RAPS_GRIDS)}, got {criterion!r}")
    tune_fraction = check_real(tune_fraction, "tune_fraction", low=0, high=1, low_open=True, high_open=True)
    cal_probs = _class_probs(cal_probs, "cal_probs")
    cal_labels = _class_labels(cal_labels, len(cal_probs), cal_probs.shape[1], "cal_labels")
    alpha = check_alpha(alpha)
    rng = check_rng(seed)
    order = rng.permutation(len(cal_probs))
    n_tune = int(round(tune_fraction * len(order)))
    tune, rest = order[:n_tune], order[n_tune:]
    needed = int(np.ceil(1 / alpha)) - 1
    if min(tune.size, rest.size) < needed:
        raise ValueError(
            f"the calibration set is too small for alpha={alpha}: its tuning part ({tune.size}) and the rest "
            f"({rest.size}) each need at least {needed} points"
        )
    ranks = np.argsort(np.argsort(-cal_probs[tune], axis=1, kind="stable"), axis=1)[np.arange(tune.size),
                                                                                    cal_labels[tune]] + 1
    k_reg = int(np.sort(ranks)[conformal_rank(tune.size, 1 - alpha) - 1])
    best = None
    for lam in _RAPS_GRIDS[criterion]:
        sets = split_conformal_sets(cal_probs[tune], cal_labels[tune], cal_probs[tune], alpha, score="raps",
                                    randomized=randomized, allow_empty=allow_empty, lam=lam, k_reg=k_reg, seed=rng)
        if criterion == "size":
            loss = sets.sum(axis=1).mean()
        else:
            covered, size = sets[np.arange(tune.size), cal_labels[tune]], sets.sum(axis=1)
            gaps = [abs(covered[(size >= a) & (size <= b)].mean() - (1 - alpha))
                    for a, b in _SIZE_STRATA if np.any((size >= a) & (size <= b))]
            loss = max(gaps)
        if best is None or loss < best[0]:
            best = (loss, lam)
    lam = best[1]
    sets = split_conformal_sets(cal_probs[rest], cal_labels[rest], test_probs, alpha, score="raps",
                                randomized=randomized, allow_empty=allow_empty, lam=lam, k_reg=k_reg, seed=rng)
    return sets, {"lam": lam, "k_reg": k_reg}
