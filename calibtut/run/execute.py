"""Execute a notebook with papermill at a profile, into its own run directory."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import shutil
import sys
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from calibtut.numerics import DEFAULT_PROFILE, profile_environment
from calibtut.run._paths import GZIP_SUFFIX, RUN_DIR_ENV, SWEEP_DIR_ENV, find_root
from calibtut.run.artifacts import PROVENANCE, SWEEPS, atomic_write_text, list_tables
from calibtut.run.engine import (
    GPU_WORKERS_ENV,
    SCHEDULER_ENV,
    THREADS_ENV,
    WORKERS_ENV,
    Engine,
)
from calibtut.run.profiles import check_profile
from calibtut.run.progress import PROGRESS_LOG_ENV
from calibtut.run.provenance import git_state, libraries, machine, package_versions
from calibtut.run.store import SweepStore

__all__ = [
    "FreshRefused",
    "KERNEL_MANAGER",
    "NotebookFailed",
    "RunInterrupted",
    "default_run_dir",
    "engine_environment",
    "format_summary",
    "notebook_identity",
    "parameter_defaults",
    "params_hash",
    "parse_value",
    "read_notebook",
    "run_notebook",
    "sweep_folder",
]


#: The kernel manager papermill uses, by import string (``jupyter_client`` comes with the ``run`` extra).
KERNEL_MANAGER = "calibtut.run.kernel.SettlingKernelManager"


class NotebookFailed(RuntimeError):
    """A cell of the executed notebook raised; the message names the cell.

    ``run_dir`` is the run directory, whose ``provenance.json`` says what the
    run stored before the cell raised.
    """

    def __init__(self, message, run_dir):
        super().__init__(message)
        self.run_dir = Path(run_dir)


class RunInterrupted(KeyboardInterrupt):
    """The run was stopped (Ctrl-C, SIGTERM) and its kernel shut down.

    ``run_dir`` is the run directory, whose ``provenance.json`` says what the
    run stored before it was stopped. A ``KeyboardInterrupt``, so that code
    that stops on Ctrl-C stops here too.
    """

    def __init__(self, run_dir):
        super().__init__(f"the run was interrupted; what it finished is recorded in {run_dir}")
        self.run_dir = Path(run_dir)


class FreshRefused(ValueError):
    """``fresh=True`` would delete sweep stores under ``results/``; nothing was deleted."""


def parse_value(text):
    """Parse a ``-p`` value the way papermill's command line does.

    ``True``/``False``/``None``, then int, then float, else the string itself.

    Examples
    --------
    >>> parse_value("3"), parse_value("0.5"), parse_value("True"), parse_value("adult")
    (3, 0.5, True, 'adult')
    """
    if not isinstance(text, str):
        raise TypeError(f"value must be a string, got {type(text).__name__}")
    if text in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[text]
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _runner_tools():
    """Import papermill and jupytext, or say which extra installs them."""
    try:
        import jupytext
        import papermill
    except ImportError as exc:
        raise ImportError(f"running a notebook needs the 'run' extra ({exc.name} is missing): "
                          f"pip install \"calibtut[run]\"") from None
    return jupytext, papermill


def read_notebook(path):
    """Read a MyST ``.md`` (through jupytext) or ``.ipynb`` notebook as a NotebookNode.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "nb.md"
    >>> _ = p.write_text("# Title\\n\\n```{code-cell} ipython3\\nx = 1\\n```\\n")
    >>> [c.cell_type for c in read_notebook(p).cells]
    ['markdown', 'code']
    """
    jupytext, _ = _runner_tools()
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"notebook {path} does not exist")
    if path.suffix not in (".md", ".ipynb"):
        raise ValueError(f"notebook must be a .md (MyST) or .ipynb file, got {path.name}")
    return jupytext.read(path)


def parameter_defaults(nb):
    """Names and literal default values assigned in the cell tagged ``parameters``.

    Raises ``ValueError`` when the notebook has no (or several) such cells.
    Defaults that are not literals are reported as their source text.

    Examples
    --------
    >>> import nbformat
    >>> cell = nbformat.v4.new_code_cell('profile = "ci"\\nseed = 0', metadata={"tags": ["parameters"]})
    >>> parameter_defaults(nbformat.v4.new_notebook(cells=[cell]))
    {'profile': 'ci', 'seed': 0}
    """
    cells = [c for c in nb.cells if c.cell_type == "code" and "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise ValueError(f"the notebook must have exactly one code cell tagged 'parameters', found {len(cells)}")
    source = cells[0].source
    defaults = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Name):
                try:
                    defaults[target.id] = ast.literal_eval(value)
                except ValueError:
                    defaults[target.id] = ast.get_source_segment(source, value)
    return defaults


def params_hash(params):
    """Short hash of a parameter dict (order does not matter).

    Examples
    --------
    >>> params_hash({"seed": 1, "n": 2}) == params_hash({"n": 2, "seed": 1})
    True
    """
    text = json.dumps(params, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def notebook_identity(path, root):
    """``(part, notebook)`` names of a notebook: its folder name and file stem.

    Examples
    --------
    >>> notebook_identity("notebooks/002/03_qr.md", ".")
    ('002', '03_qr')
    """
    path = Path(path)
    return path.parent.name or Path(root).resolve().name, path.stem


def default_run_dir(root, part, notebook, profile, params):
    """``<root>/_build/runs/<part>/<notebook>/<profile>-<hash of the other parameters>``.

    Examples
    --------
    >>> default_run_dir("/repo", "002", "03_qr", "ci", {"seed": 0}).as_posix()
    '/repo/_build/runs/002/03_qr/ci-de7d7744'
    """
    others = {k: v for k, v in params.items() if k != "profile"}
    return Path(root) / "_build" / "runs" / part / notebook / f"{profile}-{params_hash(others)}"


@contextmanager
def _environment(values):
    """Set environment variables (None: unset) for the kernel papermill starts, then restore them."""
    old = {name: os.environ.get(name) for name in values}
    try:
        for name, value in values.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = str(value)
        yield
    finally:
        for name, value in old.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def engine_environment(engine):
    """The environment variables through which every sweep of the notebook gets ``engine``.

    Examples
    --------
    >>> from calibtut.run.engine import Engine
    >>> engine_environment(Engine(workers=2))["CALIBTUT_WORKERS"]
    '2'
    >>> engine_environment(Engine())["CALIBTUT_WORKERS"] is None
    True
    """
    return {
        WORKERS_ENV: None if engine.workers is None else str(engine.workers),
        SCHEDULER_ENV: engine.scheduler,
        THREADS_ENV: str(engine.threads_per_worker),
        GPU_WORKERS_ENV: None if engine.workers is None else str(engine.gpu_workers),
    }


def sweep_folder(root, part, name, profile, injected, run_dir):
    """Where the notebook's sweeps keep their stores.

    A full run at the notebook's default parameters (the run that is
    published) keeps them in ``results/<part>/<nb>/sweeps/``, so that they can
    be committed and a run continued in another clone; every other run keeps
    them in ``<run dir>/sweep/``.

    Examples
    --------
    >>> sweep_folder("/r", "p", "01_a", "full", {"profile": "full"}, "/r/_build/x").as_posix()
    '/r/results/p/01_a/sweeps'
    >>> sweep_folder("/r", "p", "01_a", "full", {"profile": "full", "seed": 3}, "/r/_build/x").as_posix()
    '/r/_build/x/sweep'
    """
    if profile == "full" and set(injected) == {"profile"}:
        return Path(root) / "results" / part / name / "sweeps"
    return Path(run_dir) / "sweep"


class _Echo:
    """Echo the lines appended to a file to stderr, from a background thread, while a run lasts."""

    def __init__(self, path, enabled):
        self.path, self.enabled = Path(path), enabled
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._follow, daemon=True)

    def _follow(self):
        position = self.path.stat().st_size if self.path.is_file() else 0
        while True:
            stopping = self.stop.wait(1.0)
            if self.path.is_file():
                with open(self.path, encoding="utf-8") as handle:
                    handle.seek(position)
                    text = handle.read()
                    position = handle.tell()
                if text:
                    sys.stderr.write(text)
                    sys.stderr.flush()
            if stopping:
                return

    def __enter__(self):
        if self.enabled:
            self.thread.start()
        return self

    def __exit__(self, *exc):
        if self.enabled:
            self.stop.set()
            self.thread.join(timeout=5)


def _relative(path, root):
    try:
        return Path(path).resolve().relative_to(root).as_posix()
    except ValueError:
        return str(Path(path).resolve())


def _source_cell_number(output):
    """1-based position, among the source's code cells, of the first cell that raised."""
    import nbformat

    try:
        cells = nbformat.read(output, as_version=4).cells
    except (OSError, ValueError):
        return None
    number = 0
    for cell in cells:
        if cell.cell_type != "code" or "injected-parameters" in cell.get("metadata", {}).get("tags", []):
            continue
        number += 1
        if any(out.get("output_type") == "error" for out in cell.get("outputs", [])):
            return number
    return None


def _is_run_dir(folder, output):
    return (folder / PROVENANCE).is_file() or (folder / "sweep").is_dir() or output.is_file()


def _record_source_path(output, source):
    """Replace the in-memory notebook papermill recorded as ``input_path`` by the source path."""
    import nbformat

    if not output.is_file():
        return
    nb = nbformat.read(output, as_version=4)
    if "papermill" in nb.metadata:
        nb.metadata.papermill["input_path"] = str(source)
        atomic_write_text(output, nbformat.writes(nb))


def _failure_message(exc, notebook, output):
    lines = (exc.source or "").strip().splitlines()
    snippet = "\n".join(f"    {line}" for line in lines[:8]) + ("\n    ..." if len(lines) > 8 else "")
    number = _source_cell_number(output)
    where = f"code cell {number} of the source" if number else f"cell {exc.cell_index}"
    return (
        f"notebook {notebook} failed in {where} (execution count {exc.exec_count}): {exc.ename}: {exc.evalue}\n"
        f"  cell source:\n{snippet}\n"
        f"  executed notebook with the full traceback: {output}"
    )


def _refuse_fresh_over_results(stores, root):
    """Raise :class:`FreshRefused` when the sweep stores lie under ``results/`` and hold files."""
    results = Path(root) / "results"
    files = sorted(p for p in stores.rglob("*") if p.is_file()) if stores.is_dir() else []
    if not stores.is_relative_to(results) or not files:
        return
    folder = _relative(stores, root)
    listed = "\n".join(f"    {_relative(p, root)}" for p in files)
    raise FreshRefused(
        f"--fresh (fresh=True) would delete this run's sweep stores, which lie under results/:\n{listed}\n"
        f"--fresh never deletes anything under results/; nothing was deleted. Instead:\n"
        f"  - resume from them: run the same command without --fresh (only missing or failed tasks "
        f"are computed);\n"
        f"  - start over: move or delete them yourself (`git rm -r {folder}` once committed, "
        f"`rm -r {folder}` otherwise), then run again;\n"
        f"  - or run with other parameters (-p NAME VALUE), whose stores live in the run directory "
        f"under _build/."
    )


#: A line of a code cell that starts an ``assert`` statement.
_ASSERT = re.compile(r"^\s*assert\b", re.MULTILINE)


def _assert_cells(output):
    """Code cells of the executed notebook holding an ``assert``: how many, how many ran, how many passed."""
    import nbformat

    try:
        cells = nbformat.read(output, as_version=4).cells
    except (OSError, ValueError):  # the kernel did not start: nothing ran
        cells = []
    asserting = [c for c in cells if c.cell_type == "code" and _ASSERT.search(c.source)]
    ran = [c for c in asserting if c.get("execution_count") is not None]
    passed = [c for c in ran if not any(o.get("output_type") == "error" for o in c.get("outputs", []))]
    return {"cells": len(asserting), "ran": len(ran), "passed": len(passed)}


def _other_stores(stores, root, recorded):
    """Finished and failed tasks of each store in the sweep folder that no finished sweep of the run recorded.

    These are the stores of a sweep that failed or was interrupted (its
    finished tasks are kept), or of a sweep that this run did not reach.
    """
    if not stores.is_dir():
        return {}
    known = {(Path(root) / r).resolve() for r in recorded if r}
    counts = {}
    for path in sorted([*stores.glob("*.jsonl"), *stores.glob("*.jsonl" + GZIP_SUFFIX)]):
        if path.resolve() in known:
            continue
        try:
            done, failed = SweepStore(path).load(repair=False)
        except ValueError as exc:  # damaged: say so, the next run that opens it will too
            counts[_relative(path, root)] = {"error": str(exc)}
            continue
        counts[_relative(path, root)] = {"finished": len(done), "failed": len(failed)}
    return counts


def format_summary(summary):
    """The lines the runner prints at the end of a run, from the ``summary`` of its ``provenance.json``.

    Parameters
    ----------
    summary : dict
        ``read_provenance(run_dir)["summary"]``: the run's ``status`` and
        ``wall_time_s``; per sweep that finished, its ``tasks``,
        ``computed_now`` and ``from_store``; the finished and failed tasks in
        the ``other_stores`` of the sweep folder (a sweep that failed, was
        interrupted or was not reached); the ``tables`` written;
        and ``checks``, the code cells holding an ``assert``: how many, how
        many ran and how many of those passed.

    Returns
    -------
    str

    Examples
    --------
    >>> summary = {"status": "completed", "wall_time_s": 12.34,
    ...            "sweeps": {"draw": {"tasks": 4, "computed_now": 3, "from_store": 1}},
    ...            "other_stores": {}, "tables": ["calls", "draws"],
    ...            "checks": {"cells": 2, "ran": 2, "passed": 2}}
    >>> print(format_summary(summary))
    summary: completed in 12.3 s
      sweep draw: 4 tasks, 3 computed now, 1 read from the store
      tables written: calls, draws
      checks: 2 code cells with an assert ran, all passed
    """
    if not isinstance(summary, dict):
        raise TypeError(f"summary must be the dict recorded in provenance.json, got {type(summary).__name__}")
    status, seconds = summary["status"], summary["wall_time_s"]
    lines = [f"summary: {status} {'in' if status == 'completed' else 'after'} {seconds:.1f} s"]
    for label, sweep in summary["sweeps"].items():
        lines.append(f"  sweep {label}: {_count(sweep['tasks'], 'task')}, {sweep['computed_now']} computed now, "
                     f"{sweep['from_store']} read from the store")
    for path, counts in summary["other_stores"].items():
        if "error" in counts:
            lines.append(f"  store {path}: cannot be read: {counts['error']}")
        else:
            failed = f", {counts['failed']} failed" if counts["failed"] else ""
            lines.append(f"  store {path}: {_count(counts['finished'], 'finished task')} stored{failed} "
                         f"(its sweep did not finish in this run)")
    lines.append(f"  tables written: {', '.join(summary['tables']) or 'none'}")
    checks = summary["checks"]
    if not checks["cells"]:
        lines.append("  checks: no code cell holds an assert")
    else:
        ran = f"{checks['ran']} of {checks['cells']}" if checks["ran"] < checks["cells"] else str(checks["ran"])
        cells = "code cell" if checks["cells"] == 1 else "code cells"
        failed = checks["ran"] - checks["passed"]
        verdict = "all passed" if not failed else f"{checks['passed']} passed, {failed} raised"
        lines.append(f"  checks: {ran} {cells} with an assert ran, {verdict}")
    return "\n".join(lines)


def _count(n, noun):
    return f"{n} {noun}" + ("" if n == 1 else "s")


def run_notebook(notebook, profile="ci", parameters=None, *, out=None, fresh=False, progress=True,
                 log_output=False, kernel_name=None, engine=None, numerics=DEFAULT_PROFILE):
    """Execute ``notebook`` with papermill at ``profile`` and record its provenance.

    The notebook runs with its own folder as working directory and with the
    environment variable ``CALIBTUT_RUN_DIR`` pointing at the run directory, where
    :func:`calibtut.run.save_table` and :func:`calibtut.run.sweep` write. The run
    directory is a function of the notebook, the profile and the effective
    parameters, and the sweeps keep their stores where the next run finds them
    (see :func:`sweep_folder`), so running again resumes an interrupted run.
    Every sweep of the notebook runs on ``engine``, and reports its progress
    to this process's stderr.

    Parameters
    ----------
    notebook : str or path-like
        A MyST ``.md`` notebook (read with jupytext) or an ``.ipynb``.
    profile : {"ci", "full"}, default "ci"
        Injected as the ``profile`` parameter.
    parameters : dict, optional
        Other parameters to inject; each must be assigned in the ``parameters`` cell.
    out : str or path-like, optional
        Run directory; default ``_build/runs/<part>/<notebook>/<profile>-<hash>``.
    fresh : bool, default False
        Delete the run directory first, and with it the sweep stores kept
        there, so that nothing is resumed. Nothing under ``results/`` is ever
        deleted: when the sweeps keep their stores in
        ``results/<part>/<nb>/sweeps/`` (a full run at the default
        parameters, see :func:`sweep_folder`) and that folder holds files,
        :class:`FreshRefused` is raised before anything is deleted.
    progress : bool, default True
        Show papermill's progress bar and the sweeps' progress lines.
    log_output : bool, default False
        Stream the notebook's outputs to the terminal.
    kernel_name : str, optional
        Jupyter kernel; default the notebook's kernelspec, else ``python3``.
    engine : calibtut.run.engine.Engine, optional
        Where the sweeps run (default: serial, unless the environment already
        asks for workers); see :func:`calibtut.run.engine.resolve_engine`.
    numerics : {"reference", "native"}, default "reference"
        The numerics profile of the kernel and of the sweeps' local workers
        (:mod:`calibtut.numerics`): ``"reference"`` limits every library's
        CPU kernels to AVX2 and runs one thread, so that the run gives the
        same bits on any x86-64 machine; ``"native"`` uses the CPU's fastest
        kernels and the libraries' own thread counts.

    Returns
    -------
    pathlib.Path
        The run directory, holding ``<notebook>.ipynb`` (executed), the tables,
        ``sweep/`` and ``provenance.json``, whose ``summary`` says what the run
        did (see :func:`format_summary`), also when it failed or was stopped.

    Raises
    ------
    NotebookFailed
        If a cell raises; the message names the cell and the executed notebook.
    RunInterrupted
        On Ctrl-C (or a SIGTERM that the caller turns into ``KeyboardInterrupt``):
        the running cell is interrupted and the kernel shut down once it has
        answered (see :mod:`calibtut.run.kernel`); finished sweep tasks are stored.
    FreshRefused
        If ``fresh`` would delete sweep stores under ``results/``.

    Examples
    --------
    >>> run_notebook("notebooks/000/01_intro.md", "ci", {"seed": 1})  # doctest: +SKIP
    PosixPath('.../_build/runs/000/01_intro/ci-1b2c3d4e')
    """
    _, papermill = _runner_tools()
    from papermill.exceptions import PapermillExecutionError

    check_profile(profile)
    numerics_env = profile_environment(numerics)
    parameters = dict(parameters or {})
    for name in parameters:
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"parameter names must be identifiers, got {name!r}")
    if "profile" in parameters:
        raise ValueError("pass the profile as the profile argument, not in parameters")
    path = Path(notebook).resolve()
    nb = read_notebook(path)
    defaults = parameter_defaults(nb)
    unknown = sorted(set(parameters) - set(defaults))
    if unknown:
        raise ValueError(
            f"unknown parameter(s) {unknown} for {path.name}; its parameters cell assigns {sorted(defaults)}"
        )
    if "profile" not in defaults:
        raise ValueError(f"the parameters cell of {path.name} must assign profile (e.g. profile = \"ci\")")
    injected = {"profile": profile, **parameters}
    effective = {**defaults, **injected}
    root = find_root(path.parent, required=False) or Path.cwd().resolve()
    part, name = notebook_identity(path, root)
    run_dir = Path(out).resolve() if out is not None else default_run_dir(root, part, name, profile, effective)
    output = run_dir / f"{name}.ipynb"
    for kept in ("notebooks", "results"):
        if run_dir.is_relative_to(root / kept):
            raise ValueError(f"out {run_dir} lies inside {kept}/; run directories stay out of the sources and "
                             f"of the published results (--publish copies a full run into results/)")
    if run_dir.exists() and any(run_dir.iterdir()) and not _is_run_dir(run_dir, output):
        raise ValueError(f"out {run_dir} is not empty and holds no calibtut run; choose another folder")
    stores = sweep_folder(root, part, name, profile, injected, run_dir)
    if fresh:
        _refuse_fresh_over_results(stores, root)
        if run_dir.exists():
            shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    for stale in [*run_dir.glob("*.csv"), run_dir / PROVENANCE, run_dir / SWEEPS]:
        stale.unlink(missing_ok=True)
    if kernel_name is None and not nb.metadata.get("kernelspec", {}).get("name"):
        kernel_name = "python3"

    record = {
        "status": "running",
        "notebook_path": _relative(path, root),
        "part": part,
        "notebook": name,
        "profile": profile,
        "parameters": effective,
        "injected_parameters": injected,
        "run_dir": _relative(run_dir, root),
        "sweep_stores": _relative(stores, root),
        "engine": (engine or Engine()).describe(),
        **git_state(root),
        "packages": package_versions(),
        "libraries": libraries(),
        "machine": machine(),
        "numerics": {"profile": numerics, "environment": {k: v for k, v in numerics_env.items() if v}},
    }
    started = datetime.now(timezone.utc)
    clock = time.perf_counter()
    error = None
    try:
        env = {**numerics_env, RUN_DIR_ENV: run_dir, SWEEP_DIR_ENV: stores, PROGRESS_LOG_ENV: run_dir / "progress.log",
               **(engine_environment(engine) if engine is not None else {})}
        with _environment(env), _Echo(run_dir / "progress.log", progress):
            papermill.execute_notebook(
                nb, str(output), parameters=injected, kernel_name=kernel_name, progress_bar=progress,
                log_output=log_output, cwd=str(path.parent), kernel_manager_class=KERNEL_MANAGER,
            )
    except PapermillExecutionError as exc:
        error = _failure_message(exc, _relative(path, root), output)
    except BaseException as exc:
        record["status"] = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
        record["error"] = f"{type(exc).__name__}: {exc}"
        _finish(record, run_dir, output, stores, root, started, clock)
        if isinstance(exc, KeyboardInterrupt):
            raise RunInterrupted(run_dir) from None
        raise
    finally:
        _record_source_path(output, path)
    record["status"] = "failed" if error else "completed"
    if error:
        record["error"] = error
    _finish(record, run_dir, output, stores, root, started, clock)
    if error:
        raise NotebookFailed(error, run_dir)
    return run_dir


def _finish(record, run_dir, output, stores, root, started, clock):
    record["started"] = started.isoformat(timespec="seconds")
    record["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    record["wall_time_s"] = round(time.perf_counter() - clock, 3)
    record["tables"] = list_tables(run_dir)
    if (run_dir / SWEEPS).is_file():  # what computed the tasks, which a resumed run may not have
        record["sweeps"] = json.loads((run_dir / SWEEPS).read_text(encoding="utf-8"))
    record["summary"] = {
        "status": record["status"],
        "wall_time_s": record["wall_time_s"],
        "sweeps": {label: {k: s[k] for k in ("tasks", "computed_now", "from_store")}
                   for label, s in record.get("sweeps", {}).items()},
        "other_stores": _other_stores(stores, root, [s.get("store") for s in record.get("sweeps", {}).values()]),
        "tables": record["tables"],
        "checks": _assert_cells(output),
    }
    atomic_write_text(run_dir / PROVENANCE, json.dumps(record, indent=2, default=str) + "\n")
