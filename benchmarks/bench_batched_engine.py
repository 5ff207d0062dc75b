"""The study engine against the per-model and the vmapped paths: time per model-step, the arithmetic limit, the study.

Run from the repository root::

    python benchmarks/bench_batched_engine.py                  # CPU, 1 thread, about 2 CPU-minutes
    python benchmarks/bench_batched_engine.py --device cuda    # on a GPU machine

For each dataset (real features from the offline mirror, run 0's 80 % split,
capped at ``--rows`` training rows so that each epoch is a few steps of 512)
and each base model of the full run (MIX-NLL, MIX-CRPS, affine SQR-CRPS), the
task's whole grid (the vanilla model and every regularizer at the five
lambdas: 16 mixtures, 11 SQR models, as :func:`run_study_task` trains them
together) is trained for ``--epochs`` epochs, early stopping off, four ways:
one model at a time (:func:`calibtut.models.fit_study`), the vmapped stack
that the study uses today (:func:`calibtut.models.fit_study_batched`), the
engine (:func:`calibtut.models.fit_study_engine`) and the engine with
subnormals flushed to zero (``flush_denormal=True``). Each path runs one untimed
epoch first; the median of ``--repeats`` alternating runs is kept (CPU seconds
of this process on CPU, wall seconds on CUDA), as milliseconds per
model-step (validation included, as in training).

**Arithmetic limit.** A step of a model costs about ``6 * rows * sum(in * out)``
floating-point operations over its linear layers (forward, and backward for
inputs and weights); divided by the GFLOP/s of a large matrix product
measured here on the same threads it gives the time the step would take at
the machine's matmul peak. ``ratio`` is measured over that limit.

**Trainings per hour** at 10 steps per epoch and 100 epochs, the study's
typical training (as ``bench_batched_training.py`` counts them).

**The study projected.** The stored full run
(``results/regression_study/04_comparison_at_scale/runs.csv.gz``) holds each
trained model's epochs (``epochs_run``) and training size. Its model-steps
(``epochs * floor(n / batch)``, plus the validation pass as a third of a step
per 512 validation rows) times each base's mean measured time per model-step
(scaled by ``batch / 512`` for datasets under 512 rows) gives the CPU time of
the study on each path; two cores run two tasks at once, so the wall time is
half. The engine keeps a stopped model in its stack until the next host
check: ``(check_every - 1) / 2`` epochs are added per model. Writes
``results/benchmarks/batched_engine/steps.csv``, ``projection.csv``,
``provenance.json`` and ``summary.md`` (the two tables the book's GPU page
shows; ``--summary`` rewrites it from the CSV files alone).

**Whole tasks.** ``--full-tasks Yacht Concrete`` instead times complete
full-size tasks (run 0, the full profile's arguments: every model, the
post-hoc maps, the Appendix B extras, evaluation included) with the vmapped
stack and with the engine, one after the other, and writes
``full_tasks.csv``: CPU seconds of each and the model-epochs trained.
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

from calibtut.data import Standardizer
from calibtut.experiments.regression_study import run_study_task, study_split
from calibtut.models import fit_study, fit_study_batched, fit_study_engine, make_study_model
from calibtut.run.artifacts import atomic_write_text
from calibtut.run.provenance import git_state, machine, package_versions

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "benchmarks" / "batched_engine"
STORE = ROOT / "results" / "regression_study" / "04_comparison_at_scale" / "runs.csv.gz"
REGULARIZERS = {"mix-nll": ("pce-kde", "pce-sort", "qr"), "mix-crps": ("pce-kde", "pce-sort", "qr"),
                "sqr-affine": ("pce-kde", "trunc")}
LAMBDAS = (0.01, 0.05, 0.2, 1.0, 5.0)
PATHS = ("alone", "batched", "engine", "flushed")


def matmul_gflops(device, size=2048, repeats=5):
    """GFLOP/s of a ``size x size`` float32 matrix product on ``device`` (best of ``repeats``)."""
    g = torch.Generator().manual_seed(0)
    a, b = (torch.randn(size, size, generator=g).to(device) for _ in range(2))
    best = float("inf")
    for _ in range(repeats + 1):
        seconds = _timed(device, torch.mm, a, b)
        best = min(best, seconds)
    return 2 * size**3 / best / 1e9


def _timed(device, fn, *args, **kwargs):
    """Seconds of ``fn``: CPU seconds of this process on CPU, wall seconds on CUDA."""
    if device.type == "cuda":
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn(*args, **kwargs)
        torch.cuda.synchronize()
        return time.perf_counter() - start
    start = time.process_time()
    fn(*args, **kwargs)
    return time.process_time() - start


def step_flops(model, batch, n_levels=64):
    """Floating-point operations of one training step of ``model`` on ``batch`` rows."""
    rows = batch * n_levels if getattr(model, "form", None) == "paper" else batch
    weights = sum(m.in_features * m.out_features for m in model.modules() if isinstance(m, torch.nn.Linear))
    return 6 * rows * weights


def _grid(base, d, seed):
    specs = [("none", 0.0)] + [(r, lam) for r in REGULARIZERS[base] for lam in LAMBDAS]
    pairs = [make_study_model(base, d, regularizer=r, lam=lam, seed=seed) for r, lam in specs]
    return [m for m, _ in pairs], [loss for _, loss in pairs]


def measure(dataset, base, args, device, peak):
    split = study_split(dataset, 0)
    rows = np.sort(np.concatenate([split.train, split.cal]))[: args.rows]
    scaler = Standardizer().fit(split.X[rows], split.y[rows])
    X, y = scaler.transform(split.X[rows]), scaler.transform_y(split.y[rows])
    val = (scaler.transform(split.X[split.val]), scaler.transform_y(split.y[split.val]))
    batch = min(512, len(X))
    common = {"val": val, "patience": 10**6, "batch_size": batch, "device": device}

    def alone(models, losses, epochs):
        for model, loss in zip(models, losses):
            fit_study(model, X, y, loss=loss, seed=0, epochs=epochs, **common)

    def batched(models, losses, epochs):
        fit_study_batched(models, X, y, losses=losses, seeds=[0] * len(models), epochs=epochs, **common)

    def engine(models, losses, epochs):
        fit_study_engine(models, X, y, losses=losses, seeds=[0] * len(models), epochs=epochs, **common)

    def flushed(models, losses, epochs):
        fit_study_engine(models, X, y, losses=losses, seeds=[0] * len(models), epochs=epochs, flush_denormal=True,
                         **common)

    paths = {"alone": alone, "batched": batched, "engine": engine, "flushed": flushed}
    for fit in paths.values():  # first calls pay for allocations and dispatch caches
        fit(*_grid(base, X.shape[1], 0), 1)
    seconds = {key: [] for key in paths}
    for _ in range(args.repeats):
        for key, fit in paths.items():
            seconds[key].append(_timed(device, fit, *_grid(base, X.shape[1], 0), args.epochs))
    models = _grid(base, X.shape[1], 0)[0]
    model_steps = len(models) * args.epochs * (len(X) // batch)
    limit_ms = 1e3 * step_flops(models[0], batch) / (peak * 1e9)
    row = {"dataset": dataset, "base": base, "models": len(models), "features": X.shape[1], "batch": batch,
           "steps_per_epoch": len(X) // batch, "epochs": args.epochs, "limit_ms": round(limit_ms, 3)}
    for key in paths:
        ms = 1e3 * float(np.median(seconds[key])) / model_steps
        row[f"{key}_ms"] = round(ms, 3)
        row[f"{key}_ratio"] = round(ms / limit_ms, 2)
        row[f"{key}_trainings_per_hour"] = round(3.6e6 / (ms * 10 * 100), 1)
    return row


def project(steps, check_every, cores=2):
    """CPU hours and wall hours on ``cores`` of the stored full run on each path, per base and in total."""
    runs = pd.read_csv(STORE)
    keys = ["dataset", "run", "base", "regularizer", "lam", "train_fraction"]
    trained = runs.drop_duplicates(keys)[keys + ["n_train", "n_val", "epochs_run"]]
    batch = np.minimum(512, trained["n_train"])
    per_epoch = trained["n_train"] // batch + trained["n_val"] / (3 * 512)
    scale = batch / 512
    ms = steps.groupby("base")[[f"{p}_ms" for p in PATHS]].mean()
    rows = []
    for base, part in trained[trained["base"].isin(ms.index)].groupby("base"):
        idx = part.index
        row = {"base": base, "trainings": len(part),
               "model_steps_millions": round(float((per_epoch[idx] * part["epochs_run"]).sum()) / 1e6, 2)}
        for path in PATHS:
            epochs = part["epochs_run"] + ((check_every - 1) / 2 if path in ("engine", "flushed") else 0)
            hours = float((per_epoch[idx] * epochs * scale[idx]).sum()) * ms.loc[base, f"{path}_ms"] / 3.6e6
            row[f"{path}_cpu_h"] = round(hours, 2)
            row[f"{path}_wall_h_{cores}_cores"] = round(hours / cores, 2)
        rows.append(row)
    table = pd.DataFrame(rows)
    total = {"base": "all", **table.drop(columns="base").sum().round(2).to_dict()}
    return pd.concat([table, pd.DataFrame([total])], ignore_index=True)


def full_tasks(datasets, bases, out):
    """CPU seconds of whole full-size tasks (run 0) with the vmapped stack and with the engine."""
    rows = []
    for dataset in datasets:
        for base in bases:
            row = {"dataset": dataset, "base": base}
            for path in ("vmapped", "engine"):
                start = time.process_time()
                result = run_study_task(dataset, 0, base, epochs=5000, combine=True, map_on_train=True,
                                        trainer=path)
                row[f"{path}_s"] = round(time.process_time() - start, 1)
                trained = result.drop_duplicates(["regularizer", "lam", "train_fraction"])
                row[f"{path}_model_epochs"] = int(trained["epochs_run"].sum())
            row["speedup"] = round(row["vmapped_s"] / row["engine_s"], 2)
            rows.append(row)
            print(row, file=sys.stderr)
    table = pd.DataFrame(rows)
    atomic_write_text(out / "full_tasks.csv", table.to_csv(index=False))
    return table


def summary(folder):
    """Write ``summary.md``: time per model-step against the limit, and the projection, from the CSV files."""
    steps = pd.read_csv(folder / "steps.csv")
    projection = pd.read_csv(folder / "projection.csv")
    step_table = pd.DataFrame({
        "dataset": steps["dataset"], "base": steps["base"], "limit": steps["limit_ms"],
        "alone": steps["alone_ms"], "vmapped": steps["batched_ms"], "engine": steps["engine_ms"],
        "flushed": steps["flushed_ms"], "flushed / limit": steps["flushed_ratio"]})
    wall = [c for c in projection.columns if c.endswith("_wall_h_2_cores")]
    study = projection[["base", *wall]].rename(columns={
        "alone_wall_h_2_cores": "alone", "batched_wall_h_2_cores": "vmapped", "engine_wall_h_2_cores": "engine",
        "flushed_wall_h_2_cores": "flushed"})
    text = "\n".join([
        "**Milliseconds per model-step** (one CPU thread): the arithmetic limit, one model at a time, "
        "the vmapped stack, the engine, the engine with subnormals flushed to zero", "",
        step_table.to_markdown(index=False, floatfmt=".2f"), "",
        "**The stored study on two cores**, projected from those times (wall hours)", "",
        study.to_markdown(index=False, floatfmt=".2f"), ""])
    atomic_write_text(folder / "summary.md", text)
    return folder / "summary.md"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--datasets", nargs="+", default=["Kin8nm", "Crime", "Protein"])
    parser.add_argument("--bases", nargs="+", default=list(REGULARIZERS))
    parser.add_argument("--rows", type=int, default=2048)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--check-every", type=int, default=5)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--summary", action="store_true", help="only rewrite summary.md from the CSV files")
    parser.add_argument("--full-tasks", nargs="+", metavar="DATASET", help="time whole tasks of these datasets")
    args = parser.parse_args(argv)
    if args.summary:
        print(summary(args.out))
        return None
    torch.set_num_threads(args.threads)
    if args.full_tasks:
        args.out.mkdir(parents=True, exist_ok=True)
        print(full_tasks(args.full_tasks, args.bases, args.out).to_string(index=False))
        return None
    device = torch.device(args.device)
    load_before = os.getloadavg()
    peak = matmul_gflops(device)
    print(f"matmul peak {peak:.1f} GFLOP/s on {args.threads} thread(s)", file=sys.stderr)
    rows = []
    for dataset in args.datasets:
        for base in args.bases:
            row = measure(dataset, base, args, device, peak)
            rows.append(row)
            print(f"{dataset:8s} {base:10s} limit {row['limit_ms']:.2f} ms | alone {row['alone_ms']:.2f} "
                  f"batched {row['batched_ms']:.2f} engine {row['engine_ms']:.2f} flushed {row['flushed_ms']:.2f} ms "
                  "per model-step",
                  file=sys.stderr)
    steps = pd.DataFrame(rows)
    projection = project(steps, args.check_every)
    args.out.mkdir(parents=True, exist_ok=True)
    suffix = "" if device.type == "cpu" else f"_{device.type}"
    suffix += "" if args.threads == 1 else f"_{args.threads}threads"
    atomic_write_text(args.out / f"steps{suffix}.csv", steps.to_csv(index=False))
    atomic_write_text(args.out / f"projection{suffix}.csv", projection.to_csv(index=False))
    provenance = {
        "script": "benchmarks/bench_batched_engine.py",
        "arguments": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "matmul_gflops": round(peak, 1),
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "torch_threads": torch.get_num_threads(),
        "load_average_1_5_15min": {"before": load_before, "after": os.getloadavg()},
        "versions": package_versions(),
        "machine": machine(),
        "git": git_state(ROOT),
    }
    atomic_write_text(args.out / f"provenance{suffix}.json", json.dumps(provenance, indent=2) + "\n")
    if not suffix:
        summary(args.out)
    print(steps.to_string(index=False))
    print(projection.to_string(index=False))
    return steps, projection


if __name__ == "__main__":
    main()
