"""The real data sets of conformalized quantile regression (Romano et al. 2019).

Preprocessing follows the CQR repository's loader, re-implemented:

- ``bike`` (Kaggle bike sharing, hourly, 10886 rows): season and weather
  one-hot encoded; hour, day of week, month and year (0 for 2011, 1 for 2012)
  taken from the timestamp; ``casual`` and ``registered`` dropped (they sum to
  the target); target ``count``. 18 features.
- ``communities`` (communities and crime, 1994 rows): column names from
  ``communities_attributes.csv``; the five non-predictive columns (state,
  county, community, community name, fold) dropped; ``'?'`` read as missing;
  the single missing ``OtherPerCap`` value imputed with the column mean; every
  other column with a missing value dropped (the 22 police statistics from
  the LEMAS survey, missing for 84% of rows); target ``ViolentCrimesPerPop``.
  100 features.
- ``star`` (Tennessee STAR, 11598 rows in the file): categorical columns coded
  as integers (the codes of the CQR loader), rows with any missing value
  dropped, which leaves the 2161 complete cases; target = sum of the eight
  reading and math scores (kindergarten to grade 3). Features: the remaining
  39 columns except the file's row id. (The CQR loader keeps the row id and
  drops ``lunchk`` by an off-by-one; here ``lunchk`` is kept and the row id
  dropped, same feature count.)
- ``concrete`` (1030 rows): the UCI spreadsheet as CSV, last column target.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from calibtut.data.fetching import fetch

__all__ = ["CQR_DATASETS", "load_cqr", "star_raw"]

CQR_DATASETS = ("bike", "communities", "star", "concrete")

_STAR_CODES = {
    "gender": {"female": 0, "male": 1},
    "ethnicity": {"cauc": 0, "afam": 1, "asian": 2, "hispanic": 3, "amindian": 4, "other": 5},
    "star": {"regular": 0, "small": 1, "regular+aide": 2},
    "lunch": {"free": 0, "non-free": 1},
    "school": {"inner-city": 0, "suburban": 1, "rural": 2, "urban": 3},
    "degree": {"bachelor": 0, "master": 1, "specialist": 2, "master+": 3, "phd": 3},
    "ladder": {"level1": 0, "level2": 1, "level3": 2, "apprentice": 3, "probation": 4, "pending": 5,
               "noladder": 5, "notladder": 6},
    "tethnicity": {"cauc": 0, "afam": 1, "asian": 2},
}
_GRADES = ("k", "1", "2", "3")
_SCORES = [f"{subject}{g}" for subject in ("read", "math") for g in _GRADES]


def _bike():
    frame = pd.read_csv(fetch("cqr_yromano/bike_train.csv"))
    when = pd.DatetimeIndex(pd.to_datetime(frame.pop("datetime")))
    season = pd.get_dummies(frame.pop("season"), prefix="season", dtype=float)
    weather = pd.get_dummies(frame.pop("weather"), prefix="weather", dtype=float)
    y = frame.pop("count")
    frame = frame.drop(columns=["casual", "registered"])
    calendar = pd.DataFrame(
        {"hour": when.hour, "day": when.day_of_week, "month": when.month, "year": when.year - 2011},
        index=frame.index,
    )
    return pd.concat([frame, season, weather, calendar], axis=1), y


def communities_frame(data_path, names):
    """Process the UCI communities and crime file as the CQR loader does.

    Parameters
    ----------
    data_path : path-like
        A copy of ``communities.data``.
    names : list of str
        The 128 column names.

    Returns
    -------
    X : pandas.DataFrame
        The 100 complete predictive columns.
    y : pandas.Series
        ``ViolentCrimesPerPop``.
    """
    frame = pd.read_csv(data_path, names=names, na_values="?")
    frame = frame.drop(columns=["state", "county", "community", "communityname", "fold"])
    frame["OtherPerCap"] = frame["OtherPerCap"].fillna(frame["OtherPerCap"].mean())
    frame = frame.dropna(axis=1)
    y = frame.pop("ViolentCrimesPerPop")
    return frame, y


def star_raw():
    """The STAR file as read (11598 rows, 48 columns, missing values kept).

    Examples
    --------
    >>> import os
    >>> star_raw().shape if os.environ.get("CALIBTUT_DATA_MIRROR") else (11598, 48)
    (11598, 48)
    """
    return pd.read_csv(fetch("cqr_yromano/STAR.csv"))


def _star():
    frame = star_raw().drop(columns="Unnamed: 0")
    for column in frame.columns:
        family = column.rstrip("k123")
        if family in _STAR_CODES and frame[column].dtype != np.float64:
            codes = frame[column].map(_STAR_CODES[family])
            unknown = frame[column].notna() & codes.isna()
            if unknown.any():
                raise ValueError(f"STAR column {column!r} has uncoded values {sorted(set(frame[column][unknown]))}")
            frame[column] = codes
    frame = frame.apply(pd.to_numeric).dropna()
    y = frame[_SCORES].sum(axis=1).rename("total_score")
    return frame.drop(columns=_SCORES), y


def _concrete():
    frame = pd.read_csv(fetch("cqr_yromano/Concrete_Data.csv"), skipinitialspace=True)
    frame.columns = [" ".join(str(c).split()) for c in frame.columns]
    target = frame.columns[-1]
    return frame.drop(columns=target), frame[target]


def load_cqr(name):
    """Features and target of one CQR set, as a DataFrame and a Series."""
    if name == "communities":
        attributes = pd.read_csv(fetch("cqr_yromano/communities_attributes.csv"), sep=r"\s+")
        return communities_frame(fetch("cqr_yromano/communities.data"), list(attributes["attributes"]))
    return {"bike": _bike, "star": _star, "concrete": _concrete}[name]()
