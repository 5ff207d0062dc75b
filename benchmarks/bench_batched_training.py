"""Trainings per hour of paper 002's models: one at a time against batched (stacked + vmap).

Run from the repository root::

    python benchmarks/bench_batched_training.py                 # CPU, 1 thread
    python benchmarks/bench_batched_training.py --device cuda   # on a GPU machine

For each base model and each stack size M, M models of the study (the lambda
grid over the base model's regularizers, as a dataset/split shares them) are
trained for ``--epochs`` epochs on synthetic data of ``--n`` rows (10 steps of
512 per epoch at the default) with early stopping switched off, once with
:func:`calibtut.models.fit_study` model after model and once together with
:func:`calibtut.models.fit_study_batched`. Both paths first run one untimed
epoch (first calls pay for allocation and dispatch caches), then alternate
``--repeats`` times; the median of each is kept. The time per model-epoch gives
the trainings per hour at ``--assumed-epochs`` epochs per training (about 100
in the study). Times are CPU seconds of this process (``time.process_time``)
on CPU and wall seconds on CUDA; wall times are stored as well. Writes
``results/regression_study/benchmarks/batched_training.csv`` (with a suffix
for another device or thread count) and its provenance.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from calibtut.models import fit_study, fit_study_batched, make_study_model
from calibtut.run.artifacts import atomic_write_text
from calibtut.run.provenance import git_state, machine, package_versions

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "regression_study" / "benchmarks"
REGULARIZERS = {"mix-nll": ("pce-kde", "pce-sort", "qr"), "sqr-affine": ("pce-kde", "trunc"), "sqr": ("pce-kde", "trunc")}
LAMBDAS = (0.01, 0.05, 0.2, 1.0, 5.0)


def _specs(name, m):
    regs = REGULARIZERS[name]
    return [(regs[i % len(regs)], LAMBDAS[i % len(LAMBDAS)]) for i in range(m)]


def _build(name, specs, d, device):
    pairs = [make_study_model(name, d, regularizer=r, lam=lam, seed=i) for i, (r, lam) in enumerate(specs)]
    return [p[0].to(device) for p in pairs], [p[1] for p in pairs]


def _timed(device, fn, *args):
    if device.type == "cuda":
        torch.cuda.synchronize()
    wall, cpu = time.perf_counter(), time.process_time()
    fn(*args)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - wall, time.process_time() - cpu


def measure(name, m, args, device):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(args.n, args.d))
    y = X[:, 0] + 0.5 * rng.normal(size=args.n)
    val = (X[: args.n // 8], y[: args.n // 8])
    specs = _specs(name, m)

    def alone(models, losses, epochs):
        for i, (model, loss) in enumerate(zip(models, losses)):
            fit_study(model, X, y, loss=loss, val=val, seed=i, device=device, epochs=epochs, patience=10**6,
                      batch_size=512)

    def batched(models, losses, epochs):
        fit_study_batched(models, X, y, losses=losses, val=val, seeds=list(range(m)), device=device,
                          epochs=epochs, patience=10**6, batch_size=512)

    paths = {"alone": alone, "batched": batched}
    for fit in paths.values():  # warm-up: one untimed epoch of each path
        fit(*_build(name, specs, args.d, device), 1)
    times = {key: [] for key in paths}
    for _ in range(args.repeats):
        for key, fit in paths.items():
            times[key].append(_timed(device, fit, *_build(name, specs, args.d, device), args.epochs))
    (wall_a, cpu_a), (wall_b, cpu_b) = (np.median(np.array(times[k]), axis=0) for k in ("alone", "batched"))
    seconds_a = wall_a if device.type == "cuda" else cpu_a
    seconds_b = wall_b if device.type == "cuda" else cpu_b
    per_training = args.assumed_epochs / args.epochs
    return {
        "model": name,
        "stack_size": m,
        "epochs": args.epochs,
        "repeats": args.repeats,
        "steps_per_epoch": args.n // 512,
        "alone_s": round(seconds_a, 3),
        "batched_s": round(seconds_b, 3),
        "alone_wall_s": round(wall_a, 3),
        "batched_wall_s": round(wall_b, 3),
        "speedup": round(seconds_a / seconds_b, 2),
        "trainings_per_hour_alone": round(3600 * m / (seconds_a * per_training), 1),
        "trainings_per_hour_batched": round(3600 * m / (seconds_b * per_training), 1),
        "device": str(device),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--n", type=int, default=5120)
    parser.add_argument("--d", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--assumed-epochs", type=int, default=100)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 5, 15])
    parser.add_argument("--models", nargs="+", default=["mix-nll", "sqr-affine", "sqr"])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    load_before = os.getloadavg()
    rows = []
    for name in args.models:
        for m in args.sizes:
            row = measure(name, m, args, device)
            rows.append(row)
            print(f"{name:10s} M={m:3d} alone {row['alone_s']:8.2f}s batched {row['batched_s']:8.2f}s "
                  f"x{row['speedup']}", file=sys.stderr)
    df = pd.DataFrame(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    suffix = "" if device.type == "cpu" else f"_{device.type}"
    suffix += "" if args.threads == 1 else f"_{args.threads}threads"
    atomic_write_text(args.out / f"batched_training{suffix}.csv", df.to_csv(index=False))
    provenance = {
        "script": "benchmarks/bench_batched_training.py",
        "arguments": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "torch_threads": torch.get_num_threads(),
        "load_average_1_5_15min": {"before": load_before, "after": os.getloadavg()},
        "versions": package_versions(),
        "machine": machine(),
        "git": git_state(ROOT),
    }
    atomic_write_text(args.out / f"provenance{suffix}.json", json.dumps(provenance, indent=2) + "\n")
    print(df.to_string(index=False))
    return df


if __name__ == "__main__":
    main()
