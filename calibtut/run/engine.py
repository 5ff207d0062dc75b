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

A sweep on workers survives workers that die (killed for memory, a crashing
extension): Dask runs the dead worker's task again elsewhere, and
:func:`run_dask` stores each result as soon as it is back, reopens the local
workers that ``distributed`` gave up on, and stops with the remaining tasks
marked failed (named by :class:`calibtut.run.SweepFailed`) once no worker has
been able to run them for ``CALIBTUT_STALL_TIMEOUT`` seconds (default 120).

Dask is an optional dependency (``pip install "calibtut[cluster]"``); serial
execution needs nothing beyond the package.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import socket
import sys
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial

import pandas as pd

from calibtut._validation import check_int, check_real
from calibtut.numerics import DEFAULT_PROFILE, ISA_VARS, PROFILE_ENV, numerics_label, profile_environment
from calibtut.run.provenance import cpu_label
from calibtut.run.store import FAILED, OK, dumps

__all__ = [
    "CONNECT_TIMEOUT_S",
    "GPU_WORKERS_ENV",
    "SCHEDULER_ENV",
    "STALL_TIMEOUT_ENV",
    "STALL_TIMEOUT_S",
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
    "stall_timeout",
    "to_records",
    "wants_gpu",
    "worker_numerics",
]

#: Environment variable: number of local worker processes (unset or empty: serial).
WORKERS_ENV = "CALIBTUT_WORKERS"
#: Environment variable: address of an existing Dask scheduler.
SCHEDULER_ENV = "CALIBTUT_SCHEDULER"
#: Environment variable: BLAS/OpenMP/torch threads per worker process.
THREADS_ENV = "CALIBTUT_THREADS_PER_WORKER"
#: Environment variable: how many local workers carry the ``GPU`` resource.
GPU_WORKERS_ENV = "CALIBTUT_GPU_WORKERS"
#: Environment variable: seconds a sweep waits while no worker can run its remaining tasks.
STALL_TIMEOUT_ENV = "CALIBTUT_STALL_TIMEOUT"
#: Default of ``CALIBTUT_STALL_TIMEOUT``: long enough for local workers to restart on a busy machine.
STALL_TIMEOUT_S = 120.0
#: Seconds to wait for a scheduler given by address before giving up.
CONNECT_TIMEOUT_S = 10
#: Seconds between two looks at the queue of finished tasks, and between two checks of the cluster.
_POLL_S = 0.05
_CHECK_EVERY_S = 1.0
#: Seconds to wait for a finished task's result; longer means its worker died holding it.
_RESULT_WAIT_S = 10.0
#: distributed's lost-worker timeout while a sweep runs on a local cluster: never, in practice.
_KEEP_NANNIES_S = 10 * 365 * 24 * 3600.0
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


def stall_timeout(seconds=None):
    """Seconds a sweep on workers waits while no worker can run its remaining tasks.

    Parameters
    ----------
    seconds : float, optional
        A positive, finite number of seconds. Default: ``CALIBTUT_STALL_TIMEOUT``,
        else :data:`STALL_TIMEOUT_S` (120). A cluster whose workers come from a
        batch queue (dask-jobqueue) may need more: the wait is always bounded.

    Returns
    -------
    float

    Examples
    --------
    >>> stall_timeout(30)
    30.0
    >>> stall_timeout(0)
    Traceback (most recent call last):
    ...
    ValueError: seconds must be > 0, got 0.0
    """
    name = "seconds"
    if seconds is None and os.environ.get(STALL_TIMEOUT_ENV):
        seconds, name = os.environ[STALL_TIMEOUT_ENV], STALL_TIMEOUT_ENV
        try:
            seconds = float(seconds)
        except ValueError:
            raise ValueError(f"{name} must be a number of seconds, got {seconds!r}") from None
    if seconds is None:
        return STALL_TIMEOUT_S
    return check_real(seconds, name, low=0, low_open=True)


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
    machine that ran it), ``numerics`` (:func:`calibtut.numerics.numerics_label`
    of the process that ran it, read back from its libraries after the task)
    and either ``records`` or ``error`` (the traceback). The rows
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
    if threads is not None:
        threads = _positive_int(threads, "threads")
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
    seconds = time.perf_counter() - start
    return {**outcome, "seconds": seconds, "worker": _where(), "cpu": cpu_label(), "numerics": numerics_label()}


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


def worker_numerics(threads):
    """The numerics variables local workers must have before they start (and import numpy or torch).

    Workers run under the numerics of the process that starts them (its
    ``CALIBTUT_NUMERICS`` profile and instruction-set limits), so that a sweep
    gives the same bits serially and on workers; a process started under no
    profile gives them the reference profile (:mod:`calibtut.numerics`).
    Threads are ``threads``.

    Examples
    --------
    >>> import os
    >>> env = worker_numerics(2)
    >>> env["OMP_NUM_THREADS"], env["CALIBTUT_NUMERICS"] == os.environ.get("CALIBTUT_NUMERICS", "reference")
    ('2', True)
    """
    threads = _positive_int(threads, "threads")
    if os.environ.get(PROFILE_ENV):
        own = {name: os.environ.get(name) for name in (PROFILE_ENV, *ISA_VARS)}
    else:
        own = profile_environment(DEFAULT_PROFILE)
    own.update({var: str(threads) for var in _THREAD_VARS})
    return {name: value for name, value in own.items() if value is not None}


def local_cluster(engine):
    """The local cluster of ``engine`` (started once per process and reused by later sweeps).

    Its workers start under :func:`worker_numerics`, set before each worker
    process is spawned (Dask's ``pre-spawn-environ``, which also leaves the
    variables in this process's environment, for the processes it starts).
    """
    distributed = _import_distributed()
    spec = (engine.workers, engine.threads_per_worker, engine.gpu_workers)
    cluster = _CLUSTERS.get(spec)
    if cluster is not None and cluster.status.name == "running":
        _reopen_closed_nannies(cluster)
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
    # for a dashboard these clusters do not serve). A worker holds only the task it runs
    # (saturation 1.0, not 1.1): when a task kills its worker, the scheduler counts the
    # death against every task the worker held, and a task that waited behind a killer
    # could reach `allowed-failures` (3) and fail without ever having run.
    import dask

    # The numerics variables must be there when a worker process starts, before it imports numpy or
    # torch: a Nanny's `env` is applied only once the worker runs, too late for the kernels' choice.
    numerics = {f"distributed.nanny.pre-spawn-environ.{name}": value
                for name, value in worker_numerics(engine.threads_per_worker).items()}
    settings = {**numerics, "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
                "distributed.worker.profile.enabled": False,
                "distributed.scheduler.worker-saturation": 1.0}
    with dask.config.set(settings):
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


def _worker_counts(client):
    """``(workers, gpu workers)`` registered with the scheduler now."""
    workers = client.scheduler_info()["workers"].values()
    return len(workers), sum(1 for w in workers if w.get("resources", {}).get("GPU", 0) >= 1)


def gpu_slots(client):
    """How many workers of the cluster carry the ``GPU`` resource."""
    return _worker_counts(client)[1]


def _reopen_closed_nannies(cluster):
    """Start again the workers of a local cluster that ``distributed`` closed for good.

    ``distributed``'s ``SpecCluster`` closes a worker's nanny when, 15 s
    (``distributed.deploy.lost-worker-timeout``) after the worker was lost, no
    worker of that name is registered: a nanny that is just restarting its
    worker after a later kill is closed that way, and once every nanny is
    closed nothing runs. :func:`run_dask` defers that timeout while it runs;
    this repairs what a loss outside a sweep closed. Scaling the cluster to its
    own size reopens the closed nannies. ``cluster`` None (a scheduler given by
    address, which manages its own workers) or not running: nothing to do.
    """
    if cluster is None or cluster.status.name != "running":
        return
    if set(cluster.worker_spec) - set(cluster.workers):
        cluster.scale(len(cluster.worker_spec))


def _can_run(client, waiting, gpu):
    """Whether some worker can run one of the ``waiting`` futures (those in ``gpu`` need a GPU worker)."""
    try:
        workers, gpu_workers = _worker_counts(client)
    except OSError:  # the scheduler cannot be reached: nothing runs
        return False
    return gpu_workers > 0 if waiting <= gpu else workers > 0


def _not_run(error):
    """The outcome of a task that never returned its result."""
    return {"status": FAILED, "seconds": float("nan"), "worker": None, "error": error}


def _never_returned(exc):
    return _not_run(f"{type(exc).__name__}: {exc}\n(the task never returned; for KilledWorker its worker "
                    f"process died each time it ran it: memory, a crash, or a kill)")


def _collect(future):
    """The outcome of a future that ``as_completed`` returned; None when its result must be awaited again.

    A result lives on the worker that computed it until this process fetches
    it: when that worker dies first, the scheduler computes the task again,
    and the future is waited for anew (bounded: the caller checks the workers).
    """
    if not future.done():  # finished, then lost with its worker
        return None
    try:
        return future.result(timeout=_RESULT_WAIT_S)
    except TimeoutError:
        return None
    except (Exception, asyncio.CancelledError) as exc:  # KilledWorker, a cancellation
        return _never_returned(exc)


def check_serialisable(fn, fn_name):
    """Raise ``TypeError`` naming ``fn`` when cloudpickle cannot send it to workers."""
    import cloudpickle

    try:
        cloudpickle.dumps(fn)
    except Exception as exc:
        raise TypeError(f"fn {fn_name} cannot be sent to the workers (cloudpickle failed: "
                        f"{type(exc).__name__}: {exc}); define it at module level or in the notebook "
                        f"without unpicklable state (open files, locks, generators)") from None


def _submit(client, fn, todo, reserved, threads, label):
    """Futures of ``todo`` (a dict future -> key), and the set of those that need a GPU worker.

    One ``map`` per kind of task: a large group submitted at once is queued on
    the scheduler (root-ish), so that a worker holds only the task it runs.
    """
    import uuid

    token = uuid.uuid4().hex[:8]
    futures, gpu = {}, set()
    for on_gpu in (False, True):
        batch = [(key, task) for key, task in todo if wants_gpu(task) == on_gpu]
        if not batch:
            continue
        mapped = client.map(partial(run_task, fn), [task for _, task in batch], reserved=reserved,
                            threads=threads, key=[f"{label}-{key}-{token}" for key, _ in batch], pure=False,
                            resources={"GPU": 1} if on_gpu else None)
        futures.update(zip(mapped, (key for key, _ in batch)))
        if on_gpu:
            gpu.update(mapped)
    return futures, gpu


def run_dask(client, fn, todo, reserved, threads, label, *, stall=None):
    """Yield ``(key, outcome)`` for each ``(key, task)`` of ``todo`` as workers finish them.

    Each outcome is yielded as soon as its future completes (``as_completed``),
    so that the caller stores it at once. A task that raises comes back as a
    failed outcome; so does a task whose worker died more often than Dask
    allows (``distributed.scheduler.allowed-failures``, 3 by default), with
    the reason. The wait is bounded: when no worker has been able to run the
    remaining tasks for ``stall`` seconds, each of them comes back failed,
    saying so, and the generator ends. On a local cluster, a nanny restarting
    its killed worker is never closed for good while the sweep runs
    (``distributed.deploy.lost-worker-timeout`` is deferred), and nannies closed
    before are reopened. Leaving the generator early (an interrupt) cancels
    whatever is still queued.

    ``stall`` is checked at the call, before anything is submitted (the
    outcomes come from the generator that the call returns).

    Parameters
    ----------
    threads : int
        BLAS/OpenMP/torch threads each task may use (>= 1).
    stall : float, optional
        Seconds to wait without a worker (positive, finite); default: that
        of :func:`stall_timeout`.
    """
    threads = _positive_int(threads, "threads")
    stall = stall_timeout() if stall is None else check_real(stall, "stall", low=0, low_open=True)
    return _dask_outcomes(client, fn, todo, reserved, threads, label, stall)


def _dask_outcomes(client, fn, todo, reserved, threads, label, stall):
    """The generator of :func:`run_dask`, whose arguments it has checked."""
    distributed = _import_distributed()
    import dask

    cluster = getattr(client, "cluster", None)
    keep_nannies = {"distributed.deploy.lost-worker-timeout": _KEEP_NANNIES_S} if cluster is not None else {}
    futures, gpu = _submit(client, fn, todo, reserved, threads, label)
    waiting = set(futures)
    completed = distributed.as_completed(list(futures), loop=client.loop)
    no_worker_since, next_check = None, time.monotonic() + _CHECK_EVERY_S
    try:
        with dask.config.set(keep_nannies):
            while waiting:
                batch = completed.next_batch(block=False)
                for future in batch:
                    outcome = _collect(future)
                    if outcome is None:
                        completed.add(future)
                        continue
                    waiting.discard(future)
                    future.release()
                    yield futures[future], outcome
                now = time.monotonic()
                if now >= next_check:
                    next_check = now + _CHECK_EVERY_S
                    _reopen_closed_nannies(cluster)
                    if _can_run(client, waiting, gpu):
                        no_worker_since = None
                    elif no_worker_since is None:
                        no_worker_since = now
                    elif now - no_worker_since >= stall:
                        error = (f"the sweep stopped waiting: no worker could run this task for {stall:g} s "
                                 f"(every worker died or left; set {STALL_TIMEOUT_ENV} to wait longer)")
                        for future in [f for f in futures if f in waiting]:
                            yield futures[future], _not_run(error)
                        return
                if not batch:
                    time.sleep(_POLL_S)
    finally:
        client.cancel(list(futures))
