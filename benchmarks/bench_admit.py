"""ADMIT and Venn-ADMIT for many test points: vectorised library against a per-point loop.

Run from the repository root::

    python benchmarks/bench_admit.py                     # 100,000 test points
    python benchmarks/bench_admit.py --n-test 20000 --loop-sample 500

Synthetic KNN outputs (3 classes, ``q`` in 0..25 with most mass at 25 as in the
paper's Protein task, exponential ``d``) for two calibration splits of
``--n-cal`` points each and ``--n-test`` test points. The library
(:class:`calibtut.selective.admit.ADMIT`, :class:`calibtut.selective.admit.VennADMIT`) runs
on all test points; the per-point loop (Alg. 2 written directly, one band
and one sort per point and class) runs on ``--loop-sample`` of them, its time
is scaled to all points, and its sets are compared with the library's on
that sample; for Venn-ADMIT the loop also computes the ADMIT sets of the
whole second split (timed in full, not scaled) and the lower Venn
probabilities are compared too. Prints a table and writes it to
``results/venn_admit/benchmarks/admit.csv``.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from calibtut.selective import ADMIT, KNNFeatures, VennADMIT

OUT = Path(__file__).resolve().parents[1] / "results" / "venn_admit" / "benchmarks"


def synthetic_split(rng, n, n_classes=3, k_max=25):
    probs = rng.dirichlet(np.full(n_classes, 0.5), size=n)
    labels = (rng.uniform(size=(n, 1)) > np.cumsum(probs, axis=1)).sum(axis=1)
    q = np.where(rng.uniform(size=n) < 0.6, k_max, rng.integers(0, k_max, size=n))
    return KNNFeatures(probs, labels, q, rng.exponential(size=n))


def admit_loop(cal, test, alpha, omega, kappa):
    """Alg. 2 of the paper, one test point at a time."""
    probs, q, d = test.probs, test.q, test.d
    sets = np.zeros(probs.shape, dtype=bool)
    for t in range(len(probs)):
        band = (cal.q == q[t]) & (cal.d >= d[t] - omega) & (cal.d <= d[t] + omega)
        counts = []
        for c in range(probs.shape[1]):
            scores = np.sort(1 - cal.probs[band & (cal.labels == c), c])
            counts.append(scores.size)
            k = math.ceil(round((scores.size + 1) * (1 - alpha), 9))
            sets[t, c] = k > scores.size or 1 - probs[t, c] <= scores[k - 1]
        sets[t, np.argmax(probs[t])] = True
        if min(counts) < kappa:
            sets[t] = True
    return sets


def venn_admit_loop(mc, vp, vp_sets, test, alpha, omega, kappa):
    """Venn-ADMIT one test point at a time, given the ADMIT sets of the second split."""
    vp_single = np.where(vp_sets.sum(1) == 1, np.argmax(vp_sets, axis=1), -1)
    sets = admit_loop(mc, test, alpha, omega, kappa)
    lower = np.full(len(test), np.nan)
    for t in range(len(test)):
        if sets[t].sum() != 1:
            continue
        c = int(np.argmax(sets[t]))
        category = (vp.q == test.q[t]) & (np.abs(vp.d - test.d[t]) <= omega) & (vp_single == c)
        lower[t] = np.sum(vp.labels[category] == c) / (category.sum() + 1)
    return np.nan_to_num(lower, nan=-1.0) >= 1 - alpha, lower


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-cal", type=int, default=50_000)
    parser.add_argument("--n-test", type=int, default=100_000)
    parser.add_argument("--loop-sample", type=int, default=1000)
    parser.add_argument("--kappa", type=int, default=100)
    parser.add_argument("--omega", type=float, default=0.3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    mc, vp = synthetic_split(rng, args.n_cal), synthetic_split(rng, args.n_cal)
    test = synthetic_split(rng, args.n_test)
    common = dict(alpha=0.1, omega=args.omega, kappa=args.kappa)

    start = time.perf_counter()
    sets = ADMIT(**common).fit(mc).predict_set(test)
    t_admit = time.perf_counter() - start
    start = time.perf_counter()
    model = VennADMIT(**common).fit(mc, vp)
    admitted = model.predict_admitted(test)
    t_venn = time.perf_counter() - start

    sample = rng.choice(args.n_test, size=min(args.loop_sample, args.n_test), replace=False)
    start = time.perf_counter()
    loop_sets = admit_loop(mc, test[sample], 0.1, args.omega, args.kappa)
    t_loop = (time.perf_counter() - start) * args.n_test / sample.size
    same = bool(np.array_equal(loop_sets, sets[sample]))
    # The loop's Venn-ADMIT needs the ADMIT sets of every point of the second split:
    # computed once by the loop too (timed in full), then one category per test point.
    start = time.perf_counter()
    vp_sets = admit_loop(mc, vp, 0.1, args.omega, args.kappa)
    t_vp = time.perf_counter() - start
    start = time.perf_counter()
    loop_admitted, loop_lower = venn_admit_loop(mc, vp, vp_sets, test[sample], 0.1, args.omega, args.kappa)
    t_venn_loop = t_vp + (time.perf_counter() - start) * args.n_test / sample.size
    lower = model.predict_lower(test[sample])
    same_venn = bool(np.array_equal(loop_admitted, admitted[sample])
                     and np.allclose(loop_lower, lower, equal_nan=True))
    table = pd.DataFrame([
        {"method": "ADMIT sets", "n_test": args.n_test, "seconds_vectorised": t_admit,
         "seconds_loop_scaled": t_loop, "speed_up": t_loop / t_admit, "same_sets_on_sample": same},
        {"method": "Venn-ADMIT (both ADMIT passes + Venn)", "n_test": args.n_test, "seconds_vectorised": t_venn,
         "seconds_loop_scaled": t_venn_loop, "speed_up": t_venn_loop / t_venn, "same_sets_on_sample": same_venn},
    ])
    print(table.to_string(index=False))
    print(f"admitted by Venn-ADMIT: {admitted.mean():.3f}; singletons of ADMIT: {np.mean(sets.sum(1) == 1):.3f}")
    OUT.mkdir(parents=True, exist_ok=True)
    table.to_csv(OUT / "admit.csv", index=False)


if __name__ == "__main__":
    main()
