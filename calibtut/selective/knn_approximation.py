"""A network approximated by a distance-weighted KNN over its exemplar vectors (Schmaltz & Rasooly).

The network's "memory layer" gives every instance an exemplar vector ``r``.
For an instance ``t`` with its ``K`` nearest training exemplars (by L2
distance ``d_k``, from :func:`calibtut.selective.neighbors.nearest_neighbors`), the KNN
approximation has logits (Eq. 2-3 of the paper)

    a^c(t) = beta^c + sum_k w_k (tanh(f^c(x_k)) + gamma^c * ytilde_k^c),
    w = softmax_k(-d_k / eta),

where ``f(x_k)`` are the network's logits at training neighbour ``k`` and
``ytilde_k^c = +1`` if neighbour ``k``'s label is ``c``, else ``-1``: only
``2C + 1`` parameters (``beta``, ``gamma``, ``eta``). It is fitted to mimic the
network (the teacher) with a per-class sigmoid cross-entropy against the
teacher's sigmoid outputs (App. C, Eq. 10), Adadelta (learning rate 1), and
the epoch with the fewest argmax disagreements on a held-out half kept (Eq. 11).

Two features of the neighbourhood partition the data:

- ``q``: the number of consecutive nearest training neighbours (by rank,
  from the nearest) that the network classifies correctly and whose label is
  the KNN's prediction for ``t``, capped at ``K = 25`` (Eq. 4);
- ``d``: the distance to the nearest training exemplar (Eq. 5), compared
  within a band ``+-omega``, ``omega = n_std * std(d)`` over the calibration
  points with ``q > 0`` that the KNN classifies correctly (Eq. 6).

With the KNN's probabilities and the labels, ``q`` and ``d`` make a
:class:`~calibtut.selective.features.KNNFeatures` bundle, the input of
:mod:`calibtut.selective.admit`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np
import torch

from calibtut._torch import check_tensor
from calibtut._validation import (
    as_float_array,
    check_int,
    check_real,
    check_rng,
)
from calibtut.selective.features import _checked_features

__all__ = [
    "KNNApproximation",
    "KNNFitHistory",
    "fit_knn_approximation",
    "Localizer",
    "fit_localizer",
    "consecutive_agreement",
    "band_width",
]


def _tensor(x, name, ndim, dtype=None, **bounds):
    """``x`` checked (:func:`calibtut._torch.check_tensor`) and cast to ``dtype``."""
    x = check_tensor(x, name, ndim=ndim, **bounds)
    return x if dtype is None else x.to(dtype)


class KNNApproximation(torch.nn.Module):
    """The ``2C + 1``-parameter distance-weighted KNN of Eq. 2-3.

    Parameters
    ----------
    n_classes : int
        Number of classes ``C`` (at least 2).
    eta : float, default 1.0
        Initial softmax temperature of the distances (positive; stored as its
        logarithm so that it stays positive while fitted).

    Examples
    --------
    >>> import torch
    >>> knn = KNNApproximation(2)
    >>> d = torch.tensor([[0.0, 1.0]])
    >>> logits = torch.tensor([[[2.0, -2.0], [-2.0, 2.0]]])
    >>> knn(d, logits, torch.tensor([[0, 1]])).shape
    torch.Size([1, 2])
    >>> sum(p.numel() for p in knn.parameters())
    5
    """

    def __init__(self, n_classes, *, eta=1.0):
        super().__init__()
        self.n_classes = check_int(n_classes, "n_classes", minimum=2)
        eta = check_real(eta, "eta", low=0, low_open=True)
        self.beta = torch.nn.Parameter(torch.zeros(self.n_classes, dtype=torch.float64))
        self.gamma = torch.nn.Parameter(torch.ones(self.n_classes, dtype=torch.float64))
        self.log_eta = torch.nn.Parameter(torch.tensor(float(np.log(eta)), dtype=torch.float64))

    @property
    def eta(self):
        """The current distance temperature ``eta``."""
        return float(torch.exp(self.log_eta.detach()))

    def forward(self, distances, neighbor_logits, neighbor_labels):
        """Logits of the KNN approximation.

        Parameters
        ----------
        distances : torch.Tensor of shape (n, K)
            L2 distances to the ``K`` nearest training exemplars.
        neighbor_logits : torch.Tensor of shape (n, K, C)
            The network's logits at those training neighbours.
        neighbor_labels : torch.Tensor of int, shape (n, K)
            Their true labels in ``0..C - 1``.

        Returns
        -------
        torch.Tensor of shape (n, C)
        """
        distances = _tensor(distances, "distances", 2, torch.float64, low=0)
        neighbor_logits = _tensor(neighbor_logits, "neighbor_logits", 3, torch.float64)
        if neighbor_logits.shape != (*distances.shape, self.n_classes):
            raise ValueError(
                f"neighbor_logits must have shape {(*distances.shape, self.n_classes)} (distances has shape "
                f"{tuple(distances.shape)}, and {self.n_classes} classes), got {tuple(neighbor_logits.shape)}"
            )
        neighbor_labels = check_tensor(neighbor_labels, "neighbor_labels", ndim=2, integer=True, low=0,
                                       high=self.n_classes - 1)
        if neighbor_labels.shape != distances.shape:
            raise ValueError(
                f"neighbor_labels must have shape {tuple(distances.shape)}, got {tuple(neighbor_labels.shape)}"
            )
        return self._logits(distances, neighbor_logits, neighbor_labels)

    def _logits(self, distances, neighbor_logits, neighbor_labels):
        """:meth:`forward` on checked float64 tensors (the training loop's step: no value is read)."""
        w = torch.softmax(-distances / torch.exp(self.log_eta), dim=1)
        signs = 2.0 * torch.nn.functional.one_hot(neighbor_labels.long(), self.n_classes).to(torch.float64) - 1.0
        return self.beta + (w[:, :, None] * (torch.tanh(neighbor_logits) + self.gamma * signs)).sum(dim=1)


@dataclass
class KNNFitHistory:
    """What :func:`fit_knn_approximation` did: per-epoch dev disagreements and the kept epoch."""

    disagreements: list = field(default_factory=list)
    masked: list = field(default_factory=list)
    best_epoch: int = -1


def _soft_bce(student, teacher):
    """Mean over classes and rows of the sigmoid cross-entropy against sigmoid(teacher) (Eq. 10)."""
    return torch.nn.functional.binary_cross_entropy_with_logits(student, torch.sigmoid(teacher))


def fit_knn_approximation(model, distances, neighbor_logits, neighbor_labels, teacher_logits, *, epochs=50,
                          batch_size=32, seed=None):
    """Fit a :class:`KNNApproximation` to mimic the network's logits (App. C of the paper).

    The rows are split at random into halves: gradients come from the first
    (Adadelta, learning rate 1, soft sigmoid cross-entropy of Eq. 10), the
    epoch with the fewest argmax disagreements with the teacher on the second
    (Eq. 11) is kept. Masking rule: after an epoch that does not improve that
    count, the next epoch's loss uses only the training rows where the KNN
    and the teacher disagree (recomputed at the start of the epoch), until
    the count improves again.

    Parameters
    ----------
    model : KNNApproximation
        The model to fit (modified in place and returned).
    distances : torch.Tensor of shape (n, K)
        Distances of the KNN-fitting instances to their training neighbours.
    neighbor_logits : torch.Tensor of shape (n, K, C)
        The network's logits at the neighbours.
    neighbor_labels : torch.Tensor of int, shape (n, K)
        The neighbours' labels.
    teacher_logits : torch.Tensor of shape (n, C)
        The network's logits at the fitting instances themselves.
    epochs : int, default 50
        Number of epochs (at least 1).
    batch_size : int, default 32
        Mini-batch size (at least 1; the paper does not give it). Adadelta's
        first steps are tiny, so small batches (many steps) converge faster.
    seed : int, numpy.random.Generator or None
        Seed of the split and the batch order.

    Returns
    -------
    model : KNNApproximation
        The fitted model, holding the parameters of the best epoch.
    history : KNNFitHistory

    Examples
    --------
    >>> import torch
    >>> g = torch.Generator().manual_seed(0)
    >>> labels = torch.randint(0, 2, (200, 5), generator=g)
    >>> logits = 3.0 * (2.0 * torch.nn.functional.one_hot(labels, 2) - 1.0)
    >>> teacher = logits[:, 0, :]
    >>> d = torch.rand(200, 5, generator=g).sort(dim=1).values
    >>> knn, history = fit_knn_approximation(KNNApproximation(2), d, logits, labels, teacher, epochs=5, seed=0)
    >>> min(history.disagreements) <= history.disagreements[0]
    True
    """
    if not isinstance(model, KNNApproximation):
        raise TypeError(f"model must be a KNNApproximation, got {type(model).__name__}")
    epochs = check_int(epochs, "epochs", minimum=1)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    teacher = _tensor(teacher_logits, "teacher_logits", 2, torch.float64)
    n = teacher.shape[0]
    if n < 2 or distances.shape[0] != n:
        raise ValueError(f"teacher_logits and distances must have the same number (>= 2) of rows, got {n}")
    with torch.no_grad():
        model(distances, neighbor_logits, neighbor_labels)  # checks the inputs, once
    d, logits = distances.to(torch.float64), neighbor_logits.to(torch.float64)
    return _fit_to_teacher(model, lambda rows: model._logits(d[rows], logits[rows], neighbor_labels[rows]),
                           teacher, epochs, batch_size, seed)


def _fit_to_teacher(model, predict, teacher, epochs, batch_size, seed):
    """App. C's fit: soft sigmoid BCE on a random half, Adadelta, best dev epoch, masking rule.

    ``predict(rows)`` gives the model's logits for a long tensor of row indices.
    """
    n = teacher.shape[0]
    rng = check_rng(seed)
    order = torch.as_tensor(rng.permutation(n))
    train, dev = order[: n // 2 + n % 2], order[n // 2 + n % 2:]
    if dev.numel() == 0:
        dev = train
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
    history = KNNFitHistory()
    best_state, best, masked = copy.deepcopy(model.state_dict()), None, False
    for epoch in range(epochs):
        rows = train
        if masked:
            with torch.no_grad():
                rows = train[predict(train).argmax(dim=1) != teacher[train].argmax(dim=1)]
        history.masked.append(masked)
        perm = rows[torch.as_tensor(rng.permutation(rows.numel()), dtype=torch.long)]
        for start in range(0, perm.numel(), batch_size):
            batch = perm[start:start + batch_size]
            optimizer.zero_grad()
            loss = _soft_bce(predict(batch), teacher[batch])
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            wrong = int((predict(dev).argmax(dim=1) != teacher[dev].argmax(dim=1)).sum())
        history.disagreements.append(wrong)
        if best is None or wrong < best:
            best, history.best_epoch, masked = wrong, epoch, False
            best_state = copy.deepcopy(model.state_dict())
        else:
            masked = True
    model.load_state_dict(best_state)
    return model, history


class Localizer(torch.nn.Module):
    """The one-parameter localizer of Eq. 8: a softmax over a whole support set.

    ``psi_k = softmax_k(-||r_t - r_k|| / eta)`` over every support point
    ``k`` (a calibration split), and the logits ``sum_k psi_k a(x_k)`` average
    the KNN approximation's logits ``a`` at the support points. Venn-ADMIT
    weights a test point by ``1 / psi'``, ``psi'`` the mass ``psi`` puts on its
    Venn category (Eq. 9; ``localizer_psi`` of :meth:`calibtut.selective.admit.VennADMIT.predict_lower`).

    Parameters
    ----------
    eta : float, default 1.0
        Initial distance temperature (positive).

    Examples
    --------
    >>> import torch
    >>> loc = Localizer(eta=1.0)
    >>> loc.weights(torch.tensor([[0.0, 1.0, 1.0]])).sum().item()
    1.0
    """

    def __init__(self, eta=1.0):
        super().__init__()
        eta = check_real(eta, "eta", low=0, low_open=True)
        self.log_eta = torch.nn.Parameter(torch.tensor(float(np.log(eta)), dtype=torch.float64))

    @property
    def eta(self):
        """The current distance temperature."""
        return float(torch.exp(self.log_eta.detach()))

    def weights(self, distances):
        """``psi``: softmax of ``-distances / eta`` over the support (rows sum to one).

        Parameters
        ----------
        distances : torch.Tensor of shape (n, n_support)
            Distances of each query to every support point.

        Returns
        -------
        torch.Tensor of shape (n, n_support)
        """
        distances = _tensor(distances, "distances", 2, torch.float64, low=0)
        return self._weights(distances)

    def _weights(self, distances):
        return torch.softmax(-distances / torch.exp(self.log_eta), dim=1)

    def forward(self, distances, support_logits):
        """Logits ``psi @ support_logits`` of Eq. 8.

        Parameters
        ----------
        distances : torch.Tensor of shape (n, n_support)
            Distances of each query to every support point.
        support_logits : torch.Tensor of shape (n_support, C)
            The KNN approximation's logits at the support points.

        Returns
        -------
        torch.Tensor of shape (n, C)
        """
        support_logits = _tensor(support_logits, "support_logits", 2, torch.float64)
        psi = self.weights(distances)
        if psi.shape[1] != support_logits.shape[0]:
            raise ValueError(
                f"distances have {psi.shape[1]} support columns, support_logits {support_logits.shape[0]} rows"
            )
        return psi @ support_logits

    def _logits(self, distances, support_logits):
        """:meth:`forward` on checked float64 tensors (the training loop's step: no value is read)."""
        return self._weights(distances) @ support_logits


def fit_localizer(model, distances, support_logits, teacher_logits, *, epochs=50, batch_size=32, seed=None):
    """Fit a :class:`Localizer`'s ``eta`` to mimic the KNN approximation (App. B), as in :func:`fit_knn_approximation`.

    Parameters
    ----------
    model : Localizer
        The localizer (modified in place and returned).
    distances : torch.Tensor of shape (n, n_support)
        Distances of the fitting instances (e.g. the KNN split, not in the
        support) to every support point.
    support_logits : torch.Tensor of shape (n_support, C)
        The KNN approximation's logits at the support points.
    teacher_logits : torch.Tensor of shape (n, C)
        The KNN approximation's logits at the fitting instances.
    epochs : int, default 50
        Number of epochs (at least 1).
    batch_size : int, default 32
        Mini-batch size (at least 1).
    seed : int, numpy.random.Generator or None
        Seed of the split and the batch order.

    Returns
    -------
    model : Localizer
    history : KNNFitHistory

    Examples
    --------
    >>> import torch
    >>> support = torch.tensor([[2.0, -2.0], [-2.0, 2.0]])
    >>> d = torch.tensor([[0.1, 2.0], [2.0, 0.1], [0.2, 1.5], [1.5, 0.2]])
    >>> loc, history = fit_localizer(Localizer(), d, support, support[[0, 1, 0, 1]], epochs=3, seed=0)
    >>> history.disagreements[history.best_epoch]
    0
    """
    if not isinstance(model, Localizer):
        raise TypeError(f"model must be a Localizer, got {type(model).__name__}")
    epochs = check_int(epochs, "epochs", minimum=1)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    teacher = _tensor(teacher_logits, "teacher_logits", 2, torch.float64)
    with torch.no_grad():
        out = model(distances, support_logits)  # checks the inputs, once
    if out.shape != teacher.shape or teacher.shape[0] < 2:
        raise ValueError(
            f"teacher_logits must have shape {tuple(out.shape)} with >= 2 rows, got {tuple(teacher.shape)}"
        )
    d, support = distances.to(torch.float64), support_logits.to(torch.float64)
    return _fit_to_teacher(model, lambda rows: model._logits(d[rows], support), teacher, epochs, batch_size, seed)


def consecutive_agreement(knn_prediction, neighbor_predictions, neighbor_labels, *, cap=25):
    """Feature ``q``: consecutive nearest neighbours that are correct and agree with the prediction (Eq. 4).

    ``q_t`` is the length of the longest prefix of ``t``'s distance-ordered
    training neighbours in which every neighbour is classified correctly by
    the network (its prediction equals its label) and has the KNN's
    prediction for ``t`` as label; only the first ``cap`` neighbours count.

    Parameters
    ----------
    knn_prediction : array_like of int, shape (n,)
        The KNN approximation's predicted class for each instance.
    neighbor_predictions : array_like of int, shape (n, K)
        The network's predictions at the training neighbours, nearest first.
    neighbor_labels : array_like of int, shape (n, K)
        The neighbours' true labels.
    cap : int, default 25
        Largest value of ``q`` (the paper's ``K = 25``); at least 1.

    Returns
    -------
    numpy.ndarray of int, shape (n,)
        Values in ``0..min(cap, K)``.

    Examples
    --------
    >>> consecutive_agreement([1, 1, 0], [[1, 1, 0], [1, 0, 1], [0, 0, 0]], [[1, 1, 1], [1, 1, 1], [0, 0, 0]])
    array([2, 1, 3])
    """
    pred = as_float_array(knn_prediction, "knn_prediction", ndim=1)
    nb_pred = as_float_array(neighbor_predictions, "neighbor_predictions", ndim=2)
    nb_labels = as_float_array(neighbor_labels, "neighbor_labels", ndim=2)
    cap = check_int(cap, "cap", minimum=1)
    if nb_pred.shape != nb_labels.shape or nb_pred.shape[0] != pred.size:
        raise ValueError(
            f"knn_prediction {pred.shape}, neighbor_predictions {nb_pred.shape} and neighbor_labels "
            f"{nb_labels.shape} must describe the same (n, K) instances"
        )
    good = (nb_pred == nb_labels) & (nb_pred == pred[:, None])
    return np.cumprod(good[:, :cap], axis=1).sum(axis=1).astype(np.int64)


def band_width(cal, *, n_std=1.0):
    """Half-width ``omega = n_std * std(d)`` of the distance band (Eq. 6; the paper's ``delta``).

    The standard deviation (``ddof=0``) of the nearest-exemplar distances of
    the calibration points with ``q > 0`` that the KNN classifies correctly
    (its argmax equals the label).

    Parameters
    ----------
    cal : KNNFeatures
        The calibration points, labelled.
    n_std : float, default 1.0
        Number of standard deviations (non-negative; the paper's ``delta = 1``).

    Returns
    -------
    float

    Examples
    --------
    >>> from calibtut.selective import KNNFeatures
    >>> cal = KNNFeatures([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.7, 0.3]], [0, 1, 0, 1],
    ...                   [3, 1, 0, 2], [0.5, 1.5, 9.0, 1.0])
    >>> band_width(cal)
    0.5
    """
    cal = _checked_features(cal, "cal", labelled=True)
    n_std = check_real(n_std, "n_std", low=0)
    chosen = (cal.q > 0) & (cal.probs.argmax(axis=1) == cal.labels)
    if not chosen.any():
        raise ValueError("no calibration point has q > 0 and a correct KNN prediction: omega is undefined")
    return n_std * float(np.std(cal.d[chosen]))
