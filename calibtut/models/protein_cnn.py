"""A small 1-D convolutional network for protein secondary structure, with a memory layer (paper 001).

Schmaltz & Rasooly's Protein network is the TAPE Transformer with a memory
layer on top; offline, the book's stand-in is :class:`ProteinCNN`, trained
on single sequences (no alignment profiles):

``amino acids -> embedding -> n_layers x (Conv1d, ReLU) -> width-1 Conv1d, tanh = r -> width-1 Conv1d -> logits``

The width-1 convolution is the *memory layer*: its output at a residue is that
residue's exemplar vector ``r`` (as the hidden vector of
:class:`~calibtut.models.memory_head.MemoryHead` is for a document), so the
KNN approximation of :mod:`calibtut.selective.knn_approximation` searches training
residues. Proteins of different lengths are padded into one batch; after
every layer the padded positions are set to zero, so a protein's outputs do
not depend on what it is batched with (the convolutions' own zero padding sees
exactly what it would see for the protein alone).

The network itself is :class:`~calibtut.models.token_cnn.TokenCNN` on the
amino-acid vocabulary (index 0 padding, 1..20 the standard residues, 21 any
other letter); this module encodes sequences and keeps the protein names.
"""

from __future__ import annotations

import numpy as np

from calibtut.models.token_cnn import (
    TokenCNN,
    _check_labels,
    _check_model,
    _fit,
    _outputs,
)

__all__ = ["AMINO_ACIDS", "ProteinCNN", "encode_proteins", "fit_protein_cnn", "protein_cnn_outputs"]

#: The 20 standard amino acids in one-letter code; every other letter (X, U, Z, B, ...) is one
#: "unknown" token, and index 0 is padding.
AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"

_UNKNOWN = len(AMINO_ACIDS) + 1
_CODE = {a: i + 1 for i, a in enumerate(AMINO_ACIDS)}


def encode_proteins(sequences):
    """Amino-acid sequences as token arrays: 1..20 the standard residues, 21 any other letter.

    Parameters
    ----------
    sequences : sequence of str
        One-letter codes, case-insensitive; each protein non-empty.

    Returns
    -------
    list of numpy.ndarray of int64

    Examples
    --------
    >>> [t.tolist() for t in encode_proteins(["ACx", "Y"])]
    [[1, 2, 21], [20]]
    """
    if isinstance(sequences, str) or not hasattr(sequences, "__len__"):
        raise TypeError("sequences must be a sequence of str (one per protein), not one str")
    out = []
    for i, seq in enumerate(sequences):
        if not isinstance(seq, str) or not seq or not seq.isalpha():
            raise ValueError(f"sequences[{i}] must be a non-empty str of one-letter amino-acid codes, got {seq!r}")
        out.append(np.array([_CODE.get(a, _UNKNOWN) for a in seq.upper()], dtype=np.int64))
    return out


class ProteinCNN(TokenCNN):
    """Per-residue classifier: a :class:`~calibtut.models.token_cnn.TokenCNN` on the 20 amino acids.

    Parameters
    ----------
    n_classes : int, default 3
        Number of per-residue classes (at least 2; three-state secondary structure).
    embedding : int, default 32
        Width of the amino-acid embedding (at least 1).
    channels : int, default 128
        Channels of each convolution (at least 1).
    width : int, default 11
        Kernel width of the convolutions (odd, at least 1).
    n_layers : int, default 3
        Number of convolutions before the memory layer (at least 1).
    hidden : int, default 256
        Width of the memory layer, the length of the exemplar vectors (at least 1).
    seed : int, default 0
        Seed of the initial weights (non-negative).

    Examples
    --------
    >>> import torch
    >>> net = ProteinCNN(hidden=4, channels=8, seed=0)
    >>> tokens, mask = torch.ones(2, 7, dtype=torch.long), torch.ones(2, 7, dtype=torch.bool)
    >>> net.exemplars(tokens, mask).shape, net(tokens, mask).shape
    (torch.Size([2, 7, 4]), torch.Size([2, 7, 3]))
    """

    def __init__(self, n_classes=3, *, embedding=32, channels=128, width=11, n_layers=3, hidden=256, seed=0):
        super().__init__(_UNKNOWN + 1, n_classes, embedding=embedding, channels=channels, width=width,
                         n_layers=n_layers, hidden=hidden, seed=seed)


def fit_protein_cnn(model, sequences, labels, *, epochs=6, batch_size=16, lr=1e-3, seed=0, device="cpu",
                    progress=False):
    """Train a :class:`ProteinCNN` by per-residue cross-entropy (Adam, shuffled batches of proteins).

    :func:`~calibtut.models.token_cnn.fit_token_cnn` on the encoded
    sequences: each batch holds ``batch_size`` proteins padded to the
    longest; the loss is the mean over the batch's real residues (padding is
    masked out).

    Parameters
    ----------
    model : ProteinCNN
        Trained in place on ``device``; its weights are back on the CPU at the end.
    sequences : sequence of str
        Amino-acid sequences (:func:`encode_proteins`).
    labels : sequence of array_like of int
        Per protein, one class in ``0..n_classes - 1`` per residue.
    epochs : int, default 6
        Passes over the proteins (at least 1).
    batch_size : int, default 16
        Proteins per batch (at least 1).
    lr : float, default 1e-3
        Adam learning rate (positive).
    seed : int, numpy.random.Generator or None, default 0
        Seeds the batch order.
    device : {"cpu", "cuda"}, default "cpu"
    progress : bool, default False
        Show a progress bar over epochs.

    Returns
    -------
    list of float
        Mean per-residue training loss of each epoch.

    Examples
    --------
    >>> import numpy as np
    >>> seqs = ["ACDEFGHIK" * 3, "LMNPQRSTVWY" * 2]
    >>> labels = [np.arange(27) % 3, np.arange(22) % 3]
    >>> net = ProteinCNN(hidden=8, channels=8, width=3, seed=0)
    >>> losses = fit_protein_cnn(net, seqs, labels, epochs=20, batch_size=2, lr=1e-2)
    >>> losses[-1] < losses[0]
    True
    """
    _check_model(model, ProteinCNN)
    tokens = encode_proteins(sequences)
    targets = _check_labels(labels, tokens, model.n_classes, "protein", "residue")
    return _fit(model, tokens, targets, epochs=epochs, batch_size=batch_size, lr=lr, class_weight=None, seed=seed,
                device=device, progress=progress, desc="fit_protein_cnn")


def protein_cnn_outputs(model, sequences, *, batch_size=32, device="cpu"):
    """Per-residue exemplar vectors and logits of a :class:`ProteinCNN`, proteins concatenated in order.

    Parameters
    ----------
    model : ProteinCNN
    sequences : sequence of str
        Amino-acid sequences.
    batch_size : int, default 32
        Proteins evaluated at once (at least 1); the outputs do not depend on it.
    device : {"cpu", "cuda"}, default "cpu"

    Returns
    -------
    exemplars : numpy.ndarray of float32, shape (n_residues, hidden)
    logits : numpy.ndarray of float64, shape (n_residues, n_classes)

    Examples
    --------
    >>> r, logits = protein_cnn_outputs(ProteinCNN(hidden=4, channels=8), ["ACD", "EF"])
    >>> r.shape, logits.shape, r.dtype.name
    ((5, 4), (5, 3), 'float32')
    """
    _check_model(model, ProteinCNN)
    return _outputs(model, encode_proteins(sequences), batch_size=batch_size, device=device)
