"""A classifier head whose hidden "memory layer" gives every instance an exemplar vector (paper 001).

Schmaltz & Rasooly put a small layer on top of a frozen (or fine-tuned)
encoder, the *memory layer*, and use its output for an instance as that
instance's exemplar vector ``r``: the KNN approximation of
:mod:`calibtut.selective.knn_approximation` searches the training exemplars, and the
network's logits at the training neighbours are its features. The book's
stand-in is :class:`MemoryHead`, ``features -> tanh(Linear) = r -> Linear ->
logits``, over fixed input features (TF-IDF vectors, which may be a sparse
matrix, or sentence embeddings). It is trained by cross-entropy with Adam in
mini-batches, deterministically given a seed (initialisation and batch order).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse
import torch

from calibtut._validation import as_float_array, check_int, check_real, check_rng

__all__ = ["MemoryHead", "fit_memory_head", "memory_head_outputs"]


class MemoryHead(torch.nn.Module):
    """``features -> r = tanh(W1 x + b1) -> W2 r + b2``: logits with an exemplar vector ``r``.

    Parameters
    ----------
    n_features : int
        Width of the input features (at least 1).
    n_classes : int
        Number of classes (at least 2).
    hidden : int, default 256
        Width of the memory layer, the length of the exemplar vectors (the
        paper: 1000 or 2000).
    seed : int, default 0
        Seed of the initial weights (non-negative).

    Examples
    --------
    >>> import torch
    >>> head = MemoryHead(5, 2, hidden=3, seed=0)
    >>> head.exemplars(torch.zeros(4, 5)).shape, head(torch.zeros(4, 5)).shape
    (torch.Size([4, 3]), torch.Size([4, 2]))
    """

    def __init__(self, n_features, n_classes, *, hidden=256, seed=0):
        super().__init__()
        n_features = check_int(n_features, "n_features", minimum=1)
        self.n_classes = check_int(n_classes, "n_classes", minimum=2)
        hidden = check_int(hidden, "hidden", minimum=1)
        seed = check_int(seed, "seed", minimum=0)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.memory = torch.nn.Linear(n_features, hidden)
            self.output = torch.nn.Linear(hidden, self.n_classes)

    def exemplars(self, x):
        """The memory layer's output ``r`` (the exemplar vectors), shape ``(n, hidden)``; ``x`` may be sparse."""
        if x.is_sparse:
            return torch.tanh(torch.sparse.mm(x, self.memory.weight.t()) + self.memory.bias)
        return torch.tanh(self.memory(x))

    def forward(self, x):
        """Logits, shape ``(n, n_classes)``."""
        return self.output(self.exemplars(x))


def _features(features):
    """Validated features: a float32 CSR matrix or a float32 array, 2-d."""
    if scipy.sparse.issparse(features):
        matrix = scipy.sparse.csr_matrix(features, dtype=np.float32)
        if not np.all(np.isfinite(matrix.data)):
            raise ValueError("features contains NaN or infinite values")
        return matrix
    return as_float_array(features, "features", ndim=2).astype(np.float32)


def _rows(features, index):
    """Rows of the features as a torch tensor (a sparse COO tensor for sparse features)."""
    block = features[index]
    if not scipy.sparse.issparse(block):
        return torch.as_tensor(block)
    coo = block.tocoo()
    indices = torch.as_tensor(np.vstack([coo.row, coo.col]).astype(np.int64))
    return torch.sparse_coo_tensor(indices, torch.as_tensor(coo.data), coo.shape,
                                   check_invariants=True).coalesce()


def fit_memory_head(model, features, labels, *, epochs=10, batch_size=64, lr=1e-3, weight_decay=0.0, seed=0):
    """Train a :class:`MemoryHead` by cross-entropy (Adam, shuffled mini-batches, fixed epochs).

    Parameters
    ----------
    model : MemoryHead
        Trained in place.
    features : array_like or scipy.sparse matrix, shape (n, n_features)
        Input features (a sparse matrix stays sparse: the memory layer is a
        sparse-dense product).
    labels : array_like of int, shape (n,)
        Classes in ``0..n_classes - 1``.
    epochs : int, default 10
        Passes over the data (at least 1).
    batch_size : int, default 64
        Mini-batch size (at least 1).
    lr : float, default 1e-3
        Adam learning rate (positive).
    weight_decay : float, default 0.0
        Adam's L2 penalty (non-negative).
    seed : int, numpy.random.Generator or None, default 0
        Seeds the batch order.

    Returns
    -------
    list of float
        Mean training loss of each epoch.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 4)); y = (X[:, 0] > 0).astype(int)
    >>> head = MemoryHead(4, 2, hidden=8, seed=0)
    >>> losses = fit_memory_head(head, X, y, epochs=20, lr=1e-2, seed=0)
    >>> losses[-1] < losses[0]
    True
    """
    if not isinstance(model, MemoryHead):
        raise TypeError(f"model must be a MemoryHead, got {type(model).__name__}")
    features = _features(features)
    labels = as_float_array(labels, "labels", ndim=1)
    bad = (labels != np.round(labels)) | (labels < 0) | (labels >= model.n_classes)
    if labels.size != features.shape[0] or np.any(bad):
        raise ValueError(f"labels must be one integer in 0..{model.n_classes - 1} per row of features "
                         f"({features.shape[0]}), got {labels.size} labels")
    if features.shape[1] != model.memory.in_features:
        raise ValueError(f"features must have {model.memory.in_features} columns, got {features.shape[1]}")
    epochs = check_int(epochs, "epochs", minimum=1)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    lr = check_real(lr, "lr", low=0, low_open=True)
    weight_decay = check_real(weight_decay, "weight_decay", low=0)
    rng = check_rng(seed)
    target = torch.as_tensor(labels.astype(np.int64))
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    model.train()
    losses = []
    for _ in range(epochs):
        order = rng.permutation(features.shape[0])
        total = 0.0
        for start in range(0, order.size, batch_size):
            batch = order[start:start + batch_size]
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(_rows(features, batch)), target[batch])
            loss.backward()
            optimizer.step()
            total += float(loss.detach()) * batch.size
        losses.append(total / order.size)
    model.eval()
    return losses


def memory_head_outputs(model, features, *, batch_size=2048):
    """Exemplar vectors and logits of a :class:`MemoryHead` for every row of ``features``.

    Parameters
    ----------
    model : MemoryHead
    features : array_like or scipy.sparse matrix, shape (n, n_features)
    batch_size : int, default 2048
        Rows evaluated at once (at least 1).

    Returns
    -------
    exemplars : numpy.ndarray of float32, shape (n, hidden)
    logits : numpy.ndarray of float64, shape (n, n_classes)

    Examples
    --------
    >>> import numpy as np
    >>> r, logits = memory_head_outputs(MemoryHead(3, 2, hidden=4), np.ones((5, 3)))
    >>> r.shape, logits.shape, r.dtype.name
    ((5, 4), (5, 2), 'float32')
    """
    if not isinstance(model, MemoryHead):
        raise TypeError(f"model must be a MemoryHead, got {type(model).__name__}")
    features = _features(features)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    if features.shape[1] != model.memory.in_features:
        raise ValueError(f"features must have {model.memory.in_features} columns, got {features.shape[1]}")
    exemplars, logits = [], []
    model.eval()
    with torch.no_grad():
        for start in range(0, features.shape[0], batch_size):
            x = _rows(features, np.arange(start, min(start + batch_size, features.shape[0])))
            r = model.exemplars(x)
            exemplars.append(r.numpy())
            logits.append(model.output(r).double().numpy())
    hidden = model.memory.out_features
    if not exemplars:
        return np.zeros((0, hidden), np.float32), np.zeros((0, model.n_classes))
    return np.concatenate(exemplars), np.concatenate(logits)
