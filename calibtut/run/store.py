"""The store of a sweep: one JSON line per finished task, appended as it finishes.

A store is a JSON Lines file, small enough to commit: every line records one
task that ran, with its key, its arguments, the function, the code version,
where and how long it ran, and either its result rows or the traceback of its
failure. Lines are only ever appended, each with a single ``write`` of the
whole line followed by ``fsync``, by one writer (the process that runs the
sweep), so a crash can at worst leave an unfinished last line, which the next
open cuts off. Nothing finished is ever rewritten, except by :meth:`SweepStore.compact`,
which replaces the file atomically with one holding the same lines.

A large store is kept gzip-compressed as ``<sweep>.jsonl.gz``, a standard
multi-member gzip file (``zcat``, :func:`gzip.open` and pandas read it):
each appended line is one more gzip member, so appending never rewrites what
is there and a crash leaves at worst an unfinished last member, cut off like an
unfinished line. At the end of a sweep that appended lines, :func:`~calibtut.run.sweep`
calls :meth:`SweepStore.compact`, which rewrites a store of more than
``COMPRESS_ABOVE`` (200 kB) bytes (or an already compressed
one) as a single member, which depends on the lines alone: the same lines
always give the same bytes. A store named ``<sweep>.jsonl`` is found as
``<sweep>.jsonl.gz`` when only the compressed file exists.
"""

from __future__ import annotations

import json
import os
import warnings
import zlib
from pathlib import Path

from calibtut._validation import check_bool
from calibtut.run._paths import (
    COMPRESS_ABOVE,
    GZIP_SUFFIX,
    atomic_write_bytes,
    gzip_bytes,
    stored_path,
)

__all__ = ["FAILED", "OK", "SweepStore", "check_seconds_column", "dumps", "entry_rows"]

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


def check_seconds_column(seconds):
    """``seconds`` if it is the name of a column (a str) or None, else a TypeError showing it.

    Examples
    --------
    >>> check_seconds_column("seconds")
    'seconds'
    >>> check_seconds_column(1.5)
    Traceback (most recent call last):
    TypeError: seconds must be a column name (str) or None, got 1.5 (float)
    """
    if seconds is not None and not isinstance(seconds, str):
        raise TypeError(f"seconds must be a column name (str) or None, got {seconds!r} ({type(seconds).__name__})")
    return seconds


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
    check_seconds_column(seconds)
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
    """An append-only JSON Lines file of the finished tasks of one sweep, plain or gzip-compressed.

    Parameters
    ----------
    path : str or path-like
        The ``.jsonl`` file, or a ``.jsonl.gz`` one; created (with its folder)
        on the first append. A ``.jsonl`` name whose compressed twin
        ``.jsonl.gz`` exists (and the plain file does not) opens the
        compressed one.

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
        path = Path(path)
        if not path.name.endswith((".jsonl", ".jsonl" + GZIP_SUFFIX)):
            raise ValueError(f"store must be a .jsonl or .jsonl.gz file, got {path}")
        if path.is_dir():
            raise ValueError(f"store {path} is a folder, not a .jsonl file")
        self.path = stored_path(path)
        self._checked_size = None  # size of the compressed file when last known to end with a whole member

    def __repr__(self):
        return f"SweepStore({str(self.path)!r})"

    @property
    def compressed(self):
        """True for a ``.jsonl.gz`` store."""
        return self.path.name.endswith(GZIP_SUFFIX)

    def _read(self):
        """``(content, kept, size)``: the complete lines, the bytes of the file holding them, its size.

        A plain file's complete lines end at its last newline; a compressed
        file's are the content of its complete gzip members (an unfinished last
        member is what a crash in the middle of an append leaves).
        """
        raw = self.path.read_bytes() if self.path.is_file() else b""
        if not self.compressed:
            kept = raw.rfind(b"\n") + 1
            return raw[:kept], kept, len(raw)
        parts, kept = [], 0
        while kept < len(raw):
            member = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
            try:
                part = member.decompress(raw[kept:])
            except zlib.error as exc:
                raise ValueError(f"{self.path} is damaged at byte {kept} ({exc}): not a gzip member, and not "
                                 f"one cut short by a crash; restore it from git") from None
            if not member.eof:
                break  # unfinished last member
            parts.append(part)
            kept = len(raw) - len(member.unused_data)
        return b"".join(parts), kept, len(raw)

    def _cut_unfinished_line(self):
        """Truncate a last line (or gzip member) that a crash left unfinished."""
        if not self.path.is_file():
            self._checked_size = 0
            return
        if self.compressed:
            if self.path.stat().st_size == self._checked_size:
                return
            _, kept, size = self._read()
        else:
            with open(self.path, "rb") as handle:
                size = handle.seek(0, os.SEEK_END)
                if size == 0:
                    return
                handle.seek(size - 1)
                if handle.read(1) == b"\n":
                    return
            _, kept, size = self._read()
        if kept < size:
            with open(self.path, "rb+") as handle:
                handle.truncate(kept)
            what = "gzip member" if self.compressed else "line"
            warnings.warn(f"{self.path}: dropped an unfinished last {what} ({size - kept} bytes) left by a crash",
                          RuntimeWarning, stacklevel=3)
        self._checked_size = kept

    def entries(self, repair=True):
        """Every complete line, in the order written (unreadable lines are skipped with a warning).

        Parameters
        ----------
        repair : bool, default True
            Truncate a last line (or gzip member) that a crash left
            unfinished. ``False`` only skips it and never writes, for reading
            a store that a running sweep may be appending to.

        Raises
        ------
        ValueError
            If a compressed store holds bytes that are neither gzip members
            nor the beginning of one.

        Examples
        --------
        >>> import tempfile, pathlib
        >>> SweepStore(pathlib.Path(tempfile.mkdtemp()) / "none.jsonl").entries()
        []
        """
        check_bool(repair, "repair")
        if repair:
            self._cut_unfinished_line()
        content, _, _ = self._read()
        out = []
        for number, line in enumerate(content.decode("utf-8").split("\n"), 1):
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
        """Append one entry as one line (one gzip member if compressed): a single ``write`` then ``fsync``.

        Examples
        --------
        >>> import tempfile, pathlib
        >>> store = SweepStore(pathlib.Path(tempfile.mkdtemp()) / "s.jsonl")
        >>> store.append({"key": "a", "status": "ok", "records": []})
        >>> store.path.read_text()
        '{"key": "a", "status": "ok", "records": []}\\n'
        """
        line = (dumps(entry) + "\n").encode("utf-8")
        if self.compressed:
            line = gzip_bytes(line)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._cut_unfinished_line()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
            if self._checked_size is not None:
                self._checked_size += len(line)
        finally:
            os.close(fd)

    def compact(self):
        """Keep a large store compressed, as one gzip member that depends on its lines alone.

        A store that is compressed, or plain and larger than
        ``COMPRESS_ABOVE`` (200 kB) bytes, is rewritten
        (atomically) as ``<sweep>.jsonl.gz`` holding its complete lines in one
        member; a plain file is then deleted. A small plain store is left as it
        is. Returns the store, whose ``path`` names the file that now
        holds it.

        Examples
        --------
        >>> import tempfile, pathlib
        >>> store = SweepStore(pathlib.Path(tempfile.mkdtemp()) / "grid.jsonl.gz")
        >>> for k in range(5):  # five gzip members
        ...     store.append({"key": str(k), "status": "ok", "records": [{"v": k}]})
        >>> members = store.path.stat().st_size
        >>> store.compact().path.name, len(store.entries()), store.path.stat().st_size < members
        ('grid.jsonl.gz', 5, True)
        """
        if not self.path.is_file() or not (self.compressed or self.path.stat().st_size > COMPRESS_ABOVE):
            return self
        self._cut_unfinished_line()
        content, _, _ = self._read()
        plain = self.path
        self.path = plain if self.compressed else plain.with_name(plain.name + GZIP_SUFFIX)
        packed = gzip_bytes(content)
        atomic_write_bytes(self.path, packed)
        self._checked_size = len(packed)
        if plain != self.path:
            plain.unlink()
        return self
