"""UCI regression benchmarks: the dropout-paper splits, Wilson's sets, YearPredictionMSD.

``uci_dropout`` is the benchmark of Hernández-Lobato and Adams (2015) as
distributed with Gal and Ghahramani's dropout experiments: raw (unscaled)
values, one target column, and 20 fixed 90/10 train/test splits (5 for
protein). ``uci_wilson`` holds 31 UCI sets whose inputs and target were
already standardised by that source, with 10 fixed test masks each.
"""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pandas as pd

from calibtut._validation import check_int
from calibtut.data.fetching import fetch

__all__ = ["UCI_DROPOUT", "UCI_WILSON", "uci_n_splits", "uci_split"]

#: The UCI benchmark sets with fixed splits: name -> (mirror folder, feature names, target name).
UCI_DROPOUT = {
    "boston": (
        "bostonHousing",
        ("CRIM", "ZN", "INDUS", "CHAS", "NOX", "RM", "AGE", "DIS", "RAD", "TAX", "PTRATIO", "B", "LSTAT"),
        "MEDV",
    ),
    "concrete": (
        "concrete",
        ("cement", "slag", "fly_ash", "water", "superplasticizer", "coarse_aggregate", "fine_aggregate", "age"),
        "compressive_strength",
    ),
    "energy": (
        "energy",
        ("relative_compactness", "surface_area", "wall_area", "roof_area", "overall_height", "orientation",
         "glazing_area", "glazing_area_distribution"),
        "heating_load",
    ),
    "kin8nm": ("kin8nm", tuple(f"theta{i}" for i in range(1, 9)), "y"),
    "naval": (
        "naval-propulsion-plant",
        ("lever_position", "ship_speed", "GTT", "GTn", "GGn", "Ts", "Tp", "T48", "T1", "T2", "P48", "P1",
         "P2", "Pexh", "TIC", "mf"),
        "compressor_decay",
    ),
    "power": ("power-plant", ("AT", "V", "AP", "RH"), "PE"),
    "protein": ("protein-tertiary-structure", tuple(f"F{i}" for i in range(1, 10)), "RMSD"),
    "wine-red": (
        "wine-quality-red",
        ("fixed_acidity", "volatile_acidity", "citric_acid", "residual_sugar", "chlorides",
         "free_sulfur_dioxide", "total_sulfur_dioxide", "density", "pH", "sulphates", "alcohol"),
        "quality",
    ),
    "yacht": (
        "yacht",
        ("buoyancy_position", "prismatic_coefficient", "length_displacement", "beam_draught",
         "length_beam", "froude_number"),
        "residuary_resistance",
    ),
}

#: The 31 UCI sets of the uci_wilson collection (standardised by their source).
UCI_WILSON = (
    "airfoil", "autompg", "autos", "bike", "breastcancer", "challenger", "concrete", "concreteslump",
    "elevators", "energy", "fertility", "forest", "gas", "housing", "keggdirected", "keggundirected",
    "kin40k", "machine", "parkinsons", "pendulum", "pol", "protein", "pumadyn32nm", "servo", "skillcraft",
    "sml", "solar", "stock", "tamielectric", "wine", "yacht",
)

_N_SPLITS = {"uci_dropout": 20, "uci_wilson": 10}


def _dropout_file(name, filename):
    return fetch(f"uci_dropout/UCI_Datasets/{UCI_DROPOUT[name][0]}/data/{filename}")


def _read_ints(path):
    return np.array(path.read_text().split(), dtype=np.int64)


def load_uci_dropout(name):
    """Features and target of one ``uci_dropout`` set as a DataFrame and a Series."""
    _, features, target = UCI_DROPOUT[name]
    data = pd.read_csv(_dropout_file(name, "data.txt"), sep=r"\s+", header=None).to_numpy(np.float64)
    feature_idx = _read_ints(_dropout_file(name, "index_features.txt"))
    target_idx = int(_read_ints(_dropout_file(name, "index_target.txt"))[0])
    X = pd.DataFrame(data[:, feature_idx], columns=list(features))
    return X, pd.Series(data[:, target_idx], name=target)


def load_uci_wilson(name):
    """Features and target of one ``uci_wilson`` set (last column is the target)."""
    data = pd.read_csv(fetch(f"uci_wilson/uci_datasets/{name}/data.csv.gz"), header=None).to_numpy(np.float64)
    X = pd.DataFrame(data[:, :-1], columns=[f"x{j}" for j in range(data.shape[1] - 1)])
    return X, pd.Series(data[:, -1], name="y")


def load_year_msd(name):
    """YearPredictionMSD: release year from 90 timbre features (download only).

    Not available offline: the file is not in the data mirror and is fetched
    from the UCI archive on first use.
    """
    with zipfile.ZipFile(fetch("year_msd/YearPredictionMSD.txt.zip")) as archive:
        raw = archive.read("YearPredictionMSD.txt")
    data = pd.read_csv(io.BytesIO(raw), header=None).to_numpy(np.float64)
    names = [f"timbre_mean{i}" for i in range(1, 13)] + [f"timbre_cov{i}" for i in range(1, 79)]
    return pd.DataFrame(data[:, 1:], columns=names), pd.Series(data[:, 0], name="year")


def _check_source(source):
    if source not in _N_SPLITS:
        raise ValueError(f"source must be one of {sorted(_N_SPLITS)}, got {source!r}")


def _check_name(name, source):
    names = sorted(UCI_DROPOUT) if source == "uci_dropout" else list(UCI_WILSON)
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    if name not in names:
        raise ValueError(f"name must be one of {names} for source {source!r}, got {name!r}")


def uci_n_splits(name, source="uci_dropout"):
    """Number of fixed train/test splits of a UCI benchmark set.

    Parameters
    ----------
    name : str
        Dataset name, e.g. ``"boston"`` (see :data:`UCI_DROPOUT`, :data:`UCI_WILSON`).
    source : {"uci_dropout", "uci_wilson"}
        Which benchmark's splits.

    Returns
    -------
    int
        20 for every ``uci_dropout`` set except protein (5); 10 for ``uci_wilson``.

    Examples
    --------
    >>> uci_n_splits("protein"), uci_n_splits("yacht"), uci_n_splits("pol", "uci_wilson")
    (5, 20, 10)
    """
    _check_source(source)
    _check_name(name, source)
    if source == "uci_dropout" and name == "protein":
        return 5
    return _N_SPLITS[source]


def uci_split(name, split, source="uci_dropout"):
    """One of the fixed train/test splits of a UCI benchmark set.

    For ``uci_dropout`` the indices are read from ``index_train_<split>.txt``
    and ``index_test_<split>.txt``; for ``uci_wilson`` the test rows are those
    flagged in column ``split`` of ``test_mask.csv.gz``. Indices refer to rows
    of ``load_regression(name, source=source).X``.

    Parameters
    ----------
    name : str
        Dataset name.
    split : int
        Split number in ``0 .. uci_n_splits(name, source) - 1``.
    source : {"uci_dropout", "uci_wilson"}
        Which benchmark's splits.

    Returns
    -------
    train_idx, test_idx : numpy.ndarray of int64
        Sorted, disjoint and together covering every row.

    Examples
    --------
    >>> import os
    >>> if os.environ.get("CALIBTUT_DATA_MIRROR"):
    ...     train, test = uci_split("yacht", 0)
    ...     assert (len(train), len(test)) == (277, 31)
    """
    _check_source(source)
    _check_name(name, source)
    split = check_int(split, "split", minimum=0)
    n_splits = uci_n_splits(name, source)
    if split >= n_splits:
        raise ValueError(f"split must be < {n_splits} for {source}/{name}, got {split}")
    if source == "uci_dropout":
        train = _read_ints(_dropout_file(name, f"index_train_{split}.txt"))
        test = _read_ints(_dropout_file(name, f"index_test_{split}.txt"))
        return np.sort(train), np.sort(test)
    masks = pd.read_csv(fetch(f"uci_wilson/uci_datasets/{name}/test_mask.csv.gz"), header=None)
    mask = masks.iloc[:, split].to_numpy().astype(bool)
    return np.flatnonzero(~mask), np.flatnonzero(mask)
