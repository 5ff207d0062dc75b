"""OpenML regression sets as distributed in microsoft/reliableAI (pureGAM real data).

Each CSV has a header row; the target is the last column: rings (abalone),
``goal`` (ailerons), ``MedHouseVal`` (California housing, already
standardised, like its inputs, by that source), ``Goal`` (elevators),
``out`` = scaled sound pressure in dB (airfoil) and ``MAL`` = daily mean wind
speed at Malin Head (wind, the other stations and the date are inputs).
The one categorical input, abalone's ``Sex`` (M/F/I), is one-hot encoded.
"""

from __future__ import annotations

import pandas as pd

from calibtut.data.fetching import fetch

__all__ = ["OPENML_FILES", "load_openml"]

OPENML_FILES = {
    "abalone": "abalone.csv",
    "ailerons": "ailerons.csv",
    "airfoil": "airfoil.csv",
    "cal-housing": "cal_house_processed.csv",
    "elevators": "elevators.csv",
    "wind": "wind.csv",
}


def load_openml(name):
    """Features and target of one set, as a DataFrame and a Series."""
    path = fetch(f"openml_misc_msreliableai/{OPENML_FILES[name]}")
    frame = pd.read_csv(path, skipinitialspace=True, encoding="utf-8-sig")
    target = frame.columns[-1]
    X = frame.drop(columns=target)
    if name == "abalone":
        sex = pd.get_dummies(X.pop("Sex"), prefix="Sex", dtype=float)
        X = pd.concat([sex, X], axis=1)
    return X, frame[target].rename(str(target))
