"""A Colab-like check: the notebooks' own install cell beside a preinstalled, older torch.

Colab runs a notebook in a Python that already holds a CUDA build of torch,
numpy, pandas, matplotlib, scipy, scikit-learn and ipywidgets. The first cell
of every notebook installs calibtut there; it must add what is missing and
replace none of those. It installs under ``constraints-colab.txt``: the lock
(``constraints.txt``) less that host stack, so what it adds is what the book
is tested with and what the host has stays.

* offline: every notebook starts with the same install cell, and
  ``constraints-colab.txt`` is exactly the lock less the host stack (so
  ``python3 tasks.py lock`` cannot leave it stale);
* opt-in (``CALIBTUT_INSTALL_TESTS=1``, like the torch part of the
  minimum-versions check in ``tests/test_packaging.py``; it downloads torch
  with its CUDA libraries, about 2 GB): a fresh environment gets the oldest
  torch the package declares and older numpy, pandas, matplotlib, scipy,
  scikit-learn and ipywidgets than the lock (Colab's in 2025); the install
  cell, taken from a notebook and run with ``google.colab`` and
  ``get_ipython()`` stood in for, installs this checkout (``CALIBTUT_ROOT``
  points at a copy of it, so the cell skips its ``git clone``); then none of
  the host's versions changed, what the cell added is at the lock's versions,
  and the imports of every chapter run.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from importlib import metadata
from pathlib import Path

import jupytext
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from test_packaging import RUNTIME, TIMEOUT_S, _lower_bound, _pip, needs_big_downloads

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*/*.md"))
COLAB_CONSTRAINTS = ROOT / "constraints-colab.txt"
#: What a hosted notebook runtime already has and the install cell must keep, with
#: what they require (torch's CUDA libraries included).
HOST_STACK = ("torch", "numpy", "scipy", "pandas", "matplotlib", "scikit-learn")
#: The Colab-like host: Colab's versions (2025) of its scientific stack, older than
#: the lock but inside calibtut's ranges, and the oldest torch calibtut declares.
HOST_PINS = {
    "numpy": "2.0.2",
    "pandas": "2.2.2",
    "matplotlib": "3.10.0",
    "scipy": "1.14.1",
    "scikit-learn": "1.6.1",
    "ipywidgets": "7.7.1",
}

# Runs the install cell (argv[1]) as Colab would: ``google.colab`` imported,
# ``!cmd`` a shell command, ``%pip`` this interpreter's pip.
COLAB_STAND_IN = textwrap.dedent("""
    import shlex, subprocess, sys, types

    sys.modules["google"] = types.ModuleType("google")
    sys.modules["google.colab"] = types.ModuleType("google.colab")

    class Shell:
        def system(self, command):
            subprocess.run(command, shell=True, check=True)

        def run_line_magic(self, magic, line):
            assert magic == "pip", magic
            subprocess.run([sys.executable, "-m", "pip", *shlex.split(line)], check=True)

    def get_ipython():
        return Shell()

    with open(sys.argv[1], encoding="utf8") as cell:
        exec(compile(cell.read(), "install-cell", "exec"))
""")


def _code_cells(path):
    return [cell for cell in jupytext.read(path).cells if cell.cell_type == "code"]


def _install_cell(path):
    first = _code_cells(path)[0]
    assert "google.colab" in first.source and "remove-cell" in first.metadata.get("tags", []), path
    return first.source


def _pins(path):
    """``{canonical name: version}`` of a constraints file."""
    pins = {}
    for line in path.read_text(encoding="utf8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[canonicalize_name(name.strip())] = version.strip()
    return pins


def _requirement_closure(names):
    """``names`` and everything they require, by the metadata of this environment."""
    seen, todo = set(), [canonicalize_name(n) for n in names]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for line in metadata.requires(name) or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(canonicalize_name(req.name))
    return seen


def _chapter_imports(notebooks):
    """The top-level import statements of the chapters' code cells (install cell aside)."""
    lines = set()
    for path in notebooks:
        for cell in _code_cells(path)[1:]:
            code = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
            for node in ast.parse(code).body:
                if isinstance(node, ast.Import | ast.ImportFrom):
                    lines.add(ast.unparse(node))
    return sorted(lines)


def _versions(python, names):
    out = subprocess.run([python, "-c", ("import json, sys, importlib.metadata as m; "
                                         "print(json.dumps({n: m.version(n) for n in sys.argv[1:]}))"), *names],
                         check=True, capture_output=True, text=True, timeout=300).stdout
    return json.loads(out)


def test_every_notebook_starts_with_the_same_install_cell():
    cells = {path.relative_to(ROOT).as_posix(): _install_cell(path) for path in NOTEBOOKS}
    assert len(set(cells.values())) == 1, "the install cells differ: " + json.dumps(cells, indent=1)
    assert "constraints-colab.txt" in next(iter(cells.values()))


def test_colab_constraints_are_the_lock_less_the_host_stack():
    runtime = _requirement_closure(RUNTIME)
    host = _requirement_closure(HOST_STACK)
    lock = _pins(ROOT / "constraints.txt")
    expected = {name: version for name, version in lock.items() if name in runtime - host}
    assert runtime - host <= set(lock), f"constraints.txt pins none of {sorted(runtime - host - set(lock))}"
    assert _pins(COLAB_CONSTRAINTS) == expected


def test_host_pins_are_older_than_the_lock_and_inside_the_ranges():
    lock = _pins(ROOT / "constraints.txt")
    for name, version in HOST_PINS.items():
        assert version != lock[name], f"{name}: the Colab-like host must differ from the lock"
        if name in RUNTIME:
            assert RUNTIME[name].specifier.contains(version), f"{name}=={version} is outside {RUNTIME[name]}"


@needs_big_downloads
def test_install_cell_keeps_an_older_torch_and_the_chapters_import(tmp_path, request):
    torch = f"torch=={_lower_bound(RUNTIME['torch'])}"
    # A virtual environment with pip in it, as the cell's %pip runs this Python's pip.
    subprocess.run([sys.executable, "-m", "venv", tmp_path / "env"], check=True, timeout=TIMEOUT_S)
    request.addfinalizer(lambda: shutil.rmtree(tmp_path / "env", ignore_errors=True))  # 5 GB
    python = tmp_path / "env" / "bin" / "python"
    host = [torch, *(f"{name}=={version}" for name, version in HOST_PINS.items())]
    _pip("install", "--quiet", "--prefer-binary", "--no-compile", *host, python=python)
    names = ["torch", *HOST_PINS]
    before = _versions(python, names)

    clone = tmp_path / "content" / "calibtut"
    shutil.copytree(ROOT, clone, ignore=shutil.ignore_patterns(
        ".git", ".venv", "_build", "results", "*.egg-info", "build", "__pycache__", "node_modules"))
    cell = tmp_path / "install_cell.py"
    # the cell and the chapters of the copy: the snapshot that was installed
    chapters = sorted((clone / "notebooks").glob("*/*.md"))
    cell.write_text(_install_cell(chapters[0]), encoding="utf8")
    driver = tmp_path / "colab.py"
    driver.write_text(COLAB_STAND_IN, encoding="utf8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "CALIBTUT_ROOT"))}
    env.update(CALIBTUT_ROOT=str(clone), OMP_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="", MPLBACKEND="Agg")
    start = time.perf_counter()
    done = subprocess.run([python, driver, cell], cwd=tmp_path, env=env, capture_output=True, text=True,
                          check=False, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    assert done.returncode == 0, f"the install cell failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    print(f"install cell: {seconds:.0f} s")

    assert _versions(python, names) == before, "the install cell replaced part of the host's stack"
    added = _pins(COLAB_CONSTRAINTS)
    installed = _versions(python, ["calibtut", *added])
    assert {n: v for n, v in installed.items() if n != "calibtut"} == added
    imports = "\n".join(_chapter_imports(chapters))
    assert re.search(r"^from calibtut\.models", imports, flags=re.MULTILINE)  # torch is imported for real
    done = subprocess.run([python, "-c", imports], cwd=tmp_path, env=env, capture_output=True, text=True,
                          check=False, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"a chapter's imports fail beside torch {before['torch']}:\n{done.stderr[-3000:]}"
