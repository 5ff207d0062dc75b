"""Cost of one full-size task of paper 002's study, and the full offline run estimated from it.

Run from the repository root::

    python benchmarks/bench_study_task.py                       # Yacht, Kin8nm, Protein; 1 thread
    python benchmarks/bench_study_task.py --datasets Yacht --bases mix-nll

A task is what the ``full`` profile of
``notebooks/regression_study/04_comparison_at_scale.md`` sweeps: one dataset,
one run and one base model, with the whole lambda grid, the post-hoc base and
the Appendix B.2/B.3 extras (:func:`calibtut.experiments.regression_study.run_study_task`
with its defaults and ``combine=True, map_on_train=True``). Each is timed once
(CPU seconds of this process and wall seconds), run 0, and the tables are
rewritten after every task (``--resume`` keeps the tasks already measured). The estimate of the
whole run scales each measured base model's CPU seconds linearly in the
number of training rows between the measured datasets (the cost per epoch is
proportional to the steps, and the epochs to early stopping vary by dataset,
so this is a rough figure) and sums over the offline datasets and five runs;
wall time with ``W`` workers is that sum divided by ``W``. Writes
``results/regression_study/study_task_cost/tasks.csv``, ``estimate.csv`` and
``provenance.json``.
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

from calibtut.data.regression_study import STUDY_DATASETS
from calibtut.experiments.regression_study import OFFLINE_DATASETS, run_study_task
from calibtut.run.artifacts import atomic_write_text
from calibtut.run.provenance import git_state, machine, package_versions

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "regression_study" / "study_task_cost"


def measure(dataset, base):
    wall, cpu = time.perf_counter(), time.process_time()
    rows = run_study_task(dataset, 0, base, combine=True, map_on_train=True, num_threads=None)
    return {"dataset": dataset, "base": base, "n_train_80": int(rows["n_train"].max()), "models": len(rows),
            "epochs_run_mean": round(float(rows["epochs_run"].mean()), 1),
            "epochs_run_max": int(rows["epochs_run"].max()),
            "cpu_s": round(time.process_time() - cpu, 1), "wall_s": round(time.perf_counter() - wall, 1)}


def estimate(tasks, runs, workers):
    """CPU hours of the offline study: per base, cpu_s interpolated in the training rows, summed.

    A base measured on one size only follows MIX-NLL's curve, scaled by their
    ratio on the datasets both were measured on.
    """
    sizes = np.array([int(0.8 * STUDY_DATASETS[name].train_rows / 0.65) for name in OFFLINE_DATASETS])

    def curve(group):
        group = group.sort_values("n_train_80")
        x, y = group["n_train_80"].to_numpy(float), group["cpu_s"].to_numpy(float)
        per_task = np.interp(sizes, x, y)
        if len(x) > 1:  # beyond the largest measured set, extrapolate linearly from the last two
            big = sizes > x[-1]
            per_task[big] = y[-1] + (y[-1] - y[-2]) / (x[-1] - x[-2]) * (sizes[big] - x[-1])
        return per_task

    reference = tasks[tasks["base"] == "mix-nll"]
    out = []
    for base, group in tasks.groupby("base"):
        if group["n_train_80"].nunique() > 1 or reference.empty:
            per_task, how = curve(group), "measured sizes"
        else:
            common = group.merge(reference, on="dataset", suffixes=("", "_ref"))
            ratio = float((common["cpu_s"] / common["cpu_s_ref"]).mean())
            per_task, how = ratio * curve(reference), f"MIX-NLL x {ratio:.2f}"
        cpu_h = float(per_task.sum()) * runs / 3600
        out.append({"base": base, "datasets": len(sizes), "runs": runs, "cpu_hours": round(cpu_h, 1),
                    "wall_hours_workers": round(cpu_h / workers, 1), "workers": workers, "scaled_by": how})
    total = pd.DataFrame(out)
    total.loc[len(total)] = {"base": "all", "datasets": len(sizes), "runs": runs,
                             "cpu_hours": round(total["cpu_hours"].sum(), 1),
                             "wall_hours_workers": round(total["wall_hours_workers"].sum(), 1), "workers": workers,
                             "scaled_by": ""}
    return total


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--datasets", nargs="+", default=["Yacht", "Kin8nm", "Protein"])
    parser.add_argument("--bases", nargs="+", default=["mix-nll", "mix-crps", "sqr-affine"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--resume", action="store_true",
                        help="keep the tasks already in <out>/tasks.csv and measure only the others")
    parser.add_argument("--estimate-only", action="store_true",
                        help="rewrite <out>/estimate.csv from <out>/tasks.csv without measuring")
    args = parser.parse_args(argv)
    if args.estimate_only:
        total = estimate(pd.read_csv(args.out / "tasks.csv"), 5, args.workers)
        atomic_write_text(args.out / "estimate.csv", total.to_csv(index=False))
        print(total.to_string(index=False))
        return None, total
    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    rows = []
    args.out.mkdir(parents=True, exist_ok=True)
    if args.resume and (args.out / "tasks.csv").is_file():
        rows = pd.read_csv(args.out / "tasks.csv").to_dict("records")
    done = {(r["dataset"], r["base"]) for r in rows}
    for dataset in args.datasets:
        for base in args.bases:
            if (dataset, base) in done:
                continue
            rows.append(measure(dataset, base))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
            # written after every task, so an interrupted benchmark keeps what it measured
            tasks = pd.DataFrame(rows)
            total = estimate(tasks, 5, args.workers)
            atomic_write_text(args.out / "tasks.csv", tasks.to_csv(index=False))
            atomic_write_text(args.out / "estimate.csv", total.to_csv(index=False))
            provenance = {
                "script": "benchmarks/bench_study_task.py",
                "arguments": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
                "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "tasks_done": len(rows),
                "torch_threads": torch.get_num_threads(),
                "load_average_1_5_15min": {"before": load_before, "after": os.getloadavg()},
                "versions": package_versions(),
                "machine": machine(),
                "git": git_state(ROOT),
            }
            atomic_write_text(args.out / "provenance.json", json.dumps(provenance, indent=2) + "\n")
    print(tasks.to_string(index=False))
    print(total.to_string(index=False))
    return tasks, total


if __name__ == "__main__":
    main()
