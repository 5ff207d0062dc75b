"""Resumable sweeps: one small JSON file per finished task."""

from __future__ import annotations

import hashlib
import json
import numbers
import time
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from ._paths import current_run_dir
from .artifacts import atomic_write_text


def _plain(value):
    """Turn numpy scalars/arrays into JSON-ready Python values."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot store a {type(value).__name__} in a sweep result (use numbers, strings, lists)")


def task_key(task):
    """A short stable hash of a task (its JSON with sorted keys).

    Examples
    --------
    >>> task_key({"seed": 0, "method": "a"}) == task_key({"method": "a", "seed": 0})
    True
    >>> len(task_key({"seed": 0}))
    16
    """
    text = json.dumps(task, sort_keys=True, default=_plain)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _check_tasks(tasks):
    if isinstance(tasks, Mapping) or isinstance(tasks, (str, bytes)):
        raise TypeError("tasks must be a list of dicts")
    tasks = list(tasks)
    seen = {}
    for i, task in enumerate(tasks):
        if not isinstance(task, Mapping):
            raise TypeError(f"tasks[{i}] must be a dict, got {type(task).__name__}")
        for key, value in task.items():
            if not isinstance(key, str):
                raise TypeError(f"tasks[{i}] has a non-string key {key!r}")
            if not (value is None or isinstance(value, (str, bool, numbers.Integral, numbers.Real))):
                raise TypeError(f"tasks[{i}][{key!r}] must be a str, number, bool or None, got {type(value).__name__}")
        key = task_key(dict(task))
        if key in seen:
            raise ValueError(f"tasks[{i}] repeats tasks[{seen[key]}]: {dict(task)}")
        seen[key] = i
    return [dict(t) for t in tasks]


def _to_records(result, fn_name):
    if isinstance(result, pd.DataFrame):
        records = result.reset_index(drop=True).to_dict(orient="records")
    elif isinstance(result, Mapping):
        records = [dict(result)]
    else:
        raise TypeError(f"fn {fn_name} must return a dict or a DataFrame, got {type(result).__name__}")
    for record in records:
        bad = [k for k in record if not isinstance(k, str)]
        if bad:
            raise TypeError(f"fn {fn_name} returned non-string keys {bad}")
    return json.loads(json.dumps(records, default=_plain))


def _progress(total, desc):
    if current_run_dir() is not None:
        from tqdm.std import tqdm

        return tqdm(total=total, desc=desc, mininterval=2.0)
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc)


def sweep(tasks, fn, *, store=None, desc=None, progress=True, seconds=None):
    """Run ``fn(**task)`` for every task, saving each result as soon as it is done.

    Each finished task is written atomically to ``<store>/<task hash>.json``; a
    rerun loads finished tasks from there instead of recomputing them, so an
    interrupted run resumes where it stopped and loses nothing it had finished.
    Stored numbers are read back exactly (JSON keeps full float precision), so a
    resumed sweep returns the same table as an uninterrupted one.

    Parameters
    ----------
    tasks : list of dict
        One dict of keyword arguments per task (values: str, number, bool or None),
        e.g. every ``dataset x seed x method``. Tasks must be distinct.
    fn : callable
        ``fn(**task)`` returns a dict of results (one row) or a DataFrame (rows).
        It should derive all randomness from the task (e.g. a ``seed`` key).
    store : str or path-like, optional
        Folder for the per-task files. By default ``<run dir>/sweep/<desc or fn
        name>`` under the runner, so two sweeps of one notebook need distinct
        function names (or ``desc``); outside the runner nothing is stored and
        every task is computed (so the book build never shows stale results).
    desc : str, optional
        Label of the progress bar and name of the default store (default: the
        name of ``fn``).
    progress : bool, default True
        Show a tqdm progress bar.
    seconds : str, optional
        Name of an extra column holding each task's compute time in seconds (the
        time of the run that computed it, also for tasks read back from the
        store), so that a resumed run still reports what the whole sweep cost.

    Returns
    -------
    pandas.DataFrame
        One row per result row, task keys first, in the order of ``tasks``.

    Examples
    --------
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
    if seconds is not None and not isinstance(seconds, str):
        raise TypeError(f"seconds must be a column name (str) or None, got {type(seconds).__name__}")
    tasks = _check_tasks(tasks)
    fn_name = getattr(fn, "__qualname__", getattr(fn, "__name__", type(fn).__name__))
    if store is None and current_run_dir() is not None:
        safe = "".join(c if c.isalnum() or c in "_-" else "_" for c in (desc or fn_name))
        store = current_run_dir() / "sweep" / safe
    store = None if store is None else Path(store)
    rows = []
    reserved = {seconds} if seconds else set()  # besides the task keys, names a result may not use
    bar = _progress(len(tasks), desc or fn_name) if progress else None
    try:
        for task in tasks:
            path = None if store is None else store / f"{task_key(task)}.json"
            records = None
            if path is not None and path.is_file():
                saved = json.loads(path.read_text(encoding="utf-8"))
                if saved.get("task") == json.loads(json.dumps(task, default=_plain)):
                    records, took = saved["records"], saved.get("seconds", np.nan)
            if records is None:
                start = time.perf_counter()
                records = _to_records(fn(**task), fn_name)
                took = time.perf_counter() - start
                if path is not None:
                    entry = {"task": task, "fn": fn_name, "seconds": took, "records": records}
                    atomic_write_text(path, json.dumps(entry, default=_plain, allow_nan=True))
            for record in records:
                clash = sorted(set(record) & (set(task) | reserved))
                if clash:
                    raise ValueError(f"fn {fn_name} returned keys {clash} that are also task keys (or the "
                                     f"seconds column)")
                rows.append({**task, **record, **({seconds: took} if seconds else {})})
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    if not rows:
        return pd.DataFrame(columns=list(tasks[0]) if tasks else [])
    return pd.DataFrame(rows)
