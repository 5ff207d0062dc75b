"""Recompute a sample of a stored sweep and compare it with what the store holds.

``python -m calibtut.run.recheck results/<part>/<nb>/sweeps/<sweep>.jsonl.gz --sample 20 --workers 2``
checks that a published run is reproducible: it recomputes a seeded random
sample of the store's finished tasks (on any engine) and compares every stored
value exactly (NaN equals NaN). The exit status is 0 when all match.

The sample is recomputed under the numerics profile its lines record
(:mod:`calibtut.numerics`: the instruction-set limits and thread count of the
process that computed them), in a new process started under that profile when
this one runs under another. Lines stored before profiles were recorded came
from the AVX2 development machines, whose kernels the ``"reference"`` profile
selects, so they are recomputed under it. The comparison is exact only between
machines of one architecture (x86-64 with AVX2): on ARM, or for tasks computed
on a GPU, the kernels are others and the table says how far the values moved
(``max_rel_diff``) instead.
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from calibtut._validation import check_real
from calibtut.numerics import DEFAULT_PROFILE, PROFILES, numerics_label, numerics_state, profile_environment
from calibtut.run.engine import resolve_engine
from calibtut.run.store import SweepStore
from calibtut.run.sweep import function_reference, sweep

__all__ = ["differing", "main", "max_relative_difference", "recheck", "resolve_function", "stored_numerics"]

#: What ``numerics=`` accepts besides a profile name.
_NUMERICS_CHOICES = ("stored", "current", *PROFILES)


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


def max_relative_difference(stored, fresh):
    """The largest relative difference between the numbers of two lists of result rows.

    ``|a - b| / max(|a|, |b|)`` over every numeric value present in both (0
    when both are 0, NaN equal to NaN); what a recheck across architectures
    reports, where exact equality cannot be expected.

    Examples
    --------
    >>> max_relative_difference([{"a": 4.0, "b": "x"}], [{"a": 5.0, "b": "x"}])
    0.2
    """
    largest = 0.0
    for old, new in zip(stored, fresh):
        for name in set(old) & set(new):
            a, b = old[name], new[name]
            if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)) \
                    or not isinstance(b, (int, float)):
                continue
            if math.isnan(a) and math.isnan(b) or a == b:
                continue
            scale = max(abs(a), abs(b))
            largest = max(largest, math.inf if math.isnan(scale) or math.isinf(scale) else abs(a - b) / scale)
    return largest


def stored_numerics(entries):
    """The numerics profile and threads that a store's lines record (the most common one).

    Parameters
    ----------
    entries : list of dict
        Store lines.

    Returns
    -------
    tuple
        ``(profile, threads, recorded)``: the profile name (None for lines
        computed under no profile, which are recomputed under ``"native"``),
        the threads, and whether the lines recorded their numerics. Lines from
        before profiles were recorded ran with the CPU's own kernels and one
        thread (the runner's workers): on a CPU with AVX-512 (its label names
        ``avx512f``) that is ``("native", 1, False)``, on an AVX2 one the
        kernels of the reference profile, ``("reference", 1, False)``.

    Examples
    --------
    >>> stored_numerics([{"numerics": {"profile": "reference", "threads": 1}}])
    ('reference', 1, True)
    >>> stored_numerics([{"cpu": "AMD EPYC (avx2, fma)"}])
    ('reference', 1, False)
    >>> stored_numerics([{"cpu": "AMD EPYC (avx512f, avx2, fma)"}])
    ('native', 1, False)
    """
    seen = Counter((e["numerics"].get("profile"), e["numerics"].get("threads"))
                   for e in entries if isinstance(e.get("numerics"), dict))
    if seen:
        (profile, threads), _ = seen.most_common(1)[0]
        return profile, threads, True
    avx512 = Counter("avx512f" in (e.get("cpu") or "") for e in entries).most_common(1)[0][0]
    return ("native" if avx512 else DEFAULT_PROFILE), 1, False


def _label(numerics):
    if not isinstance(numerics, dict):
        return "not recorded"
    blas = ", ".join(numerics.get("blas") or [])
    return f"{numerics.get('profile') or 'no profile'}: torch {numerics.get('torch')}, " \
           f"MKL {numerics.get('mkl') or 'not recorded'}, {blas}, {numerics.get('threads')} thread(s)"


def _runs_under(profile, threads, state=None):
    """Whether this process computes under ``profile`` with ``threads`` threads (None: any).

    ``profile`` None stands for lines computed under no profile, which only a
    process started under none matches; the threads are those a store line
    computed here would record
    (:func:`calibtut.numerics.numerics_label`: torch's thread count, which
    ``OMP_NUM_THREADS`` sets and which is otherwise the libraries' default).

    Examples
    --------
    >>> state = {"profile": "reference", "env": {"OMP_NUM_THREADS": "1"}, "torch": {"threads": 1}}
    >>> _runs_under("reference", 1, state), _runs_under("reference", None, state)
    (True, True)
    >>> _runs_under("native", 1, state), _runs_under("reference", 2, state)
    (False, False)
    >>> _runs_under("native", 1, {"profile": None, "env": {}, "torch": {"threads": 1}})
    False
    >>> _runs_under(None, 1, {"profile": None, "env": {}, "torch": {"threads": 1}})
    True
    """
    state = numerics_state(load=True) if state is None else state
    if state["profile"] != profile:
        return False
    return threads is None or numerics_label(state)["threads"] == threads


def _recheck_elsewhere(path, profile, threads, *, sample, seed, max_seconds, fn, workers, scheduler, progress):
    """Run the recheck in a new process started under ``profile``; returns its table."""
    reference = None
    if fn is not None:
        reference = function_reference(fn)
        try:
            resolve_function(reference)
        except (ValueError, ImportError, AttributeError) as exc:
            raise ValueError(f"the store was computed under the numerics profile {profile!r}, and this process "
                             f"runs under another: recomputing it means a new process, which must import fn "
                             f"({exc}); pass numerics='current' to recompute here") from None
    env = dict(os.environ)
    for name, value in profile_environment(profile, threads=threads).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    with tempfile.TemporaryDirectory() as folder:
        table_path = Path(folder) / "recheck.json"
        command = [sys.executable, "-m", "calibtut.run.recheck", str(path), "--sample", str(sample), "--seed",
                   str(seed), "--numerics", "current", "--table", str(table_path)]
        command += ["--max-seconds", repr(max_seconds)] if max_seconds is not None else []
        command += ["--fn", reference] if reference else []
        command += ["--workers", str(workers)] if workers is not None else []
        command += ["--scheduler", scheduler] if scheduler is not None else []
        command += [] if progress else ["--no-progress"]
        done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              check=False)
        if not table_path.is_file():
            raise RuntimeError(f"the recheck under the numerics profile {profile!r} failed "
                               f"(exit status {done.returncode}):\n{done.stderr.strip()}")
        if progress and done.stderr:
            sys.stderr.write(done.stderr)
        return pd.read_json(table_path, orient="records", dtype=False)


def recheck(store, *, sample=20, seed=0, max_seconds=None, fn=None, workers=None, scheduler=None,
            progress=True, numerics="stored"):
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
    numerics : {"stored", "current", "reference", "native"}, default "stored"
        The numerics profile to recompute under: the one the sampled lines
        record (see :func:`stored_numerics`), this process as it runs, or a
        named profile. When it is not this process's own, or its thread
        count (the stored lines' threads, the profile's for a named profile)
        is not the one this process computes with, the sample is recomputed in
        a new process started under it (``fn`` must then be importable).

    Returns
    -------
    pandas.DataFrame
        One row per recomputed task: ``key``, ``stored_seconds``,
        ``seconds``, ``match``, ``differing`` (the names of the values
        that changed), ``max_rel_diff`` (:func:`max_relative_difference`),
        ``stored_cpu`` and ``cpu``, the machines that computed the stored and
        the fresh rows (:func:`calibtut.run.provenance.cpu_label`), and
        ``stored_numerics`` and ``numerics``, their numerics
        (:func:`calibtut.numerics.numerics_label`, in words).

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
    if not isinstance(numerics, str) or numerics not in _NUMERICS_CHOICES:
        raise ValueError(f"numerics must be one of {list(_NUMERICS_CHOICES)}, got {numerics!r}")
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
    if numerics != "current":
        if numerics == "stored":
            profile, threads, _ = stored_numerics([done[k] for k in chosen])
        else:
            profile, threads = numerics, PROFILES[numerics][1]
        # lines computed under no profile are recomputed here when this process runs under none either
        # (and the same threads), else under the CPU's own kernels
        if not _runs_under(profile, threads):
            return _recheck_elsewhere(path, profile or "native", threads, sample=sample, seed=seed,
                                      max_seconds=max_seconds, fn=fn, workers=workers, scheduler=scheduler,
                                      progress=progress)
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
                     "max_rel_diff": max_relative_difference(done[key]["records"], fresh[key]["records"]),
                     "stored_cpu": done[key].get("cpu") or "not recorded", "cpu": fresh[key].get("cpu"),
                     "stored_numerics": _label(done[key].get("numerics")),
                     "numerics": _label(fresh[key].get("numerics"))})
    return pd.DataFrame(rows)


def main(argv=None):
    """Command line; returns 0 when every recomputed task matches its stored rows."""
    parser = argparse.ArgumentParser(prog="python -m calibtut.run.recheck", description=__doc__.split("\n\n")[0])
    parser.add_argument("store", help="a sweep's .jsonl or .jsonl.gz store, "
                                      "e.g. results/<part>/<nb>/sweeps/<sweep>.jsonl.gz")
    parser.add_argument("--sample", type=int, default=20, help="tasks to recompute (default 20)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample (default 0)")
    parser.add_argument("--max-seconds", type=float, help="only tasks whose stored time is at most this")
    parser.add_argument("--numerics", default="stored", choices=_NUMERICS_CHOICES,
                        help="numerics profile to recompute under (default: the one the store's lines record)")
    parser.add_argument("--fn", help="the task function as module:qualname (default: the one the lines name)")
    parser.add_argument("--table", help="also write the table to this JSON file")
    parser.add_argument("--no-progress", dest="progress", action="store_false", help="hide the progress bar")
    place = parser.add_mutually_exclusive_group()
    place.add_argument("--workers", type=int, help="local Dask worker processes")
    place.add_argument("--scheduler", help="address of an existing Dask scheduler")
    args = parser.parse_args(argv)
    try:
        fn = resolve_function(args.fn) if args.fn else None
        table = recheck(args.store, sample=args.sample, seed=args.seed, max_seconds=args.max_seconds, fn=fn,
                        workers=args.workers, scheduler=args.scheduler, progress=args.progress,
                        numerics=args.numerics)
    except (FileNotFoundError, ValueError, TypeError, ImportError, AttributeError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.table:
        table.to_json(args.table, orient="records")
    with pd.option_context("display.width", 200, "display.max_rows", None, "display.max_colwidth", 60):
        print(table.drop(columns=["stored_numerics", "numerics"]).to_string(index=False))
    for column, who in (("stored_numerics", "stored under"), ("numerics", "recomputed under")):
        for label, count in table[column].value_counts().items():
            print(f"{count} task(s) {who}: {label}")
    matched = int(table["match"].sum())
    print(f"{matched} of {len(table)} recomputed tasks match the store exactly")
    elsewhere = table[~table["match"] & (table["stored_cpu"] != table["cpu"])]
    if len(elsewhere):
        cpus = ", ".join(sorted(set(elsewhere["stored_cpu"])))
        print(f"{len(elsewhere)} of the differing tasks were stored from another CPU ({cpus}; this one: "
              f"{table['cpu'].iloc[0]}). Under the reference profile, which runs MKL's vendor-independent path, "
              f"x86-64 CPUs with AVX2 give the same bits. Lines stored without it (MKL not recorded) ran MKL's "
              f"kernels for their CPU's vendor and instruction set, which another vendor's CPU cannot run; another "
              f"architecture (ARM) or a GPU has other kernels too: there, read max_rel_diff.")
    return 0 if matched == len(table) else 1


if __name__ == "__main__":
    sys.exit(main())
