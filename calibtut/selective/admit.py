"""ADMIT and Venn-ADMIT: selective classification from a KNN approximation (Schmaltz & Rasooly).

Every point carries, from :mod:`calibtut.selective.knn_approximation`, the
KNN's class probabilities ``pi``, the feature ``q`` (consecutive agreeing,
correct training neighbours) and the distance ``d`` to the nearest training
exemplar, bundled per split in a :class:`~calibtut.selective.features.KNNFeatures`.

**ADMIT** (Alg. 2, :class:`ADMIT`) is label-conditional conformal prediction
inside a data-driven partition. For a point ``t``, the band is the
calibration points with the same ``q`` and ``|d_j - d_t| <= omega``
(``partition="band"``, the paper's sliding window, centred on each point) or
with the same ``q`` and the same bin ``floor(d / (2 omega))``
(``partition="fixed"``, a true Mondrian taxonomy for which Theorem 2 holds
verbatim). Class ``c`` enters the set when ``1 - pi^c(t)`` is at most the
``ceil((n_c + 1)(1 - alpha))``-th smallest LAC score ``1 - pi^{y_j}`` of the
``n_c`` band points of true class ``c``; the KNN's prediction is always in the
set; and when some class has fewer than ``kappa`` band points the set is every
class (the point is rejected).

**Venn-ADMIT** (Alg. 1, 3, 4, :class:`VennADMIT`) calibrates ADMIT's
singletons with an inductive Venn predictor over a second calibration split:
the category of a test point whose ADMIT set is ``{c*}`` is the second
split's points in its band whose ADMIT set is also ``{c*}``; with ``n`` of its
``|T|`` points of true class ``c*`` and the test point's weight ``w >= 1`` (1
for the unweighted "-w" variant, the localizer's ``1 / psi'`` otherwise) the
lower Venn probability of ``c*`` is ``n / (|T| + w)``, and the point is
admitted when it is at least ``1 - alpha``. ``require_q`` keeps only points
with that ``q`` (the "qK" censoring).

``fit`` sorts each (``q``, class) group of calibration points by ``d`` once;
the predictions are vectorised: band ranges by binary search, prefix counts,
one pass per (``q``, class) group, in blocks of bounded memory.
:func:`admit_sets` and :func:`venn_admit` are the one-call forms.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from calibtut._estimator import Estimator, optional, rule
from calibtut._numeric import ceil_rank
from calibtut._validation import (
    as_float_array,
    check_alpha,
    check_choice,
    check_fitted,
    check_int,
    check_labels,
    check_probabilities,
    check_real,
)
from calibtut.selective.features import _checked_features

__all__ = ["ADMIT", "VennADMIT", "admit_sets", "venn_admit", "admitted_accuracy_by_class"]

_PARTITIONS = ("band", "fixed")
# largest number of (query, calibration point) comparisons held at once
BLOCK_CELLS = 4_000_000


def _check_options(p):
    """The rules that tie ADMIT's checked parameters together."""
    needed = math.ceil(1 / p.alpha) - 1
    if p.kappa < needed:
        raise ValueError(
            f"kappa={p.kappa} is too small for alpha={p.alpha}: a band with fewer than {needed} points of a "
            "class has no finite conformal threshold; use kappa >= that"
        )
    if p.partition == "fixed" and p.omega == 0:
        raise ValueError("omega must be > 0 with partition='fixed' (bins of width 2 omega), got 0.0")


def _sorted_groups(q, classes, d, n_classes):
    """``{(q value, class): indices sorted by d}`` of the non-empty (q, class) groups of a split."""
    groups = {}
    for value in np.unique(q):
        for c in range(n_classes):
            members = np.flatnonzero((q == value) & (classes == c))
            if members.size:
                groups[value, c] = members[np.argsort(d[members], kind="stable")]
    return groups


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


class ADMIT(Estimator):
    """ADMIT prediction sets: label-conditional conformal inside the ``(q, d)`` band (Alg. 2).

    Parameters
    ----------
    alpha : float, default 0.1
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

    Attributes
    ----------
    n_classes_ : int
        Number of classes of the calibration split.
    groups_ : dict
        ``{(q, c): (d, scores)}``: the distances and LAC scores ``1 - pi^c``
        of the calibration points of each ``q`` and true class ``c``, sorted
        by distance.

    See Also
    --------
    VennADMIT : the Venn predictor of ADMIT's singleton sets.
    calibtut.conformal.SplitConformalClassifier : Mondrian sets of a given taxonomy.
    admit_sets : the one-call function.

    References
    ----------
    - Schmaltz & Rasooly (2022), "Approximate conditional coverage & calibration via neural model
      approximations", arXiv preprint.

    Examples
    --------
    >>> import numpy as np
    >>> from calibtut.selective import KNNFeatures
    >>> p = np.array([[0.9, 0.1], [0.8, 0.2], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8], [0.1, 0.9]])
    >>> cal = KNNFeatures(p, [0, 0, 0, 1, 1, 1], np.zeros(6), np.zeros(6))
    >>> test = KNNFeatures([[0.85, 0.15], [0.5, 0.5], [0.25, 0.75]], None, [0, 0, 0], [0.0, 0.0, 0.0])
    >>> ADMIT(alpha=0.25, omega=1.0, kappa=3).fit(cal).predict_set(test)
    array([[ True, False],
           [ True, False],
           [False,  True]])
    """

    _parameter_constraints = {
        "alpha": check_alpha,
        "omega": rule(check_real, low=0),
        "kappa": rule(check_int, minimum=1),
        "partition": rule(check_choice, choices=_PARTITIONS),
    }

    def __init__(self, *, alpha=0.1, omega, kappa=1000, partition="band"):
        self.alpha = alpha
        self.omega = omega
        self.kappa = kappa
        self.partition = partition

    def _check_params(self, p):
        _check_options(p)

    def fit(self, cal):
        """Sort the calibration points of each ``q`` and true class by distance.

        Parameters
        ----------
        cal : KNNFeatures
            The calibration split, labelled.

        Returns
        -------
        ADMIT
            ``self``, fitted.
        """
        self._validate_params()
        cal = _checked_features(cal, "cal", labelled=True)
        scores = 1.0 - cal.probs[np.arange(len(cal)), cal.labels]
        groups = _sorted_groups(cal.q, cal.labels, cal.d, cal.n_classes)
        self.groups_ = {key: (cal.d[members], scores[members]) for key, members in groups.items()}
        self.n_classes_ = cal.n_classes
        return self

    def predict_set(self, test):
        """ADMIT sets of the points of ``test``.

        Parameters
        ----------
        test : KNNFeatures
            The points to predict (their labels, if any, are not used).

        Returns
        -------
        numpy.ndarray of bool, shape (m, n_classes)
        """
        check_fitted(self, "groups_")
        test = _checked_features(test, "test", n_classes=self.n_classes_)
        probs, q, d = test.probs, test.q, test.d
        sets = np.zeros(probs.shape, dtype=bool)
        smallest = np.zeros(len(probs), dtype=np.int64)  # becomes min_c n_c over the classes seen
        seen = np.zeros(probs.shape, dtype=bool)
        for value in np.unique(q):
            queries = np.flatnonzero(q == value)
            for c in range(self.n_classes_):
                if (value, c) not in self.groups_:
                    continue
                group_d, group_scores = self.groups_[value, c]
                lo, hi = _band_ranges(group_d, d[queries], self.params_.omega, self.params_.partition)
                n_band = hi - lo
                below = _count_below(group_scores, lo, hi, 1.0 - probs[queries, c])
                sets[queries, c] = below < ceil_rank((n_band + 1) * (1 - self.params_.alpha))
                smallest[queries] = np.where(seen[queries].any(axis=1), np.minimum(smallest[queries], n_band),
                                             n_band)
                seen[queries, c] = True
        too_few = (~seen.all(axis=1)) | (smallest < self.params_.kappa)
        sets[np.arange(len(probs)), np.argmax(probs, axis=1)] = True
        sets[too_few] = True
        return sets


def admit_sets(cal, test, alpha, *, omega, kappa=1000, partition="band"):
    """ADMIT prediction sets in one call: :class:`ADMIT` fitted on ``cal``, predicting ``test``.

    Parameters
    ----------
    cal : KNNFeatures
        The calibration split, labelled.
    test : KNNFeatures
        The points to predict.
    alpha : float
        Miscoverage level in (0, 1).
    omega : float
        Half-width of the distance band (non-negative).
    kappa : int, default 1000
        Smallest number of band points of every class (at least ``ceil(1 / alpha) - 1``).
    partition : {"band", "fixed"}, default "band"
        As in :class:`ADMIT`.

    Returns
    -------
    numpy.ndarray of bool, shape (m, n_classes)

    Examples
    --------
    >>> import numpy as np
    >>> from calibtut.selective import KNNFeatures
    >>> p = np.array([[0.9, 0.1], [0.8, 0.2], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8], [0.1, 0.9]])
    >>> cal = KNNFeatures(p, [0, 0, 0, 1, 1, 1], np.zeros(6), np.zeros(6))
    >>> admit_sets(cal, KNNFeatures([[0.5, 0.5]], None, [0], [0.0]), 0.25, omega=1.0, kappa=3)
    array([[ True, False]])
    """
    return ADMIT(alpha=alpha, omega=omega, kappa=kappa, partition=partition).fit(cal).predict_set(test)


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


#: The Venn category of a (q, class) with no point of the second split: no members, no correct ones.
_EMPTY_CATEGORY = (np.empty(0, dtype=np.int64), np.empty(0), np.zeros(1, dtype=np.int64))


class VennADMIT(Estimator):
    """Venn-ADMIT: admit a point when the lower Venn probability of its ADMIT singleton is ``>= 1 - alpha``.

    :class:`ADMIT` is fitted on the first calibration split (``mc``) and gives
    sets for the test points and for the points of the second split
    (``vp``). A test point whose set is ``{c*}`` has as Venn category the
    ``vp`` points in its band (same ``q``, ``d`` within ``omega``, or the same
    fixed bin) whose ADMIT set is also ``{c*}``. With ``n`` of those ``|T|``
    points of true class ``c*``, its lower Venn probability is
    ``n / (|T| + w)``, ``w`` the test point's weight.

    Parameters
    ----------
    alpha : float, default 0.1
        Miscoverage level in (0, 1).
    omega : float
        Half-width of the distance band (non-negative).
    kappa : int, default 1000
        ADMIT's smallest band count per class.
    require_q : int, optional
        Admit only points with this ``q`` (the "qK" censoring, ``require_q=25``).
    partition : {"band", "fixed"}, default "band"
        As in :class:`ADMIT`.

    Attributes
    ----------
    admit_ : ADMIT
        ADMIT fitted on the first split.
    categories_ : numpy.ndarray of int, shape (k, 2)
        The Venn categories met on ``vp``, one row ``(q, c*)`` each, sorted
        (an array of category codes, as :class:`~calibtut.recalibration.VennPredictor`'s).
    groups_ : dict
        ``{(q, c*): (members, d, correct)}``: the indices of the ``vp``
        points of each ``q`` whose ADMIT set is ``{c*}``, sorted by distance,
        their distances and the prefix counts of those of true class ``c*``.
    n_vp_ : int
        Points of the second split (the width of the localizer's ``psi``).

    See Also
    --------
    ADMIT : the conformal sets it is built on.
    calibtut.recalibration.VennPredictor : the Venn predictor of a given taxonomy.
    venn_admit : the one-call function.

    References
    ----------
    - Schmaltz & Rasooly (2022), "Approximate conditional coverage & calibration via neural model
      approximations", arXiv preprint.
    - Vovk, Gammerman & Shafer (2005), *Algorithmic Learning in a Random World*, Springer.

    Examples
    --------
    >>> import numpy as np
    >>> from calibtut.selective import KNNFeatures
    >>> p = np.array([[0.9, 0.1], [0.8, 0.2], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8], [0.1, 0.9]] * 4)
    >>> cal = KNNFeatures(p, [0, 0, 0, 1, 1, 1] * 4, np.zeros(24), np.zeros(24))
    >>> model = VennADMIT(alpha=0.25, omega=1.0, kappa=3).fit(cal, cal)
    >>> test = KNNFeatures([[0.95, 0.05]], None, [0], [0.0])
    >>> model.predict_admitted(test), model.predict_lower(test).round(3)
    (array([ True]), array([0.923]))
    """

    _parameter_constraints = {
        "alpha": check_alpha,
        "omega": rule(check_real, low=0),
        "kappa": rule(check_int, minimum=1),
        "partition": rule(check_choice, choices=_PARTITIONS),
        "require_q": optional(check_int, minimum=0),
    }

    def __init__(self, *, alpha=0.1, omega, kappa=1000, require_q=None, partition="band"):
        self.alpha = alpha
        self.omega = omega
        self.kappa = kappa
        self.require_q = require_q
        self.partition = partition

    def _check_params(self, p):
        _check_options(p)

    def fit(self, mc, vp):
        """Fit ADMIT on ``mc`` and build the Venn categories of ``vp``.

        Parameters
        ----------
        mc : KNNFeatures
            The first calibration split (ADMIT's), labelled.
        vp : KNNFeatures
            The second calibration split (the Venn predictor's), labelled.

        Returns
        -------
        VennADMIT
            ``self``, fitted.
        """
        p = self._validate_params()
        admit = ADMIT(alpha=p.alpha, omega=p.omega, kappa=p.kappa, partition=p.partition).fit(mc)
        vp = _checked_features(vp, "vp", labelled=True, n_classes=admit.n_classes_)
        vp_class = _singleton_class(admit.predict_set(vp))
        vp_correct = (vp_class == vp.labels).astype(np.int64)
        self.groups_ = {
            key: (members, vp.d[members], np.concatenate([[0], np.cumsum(vp_correct[members])]))
            for key, members in _sorted_groups(vp.q, vp_class, vp.d, admit.n_classes_).items()
        }
        self.categories_ = np.array(sorted(self.groups_), dtype=np.int64).reshape(-1, 2)
        self.admit_, self.n_vp_ = admit, len(vp)
        return self

    def predict_lower(self, test, *, test_weight=1.0, localizer_psi=None):
        """Lower Venn probability of each test point's ADMIT singleton (NaN where the set is not a singleton).

        Parameters
        ----------
        test : KNNFeatures
            The test points (their labels, if any, are not used).
        test_weight : float or array_like of shape (m,), default 1.0
            Weight ``w >= 1`` of each test point in its category: 1 for
            Venn-ADMIT-w; a given weight otherwise. Leave at 1 when
            ``localizer_psi`` is given.
        localizer_psi : array_like of shape (m, n_vp) or callable, optional
            The localizer's weights ``psi`` of each test point over the ``vp``
            points (rows sum to one; :meth:`calibtut.selective.knn_approximation.Localizer.weights`).
            Weighted Venn-ADMIT: the test weight is ``1 / psi'``, ``psi'`` the
            mass of ``psi`` on the point's Venn category (Eq. 9); ``psi' = 0``
            gives the lower probability 0. The dense matrix has ``m * n_vp``
            entries (5.5 GB in float64 for 29,704 test points and 23,000 ``vp``
            points), so it may instead be a function that takes an array of test
            indices and returns their rows of ``psi``; it is called on blocks of
            at most a few million entries, once for each test point with an
            ADMIT singleton, and the result is the same.

        Returns
        -------
        numpy.ndarray of shape (m,)
        """
        check_fitted(self, "categories_")
        test = _checked_features(test, "test", n_classes=self.admit_.n_classes_)
        m = len(test)
        weight = as_float_array(test_weight, "test_weight", ndim=(0, 1))
        if np.any(weight < 1):
            raise ValueError(f"test_weight must be >= 1 (1 / psi' with psi' in (0, 1]), got {float(weight.min())}")
        weight = np.broadcast_to(weight, (m,)) if weight.ndim == 0 else weight
        if weight.shape != (m,):
            raise ValueError(f"test_weight must be a number or one per test point ({m}), got {weight.size}")
        if localizer_psi is not None:
            if np.any(weight != 1):
                raise ValueError("give test_weight or localizer_psi, not both")
            psi_rows = _psi_rows(localizer_psi, m, self.n_vp_)
        lower = np.full(m, np.nan)
        for queries, members, lo, hi, correct in self._categories(test):
            if localizer_psi is None:
                w = weight[queries]
            else:
                w = _category_weight(psi_rows, self.n_vp_, queries, members, lo, hi)
            lower[queries] = (correct[hi] - correct[lo]) / (hi - lo + w)
        return lower

    def predict_category_size(self, test):
        """Size ``|T|`` of each test point's Venn category: the ``vp`` points behind its lower probability.

        The lower probability ``n / (|T| + w)`` of :meth:`predict_lower` is an
        accuracy estimated on these ``|T|`` calibration points, so its
        sampling error shrinks as ``1 / sqrt(|T|)``
        (:func:`~calibtut.experiments.venn_admit.admitted_accuracy_gap` uses
        it). Neither the test weight nor ``require_q`` changes a category.

        Parameters
        ----------
        test : KNNFeatures
            The test points (their labels, if any, are not used).

        Returns
        -------
        numpy.ndarray of int, shape (m,)
            ``|T|``; 0 where the ADMIT set is not a singleton (no category)
            and where the category is empty.

        Examples
        --------
        >>> import numpy as np
        >>> from calibtut.selective import KNNFeatures
        >>> p = np.array([[0.9, 0.1], [0.8, 0.2], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8], [0.1, 0.9]] * 4)
        >>> cal = KNNFeatures(p, [0, 0, 0, 1, 1, 1] * 4, np.zeros(24), np.zeros(24))
        >>> model = VennADMIT(alpha=0.25, omega=1.0, kappa=3).fit(cal, cal)
        >>> model.predict_category_size(KNNFeatures([[0.95, 0.05]], None, [0], [0.0]))
        array([12])
        """
        check_fitted(self, "categories_")
        test = _checked_features(test, "test", n_classes=self.admit_.n_classes_)
        size = np.zeros(len(test), dtype=np.int64)
        for queries, _, lo, hi, _ in self._categories(test):
            size[queries] = hi - lo
        return size

    def _categories(self, test):
        """Per (``q``, class) group of test singletons: the queries, the group's members and each query's band.

        Yields ``(queries, members, lo, hi, correct)``: query ``i`` has as
        category ``members[lo[i]:hi[i]]``, of which ``correct[hi[i]] -
        correct[lo[i]]`` are of the singleton's class.
        """
        test_class = _singleton_class(self.admit_.predict_set(test))
        for value in np.unique(test.q[test_class >= 0]):
            for c in range(self.admit_.n_classes_):
                queries = np.flatnonzero((test.q == value) & (test_class == c))
                if queries.size == 0:
                    continue
                members, member_d, correct = self.groups_.get((value, c), _EMPTY_CATEGORY)
                lo, hi = _band_ranges(member_d, test.d[queries], self.params_.omega, self.params_.partition)
                yield queries, members, lo, hi, correct

    def predict_admitted(self, test, *, test_weight=1.0, localizer_psi=None):
        """Whether each test point is admitted (its prediction is then the KNN's argmax).

        Parameters
        ----------
        test : KNNFeatures
            The test points.
        test_weight : float or array_like of shape (m,), default 1.0
            As in :meth:`predict_lower`.
        localizer_psi : array_like of shape (m, n_vp) or callable, optional
            As in :meth:`predict_lower`.

        Returns
        -------
        numpy.ndarray of bool, shape (m,)
        """
        lower = self.predict_lower(test, test_weight=test_weight, localizer_psi=localizer_psi)
        return self._admitted(test, lower)

    def _admitted(self, test, lower):
        """The admission rule on lower probabilities: at least ``1 - alpha``, and ``q`` as required."""
        admitted = np.nan_to_num(lower, nan=-1.0) >= 1 - self.params_.alpha
        if self.params_.require_q is not None:
            admitted &= test.q == self.params_.require_q
        return admitted


def venn_admit(mc, vp, test, alpha, *, omega, kappa=1000, test_weight=1.0, localizer_psi=None, require_q=None,
               partition="band"):
    """Venn-ADMIT in one call: :class:`VennADMIT` fitted on ``mc`` and ``vp``, admitting points of ``test``.

    Parameters
    ----------
    mc : KNNFeatures
        The first calibration split (ADMIT's), labelled.
    vp : KNNFeatures
        The second calibration split (the Venn predictor's), labelled.
    test : KNNFeatures
        The test points.
    alpha : float
        Miscoverage level in (0, 1).
    omega : float
        Half-width of the distance band (non-negative).
    kappa : int, default 1000
        ADMIT's smallest band count per class.
    test_weight : float or array_like of shape (m,), default 1.0
        Weight ``w >= 1`` of each test point in its category
        (:meth:`VennADMIT.predict_lower`).
    localizer_psi : array_like of shape (m, n_vp) or callable, optional
        The localizer's weights of the test points over ``vp``
        (:meth:`VennADMIT.predict_lower`).
    require_q : int, optional
        Admit only points with this ``q``.
    partition : {"band", "fixed"}, default "band"
        As in :class:`ADMIT`.

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
    >>> from calibtut.selective import KNNFeatures
    >>> p = np.array([[0.9, 0.1], [0.8, 0.2], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8], [0.1, 0.9]] * 4)
    >>> cal = KNNFeatures(p, [0, 0, 0, 1, 1, 1] * 4, np.zeros(24), np.zeros(24))
    >>> test = KNNFeatures([[0.95, 0.05]], None, [0], [0.0])
    >>> admitted, lower = venn_admit(cal, cal, test, 0.25, omega=1.0, kappa=3)
    >>> admitted, lower.round(3)
    (array([ True]), array([0.923]))
    """
    model = VennADMIT(alpha=alpha, omega=omega, kappa=kappa, require_q=require_q, partition=partition).fit(mc, vp)
    lower = model.predict_lower(test, test_weight=test_weight, localizer_psi=localizer_psi)
    return model._admitted(test, lower), lower


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
    predictions = check_labels(predictions, "predictions", n_classes=n_classes, n=admitted.size)
    labels = check_labels(labels, "labels", n_classes=n_classes, n=admitted.size)
    stratum = labels if by == "true" else predictions
    correct = predictions == labels
    rows = []
    for c in [*range(n_classes), "all"]:
        chosen = admitted & (stratum == c) if c != "all" else admitted
        n = int(chosen.sum())
        rows.append({"class": c, "n": n, "accuracy": correct[chosen].mean() if n else np.nan,
                     "share": n / admitted.size})
    return pd.DataFrame(rows)
