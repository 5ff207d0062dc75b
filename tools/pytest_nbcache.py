"""pytest plugin: store every notebook nbval executed in the book's jupyter-cache.

Load it with ``-p tools.pytest_nbcache`` next to ``--nbval-lax``. nbval runs a
notebook cell by cell in one kernel and keeps each cell's outputs on the test
item (``item.test_outputs``). When the last cell of a notebook has run and every
cell passed, this plugin asks the still-running kernel for its ipywidgets state,
then stores the outputs in ``_build/.jupyter_cache`` under the hash myst-nb
computes for the notebook's ``.md`` source (see ``tools/nbcache.py``). The
strict book build that follows finds every notebook in the cache and executes
nothing again.

A notebook with a failed or skipped cell, or whose ``.ipynb`` no longer matches
its ``.md`` (the pair check reports that), is not stored: the book build then
executes it itself and reports any error there too. For that to hold after
``tasks.py book`` stored a failed execution of a chapter (with its error
outputs, so that the page shows them), the plugin removes every failed
execution from the cache when the session starts (:func:`tools.nbcache.forget_failed`).
"""

from __future__ import annotations

import ast
import json
import time
import warnings
from pathlib import Path

import psutil
import pytest

from tools import nbcache

WIDGET_EXPR = (
    "__import__('json').dumps(__import__('sys').modules['ipywidgets'].Widget"
    ".get_manager_state(drop_defaults=False) if 'ipywidgets' in __import__('sys').modules else None)"
)


def _is_cell(item) -> bool:
    return type(item).__name__ == "IPyNbCell" and hasattr(item, "test_outputs")


def _notebook_state(item) -> dict:
    parent = item.parent
    state = getattr(parent, "_nbcache_state", None)
    if state is None:
        state = {"start": time.perf_counter(), "ok": True}
        parent._nbcache_state = state
    return state


def _widget_state(kernel, timeout=30.0):
    """Ask the kernel for the ipywidgets manager state (None without widgets)."""
    kc = kernel.kc
    msg_id = kc.execute("", silent=True, store_history=False, user_expressions={"w": WIDGET_EXPR}, allow_stdin=False)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        msg = kc.get_shell_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        result = msg["content"].get("user_expressions", {}).get("w", {})
        if result.get("status") != "ok":
            raise RuntimeError(f"could not read the widget state: {result.get('evalue', result)}")
        text = ast.literal_eval(result["data"]["text/plain"])
        return None if text is None else json.loads(text)
    raise TimeoutError("no reply from the kernel while reading the widget state")


def _kernel_cpu_seconds(kernel):
    """CPU seconds (user + system, its children included) the notebook's kernel has used.

    The chapters' budget is held in CPU time, which does not grow when other jobs
    share the machine, as wall time does (None if the kernel's process is not local).
    """
    pid = getattr(getattr(getattr(kernel, "km", None), "provisioner", None), "pid", None)
    if pid is None:
        return None
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system + times.children_user + times.children_system


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if _is_cell(item):
        _notebook_state(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if _is_cell(item):
        report = outcome.get_result()
        if not report.passed:
            _notebook_state(item)["ok"] = False


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item, nextitem):
    """After the last cell of a notebook (its kernel still alive), cache the run."""
    if not _is_cell(item):
        return
    parent = item.parent
    if nextitem is not None and getattr(nextitem, "parent", None) is parent:
        return
    state = _notebook_state(item)
    ipynb = Path(str(parent.fspath))
    md_path = ipynb.with_suffix(".md")
    if not state["ok"] or not md_path.exists():
        return
    cells = [child for child in parent.session.items if _is_cell(child) and child.parent is parent]
    if any(cell.test_outputs is None for cell in cells):
        return
    seconds = time.perf_counter() - state["start"]
    # Never raise here: an exception would skip the kernel's teardown. A
    # notebook that is not cached is executed again by the book build, which
    # `tasks.py test` reports as a failed check.
    try:
        widgets = cpu_seconds = None
        if parent.kernel is not None and parent.kernel.is_alive():
            cpu_seconds = _kernel_cpu_seconds(parent.kernel)
            widgets = _widget_state(parent.kernel)
        nbcache.store_outputs(
            md_path,
            [(cell.cell.source, cell.test_outputs) for cell in cells],
            seconds,
            widget_state=widgets,
            cpu_seconds=cpu_seconds,
        )
    except Exception as exc:  # noqa: BLE001 - reported, never fatal
        warnings.warn(f"{md_path.name}: not stored in the execution cache: {exc}", stacklevel=1)


def pytest_configure(config):
    # Create the cache database once, in the controller, before xdist workers
    # write to it concurrently; no failed execution stored by `tasks.py book`
    # may reach the strict build.
    if not hasattr(config, "workerinput"):
        nbcache.forget_failed()
