"""A chapter's full run as the book shows it: published, interim (its store so far), or absent.

:func:`read_published` is the one place that decides which of the three a
chapter reads (:func:`read_published_with` for a run published in a layout
of its own, read by a reader that raises ``FileNotFoundError`` when it is
absent); the :class:`Publication` it returns carries the rows and a
one-line note that renders the same way in every chapter, with no path.
"""

from __future__ import annotations

from calibtut.run._paths import check_name
from calibtut.run.artifacts import load_result, stored_rows
from calibtut.run.glue import glue

__all__ = [
    "NOT_PUBLISHED",
    "PUBLICATION_STATUSES",
    "Publication",
    "glue_unpublished",
    "read_published",
    "read_published_with",
]

#: What the text shows in place of a number taken from a run not yet published.
NOT_PUBLISHED = "(not yet published)"

#: What a chapter found of a full run, in the order it is looked for.
PUBLICATION_STATUSES = ("published", "interim", "absent")


class Publication:
    """A full run's table as found: its ``status``, ``rows``, ``provenance`` and a ``note`` for the reader.

    Parameters
    ----------
    status : {"published", "interim", "absent"}
        A published table; the rows finished so far in the run's store; nothing.
    rows : pandas.DataFrame or None
        The table (published or interim); None when absent.
    provenance : dict or None
        The published run's provenance; None otherwise.
    what : str
        What the run is, as the note names it ("full run", ...).

    Examples
    --------
    >>> Publication("absent", None, None, "the full run").note
    'The full run is not yet published: the chapter shows its live run.'
    """

    def __init__(self, status, rows, provenance, what):
        if status not in PUBLICATION_STATUSES:
            raise ValueError(f"status must be one of {PUBLICATION_STATUSES}, got {status!r}")
        if (rows is None) != (status == "absent"):
            raise ValueError(f"rows must be None exactly when the status is 'absent', got status {status!r}")
        self.status, self.rows, self.provenance, self.what = status, rows, provenance, what

    @property
    def found(self):
        """Whether there are rows to show (a published or an interim table)."""
        return self.rows is not None

    @property
    def note(self):
        """One line that says what was found, with no path."""
        return self._line("")

    def _line(self, strong):
        what = self.what[:1].upper() + self.what[1:]
        if self.status == "published":
            finished = (self.provenance or {}).get("finished")
            return f"{what} is {strong}published{strong}" + (f" (finished {finished})." if finished else ".")
        said = f"{what} is {strong}not yet published{strong}"
        if self.status == "interim":
            return (f"{said}: shown is the interim result of its store, {len(self.rows)} rows so far "
                    "(the tasks still missing are not a random sample).")
        return f"{said}: the chapter shows its live run."

    def __repr__(self):
        return self.note

    def _repr_markdown_(self):
        """The note as a quoted line, its status in bold."""
        return f"> {self._line('**')}"


def read_published(part, notebook, table, *, store=None, what="the full run", root=None):
    """The :class:`Publication` of a full run's table: published, else its store's rows so far, else absent.

    Parameters
    ----------
    part, notebook, table : str
        As for :func:`calibtut.run.load_result`.
    store : str, optional
        The name of the run's sweep store (as for
        :func:`calibtut.run.stored_rows`); without it there is no interim.
    what : str, default "the full run"
        What the run is, as the note names it.
    root : str or path-like, optional
        Repository root; found by walking up from the working directory by default.

    Returns
    -------
    Publication
        Shown as the last line of a cell, it renders its note as a quoted
        line.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> read_published("p0", "01_demo", "t", root=root).status
    'absent'
    >>> dest = root / "results" / "p0" / "01_demo"; dest.mkdir(parents=True)
    >>> _ = (dest / "t.csv").write_text("a\\n1\\n")
    >>> _ = (dest / "provenance.json").write_text(json.dumps({"finished": "2026-01-02"}))
    >>> full = read_published("p0", "01_demo", "t", root=root)
    >>> full.status, full.rows["a"].tolist(), full.note
    ('published', [1], 'The full run is published (finished 2026-01-02).')
    """
    if not isinstance(what, str) or not what.strip():
        raise TypeError(f"what must be a non-empty string, got {what!r}")
    try:
        rows, provenance = load_result(part, notebook, table, root=root)
    except FileNotFoundError:
        pass
    else:
        return Publication("published", rows, provenance, what)
    if store is not None:
        rows = stored_rows(part, notebook, store, root=root)
        if not rows.empty:
            return Publication("interim", rows, None, what)
    return Publication("absent", None, None, what)


def read_published_with(reader, *, what="the full run"):
    """The :class:`Publication` of a run that ``reader`` reads: published, or absent where it finds nothing.

    For a run published in a layout of its own (not a table of
    :func:`calibtut.run.save_table`), read by a function of the part's
    experiments.

    Parameters
    ----------
    reader : callable
        Called with no argument; returns the run's rows (a table, or a dict of
        tables) and raises ``FileNotFoundError`` when the run is not there.
    what : str, default "the full run"
        What the run is, as the note names it.

    Returns
    -------
    Publication
        Published with the reader's rows and no provenance, or absent.

    Examples
    --------
    >>> def missing():
    ...     raise FileNotFoundError("results/p0/gpu/runs.csv")
    >>> read_published_with(missing, what="the GPU run").note
    'The GPU run is not yet published: the chapter shows its live run.'
    >>> read_published_with(lambda: {"frozen": 1}, what="the GPU run").rows
    {'frozen': 1}
    """
    if not callable(reader):
        raise TypeError(f"reader must be callable, got {type(reader).__name__}")
    if not isinstance(what, str) or not what.strip():
        raise TypeError(f"what must be a non-empty string, got {what!r}")
    try:
        rows = reader()
    except FileNotFoundError:
        return Publication("absent", None, None, what)
    return Publication("published", rows, None, what)


def glue_unpublished(names, *, prefix=""):
    """Glue :data:`NOT_PUBLISHED` under each name, for a check cell that finds no run.

    The text of a chapter quotes numbers of its full run with glue roles;
    where the run is absent every one of them reads the same placeholder.

    Parameters
    ----------
    names : iterable of str
        The glue keys, without ``prefix``.
    prefix : str, default ""
        Put before each name (``"va_ex_"`` glues ``va_ex_<name>``).

    Examples
    --------
    >>> glue_unpublished(["acc", "share"], prefix="full_")  # doctest: +SKIP
    >>> NOT_PUBLISHED
    '(not yet published)'
    """
    if not isinstance(prefix, str):
        raise TypeError(f"prefix must be a string, got {type(prefix).__name__}")
    if isinstance(names, str):
        raise TypeError(f"names must be an iterable of strings, not one string, got {names!r}")
    keys = [prefix + name if isinstance(name, str) else name for name in names]
    if not keys:
        raise ValueError("names must name at least one glue key, got none")
    for key in keys:
        check_name(key, "names")
    for key in keys:
        glue(key, NOT_PUBLISHED)
