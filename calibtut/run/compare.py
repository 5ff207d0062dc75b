"""The side-by-side table of every "paper versus ours" section."""

from __future__ import annotations

import pandas as pd

from calibtut._validation import check_frame, check_int
from calibtut.run.profiles import PROFILES

__all__ = ["paper_vs_ours"]


def _mean_by(df, on, value, argname):
    check_frame(df, argname, [*on, value])
    values = pd.to_numeric(df[value], errors="coerce")
    if values.isna().any() and not df[value].isna().equals(values.isna()):
        raise ValueError(f"{argname}[{value!r}] must be numeric")
    return df[on].assign(**{value: values}).groupby(on, sort=False, dropna=False)[value].mean()


def paper_vs_ours(paper, ours, *, on, value="value", full=None, live="ci", decimals=None):
    """Put the paper's numbers beside ours (the live run, and the full run when available).

    Parameters
    ----------
    paper : pandas.DataFrame
        The paper's numbers: key columns ``on`` and a ``value`` column, one row per key.
    ours : pandas.DataFrame
        Our live results (the notebook's own run) with the same columns; several
        rows per key (e.g. seeds) are averaged.
    on : str or list of str
        Key columns, e.g. ``["dataset", "method"]``.
    value : str, default "value"
        The numeric column compared.
    full : pandas.DataFrame, optional
        Our published ``full`` results (from :func:`calibtut.run.load_result`),
        averaged likewise; only beside a live ``ci`` run.
    live : {"ci", "full"}, default "ci"
        The profile ``ours`` was run at (pass the notebook's ``settings(...).profile``);
        it names the column, so a table saved by a full run says ``ours (full)``.
    decimals : int, optional
        Round the numeric columns for display.

    Returns
    -------
    pandas.DataFrame
        One row per key of ``paper`` (in its order) with columns ``on``,
        ``paper``, ``ours (<live>)``, ``ours (full)`` (only if ``full`` is given)
        and ``difference`` = ours minus paper, using the full run where there
        is one and the ci run otherwise. Keys we did not run show NaN.

    Raises
    ------
    ValueError
        If ``live`` is ``"full"`` and ``full`` is given too: the live run is then
        the full run, and the published one it replaces is not shown beside it.

    Examples
    --------
    >>> paper = pd.DataFrame({"method": ["TS", "none"], "value": [1.2, 4.5]})
    >>> ours = pd.DataFrame({"method": ["TS", "TS", "none"], "value": [1.0, 1.6, 4.0]})
    >>> paper_vs_ours(paper, ours, on="method")
      method  paper  ours (ci)  difference
    0     TS    1.2        1.3         0.1
    1   none    4.5        4.0        -0.5
    >>> paper_vs_ours(paper, ours, on="method", live="full").columns.tolist()
    ['method', 'paper', 'ours (full)', 'difference']
    """
    on = [on] if isinstance(on, str) else list(on)
    if not on or not all(isinstance(c, str) for c in on):
        raise TypeError("on must be a column name or a list of column names")
    if not isinstance(value, str):
        raise TypeError(f"value must be a column name, got {type(value).__name__}")
    if decimals is not None:
        check_int(decimals, "decimals", minimum=0)
    if live not in PROFILES:
        raise ValueError(f"live must be the profile of ours, one of {PROFILES}, got {live!r}")
    if live == "full" and full is not None:
        raise ValueError(
            "full= is the published full run shown beside a live ci run; with live='full' the live "
            "run is the full run itself, so pass full=None"
        )
    if not isinstance(paper, pd.DataFrame):
        raise TypeError(f"paper must be a pandas DataFrame, got {type(paper).__name__}")
    if paper.duplicated(on).any():
        dup = paper.loc[paper.duplicated(on, keep=False), on].drop_duplicates().to_dict("records")
        raise ValueError(f"paper must have one row per key; repeated keys: {dup}")
    table = _mean_by(paper, on, value, "paper").rename("paper").reset_index()
    columns = {f"ours ({live})": ("ours", ours)}
    if full is not None:
        columns["ours (full)"] = ("full", full)
    for label, (argname, frame) in columns.items():
        means = _mean_by(frame, on, value, argname).rename(label)
        table = table.merge(means.reset_index(), on=on, how="left")
    best = "ours (full)" if "ours (full)" in columns else "ours (ci)"
    table["difference"] = table[best] - table["paper"]
    if decimals is not None:
        numeric = ["paper", *columns, "difference"]
        table[numeric] = table[numeric].round(decimals)
    return table
