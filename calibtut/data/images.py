"""Image datasets: the MNIST test set (10,000 digits) from the registry.

The full MNIST training images are not available offline; the 10,000 test
images are, and the book splits them itself where it needs a training set.
"""

from __future__ import annotations

import gzip

import numpy as np

from calibtut.data.fetching import fetch

__all__ = ["load_mnist_test"]

_IMAGES = "mnist_test/t10k-images-idx3-ubyte.gz"
_LABELS = "mnist_test/t10k-labels-idx1-ubyte.gz"


def _read_idx(path, magic, header_bytes):
    """Read an idx file (big-endian header, then unsigned bytes)."""
    with gzip.open(path, "rb") as fh:
        raw = fh.read()
    found = int.from_bytes(raw[:4], "big")
    if found != magic:
        raise ValueError(f"{path} is not an idx file with magic number {magic} (found {found})")
    return np.frombuffer(raw, dtype=np.uint8, offset=header_bytes)


def load_mnist_test(*, flatten=True):
    """Load the MNIST test set (LeCun et al. 1998).

    Parameters
    ----------
    flatten : bool, default True
        Return images as rows of 784 pixels; otherwise as ``(n, 28, 28)``.

    Returns
    -------
    X : numpy.ndarray
        float64 pixel intensities in [0, 1], shape ``(10000, 784)`` or
        ``(10000, 28, 28)``.
    y : numpy.ndarray
        int64 digit labels 0-9, shape ``(10000,)``.

    Examples
    --------
    >>> X, y = load_mnist_test()  # doctest: +SKIP
    >>> X.shape, y[:3].tolist()  # doctest: +SKIP
    ((10000, 784), [7, 2, 1])
    """
    pixels = _read_idx(fetch(_IMAGES), 2051, 16)
    labels = _read_idx(fetch(_LABELS), 2049, 8).astype(np.int64)
    X = pixels.reshape(-1, 28 * 28 if flatten else 28, *(() if flatten else (28,))) / 255.0
    if len(X) != len(labels):
        raise ValueError(f"MNIST images ({len(X)}) and labels ({len(labels)}) differ in number")
    return X, labels
