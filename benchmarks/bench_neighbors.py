"""Exact nearest neighbours: blocked torch search against scikit-learn's brute force.

Run from the repository root::

    python benchmarks/bench_neighbors.py                                 # a tenth of the Grammar scale, 256-d
    python benchmarks/bench_neighbors.py --n-query 77000 --n-ref 450000 --dim 1000 --device cuda   # Grammar scale

Each method runs in its own child process on the same seeded Gaussian
exemplars (float32), so that its peak resident memory (``ru_maxrss``) is its
own; on CUDA the torch search also reports ``torch.cuda.max_memory_allocated``.
``same_neighbours`` is the fraction of equal neighbour indices (below 1 only
where float32 rounding reorders near-equal distances). Prints a table and adds it
to ``results/venn_admit/benchmarks/neighbors.csv``, replacing the rows of an earlier
run at the same sizes and device and keeping those of other sizes.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "venn_admit" / "benchmarks"


def _data(args):
    rng = np.random.default_rng(0)
    ref = rng.normal(size=(args.n_ref, args.dim)).astype(np.float32)
    queries = rng.normal(size=(args.n_query, args.dim)).astype(np.float32)
    return queries, ref


def _child(args):
    queries, ref = _data(args)
    start = time.perf_counter()
    extra = {}
    if args.method == "torch":
        import torch

        from calibtut.selective import nearest_neighbors

        q, r = torch.from_numpy(queries).to(args.device), torch.from_numpy(ref).to(args.device)
        d, i = nearest_neighbors(q, r, args.k, block_size=args.block_size)
        if args.device == "cuda":
            torch.cuda.synchronize()
            extra["gpu_peak_gib"] = torch.cuda.max_memory_allocated() / 2**30
        d, i = d.cpu().numpy(), i.cpu().numpy()
    else:
        from sklearn.neighbors import NearestNeighbors

        d, i = NearestNeighbors(n_neighbors=args.k, algorithm="brute").fit(ref).kneighbors(queries)
    seconds = time.perf_counter() - start
    np.save(args.out, i)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
    print(json.dumps({"method": args.method, "seconds": seconds, "peak_rss_gib": peak, **extra}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-query", type=int, default=7700)
    parser.add_argument("--n-ref", type=int, default=45000)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--k", type=int, default=25)
    parser.add_argument("--block-size", type=int, default=2048)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--method", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.method:
        return _child(args)
    rows, found = [], {}
    OUT.mkdir(parents=True, exist_ok=True)
    for method in ("torch", "sklearn"):
        out = OUT / f"_indices_{method}.npy"
        cmd = [sys.executable, __file__, "--method", method, "--out", str(out)] + [
            f"--{k.replace('_', '-')}={v}" for k, v in vars(args).items() if k not in ("method", "out")]
        result = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.splitlines()[-1])
        found[method] = np.load(out)
        out.unlink()
        rows.append({"n_query": args.n_query, "n_ref": args.n_ref, "dim": args.dim, "k": args.k,
                     "device": args.device if method == "torch" else "cpu", **result})
    table = pd.DataFrame(rows)
    table["same_neighbours"] = float(np.mean(found["torch"] == found["sklearn"]))
    print(table.to_string(index=False))
    _store(table, OUT / "neighbors.csv")


def _store(table, path):
    """Add ``table`` to the CSV at ``path``, replacing rows of the same sizes and device."""
    key = ["n_query", "n_ref", "dim", "k", "device", "method"]
    if path.exists():
        old = pd.read_csv(path)
        same = old[key].apply(tuple, axis=1).isin(table[key].apply(tuple, axis=1))
        table = pd.concat([old[~same], table], ignore_index=True)
    table.to_csv(path, index=False)


if __name__ == "__main__":
    main()
