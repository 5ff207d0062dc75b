"""Paper 001's feature pipeline as one object: neighbours, KNN approximation, ``q`` and ``d``, localizer.

:class:`KNNFeaturePipeline` holds a network's training exemplars, logits and
labels and runs the steps every Venn-ADMIT experiment repeats: the ``K``
nearest training exemplars of a set of points
(:func:`~calibtut.selective.neighbors.nearest_neighbors`), the ``2C + 1``
parameter KNN approximation fitted to mimic the network
(:func:`~calibtut.selective.knn_approximation.fit_knn_approximation`), the
features of any set of points as a
:class:`~calibtut.selective.features.KNNFeatures` bundle (the KNN's
probabilities, ``q`` and ``d``), and the one-parameter localizer fitted over a
support set (:func:`~calibtut.selective.knn_approximation.fit_localizer`).
The band half-width ``omega`` is
:func:`~calibtut.selective.knn_approximation.band_width` of the features of
whichever calibration split the experiment chooses.

The starting values of the two distance temperatures are explicit: the KNN's
(``knn_eta``: a number, or ``"median"``, the median distance of the fitting
points to their ``K`` neighbours) and the localizer's (``eta`` of
:meth:`KNNFeaturePipeline.fit_localizer`, a number the caller derives from its
own data).
"""

from __future__ import annotations

import numpy as np

from calibtut._estimator import Estimator, rule
from calibtut._torch import torch
from calibtut._validation import (
    as_float_array,
    check_fitted,
    check_int,
    check_labels,
    check_real,
    check_same_length,
)
from calibtut.selective.features import KNNFeatures
from calibtut.selective.knn_approximation import (
    KNNApproximation,
    Localizer,
    consecutive_agreement,
    fit_knn_approximation,
    fit_localizer,
)
from calibtut.selective.neighbors import nearest_neighbors, pairwise_distances

__all__ = ["KNNFeaturePipeline"]


def _matrix(x, name, n_columns=None):
    """``x`` checked as a finite 2-D array of reals, returned as given (float32 stays float32 for the search)."""
    checked = as_float_array(x, name, ndim=2)
    if n_columns is not None and checked.shape[1] != n_columns:
        raise ValueError(f"{name} must have {n_columns} columns, got shape {checked.shape}")
    return x if isinstance(x, np.ndarray) and x.dtype.kind == "f" else checked


def _softmax(logits):
    z = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def _check_knn_eta(value, name):
    """The KNN's starting distance temperature: a positive number, or ``"median"``."""
    if isinstance(value, str):
        if value == "median":
            return value
        raise ValueError(f"{name} must be a positive number or 'median', got {value!r}")
    return check_real(value, name, low=0, low_open=True)


class KNNFeaturePipeline(Estimator):
    """Neighbours, KNN approximation, features ``q`` and ``d``, and localizer of one network (paper 001).

    Parameters
    ----------
    n_neighbors : int, default 25
        ``K``, the training exemplars searched per point; also the cap of
        ``q`` (at least 1; the paper: 25).
    knn_eta : float or "median", default 1.0
        Starting value of the KNN approximation's distance temperature: a
        positive number, or ``"median"`` for the median distance of the
        fitting points to their ``K`` training neighbours.
    epochs : int, default 30
        Epochs of the KNN and localizer fits (at least 1).

    Attributes
    ----------
    n_classes_ : int
        Number of classes, the columns of the training logits (after :meth:`fit`).
    knn_ : KNNApproximation
        The fitted KNN approximation (after :meth:`fit_knn`).
    localizer_ : Localizer
        The fitted localizer (after :meth:`fit_localizer`).

    See Also
    --------
    calibtut.selective.KNNFeatures : the bundle it returns.
    calibtut.selective.ADMIT, calibtut.selective.VennADMIT : the methods that consume it.

    References
    ----------
    - Schmaltz & Rasooly (2022), "Approximate conditional coverage & calibration via neural model
      approximations", arXiv preprint.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 300)
    >>> r = rng.normal(size=(300, 4)) + 2.0 * y[:, None]
    >>> logits = np.column_stack([-r.sum(1), r.sum(1)]) - 4.0 * np.array([-1, 1])
    >>> pipe = KNNFeaturePipeline(n_neighbors=5, knn_eta="median", epochs=2)
    >>> pipe = pipe.fit(r[:200], logits[:200], y[:200]).fit_knn(r[200:250], logits[200:250], seed=0)
    >>> features = pipe.transform(r[250:], y[250:])
    >>> features.probs.shape, int(features.q.max()) <= 5
    ((50, 2), True)
    >>> psi = pipe.fit_localizer(r[200:225], r[225:250], eta=1.0, seed=0).localizer_weights(r[250:])
    >>> psi.shape, bool(np.allclose(psi.sum(axis=1), 1.0))
    ((50, 25), True)
    """

    _parameter_constraints = {
        "n_neighbors": rule(check_int, minimum=1),
        "knn_eta": _check_knn_eta,
        "epochs": rule(check_int, minimum=1),
    }

    def __init__(self, *, n_neighbors=25, knn_eta=1.0, epochs=30):
        self.n_neighbors = n_neighbors
        self.knn_eta = knn_eta
        self.epochs = epochs

    def fit(self, train_exemplars, train_logits, train_labels):
        """Hold the network's training exemplars (what is searched), logits and labels.

        Parameters
        ----------
        train_exemplars : array_like of shape (n_train, dim)
            The network's exemplar vectors of its training points.
        train_logits : array_like of shape (n_train, n_classes)
            The network's logits at its training points.
        train_labels : array_like of int, shape (n_train,)
            Their labels.

        Returns
        -------
        self
        """
        p = self._validate_params()
        reference = _matrix(train_exemplars, "train_exemplars")
        logits = _matrix(train_logits, "train_logits")
        labels = check_labels(train_labels, "train_labels", n_classes=logits.shape[1])
        check_same_length(train_exemplars=reference, train_logits=logits, train_labels=labels)
        if len(labels) < p.n_neighbors:
            raise ValueError(f"train_exemplars must have at least n_neighbors={p.n_neighbors} rows, "
                             f"got {len(labels)}")
        self.reference_ = torch.as_tensor(reference)
        self.train_logits_ = torch.as_tensor(logits)
        self.train_labels_ = np.array(train_labels)  # a writable copy (torch warns on a read-only one)
        self.train_pred_ = logits.argmax(axis=1)
        self.n_classes_ = logits.shape[1]
        return self

    def fit_knn(self, exemplars, teacher_logits, *, neighbours=None, seed=None):
        """Fit the KNN approximation to mimic the network on the fitting points (App. C).

        Parameters
        ----------
        exemplars : array_like of shape (n, dim) or None
            The exemplar vectors of the fitting points (None when
            ``neighbours`` is given).
        teacher_logits : array_like of shape (n, n_classes)
            The network's logits at the fitting points.
        neighbours : tuple, optional
            ``(distances, indices)`` of the fitting points, from
            :meth:`kneighbors` (saves the search when it is shared).
        seed : int, numpy.random.Generator or None
            Seed of the fit's split and batch order.

        Returns
        -------
        self
        """
        check_fitted(self, "reference_")
        distances, indices = self._neighbourhood(exemplars, neighbours, "exemplars")
        teacher = _matrix(teacher_logits, "teacher_logits", self.n_classes_)
        eta = float(np.median(distances.numpy())) if self.params_.knn_eta == "median" else self.params_.knn_eta
        self.knn_ = KNNApproximation(self.n_classes_, eta=eta)
        fit_knn_approximation(self.knn_, distances, *self._neighbour_outputs(indices), torch.as_tensor(teacher),
                              epochs=self.params_.epochs, seed=seed)
        return self

    def kneighbors(self, exemplars):
        """The ``K`` nearest training exemplars of points: float64 distances (a tensor) and indices (numpy).

        Examples
        --------
        >>> r = np.arange(10.0)[:, None]
        >>> pipe = KNNFeaturePipeline(n_neighbors=2).fit(r, np.zeros((10, 2)), np.zeros(10, int))
        >>> distances, indices = pipe.kneighbors([[2.2]])
        >>> distances.numpy().round(2).tolist(), indices.tolist()
        ([[0.2, 0.8]], [[2, 3]])
        """
        check_fitted(self, "reference_")
        distances, indices = nearest_neighbors(torch.as_tensor(_matrix(exemplars, "exemplars")), self.reference_,
                                               self.params_.n_neighbors)
        return distances.double(), indices.numpy()

    def knn_logits(self, exemplars=None, *, neighbours=None):
        """The KNN approximation's logits at points (their exemplars, or their :meth:`kneighbors`).

        Examples
        --------
        See :class:`KNNFeaturePipeline`; ``transform`` gives their softmax.
        """
        check_fitted(self, "knn_")
        distances, indices = self._neighbourhood(exemplars, neighbours, "exemplars")
        with torch.no_grad():
            return self.knn_(distances, *self._neighbour_outputs(indices)).numpy()

    def transform(self, exemplars=None, labels=None, *, neighbours=None):
        """The :class:`~calibtut.selective.features.KNNFeatures` of points: probabilities, ``labels``, ``q``, ``d``.

        Parameters
        ----------
        exemplars : array_like of shape (n, dim) or None
            The points' exemplar vectors (None when ``neighbours`` is given).
        labels : array_like of int, shape (n,), or None
            Their labels (None for unlabelled test points).
        neighbours : tuple, optional
            ``(distances, indices)`` from :meth:`kneighbors`.

        Returns
        -------
        KNNFeatures

        Examples
        --------
        See :class:`KNNFeaturePipeline`.
        """
        check_fitted(self, "knn_")
        distances, indices = self._neighbourhood(exemplars, neighbours, "exemplars")
        probs = _softmax(self.knn_logits(neighbours=(distances, indices)))
        q = consecutive_agreement(probs.argmax(axis=1), self.train_pred_[indices], self.train_labels_[indices],
                                  cap=self.params_.n_neighbors)
        return KNNFeatures(probs, labels, q, distances[:, 0].numpy())

    def fit_localizer(self, exemplars, support, *, eta, neighbours=None, support_neighbours=None, seed=None):
        """Fit the localizer over ``support`` to mimic the KNN approximation on ``exemplars`` (App. B).

        Parameters
        ----------
        exemplars : array_like of shape (n, dim)
            Exemplar vectors of the fitting points (not in the support).
        support : array_like of shape (n_support, dim)
            Exemplar vectors of the support (the Venn split).
        eta : float
            Starting value of the localizer's distance temperature (positive).
        neighbours, support_neighbours : tuple, optional
            :meth:`kneighbors` of ``exemplars`` and of ``support``.
        seed : int, numpy.random.Generator or None
            Seed of the fit.

        Returns
        -------
        self

        Examples
        --------
        See :class:`KNNFeaturePipeline`.
        """
        check_fitted(self, "knn_")
        eta = check_real(eta, "eta", low=0, low_open=True)
        exemplars = _matrix(exemplars, "exemplars")
        support = _matrix(support, "support", exemplars.shape[1])
        support_logits = self.knn_logits(support, neighbours=support_neighbours)
        teacher = self.knn_logits(exemplars, neighbours=neighbours)
        self.support_ = support
        self.localizer_ = Localizer(eta=eta)
        fit_localizer(self.localizer_, pairwise_distances(exemplars, support), torch.as_tensor(support_logits),
                      torch.as_tensor(teacher), epochs=self.params_.epochs, seed=seed)
        return self

    def localizer_weights(self, exemplars):
        """``psi``: the localizer's weights of points over the support, ``(n, n_support)``, rows summing to one.

        Examples
        --------
        See :class:`KNNFeaturePipeline`.
        """
        check_fitted(self, "localizer_")
        exemplars = _matrix(exemplars, "exemplars", self.support_.shape[1])
        with torch.no_grad():
            return self.localizer_.weights(pairwise_distances(exemplars, self.support_)).numpy()

    def _neighbourhood(self, exemplars, neighbours, name):
        if neighbours is None:
            return self.kneighbors(exemplars)
        distances, indices = neighbours
        k = self.params_.n_neighbors
        if not isinstance(distances, torch.Tensor) or distances.ndim != 2 or distances.shape[1] != k:
            raise ValueError(f"neighbours must be (distances, indices) of kneighbors, with {k} "
                             f"columns, for {name}")
        return distances, np.asarray(indices)

    def _neighbour_outputs(self, indices):
        """The network's logits and the labels at the training neighbours ``indices``."""
        rows = torch.as_tensor(indices)
        return self.train_logits_[rows], torch.as_tensor(self.train_labels_)[rows]
