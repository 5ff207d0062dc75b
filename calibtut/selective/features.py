"""The KNN features of a set of points, the input of ADMIT and Venn-ADMIT (Schmaltz & Rasooly).

Every point carries, from :mod:`calibtut.selective.knn_approximation`, the
KNN's class probabilities, its feature ``q`` (consecutive agreeing, correct
training neighbours, :func:`~calibtut.selective.knn_approximation.consecutive_agreement`)
and its distance ``d`` to the nearest training exemplar; calibration points
also carry their label. :class:`KNNFeatures` holds the four arrays of one
split, checked once when it is built.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calibtut._validation import check_class_probs, check_distances, check_labels, check_same_length

__all__ = ["KNNFeatures"]


@dataclass(frozen=True, eq=False)
class KNNFeatures:
    """The KNN features of ``n`` points: probabilities, labels (or None), ``q`` and ``d``.

    Built once per split and checked on construction: ``probs`` has rows in
    [0, 1] summing to one, ``labels`` are integers in ``0..n_classes - 1``
    (None for unlabelled test points), ``q`` non-negative integers and ``d``
    non-negative distances, one of each per point. The error names the field.

    Parameters
    ----------
    probs : array_like of shape (n, n_classes)
        The KNN approximation's class probabilities (at least 2 classes).
    labels : array_like of int, shape (n,), or None
        True classes of labelled (calibration) points; None for test points.
    q : array_like of int, shape (n,)
        Consecutive agreeing training neighbours (Eq. 4 of the paper).
    d : array_like of shape (n,)
        Distance to the nearest training exemplar (Eq. 5).

    Attributes
    ----------
    probs : numpy.ndarray of float, shape (n, n_classes)
    labels : numpy.ndarray of int64, shape (n,), or None
    q : numpy.ndarray of int64, shape (n,)
    d : numpy.ndarray of float, shape (n,)

    Examples
    --------
    >>> cal = KNNFeatures([[0.9, 0.1], [0.3, 0.7]], [0, 1], [25, 3], [0.5, 1.2])
    >>> len(cal), cal.n_classes, cal.q.dtype.name
    (2, 2, 'int64')
    >>> cal[[1]].labels
    array([1])
    >>> KNNFeatures([[0.9, 0.1]], None, [-1], [0.5])
    Traceback (most recent call last):
    ...
    ValueError: q must be non-negative integers, got -1.0
    """

    probs: np.ndarray
    labels: np.ndarray | None
    q: np.ndarray
    d: np.ndarray

    def __post_init__(self):
        probs = check_class_probs(self.probs, "probs")
        n, n_classes = probs.shape
        labels = None if self.labels is None else check_labels(self.labels, "labels", n_classes=n_classes, n=n)
        q = check_labels(self.q, "q", n=n)
        d = check_distances(self.d, "d", ndim=1)
        check_same_length(probs=probs, d=d)
        for name, value in (("probs", probs), ("labels", labels), ("q", q), ("d", d)):
            object.__setattr__(self, name, value)

    @property
    def n_classes(self):
        """Number of classes (columns of ``probs``)."""
        return self.probs.shape[1]

    def __len__(self):
        return len(self.probs)

    def __getitem__(self, index):
        """The features of the points ``index`` (an index array, a boolean mask or a slice)."""
        labels = None if self.labels is None else self.labels[index]
        return KNNFeatures(self.probs[index], labels, self.q[index], self.d[index])


def _checked_features(features, name, *, labelled=False, n_classes=None):
    """``features`` if it is a :class:`KNNFeatures` bundle (labelled, with ``n_classes`` classes, where asked)."""
    if not isinstance(features, KNNFeatures):
        raise TypeError(f"{name} must be a KNNFeatures bundle, got {type(features).__name__}")
    if labelled and features.labels is None:
        raise ValueError(f"{name} must be labelled: its labels are None")
    if n_classes is not None and features.n_classes != n_classes:
        raise ValueError(f"{name} has {features.n_classes} classes, the calibration split {n_classes}")
    return features
