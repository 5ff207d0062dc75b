"""Resumable, parallel sweeps: every finished task is one line of a committable store."""

from __future__ import annotations

import hashlib
import importlib
import json
import numbers
import os
from collections import Counter
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from calibtut._validation import check_int
from calibtut.run import engine as engines
from calibtut.run._paths import SWEEP_DIR_ENV, current_run_dir, find_root
from calibtut.run.artifacts import SWEEPS, atomic_write_text
from calibtut.run.progress import SweepProgress
from calibtut.run.provenance import git_state
from calibtut.run.store import OK, SweepStore, check_seconds_column, dumps, entry_rows

__all__ = ["SweepFailed", "code_version", "function_reference", "resolve_store", "summarize_entries", "sweep", "task_key"]

class SweepFailed(RuntimeError):
    """Some tasks of a sweep raised; the others finished and are stored.

    ``failures`` maps each failed task (as a tuple of its items) to its
    traceback. Running the same sweep again retries only those tasks.
    """

    def __init__(self, message, failures):
        super().__init__(message)
        self.failures = failures


def task_key(task):
    """A short stable hash of a task (its JSON with sorted keys).

    Examples
    --------
    >>> task_key({"seed": 0, "method": "a"}) == task_key({"method": "a", "seed": 0})
    True
    >>> len(task_key({"seed": 0}))
    16
    """
    text = json.dumps(task, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def function_reference(fn):
    """``"module:qualname"`` of ``fn`` as a store records it, by its shortest public path.

    A runner defined in ``calibtut.experiments.<part>.tasks`` and re-exported by
    the package ``calibtut.experiments.<part>`` is recorded under the package, so
    the stored name survives a reshuffle of the files inside a part.

    Examples
    --------
    >>> from calibtut.run.store import SweepStore
    >>> function_reference(SweepStore)
    'calibtut.run:SweepStore'
    >>> function_reference(task_key)
    'calibtut.run.sweep:task_key'
    """
    qualname = getattr(fn, "__qualname__", getattr(fn, "__name__", type(fn).__name__))
    module = getattr(fn, "__module__", None)
    if not module or "." not in module or "<locals>" in qualname or "." in qualname:
        return f"{module}:{qualname}"
    parts = module.split(".")
    for cut in range(1, len(parts)):
        package = ".".join(parts[:cut])
        try:
            if getattr(importlib.import_module(package), qualname, None) is fn:
                return f"{package}:{qualname}"
        except ImportError:
            continue
    return f"{module}:{qualname}"


def _check_tasks(tasks):
    if isinstance(tasks, Mapping) or isinstance(tasks, (str, bytes)):
        raise TypeError("tasks must be a list of dicts")
    tasks = list(tasks)
    seen = {}
    checked = []
    for i, task in enumerate(tasks):
        if not isinstance(task, Mapping):
            raise TypeError(f"tasks[{i}] must be a dict, got {type(task).__name__}")
        for key, value in task.items():
            if not isinstance(key, str):
                raise TypeError(f"tasks[{i}] has a non-string key {key!r}")
            if not (value is None or isinstance(value, (str, bool, numbers.Integral, numbers.Real))):
                raise TypeError(f"tasks[{i}][{key!r}] must be a str, number, bool or None, got {type(value).__name__}")
        task = json.loads(dumps(dict(task)))  # numpy scalars -> Python, exactly as the store keeps them
        key = task_key(task)
        if key in seen:
            raise ValueError(f"tasks[{i}] repeats tasks[{seen[key]}]: {task}")
        seen[key] = i
        checked.append(task)
    return checked


def _safe(name):
    return "".join(c if c.isalnum() or c in "_-" else "_" for c in name)


def resolve_store(store, label):
    """The store file of a sweep: ``store`` itself, ``<store>/<label>.jsonl``, or the runner's default.

    With ``store=None`` the runner's sweep folder is used (``CALIBTUT_SWEEP_DIR``,
    else ``<run dir>/sweep``); outside the runner there is no store (None).
    A ``.jsonl`` name opens its compressed twin ``.jsonl.gz`` where only that
    exists (see :class:`~calibtut.run.store.SweepStore`).

    Examples
    --------
    >>> resolve_store("/tmp/grid.jsonl", "x").path.as_posix()
    '/tmp/grid.jsonl'
    >>> resolve_store("/tmp/stores", "qr grid").path.as_posix()
    '/tmp/stores/qr_grid.jsonl'
    """
    if store is None:
        folder = os.environ.get(SWEEP_DIR_ENV)
        if folder:
            store = Path(folder)
        elif current_run_dir() is not None:
            store = current_run_dir() / "sweep"
        else:
            return None
    if not isinstance(store, (str, os.PathLike)):
        raise TypeError(f"store must be a path, got {type(store).__name__}")
    store = Path(store)
    named = store.name.endswith((".jsonl", ".jsonl.gz"))
    return SweepStore(store if named else store / f"{_safe(label)}.jsonl")


def code_version():
    """calibtut's version and the git commit (and dirtiness) of the repository, if any.

    Examples
    --------
    >>> sorted(code_version())
    ['calibtut', 'commit', 'dirty']
    """
    from importlib import metadata

    try:
        version = metadata.version("calibtut")
    except metadata.PackageNotFoundError:
        version = None
    root = find_root(required=False)
    state = git_state(root) if root is not None else {"commit": None, "dirty": None}
    commit = state["commit"][:12] if state["commit"] else None
    return {"calibtut": version, "commit": commit, "dirty": state["dirty"]}


def _failure_report(label, failed, store):
    lines = [f"sweep {label}: {len(failed)} task(s) failed; the others finished"
             + (f" and are stored in {store.path}" if store else "") + "."]
    for task, error in list(failed.items())[:5]:
        last = [line for line in error.strip().splitlines() if line.strip()]
        lines.append(f"  task {dict(task)}: {last[-1] if last else error}")
    if len(failed) > 5:
        lines.append(f"  ... and {len(failed) - 5} more")
    lines.append("Full tracebacks: " + (f"the 'error' field of the failed lines of {store.path}; "
                                         if store else "SweepFailed.failures; ")
                 + "run the same sweep again to retry only the failed tasks.")
    return "\n".join(lines)


def summarize_entries(entries, computed=0):
    """What a sweep's stored entries say about where and when its tasks ran.

    A full run can be computed over several sittings, engines and machines and
    then published by a run that only reads its store; the run's provenance
    keeps this summary of every task, so that it still says what computed them.

    Parameters
    ----------
    entries : list of dict
        Store entries (one per task), as :meth:`SweepStore.load` returns them.
    computed : int, default 0
        How many of them the current run computed (the others came from the store).

    Returns
    -------
    dict
        ``tasks``, ``computed_now``, ``from_store``, ``task_seconds`` (sum of
        the tasks' own times), ``first_finished`` and ``last_finished``, and
        task counts per ``engine``, ``code`` version and ``cpu``.

    Examples
    --------
    >>> e = {"seconds": 2.0, "finished": "2026-01-01T00:00:00+00:00", "engine": {"mode": "serial"},
    ...      "code": {"commit": "abc", "dirty": False}, "cpu": "X (avx2)"}
    >>> s = summarize_entries([e, {**e, "cpu": "Y (avx512f)"}], computed=1)
    >>> s["from_store"], s["task_seconds"], s["cpu"]
    (1, 4.0, {'X (avx2)': 1, 'Y (avx512f)': 1})
    """
    def engine(entry):
        described = entry.get("engine") or {}
        return ", ".join(f"{k}={v}" for k, v in described.items()) or "not recorded"

    def code(entry):
        version = entry.get("code") or {}
        commit = version.get("commit") or "not recorded"
        return commit + ("-dirty" if version.get("dirty") else "")

    if not isinstance(entries, (list, tuple)) or not all(isinstance(e, Mapping) for e in entries):
        raise TypeError(f"entries must be a list of store entries (dicts), got {type(entries).__name__}")
    computed = check_int(computed, "computed", minimum=0, maximum=len(entries))
    finished = sorted(e["finished"] for e in entries if e.get("finished"))
    return {
        "tasks": len(entries),
        "computed_now": computed,
        "from_store": len(entries) - computed,
        "task_seconds": round(sum(e.get("seconds") or 0.0 for e in entries), 1),
        "first_finished": finished[0] if finished else None,
        "last_finished": finished[-1] if finished else None,
        "engine": dict(Counter(engine(e) for e in entries).most_common()),
        "code": dict(Counter(code(e) for e in entries).most_common()),
        "cpu": dict(Counter(e.get("cpu") or "not recorded" for e in entries).most_common()),
    }


def _record_summary(label, entries, computed, store):
    """Under the runner, add this sweep's summary to the run directory's ``sweeps.json``.

    The summary names the sweep's store file, relative to the repository root
    when it lies inside it, so that the runner can tell the stores of the
    sweeps that finished from the others.
    """
    folder = current_run_dir()
    if folder is None:
        return
    path = Path(folder) / SWEEPS
    summaries = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    file = store.path.resolve()
    root = find_root(required=False)
    shown = file.relative_to(root).as_posix() if root is not None and file.is_relative_to(root) else str(file)
    summaries[label] = {**summarize_entries(entries, computed), "store": shown}
    atomic_write_text(path, json.dumps(summaries, indent=2) + "\n")


def sweep(tasks, fn, *, store=None, desc=None, progress=True, seconds=None, workers=None, scheduler=None,
          threads_per_worker=None, gpu_workers=None):
    """Run ``fn(**task)`` for every task, serially or on Dask workers, storing each result as it finishes.

    Every finished task is appended as one JSON line to the sweep's store (a
    ``.jsonl`` file, kept compressed as ``.jsonl.gz`` once larger than 200 kB:
    see :class:`~calibtut.run.store.SweepStore`), by this
    process only, with its key, arguments, code version, worker and seconds.
    Rerunning the same sweep reads finished tasks back and computes only what
    is missing or failed, so an interrupted run (Ctrl-C, a killed worker, a
    machine that went away) loses nothing it finished, and a store committed
    from one clone resumes in another. A task that raises is recorded with its
    traceback and does not stop the others; once all have run,
    :class:`SweepFailed` lists the failures. Results are identical whatever the
    execution (serial, any number of workers, any completion order, resumed
    or not) as long as ``fn`` draws its randomness from the task's own seed.

    Parameters
    ----------
    tasks : list of dict
        One dict of keyword arguments per task (values: str, number, bool or None),
        e.g. every ``dataset x seed x method``. Tasks must be distinct. A task
        whose ``device`` starts with ``"cuda"`` runs only on GPU workers.
    fn : callable
        ``fn(**task)`` returns a dict of results (one row) or a DataFrame (rows).
        On workers it must be picklable by cloudpickle (a module-level or
        notebook-level function).
    store : str or path-like, optional
        A ``.jsonl`` (or ``.jsonl.gz``) file, or a folder holding ``<desc>.jsonl``
        (or ``<desc>.jsonl.gz``). By default the
        runner's sweep folder (``results/<part>/<nb>/sweeps/`` for a full run
        at the notebook's default parameters, else ``<run dir>/sweep/``), so
        two sweeps of one notebook need distinct function names or ``desc``;
        outside the runner nothing is stored and every task is computed (so
        the book build never shows stale results).
    desc : str, optional
        Label of the progress report and name of the default store (default:
        the name of ``fn``).
    progress : bool, default True
        Show a progress bar (finished, failed, running, ETA). Under the runner,
        progress lines also go to the runner's log whatever this says.
    seconds : str, optional
        Name of an extra column holding each task's compute time in seconds (the
        time of the run that computed it, also for tasks read back from the
        store), so that a resumed run still reports what the whole sweep cost.
    workers : int, optional
        Run on a local Dask cluster of this many worker processes (see
        :mod:`calibtut.run.engine`). Default: ``CALIBTUT_WORKERS``, else serial
        in this process.
    scheduler : str, optional
        Address of an existing Dask scheduler (default: ``CALIBTUT_SCHEDULER``).
    threads_per_worker : int, optional
        BLAS/OpenMP/torch threads per worker (default 1).
    gpu_workers : int, optional
        Local workers that take the GPU tasks (default 1 if torch sees a GPU).

    Returns
    -------
    pandas.DataFrame
        One row per result row, task keys first, in the order of ``tasks``.

    Raises
    ------
    SweepFailed
        If some tasks raised (after every other task has run and been stored).

    Examples
    --------
    >>> import numpy as np
    >>> tasks = [{"seed": s, "n": n} for s in (0, 1) for n in (10, 100)]
    >>> def mean_of_normals(seed, n):
    ...     return {"mean": round(float(np.random.default_rng(seed).normal(size=n).mean()), 3)}
    >>> table = sweep(tasks, mean_of_normals, progress=False)
    >>> table.columns.tolist(), len(table)
    (['seed', 'n', 'mean'], 4)
    >>> timed = sweep(tasks, mean_of_normals, progress=False, seconds="seconds")
    >>> bool((timed["seconds"] >= 0).all())
    True
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    check_seconds_column(seconds)
    if desc is not None and not isinstance(desc, str):
        raise TypeError(f"desc must be a string or None, got {type(desc).__name__}")
    if not isinstance(progress, bool):
        raise TypeError(f"progress must be True or False, got {type(progress).__name__}")
    tasks = _check_tasks(tasks)
    fn_name = getattr(fn, "__qualname__", getattr(fn, "__name__", type(fn).__name__))
    label = desc or fn_name
    engine = engines.resolve_engine(workers, scheduler, threads_per_worker, gpu_workers)
    store = resolve_store(store, label)
    reserved = {seconds} if seconds else set()

    done, _ = store.load() if store is not None else ({}, {})
    keys = [task_key(task) for task in tasks]
    saved = {k: done[k] for k, task in zip(keys, tasks) if k in done and done[k].get("task") == task}
    todo = [(k, task) for k, task in zip(keys, tasks) if k not in saved]
    by_key = dict(zip(keys, tasks))

    failures = {}
    if todo:
        stamp = {"fn": function_reference(fn), "code": code_version() if store is not None else None, "engine": engine.describe()}
        client = None
        if engine.serial:
            outcomes = engines.run_serial(fn, todo, reserved)
            slots = 1
        else:
            engines.check_serialisable(fn, fn_name)
            client = engines.connect(engine)
            if any(engines.wants_gpu(task) for _, task in todo) and engines.gpu_slots(client) == 0:
                client.close()
                raise ValueError(f"tasks of sweep {label} ask for device='cuda' but no worker carries the GPU "
                                 f"resource (local: gpu_workers >= 1 on a machine with a GPU; a cluster: "
                                 f"start GPU workers with --resources GPU=1)")
            slots = sum(client.nthreads().values())
            outcomes = engines.run_dask(client, fn, todo, reserved, engine.threads_per_worker, _safe(label))
        bar = SweepProgress(len(tasks), len(tasks) - len(todo), label, bar=progress, slots=slots)
        try:
            for key, outcome in outcomes:
                task = by_key[key]
                finished = datetime.now(timezone.utc).isoformat(timespec="seconds")
                entry = {"key": key, "task": task, **stamp, "finished": finished, **outcome}
                if store is not None:
                    store.append(entry)
                if outcome["status"] == OK:
                    saved[key] = entry
                else:
                    failures[tuple(task.items())] = outcome["error"]
                bar.finished(ok=outcome["status"] == OK)
        finally:
            outcomes.close()
            bar.close()
            if client is not None:
                client.close()
        if store is not None:
            store.compact()
    if failures:
        raise SweepFailed(_failure_report(label, failures, store), failures)
    _record_summary(label, [saved[key] for key in keys], computed=len(todo), store=store)

    rows = [row for key in keys for row in entry_rows(saved[key], seconds)]
    if not rows:
        return pd.DataFrame(columns=list(tasks[0]) if tasks else [])
    return pd.DataFrame(rows)
