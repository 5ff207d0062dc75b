"""A sweep on Dask workers that die: it keeps going or stops, within a bound, and keeps what finished.

Each scenario runs in its own process under a hard time limit, so that a hang
fails the test instead of stalling the suite (and leaves no worker behind).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from calibtut.run import SweepFailed, sweep
from calibtut.run import engine as engines
from calibtut.run.sweep import task_key

distributed = pytest.importorskip("distributed")

#: Wall seconds a scenario may take on a busy 2-core machine (they take 20-60 s there).
LIMIT_S = 300
ONCE = {1: "exit", 4: "kill"}  # seeds that kill their own worker the first time they run
EVERY_WORKER = 7  # the first time it runs, every worker of the cluster dies at once
ALWAYS = 10  # kills its worker every time: Dask gives up on it after allowed-failures + 1 deaths
STOPS = 3  # in the stall scenario: kills the cluster's only worker, which nothing restarts


async def _exit_at_once():
    # Client.run(..., wait=False) takes only coroutine functions: a plain os._exit is refused
    # ("Combination not supported") and no worker dies
    os._exit(1)


def _victim(seed, marker):
    flag = Path(marker) / f"ran-{seed}"
    first = not flag.exists()
    flag.touch()
    if seed == ALWAYS or (first and ONCE.get(seed) == "kill"):
        os.kill(os.getpid(), signal.SIGKILL)
    if first and ONCE.get(seed) == "exit":
        os._exit(1)
    if first and seed == EVERY_WORKER:
        distributed.get_client().run(_exit_at_once, wait=False)
        time.sleep(60)
    time.sleep(0.05)
    return {"v": seed * seed, "pid": os.getpid()}


def _where(seed):
    time.sleep(0.2)
    return {"worker": distributed.get_worker().name}


def _stops(seed, store):
    if seed == STOPS:  # once the client holds the results before it (a dead worker loses those it holds)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(_lines(store)) < STOPS:
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGKILL)
    return {"v": seed}


def _lines(path):
    path = Path(path)
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _failed_seeds(call):
    started = time.monotonic()
    try:
        call()
    except SweepFailed as exc:
        return sorted(dict(task)["seed"] for task in exc.failures), str(exc), time.monotonic() - started
    return [], "", time.monotonic() - started


def _kills(folder):
    """Workers killed one by one, all at once, and by one task each time it runs; then a closed nanny."""
    import dask

    dask.config.set({"distributed.scheduler.allowed-failures": 2})  # ALWAYS fails after 3 deaths, not 4
    tasks = [{"seed": s, "marker": folder} for s in range(12)]
    failed, message, seconds = _failed_seeds(
        lambda: sweep(tasks, _victim, store=folder, desc="grid", progress=False, workers=2, gpu_workers=0))
    # distributed closes a nanny for good when its worker is lost and not back 15 s later;
    # a loss between two sweeps does that outside the sweep: the next sweep has both workers again
    cluster = engines.local_cluster(engines.Engine(workers=2, gpu_workers=0))
    cluster.sync(cluster.workers["cpu-1"].close)
    del cluster.workers["cpu-1"]
    where = sweep([{"seed": s} for s in range(8)], _where, progress=False, workers=2, gpu_workers=0)
    return {"failed": failed, "message": message, "seconds": seconds, "workers": sorted(set(where["worker"]))}


def _stall(folder):
    """The only worker of a cluster given by address dies and nothing restarts it."""
    cluster = distributed.LocalCluster(n_workers=0, dashboard_address=":0")
    worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", cluster.scheduler_address,
                               "--no-nanny", "--nthreads", "1", "--no-dashboard"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with distributed.Client(cluster, set_as_default=False) as client:
            client.wait_for_workers(1, timeout=120)
        os.environ[engines.STALL_TIMEOUT_ENV] = "3"
        tasks = [{"seed": s, "store": str(Path(folder) / "grid.jsonl")} for s in range(6)]
        failed, message, seconds = _failed_seeds(
            lambda: sweep(tasks, _stops, store=folder, desc="grid", progress=False,
                          scheduler=cluster.scheduler_address))
    finally:
        worker.kill()
        worker.wait()
        cluster.close()
    return {"failed": failed, "message": message, "seconds": seconds}


def _scenario(name, folder):
    """Run ``name`` in a fresh process, killed (with its workers) after LIMIT_S seconds."""
    here = str(Path(__file__).resolve().parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CALIBTUT_")}
    env["PYTHONPATH"] = os.pathsep.join([here, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    script = (f"import json, test_sweep_worker_death as t\n"
              f"if __name__ == '__main__':\n"
              f"    print(json.dumps(t.{name}({str(folder)!r})))\n")
    process = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = process.communicate(timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail(f"{name}: the sweep did not return within {LIMIT_S} s")
    assert process.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def test_workers_killed_repeatedly_and_all_at_once_lose_nothing_finished(tmp_path):
    result = _scenario("_kills", tmp_path)
    # the one task that kills its worker every time is named, and only it
    assert result["failed"] == [ALWAYS]
    assert f"'seed': {ALWAYS}" in result["message"] and "KilledWorker" in result["message"]
    assert all((tmp_path / f"ran-{seed}").exists() for seed in [*ONCE, EVERY_WORKER])
    lines = _lines(tmp_path / "grid.jsonl")
    ok = {line["task"]["seed"]: line for line in lines if line["status"] == "ok"}
    assert sorted(ok) == [s for s in range(12) if s != ALWAYS]
    assert len([line for line in lines if line["status"] == "ok"]) == 11  # no task stored twice
    assert all(ok[s]["records"][0]["v"] == s * s for s in ok)
    assert [line["task"]["seed"] for line in lines if line["status"] == "failed"] == [ALWAYS]
    assert len({ok[s]["records"][0]["pid"] for s in ok}) >= 3  # workers were really replaced
    assert result["workers"] == ["cpu-0", "cpu-1"]  # a closed nanny is reopened


def test_sweep_stops_naming_the_tasks_no_worker_is_left_to_run(tmp_path):
    result = _scenario("_stall", tmp_path)
    assert result["failed"] == [3, 4, 5]
    assert "no worker could run this task for 3 s" in result["message"]
    assert result["seconds"] < 60  # 3 s of patience after the loss, not a hang
    lines = _lines(tmp_path / "grid.jsonl")
    assert sorted(line["task"]["seed"] for line in lines if line["status"] == "ok") == [0, 1, 2]
    assert {line["key"] for line in lines if line["status"] == "failed"} == {
        task_key({"seed": s, "store": str(tmp_path / "grid.jsonl")}) for s in (3, 4, 5)}


@pytest.mark.parametrize(
    ("env", "error", "match"),
    [
        ("0", ValueError, "CALIBTUT_STALL_TIMEOUT must be > 0, got 0.0"),
        ("inf", ValueError, "CALIBTUT_STALL_TIMEOUT must be a finite real number, got inf"),
        ("nan", ValueError, "CALIBTUT_STALL_TIMEOUT must be a finite real number, got nan"),
        ("soon", ValueError, "CALIBTUT_STALL_TIMEOUT must be a number of seconds, got 'soon'"),
    ],
)
def test_stall_timeout_from_the_environment_is_checked(monkeypatch, env, error, match):
    monkeypatch.setenv(engines.STALL_TIMEOUT_ENV, env)
    with pytest.raises(error, match=match):
        engines.stall_timeout()


def test_stall_timeout_default_and_argument(monkeypatch):
    monkeypatch.delenv(engines.STALL_TIMEOUT_ENV, raising=False)
    assert engines.stall_timeout() == engines.STALL_TIMEOUT_S == 120.0
    monkeypatch.setenv(engines.STALL_TIMEOUT_ENV, "7.5")
    assert engines.stall_timeout() == 7.5
    assert engines.stall_timeout(2) == 2.0  # an argument wins over the environment
    with pytest.raises(TypeError, match="seconds must be a real number"):
        engines.stall_timeout("10")
