"""ADMIT and Venn-ADMIT: selective classification from a KNN approximation (Schmaltz & Rasooly).

Every instance carries, from :mod:`calibtut.selective.knn_approximation`, the KNN's
class probabilities ``pi``, the feature ``q`` (consecutive agreeing, correct
training neighbours) and the distance ``d`` to the nearest training exemplar.

**ADMIT** (Alg. 2) is label-conditional conformal prediction inside a
data-driven partition. For a point ``t``, the band is the calibration points
with the same ``q`` and ``|d_j - d_t| <= omega`` (``partition="band"``, the
paper's sliding window, centred on each point) or with the same ``q`` and the
same bin ``floor(d / (2 omega))`` (``partition="fixed"``, a true Mondrian
taxonomy for which Theorem 2 holds verbatim). Class ``c`` enters the set when
``1 - pi^c(t)`` is at most the ``ceil((n_c + 1)(1 - alpha))``-th smallest LAC
score ``1 - pi^{y_j}`` of the ``n_c`` band points of true class ``c``; the
KNN's prediction is always in the set; and when some class has fewer than
``kappa`` band points the set is every class (the point is rejected).

**Venn-ADMIT** (Alg. 1, 3, 4) calibrates ADMIT's singletons with an inductive
Venn predictor over a second calibration split: the category of a test point
whose ADMIT set is ``{c*}`` is the second split's points in its band whose
ADMIT set is also ``{c*}``; with ``n`` of its ``|T|`` points of true class
``c*`` and the test point's weight ``w >= 1`` (1 for the unweighted "-w"
variant, the localizer's ``1 / psi'`` otherwise) the lower Venn probability of
``c*`` is ``n / (|T| + w)``, and the point is admitted when it is at least
``1 - alpha``. ``require_q`` keeps only points with that ``q`` (the "qK"
censoring). Both are vectorised: sorted bands, prefix counts, one pass per
(``q``, class) group, in blocks of bounded memory.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from calibtut._numeric import ceil_rank
from calibtut._validation import (
    as_float_array,
    check_alpha,
    check_int,
    check_probabilities,
    check_real,
)

__all__ = ["admit_sets", "venn_admit", "admitted_accuracy_by_class"]

_PARTITIONS = ("band", "fixed")
# largest number of (query, calibration point) comparisons held at once
BLOCK_CELLS = 4_000_000


def _split(probs, labels, q, d, prefix, labelled=True):
    """Validated arrays of one split: probabilities, labels (or None), q (int) and d."""
    probs = check_probabilities(probs, f"{prefix}probs", simplex_axis=1, ndim=2)
    n, n_classes = probs.shape
    if n_classes < 2:
        raise ValueError(f"{prefix}probs must have at least 2 columns, got shape {probs.shape}")
    q = as_float_array(q, f"{prefix}q", ndim=1)
    d = as_float_array(d, f"{prefix}d", ndim=1)
    if q.size != n or d.size != n:
        raise ValueError(f"{prefix}probs, {prefix}q and {prefix}d must have one entry per point ({n})")
    if np.any(q != np.round(q)) or np.any(q < 0):
        raise ValueError(f"{prefix}q must hold non-negative integers")
    if np.any(d < 0):
        raise ValueError(f"{prefix}d must be non-negative distances, got {float(d.min())}")
    if not labelled:
        return probs, None, q.astype(np.int64), d
    labels = as_float_array(labels, f"{prefix}labels", ndim=1)
    bad = (labels != np.round(labels)) | (labels < 0) | (labels >= n_classes)
    if labels.size != n or np.any(bad):
        shown = float(labels[bad][0]) if np.any(bad) else f"{labels.size} labels"
        raise ValueError(f"{prefix}labels must be one integer in 0..{n_classes - 1} per point, got {shown}")
    return probs, labels.astype(np.int64), q.astype(np.int64), d


def _options(alpha, omega, kappa, partition):
    alpha = check_alpha(alpha)
    omega = check_real(omega, "omega", low=0)
    kappa = check_int(kappa, "kappa", minimum=1)
    needed = math.ceil(1 / alpha) - 1
    if kappa < needed:
        raise ValueError(
            f"kappa={kappa} is too small for alpha={alpha}: a band with fewer than {needed} points of a "
            "class has no finite conformal threshold; use kappa >= that"
        )
    if partition not in _PARTITIONS:
        raise ValueError(f"partition must be one of {_PARTITIONS}, got {partition!r}")
    if partition == "fixed" and omega == 0:
        raise ValueError("omega must be > 0 with partition='fixed' (bins of width 2 omega), got 0.0")
    return alpha, omega, kappa


def _band_ranges(group_d, query_d, omega, partition):
    """``[lo, hi)`` of each query's band in a group sorted by ``d``."""
    if partition == "band":
        return (np.searchsorted(group_d, query_d - omega, side="left"),
                np.searchsorted(group_d, query_d + omega, side="right"))
    group_bin, query_bin = np.floor(group_d / (2 * omega)), np.floor(query_d / (2 * omega))
    return np.searchsorted(group_bin, query_bin, side="left"), np.searchsorted(group_bin, query_bin, side="right")


def _count_below(group_scores, lo, hi, query_scores):
    """``#{j in [lo, hi) : group_scores[j] < query_scores}`` per query (square-root decomposition).

    The group is cut into chunks of about ``sqrt(n)`` points whose scores are
    sorted once; whole chunks inside a range are counted by binary search and
    prefix sums over chunks, the two partial chunks at its ends directly. Cost
    about ``m sqrt(n) log n`` for ``m`` queries instead of ``m n``; memory is
    bounded by processing the queries in blocks.
    """
    n = group_scores.size
    size = max(16, math.isqrt(n))
    n_chunks = -(-n // size)
    padded = np.full(n_chunks * size, np.inf)
    padded[:n] = group_scores
    chunks = np.sort(padded.reshape(n_chunks, size), axis=1)
    first, last = -(-lo // size), hi // size  # whole chunks first..last-1
    left_end = np.minimum(hi, first * size)
    right_start = np.maximum(last * size, left_end)
    offsets = np.arange(size)
    counts = np.empty(lo.size, dtype=np.int64)
    step = max(1, BLOCK_CELLS // (n_chunks + 2 * size))
    for start in range(0, lo.size, step):
        block = slice(start, start + step)
        s = query_scores[block]
        rows = np.arange(s.size)
        per_chunk = np.zeros((s.size, n_chunks + 1), dtype=np.int64)
        by_score = np.argsort(s, kind="stable")  # sorted keys make searchsorted several times faster
        for c in range(n_chunks):
            per_chunk[by_score, c + 1] = np.searchsorted(chunks[c], s[by_score], side="left")
        np.cumsum(per_chunk, axis=1, out=per_chunk)
        whole = np.where(last[block] > first[block],
                         per_chunk[rows, np.maximum(last[block], first[block])] - per_chunk[rows, first[block]], 0)
        parts = 0
        for begin, end in ((lo[block], left_end[block]), (right_start[block], hi[block])):
            idx = begin[:, None] + offsets
            inside = idx < end[:, None]
            parts = parts + np.sum(inside & (group_scores[np.minimum(idx, n - 1)] < s[:, None]), axis=1)
        counts[block] = whole + parts
    return counts


def _admit(cal, query, alpha, omega, kappa, partition):
    """ADMIT sets of the query points; ``cal`` and ``query`` are validated splits."""
    cal_probs, cal_labels, cal_q, cal_d = cal
    probs, _, q, d = query
    n_classes = cal_probs.shape[1]
    cal_scores = 1.0 - cal_probs[np.arange(len(cal_probs)), cal_labels]
    sets = np.zeros(probs.shape, dtype=bool)
    smallest = np.zeros(len(probs), dtype=np.int64)  # becomes min_c n_c over the classes seen
    seen = np.zeros(probs.shape, dtype=bool)
    for value in np.unique(q):
        queries = np.flatnonzero(q == value)
        for c in range(n_classes):
            members = np.flatnonzero((cal_q == value) & (cal_labels == c))
            if members.size == 0:
                continue
            members = members[np.argsort(cal_d[members], kind="stable")]
            lo, hi = _band_ranges(cal_d[members], d[queries], omega, partition)
            n_band = hi - lo
            below = _count_below(cal_scores[members], lo, hi, 1.0 - probs[queries, c])
            sets[queries, c] = below < ceil_rank((n_band + 1) * (1 - alpha))
            smallest[queries] = np.where(seen[queries].any(axis=1), np.minimum(smallest[queries], n_band), n_band)
            seen[queries, c] = True
    too_few = (~seen.all(axis=1)) | (smallest < kappa)
    sets[np.arange(len(probs)), np.argmax(probs, axis=1)] = True
    sets[too_few] = True
    return sets


def admit_sets(cal_probs, cal_labels, cal_q, cal_d, probs, q, d, alpha, *, omega, kappa=1000, partition="band"):
    """ADMIT prediction sets: label-conditional conformal inside the ``(q, d)`` band (Alg. 2).

    Parameters
    ----------
    cal_probs : array_like of shape (n, n_classes)
        KNN probabilities of the calibration points (rows sum to one).
    cal_labels : array_like of int, shape (n,)
        Their labels in ``0..n_classes - 1``.
    cal_q : array_like of int, shape (n,)
        Their feature ``q``.
    cal_d : array_like of shape (n,)
        Their distance ``d`` to the nearest training exemplar.
    probs : array_like of shape (m, n_classes)
        KNN probabilities of the points to predict.
    q : array_like of int, shape (m,)
        Their ``q``.
    d : array_like of shape (m,)
        Their ``d``.
    alpha : float
        Miscoverage level in (0, 1).
    omega : float
        Half-width of the distance band (non-negative; see
        :func:`calibtut.selective.knn_approximation.band_width`).
    kappa : int, default 1000
        Smallest number of band points of every class; below it the set is
        every class. At least ``ceil(1 / alpha) - 1``, so that every
        threshold is finite.
    partition : {"band", "fixed"}, default "band"
        The paper's sliding band ``|d_j - d_t| <= omega``, or fixed bins of
        width ``2 omega`` (a Mondrian taxonomy).

    Returns
    -------
    numpy.ndarray of bool, shape (m, n_classes)

    Examples
    --------
    >>> import numpy as np
    >>> p = np.array([[0.9, 0.1], [0.8, 0.2], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8], [0.1, 0.9]])
    >>> y, zeros = np.array([0, 0, 0, 1, 1, 1]), np.zeros(6)
    >>> admit_sets(p, y, zeros, zeros, [[0.85, 0.15], [0.5, 0.5], [0.25, 0.75]], [0, 0, 0],
    ...            [0.0, 0.0, 0.0], 0.25, omega=1.0, kappa=3)
    array([[ True, False],
           [ True, False],
           [False,  True]])
    """
    alpha, omega, kappa = _options(alpha, omega, kappa, partition)
    cal = _split(cal_probs, cal_labels, cal_q, cal_d, "cal_")
    query = _split(probs, None, q, d, "", labelled=False)
    if query[0].shape[1] != cal[0].shape[1]:
        raise ValueError(f"probs has {query[0].shape[1]} classes, cal_probs has {cal[0].shape[1]}")
    return _admit(cal, query, alpha, omega, kappa, partition)


def _psi_rows(localizer_psi, m, n_vp):
    """A function from test indices to their validated rows of ``psi`` (a matrix is checked once, up front)."""
    if not callable(localizer_psi):
        psi = check_probabilities(localizer_psi, "localizer_psi", simplex_axis=1, ndim=2)
        if psi.shape != (m, n_vp):
            raise ValueError(f"localizer_psi must have shape ({m}, {n_vp}), got {psi.shape}")
        return lambda index: psi[index]

    def rows(index):
        block = check_probabilities(localizer_psi(index), "localizer_psi(index)", simplex_axis=1, ndim=2)
        if block.shape != (index.size, n_vp):
            raise ValueError(f"localizer_psi(index) must return shape ({index.size}, {n_vp}) for "
                             f"{index.size} indices, got {block.shape}")
        return block

    return rows


def _category_weight(psi_rows, n_vp, queries, members, lo, hi):
    """``1 / psi'`` of each query, ``psi'`` its ``psi`` mass on ``members[lo:hi]`` (``inf`` where it is 0).

    The rows of ``psi`` (``n_vp`` wide) are fetched for blocks of queries of bounded size.
    """
    psi_prime = np.empty(queries.size)
    step = max(1, BLOCK_CELLS // max(1, n_vp))
    for start in range(0, queries.size, step):
        block = slice(start, start + step)
        mass = np.zeros((len(queries[block]), members.size + 1))
        np.cumsum(psi_rows(queries[block])[:, members], axis=1, out=mass[:, 1:])
        rows = np.arange(len(mass))
        psi_prime[block] = mass[rows, hi[block]] - mass[rows, lo[block]]
    with np.errstate(divide="ignore"):
        return np.where(psi_prime > 0, 1.0 / np.maximum(psi_prime, 1e-300), np.inf)


def _singleton_class(sets):
    """The class of a singleton set, -1 for any other set."""
    return np.where(sets.sum(axis=1) == 1, np.argmax(sets, axis=1), -1)


def venn_admit(mc_probs, mc_labels, mc_q, mc_d, vp_probs, vp_labels, vp_q, vp_d, probs, q, d, alpha, *,
               omega, kappa=1000, test_weight=1.0, localizer_psi=None, require_q=None, partition="band"):
    """Venn-ADMIT: admit a point when the lower Venn probability of its ADMIT singleton is ``>= 1 - alpha``.

    ADMIT sets (:func:`admit_sets`, calibrated on the ``mc_`` split) are
    computed for the test points and for the points of the second
    calibration split (``vp_``). A test point whose set is ``{c*}`` has as
    Venn category the ``vp_`` points in its band (same ``q``, ``d`` within
    ``omega``, or the same fixed bin) whose ADMIT set is also ``{c*}``. With
    ``n`` of those ``|T|`` points of true class ``c*``, its lower Venn
    probability is ``n / (|T| + w)``.

    Parameters
    ----------
    mc_probs, mc_labels, mc_q, mc_d : array_like
        The first calibration split (ADMIT's), as in :func:`admit_sets`:
        probabilities ``(n, n_classes)``, labels, ``q`` and ``d`` ``(n,)``.
    vp_probs, vp_labels, vp_q, vp_d : array_like
        The second calibration split (the Venn predictor's), same layout.
    probs : array_like of shape (m, n_classes)
        KNN probabilities of the test points.
    q : array_like of int, shape (m,)
        Their ``q``.
    d : array_like of shape (m,)
        Their ``d``.
    alpha : float
        Miscoverage level in (0, 1).
    omega : float
        Half-width of the distance band (non-negative).
    kappa : int, default 1000
        ADMIT's smallest band count per class.
    test_weight : float or array_like of shape (m,), default 1.0
        Weight ``w >= 1`` of each test point in its category: 1 for
        Venn-ADMIT-w; a given weight otherwise. Leave at 1 when
        ``localizer_psi`` is given.
    localizer_psi : array_like of shape (m, n_vp) or callable, optional
        The localizer's weights ``psi`` of each test point over the ``vp_``
        points (rows sum to one; :meth:`calibtut.selective.knn_approximation.Localizer.weights`).
        Weighted Venn-ADMIT: the test weight is ``1 / psi'``, ``psi'`` the
        mass of ``psi`` on the point's Venn category (Eq. 9); ``psi' = 0``
        gives the lower probability 0. The dense matrix has ``m * n_vp``
        entries (5.5 GB in float64 for 29,704 test points and 23,000 ``vp_``
        points), so it may instead be a function that takes an array of test
        indices and returns their rows of ``psi``; it is called on blocks of
        at most a few million entries, once for each test point with an
        ADMIT singleton, and the result is the same.
    require_q : int, optional
        Admit only points with this ``q`` (the "qK" censoring, ``require_q=25``).
    partition : {"band", "fixed"}, default "band"
        As in :func:`admit_sets`.

    Returns
    -------
    admitted : numpy.ndarray of bool, shape (m,)
        Whether the point is admitted (its prediction is the KNN's argmax).
    lower : numpy.ndarray of shape (m,)
        Lower Venn probability of the ADMIT singleton; NaN where the ADMIT
        set is not a singleton.

    Examples
    --------
    >>> import numpy as np
    >>> p = np.array([[0.9, 0.1], [0.8, 0.2], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8], [0.1, 0.9]] * 4)
    >>> y, zeros = np.array([0, 0, 0, 1, 1, 1] * 4), np.zeros(24)
    >>> admitted, lower = venn_admit(p, y, zeros, zeros, p, y, zeros, zeros, [[0.95, 0.05]], [0],
    ...                              [0.0], 0.25, omega=1.0, kappa=3)
    >>> admitted, lower.round(3)
    (array([ True]), array([0.923]))
    """
    alpha, omega, kappa = _options(alpha, omega, kappa, partition)
    mc = _split(mc_probs, mc_labels, mc_q, mc_d, "mc_")
    vp = _split(vp_probs, vp_labels, vp_q, vp_d, "vp_")
    test = _split(probs, None, q, d, "", labelled=False)
    n_classes = mc[0].shape[1]
    if vp[0].shape[1] != n_classes or test[0].shape[1] != n_classes:
        raise ValueError(f"mc_probs, vp_probs and probs must have the same number of classes ({n_classes})")
    m = len(test[0])
    weight = as_float_array(test_weight, "test_weight", ndim=(0, 1))
    if np.any(weight < 1):
        raise ValueError(f"test_weight must be >= 1 (1 / psi' with psi' in (0, 1]), got {float(weight.min())}")
    weight = np.broadcast_to(weight, (m,)) if weight.ndim == 0 else weight
    if weight.shape != (m,):
        raise ValueError(f"test_weight must be a number or one per test point ({m}), got {weight.size}")
    if localizer_psi is not None:
        if np.any(weight != 1):
            raise ValueError("give test_weight or localizer_psi, not both")
        psi_rows = _psi_rows(localizer_psi, m, len(vp[0]))
    if require_q is not None:
        require_q = check_int(require_q, "require_q", minimum=0)
    test_class = _singleton_class(_admit(mc, test, alpha, omega, kappa, partition))
    vp_class = _singleton_class(_admit(mc, vp, alpha, omega, kappa, partition))
    vp_correct = (vp_class == vp[1]).astype(np.int64)
    lower = np.full(m, np.nan)
    test_q, test_d = test[2], test[3]
    for value in np.unique(test_q[test_class >= 0]):
        for c in range(n_classes):
            queries = np.flatnonzero((test_q == value) & (test_class == c))
            if queries.size == 0:
                continue
            members = np.flatnonzero((vp[2] == value) & (vp_class == c))
            members = members[np.argsort(vp[3][members], kind="stable")]
            lo, hi = _band_ranges(vp[3][members], test_d[queries], omega, partition)
            correct = np.concatenate([[0], np.cumsum(vp_correct[members])])
            if localizer_psi is None:
                w = weight[queries]
            else:
                w = _category_weight(psi_rows, len(vp[0]), queries, members, lo, hi)
            lower[queries] = (correct[hi] - correct[lo]) / (hi - lo + w)
    admitted = np.nan_to_num(lower, nan=-1.0) >= 1 - alpha
    if require_q is not None:
        admitted &= test_q == require_q
    return admitted, lower


def admitted_accuracy_by_class(admitted, predictions, labels, n_classes, *, by="true"):
    """Accuracy among admitted points per class, the layout of the paper's Tables 4-5.

    For each class ``c``: ``n`` admitted points whose true (``by="true"``, the
    paper's stratification) or predicted (``by="predicted"``, what Venn-ADMIT's
    categories condition on) class is ``c``, the fraction of them predicted
    correctly, and ``n / N`` with ``N`` all points; a last row ``"all"`` pools the
    classes. A set method's singletons are its admitted points (prediction = the
    singleton's class).

    Parameters
    ----------
    admitted : array_like of bool, shape (N,)
        Whether each point is admitted (a singleton, or not rejected).
    predictions : array_like of int, shape (N,)
        Predicted class of each point (used where admitted).
    labels : array_like of int, shape (N,)
        True classes.
    n_classes : int
        Number of classes (at least 2).
    by : {"true", "predicted"}, default "true"
        Which class stratifies the rows.

    Returns
    -------
    pandas.DataFrame
        Columns ``class``, ``n``, ``accuracy`` (NaN when ``n = 0``) and ``share``.

    Examples
    --------
    >>> admitted_accuracy_by_class([True, True, False, True], [0, 1, 1, 1], [0, 0, 1, 1], 2)
      class  n  accuracy  share
    0     0  2  0.500000   0.50
    1     1  1  1.000000   0.25
    2   all  3  0.666667   0.75
    """
    if by not in ("true", "predicted"):
        raise ValueError(f"by must be 'true' or 'predicted', got {by!r}")
    n_classes = check_int(n_classes, "n_classes", minimum=2)
    admitted = np.asarray(admitted)
    if admitted.dtype != bool or admitted.ndim != 1:
        raise TypeError(
            f"admitted must be a 1-d boolean array, got dtype {admitted.dtype} and shape {admitted.shape}"
        )
    columns = []
    for name, values in (("predictions", predictions), ("labels", labels)):
        arr = as_float_array(values, name, ndim=1)
        bad = (arr != np.round(arr)) | (arr < 0) | (arr >= n_classes)
        if arr.size != admitted.size or np.any(bad):
            shown = float(arr[bad][0]) if np.any(bad) else f"{arr.size} entries"
            raise ValueError(
                f"{name} must be one integer in 0..{n_classes - 1} per point ({admitted.size}), got {shown}"
            )
        columns.append(arr.astype(np.int64))
    predictions, labels = columns
    stratum = labels if by == "true" else predictions
    correct = predictions == labels
    rows = []
    for c in [*range(n_classes), "all"]:
        chosen = admitted & (stratum == c) if c != "all" else admitted
        n = int(chosen.sum())
        rows.append({"class": c, "n": n, "accuracy": correct[chosen].mean() if n else np.nan,
                     "share": n / admitted.size})
    return pd.DataFrame(rows)
