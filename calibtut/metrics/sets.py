"""Metrics of prediction sets for classification: coverage, size, class-conditional coverage.

A prediction set is a row of a boolean membership matrix ``sets`` of shape
``(n, n_classes)``, as :meth:`calibtut.conformal.SplitConformalClassifier.predict_set`
returns; 0/1 integers are accepted too. ``y`` comes first, as in every score
of :mod:`calibtut.metrics`.
"""

from __future__ import annotations

import numpy as np

from calibtut._validation import as_float_array, check_labels, check_same_length

__all__ = ["class_conditional_coverage", "coverage_by_group", "mean_set_size", "set_coverage"]


def _check_sets(sets, name="sets"):
    if isinstance(sets, np.ndarray) and sets.dtype == bool and sets.ndim == 2:
        return sets  # already a membership matrix: nothing to convert or check
    arr = as_float_array(sets, name, ndim=2)
    if not np.all((arr == 0) | (arr == 1)):
        bad = arr[(arr != 0) & (arr != 1)].flat[0]
        raise ValueError(f"{name} must hold booleans or 0/1 values, got {float(bad)}")
    return arr.astype(bool)


def _check_y_sets(y, sets):
    sets = _check_sets(sets)
    return check_labels(y, "y", n_classes=sets.shape[1], n=sets.shape[0]), sets


def set_coverage(y, sets):
    """Fraction of points whose true class is in their prediction set.

    Parameters
    ----------
    y : array_like of int, shape (n,)
        True classes in ``0 .. n_classes - 1``.
    sets : array_like of bool, shape (n, n_classes)
        Set memberships.

    Returns
    -------
    float

    See Also
    --------
    mean_set_size, class_conditional_coverage
    calibtut.conformal.coverage_band : the band a conformal method's coverage falls in.
    calibtut.metrics.interval_coverage : the same for regression intervals.

    References
    ----------
    Angelopoulos & Bates, "A gentle introduction to conformal prediction
    and distribution-free uncertainty quantification", 2021, Sec. 3.

    Examples
    --------
    >>> sets = [[True, False, False], [True, True, False], [False, False, True]]
    >>> set_coverage([0, 2, 2], sets)
    0.6666666666666666
    """
    y, sets = _check_y_sets(y, sets)
    return float(np.mean(sets[np.arange(y.size), y]))


def mean_set_size(sets):
    """Mean number of classes per prediction set (a sharpness measure; smaller is more informative).

    Parameters
    ----------
    sets : array_like of bool, shape (n, n_classes)
        Set memberships.

    Returns
    -------
    float

    See Also
    --------
    set_coverage

    References
    ----------
    Angelopoulos & Bates, "A gentle introduction to conformal prediction", 2021.

    Examples
    --------
    >>> mean_set_size([[True, False, False], [True, True, False], [False, False, False]])
    1.0
    """
    return float(np.mean(_check_sets(sets).sum(axis=1)))


def class_conditional_coverage(y, sets):
    """Coverage among the points of each true class (NaN for a class with no point).

    The worst class's coverage is the usual summary of how far a marginal
    guarantee is from a label-conditional one.

    Parameters
    ----------
    y : array_like of int, shape (n,)
        True classes in ``0 .. n_classes - 1``.
    sets : array_like of bool, shape (n, n_classes)
        Set memberships.

    Returns
    -------
    numpy.ndarray of shape (n_classes,)

    See Also
    --------
    set_coverage
    calibtut.conformal.label_conditional_sets : sets with a per-class guarantee.

    References
    ----------
    Vovk, Lindsay, Nouretdinov & Gammerman, "Mondrian confidence machine",
    2003; Sadinle, Lei & Wasserman, "Least ambiguous set-valued classifiers
    with bounded error levels", JASA 2019.

    Examples
    --------
    >>> sets = [[True, False], [False, True], [True, False], [True, True]]
    >>> class_conditional_coverage([0, 0, 1, 1], sets)
    array([0.5, 0.5])
    """
    y, sets = _check_y_sets(y, sets)
    n_classes = sets.shape[1]
    hits = np.bincount(y, weights=sets[np.arange(y.size), y], minlength=n_classes)
    counts = np.bincount(y, minlength=n_classes)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, hits / np.maximum(counts, 1), np.nan)


def coverage_by_group(covered, groups):
    """Coverage (mean of ``covered``) for each value of ``groups``, sorted by group.

    Parameters
    ----------
    covered : array_like of bool or {0, 1}, shape (n,)
        Whether each test label is in its prediction set.
    groups : array_like of shape (n,)
        Group of each test point (e.g. its rotation angle); finite numbers.

    Returns
    -------
    pandas.Series
        Coverage indexed by group.

    Examples
    --------
    >>> coverage_by_group([1, 0, 1, 1], [10, 10, 20, 20]).tolist()
    [0.5, 1.0]
    """
    import pandas as pd

    hit = as_float_array(covered, "covered", ndim=1)
    if np.any((hit != 0) & (hit != 1)):
        raise ValueError("covered must hold booleans or 0/1 values")
    group = as_float_array(groups, "groups", ndim=1)
    check_same_length(covered=hit, groups=group)
    return pd.Series(hit).groupby(group).mean().rename("coverage")
