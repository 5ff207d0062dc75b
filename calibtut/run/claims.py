"""The verdicts of every paper-versus-ours claims table, their colours, and the table's shape.

The four chapters that check a paper's claims (quantile regularization 5,
regression study 6, covariate shift 6, Venn-ADMIT 8) say what they found
about each claim with one vocabulary, :class:`Verdict`, and build their
tables with :func:`verdict_table`, which puts the verdict first. How a
verdict is reached stays with each part's experiments; only its words and
the table's shape live here.
"""

from __future__ import annotations

import enum

import pandas as pd

from calibtut._validation import check_frame

__all__ = ["VERDICT_COLOURS", "Verdict", "verdict_table"]


class Verdict(enum.StrEnum):
    """What a check of one paper's claim found: a string, so a table shows and saves it as it reads.

    The members, strongest first: ``HOLDS``, ``DIRECTION_ONLY`` (the claimed
    direction without significance), ``DOES_NOT_HOLD``; a claim that could
    not be judged, with the reason (``NOT_TESTABLE``: too few datasets or
    runs for the test; ``NOT_TESTABLE_NETWORK``: the network is already below
    1 - α, so a claim about reaching it says nothing; ``NOT_TESTABLE_EMPTY``:
    nothing was admitted); ``VACUOUS`` (a claim about the admitted points
    holds only vacuously, nothing being admitted); ``NOT_RUN``; ``NOT_JUDGED`` (a part of a claim
    reported beside its verdict without deciding it); and the verdicts on a single printed
    number rather than a claim, ``REPRODUCED`` (within the band of the
    comparison) and ``DIFFERS``.

    Examples
    --------
    >>> Verdict.HOLDS == "holds", str(Verdict.DIRECTION_ONLY)
    (True, 'direction holds, not significant')
    >>> Verdict("not run") is Verdict.NOT_RUN
    True
    """

    HOLDS = "holds"
    DIRECTION_ONLY = "direction holds, not significant"
    DOES_NOT_HOLD = "does not hold"
    NOT_TESTABLE = "not testable at this size"
    NOT_TESTABLE_NETWORK = "not testable: network < 1 - α"
    NOT_TESTABLE_EMPTY = "not testable: nothing admitted"
    VACUOUS = "vacuous: nothing admitted"
    NOT_RUN = "not run"
    NOT_JUDGED = "not judged"
    REPRODUCED = "reproduced"
    DIFFERS = "differs"


#: The colour of each :class:`Verdict` in a figure: greens for what holds,
#: red for what does not, greys for what could not be judged.
VERDICT_COLOURS = {
    Verdict.HOLDS: "#1a9641",
    Verdict.DIRECTION_ONLY: "#a6d96a",
    Verdict.DOES_NOT_HOLD: "#d7191c",
    Verdict.NOT_TESTABLE: "0.75",
    Verdict.NOT_TESTABLE_NETWORK: "0.65",
    Verdict.NOT_TESTABLE_EMPTY: "0.55",
    Verdict.VACUOUS: "0.45",
    Verdict.NOT_RUN: "0.93",
    Verdict.NOT_JUDGED: "0.85",
    Verdict.REPRODUCED: "#2b83ba",
    Verdict.DIFFERS: "#fdae61",
}


def verdict_table(rows, *, verdicts=("verdict",)):
    """A claims table in the book's one shape: the verdict columns first, each value a :class:`Verdict`.

    Parameters
    ----------
    rows : pandas.DataFrame or list of dict
        One row per claim (or per cell compared), holding the columns
        ``verdicts``.
    verdicts : tuple of str, default ("verdict",)
        The columns that hold verdicts, in the order they are shown.

    Returns
    -------
    pandas.DataFrame
        The columns ``verdicts``, then the others in their order, on a fresh
        index; the verdicts as plain strings.

    Raises
    ------
    ValueError
        If a verdict column is missing or holds a value that is not a
        :class:`Verdict`.

    Examples
    --------
    >>> t = verdict_table([{"claim": "C1", "paper": 0.9, "verdict": Verdict.HOLDS}])
    >>> t.columns.tolist(), t["verdict"].tolist()
    (['verdict', 'claim', 'paper'], ['holds'])
    """
    if not isinstance(rows, pd.DataFrame):
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise TypeError(f"rows must be a DataFrame or a list of dicts, got {type(rows).__name__}")
        rows = pd.DataFrame(rows)
    if isinstance(verdicts, str) or not isinstance(verdicts, tuple) or not verdicts:
        raise TypeError(f"verdicts must be a non-empty tuple of column names, got {verdicts!r}")
    check_frame(rows, "rows", list(verdicts))
    known = {str(v) for v in Verdict}
    for column in verdicts:
        unknown = sorted({str(v) for v in rows[column]} - known)
        if unknown:
            raise ValueError(f"rows[{column!r}] holds {unknown}, which are not verdicts; known: {sorted(known)}")
    others = [c for c in rows.columns if c not in verdicts]
    table = rows[[*verdicts, *others]].reset_index(drop=True)
    return table.assign(**{c: table[c].map(str) for c in verdicts})
