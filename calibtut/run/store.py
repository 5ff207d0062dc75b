"""The store of a sweep: one JSON line per finished task, appended as it finishes.

A store is a plain text file (JSON Lines), small enough to commit: every line
records one task that ran, with its key, its arguments, the function, the code
version, where and how long it ran, and either its result rows or the
traceback of its failure. Lines are only ever appended, each with a single
``write`` of the whole line followed by ``fsync``, by one writer (the process
that runs the sweep), so a crash can at worst leave an unfinished last line,
which the next open cuts off. Nothing finished is ever rewritten.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

__all__ = ["FAILED", "OK", "SweepStore", "dumps", "entry_rows"]

#: Status of a line whose task returned its rows.
OK = "ok"
#: Status of a line whose task raised (or whose worker died too often).
FAILED = "failed"


def _plain(value):
    """Turn numpy scalars/arrays into JSON-ready Python values."""
    import numpy as np

    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot store a {type(value).__name__} in a sweep result (use numbers, strings, lists)")


def dumps(obj):
    """One JSON line (no newline inside; NaN and inf kept as JSON extensions).

    Examples
    --------
    >>> import numpy as np
    >>> dumps({"b": np.float64(0.1), "a": [1, np.nan]})
    '{"b": 0.1, "a": [1, NaN]}'
    """
    return json.dumps(obj, default=_plain, allow_nan=True, separators=(", ", ": "))


def entry_rows(entry, seconds=None):
    """The table rows of one finished entry: the task's arguments, then each result record.

    Parameters
    ----------
    entry : dict
        A store line with status ``"ok"``: its ``task`` and its ``records``.
    seconds : str, optional
        Name of an extra column holding the entry's compute time in seconds.

    Returns
    -------
    list of dict

    Raises
    ------
    ValueError
        If the entry did not finish, or a record reuses a task key (or the
        ``seconds`` column).

    Examples
    --------
    >>> entry = {"key": "k", "status": "ok", "task": {"seed": 1}, "seconds": 2.5,
    ...          "records": [{"v": 0.1}, {"v": 0.2}]}
    >>> entry_rows(entry, seconds="s")
    [{'seed': 1, 'v': 0.1, 's': 2.5}, {'seed': 1, 'v': 0.2, 's': 2.5}]
    """
    if not isinstance(entry, dict) or entry.get("status") != OK or "task" not in entry:
        raise ValueError(f"entry must be a finished store line with its task, got {str(entry)[:80]!r}")
    if seconds is not None and not isinstance(seconds, str):
        raise TypeError(f"seconds must be a column name (str) or None, got {type(seconds).__name__}")
    task = entry["task"]
    taken = set(task) | ({seconds} if seconds else set())
    rows = []
    for record in entry["records"]:
        clash = sorted(set(record) & taken)
        if clash:
            raise ValueError(f"{entry.get('fn', 'the task function')} returned keys {clash} that are also "
                             f"task keys (or the seconds column)")
        rows.append({**task, **record, **({seconds: entry.get("seconds", float("nan"))} if seconds else {})})
    return rows


class SweepStore:
    """An append-only JSON Lines file of the finished tasks of one sweep.

    Parameters
    ----------
    path : str or path-like
        The ``.jsonl`` file; created (with its folder) on the first append.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> store = SweepStore(pathlib.Path(tempfile.mkdtemp()) / "grid.jsonl")
    >>> store.append({"key": "k1", "status": "failed", "error": "boom"})
    >>> store.append({"key": "k1", "status": "ok", "records": [{"v": 1}]})
    >>> done, failed = store.load()
    >>> sorted(done), failed
    (['k1'], {})
    """

    def __init__(self, path):
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"store must be a path, got {type(path).__name__}")
        self.path = Path(path)
        if self.path.suffix != ".jsonl":
            raise ValueError(f"store must be a .jsonl file, got {self.path}")
        if self.path.is_dir():
            raise ValueError(f"store {self.path} is a folder, not a .jsonl file")

    def __repr__(self):
        return f"SweepStore({str(self.path)!r})"

    def _cut_unfinished_line(self):
        """Truncate a last line that a crash left without its newline."""
        if not self.path.is_file():
            return
        with open(self.path, "rb+") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            if size == 0:
                return
            handle.seek(size - 1)
            if handle.read(1) == b"\n":
                return
            handle.seek(0)
            keep = handle.read().rfind(b"\n") + 1
            handle.truncate(keep)
            warnings.warn(f"{self.path}: dropped an unfinished last line ({size - keep} bytes) left by a crash",
                          RuntimeWarning, stacklevel=3)

    def entries(self, repair=True):
        """Every complete line, in the order written (unreadable lines are skipped with a warning).

        Parameters
        ----------
        repair : bool, default True
            Truncate a last line that a crash left unfinished. ``False`` only
            skips it and never writes, for reading a store that a running sweep
            may be appending to.

        Examples
        --------
        >>> import tempfile, pathlib
        >>> SweepStore(pathlib.Path(tempfile.mkdtemp()) / "none.jsonl").entries()
        []
        """
        if not isinstance(repair, bool):
            raise TypeError(f"repair must be a bool, got {repair!r}")
        if repair:
            self._cut_unfinished_line()
        if not self.path.is_file():
            return []
        out = []
        with open(self.path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if not line.endswith("\n"):
                    break  # unfinished (only possible with repair=False)
                if not line.strip():
                    continue
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    entry = None
                if not isinstance(entry, dict) or "key" not in entry or "status" not in entry:
                    warnings.warn(f"{self.path}:{number}: skipped a line that is not a sweep entry",
                                  RuntimeWarning, stacklevel=2)
                    continue
                out.append(entry)
        return out

    def load(self, repair=True):
        """``(done, failed)``: the last successful entry per key, and the last failure of keys never done.

        ``repair`` is passed to :meth:`entries`.

        Examples
        --------
        >>> import tempfile, pathlib
        >>> store = SweepStore(pathlib.Path(tempfile.mkdtemp()) / "s.jsonl")
        >>> store.append({"key": "a", "status": "failed", "error": "x"})
        >>> list(store.load()[1])
        ['a']
        """
        done, failed = {}, {}
        for entry in self.entries(repair):
            if entry["status"] == OK:
                done[entry["key"]] = entry
                failed.pop(entry["key"], None)
            elif entry["key"] not in done:
                failed[entry["key"]] = entry
        return done, failed

    def append(self, entry):
        """Append one entry as one line: a single ``write`` then ``fsync``.

        Examples
        --------
        >>> import tempfile, pathlib
        >>> store = SweepStore(pathlib.Path(tempfile.mkdtemp()) / "s.jsonl")
        >>> store.append({"key": "a", "status": "ok", "records": []})
        >>> store.path.read_text()
        '{"key": "a", "status": "ok", "records": []}\\n'
        """
        line = (dumps(entry) + "\n").encode("utf-8")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._cut_unfinished_line()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
