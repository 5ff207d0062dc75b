"""Recompute a sample of a stored sweep and compare it with what the store holds.

``python -m calibtut.run.recheck results/<part>/<nb>/sweeps/<sweep>.jsonl.gz --sample 20 --workers 2``
checks that a published run is reproducible: it recomputes a seeded random
sample of the store's finished tasks (on any engine) and compares every stored
value exactly (NaN equals NaN). The exit status is 0 when all match.
"""

from __future__ import annotations

import argparse
import importlib
import math
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from calibtut._validation import check_real
from calibtut.run.engine import resolve_engine
from calibtut.run.store import SweepStore
from calibtut.run.sweep import sweep

__all__ = ["differing", "main", "recheck", "resolve_function"]


def resolve_function(reference):
    """Import ``"module:qualname"`` (as recorded in a store line's ``fn``).

    Examples
    --------
    >>> resolve_function("calibtut.run.sweep:task_key").__name__
    'task_key'
    """
    if not isinstance(reference, str) or ":" not in reference:
        raise ValueError(f"fn must be 'module:qualname', got {reference!r}")
    module, _, qualname = reference.partition(":")
    if module in ("__main__", "None") or "<locals>" in qualname:
        raise ValueError(f"fn {reference!r} was defined in a notebook or a function, so it cannot be imported; "
                         f"pass the function itself")
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _same(a, b):
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def differing(stored, fresh):
    """Names of the values that differ between two lists of result rows (exact comparison).

    Examples
    --------
    >>> differing([{"a": 1.0, "b": float("nan")}], [{"a": 1.0, "b": float("nan")}])
    []
    >>> differing([{"a": 1.0}], [{"a": 1.0000001}])
    ['a']
    """
    if len(stored) != len(fresh):
        return ["<number of rows>"]
    names = set()
    for old, new in zip(stored, fresh):
        names |= {k for k in set(old) | set(new) if k not in old or k not in new or not _same(old[k], new[k])}
    return sorted(names)


def recheck(store, *, sample=20, seed=0, max_seconds=None, fn=None, workers=None, scheduler=None,
            progress=True):
    """Recompute a seeded random sample of a store's finished tasks and compare them exactly.

    Parameters
    ----------
    store : str or path-like
        A sweep's ``.jsonl`` or ``.jsonl.gz`` store (a ``.jsonl`` name finds
        its compressed twin).
    sample : int, default 20
        Tasks to recompute (all of them when the store has fewer).
    seed : int, default 0
        Seed of the sample.
    max_seconds : float, optional
        Only sample tasks whose stored compute time is at most this.
    fn : callable, optional
        The task function; default the one the store's lines name.
    workers, scheduler
        Engine of the recomputation, as for :func:`calibtut.run.sweep`.
    progress : bool, default True

    Returns
    -------
    pandas.DataFrame
        One row per recomputed task: ``key``, ``stored_seconds``,
        ``seconds``, ``match``, ``differing`` (the names of the values
        that changed), and ``stored_cpu`` and ``cpu``, the machines that
        computed the stored and the fresh rows
        (:func:`calibtut.run.provenance.cpu_label`).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "t.jsonl"
    >>> def square(seed):
    ...     return {"v": seed * seed}
    >>> _ = sweep([{"seed": s} for s in range(5)], square, store=path, progress=False)
    >>> recheck(path, sample=3, fn=square, progress=False)["match"].tolist()
    [True, True, True]
    """
    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 1:
        raise ValueError(f"sample must be an integer >= 1, got {sample!r}")
    if max_seconds is not None:
        max_seconds = check_real(max_seconds, "max_seconds", low=0, low_open=True)
    resolve_engine(workers, scheduler)  # checks the engine's arguments before any work
    stored = SweepStore(store)
    path = stored.path
    if not path.is_file():
        raise FileNotFoundError(f"store {path} does not exist")
    done, _ = stored.load()
    keys = sorted(k for k, e in done.items()
                  if max_seconds is None or e.get("seconds", math.inf) <= max_seconds)
    if not keys:
        limit = f" of at most {max_seconds} s" if max_seconds else ""
        raise ValueError(f"store {path} has no finished task{limit}")
    chosen = sorted(np.random.default_rng(seed).choice(keys, size=min(sample, len(keys)), replace=False))
    if fn is None:
        references = {done[k]["fn"] for k in chosen}
        if len(references) != 1:
            raise ValueError(f"the sampled lines name several functions {sorted(references)}; pass fn")
        fn = resolve_function(references.pop())
    with tempfile.TemporaryDirectory() as folder:
        fresh_path = Path(folder) / "recheck.jsonl"
        sweep([done[k]["task"] for k in chosen], fn, store=fresh_path, desc="recheck", progress=progress,
              workers=workers, scheduler=scheduler)
        fresh, _ = SweepStore(fresh_path).load()
    rows = []
    for key in chosen:
        changed = differing(done[key]["records"], fresh[key]["records"])
        rows.append({"key": key, "stored_seconds": done[key].get("seconds"), "seconds": fresh[key]["seconds"],
                     "match": not changed, "differing": ",".join(changed),
                     "stored_cpu": done[key].get("cpu") or "not recorded", "cpu": fresh[key].get("cpu")})
    return pd.DataFrame(rows)


def main(argv=None):
    """Command line; returns 0 when every recomputed task matches its stored rows."""
    parser = argparse.ArgumentParser(prog="python -m calibtut.run.recheck", description=__doc__.split("\n\n")[0])
    parser.add_argument("store", help="a sweep's .jsonl or .jsonl.gz store, "
                                      "e.g. results/<part>/<nb>/sweeps/<sweep>.jsonl.gz")
    parser.add_argument("--sample", type=int, default=20, help="tasks to recompute (default 20)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample (default 0)")
    parser.add_argument("--max-seconds", type=float, help="only tasks whose stored time is at most this")
    place = parser.add_mutually_exclusive_group()
    place.add_argument("--workers", type=int, help="local Dask worker processes")
    place.add_argument("--scheduler", help="address of an existing Dask scheduler")
    args = parser.parse_args(argv)
    try:
        table = recheck(args.store, sample=args.sample, seed=args.seed, max_seconds=args.max_seconds,
                        workers=args.workers, scheduler=args.scheduler)
    except (FileNotFoundError, ValueError, TypeError, ImportError, AttributeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with pd.option_context("display.width", 160, "display.max_rows", None):
        print(table.to_string(index=False))
    matched = int(table["match"].sum())
    print(f"{matched} of {len(table)} recomputed tasks match the store exactly")
    elsewhere = table[~table["match"] & (table["stored_cpu"] != table["cpu"])]
    if len(elsewhere):
        cpus = ", ".join(sorted(set(elsewhere["stored_cpu"])))
        print(f"{len(elsewhere)} of the differing tasks were stored from another CPU ({cpus}; this one: "
              f"{table['cpu'].iloc[0]}). torch and BLAS choose their kernels by CPU, so long trainings can "
              f"differ in their last bits: recheck those on the CPU type that stored them.")
    return 0 if matched == len(table) else 1


if __name__ == "__main__":
    sys.exit(main())
