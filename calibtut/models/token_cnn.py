"""A per-token 1-D convolutional classifier with a memory layer, on integer token sequences (paper 001).

Schmaltz & Rasooly put a *memory layer* on top of a large pretrained
network: a kernel-width-1 convolution whose output at a token is that
token's exemplar vector ``r``, searched by the KNN approximation of
:mod:`calibtut.selective.knn_approximation`. Offline, the book's stand-ins are small
networks trained from scratch; :class:`TokenCNN` is the one for sequence
labelling (one class per token), on any vocabulary:

``token ids -> embedding -> n_layers x (Conv1d, ReLU) -> width-1 Conv1d, tanh = r -> width-1 Conv1d -> logits``

Sequences are lists of ``int64`` arrays whose entries are vocabulary indices
``1 .. n_tokens - 1``; index 0 is padding. Sequences of different lengths are
padded into one batch and, after every layer, the padded positions are set to
zero, so a sequence's outputs do not depend on what it is batched with (the
convolutions' own zero padding sees exactly what it would see for the
sequence alone).

The Protein task encodes amino acids (:mod:`calibtut.models.protein_cnn`,
a thin layer over this module); the Grammar task encodes words with a
:class:`WordVocabulary` built on the training sentences.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import torch

from calibtut._torch import resolve_device
from calibtut._validation import check_bool, check_int, check_real, check_rng

__all__ = ["PADDING", "UNKNOWN", "TokenCNN", "WordVocabulary", "fit_token_cnn", "token_cnn_outputs"]

#: The index of padding in every vocabulary (never a real token).
PADDING = 0

#: The index a :class:`WordVocabulary` gives to every word it does not keep.
UNKNOWN = 1


class WordVocabulary:
    """Words seen at least ``min_count`` times in training sentences, each one index; the rest one "unknown".

    Index 0 is padding (:data:`PADDING`), index 1 the unknown word
    (:data:`UNKNOWN`), and the kept words follow from index 2, most frequent
    first (ties in alphabetical order), so the vocabulary depends only on the
    word counts. Words are lower-cased first when ``lowercase``.

    For token-level error detection the unknown index carries information: a
    misspelt word is usually rare, so it maps to "unknown".

    Parameters
    ----------
    sentences : sequence of sequence of str
        The training sentences (lists of words).
    min_count : int, default 2
        Smallest count of a kept word (at least 1).
    lowercase : bool, default True
        Lower-case words before counting and encoding.

    Attributes
    ----------
    words : tuple of str
        The kept words; ``words[i]`` has index ``i + 2``.
    n_tokens : int
        Size of the index space: ``len(words) + 2`` (what :class:`TokenCNN` needs).

    Examples
    --------
    >>> vocab = WordVocabulary([["The", "cat"], ["the", "dog"], ["A", "cat"]])
    >>> vocab.words, vocab.n_tokens
    (('cat', 'the'), 4)
    >>> [t.tolist() for t in vocab.encode([["THE", "bird", "cat"]])]
    [[3, 1, 2]]
    """

    def __init__(self, sentences, *, min_count=2, lowercase=True):
        min_count = check_int(min_count, "min_count", minimum=1)
        check_bool(lowercase, "lowercase")
        self.lowercase = lowercase
        counts = Counter(self._normal(w) for s in _words(sentences, "sentences") for w in s)
        kept = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
        self.min_count = min_count
        self.words = tuple(kept)
        self._index = {w: i + 2 for i, w in enumerate(self.words)}
        self.n_tokens = len(self.words) + 2

    def _normal(self, word):
        return word.lower() if self.lowercase else word

    def __len__(self):
        return self.n_tokens

    def __repr__(self):
        return f"WordVocabulary({len(self.words)} words, min_count={self.min_count}, lowercase={self.lowercase})"

    def encode(self, sentences):
        """Sentences as ``int64`` index arrays (kept words 2.., any other word :data:`UNKNOWN`).

        Parameters
        ----------
        sentences : sequence of sequence of str
            Each sentence a non-empty list of words.

        Returns
        -------
        list of numpy.ndarray of int64

        Examples
        --------
        >>> WordVocabulary([["a", "a"]]).encode([["A", "b"]])[0].tolist()
        [2, 1]
        """
        return [np.array([self._index.get(self._normal(w), UNKNOWN) for w in s], dtype=np.int64)
                for s in _words(sentences, "sentences")]


def _words(sentences, name):
    """Validated sentences: a sequence of non-empty sequences of non-empty str."""
    if isinstance(sentences, str) or not hasattr(sentences, "__len__"):
        raise TypeError(f"{name} must be a sequence of sentences (lists of str), got {type(sentences).__name__}")
    for i, s in enumerate(sentences):
        if isinstance(s, str) or not hasattr(s, "__len__") or not len(s) \
                or not all(isinstance(w, str) and w for w in s):
            raise ValueError(f"{name}[{i}] must be a non-empty list of non-empty str (one per word), got {s!r}")
    return sentences


class TokenCNN(torch.nn.Module):
    """Per-token classifier: embedding, 1-D convolutions, a width-1 memory layer ``r``, then logits.

    Parameters
    ----------
    n_tokens : int
        Size of the vocabulary's index space, padding (index 0) included (at least 2).
    n_classes : int
        Number of per-token classes (at least 2).
    embedding : int, default 32
        Width of the token embedding (at least 1).
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
    >>> net = TokenCNN(50, 2, hidden=4, channels=8, width=3, seed=0)
    >>> tokens = torch.randint(1, 50, (2, 7), generator=torch.Generator().manual_seed(0))
    >>> mask = torch.ones(2, 7, dtype=torch.bool)
    >>> net.exemplars(tokens, mask).shape, net(tokens, mask).shape
    (torch.Size([2, 7, 4]), torch.Size([2, 7, 2]))
    """

    def __init__(self, n_tokens, n_classes, *, embedding=32, channels=128, width=11, n_layers=3, hidden=256,
                 seed=0):
        super().__init__()
        self.n_tokens = check_int(n_tokens, "n_tokens", minimum=2)
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
            self.embed = torch.nn.Embedding(self.n_tokens, embedding, padding_idx=PADDING)
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
    """Tokens of the sequences ``index``, padded into a ``(batch, length)`` tensor, and the mask of real tokens."""
    padded = _pad(tokens, index, device)
    return padded.clamp(min=0), padded >= 0


def _check_tokens(tokens, n_tokens, name="tokens"):
    """Validated token sequences: a list of non-empty 1-D ``int64`` arrays with entries in ``1..n_tokens - 1``."""
    if isinstance(tokens, (str, np.ndarray, torch.Tensor)) or not hasattr(tokens, "__len__"):
        raise TypeError(f"{name} must be a sequence of integer arrays (one per sequence), got {type(tokens).__name__}")
    out = []
    for i, t in enumerate(tokens):
        t = np.asarray(t)
        if t.ndim != 1 or not t.size or not np.issubdtype(t.dtype, np.integer) \
                or np.any((t < 1) | (t >= n_tokens)):
            raise ValueError(f"{name}[{i}] must be a non-empty 1-D integer array with entries in 1..{n_tokens - 1} "
                             f"(0 is padding), got {t!r}")
        out.append(t.astype(np.int64))
    return out


def _check_labels(labels, tokens, n_classes, sequence="sequence", token="token"):
    """Validated per-sequence label arrays (int64), one label in ``0..n_classes - 1`` per token.

    ``sequence`` and ``token`` name the units in the messages (a protein's residues).
    """
    if isinstance(labels, (str, np.ndarray)) or not hasattr(labels, "__len__") or len(labels) != len(tokens):
        raise ValueError(f"labels must be one array per {sequence} ({len(tokens)} {sequence}s)")
    out = []
    for i, (y, t) in enumerate(zip(labels, tokens)):
        y = np.asarray(y)
        if y.shape != t.shape or not np.issubdtype(y.dtype, np.number) or np.any(y != np.round(y)) \
                or np.any((y < 0) | (y >= n_classes)):
            raise ValueError(f"labels[{i}] must be one integer in 0..{n_classes - 1} per {token} "
                             f"({t.size}), got shape {y.shape}")
        out.append(y.astype(np.int64))
    return out


def _check_model(model, kind=None):
    kind = kind or TokenCNN
    if not isinstance(model, kind):
        raise TypeError(f"model must be a {kind.__name__}, got {type(model).__name__}")


def _class_weight(class_weight, n_classes):
    if class_weight is None:
        return None
    if isinstance(class_weight, str) or not hasattr(class_weight, "__len__"):
        raise TypeError(f"class_weight must be a sequence of float, one per class, got {class_weight!r}")
    values = [check_real(w, "class_weight", low=0, low_open=True) for w in class_weight]
    if len(values) != n_classes:
        raise ValueError(f"class_weight must hold one weight per class ({n_classes}), got {list(class_weight)}")
    return torch.tensor(values, dtype=torch.float32)


def fit_token_cnn(model, tokens, labels, *, epochs=6, batch_size=16, lr=1e-3, class_weight=None, seed=0,
                  device="cpu", progress=False):
    """Train a :class:`TokenCNN` by per-token cross-entropy (Adam, shuffled batches of sequences).

    Each batch holds ``batch_size`` sequences padded to the longest; the loss
    is the mean over the batch's real tokens (padding is masked out), or,
    with ``class_weight``, the weighted mean ``sum w[y] loss / sum w[y]``.

    Parameters
    ----------
    model : TokenCNN
        Trained in place on ``device``; its weights are back on the CPU at the end.
    tokens : sequence of array_like of int
        Per sequence, its token indices in ``1..model.n_tokens - 1``.
    labels : sequence of array_like of int
        Per sequence, one class in ``0..n_classes - 1`` per token.
    epochs : int, default 6
        Passes over the sequences (at least 1).
    batch_size : int, default 16
        Sequences per batch (at least 1).
    lr : float, default 1e-3
        Adam learning rate (positive).
    class_weight : sequence of float, optional
        A positive weight per class in the loss (default: plain cross-entropy).
    seed : int, numpy.random.Generator or None, default 0
        Seeds the batch order.
    device : {"cpu", "cuda"}, default "cpu"
    progress : bool, default False
        Show a progress bar over epochs.

    Returns
    -------
    list of float
        Mean (weighted) per-token training loss of each epoch.

    Examples
    --------
    >>> import numpy as np
    >>> tokens = [np.array([1, 2, 3, 1, 2, 3]), np.array([3, 3, 1])]
    >>> labels = [t % 2 for t in tokens]
    >>> net = TokenCNN(4, 2, hidden=8, channels=8, width=3, seed=0)
    >>> losses = fit_token_cnn(net, tokens, labels, epochs=30, batch_size=2, lr=1e-2)
    >>> losses[-1] < losses[0]
    True
    """
    _check_model(model)
    tokens = _check_tokens(tokens, model.n_tokens)
    targets = _check_labels(labels, tokens, model.n_classes)
    return _fit(model, tokens, targets, epochs=epochs, batch_size=batch_size, lr=lr, class_weight=class_weight,
                seed=seed, device=device, progress=progress, desc="fit_token_cnn")


def _fit(model, tokens, targets, *, epochs, batch_size, lr, class_weight, seed, device, progress, desc):
    """The training loop of :func:`fit_token_cnn` on validated tokens and targets."""
    from tqdm.auto import tqdm

    epochs = check_int(epochs, "epochs", minimum=1)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    lr = check_real(lr, "lr", low=0, low_open=True)
    weight = _class_weight(class_weight, model.n_classes)
    rng = check_rng(seed)
    dev = resolve_device(device)
    model.to(dev)
    if weight is not None:
        weight = weight.to(dev)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    losses = []
    total_weight = sum(len(t) for t in tokens) if weight is None else \
        float(sum(weight.cpu().numpy()[y].sum() for y in targets))
    for _ in tqdm(range(epochs), desc=desc, disable=not progress, leave=False):
        order = rng.permutation(len(tokens))
        total = 0.0
        for start in range(0, order.size, batch_size):
            index = order[start:start + batch_size]
            x, mask = _batch(tokens, index, dev)
            y = _pad(targets, index, dev)[mask]
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x, mask)[mask], y, weight=weight, reduction="sum")
            (loss / (mask.sum() if weight is None else weight[y].sum())).backward()
            optimizer.step()
            total += float(loss.detach())
        losses.append(total / total_weight)
    model.eval()
    model.to("cpu")
    return losses


def token_cnn_outputs(model, tokens, *, batch_size=32, device="cpu"):
    """Per-token exemplar vectors and logits of a :class:`TokenCNN`, sequences concatenated in order.

    Parameters
    ----------
    model : TokenCNN
    tokens : sequence of array_like of int
        Per sequence, its token indices in ``1..model.n_tokens - 1``.
    batch_size : int, default 32
        Sequences evaluated at once (at least 1); the outputs do not depend on it.
    device : {"cpu", "cuda"}, default "cpu"

    Returns
    -------
    exemplars : numpy.ndarray of float32, shape (n_tokens_total, hidden)
    logits : numpy.ndarray of float64, shape (n_tokens_total, n_classes)

    Examples
    --------
    >>> import numpy as np
    >>> net = TokenCNN(10, 2, hidden=4, channels=8, width=3)
    >>> r, logits = token_cnn_outputs(net, [np.array([1, 5, 9]), np.array([2, 2])])
    >>> r.shape, logits.shape, r.dtype.name
    ((5, 4), (5, 2), 'float32')
    """
    _check_model(model)
    return _outputs(model, _check_tokens(tokens, model.n_tokens), batch_size=batch_size, device=device)


def _outputs(model, tokens, *, batch_size, device):
    """:func:`token_cnn_outputs` on validated tokens."""
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
