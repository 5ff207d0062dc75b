"""Throughput of calibtut.run.sweep: serial against a local Dask cluster of 1, 2, ... workers.

Run from the repository root on a quiet machine::

    python benchmarks/bench_sweep.py                      # serial vs 1 and 2 workers, 16 tasks
    python benchmarks/bench_sweep.py --workers 1 4 8 16 --tasks 64   # a 16-core machine

The task is a representative training task of the book: one configuration of
the quantile-regularization experiment (``run_qr_config``: Dropout-VI with the
QR loss on a small UCI set, a few seconds each). Every engine runs the same
tasks from scratch (no store), and must return the identical table; serial
execution runs in this process with one BLAS/OpenMP/torch thread, like each
worker. Throughput is tasks per hour of wall time once the engine has started
and every process has imported torch (``start_s``, the time that took, is paid
once per run, which lasts hours at full scale); the speed-up is against serial,
and the parallel efficiency is the speed-up divided by the number of workers. The last row runs the grid on bare
processes (no Dask, nothing stored): the ceiling the machine itself allows.

Writes ``results/sweep_engine/benchmarks/sweep_throughput.csv`` and ``provenance.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "sweep_engine" / "benchmarks"


def tasks(n, epochs):
    datasets = ("yacht", "concrete", "airfoil", "boston")
    return [{"dataset": datasets[i % len(datasets)], "fold": (i // len(datasets)) % 5, "seed": i, "model": "dropout",
             "lam": 1.0, "epochs": epochs, "n_mc": 16, "device": "cpu"} for i in range(n)]


def _one_thread():
    import torch

    torch.set_num_threads(1)


def _timed(task):
    from calibtut.experiments.quantile_regularization import run_qr_config

    start = time.perf_counter()
    run_qr_config(**task)
    return time.perf_counter() - start


def plain_processes(grid, n):
    """The machine's own ceiling: the grid on ``n`` bare processes (no Dask, nothing stored)."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    with ProcessPoolExecutor(n, mp_context=get_context("spawn"), initializer=_one_thread) as pool:
        start = time.perf_counter()
        list(pool.map(_timed, tasks(2 * n, 1)))
        start_s = time.perf_counter() - start
        start = time.perf_counter()
        seconds = list(pool.map(_timed, grid))
        wall = time.perf_counter() - start
    return {"engine": f"{n} bare processes", "workers": n, "tasks": len(grid), "start_s": start_s, "wall_s": wall,
            "task_s_sum": sum(seconds), "tasks_per_hour": 3600 * len(grid) / wall}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="cluster sizes (default 1 2)")
    parser.add_argument("--tasks", type=int, default=16, help="tasks per engine (default 16)")
    parser.add_argument("--epochs", type=int, default=40, help="epochs per training (default 40)")
    args = parser.parse_args(argv)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = "1"
    import torch

    torch.set_num_threads(1)
    from calibtut.experiments.quantile_regularization import run_qr_config
    from calibtut.run import sweep
    from calibtut.run.provenance import machine, package_versions

    grid = tasks(args.tasks, args.epochs)
    load_before = os.getloadavg()[0]
    rows, reference = [], None
    for workers in [None, *args.workers]:
        # start the engine and import torch in every process (a cluster is reused by later sweeps)
        start = time.perf_counter()
        sweep(tasks(2 * (workers or 1), 1), run_qr_config, progress=False, workers=workers, gpu_workers=0)
        start_s = time.perf_counter() - start
        start = time.perf_counter()
        table = sweep(grid, run_qr_config, progress=False, seconds="task_s", workers=workers, gpu_workers=0)
        wall = time.perf_counter() - start
        if reference is None:
            reference = table.drop(columns="task_s")
        elif not table.drop(columns="task_s").equals(reference):
            raise SystemExit(f"workers={workers} returned a different table than serial execution")
        rows.append({"engine": "serial" if workers is None else f"{workers} workers", "workers": workers or 1,
                     "tasks": len(grid), "start_s": start_s, "wall_s": wall, "task_s_sum": table["task_s"].sum(),
                     "tasks_per_hour": 3600 * len(grid) / wall})
        print(rows[-1], flush=True)
    rows.append(plain_processes(grid, max(args.workers)))
    result = pd.DataFrame(rows)
    serial = result.loc[0, "tasks_per_hour"]
    result["speedup"] = result["tasks_per_hour"] / serial
    result["efficiency"] = result["speedup"] / result["workers"]
    result["identical_table"] = [True] * (len(rows) - 1) + [None]  # bare processes: not compared
    OUT.mkdir(parents=True, exist_ok=True)
    result.round(4).to_csv(OUT / "sweep_throughput.csv", index=False)
    meta = {"task": "calibtut.experiments.quantile_regularization.run_qr_config "
                    "(Dropout-VI, QR loss, yacht/concrete/airfoil/boston)",
            "epochs": args.epochs, "n_mc": 16, "threads_per_worker": 1,
            "load_average_1min": {"before": load_before, "after": os.getloadavg()[0]},
            "python": platform.python_version(),
            "packages": package_versions(), "machine": machine()}
    (OUT / "provenance.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(result.to_string(index=False))


if __name__ == "__main__":
    main()
