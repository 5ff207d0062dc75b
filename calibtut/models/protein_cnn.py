"""A small 1-D convolutional network for protein secondary structure, with a memory layer (paper 001).

Schmaltz & Rasooly's Protein network is the TAPE Transformer with a memory
layer on top; offline, the book's stand-in is :class:`ProteinCNN`, trained
on single sequences (no alignment profiles):

``amino acids -> embedding -> n_layers x (Conv1d, ReLU) -> width-1 Conv1d, tanh = r -> width-1 Conv1d -> logits``

The width-1 convolution is the *memory layer*: its output at a residue is that
residue's exemplar vector ``r`` (as the hidden vector of
:class:`~calibtut.models.memory_head.MemoryHead` is for a document), so the
KNN approximation of :mod:`calibtut.knn_approximation` searches training
residues. Proteins of different lengths are padded into one batch; after
every layer the padded positions are set to zero, so a protein's outputs do
not depend on what it is batched with (the convolutions' own zero padding sees
exactly what it would see for the protein alone).
"""

from __future__ import annotations

import numpy as np
import torch

from .._validation import check_int, check_real, check_rng
from .training import resolve_device

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


class ProteinCNN(torch.nn.Module):
    """Per-residue classifier: embedding, 1-D convolutions, a width-1 memory layer ``r``, then logits.

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
        super().__init__()
        self.n_classes = check_int(n_classes, "n_classes", minimum=2)
        embedding = check_int(embedding, "embedding", minimum=1)
        channels = check_int(channels, "channels", minimum=1)
        width = check_int(width, "width", minimum=1)
        if width % 2 == 0:
            raise ValueError(f"width must be odd (the convolutions keep the length), got {width}")
        n_layers = check_int(n_layers, "n_layers", minimum=1)
        self.hidden = check_int(hidden, "hidden", minimum=1)
        seed = check_int(seed, "seed", minimum=0)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.embed = torch.nn.Embedding(_UNKNOWN + 1, embedding, padding_idx=0)
            sizes = [embedding] + [channels] * n_layers
            self.convs = torch.nn.ModuleList(torch.nn.Conv1d(a, b, width, padding=width // 2)
                                             for a, b in zip(sizes[:-1], sizes[1:]))
            self.memory = torch.nn.Conv1d(channels, self.hidden, 1)
            self.output = torch.nn.Conv1d(self.hidden, self.n_classes, 1)

    def exemplars(self, tokens, mask):
        """The memory layer's output ``r`` at every position, shape ``(batch, length, hidden)``; zero at padding."""
        keep = mask.unsqueeze(1).to(self.memory.weight.dtype)
        x = self.embed(tokens).transpose(1, 2) * keep
        for conv in self.convs:
            x = torch.relu(conv(x)) * keep
        return (torch.tanh(self.memory(x)) * keep).transpose(1, 2)

    def forward(self, tokens, mask):
        """Logits at every position, shape ``(batch, length, n_classes)``."""
        return self.output(self.exemplars(tokens, mask).transpose(1, 2)).transpose(1, 2)


def _pad(arrays, index, device):
    """The arrays ``index`` of ``arrays`` as one ``(batch, length)`` tensor, padded with -1."""
    length = max(len(arrays[i]) for i in index)
    padded = np.full((len(index), length), -1, dtype=np.int64)
    for row, i in enumerate(index):
        padded[row, :len(arrays[i])] = arrays[i]
    return torch.as_tensor(padded, device=device)


def _batch(tokens, index, device):
    """Tokens of the proteins ``index``, padded into a ``(batch, length)`` tensor, and the mask of real residues."""
    padded = _pad(tokens, index, device)
    return padded.clamp(min=0), padded >= 0


def _check_model(model):
    if not isinstance(model, ProteinCNN):
        raise TypeError(f"model must be a ProteinCNN, got {type(model).__name__}")


def fit_protein_cnn(model, sequences, labels, *, epochs=6, batch_size=16, lr=1e-3, seed=0, device="cpu",
                    progress=False):
    """Train a :class:`ProteinCNN` by per-residue cross-entropy (Adam, shuffled batches of proteins).

    Each batch holds ``batch_size`` proteins padded to the longest; the loss
    is the mean over the batch's real residues (padding is masked out).

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
    from tqdm.auto import tqdm

    _check_model(model)
    tokens = encode_proteins(sequences)
    targets = _labels(labels, tokens, model.n_classes)
    epochs = check_int(epochs, "epochs", minimum=1)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    lr = check_real(lr, "lr", low=0, low_open=True)
    rng = check_rng(seed)
    dev = resolve_device(device)
    model.to(dev)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    losses = []
    n_residues = sum(len(t) for t in tokens)
    for _ in tqdm(range(epochs), desc="fit_protein_cnn", disable=not progress, leave=False):
        order = rng.permutation(len(tokens))
        total = 0.0
        for start in range(0, order.size, batch_size):
            index = order[start:start + batch_size]
            x, mask = _batch(tokens, index, dev)
            y = _pad(targets, index, dev)
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x, mask)[mask], y[mask], reduction="sum")
            (loss / mask.sum()).backward()
            optimizer.step()
            total += float(loss.detach())
        losses.append(total / n_residues)
    model.eval()
    model.to("cpu")
    return losses


def _labels(labels, tokens, n_classes):
    """Validated per-protein label arrays (int64), one label per residue."""
    if isinstance(labels, (str, np.ndarray)) or not hasattr(labels, "__len__") or len(labels) != len(tokens):
        raise ValueError(f"labels must be one array per protein ({len(tokens)} proteins)")
    out = []
    for i, (y, t) in enumerate(zip(labels, tokens)):
        y = np.asarray(y)
        if y.shape != t.shape or not np.issubdtype(y.dtype, np.number) or np.any(y != np.round(y)) \
                or np.any((y < 0) | (y >= n_classes)):
            raise ValueError(f"labels[{i}] must be one integer in 0..{n_classes - 1} per residue "
                             f"({t.size}), got shape {y.shape}")
        out.append(y.astype(np.int64))
    return out


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
    _check_model(model)
    tokens = encode_proteins(sequences)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    dev = resolve_device(device)
    exemplars, logits = [], []
    model.eval()
    model.to(dev)
    try:
        with torch.no_grad():
            for start in range(0, len(tokens), batch_size):
                x, mask = _batch(tokens, range(start, min(start + batch_size, len(tokens))), dev)
                r = model.exemplars(x, mask)
                out = model.output(r.transpose(1, 2)).transpose(1, 2)
                exemplars.append(r[mask].cpu().numpy())
                logits.append(out[mask].double().cpu().numpy())
    finally:
        model.to("cpu")
    if not exemplars:
        return np.zeros((0, model.hidden), np.float32), np.zeros((0, model.n_classes))
    return np.concatenate(exemplars), np.concatenate(logits)
