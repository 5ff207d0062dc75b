"""Where the tasks of a sweep run: in this process, or on a Dask cluster.

:func:`calibtut.run.sweep` runs its tasks in its own process unless it is asked
for workers, either by its ``workers=``/``scheduler=`` arguments or by the
environment variables below (which ``python -m calibtut.run --workers N`` and
``--scheduler ADDRESS`` set for the notebook they execute, so that every sweep
of that notebook uses them without the notebook changing):

- ``CALIBTUT_WORKERS=N``: a local Dask cluster of ``N`` worker processes on this
  machine (``distributed``'s ``SpecCluster`` with one ``Nanny`` per worker, as
  ``LocalCluster`` builds it), each limited to ``CALIBTUT_THREADS_PER_WORKER``
  BLAS/OpenMP/torch threads (default 1); ``CALIBTUT_GPU_WORKERS=K`` of them
  (default: 1 when torch sees a GPU, else 0) carry the Dask resource ``GPU=1``,
  and a task whose ``device`` starts with ``"cuda"`` runs only there, one at a
  time per GPU worker, while CPU tasks use every worker;
- ``CALIBTUT_SCHEDULER=tcp://host:8786``: an existing cluster (dask-jobqueue on
  SLURM/PBS, dask-kubernetes, ``dask scheduler`` + ``dask worker``); its
  workers need calibtut installed, and GPU workers started with
  ``--resources GPU=1``.

Dask is an optional dependency (``pip install "calibtut[cluster]"``); serial
execution needs nothing beyond the package.
"""

from __future__ import annotations

import atexit
import os
import socket
import sys
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from calibtut._validation import check_int
from calibtut.run.provenance import cpu_label
from calibtut.run.store import FAILED, OK, dumps

__all__ = [
    "CONNECT_TIMEOUT_S",
    "GPU_WORKERS_ENV",
    "SCHEDULER_ENV",
    "THREADS_ENV",
    "WORKERS_ENV",
    "Engine",
    "check_serialisable",
    "connect",
    "gpu_slots",
    "local_cluster",
    "resolve_engine",
    "run_dask",
    "run_serial",
    "run_task",
    "to_records",
    "wants_gpu",
]

#: Environment variable: number of local worker processes (unset or empty: serial).
WORKERS_ENV = "CALIBTUT_WORKERS"
#: Environment variable: address of an existing Dask scheduler.
SCHEDULER_ENV = "CALIBTUT_SCHEDULER"
#: Environment variable: BLAS/OpenMP/torch threads per worker process.
THREADS_ENV = "CALIBTUT_THREADS_PER_WORKER"
#: Environment variable: how many local workers carry the ``GPU`` resource.
GPU_WORKERS_ENV = "CALIBTUT_GPU_WORKERS"
#: Seconds to wait for a scheduler given by address before giving up.
CONNECT_TIMEOUT_S = 10
_THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def _positive_int(value, name, *, minimum=1):
    """An integer >= ``minimum``; a string (from an environment variable) is parsed first."""
    if isinstance(value, str):
        text = value.strip()
        if not text.lstrip("-").isdigit():
            raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
        value = int(text)
    return check_int(value, name, minimum=minimum)


def _torch_sees_gpu():
    if "torch" not in sys.modules:  # do not import torch just to ask
        try:
            import importlib.util

            if importlib.util.find_spec("torch") is None:
                return False
        except ValueError:
            return False
    import torch

    return bool(torch.cuda.is_available())


@dataclass(frozen=True)
class Engine:
    """How a sweep executes: serial, a local cluster of ``workers``, or a ``scheduler`` address.

    Parameters
    ----------
    workers : int, optional
        Local worker processes, >= 1 (None: serial or ``scheduler``).
    scheduler : str, optional
        Address of an existing Dask scheduler.
    threads_per_worker : int, default 1
        >= 1.
    gpu_workers : int, default 0
        Local workers that carry the ``GPU`` resource, >= 0.

    Examples
    --------
    >>> Engine().describe()
    {'mode': 'serial'}
    >>> Engine(workers=2).describe()["mode"]
    'local cluster'
    """

    workers: int | None = None
    scheduler: str | None = None
    threads_per_worker: int = 1
    gpu_workers: int = 0

    def __post_init__(self):
        if self.workers is not None:
            _positive_int(self.workers, "workers")
        _positive_int(self.threads_per_worker, "threads_per_worker")
        _positive_int(self.gpu_workers, "gpu_workers", minimum=0)

    @property
    def serial(self):
        return self.workers is None and self.scheduler is None

    def describe(self):
        """A JSON-ready summary for provenance and store lines."""
        if self.serial:
            return {"mode": "serial"}
        if self.scheduler is not None:
            return {"mode": "scheduler", "scheduler": self.scheduler}
        return {"mode": "local cluster", "workers": self.workers, "threads_per_worker": self.threads_per_worker,
                "gpu_workers": self.gpu_workers}


def resolve_engine(workers=None, scheduler=None, threads_per_worker=None, gpu_workers=None):
    """The engine asked for by the arguments, else by the environment, else serial.

    Parameters
    ----------
    workers : int, optional
        Local worker processes (>= 1). ``workers=1`` still runs tasks in a
        separate process (useful to test what a cluster sees).
    scheduler : str, optional
        Address of an existing Dask scheduler, e.g. ``"tcp://10.0.0.5:8786"``.
        Exclusive with ``workers``.
    threads_per_worker : int, optional
        Threads per local worker (default 1).
    gpu_workers : int, optional
        Local workers that carry the ``GPU`` resource (default 1 if torch sees
        a GPU, else 0); at most ``workers``.

    Returns
    -------
    Engine

    Examples
    --------
    >>> resolve_engine(workers=2, threads_per_worker=1, gpu_workers=0)
    Engine(workers=2, scheduler=None, threads_per_worker=1, gpu_workers=0)
    >>> resolve_engine(workers=0)
    Traceback (most recent call last):
    ...
    ValueError: workers must be >= 1, got 0
    """
    from_env = workers is None and scheduler is None
    if from_env:
        workers = os.environ.get(WORKERS_ENV) or None
        scheduler = os.environ.get(SCHEDULER_ENV) or None
        where = f" (from {WORKERS_ENV}/{SCHEDULER_ENV})"
    else:
        where = ""
    if threads_per_worker is None:
        threads_per_worker = os.environ.get(THREADS_ENV) or 1
    if gpu_workers is None:
        gpu_workers = os.environ.get(GPU_WORKERS_ENV) or None
    if workers is not None and scheduler is not None:
        raise ValueError(f"give workers or scheduler, not both{where}")
    if scheduler is not None:
        if not isinstance(scheduler, str):
            raise TypeError(f"scheduler must be an address string, got {type(scheduler).__name__}")
        if "://" not in scheduler and ":" not in scheduler:
            raise ValueError(f"scheduler must be an address like tcp://host:8786, got {scheduler!r}{where}")
    threads = _positive_int(threads_per_worker, "threads_per_worker")
    if gpu_workers is not None:
        gpu_workers = _positive_int(gpu_workers, "gpu_workers", minimum=0)
    if workers is None:
        return Engine(scheduler=scheduler, threads_per_worker=threads)
    workers = _positive_int(workers, "workers")
    if gpu_workers is None:
        gpu_workers = 1 if _torch_sees_gpu() else 0
    if gpu_workers > workers:
        raise ValueError(f"gpu_workers ({gpu_workers}) cannot exceed workers ({workers})")
    return Engine(workers=workers, threads_per_worker=threads, gpu_workers=gpu_workers)


def wants_gpu(task):
    """Whether a task asks for a GPU: its ``device`` value starts with ``"cuda"``.

    Examples
    --------
    >>> wants_gpu({"device": "cuda:0"}), wants_gpu({"device": "cpu"}), wants_gpu({"seed": 1})
    (True, False, False)
    """
    device = task.get("device")
    return isinstance(device, str) and device.startswith("cuda")


def to_records(result, fn_name):
    """The rows a task returned (a dict or a DataFrame) as JSON-ready dicts.

    Examples
    --------
    >>> to_records({"a": 1}, "f")
    [{'a': 1}]
    >>> to_records(3, "f")
    Traceback (most recent call last):
    ...
    TypeError: fn f must return a dict or a DataFrame, got int
    """
    import json

    if isinstance(result, pd.DataFrame):
        records = result.reset_index(drop=True).to_dict(orient="records")
    elif isinstance(result, Mapping):
        records = [dict(result)]
    else:
        raise TypeError(f"fn {fn_name} must return a dict or a DataFrame, got {type(result).__name__}")
    for record in records:
        bad = [k for k in record if not isinstance(k, str)]
        if bad:
            raise TypeError(f"fn {fn_name} returned non-string keys {bad}")
    return json.loads(dumps(records))


def _where():
    try:
        from distributed import get_worker

        return get_worker().name
    except (ImportError, ValueError):
        return f"{socket.gethostname()}:{os.getpid()}"


def run_task(fn, task, reserved, threads=None):
    """Run one task and describe the outcome; never raises for an error of the task itself.

    Returns a dict with ``status`` (``"ok"`` or ``"failed"``), ``seconds``,
    ``worker``, ``cpu`` (:func:`calibtut.run.provenance.cpu_label` of the
    machine that ran it) and either ``records`` or ``error`` (the traceback). The rows
    may not use the task's keys nor the names in ``reserved`` (the seconds
    column). ``threads`` limits BLAS/OpenMP/torch threads while it runs.

    Examples
    --------
    >>> run_task(lambda seed: {"v": seed}, {"seed": 3}, set())["records"]
    [{'v': 3}]
    >>> run_task(lambda seed: {"seed": 1}, {"seed": 3}, set())["status"]
    'failed'
    """
    fn_name = getattr(fn, "__qualname__", type(fn).__name__)
    start = time.perf_counter()
    try:
        if threads is None:
            result = fn(**task)
        else:
            from threadpoolctl import threadpool_limits

            if "torch" in sys.modules:
                sys.modules["torch"].set_num_threads(threads)
            with threadpool_limits(threads):
                result = fn(**task)
        records = to_records(result, fn_name)
        clash = sorted({k for r in records for k in r} & (set(reserved) | set(task)))
        if clash:
            raise ValueError(f"fn {fn_name} returned keys {clash} that are also task keys (or the seconds column)")
        outcome = {"status": OK, "records": records}
    except Exception:  # the task's own failure is data: recorded, reported, retried on the next run
        outcome = {"status": FAILED, "error": traceback.format_exc()}
    return {**outcome, "seconds": time.perf_counter() - start, "worker": _where(), "cpu": cpu_label()}


def run_serial(fn, todo, reserved):
    """Yield ``(key, outcome)`` for each ``(key, task)`` of ``todo``, in this process, in order."""
    for key, task in todo:
        yield key, run_task(fn, task, reserved)


# ------------------------------------------------------------------ Dask

_CLUSTERS = {}


def _import_distributed():
    try:
        import distributed
    except ImportError as exc:
        raise ImportError(
            "running a sweep on workers needs Dask: pip install \"calibtut[cluster]\" "
            "(or dask[distributed])"
        ) from exc
    return distributed


def _worker_env(threads):
    """Thread limits, and the client's import path, for local worker processes."""
    prefixes = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    own = [p for p in sys.path if p and os.path.isdir(p)
           and not any(os.path.realpath(p).startswith(prefix) for prefix in prefixes)]
    paths = own + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p not in own]
    env = {var: str(threads) for var in _THREAD_VARS}
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


def local_cluster(engine):
    """The local cluster of ``engine`` (started once per process and reused by later sweeps)."""
    distributed = _import_distributed()
    spec = (engine.workers, engine.threads_per_worker, engine.gpu_workers)
    cluster = _CLUSTERS.get(spec)
    if cluster is not None and cluster.status.name == "running":
        return cluster
    import logging

    env = _worker_env(engine.threads_per_worker)

    def worker(gpu):
        options = {"nthreads": engine.threads_per_worker, "env": env, "memory_limit": "auto",
                   "silence_logs": logging.ERROR}
        if gpu:
            options["resources"] = {"GPU": 1}
        return {"cls": distributed.Nanny, "options": options}

    workers = {f"{'gpu' if i < engine.gpu_workers else 'cpu'}-{i}": worker(i < engine.gpu_workers)
               for i in range(engine.workers)}
    # Dask's nannies set MALLOC_TRIM_THRESHOLD_=65536 in their workers by default, which
    # trades speed for memory: it doubled the time of a torch training task here
    # (benchmarks/bench_sweep.py). Our workers keep the C library's own setting, and do
    # without Dask's statistical profiler (it samples the task's thread every 10 ms,
    # for a dashboard these clusters do not serve).
    import dask

    speed = {"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
             "distributed.worker.profile.enabled": False}
    with dask.config.set(speed):
        cluster = distributed.SpecCluster(
            workers=workers,
            scheduler={"cls": distributed.Scheduler, "options": {"dashboard": False, "dashboard_address": ":0"}},
            silence_logs=logging.ERROR, name="calibtut",
        )
    _CLUSTERS[spec] = cluster
    return cluster


@atexit.register
def _close_clusters():
    for cluster in _CLUSTERS.values():
        try:
            cluster.close()
        except Exception:  # best effort at interpreter exit
            pass
    _CLUSTERS.clear()


def connect(engine):
    """A ``distributed.Client`` for ``engine``; a clear error when the scheduler cannot be reached."""
    distributed = _import_distributed()
    if engine.scheduler is None:
        cluster = local_cluster(engine)
        client = distributed.Client(cluster, set_as_default=False)
        client.wait_for_workers(engine.workers, timeout=120)
        return client
    try:
        return distributed.Client(engine.scheduler, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise ValueError(f"scheduler {engine.scheduler!r} could not be reached within "
                         f"{CONNECT_TIMEOUT_S} s ({type(exc).__name__}: {exc})") from None


def gpu_slots(client):
    """How many workers of the cluster carry the ``GPU`` resource."""
    info = client.scheduler_info()
    return sum(1 for w in info.get("workers", {}).values() if w.get("resources", {}).get("GPU", 0) >= 1)


def check_serialisable(fn, fn_name):
    """Raise ``TypeError`` naming ``fn`` when cloudpickle cannot send it to workers."""
    import cloudpickle

    try:
        cloudpickle.dumps(fn)
    except Exception as exc:
        raise TypeError(f"fn {fn_name} cannot be sent to the workers (cloudpickle failed: "
                        f"{type(exc).__name__}: {exc}); define it at module level or in the notebook "
                        f"without unpicklable state (open files, locks, generators)") from None


def run_dask(client, fn, todo, reserved, threads, label):
    """Yield ``(key, outcome)`` for each ``(key, task)`` of ``todo`` as workers finish them.

    A task that raises comes back as a failed outcome; a task whose worker died
    more often than Dask allows (``distributed.scheduler.allowed-failures``)
    comes back failed too, with the reason. Leaving the generator early (an
    interrupt) cancels whatever is still queued.
    """
    distributed = _import_distributed()
    import uuid

    token = uuid.uuid4().hex[:8]
    futures = {}
    for key, task in todo:
        resources = {"GPU": 1} if wants_gpu(task) else None
        future = client.submit(run_task, fn, task, reserved, threads, key=f"{label}-{key}-{token}",
                               pure=False, resources=resources)
        futures[future] = key
    try:
        for future in distributed.as_completed(list(futures), loop=client.loop):
            key = futures[future]
            try:
                outcome = future.result()
            except Exception as exc:
                outcome = {"status": FAILED, "seconds": float("nan"), "worker": None,
                           "error": f"{type(exc).__name__}: {exc}\n(the task never returned; for KilledWorker "
                                    f"its worker process died repeatedly: memory, a crash, or a kill)"}
            future.release()
            yield key, outcome
    finally:
        client.cancel(list(futures))
