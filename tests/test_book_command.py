"""``python3 tasks.py book`` gives a book when a chapter fails, and says which.

The command runs on a copy of the repository's machinery (``tasks.py``,
``tools/``, the Sphinx glue, the real ``_config.yml``) whose table of contents
lists two tiny chapters, with the project's ``.venv`` and vendored widget
JavaScript linked in: one chapter burns about a second and a half of CPU, the
other fails in its second code cell while a file it checks is missing. The
command must execute both (recording the kernel's CPU seconds), render both
pages, mark the failed one with the cell, the error and the runner command,
list it at the end of its output and exit 1. The strict build of the test
command fails on the failed execution the cache then holds; a second
execution step runs the failed chapter again though its source did not
change; the nbval plugin's start removes it from the cache. Once the file
exists, the book command succeeds and the page loses its marker (its source
did not change). The command runs with ``--no-pdf``: the single-page build and
its PDF are left to ``tasks.py book`` itself (``tests/test_reader_notebooks.py``
prints a small page). Takes about a minute on the two-core development machine
(25 CPU-seconds). Two unit tests check the failure record where the page
does not show the traceback (a hidden cell, a timeout).
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest

import tasks
from tools import nbcache

ROOT = Path(__file__).resolve().parent.parent
#: A chapter of the book, as the source that the unit tests of the failure record name.
CHAPTER = ROOT / "notebooks" / "foundations" / "01_classifier_calibration.md"
HEADER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3 (ipykernel)
  language: python
  name: python3
---
"""
GOOD = HEADER + """
# A chapter that works

```{code-cell} ipython3
import time

start = time.process_time()
while time.process_time() - start < 1.5:
    pass
print("the good chapter " + "ran")
```
"""
BAD = HEADER + """
# A chapter that fails

```{code-cell} ipython3
from pathlib import Path

print("first cell " + "ran")
```

Text between the cells.

```{code-cell} ipython3
assert Path("flag.txt").exists(), "flag.txt is missing"
```

```{code-cell} ipython3
print("third cell " + "ran")
```
"""
TOC = """format: jb-book
root: book/intro
chapters:
  - file: notebooks/demo/01_good
  - file: notebooks/demo/02_bad
"""
BAD_DOC = "notebooks/demo/02_bad"
#: The line of the failing cell's fence in the failing chapter.
BAD_LINE = [n for n, line in enumerate(BAD.splitlines(), start=1) if line.startswith("```{code-cell}")][1]
MARKER = "This chapter failed to execute"


def _copy_repository(dest: Path) -> None:
    for name in ("tasks.py", "_config.yml", "pyproject.toml", "constraints.txt"):
        shutil.copy2(ROOT / name, dest / name)
    for name in ("tools", "calibtut"):  # tasks.py reads its numerics profile from calibtut/numerics.py
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    (dest / "book").mkdir()
    for name in ("_ext", "_static"):
        shutil.copytree(ROOT / "book" / name, dest / "book" / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "book" / "references.bib", dest / "book" / "references.bib")
    (dest / "book" / "_vendor").symlink_to(ROOT / "book" / "_vendor")
    (dest / ".venv").symlink_to(ROOT / ".venv")
    (dest / "book" / "intro.md").write_text("# A two-chapter book\n\nBuilt by a test.\n", encoding="utf8")
    (dest / "_toc.yml").write_text(TOC, encoding="utf8")
    chapters = dest / "notebooks" / "demo"
    chapters.mkdir(parents=True)
    (chapters / "01_good.md").write_text(GOOD, encoding="utf8")
    (chapters / "02_bad.md").write_text(BAD, encoding="utf8")


def _html(repo: Path, doc: str) -> str:
    return (repo / "_build" / "html" / f"{doc}.html").read_text(encoding="utf8")


def _text(page: str) -> str:
    """The text of an HTML page, tags (code highlighting too) removed."""
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def _run(repo: Path, program: str, *args) -> subprocess.CompletedProcess:
    """Run a program of the copy's ``.venv`` (``python``, ``jupyter-book``) in the copy."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.run([repo / ".venv" / "bin" / program, *args], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=900)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The book command with the failing chapter, what the test command's steps then see, and the fixed chapter."""
    stamp = tasks.STAMP.read_text().strip() if tasks.STAMP.exists() else None
    if stamp != tasks.install_key() or not tasks.VENDOR.is_dir():
        # the copy's tasks.py would otherwise install into the linked .venv
        pytest.skip("needs the project's .venv, up to date, and book/_vendor (python3 tasks.py book sets them up)")
    repo = tmp_path_factory.mktemp("book")
    _copy_repository(repo)
    failures = repo / "_build" / "failed-chapters.json"
    found = {"first": _run(repo, "python", "tasks.py", "book", "--no-pdf")}
    found["failures"] = json.loads(failures.read_text(encoding="utf8"))
    found["bad_page"] = _html(repo, BAD_DOC)
    found["good_page"] = _html(repo, "notebooks/demo/01_good")
    # the strict build of `tasks.py test`, reading the failed execution from the cache
    found["strict"] = _run(repo, "jupyter-book", "build", ".", "-W", "-n", "--keep-going", "--all")
    found["again"] = _run(repo, "python", "-m", "tools.nbcache", "execute")
    # what the nbval plugin does when `tasks.py test` starts
    found["forgotten"] = _run(repo, "python", "-c", "from tools import nbcache; print(nbcache.forget_failed())")
    found["list_after_forget"] = failures.exists()
    (repo / "notebooks" / "demo" / "flag.txt").write_text("present\n", encoding="utf8")
    found["second"] = _run(repo, "python", "tasks.py", "book", "--no-pdf")
    found["fixed_page"] = _html(repo, BAD_DOC)
    found["fixed_failures"] = json.loads(failures.read_text(encoding="utf8"))
    return found


def test_failed_chapter_makes_the_command_fail_after_building_the_book(runs):
    first = runs["first"]
    assert first.returncode == 1, first.stdout + first.stderr
    assert "book build FAILED" not in first.stdout
    assert "1 chapter(s) failed to execute" in first.stdout
    assert first.stdout.rstrip().endswith("_build/html/index.html")


def test_failure_list_names_the_chapter_and_the_runner_command(runs):
    out = runs["first"].stdout
    listing = out[out.index("1 chapter(s) failed to execute"):]
    summary = f"code cell 2 (line {BAD_LINE} of {BAD_DOC}.md) raised AssertionError: flag.txt is missing"
    assert f"{BAD_DOC}.md: {summary}" in listing
    assert f".venv/bin/python -m calibtut.run {BAD_DOC}.md" in listing
    assert "01_good" not in listing
    failure = runs["failures"][BAD_DOC]
    assert (failure["cell"], failure["line"], failure["error"]) == (2, BAD_LINE, "AssertionError")
    assert failure["command"] == f"python -m calibtut.run {BAD_DOC}.md"
    assert failure["shown"]
    assert list(runs["failures"]) == [BAD_DOC]


def test_failed_page_has_the_marker_the_outputs_and_the_traceback(runs):
    assert '<div class="error calibtut-failed-chapter admonition">' in runs["bad_page"]
    page = _text(runs["bad_page"])
    assert page.index("A chapter that fails") < page.index(MARKER) < page.index("first cell ran")
    assert f"code cell 2 (line {BAD_LINE} of {BAD_DOC}.md)" in page
    assert f"python -m calibtut.run {BAD_DOC}.md" in page
    assert "Traceback (most recent call last)" in page
    assert "flag.txt is missing" in page
    assert "third cell ran" not in page  # the cells after the error did not run


def test_good_page_is_unmarked(runs):
    page = _text(runs["good_page"])
    assert "the good chapter ran" in page
    assert MARKER not in page
    assert "Traceback" not in page


def test_execution_records_the_kernels_cpu_seconds(runs):
    rows = {
        match["notebook"]: (float(match["cpu"]), match["status"])
        for match in re.finditer(
            r"^(?P<notebook>notebooks/demo/\S+)\s+(?P<cpu>[\d.]+)\s+[\d.]+\s+(?P<status>.+)$",
            runs["first"].stdout,
            flags=re.M,
        )
    }
    cpu, status = rows["notebooks/demo/01_good.md"]
    assert status == "ok"
    assert 1.5 <= cpu < 30  # the busy loop, plus the kernel's start
    assert rows[f"{BAD_DOC}.md"][1] == "FAILED in code cell 2"


def test_strict_build_fails_on_a_failed_execution_in_the_cache(runs):
    strict = runs["strict"]
    assert strict.returncode != 0
    warning = f"the chapter failed to execute: code cell 2 (line {BAD_LINE} of {BAD_DOC}.md)"
    assert warning in strict.stdout + strict.stderr


def test_failed_chapter_is_executed_again_though_unchanged(runs):
    again = runs["again"]
    assert again.returncode == 1, again.stdout + again.stderr
    assert "nbcache: executing 1 notebook(s)" in again.stdout
    assert f"nbcache: {BAD_DOC}.md FAILED" in again.stdout


def test_nbval_plugin_start_forgets_failed_executions(runs):
    assert runs["forgotten"].stdout.strip() == "1"
    assert not runs["list_after_forget"]


def test_chapter_loses_its_marker_once_fixed(runs):
    second = runs["second"]
    assert second.returncode == 0, second.stdout + second.stderr
    assert "nbcache: executing 1 notebook(s)" in second.stdout
    assert f"nbcache: {BAD_DOC}.md executed" in second.stdout
    assert runs["fixed_failures"] == {}
    page = _text(runs["fixed_page"])
    assert "third cell ran" in page
    assert MARKER not in page


def _executed(*cells):
    """A notebook as ``tools.nbcache`` reads one, with the given code cells (source, tags, outputs)."""
    nb = nbformat.v4.new_notebook()
    for source, tags, outputs in cells:
        cell = nbformat.v4.new_code_cell(source, metadata={"tags": tags})
        cell.outputs = [nbformat.from_dict(out) for out in outputs]
        nb.cells.append(cell)
    nb.metadata["source_map"] = [10 * (index + 1) for index in range(len(cells))]
    return nb


def test_failure_of_a_hidden_cell_carries_its_traceback():
    error = {"output_type": "error", "ename": "AssertionError", "evalue": "too far\nsecond line",
             "traceback": ["\x1b[0;31mAssertionError\x1b[0m: too far"]}
    nb = _executed(("x = 1", [], []), ("assert x == 2, 'too far'", ["remove-cell"], [error]))
    failure = nbcache.chapter_failure(CHAPTER, nb, 1, RuntimeError("cell error"), None)
    rel = CHAPTER.relative_to(ROOT).as_posix()
    assert failure["summary"] == f"code cell 2 (line 20 of {rel}) raised AssertionError: too far ..."
    assert failure["traceback"] == "AssertionError: too far"
    assert not failure["shown"]  # the marker then shows the traceback itself
    assert failure["command"] == f"python -m calibtut.run {rel}"


def test_failure_of_a_cell_that_timed_out():
    nb = _executed(("import time", [], []), ("time.sleep(1000)", [], []))
    failure = nbcache.chapter_failure(CHAPTER, nb, 1, TimeoutError("A cell timed out after 300 seconds."), None)
    assert (failure["cell"], failure["error"], failure["shown"]) == (2, "TimeoutError", False)
    assert failure["traceback"] == "A cell timed out after 300 seconds."
