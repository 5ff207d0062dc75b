"""Time and peak memory of the QR loss (forward + backward) against batch size.

NeuralSort builds n x n matrices, so the quantile-regularization loss costs
O(n^2) time and memory per batch; the same spacing estimator on a hard sort
(``torch.sort``, gradient through the values) costs O(n log n). This script
measures both for n = 64, 128, ..., 4096 and writes

    results/quantile_regularization/benchmarks/qr_loss.csv
    results/quantile_regularization/benchmarks/provenance.json

Peak memory: on CUDA, ``torch.cuda.max_memory_allocated`` after
``reset_peak_memory_stats``, minus the memory held before the step. On CPU, the
rise of the process's resident-set high-water mark (Linux ``VmHWM``, reset
through ``/proc/self/clear_refs``) over its resident set before the step, after
``malloc_trim`` has returned freed memory to the system; where that is not
available, ``resource.getrusage`` (a high-water mark that is never reset, so
only increases are seen) is used and the method column says so.

Wall-clock times (median and minimum over repeats) and the process CPU time
(median) are recorded: on a shared machine the CPU time, with one torch thread,
is the steadier measure of the work done; the provenance records the load average.

Usage::

    python benchmarks/bench_qr_loss.py [--device cpu|cuda] [--max-n 4096] [--tau 1e-3] [--threads 1]
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import json
import math
import os
import resource
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import torch

from calibtut.regularizers import QuantileRegularizedLoss, resolve_spacing
from calibtut.run.artifacts import atomic_write_text
from calibtut.run.provenance import git_state, machine, package_versions

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "quantile_regularization" / "benchmarks"


def _libc():
    name = ctypes.util.find_library("c")
    return ctypes.CDLL(name) if name else None


LIBC = _libc()


def _status_kb(field):
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def _can_reset_hwm():
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
            handle.write("5")
        _status_kb("VmHWM")
    except OSError:
        return False
    return True


class CpuPeak:
    """Peak resident memory added by a block of code, in bytes."""

    def __init__(self):
        self.method = "VmHWM reset" if _can_reset_hwm() else "ru_maxrss (never reset)"

    def __enter__(self):
        if LIBC is not None and hasattr(LIBC, "malloc_trim"):
            LIBC.malloc_trim(0)
        if self.method == "VmHWM reset":
            with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
                handle.write("5")
            self.base_kb = _status_kb("VmRSS")
        else:
            self.base_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return self

    def __exit__(self, *exc):
        if self.method == "VmHWM reset":
            peak_kb = _status_kb("VmHWM")
        else:
            peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        self.bytes = max(peak_kb - self.base_kb, 0) * 1024
        return False


class CudaPeak:
    method = "torch.cuda.max_memory_allocated"

    def __init__(self, device):
        self.device = device

    def __enter__(self):
        torch.cuda.synchronize(self.device)
        torch.cuda.reset_peak_memory_stats(self.device)
        self.base = torch.cuda.memory_allocated(self.device)
        return self

    def __exit__(self, *exc):
        torch.cuda.synchronize(self.device)
        self.bytes = torch.cuda.max_memory_allocated(self.device) - self.base
        return False


def make_batch(n, device, seed=0):
    """A Gaussian model's parameters (leaf tensors) and targets for one batch."""
    g = torch.Generator().manual_seed(seed)
    y = torch.randn(n, generator=g)
    mean = (0.1 * torch.randn(n, generator=g)).to(device).requires_grad_(True)
    log_std = torch.full((n,), math.log(0.7)).to(device).requires_grad_(True)
    return mean, log_std, y.to(device)


def step(loss, mean, log_std, y):
    mean.grad = log_std.grad = None
    value = loss((mean, log_std.exp()), y)
    value.backward()
    return value


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure(n, sort, device, tau, min_repeats=3, budget_s=1.0):
    loss = QuantileRegularizedLoss(lam=1.0, spacing="sqrt", sort=sort, tau=tau)
    mean, log_std, y = make_batch(n, device)
    step(loss, mean, log_std, y)  # warm-up
    sync(device)
    times, cpu_times = [], []
    started = time.perf_counter()
    while len(times) < min_repeats or (time.perf_counter() - started < budget_s and len(times) < 200):
        t0, c0 = time.perf_counter(), time.process_time()
        step(loss, mean, log_std, y)
        sync(device)
        times.append(time.perf_counter() - t0)
        cpu_times.append(time.process_time() - c0)
    tracker = CudaPeak(device) if device.type == "cuda" else CpuPeak()
    mean.grad = log_std.grad = None
    with tracker:
        step(loss, mean, log_std, y)
        sync(device)
    return {
        "sort": sort,
        "n": n,
        "spacing_k": resolve_spacing("sqrt", n),
        "tau": tau if sort == "neural" else float("nan"),
        "repeats": len(times),
        "time_ms_median": 1e3 * statistics.median(times),
        "time_ms_min": 1e3 * min(times),
        "cpu_ms_median": 1e3 * statistics.median(cpu_times),
        "peak_mem_mb": tracker.bytes / 2**20,
        "nxn_float32_mb": 4 * n * n / 2**20,
        "memory_method": tracker.method,
        "device": str(device),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--max-n", type=int, default=4096)
    parser.add_argument("--tau", type=float, default=1e-3)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument(
        "--threads", type=int, default=1, help="torch CPU threads (1: steadier timings on a shared machine)"
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    sizes = [2**p for p in range(6, int(math.log2(args.max_n)) + 1)]
    load_before = os.getloadavg()
    rows = []
    for n in sizes:
        for sort in ("neural", "hard"):
            row = measure(n, sort, device, args.tau)
            rows.append(row)
            print(
                f"n={n:5d} {sort:6s} {row['time_ms_median']:9.3f} ms  peak {row['peak_mem_mb']:8.2f} MB",
                file=sys.stderr,
            )
    df = pd.DataFrame(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out / "qr_loss.csv", df.round(4).to_csv(index=False))
    provenance = {
        "script": "benchmarks/bench_qr_loss.py",
        "arguments": {"device": str(device), "max_n": args.max_n, "tau": args.tau, "threads": args.threads},
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "torch_threads": torch.get_num_threads(),
        "load_average_1_5_15min": {"before": load_before, "after": os.getloadavg()},
        "versions": package_versions(),
        "machine": machine(),
        "git": git_state(ROOT),
    }
    atomic_write_text(args.out / "provenance.json", json.dumps(provenance, indent=2) + "\n")
    print(df.round(3).to_string(index=False))
    return df


if __name__ == "__main__":
    main()
