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

A chapter that fails under :func:`execute_missing` is stored too, with the
outputs of its cells up to and including the failing one, and its record says
so (``data["failure"]``): the build renders the page with its traceback, and
the book's Sphinx glue (``book/_ext/calibtut_book.py``) puts a marker at its
top from ``_build/failed-chapters.json``, which :func:`execute_missing`
rewrites at every run. A failed execution is never kept as a result:
:func:`execute_missing` executes it again at its next run even when the chapter
did not change, and :func:`forget_failed` (called by the nbval plugin before
``tasks.py test`` executes the notebooks) removes every failed execution and
the list, so the strict build of the test command executes a chapter that
failed under nbval itself and fails as it would without this cache.

Command line (run with the project's virtualenv)::

    python -m tools.nbcache init              # create the cache database
    python -m tools.nbcache execute [-j 2]    # execute notebooks missing from the cache (or failed)
    python -m tools.nbcache timings [--budget 60] [--book-only]   # per-notebook execution-time table
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import resource
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "_config.yml"
TOC = ROOT / "_toc.yml"
NOTEBOOKS = ROOT / "notebooks"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
#: The chapters whose last execution by :func:`execute_missing` failed, keyed by
#: docname; ``book/_ext/calibtut_book.py`` reads it next to the HTML folder.
FAILED_CHAPTERS = ROOT / "_build" / "failed-chapters.json"
#: How a reader reruns a chapter alone (see ``calibtut/run``).
RUNNER = "python -m calibtut.run"
#: Cell tags under which the book does not show a cell's output (or only folded).
OUTPUT_HIDING_TAGS = frozenset(
    {"remove-cell", "remove_cell", "remove-output", "remove_output", "hide-cell", "hide-output"}
)
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


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


def _store(cache, nb, md_path: Path, seconds: float, cpu_seconds: float | None = None, failure: dict | None = None,
           retries: int = 20):
    from jupyter_cache.base import CacheBundleIn
    from sqlalchemy.exc import OperationalError

    data = {"execution_seconds": seconds, "cpu_seconds": cpu_seconds}
    if failure is not None:
        data["failure"] = failure
    bundle = CacheBundleIn(nb, str(md_path), data=data)
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


def source_sha256(md_path: Path) -> str:
    """The sha256 of a notebook's source, which tells a failure record from one of an older version."""
    return hashlib.sha256(Path(md_path).read_bytes()).hexdigest()


def chapter_failure(md_path: Path, nb, cell_index: int | None, error: BaseException, trace: str | None) -> dict:
    """Describe a failed execution of ``md_path`` for the failure list and the page's marker.

    Parameters
    ----------
    md_path : Path
        The notebook's MyST source, inside the repository.
    nb : nbformat.NotebookNode
        The notebook as executed (outputs up to and including the failing cell).
    cell_index : int or None
        Index in ``nb.cells`` of the cell that was running, None when no cell ran.
    error : BaseException
        What the execution raised (nbclient's ``CellExecutionError``,
        ``CellTimeoutError``, ``DeadKernelError``, ...).
    trace : str or None
        The Python traceback of ``error``.

    Returns
    -------
    dict
        ``docname``, ``source``, ``cell`` (the code cell's number, from 1),
        ``line`` (of its fence in the source), ``error`` and ``message`` (the
        exception's name and the first line of its message, ``...`` marking
        the lines left out), ``summary`` (all that in a phrase:
        ``code cell 7 (line 120 of notebooks/x.md) raised AssertionError: ...``),
        ``traceback`` (without colours),
        ``shown`` (whether the page shows that traceback in the cell's output),
        ``command`` (the runner command that reproduces it) and
        ``source_sha256``.
    """
    rel = Path(md_path).resolve().relative_to(ROOT).as_posix()
    cell = None if cell_index is None else nb.cells[cell_index]
    raised = [out for out in (cell.get("outputs", []) if cell else []) if out.get("output_type") == "error"]
    if raised:
        name, message = raised[0]["ename"], raised[0]["evalue"]
        text = ANSI.sub("", "\n".join(raised[0]["traceback"]))
    else:  # a timeout or a dead kernel: the cell shows no error output
        name, message, text = type(error).__name__, str(error), str(error) or trace or ""
    hidden = bool(cell is not None and OUTPUT_HIDING_TAGS & set(cell.metadata.get("tags", [])))
    lines = message.strip().splitlines()
    message = (" ".join(lines[0].split()) if lines else "") + (" ..." if len(lines) > 1 else "")
    error_text = name + (f": {message}" if message else "")
    if cell is None:
        number = line = None
        summary = f"the kernel stopped before the first code cell of {rel} ran ({error_text})"
    else:
        number = sum(c.cell_type == "code" for c in nb.cells[: cell_index + 1])
        line = nb.metadata["source_map"][cell_index]
        summary = f"code cell {number} (line {line} of {rel}) raised {error_text}"
    return {
        "docname": rel.removesuffix(".md"),
        "source": rel,
        "cell": number,
        "line": line,
        "error": name,
        "message": message,
        "summary": summary,
        "traceback": text,
        "shown": bool(raised) and not hidden,
        "command": f"{RUNNER} {rel}",
        "source_sha256": source_sha256(md_path),
    }


def _execute_one(md_path: str) -> tuple[str, float, float, dict | None]:
    """Execute one notebook as myst-nb would and store it, failed or not.

    Runs in a pool worker, so the kernel is this process's only child: the
    growth of the children's CPU time is the kernel's CPU time (its own
    children included), counted when nbclient has shut the kernel down.
    Returns the source path, the wall and CPU seconds, and the failure (None
    when every cell ran).
    """
    from jupyter_cache.executors.utils import single_nb_execution

    path = Path(md_path)
    nb = read_source(path)
    started: list[int] = []
    cpu_before, start = _children_cpu_seconds(), time.perf_counter()
    try:
        result = single_nb_execution(
            nb, cwd=str(path.parent), timeout=execution_timeout(), allow_errors=False,
            on_cell_execute=lambda cell, cell_index: started.append(cell_index),
        )
        error, trace = result.err, result.exc_string
    except Exception as exc:  # noqa: BLE001 - a kernel that died or never started: jupyter-cache lets it through
        error, trace = exc, traceback.format_exc()
    seconds, cpu_seconds = time.perf_counter() - start, _children_cpu_seconds() - cpu_before
    failure = None
    if error is not None:
        failure = chapter_failure(path, nb, started[-1] if started else None, error, trace)
    _store(get_cache(), nb, path, seconds, cpu_seconds, failure)
    return md_path, seconds, cpu_seconds, failure


def _needs_execution(cache, md_path: Path) -> bool:
    """Whether the cache lacks a successful execution of the current ``md_path``."""
    try:
        record = cache.match_cache_notebook(read_source(md_path))
    except KeyError:
        return True
    return bool((record.data or {}).get("failure"))


def execute_missing(jobs: int = 2) -> int:
    """Execute the book notebooks that the cache lacks or holds a failed execution of, ``jobs`` at a time.

    Every execution is stored, a failed one with its outputs up to the failing
    cell; the failures are written to :data:`FAILED_CHAPTERS` (an empty object
    when there are none). A failed chapter is executed again at every run, so
    that a fix outside the notebook (in the package, the data) is seen.

    Returns
    -------
    int
        The number of chapters that failed.
    """
    cache = get_cache()
    FAILED_CHAPTERS.unlink(missing_ok=True)
    todo = [p for p in book_notebooks() if p.exists() and _needs_execution(cache, p)]
    failures: dict[str, dict] = {}
    if not todo:
        print("nbcache: every notebook is already executed and cached")
    else:
        print(f"nbcache: executing {len(todo)} notebook(s), {jobs} at a time", flush=True)
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
        for md_path, seconds, cpu_seconds, failure in pool.map(_execute_one, map(str, todo)):
            rel = Path(md_path).relative_to(ROOT)
            timing = f"{cpu_seconds:.1f} CPU-s, {seconds:.1f} wall s"
            if failure is None:
                print(f"nbcache: {rel} executed ({timing})", flush=True)
                continue
            failures[failure["docname"]] = failure
            print(f"nbcache: {rel} FAILED ({timing}): {failure['summary']}; stored with its outputs so far\n"
                  f"{failure['traceback']}", flush=True)
    FAILED_CHAPTERS.parent.mkdir(parents=True, exist_ok=True)
    FAILED_CHAPTERS.write_text(json.dumps(failures, indent=1) + "\n", encoding="utf8")
    return len(failures)


def forget_failed() -> int:
    """Remove every failed execution from the cache, and :data:`FAILED_CHAPTERS`; returns how many.

    The nbval plugin calls it before ``tasks.py test`` executes the notebooks:
    a chapter that passes is stored afresh, one that fails is left to the strict
    build, which executes it itself and fails.
    """
    cache = get_cache()
    failed = [record.pk for record in cache.list_cache_records() if (record.data or {}).get("failure")]
    for pk in failed:
        cache.remove_cache(pk)
    FAILED_CHAPTERS.unlink(missing_ok=True)
    return len(failed)


def timings(budget: float, book_only: bool = False) -> int:
    """Print the execution time of every notebook; returns how many failed, are over budget or not timed.

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
            rows.append((rel, None, None, "no execution of this version"))
            bad += 1
            continue
        data = record.data or {}
        wall, cpu, failure = data.get("execution_seconds"), data.get("cpu_seconds"), data.get("failure")
        status = "ok"
        if failure:
            status = "FAILED" + ("" if failure["cell"] is None else f" in code cell {failure['cell']}")
        elif cpu is None:
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
    run = sub.add_parser("execute", help="execute the notebooks missing from the cache or whose execution failed")
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
