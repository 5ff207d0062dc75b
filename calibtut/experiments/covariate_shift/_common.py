"""Helpers private to the covariate-shift part: the check of a table of runs."""

from __future__ import annotations

import pandas as pd


def check_frame(df, name, columns=(), *, allow_empty=True):
    """Check that ``df`` is a DataFrame with the given columns (and rows, unless ``allow_empty``).

    Examples
    --------
    >>> check_frame(pd.DataFrame({"ece": [1.0]}), "runs", ["ece"]).shape
    (1, 1)
    >>> check_frame(pd.DataFrame({"ece": [1.0]}), "runs", ["ece", "oce"])
    Traceback (most recent call last):
    ...
    ValueError: runs lacks column(s) ['oce']; it has ['ece']
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"{name} must be a pandas DataFrame, got {type(df).__name__}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{name} lacks column(s) {missing}; it has {list(df.columns)}")
    if not allow_empty and len(df) == 0:
        raise ValueError(f"{name} must have at least one row")
    return df
