"""Execute the book's notebooks once and keep them in the build's jupyter-cache.

The book is built with ``execute_notebooks: cache``: myst-nb reads each
``notebooks/**/*.md`` page, hashes its code cells (sources and cell metadata)
plus the ``kernelspec`` metadata, and only executes the notebook when the
cache under ``_build/.jupyter_cache`` holds no executed notebook with that hash.
This module fills that cache *before* the build, from two places:

* the nbval run of ``tasks.py test`` (see ``tools/pytest_nbcache.py``): the
  outputs nbval collected cell by cell are stored with :func:`store_outputs`;
* ``tasks.py book``: :func:`execute_missing` executes the notebooks the cache
  lacks, two at a time, exactly as myst-nb would.

Either way a notebook is executed once per change, and the build only reads.
The notebook stored is always myst-nb's own reading of the ``.md``, so the
hash matches the one the build computes. Each record keeps the wall seconds
and the kernel's CPU seconds (user + system, its children included) of the
execution; the chapters' budget holds the CPU seconds.

Command line (run with the project's virtualenv)::

    python -m tools.nbcache init              # create the cache database
    python -m tools.nbcache execute [-j 2]    # execute notebooks missing from the cache
    python -m tools.nbcache timings [--budget 60] [--book-only]   # per-notebook execution-time table
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "_config.yml"
TOC = ROOT / "_toc.yml"
NOTEBOOKS = ROOT / "notebooks"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def book_config() -> dict:
    """The parsed ``_config.yml``."""
    return yaml.safe_load(CONFIG.read_text(encoding="utf8")) or {}


def cache_path() -> Path:
    """Where the book build keeps its jupyter-cache."""
    rel = book_config().get("execute", {}).get("cache") or "_build/.jupyter_cache"
    return (ROOT / rel).resolve()


def execution_timeout() -> int:
    """Per-cell timeout of the book build, in seconds."""
    return int(book_config().get("execute", {}).get("timeout", 30))


def get_cache():
    """The book's jupyter-cache (created on first use)."""
    from jupyter_cache import get_cache as _get_cache

    return _get_cache(str(cache_path()))


def _md_config():
    from myst_parser.config.main import MdParserConfig

    parse = book_config().get("parse", {})
    return MdParserConfig(enable_extensions=set(parse.get("myst_enable_extensions", [])))


def read_source(md_path: Path) -> nbformat.NotebookNode:
    """Read a MyST notebook exactly as the book build (myst-nb) reads it."""
    from myst_nb.core.read import read_myst_markdown_notebook

    text = Path(md_path).read_text(encoding="utf8")
    return read_myst_markdown_notebook(text, config=_md_config(), add_source_map=True, path=str(md_path))


def book_notebooks() -> list[Path]:
    """The notebooks of the table of contents, in reading order (``.md`` paths)."""
    found = []

    def walk(node):
        if isinstance(node, dict):
            entry = node.get("file")
            if isinstance(entry, str) and entry.startswith("notebooks/"):
                found.append(ROOT / (entry if entry.endswith(".md") else entry + ".md"))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(yaml.safe_load(TOC.read_text(encoding="utf8")))
    return found


def all_notebooks() -> list[Path]:
    """Every ``notebooks/**/*.md``: the book's notebooks first, then the others."""
    in_book = book_notebooks()
    others = sorted(set(NOTEBOOKS.rglob("*.md")) - set(in_book))
    return [p for p in in_book if p.exists()] + [p for p in others if ".ipynb_checkpoints" not in p.parts]


def _same_code(a: str, b: str) -> bool:
    return [line.rstrip() for line in a.strip().splitlines()] == [line.rstrip() for line in b.strip().splitlines()]


def _store(cache, nb, md_path: Path, seconds: float, cpu_seconds: float | None = None, retries: int = 20):
    from jupyter_cache.base import CacheBundleIn
    from sqlalchemy.exc import OperationalError

    bundle = CacheBundleIn(nb, str(md_path), data={"execution_seconds": seconds, "cpu_seconds": cpu_seconds})
    for attempt in range(retries):
        try:
            return cache.cache_notebook_bundle(bundle, check_validity=False, overwrite=True)
        except OperationalError:  # the database is locked by the other worker
            if attempt == retries - 1:
                raise
            time.sleep(0.25 * (attempt + 1))
    return None


def store_outputs(md_path, executed_code_cells, seconds, widget_state=None, cpu_seconds=None) -> None:
    """Cache the outputs of an execution of ``md_path`` done elsewhere (by nbval).

    Parameters
    ----------
    md_path : path
        The notebook's MyST source.
    executed_code_cells : list of (source, outputs)
        The code cells in order, with the outputs their execution produced.
    seconds : float
        Wall time of the execution (shown in the timing table).
    widget_state : dict, optional
        The ipywidgets manager state at the end of the run.

    Raises
    ------
    ValueError
        If the executed cells do not match the code cells of ``md_path``.
    """
    md_path = Path(md_path).resolve()
    nb = read_source(md_path)
    code_cells = [cell for cell in nb.cells if cell.cell_type == "code"]
    if len(code_cells) != len(executed_code_cells):
        raise ValueError(
            f"{md_path}: {len(executed_code_cells)} executed code cells, the source has {len(code_cells)}"
        )
    for count, (cell, (source, outputs)) in enumerate(zip(code_cells, executed_code_cells), start=1):
        if not _same_code(cell.source, source):
            raise ValueError(f"{md_path}: code cell {count} of the .ipynb differs from the .md")
        cell.outputs = [nbformat.from_dict(dict(out)) for out in outputs]
        cell.execution_count = count
        for out in cell.outputs:
            if out.get("output_type") == "execute_result":
                out["execution_count"] = count
    if widget_state and widget_state.get("state"):
        nb.metadata["widgets"] = {WIDGET_STATE: widget_state}
    _store(get_cache(), nb, md_path, seconds, cpu_seconds)


def _children_cpu_seconds() -> float:
    """CPU seconds (user + system) used by this process's children that ended and were waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _execute_one(md_path: str) -> tuple[str, float, float, str | None]:
    """Execute one notebook as myst-nb would and store it when every cell ran.

    Runs in a pool worker, so the kernel is this process's only child: the
    growth of the children's CPU time is the kernel's CPU time (its own
    children included), counted when nbclient has shut the kernel down.
    Returns the source path, the wall and CPU seconds, and the error (None
    when every cell ran).
    """
    from jupyter_cache.executors.utils import single_nb_execution

    path = Path(md_path)
    nb = read_source(path)
    cpu_before = _children_cpu_seconds()
    result = single_nb_execution(nb, cwd=str(path.parent), timeout=execution_timeout(), allow_errors=False)
    cpu_seconds = _children_cpu_seconds() - cpu_before
    if result.err is not None:
        return md_path, result.time, cpu_seconds, result.exc_string or repr(result.err)
    _store(get_cache(), nb, path, result.time, cpu_seconds)
    return md_path, result.time, cpu_seconds, None


def is_cached(cache, md_path: Path) -> bool:
    """Whether the cache holds an execution of the current ``md_path``."""
    try:
        cache.match_cache_notebook(read_source(md_path))
    except KeyError:
        return False
    return True


def execute_missing(jobs: int = 2) -> int:
    """Execute the book notebooks the cache lacks, ``jobs`` at a time; returns the failure count."""
    cache = get_cache()
    todo = [p for p in book_notebooks() if p.exists() and not is_cached(cache, p)]
    if not todo:
        print("nbcache: every notebook is already executed and cached")
        return 0
    print(f"nbcache: executing {len(todo)} notebook(s), {jobs} at a time", flush=True)
    failures = 0
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
        for md_path, seconds, cpu_seconds, error in pool.map(_execute_one, map(str, todo)):
            rel = Path(md_path).relative_to(ROOT)
            timing = f"{cpu_seconds:.1f} CPU-s, {seconds:.1f} wall s"
            if error is None:
                print(f"nbcache: {rel} executed ({timing})", flush=True)
            else:
                failures += 1
                print(f"nbcache: {rel} FAILED ({timing})\n{error}", flush=True)
    return failures


def timings(budget: float, book_only: bool = False) -> int:
    """Print the execution time of every notebook; returns how many are over budget or not timed.

    The budget holds the kernel's CPU seconds, recorded by both ways of
    executing the notebooks (the nbval run of ``tasks.py test``, see
    ``tools/pytest_nbcache.py``, and :func:`execute_missing` of ``tasks.py
    book``), which other jobs on the machine do not inflate; wall seconds are
    shown beside them. A notebook the book build executed itself has no CPU
    record and is reported as such. The notebooks of ``_toc.yml`` come first,
    in reading order, then any other ``notebooks/**/*.md`` (marked as not in
    the table of contents).
    """
    cache = get_cache()
    rows, bad = [], 0
    in_book = set(book_notebooks())
    others = [] if book_only else [p for p in all_notebooks() if p not in in_book]
    for path in book_notebooks() + others:
        rel = str(path.relative_to(ROOT)) + ("" if path in in_book else " (not in _toc.yml)")
        if not path.exists():
            rows.append((rel, None, None, "missing source"))
            bad += 1
            continue
        try:
            record = cache.match_cache_notebook(read_source(path))
        except KeyError:
            rows.append((rel, None, None, "no successful execution of this version"))
            bad += 1
            continue
        data = record.data or {}
        wall, cpu = data.get("execution_seconds"), data.get("cpu_seconds")
        status = "ok"
        if cpu is None:
            status = "no CPU-time record (executed by the book build)"
        elif cpu > budget:
            status = f"OVER the {budget:g} CPU-s budget"
        bad += status != "ok"
        rows.append((rel, cpu, wall, status))
    width = max([len("notebook")] + [len(r[0]) for r in rows])
    print(f"\n{'notebook':<{width}}  {'CPU s':>8}  {'wall s':>8}  status (budget: {budget:g} CPU-s per notebook)")
    print(f"{'-' * width}  {'-' * 8}  {'-' * 8}  ------")
    totals = [0.0, 0.0]
    for rel, cpu, wall, status in rows:
        shown = ["-" if v is None else f"{v:8.1f}" for v in (cpu, wall)]
        totals = [t + (v or 0.0) for t, v in zip(totals, (cpu, wall))]
        print(f"{rel:<{width}}  {shown[0]:>8}  {shown[1]:>8}  {status}")
    print(f"{'total':<{width}}  {totals[0]:8.1f}  {totals[1]:8.1f}")
    return bad


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.nbcache", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("init", help="create the cache database")
    run = sub.add_parser("execute", help="execute the notebooks missing from the cache")
    run.add_argument("-j", "--jobs", type=int, default=2)
    table = sub.add_parser("timings", help="print the per-notebook execution-time table")
    table.add_argument("--budget", type=float, default=60.0)
    table.add_argument("--book-only", action="store_true", help="only the notebooks of _toc.yml")
    args = parser.parse_args(argv)
    if args.command == "init":
        get_cache().list_cache_records()
        return 0
    if args.command == "execute":
        return 1 if execute_missing(args.jobs) else 0
    return 1 if timings(args.budget, args.book_only) else 0


if __name__ == "__main__":
    sys.exit(main())
