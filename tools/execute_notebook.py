"""Execute one prepared notebook in a kernel of this interpreter and report what happened, as JSON.

The worker of ``tools/variants.py``: it runs in a process started with the
environment of one numerics variant (so that the kernel it starts inherits
that environment before it imports numpy or torch), executes every cell even
after an error, and writes the cells that raised, the kernel's CPU seconds and
the last cell's standard output to a JSON file. It needs only nbformat and
nbclient, so that it can run under another interpreter (another torch) than
the repository's ``.venv``::

    python -m tools.execute_notebook prepared.ipynb result.json --cwd notebooks/part [--timeout 300]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def _children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _errors(nb) -> list[dict]:
    """``index`` (among all cells), ``ename`` and ``evalue`` of every cell whose output is an error."""
    found = []
    for index, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if out.get("output_type") == "error":
                found.append({"index": index, "ename": out.get("ename"), "evalue": out.get("evalue")})
                break
    return found


def _last_stdout(nb) -> str:
    cell = nb.cells[-1]
    return "".join(out.get("text", "") for out in cell.get("outputs", [])
                   if out.get("output_type") == "stream" and out.get("name") == "stdout")


def execute(path: Path, cwd: Path, timeout: int) -> dict:
    """Execute the notebook at ``path`` with errors allowed; the kernel's CPU time is measured once it is gone."""
    nb = nbformat.read(path, as_version=4)
    before = _children_cpu_seconds()
    start = time.perf_counter()
    client = NotebookClient(nb, timeout=timeout, allow_errors=True, kernel_name="python3",
                            resources={"metadata": {"path": str(cwd)}})
    crashed = None
    try:
        client.execute()
    except Exception as exc:  # a dead kernel or a timeout: reported as the chapter's failure
        crashed = f"{type(exc).__name__}: {exc}"
    return {
        "errors": _errors(nb),
        "crashed": crashed,
        "wall_s": time.perf_counter() - start,
        "cpu_s": _children_cpu_seconds() - before,
        "last_stdout": _last_stdout(nb),
        "python": sys.executable,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.execute_notebook", description=__doc__.split("\n\n")[0])
    parser.add_argument("notebook", type=Path)
    parser.add_argument("result", type=Path)
    parser.add_argument("--cwd", type=Path, required=True, help="the kernel's working directory")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per cell (default 300)")
    args = parser.parse_args(argv)
    result = execute(args.notebook, args.cwd, args.timeout)
    args.result.write_text(json.dumps(result, indent=1), encoding="utf8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
