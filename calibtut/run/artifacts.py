"""Result tables, their provenance, publishing to ``results/`` and loading back."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from calibtut.run._paths import (
    COMPRESS_ABOVE,
    GZIP_SUFFIX,
    atomic_write_bytes,
    check_name,
    current_run_dir,
    find_root,
    gzip_bytes,
    stored_path,
)
from calibtut.run.store import SweepStore, check_seconds_column, entry_rows

__all__ = [
    "INTERACTIVE",
    "PROVENANCE",
    "SWEEPS",
    "atomic_write_text",
    "list_tables",
    "load_result",
    "publish",
    "read_provenance",
    "save_table",
    "stored_rows",
    "stored_tasks",
    "table_path",
]

PROVENANCE = "provenance.json"
#: In a run directory: what each sweep of the run did (see :func:`calibtut.run.sweep`).
SWEEPS = "sweeps.json"
INTERACTIVE = Path("_build") / "runs" / "interactive"


def atomic_write_text(path, text):
    """Write ``text`` to ``path`` atomically (temporary file, then ``os.replace``).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "a.txt"
    >>> atomic_write_text(p, "hi").read_text()
    'hi'
    """
    return atomic_write_bytes(path, text.encode("utf-8"))


def _tidy(df):
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame, got {type(df).__name__}")
    if isinstance(df.columns, pd.MultiIndex):
        raise ValueError("df must be tidy: flatten its MultiIndex columns first")
    if not isinstance(df.index, pd.RangeIndex) or any(n is not None for n in df.index.names):
        df = df.reset_index()
    columns = [str(c) for c in df.columns]
    if len(set(columns)) != len(columns):
        raise ValueError(f"df must have unique column names, got {columns}")
    return df.set_axis(columns, axis=1)


def table_path(name):
    """Where :func:`save_table` writes the table ``name`` of the current run.

    Under the runner (``python -m calibtut.run``) that is the run directory,
    where :func:`calibtut.run.publish` finds it; outside the runner (Jupyter,
    the book build) it is ``_build/runs/interactive/<name>.csv`` under the
    repository root. When no repository root can be found (e.g. on Colab with
    only the package installed) there is nowhere to write: None.

    Parameters
    ----------
    name : str
        File name without extension, e.g. ``"table2"``.

    Returns
    -------
    pathlib.Path or None

    Examples
    --------
    >>> import os, tempfile
    >>> os.environ["CALIBTUT_RUN_DIR"] = tempfile.mkdtemp()
    >>> table_path("table2").name
    'table2.csv'
    >>> del os.environ["CALIBTUT_RUN_DIR"]
    """
    check_name(name, "name")
    folder = current_run_dir()
    if folder is None:
        root = find_root(required=False)
        if root is None:
            return None
        folder = root / INTERACTIVE
    return Path(folder) / f"{name}.csv"


def save_table(df, name):
    """Save a tidy table of the current run as CSV, at :func:`table_path` ``(name)``.

    Nothing is written when there is nowhere to write (no run directory and
    no repository root). A named or non-default index is written as ordinary
    columns. Like ``DataFrame.to_csv`` with a path, it returns None, so a
    notebook cell that ends with it shows no output.

    Parameters
    ----------
    df : pandas.DataFrame
        A tidy table: one row per observation, flat and unique column names.
    name : str
        File name without extension, e.g. ``"table2"``.

    Examples
    --------
    >>> import os, tempfile, pandas as pd
    >>> os.environ["CALIBTUT_RUN_DIR"] = tempfile.mkdtemp()
    >>> save_table(pd.DataFrame({"method": ["a"], "ece": [0.01]}), "demo")
    >>> pd.read_csv(table_path("demo")).shape
    (1, 2)
    >>> del os.environ["CALIBTUT_RUN_DIR"]
    """
    path = table_path(name)
    df = _tidy(df)
    if path is not None:
        atomic_write_text(path, df.to_csv(index=False))


def _table_files(folder):
    """The table files of ``folder``: ``<name>.csv`` and ``<name>.csv.gz``."""
    return [*Path(folder).glob("*.csv"), *Path(folder).glob("*.csv" + GZIP_SUFFIX)]


def list_tables(folder):
    """Names (without ``.csv`` or ``.csv.gz``) of the tables saved in ``folder``, sorted.

    Examples
    --------
    >>> import tempfile
    >>> list_tables(tempfile.mkdtemp())
    []
    """
    return sorted({p.name.removesuffix(GZIP_SUFFIX).removesuffix(".csv") for p in _table_files(folder)})


def read_provenance(folder):
    """Read ``provenance.json`` from a run or results folder.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "provenance.json").write_text('{"profile": "ci"}')
    >>> read_provenance(d)["profile"]
    'ci'
    """
    path = Path(folder) / PROVENANCE
    if not path.is_file():
        raise FileNotFoundError(f"no {PROVENANCE} in {folder}: the run did not finish (or never ran)")
    return json.loads(path.read_text(encoding="utf-8"))


def publish(run_dir, part=None, notebook=None, *, root=None):
    """Copy the tables and provenance of a finished ``full`` run into ``results/``.

    The tables of the run replace the published tables of
    ``results/<part>/<notebook>/``: each is written (atomically), then a
    published table that the run did not write is deleted, so the folder
    always holds the tables of exactly one run. Nothing else there is touched
    (the sweep stores in ``sweeps/`` stay). A table larger than
    ``COMPRESS_ABOVE`` (200 kB) bytes is stored compressed, as
    ``<table>.csv.gz`` (the same table always gives the same bytes);
    :func:`load_result` reads either.

    Parameters
    ----------
    run_dir : str or path-like
        A run directory written by the runner (holds ``provenance.json``).
    part, notebook : str, optional
        Destination names; default to the ones recorded in the provenance.
    root : str or path-like, optional
        Repository root; found from ``run_dir`` (then the working directory) by default.

    Returns
    -------
    pathlib.Path
        The destination folder.

    Raises
    ------
    ValueError
        If the run did not finish, its profile is not ``full``, or ``run_dir``
        lies under ``results/`` (a published folder is not a run directory).

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp()); _ = (root / "_toc.yml").write_text("")
    >>> run = root / "_build" / "runs" / "p0" / "01_demo" / "full-abc"; run.mkdir(parents=True)
    >>> _ = (run / "t.csv").write_text("a\\n1\\n")
    >>> prov = {"status": "completed", "profile": "full", "part": "p0", "notebook": "01_demo"}
    >>> _ = (run / "provenance.json").write_text(json.dumps(prov))
    >>> dest = publish(run)
    >>> dest.relative_to(root).as_posix(), sorted(p.name for p in dest.iterdir())
    ('results/p0/01_demo', ['provenance.json', 't.csv'])
    """
    run_dir = Path(run_dir)
    prov = read_provenance(run_dir)
    if prov.get("status") != "completed":
        raise ValueError(f"run_dir {run_dir} holds a run that did not complete (status {prov.get('status')!r})")
    if prov.get("profile") != "full":
        raise ValueError(
            f"only full runs are published to results/; run_dir {run_dir} is a {prov.get('profile')!r} run"
        )
    part = check_name(part if part is not None else prov.get("part"), "part")
    notebook = check_name(notebook if notebook is not None else prov.get("notebook"), "notebook")
    if root is None:
        root = find_root(run_dir, required=False) or find_root()
    results = Path(root) / "results"
    if run_dir.resolve().is_relative_to(results.resolve()):
        raise ValueError(f"run_dir {run_dir} lies under results/: publish copies a run directory "
                         f"(_build/runs/...) into results/, never a published folder onto itself")
    dest = results / part / notebook
    written = set()
    for table in list_tables(run_dir):
        source = stored_path(run_dir / f"{table}.csv")
        if source.stat().st_size > COMPRESS_ABOVE and source.suffix != GZIP_SUFFIX:
            target = atomic_write_bytes(dest / f"{table}.csv{GZIP_SUFFIX}", gzip_bytes(source.read_bytes()))
        else:
            target = atomic_write_bytes(dest / source.name, source.read_bytes())
        written.add(target.name)
    for old in _table_files(dest):
        if old.name not in written:
            old.unlink()
    atomic_write_bytes(dest / PROVENANCE, (run_dir / PROVENANCE).read_bytes())
    return dest


def load_result(part, notebook, table, *, root=None):
    """Load a published full-scale table and its provenance from ``results/``.

    Parameters
    ----------
    part : str
        The book part, e.g. ``"002"``.
    notebook : str
        The notebook name, e.g. ``"03_recalibration"`` (a ``.md`` suffix is ignored).
    table : str
        The table name given to :func:`save_table`.
    root : str or path-like, optional
        Repository root; found by walking up from the working directory by default.

    Returns
    -------
    (pandas.DataFrame, dict)
        The table (read from ``<table>.csv`` or, for a large one,
        ``<table>.csv.gz``) and the provenance of the run that produced it.

    Raises
    ------
    FileNotFoundError
        If the table is not there; the message says which command produces it.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> dest = root / "results" / "p0" / "01_demo"; dest.mkdir(parents=True)
    >>> _ = (dest / "t.csv").write_text("a\\n1\\n")
    >>> _ = (dest / "provenance.json").write_text(json.dumps({"profile": "full"}))
    >>> df, prov = load_result("p0", "01_demo", "t", root=root)
    >>> int(df["a"].iloc[0]), prov["profile"]
    (1, 'full')
    """
    check_name(part, "part")
    notebook = check_name(notebook, "notebook").removesuffix(".md").removesuffix(".ipynb")
    check_name(table, "table")
    command = f"python -m calibtut.run notebooks/{part}/{notebook}.md --profile full --publish"
    if root is None:
        root = find_root(required=False)
        if root is None:
            raise FileNotFoundError(
                f"results/{part}/{notebook}/{table}.csv is not available: results/ ships with the "
                f"calibtut repository, not with the installed package. Run from a clone of the "
                f"repository (or set CALIBTUT_ROOT); the table is produced by `{command}`"
            )
    folder = Path(root) / "results" / part / notebook
    path = stored_path(folder / f"{table}.csv")
    if not path.is_file():
        have = list_tables(folder) if folder.is_dir() else []
        hint = f" (this folder has: {', '.join(have)})" if have else ""
        raise FileNotFoundError(f"{path} not found{hint}; produce it with `{command}`")
    # Only an empty cell is missing: a label such as the method "None" stays a string.
    return pd.read_csv(path, keep_default_na=False, na_values=[""]), read_provenance(folder)


def stored_tasks(part, notebook, sweep, *, root=None):
    """How many tasks of a full run's sweep are finished in its committed store.

    A full run longer than one sitting keeps its finished tasks in
    ``results/<part>/<notebook>/sweeps/<sweep>.jsonl`` (``.jsonl.gz`` once
    large) before it is published;
    a notebook can say how far it has got. The store is only read, so this is
    safe while a run is appending to it.

    Parameters
    ----------
    part, notebook : str
        As for :func:`load_result`.
    sweep : str
        The sweep's name (its ``desc``), e.g. ``"study"``.
    root : str or path-like, optional
        Repository root; found by walking up from the working directory by default.

    Returns
    -------
    int
        Distinct tasks stored as finished; 0 when there is no store (or no
        repository, e.g. with only the installed package).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> store = SweepStore(root / "results" / "p0" / "01_demo" / "sweeps" / "grid.jsonl")
    >>> store.append({"key": "a", "status": "ok", "records": []})
    >>> store.append({"key": "b", "status": "failed", "error": "boom"})
    >>> stored_tasks("p0", "01_demo", "grid", root=root)
    1
    """
    return len(_committed_store(part, notebook, sweep, root))


def _committed_store(part, notebook, sweep, root):
    """The finished entries of ``results/<part>/<notebook>/sweeps/<sweep>.jsonl`` (or ``.jsonl.gz``), read only."""
    check_name(part, "part")
    notebook = check_name(notebook, "notebook").removesuffix(".md").removesuffix(".ipynb")
    check_name(sweep, "sweep")
    if root is None:
        root = find_root(required=False)
        if root is None:
            return {}
    path = Path(root) / "results" / part / notebook / "sweeps" / f"{sweep}.jsonl"
    return SweepStore(path).load(repair=False)[0]


def stored_rows(part, notebook, sweep, *, seconds=None, root=None):
    """The rows of every task finished so far in a full run's committed store.

    What :func:`calibtut.run.sweep` would return for the finished tasks, in
    the order they finished, so that a notebook can show a long full run
    while it is still under way (say so beside it: the tasks still missing
    are not a random sample). The store is only read.

    Parameters
    ----------
    part, notebook, sweep : str
        As for :func:`stored_tasks`.
    seconds : str, optional
        Name of an extra column holding each task's compute time, as in
        :func:`calibtut.run.sweep`.
    root : str or path-like, optional
        Repository root; found by walking up from the working directory by default.

    Returns
    -------
    pandas.DataFrame
        Task keys first, then the result columns; empty (no columns) when
        nothing is stored.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> store = SweepStore(root / "results" / "p0" / "01_demo" / "sweeps" / "grid.jsonl")
    >>> store.append({"key": "a", "status": "ok", "task": {"seed": 0}, "records": [{"v": 1.5}]})
    >>> store.append({"key": "b", "status": "failed", "task": {"seed": 1}, "error": "boom"})
    >>> stored_rows("p0", "01_demo", "grid", root=root)
       seed    v
    0     0  1.5
    """
    check_seconds_column(seconds)
    done = _committed_store(part, notebook, sweep, root)
    return pd.DataFrame([row for entry in done.values() for row in entry_rows(entry, seconds)])
