"""Paper 001's memory layer over token states: document logits and an exemplar vector per text.

Schmaltz & Rasooly's Sentiment network (their Appendix H) puts a
convolution of kernel width 1 with many filters (1000) over the token states
of a transformer; the filters' outputs at the word pieces are the memory
layer. A document gets

* its **exemplar vector** ``r = [max-pooled filter vector ; filter vector of
  the max-scoring word piece]`` (2,000-d for 1,000 filters), which the KNN
  approximation of :mod:`calibtut.selective.knn_approximation` searches;
* **multi-label logits** from two linear layers: a *global* one on the
  max-pooled filter vector and a *local* one applied to every word piece's
  filter vector (the "convolutional decomposition" of Schmaltz 2021, which
  scores each word for each class). A class's document logit is its global
  score plus its largest local score; the prediction is the largest logit.

:class:`ExemplarCNN` holds the layer and, optionally, the transformer under
it (``finetune=True`` trains both jointly); :func:`fit_exemplar_cnn` trains
it with :func:`minmax_global_loss` and :func:`exemplar_outputs` gives every
text's exemplar vector and logits. The inputs are
:class:`~calibtut.models.sentence_embeddings.TokenStates` (frozen encoder,
states cached once) or
:class:`~calibtut.models.sentence_embeddings.TokenizedTexts` (the encoder
runs inside the model). Written by hand: no library offers this layer or
its loss.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from calibtut._torch import resolve_device
from calibtut._validation import check_bool, check_int, check_labels, check_real, check_rng
from calibtut.models.sentence_embeddings import TokenizedTexts, TokenStates

__all__ = ["ExemplarCNN", "ExemplarOutput", "exemplar_outputs", "fit_exemplar_cnn", "minmax_global_loss"]


class ExemplarOutput(NamedTuple):
    """What :class:`ExemplarCNN` returns for a batch of texts."""

    #: Document logits ``(b, n_classes)``: global score plus the largest local score of each class.
    logits: torch.Tensor
    #: Local (per word piece) scores ``(b, L, n_classes)``; padding rows are meaningless.
    token_scores: torch.Tensor
    #: Exemplar vectors ``(b, 2 * filters)``.
    exemplars: torch.Tensor
    #: True at the word pieces that count, ``(b, L)``.
    mask: torch.Tensor


def _masked_max(x, mask):
    """Largest entry over the tokens (dim 1) where ``mask``, and its position; ``x`` is ``(b, L, k)``."""
    return x.masked_fill(~mask.unsqueeze(-1), -torch.inf).max(dim=1)


class ExemplarCNN(torch.nn.Module):
    """The memory layer of paper 001 (App. H): width-1 filters over token states, exemplar vectors, logits.

    Parameters
    ----------
    n_inputs : int
        Width of a token state (384 for MiniLM; at least 1).
    n_classes : int, default 2
        Number of classes (at least 2).
    filters : int, default 1000
        Filters of the width-1 convolution (the paper: 1000); the exemplar
        vectors have ``2 * filters`` entries.
    encoder : torch.nn.Module, optional
        A transformer (``transformers.AutoModel``) whose
        ``last_hidden_state`` gives the token states; then the inputs are
        word-piece ids (:class:`~calibtut.models.sentence_embeddings.TokenizedTexts`),
        else token states (:class:`~calibtut.models.sentence_embeddings.TokenStates`).
    finetune : bool, default False
        Train the encoder with the memory layer (needs ``encoder``); else the encoder is frozen.
    seed : int, default 0
        Seed of the memory layer's initial weights (non-negative).

    Examples
    --------
    >>> import torch
    >>> net = ExemplarCNN(4, 2, filters=3)
    >>> out = net({"states": torch.randn(2, 5, 4), "mask": torch.ones(2, 5, dtype=torch.bool)})
    >>> out.logits.shape, out.token_scores.shape, out.exemplars.shape
    (torch.Size([2, 2]), torch.Size([2, 5, 2]), torch.Size([2, 6]))
    """

    def __init__(self, n_inputs, n_classes=2, *, filters=1000, encoder=None, finetune=False, seed=0):
        super().__init__()
        n_inputs = check_int(n_inputs, "n_inputs", minimum=1)
        self.n_classes = check_int(n_classes, "n_classes", minimum=2)
        self.filters = check_int(filters, "filters", minimum=1)
        seed = check_int(seed, "seed", minimum=0)
        check_bool(finetune, "finetune")
        if encoder is not None and not isinstance(encoder, torch.nn.Module):
            raise TypeError(f"encoder must be a torch.nn.Module or None, got {type(encoder).__name__}")
        if finetune and encoder is None:
            raise ValueError("finetune=True needs an encoder")
        self.finetune = finetune
        self.encoder = encoder
        if encoder is not None:
            encoder.requires_grad_(finetune)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.memory = torch.nn.Conv1d(n_inputs, self.filters, kernel_size=1)
            self.global_scores = torch.nn.Linear(self.filters, self.n_classes)
            self.local_scores = torch.nn.Linear(self.filters, self.n_classes)

    def train(self, mode=True):
        """Training mode for the memory layer, and for the encoder only when it is fine-tuned."""
        super().train(mode)
        if self.encoder is not None and not self.finetune:
            self.encoder.eval()
        return self

    def memory_parameters(self):
        """The parameters of the memory layer and the two linear layers (not the encoder's)."""
        return [p for name, p in self.named_parameters() if not name.startswith("encoder.")]

    def forward(self, batch):
        """An :class:`ExemplarOutput` for a batch: ``{"states", "mask"}`` or ``{"input_ids", "attention_mask", "mask"}``."""
        mask = batch["mask"]
        if self.encoder is None:
            states = batch["states"]
        else:
            ids = batch["input_ids"]
            with torch.set_grad_enabled(self.finetune and torch.is_grad_enabled()), _autocast(ids.device):
                states = self.encoder(input_ids=ids,
                                      attention_mask=batch["attention_mask"]).last_hidden_state
        states = states.to(self.memory.weight.dtype)
        h = self.memory(states.transpose(1, 2)).transpose(1, 2)  # (b, L, filters)
        pooled, _ = _masked_max(h, mask)
        token_scores = self.local_scores(h)
        best_local, best_token = _masked_max(token_scores, mask)
        logits = self.global_scores(pooled) + best_local
        rows = torch.arange(len(h), device=h.device)
        representative = best_token[rows, logits.argmax(dim=1)]
        exemplars = torch.cat([pooled, h[rows, representative]], dim=1)
        return ExemplarOutput(logits, token_scores, exemplars, mask)


def _tensor_kind(x):
    """``"bool"``, ``"float"``, ``"complex"`` or ``"int"``: the kind of a tensor's dtype."""
    if x.dtype == torch.bool:
        return "bool"
    return "float" if x.is_floating_point() else "complex" if x.is_complex() else "int"


def _check_tensor(x, name, kind, ndim):
    """Refuse anything but a tensor of ``ndim`` dimensions whose dtype is of ``kind``."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if _tensor_kind(x) != kind:
        raise TypeError(f"{name} must be a tensor of {kind} dtype, got {x.dtype}")
    if x.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {tuple(x.shape)}")


def _check_loss_inputs(logits, token_scores, mask, y):
    """Types and shapes of :func:`minmax_global_loss`'s inputs, and ``y`` inside ``0..n_classes - 1``."""
    _check_tensor(logits, "logits", "float", 2)
    _check_tensor(token_scores, "token_scores", "float", 3)
    _check_tensor(mask, "mask", "bool", 2)
    _check_tensor(y, "y", "int", 1)
    b, k = logits.shape
    shapes = (tuple(token_scores.shape), tuple(mask.shape), tuple(y.shape))
    if shapes != ((b, shapes[0][1], k), shapes[0][:2], (b,)):
        raise ValueError(f"token_scores, mask and y must have shapes (b, L, k), (b, L) and (b,) for logits of "
                         f"shape (b, k) = {(b, k)}, got {shapes[0]}, {shapes[1]} and {shapes[2]}")
    outside = (y < 0) | (y >= k)
    if bool(outside.any()):
        raise ValueError(f"y must be classes in 0..{k - 1}, got {int(y[outside][0])}")


def minmax_global_loss(logits, token_scores, mask, y):
    """Paper 001's App. H loss: global normalisation of the document logits plus min-max on the word scores.

    For a batch of documents with labels ``y``:

    * **global normalisation**: cross-entropy of the softmax over the
      document logits (one exclusive prediction per document);
    * **min-max** (Schmaltz & Beam 2020, after Schmaltz 2021's binary form),
      for every class ``c`` as a binary label ``t_c = [y = c]``: the logistic
      loss of the largest word score of ``c`` against ``t_c`` (a document of
      class ``c`` must contain a word that scores for ``c``; one of another
      class must not) plus that of the smallest word score against 0 (every
      document has words that are neutral for ``c``), averaged over classes.

    The loss is the sum of the two, averaged over the documents. Where the
    paper does not pin the form down (paper 001 only names the loss) we
    chose: the min-max terms act on the local scores,
    the global term on the combined document logits, with equal weights.

    Parameters
    ----------
    logits : torch.Tensor, shape (b, n_classes)
        Document logits (:attr:`ExemplarOutput.logits`).
    token_scores : torch.Tensor, shape (b, L, n_classes)
        Per word-piece scores.
    mask : torch.Tensor of bool, shape (b, L)
        True at the word pieces that count (at least one per document).
    y : torch.Tensor of int, shape (b,)
        Classes in ``0..n_classes - 1``.

    Returns
    -------
    torch.Tensor
        A scalar.

    Examples
    --------
    >>> import torch
    >>> scores = torch.tensor([[[4.0, -4.0], [-4.0, -4.0]]])
    >>> mask = torch.ones(1, 2, dtype=torch.bool)
    >>> good = minmax_global_loss(torch.tensor([[4.0, -4.0]]), scores, mask, torch.tensor([0]))
    >>> bad = minmax_global_loss(torch.tensor([[4.0, -4.0]]), scores, mask, torch.tensor([1]))
    >>> bool(good < bad)
    True
    """
    _check_loss_inputs(logits, token_scores, mask, y)
    target = torch.nn.functional.one_hot(y, logits.shape[1]).to(logits.dtype)
    keep = mask.unsqueeze(-1)
    largest = token_scores.masked_fill(~keep, -torch.inf).amax(dim=1)
    smallest = token_scores.masked_fill(~keep, torch.inf).amin(dim=1)
    bce = torch.nn.functional.binary_cross_entropy_with_logits
    minmax = bce(largest, target, reduction="none").mean(dim=1) + bce(smallest, torch.zeros_like(target),
                                                                       reduction="none").mean(dim=1)
    return torch.nn.functional.cross_entropy(logits, y) + minmax.mean()


def _check_data(model, data, name="data"):
    wanted = TokenStates if model.encoder is None else TokenizedTexts
    if not isinstance(data, wanted):
        raise TypeError(f"{name} must be {wanted.__name__} for this model "
                        f"({'no' if model.encoder is None else 'an'} encoder), got {type(data).__name__}")


def _autocast(device):
    return torch.autocast("cuda", dtype=torch.bfloat16, enabled=device.type == "cuda")


def fit_exemplar_cnn(model, data, labels, *, epochs=10, batch_size=32, lr=1.0, encoder_lr=2e-5, seed=0,
                     device="cpu", progress=None):
    """Train an :class:`ExemplarCNN` with :func:`minmax_global_loss`, in shuffled mini-batches.

    The memory layer and its linear layers use Adadelta with learning rate
    ``lr`` (the optimiser and rate of paper 001's memory layers, App. F; App. H
    does not name Sentiment's); with ``finetune=True`` the encoder is trained
    at the same steps by AdamW at ``encoder_lr`` (BERT's usual fine-tuning
    rate; the paper's BertAdam is Adam with decoupled weight decay). On CUDA the
    encoder runs under bfloat16 autocast; the memory layer stays in float32.

    Parameters
    ----------
    model : ExemplarCNN
        Trained in place (and moved to ``device``).
    data : TokenStates or TokenizedTexts
        The training texts (``TokenizedTexts`` when the model has an encoder).
    labels : array_like of int, shape (n,)
        Classes in ``0..n_classes - 1``.
    epochs : int, default 10
        Passes over the data (at least 1).
    batch_size : int, default 32
        Texts per step (at least 1).
    lr : float, default 1.0
        Adadelta's learning rate for the memory layer (positive).
    encoder_lr : float, default 2e-5
        AdamW's learning rate for the encoder when fine-tuning (positive).
    seed : int, numpy.random.Generator or None, default 0
        Seeds the batch order.
    device : {"cpu", "cuda"}, default "cpu"
    progress : callable, optional
        Called as ``progress(epoch, mean_loss)`` after each epoch.

    Returns
    -------
    list of float
        Mean training loss of each epoch.

    Examples
    --------
    >>> import numpy as np
    >>> from calibtut.models.sentence_embeddings import TokenStates
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(400, 3)).astype(np.float16)
    >>> data = TokenStates([x], [[0, 4 * i, 4] for i in range(100)])
    >>> y = (x[::4, 0] > 0).astype(int)
    >>> losses = fit_exemplar_cnn(ExemplarCNN(3, 2, filters=8), data, y, epochs=5)
    >>> losses[-1] < losses[0]
    True
    """
    if not isinstance(model, ExemplarCNN):
        raise TypeError(f"model must be an ExemplarCNN, got {type(model).__name__}")
    _check_data(model, data)
    labels = check_labels(labels, "labels", n_classes=model.n_classes, n=len(data))
    epochs = check_int(epochs, "epochs", minimum=1)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    lr = check_real(lr, "lr", low=0, low_open=True)
    encoder_lr = check_real(encoder_lr, "encoder_lr", low=0, low_open=True)
    rng = check_rng(seed)
    device = resolve_device(device)
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be callable or None, got {type(progress).__name__}")
    model.to(device)
    optimizers = [torch.optim.Adadelta(model.memory_parameters(), lr=lr)]
    if model.finetune:
        optimizers.append(torch.optim.AdamW(model.encoder.parameters(), lr=encoder_lr))
    target = torch.as_tensor(labels, device=device)
    model.train()
    losses = []
    for epoch in range(epochs):
        order = rng.permutation(len(data))
        total = 0.0
        for start in range(0, order.size, batch_size):
            rows = order[start:start + batch_size]
            for optimizer in optimizers:
                optimizer.zero_grad()
            out = model(data.batch(rows, device=device))
            loss = minmax_global_loss(out.logits, out.token_scores, out.mask, target[rows])
            loss.backward()
            for optimizer in optimizers:
                optimizer.step()
            total += float(loss.detach()) * rows.size
        losses.append(total / order.size)
        if progress is not None:
            progress(epoch, losses[-1])
    model.eval()
    return losses


def exemplar_outputs(model, data, *, batch_size=128, device="cpu"):
    """Exemplar vectors and document logits of an :class:`ExemplarCNN` for every text of ``data``.

    Texts are evaluated in batches of similar length (less padding); the
    rows come back in the order of ``data``.

    Parameters
    ----------
    model : ExemplarCNN
    data : TokenStates or TokenizedTexts
    batch_size : int, default 128
        Texts evaluated at once (at least 1).
    device : {"cpu", "cuda"}, default "cpu"

    Returns
    -------
    exemplars : numpy.ndarray of float32, shape (n, 2 * filters)
    logits : numpy.ndarray of float64, shape (n, n_classes)

    Examples
    --------
    >>> import numpy as np
    >>> from calibtut.models.sentence_embeddings import TokenStates
    >>> data = TokenStates([np.ones((5, 3), np.float16)], [[0, 0, 2], [0, 2, 3]])
    >>> r, logits = exemplar_outputs(ExemplarCNN(3, 2, filters=4), data)
    >>> r.shape, logits.shape, r.dtype.name
    ((2, 8), (2, 2), 'float32')
    """
    if not isinstance(model, ExemplarCNN):
        raise TypeError(f"model must be an ExemplarCNN, got {type(model).__name__}")
    _check_data(model, data)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    device = resolve_device(device)
    model.to(device).eval()
    order = np.argsort(data.lengths, kind="stable")
    exemplars = np.zeros((len(data), 2 * model.filters), np.float32)
    logits = np.zeros((len(data), model.n_classes))
    with torch.no_grad():
        for start in range(0, order.size, batch_size):
            rows = order[start:start + batch_size]
            out = model(data.batch(rows, device=device))
            exemplars[rows] = out.exemplars.cpu().numpy()
            logits[rows] = out.logits.double().cpu().numpy()
    return exemplars, logits
