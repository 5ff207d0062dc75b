"""Exact nearest neighbours: calibtut against scikit-learn and faiss-cpu, side by side.

Run from the repository root::

    python benchmarks/bench_neighbors.py            # k = 25; 45k x 256 and 450k x 128 references
    python benchmarks/bench_neighbors.py --quick    # a small size, to try the script
    python benchmarks/bench_neighbors.py --sizes 45000x256 --n-query 7700 --threads 1

For every reference size (``n_ref x dim``, seeded Gaussian float32 exemplars,
``--n-query`` queries) and thread count, one worker process per method loads
the same data, makes one untimed warm-up call and then times one full search
per request; the requests go round the methods in turn (the order rotating at
each repeat), so that a change in the machine's load falls on every method
alike. The methods:

* ``calibtut``: :func:`calibtut.selective.nearest_neighbors` as installed
  (its candidates come from faiss-cpu when that is installed);
* ``calibtut-torch``: the same with its torch candidate search (faiss hidden);
* ``sklearn``: ``NearestNeighbors(algorithm="brute").kneighbors``;
* ``faiss``: ``faiss.IndexFlatL2`` built and searched (float32, not exact).

Each worker is limited to the thread count (``torch.set_num_threads``,
threadpoolctl, ``faiss.omp_set_num_threads`` and the ``*_NUM_THREADS``
variables). ``seconds`` is the median wall time, ``cpu_seconds`` the median
CPU time of the worker (steadier on a shared machine, but it also counts
threads that spin while they wait); ``vs_calibtut`` and ``cpu_vs_calibtut``
divide them by calibtut's (above 1: calibtut is faster). ``same_as_sklearn``
is the share of (query, rank) neighbour indices equal to scikit-learn's
(which ranks float32 input in float64). ``peak_rss_gib`` is the worker's peak resident memory, its copy of
the data included. Prints the table and adds it to ``--out``
(``results/venn_admit/benchmarks/neighbors.csv``), replacing the rows of an
earlier run with the same sizes, threads and method.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from calibtut.selective import neighbors

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "venn_admit" / "benchmarks" / "neighbors.csv"
METHODS = ("calibtut", "calibtut-torch", "sklearn", "faiss")
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def _search_function(method, k, threads, device):
    """A function ``search(queries, reference) -> indices`` for ``method``, limited to ``threads``."""
    if method.startswith("calibtut"):
        torch.set_num_threads(threads)
        if method == "calibtut-torch":
            neighbors._load_faiss = lambda: None

        def search(queries, reference):
            q, r = torch.from_numpy(queries).to(device), torch.from_numpy(reference).to(device)
            return neighbors.nearest_neighbors(q, r, k)[1].cpu().numpy()

        return search
    if method == "sklearn":
        from sklearn.neighbors import NearestNeighbors
        from threadpoolctl import threadpool_limits

        def search(queries, reference):
            with threadpool_limits(threads):
                model = NearestNeighbors(n_neighbors=k, algorithm="brute", n_jobs=threads).fit(reference)
                return model.kneighbors(queries)[1]

        return search
    import faiss

    faiss.omp_set_num_threads(threads)

    def search(queries, reference):
        index = faiss.IndexFlatL2(reference.shape[1])
        index.add(reference)
        return index.search(queries, k)[1]

    return search


def _worker(args):
    """One method's worker: answers each ``run`` line on stdin with one timed search."""
    queries, reference = np.load(args.queries), np.load(args.reference)
    search = _search_function(args.method, args.k, int(args.threads), args.device)
    search(queries[:64], reference)  # warm-up: thread pools, lazy imports
    for line in sys.stdin:
        if line.strip() != "run":
            break
        start, cpu_start = time.perf_counter(), time.process_time()
        indices = search(queries, reference)
        seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
        np.save(args.indices, indices)
        print(json.dumps({"seconds": seconds, "cpu_seconds": cpu_seconds}), flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
    print(json.dumps({"peak_rss_gib": peak}), flush=True)


def _available(method):
    """Whether ``method``'s library is installed (faiss-cpu is an optional extra)."""
    if "faiss" not in method and method != "calibtut-torch":
        return True
    try:
        import faiss  # noqa: F401
    except ImportError:
        return False
    return True


def _start(method, threads, files, args):
    env = {**os.environ, **{name: str(threads) for name in THREAD_VARIABLES}}
    cmd = [sys.executable, __file__, "--worker", method, "--k", str(args.k), "--threads", str(threads),
           "--device", args.device, "--queries", files["queries"], "--reference", files["reference"],
           "--indices", files[method]]
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)


def _ask(worker, line):
    worker.stdin.write(line + "\n")
    worker.stdin.flush()
    return json.loads(worker.stdout.readline())


def _one_size(n_ref, dim, threads, methods, folder, args):
    """Rows of the result table for one reference size and thread count."""
    rng = np.random.default_rng(0)
    files = {"queries": str(folder / "queries.npy"), "reference": str(folder / "reference.npy")}
    np.save(files["reference"], rng.normal(size=(n_ref, dim)).astype(np.float32))
    np.save(files["queries"], rng.normal(size=(args.n_query, dim)).astype(np.float32))
    files.update({m: str(folder / f"indices_{m}.npy") for m in methods})
    workers = {m: _start(m, threads, files, args) for m in methods}
    times = {m: [] for m in methods}
    try:
        for repeat in range(args.repeats):
            for m in methods[repeat % len(methods):] + methods[:repeat % len(methods)]:
                times[m].append(_ask(workers[m], "run"))
        peaks = {m: _ask(w, "quit")["peak_rss_gib"] for m, w in workers.items()}
    finally:
        for w in workers.values():
            w.stdin.close()
            w.wait()
    found = {m: np.load(files[m]) for m in methods}
    median = {(m, what): statistics.median(t[what] for t in times[m])
              for m in methods for what in ("seconds", "cpu_seconds")}
    return [{"n_query": args.n_query, "n_ref": n_ref, "dim": dim, "k": args.k, "threads": threads,
             "method": m, "device": args.device if m.startswith("calibtut") else "cpu",
             "seconds": median[m, "seconds"], "cpu_seconds": median[m, "cpu_seconds"],
             "vs_calibtut": median[m, "seconds"] / median["calibtut", "seconds"],
             "cpu_vs_calibtut": median[m, "cpu_seconds"] / median["calibtut", "cpu_seconds"],
             "repeats": args.repeats, "peak_rss_gib": peaks[m],
             "same_as_sklearn": float(np.mean(found[m] == found["sklearn"]))} for m in methods]


def _store(table, path):
    """Add ``table`` to the CSV at ``path``, replacing rows with the same sizes, threads and method."""
    key = ["n_query", "n_ref", "dim", "k", "threads", "method"]
    if path.exists():
        old = pd.read_csv(path)
        if set(key) <= set(old.columns):
            same = old[key].apply(tuple, axis=1).isin(table[key].apply(tuple, axis=1))
            table = pd.concat([old[~same], table], ignore_index=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(path, index=False)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="45000x256,450000x128", help="reference sizes, n_ref x dim")
    parser.add_argument("--n-query", type=int, default=2000)
    parser.add_argument("--k", type=int, default=25)
    parser.add_argument("--threads", default="1,2", help="thread counts, comma separated")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu", help="device of the calibtut methods")
    parser.add_argument("--quick", action="store_true", help="one small size, two repeats")
    parser.add_argument("--out", type=Path, default=OUT)
    for hidden in ("--worker", "--queries", "--reference", "--indices"):
        parser.add_argument(hidden, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        args.method = args.worker
        return _worker(args)
    if args.quick:
        args.sizes, args.n_query, args.repeats = "20000x64", 500, 2
    methods = [m for m in METHODS if _available(m)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes.split(","):
            n_ref, dim = (int(v) for v in size.lower().split("x"))
            for threads in (int(t) for t in args.threads.split(",")):
                rows += _one_size(n_ref, dim, threads, methods, Path(tmp), args)
    table = pd.DataFrame(rows)
    print(f"load average before/after: {os.getloadavg()}")
    print(table.to_string(index=False))
    _store(table, args.out)


if __name__ == "__main__":
    main()
