"""Speed of calibtut.online: vectorised calibrator vs per-step reference, exact vs damped solver.

Run from the repository root::

    python benchmarks/bench_online.py            # reference timed on 50 series, scaled to all
    python benchmarks/bench_online.py --ref-series 1000   # reference on every series

Writes ``results/drift/benchmarks/bench_online.csv`` and ``provenance.json``. Times are
CPU seconds (``time.process_time``, best of a few runs), since wall time on a
shared machine mostly measures the other jobs; wall times are stored as well.

1. The paper's calibrator (conformal + PID + springs, paper preset) on
   ``n_series x T x K = 1000 x 100 x 9`` (a jump drift) with ``DriftCalibrator.run``
   against the plain per-step, per-series reference of
   ``tests/test_online_reference.py`` (the same outputs, checked here). The
   reference's time is measured on ``--ref-series`` series and scaled linearly
   (series are independent) unless every series is run.
2. The spring equilibrium on the problems that arise in that run: the exact
   Newton/tridiagonal solver against the damped iteration of the public code,
   (a) the damped iteration at the public code's settings vs the exact solver
   asked, problem by problem, for the accuracy the damped iteration reached,
   and (b) both asked for ``max |net force| <= 1e-8`` (the damped iteration
   stops after ``--max-iter-tight`` iterations, so its time is a lower bound
   and the share of problems it leaves unconverged is reported).
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import platform
import time
from pathlib import Path

import numpy as np

import calibtut
from calibtut.online import DriftCalibrator, drifting_gaussian_stream, equilibrium_residual
from calibtut.online import calibrator as calibrator_module
from calibtut.online.springs import solve_equilibrium, solve_equilibrium_damped

ROOT = Path(__file__).resolve().parents[1]


def load_reference():
    spec = importlib.util.spec_from_file_location("online_reference", ROOT / "tests" / "test_online_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(fn, repeat=1):
    """Best CPU time (``time.process_time``) over ``repeat`` runs, and the last output.

    CPU time rather than wall time: the benchmark runs on shared machines
    where wall time mostly measures the other jobs. Wall times are recorded too.
    """
    best = np.inf
    out = None
    for _ in range(repeat):
        start = time.process_time()
        wall = time.perf_counter()
        out = fn()
        cpu = time.process_time() - start
        WALL.append(time.perf_counter() - wall)
        best = min(best, cpu)
    return best, out


WALL = []


def bench_calibrator(n_series, n_steps, ref_series, seed):
    s = drifting_gaussian_stream("jump", n_series, n_steps, seed=seed)
    cal = DriftCalibrator(s.levels, s.B)
    fast_s, fast = timed(lambda: cal.run(s.forecasts, s.labels), repeat=2)
    ref = load_reference()
    ref.ref_tolerance.cache_clear()
    fast_wall = min(WALL[-2:])
    m = min(ref_series, n_series)
    start, wall = time.process_time(), time.perf_counter()
    ref_out = np.stack([ref.reference_run(s.forecasts[i], s.labels[i], s.levels, s.B) for i in range(m)])
    ref_s = (time.process_time() - start) * n_series / m
    ref_wall = (time.perf_counter() - wall) * n_series / m
    diff = float(np.abs(ref_out - fast[:m]).max())
    return {
        "n_series": n_series, "n_steps": n_steps, "n_levels": len(s.levels),
        "fast_s": fast_s, "reference_s": ref_s, "reference_series_timed": m,
        "speedup": ref_s / fast_s, "fast_wall_s": fast_wall, "reference_wall_s": ref_wall,
        "speedup_wall": ref_wall / fast_wall, "max_abs_difference": diff,
    }, s


def collect_problems(stream):
    """The (initial prediction, force) pairs that DriftCalibrator hands to the solver."""
    problems = []
    original = calibrator_module.solve_equilibrium

    def record(base, force, eta, B, **kwargs):
        problems.append((base.copy(), force.copy()))
        return original(base, force, eta, B, **kwargs)

    calibrator_module.solve_equilibrium = record
    try:
        DriftCalibrator(stream.levels, stream.B).run(stream.forecasts, stream.labels)
    finally:
        calibrator_module.solve_equilibrium = original
    base = np.concatenate([p[0] for p in problems])
    force = np.concatenate([p[1] for p in problems])
    return base, force


def bench_solver(base, force, eta, B, max_iter_tight):
    rows = []
    row_resid = lambda z: np.abs(equilibrium_residual(z, base, force, eta, B)).max(axis=1)  # noqa: E731
    # (a) the damped iteration at the public code's settings; the exact solver is asked, problem by
    #     problem, for the accuracy the damped iteration reached on that problem
    damped_s, damped = timed(lambda: solve_equilibrium_damped(base, force, eta, B), repeat=2)
    target = row_resid(damped)
    exact_s, exact = timed(lambda: solve_equilibrium(base, force, eta, B, tol=target), repeat=3)
    reached = row_resid(exact)
    rows.append({"setting": "public-code damped settings, per-problem equal accuracy", "n_problems": len(base),
                 "damped_s": damped_s, "exact_s": exact_s,
                 "damped_median_residual": float(np.median(target)), "damped_max_residual": float(target.max()),
                 "exact_median_residual": float(np.median(reached)), "exact_max_residual": float(reached.max()),
                 "speedup": damped_s / exact_s})
    # (b) both to the same tight accuracy (max |net force| <= 1e-8); the damped iteration runs without
    #     its gap floor and stops after max_iter_tight iterations, so its time is a lower bound
    damped_s, damped = timed(lambda: solve_equilibrium_damped(base, force, eta, B, min_gap=1e-12, tol=1e-13,
                                                              max_iter=max_iter_tight))
    exact_s, exact = timed(lambda: solve_equilibrium(base, force, eta, B, tol=1e-8), repeat=3)
    d_res, e_res = row_resid(damped), row_resid(exact)
    ok = d_res <= 1e-8
    rows.append({"setting": "both to max |net force| <= 1e-8", "n_problems": len(base),
                 "damped_unconverged_fraction": float(1 - ok.mean()),
                 "damped_s": damped_s, "exact_s": exact_s,
                 "damped_max_residual": float(d_res[ok].max()), "exact_max_residual": float(e_res.max()),
                 "speedup": damped_s / exact_s,
                 "max_abs_difference_where_damped_converged": float(np.abs(damped[ok] - exact[ok]).max())})
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n-series", type=int, default=1000)
    parser.add_argument("--n-steps", type=int, default=100)
    parser.add_argument("--ref-series", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-iter-tight", type=int, default=5_000)
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "drift" / "benchmarks")
    args = parser.parse_args(argv)

    calib, stream = bench_calibrator(args.n_series, args.n_steps, args.ref_series, args.seed)
    print(f"calibrator {calib['n_series']}x{calib['n_steps']}x{calib['n_levels']}: fast {calib['fast_s']:.2f} s, "
          f"reference {calib['reference_s']:.1f} s (CPU; timed on {calib['reference_series_timed']} series), "
          f"speed-up {calib['speedup']:.0f}x (wall {calib['speedup_wall']:.0f}x), "
          f"max |difference| {calib['max_abs_difference']:.1e}")
    sub = drifting_gaussian_stream("jump", 200, args.n_steps, seed=args.seed + 1)
    base, force = collect_problems(sub)
    solver = bench_solver(base, force, DriftCalibrator(sub.levels, sub.B).params.eta, sub.B, args.max_iter_tight)
    for row in solver:
        print(f"solver ({row['setting']}, {row['n_problems']} problems): damped {row['damped_s']:.3f} s "
              f"(max residual {row['damped_max_residual']:.1e}), exact {row['exact_s']:.4f} s "
              f"(max residual {row['exact_max_residual']:.1e}), speed-up {row['speedup']:.0f}x")
    print(f"damped iteration short of 1e-8 after {args.max_iter_tight} iterations on "
          f"{solver[1]['damped_unconverged_fraction']:.1%} of the problems")

    args.out.mkdir(parents=True, exist_ok=True)
    meta = {"calibtut": calibtut.__version__, "numpy": np.__version__, "python": platform.python_version(),
            "machine": platform.machine(), "processor": platform.processor(), "seed": args.seed,
            "n_solver_problems": int(len(base))}
    (args.out / "provenance.json").write_text(json.dumps({"meta": meta, "calibrator": calib, "solver": solver},
                                                           indent=2))
    with open(args.out / "bench_online.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["benchmark", "setting", "baseline_s", "fast_s", "speedup"])
        writer.writerow(["calibrator", f"{calib['n_series']}x{calib['n_steps']}x{calib['n_levels']}",
                         f"{calib['reference_s']:.4g}", f"{calib['fast_s']:.4g}", f"{calib['speedup']:.4g}"])
        for row in solver:
            writer.writerow(["equilibrium", row["setting"], f"{row['damped_s']:.4g}", f"{row['exact_s']:.4g}",
                             f"{row['speedup']:.4g}"])
    print(f"wrote {args.out / 'provenance.json'}")


if __name__ == "__main__":
    main()
