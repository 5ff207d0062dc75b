"""Tests of the datasets of paper 002 (calibtut.data.regression_study)."""

import os
import re
import urllib.error
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calibtut.data import DataUnavailableError, fetch
from calibtut.data.regression_study import (
    MAX_ROWS,
    STUDY_DATASETS,
    drop_pseudo_categorical,
    load_study_dataset,
    numeric_complete,
    study_subsample,
)

ROOT = Path(__file__).resolve().parents[1]
MIRROR = os.environ.get("CALIBTUT_DATA_MIRROR")
needs_mirror = pytest.mark.skipif(not MIRROR or not Path(MIRROR).is_dir(), reason="no offline data mirror")
OFFLINE = [n for n, d in STUDY_DATASETS.items() if d.status not in ("openml", "optional")]
# Where our copy departs from Table 1's counts, and why.
KNOWN = {"Energy": (768, 8), "Crime": (1993, 102)}  # heating-load variant; the code's missing-value rule


def test_table_counts():
    assert len(STUDY_DATASETS) == 57
    statuses = pd.Series([d.status for d in STUDY_DATASETS.values()]).value_counts().to_dict()
    assert statuses == {"openml": 33, "faithful": 19, "reconstruction": 2, "variant": 2, "optional": 1}
    suites = pd.Series([d.suite for d in STUDY_DATASETS.values()]).value_counts().to_dict()
    assert suites == {"UCI": 12, "297": 19, "299": 8, "269": 18}


def test_citations_are_in_the_bibliography():
    text = (ROOT / "book" / "references.bib").read_text(encoding="utf-8")
    keys = set(re.findall(r"^@\w+\{([^,\s]+),", text, flags=re.MULTILINE))
    cited = {k for d in STUDY_DATASETS.values() for k in d.citation}
    cited |= {"dheur2023largescale", "grinsztajn2022tree", "gijsbers2019open", "dua2019uci"}
    assert cited <= keys, sorted(cited - keys)


@needs_mirror
@pytest.mark.parametrize("name", OFFLINE)
def test_offline_datasets_match_table1(name):
    data = load_study_dataset(name)
    entry = STUDY_DATASETS[name]
    n, d = data.X.shape
    assert data.X.dtype == np.float64 and np.isfinite(data.X).all() and np.isfinite(data.y).all()
    assert data.source == "paper002" and "dheur2023largescale" in data.citation
    if name in KNOWN:
        assert (n, d) == KNOWN[name]
    else:
        assert (int(0.65 * n), d) == (entry.train_rows, entry.n_features)
    assert n <= MAX_ROWS


@needs_mirror
def test_crime_table1_variant_and_naval_turbine_target():
    data = load_study_dataset("Crime", crime="table1")
    assert (int(0.65 * len(data)), data.X.shape[1]) == (531, 104)
    assert {"county", "community"} <= set(data.feature_names)
    raw = np.loadtxt(fetch("uci_dropout/UCI_Datasets/naval-propulsion-plant/data/data.txt"))
    naval = load_study_dataset("Naval")
    np.testing.assert_array_equal(naval.y, raw[:, 17])
    np.testing.assert_array_equal(naval.X, raw[:, :17])
    cpu = load_study_dataset("CPU")
    assert cpu.feature_names[-1] == "PRP" and cpu.y[0] == 199.0  # target ERP, the last column


def test_openml_only_datasets_fail_offline_clearly(monkeypatch):
    import sklearn.datasets

    def refuse(*args, **kwargs):
        raise urllib.error.URLError("network disabled by the test")

    monkeypatch.setattr(sklearn.datasets, "fetch_openml", refuse)
    with pytest.raises(DataUnavailableError, match="'sulfur' exists only on OpenML.*network access"):
        load_study_dataset("sulfur")


def test_openml_download_arguments_pass_sklearn_validation(monkeypatch, tmp_path):
    # the real fetch_openml, with its network call refused: the error must be the network's,
    # not scikit-learn's parameter validation (delay=0.0 was refused and hid every download)
    import sklearn.datasets._openml

    def refuse(*args, **kwargs):
        raise urllib.error.URLError("network disabled by the test")

    monkeypatch.setenv("CALIBTUT_CACHE", str(tmp_path))
    monkeypatch.setattr(sklearn.datasets._openml, "urlopen", refuse)
    with pytest.raises(DataUnavailableError, match="network disabled by the test"):
        load_study_dataset("sulfur")


def test_openml_preprocessing_on_a_served_frame(monkeypatch):
    import sklearn.datasets
    from sklearn.utils import Bunch

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({
        "x": rng.normal(size=200),
        "flag": rng.integers(0, 3, size=200).astype(float),  # pseudo-categorical: dropped
        "colour": pd.Categorical(rng.choice(["r", "g"], size=200)),  # one-hot encoded
        "id": pd.Categorical([f"c{i % 40}" for i in range(200)]),  # > 20 levels: dropped
        "sparse": np.where(rng.random(200) < 0.5, np.nan, 1.0),  # > 20% missing: dropped
    })
    frame.loc[3, "x"] = np.nan  # one incomplete row: dropped
    target = pd.Series(rng.normal(size=200))
    monkeypatch.setattr(sklearn.datasets, "fetch_openml", lambda **kw: Bunch(data=frame, target=target))
    data = load_study_dataset("sulfur")
    assert data.feature_names == ("x", "colour_g", "colour_r")
    assert data.X.shape == (199, 3)
    np.testing.assert_array_equal(data.y, target.drop(index=3).to_numpy())


def test_preprocessing_rules_by_hand():
    frame = pd.DataFrame({"name": list("abcde"), "a": [1.0, np.nan, 3, 4, 5], "b": [np.nan, np.nan, 1, 2, 3],
                          "y": [1.0, 2, 3, 4, 5]})
    X, y = numeric_complete(frame)
    assert X.columns.tolist() == ["a"] and y.tolist() == [1.0, 3, 4, 5]
    with pytest.raises(ValueError, match="target"):
        numeric_complete(frame[["a", "name"]])
    X = pd.DataFrame({"k": np.arange(30) % 9, "m": np.arange(30) % 10})
    assert drop_pseudo_categorical(X).columns.tolist() == ["m"]


def test_subsample_is_the_authors_random_state_draw():
    np.testing.assert_array_equal(study_subsample(500, 2), np.random.RandomState(2003).permutation(500))
    big = study_subsample(80_000, 0)
    assert big.size == MAX_ROWS == int(np.ceil(50_000 / 0.65))
    np.testing.assert_array_equal(big, np.random.RandomState(2001).choice(80_000, MAX_ROWS, replace=False))


def test_errors():
    with pytest.raises(ValueError, match="57 datasets"):
        load_study_dataset("iris")
    with pytest.raises(ValueError, match="crime"):
        load_study_dataset("Crime", crime="paper")
    with pytest.raises(TypeError, match="name"):
        load_study_dataset(3)
