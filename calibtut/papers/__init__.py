"""The numbers the papers print, as data: one tidy CSV file per table, with a sidecar.

Every number a chapter compares with lives in
``calibtut/papers/<part>/<table>.csv`` (``<part>`` is the book part, the same
name as in ``notebooks/<part>/`` and ``results/<part>/``), never in a notebook.
Beside it, ``<table>.json`` says where the numbers come from and what they
mean:

``paper``
    title, authors, venue, the ``{cite}`` key and the copy the numbers were
    typed from;
``table``, ``page``, ``caption``
    the table's name and page in that copy, and what it shows (in our words);
``columns``
    every column in file order with its ``type`` (``"str"`` or ``"float"``),
    for text columns the allowed ``values``, and its ``meaning``;
``key``
    the columns that identify a row (no two rows share them);
``units``
    the unit of each metric;
``missing``
    every blank cell, as ``{"where": {column: value, ...}, "column": ...,
    "why": ...}``: not printed, or unreadable in our copy, and why;
``notes``
    anything else a reader of the numbers should know (a suspected misprint).

:func:`paper_table` reads a table, :func:`paper_source` its sidecar and
:func:`paper_tables` lists them. ``tests/test_papers.py`` checks every file
against its sidecar.
"""

from __future__ import annotations

import json
from importlib import resources

import pandas as pd

__all__ = ["paper_source", "paper_table", "paper_tables"]

_ROOT = resources.files(__name__)


def paper_tables():
    """Every ``(part, table)`` shipped with the package, sorted.

    Returns
    -------
    list of tuple of str

    Examples
    --------
    >>> ("drift", "table1") in paper_tables()
    True
    """
    return sorted(
        (part.name, entry.name[: -len(".csv")])
        for part in _ROOT.iterdir()
        if part.is_dir() and not part.name.startswith("_")
        for entry in part.iterdir()
        if entry.name.endswith(".csv")
    )


def _check(part, table):
    for name, value in (("part", part), ("table", table)):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    known = paper_tables()
    if (part, table) not in known:
        raise ValueError(f"no paper table {part!r}/{table!r}; the package holds {known}")


def paper_source(part, table):
    """The sidecar of a paper table: where its numbers come from and what they mean.

    Parameters
    ----------
    part : str
        Book part, e.g. ``"drift"`` or ``"quantile_regularization"``.
    table : str
        File name without ``.csv``, e.g. ``"table1"``.

    Returns
    -------
    dict
        The keys listed in the module documentation.

    Examples
    --------
    >>> src = paper_source("drift", "table1")
    >>> src["table"], src["page"], src["paper"]["cite"]
    ('Table 1', 9, 'anon2022drift')
    """
    _check(part, table)
    return json.loads(_ROOT.joinpath(part, f"{table}.json").read_text(encoding="utf8"))


def paper_table(part, table):
    """The numbers of one paper table, in long format.

    Parameters
    ----------
    part : str
        Book part, e.g. ``"drift"`` or ``"quantile_regularization"``.
    table : str
        File name without ``.csv``, e.g. ``"table1"``.

    Returns
    -------
    pandas.DataFrame
        The columns of the sidecar, text columns as ``str`` and numbers as
        ``float``; blank cells (listed, with the reason, in the sidecar's
        ``missing``) are NaN.

    Examples
    --------
    >>> t = paper_table("quantile_regularization", "table1")
    >>> t.columns.tolist()
    ['model', 'dataset', 'method', 'metric', 'mean', 'std']
    >>> t.query("dataset == 'airfoil' and metric == 'calib_error'")[["method", "mean", "std"]].values.tolist()
    [['base', 13.15, 1.92], ['QR', 9.11, 1.89]]
    """
    columns = paper_source(part, table)["columns"]
    dtypes = {name: (str if spec["type"] == "str" else float) for name, spec in columns.items()}
    with _ROOT.joinpath(part, f"{table}.csv").open(encoding="utf8") as handle:
        return pd.read_csv(handle, dtype=dtypes, keep_default_na=False, na_values=[""])
