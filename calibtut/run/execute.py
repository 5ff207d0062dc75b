"""Execute a notebook with papermill at a profile, into its own run directory."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import shutil
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from ._paths import RUN_DIR_ENV, find_root
from .artifacts import PROVENANCE, atomic_write_text, list_tables
from .profiles import check_profile
from .provenance import git_state, machine, package_versions


class NotebookFailed(RuntimeError):
    """A cell of the executed notebook raised; the message names the cell."""


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
    import jupytext

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
def _environment(name, value):
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


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


def run_notebook(notebook, profile="ci", parameters=None, *, out=None, fresh=False, progress=True,
                 log_output=False, kernel_name=None):
    """Execute ``notebook`` with papermill at ``profile`` and record its provenance.

    The notebook runs with its own folder as working directory and with the
    environment variable ``CALIBTUT_RUN_DIR`` pointing at the run directory, where
    :func:`calibtut.run.save_table` and :func:`calibtut.run.sweep` write. The run
    directory is a function of the notebook, the profile and the effective
    parameters, so running again resumes the sweeps of an interrupted run.

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
        Delete the run directory first (no resuming).
    progress : bool, default True
        Show papermill's progress bar.
    log_output : bool, default False
        Stream the notebook's outputs to the terminal.
    kernel_name : str, optional
        Jupyter kernel; default the notebook's kernelspec, else ``python3``.

    Returns
    -------
    pathlib.Path
        The run directory, holding ``<notebook>.ipynb`` (executed), the tables,
        ``sweep/`` and ``provenance.json``.

    Raises
    ------
    NotebookFailed
        If a cell raises; the message names the cell and the executed notebook.

    Examples
    --------
    >>> run_notebook("notebooks/000/01_intro.md", "ci", {"seed": 1})  # doctest: +SKIP
    PosixPath('.../_build/runs/000/01_intro/ci-1b2c3d4e')
    """
    import papermill
    from papermill.exceptions import PapermillExecutionError

    check_profile(profile)
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
    if run_dir.is_relative_to(root / "notebooks"):
        raise ValueError(f"out {run_dir} lies inside notebooks/; executed copies must stay out of the sources")
    if run_dir.exists() and any(run_dir.iterdir()) and not _is_run_dir(run_dir, output):
        raise ValueError(f"out {run_dir} is not empty and holds no calibtut run; choose another folder")
    if fresh and run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    for stale in [*run_dir.glob("*.csv"), run_dir / PROVENANCE]:
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
        **git_state(root),
        "packages": package_versions(),
        "machine": machine(),
    }
    started = datetime.now(timezone.utc)
    clock = time.perf_counter()
    error = None
    try:
        with _environment(RUN_DIR_ENV, str(run_dir)):
            papermill.execute_notebook(
                nb, str(output), parameters=injected, kernel_name=kernel_name, progress_bar=progress,
                log_output=log_output, cwd=str(path.parent),
            )
    except PapermillExecutionError as exc:
        error = _failure_message(exc, _relative(path, root), output)
    except BaseException as exc:
        record["status"] = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
        record["error"] = f"{type(exc).__name__}: {exc}"
        _finish(record, run_dir, started, clock)
        raise
    finally:
        _record_source_path(output, path)
    record["status"] = "failed" if error else "completed"
    if error:
        record["error"] = error
    _finish(record, run_dir, started, clock)
    if error:
        raise NotebookFailed(error)
    return run_dir


def _finish(record, run_dir, started, clock):
    record["started"] = started.isoformat(timespec="seconds")
    record["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    record["wall_time_s"] = round(time.perf_counter() - clock, 3)
    record["tables"] = list_tables(run_dir)
    atomic_write_text(run_dir / PROVENANCE, json.dumps(record, indent=2, default=str) + "\n")
