"""Rerun the Venn-ADMIT Protein and Grammar full sweeps on one many-core machine.

The tasks are read from the published sweep stores
(``results/venn_admit/06_protein/sweeps/va_protein`` and
``results/venn_admit/07_grammar/sweeps/va_grammar``), so they are exactly the
tasks of the notebooks' ``full`` profiles. Each task family's network and
training neighbours are computed once, in this process with every core
(:func:`~calibtut.experiments.venn_admit.run_protein_config` with the cheap
``KNN`` method fills the caches); then worker processes forked from it run
the calibration splits, one core each, reading those caches (GPUs are hidden
from the script: torch refuses autograd in a process forked after its CUDA
engine started, as it did on a GPU machine). Each worker
appends its finished tasks to its own store, and the stores are merged into
fresh ``.jsonl`` stores in ``--out`` (the published ones are not touched);
copied over the published stores, they are read back by
``python -m calibtut.run notebooks/venn_admit/06_protein.md --profile full``
(and 07) without recomputation. A budget stops waiting and keeps what is
finished; the notebooks' full runs compute any task left. A second run with
the same ``--out`` resumes: tasks already in ``<out>/<name>.jsonl`` are
skipped, and a family with nothing left skips its network too.

Run it where the data mirror is (``CALIBTUT_DATA_MIRROR``)::

    python benchmarks/sequence_full_runs.py --out OUT [--workers 15] [--budget-s 3600]

``--dry-run`` runs the same steps on two tiny tasks per family (a check of
the mechanics that takes about a minute).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path

os.environ["CUDA_VISIBLE_DEVICES"] = ""  # before torch: see the module docstring

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calibtut.experiments.venn_admit import run_grammar_config, run_protein_config  # noqa: E402
from calibtut.run import sweep  # noqa: E402
from calibtut.run.sweep import task_key  # noqa: E402
from calibtut.run.store import SweepStore  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: (store name, runner, published store) of the two families, in the order they are run.
FAMILIES = (("va_protein", run_protein_config, ROOT / "results/venn_admit/06_protein/sweeps/va_protein.jsonl"),
            ("va_grammar", run_grammar_config, ROOT / "results/venn_admit/07_grammar/sweeps/va_grammar.jsonl"))
#: The dry run's task sizes per family.
DRY = {"va_protein": {"n_proteins": 30, "n_test_proteins": 2, "hidden": 8, "channels": 8, "epochs": 1, "kappa": 10,
                      "localizer_points": 50},
       "va_grammar": {"n_sentences": 200, "n_valid_sentences": 120, "n_test_sentences": 5, "embedding": 8,
                      "hidden": 8, "channels": 8, "epochs": 1, "kappa": 10, "localizer_points": 50}}
_START = time.perf_counter()


def log(message):
    print(f"[{time.perf_counter() - _START:7.1f} s] {message}", flush=True)


def published_tasks(path):
    """The task dicts of a published store, in the order they were stored."""
    done, _ = SweepStore(path).load()
    return [entry["task"] for entry in done.values()]


def finished_keys(out, name):
    """The keys of the tasks already finished in ``<out>/<name>.jsonl`` (empty when it is absent)."""
    path = Path(out) / f"{name}.jsonl"
    return set(SweepStore(path).load()[0]) if path.exists() else set()


def _run_one(job):
    """One task in a forked worker: appended to this worker's own store."""
    name, fn, task, out = job
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    sweep([task], fn, store=Path(out) / f"{name}.{os.getpid()}.jsonl", desc=name, progress=False)
    return name, task["seed"], task.get("alpha"), time.perf_counter() - t0


def merge(out, name):
    """Append the workers' stores of one family to ``<out>/<name>.jsonl``; the number of tasks in it."""
    target = Path(out) / f"{name}.jsonl"
    parts = sorted(Path(out).glob(f"{name}.*.jsonl"))
    texts = [path.read_text() for path in ([target] if target.exists() else []) + parts]
    lines = [line for text in texts for line in text.splitlines() if line.strip()]
    target.write_text("".join(line + "\n" for line in lines))
    for part in parts:
        part.unlink()
    return sum(json.loads(line).get("status") == "ok" for line in lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="folder of the new stores")
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    parser.add_argument("--budget-s", type=float, default=3600.0, help="stop waiting after this many seconds")
    parser.add_argument("--dry-run", action="store_true", help="two tiny tasks per family")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    jobs = []
    for name, fn, store in FAMILIES:
        tasks = [{"seed": seed, **DRY[name]} for seed in (0, 1)] if args.dry_run else published_tasks(store)
        done = finished_keys(out, name)
        tasks = [task for task in tasks if task_key(task) not in done]
        if not tasks:
            log(f"{name}: all tasks already in {out / (name + '.jsonl')}")
            continue
        t0 = time.perf_counter()
        fn(**{**tasks[0], "methods": "KNN"})  # the network and its neighbours, with every core
        log(f"{name}: network and neighbours in {time.perf_counter() - t0:.1f} s; {len(tasks)} tasks")
        jobs += [(name, fn, task, str(out)) for task in tasks]
    pool = multiprocessing.get_context("fork").Pool(args.workers)
    deadline = _START + args.budget_s
    try:
        results = pool.imap_unordered(_run_one, jobs)
        for _ in jobs:
            name, seed, alpha, seconds = results.next(timeout=max(deadline - time.perf_counter(), 1.0))
            log(f"done {name} seed {seed} alpha {alpha}: {seconds:.1f} s")
    except multiprocessing.TimeoutError:
        log("budget spent: unfinished tasks are left to the notebooks' full runs")
    finally:
        pool.terminate()
    for name, _, _ in FAMILIES:
        log(f"{name}: {merge(out, name)} tasks in {out / (name + '.jsonl')}")


if __name__ == "__main__":
    main()
