"""Tests of calibtut.run.sweep: the store, resuming, failures, and Dask workers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calibtut.run import RUN_DIR_ENV, SweepFailed, stored_rows, stored_tasks, sweep
from calibtut.run import engine as engines
from calibtut.run.provenance import cpu_label
from calibtut.run.store import SweepStore, entry_rows
from calibtut.run.sweep import task_key

pytest.importorskip("distributed")


@pytest.fixture
def no_runner(monkeypatch):
    for name in (RUN_DIR_ENV, "CALIBTUT_SWEEP_DIR", "CALIBTUT_WORKERS", "CALIBTUT_SCHEDULER",
                 "CALIBTUT_PROGRESS_LOG", "CALIBTUT_ROOT"):
        monkeypatch.delenv(name, raising=False)


pytestmark = pytest.mark.usefixtures("no_runner")


def _noisy_mean(seed, n, method):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    return {"value": float(x.mean() if method == "mean" else np.median(x)), "n_used": n}


TASKS = [{"seed": s, "n": n, "method": m} for s in (0, 1) for n in (5, 50) for m in ("mean", "median")]


def _lines(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


# ---------------------------------------------------------------- serial: store and resume


def test_sweep_resumes_after_interruption(tmp_path):
    calls = []

    def fn(**task):
        if len(calls) == 3:
            raise KeyboardInterrupt
        calls.append(task)
        return _noisy_mean(**task)

    with pytest.raises(KeyboardInterrupt):
        sweep(TASKS, fn, store=tmp_path, desc="grid", progress=False)
    store = tmp_path / "grid.jsonl"
    assert [line["task"] for line in _lines(store)] == TASKS[:3]

    resumed_calls = []

    def counting(**task):
        resumed_calls.append(task)
        return _noisy_mean(**task)

    resumed = sweep(TASKS, counting, store=tmp_path, desc="grid", progress=False)
    assert resumed_calls == TASKS[3:]
    uninterrupted = sweep(TASKS, _noisy_mean, progress=False)
    pd.testing.assert_frame_equal(resumed, uninterrupted)
    assert resumed.columns.tolist() == ["seed", "n", "method", "value", "n_used"]
    assert resumed[["seed", "n", "method"]].to_dict("records") == TASKS
    # one line per task, each with its key, code version, worker and seconds
    lines = _lines(store)
    assert [line["key"] for line in lines] == [task_key(t) for t in TASKS]
    assert all(line["status"] == "ok" and line["seconds"] >= 0 and line["worker"] for line in lines)
    assert {"calibtut", "commit", "dirty"} <= set(lines[0]["code"])
    assert lines[0]["fn"].endswith("fn") and lines[-1]["fn"].endswith("counting")


def test_sweep_is_deterministic_and_stores_one_line_per_task(tmp_path):
    first = sweep(TASKS, _noisy_mean, store=tmp_path / "a.jsonl", progress=False)
    second = sweep(TASKS, _noisy_mean, store=tmp_path / "b.jsonl", progress=False)
    pd.testing.assert_frame_equal(first, second)
    assert first["value"].nunique() == len(TASKS)
    assert sorted(line["key"] for line in _lines(tmp_path / "a.jsonl")) == sorted(task_key(t) for t in TASKS)


def test_sweep_accepts_dataframes_and_numpy_values(tmp_path):
    def fn(seed):
        rng = np.random.default_rng(seed)
        return pd.DataFrame({"metric": ["a", "b"], "value": rng.random(2), "count": np.int64(2)})

    tasks = [{"seed": np.int64(0)}, {"seed": 1}]
    fresh = sweep(tasks, fn, store=tmp_path, progress=False)
    again = sweep(tasks, fn, store=tmp_path, progress=False)
    assert fresh.shape == (4, 4)
    pd.testing.assert_frame_equal(fresh, again)
    assert fresh["value"].iloc[0] == np.random.default_rng(0).random(2)[0]


def test_sweep_seconds_column_survives_resume(tmp_path):
    def slow(seed):
        time.sleep(0.05 * (seed + 1))
        return {"v": seed}

    tasks = [{"seed": 0}, {"seed": 1}]
    first = sweep(tasks, slow, store=tmp_path, progress=False, seconds="cpu_s")
    assert first.columns.tolist() == ["seed", "v", "cpu_s"]
    assert 0.05 <= first["cpu_s"].iloc[0] < first["cpu_s"].iloc[1]
    # read back from the store: the time of the run that computed each task, not of the (instant) reload
    again = sweep(tasks, slow, store=tmp_path, progress=False, seconds="cpu_s")
    pd.testing.assert_frame_equal(first, again)
    with pytest.raises(SweepFailed, match="seconds column"):
        sweep(tasks, lambda seed: {"cpu_s": 1}, progress=False, seconds="cpu_s")
    with pytest.raises(TypeError, match="seconds must be"):
        sweep(tasks, slow, progress=False, seconds=True)


def test_sweep_default_store_under_runner(tmp_path, monkeypatch):
    monkeypatch.setenv(RUN_DIR_ENV, str(tmp_path / "run"))
    sweep([{"seed": 0}], lambda seed: {"v": seed}, progress=False)
    assert (tmp_path / "run" / "sweep" / "test_sweep_default_store_under_runner__locals___lambda_.jsonl").is_file()
    sweep([{"seed": 0}], lambda seed: {"w": seed}, desc="second grid", progress=False)
    assert (tmp_path / "run" / "sweep" / "second_grid.jsonl").is_file()
    # the runner's sweep folder (results/<part>/<nb>/sweeps for a published full run) wins
    monkeypatch.setenv("CALIBTUT_SWEEP_DIR", str(tmp_path / "results" / "sweeps"))
    sweep([{"seed": 0}], lambda seed: {"w": seed}, desc="third", progress=False)
    assert (tmp_path / "results" / "sweeps" / "third.jsonl").is_file()


def test_sweep_outside_runner_stores_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    table = sweep([{"seed": 0}], lambda seed: {"v": seed}, progress=False)
    assert table.to_dict("records") == [{"seed": 0, "v": 0}]
    assert list(tmp_path.iterdir()) == []


def test_sweep_progress_lines_go_to_the_runner_log(tmp_path, monkeypatch):
    log = tmp_path / "progress.log"
    monkeypatch.setenv("CALIBTUT_PROGRESS_LOG", str(log))
    sweep([{"seed": s} for s in range(3)], lambda seed: {"v": seed}, desc="grid", progress=False)
    lines = log.read_text().splitlines()
    assert lines[0].startswith("grid: 0/3 done, 1 running")
    assert lines[-1].startswith("grid: 3/3 done, 0 running") and "3/3" in lines[-1]


@pytest.mark.parametrize(
    ("tasks", "fn", "error", "match"),
    [
        ([{"a": 1}, {"a": 1}], lambda a: {"v": 1}, ValueError, "repeats"),
        ([{"a": 1}], lambda a: {"a": 2}, SweepFailed, "also task keys"),
        ([{"a": 1}], lambda a: 3, SweepFailed, "dict or a DataFrame"),
        ([{"a": [1]}], lambda a: {"v": 1}, TypeError, r"tasks\[0\]\['a'\]"),
        ({"a": 1}, lambda a: {"v": 1}, TypeError, "list of dicts"),
        ([{"a": 1}], "fn", TypeError, "callable"),
    ],
)
def test_sweep_checks_arguments(tmp_path, tasks, fn, error, match):
    with pytest.raises(error, match=match):
        sweep(tasks, fn, store=tmp_path, progress=False)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"workers": 0}, ValueError, "workers must be >= 1, got 0"),
        ({"workers": -2}, ValueError, "workers must be >= 1, got -2"),
        ({"workers": 1.5}, TypeError, r"workers must be an integer, got 1.5"),
        ({"workers": "two"}, ValueError, "workers must be an integer >= 1, got 'two'"),
        ({"workers": 2, "scheduler": "tcp://h:1"}, ValueError, "not both"),
        ({"workers": 1, "gpu_workers": 2}, ValueError, r"gpu_workers \(2\) cannot exceed workers \(1\)"),
        ({"workers": 1, "threads_per_worker": 0}, ValueError, "threads_per_worker must be >= 1, got 0"),
        ({"workers": 1, "gpu_workers": -1}, ValueError, "gpu_workers must be >= 0, got -1"),
        ({"workers": float("nan")}, TypeError, "workers must be an integer, got nan"),
        ({"gpu_workers": -1}, ValueError, "gpu_workers must be >= 0, got -1"),  # also when serial
        ({"scheduler": "nowhere"}, ValueError, "address like tcp://host:8786"),
        ({"scheduler": 8786}, TypeError, "scheduler must be an address"),
        ({"store": 3}, TypeError, "store must be a path"),
        ({"desc": 3}, TypeError, "desc must be"),
        ({"progress": "yes"}, TypeError, "progress must be"),
    ],
)
def test_sweep_rejects_bad_engine_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        sweep([{"seed": 0}], lambda seed: {"v": seed}, **{"progress": False, **kwargs})


def test_unreachable_scheduler_is_named(monkeypatch):
    monkeypatch.setattr(engines, "CONNECT_TIMEOUT_S", 1)
    with pytest.raises(ValueError, match=r"scheduler 'tcp://127.0.0.1:9' could not be reached within 1 s"):
        sweep([{"seed": 0}], _square, scheduler="tcp://127.0.0.1:9", progress=False)


def test_environment_asks_for_workers(monkeypatch):
    monkeypatch.setenv("CALIBTUT_WORKERS", "3")
    monkeypatch.setenv("CALIBTUT_GPU_WORKERS", "0")
    assert engines.resolve_engine() == engines.Engine(workers=3, threads_per_worker=1, gpu_workers=0)
    monkeypatch.setenv("CALIBTUT_WORKERS", "0")
    with pytest.raises(ValueError, match=r"workers must be >= 1, got 0"):
        engines.resolve_engine()
    monkeypatch.setenv("CALIBTUT_WORKERS", "many")
    with pytest.raises(ValueError, match=r"workers must be an integer >= 1, got 'many'"):
        engines.resolve_engine()


# ---------------------------------------------------------------- the store file


def test_store_cuts_an_unfinished_line_and_skips_garbage(tmp_path):
    path = tmp_path / "s.jsonl"
    store = SweepStore(path)
    store.append({"key": "a", "status": "ok", "records": [{"v": 1}]})
    with open(path, "a") as handle:
        handle.write('not json\n{"key": "b", "status": "ok", "reco')  # a crash in the middle of a write
    with pytest.warns(RuntimeWarning, match="unfinished last line"):
        store.append({"key": "c", "status": "failed", "error": "boom"})
    with pytest.warns(RuntimeWarning, match="not a sweep entry"):
        done, failed = store.load()
    assert list(done) == ["a"] and list(failed) == ["c"]
    assert path.read_text().endswith('"error": "boom"}\n')
    with pytest.raises(ValueError, match=r"\.jsonl"):
        SweepStore(tmp_path / "s.json")


def test_reading_without_repair_never_writes_and_counts_only_finished_tasks(tmp_path):
    folder = tmp_path / "results" / "p0" / "01_demo" / "sweeps"
    store = SweepStore(folder / "grid.jsonl")
    store.append({"key": "a", "status": "ok", "records": []})
    store.append({"key": "b", "status": "failed", "error": "boom"})
    store.append({"key": "a", "status": "ok", "records": []})  # stored twice, counted once
    with open(store.path, "a") as handle:
        handle.write('{"key": "c", "status": "ok", "rec')  # a running sweep mid-write
    before = store.path.read_bytes()
    assert stored_tasks("p0", "01_demo.md", "grid", root=tmp_path) == 1
    assert store.path.read_bytes() == before
    assert stored_tasks("p0", "01_demo", "other", root=tmp_path) == 0
    with pytest.raises(TypeError, match="repair must be a bool"):
        store.entries(repair="no")
    with pytest.raises(ValueError, match="sweep"):
        stored_tasks("p0", "01_demo", "../grid", root=tmp_path)


def test_stored_rows_are_what_the_sweep_returns_for_the_finished_tasks(tmp_path):
    folder = tmp_path / "results" / "p0" / "01_demo" / "sweeps"
    whole = sweep(TASKS, _noisy_mean, store=folder / "grid.jsonl", progress=False, seconds="s")
    read = stored_rows("p0", "01_demo.md", "grid", seconds="s", root=tmp_path)
    pd.testing.assert_frame_equal(read, whole)
    # a store cut short holds the first tasks only; failed lines and a line being written are left out
    lines = (folder / "grid.jsonl").read_text().splitlines(keepends=True)
    (folder / "grid.jsonl").write_text("".join(lines[:3]) + '{"key": "x", "status": "failed", "error": "e"}\n'
                                       + lines[3][:20])
    part = stored_rows("p0", "01_demo", "grid", root=tmp_path)
    pd.testing.assert_frame_equal(part, whole.drop(columns="s").iloc[:3])
    assert stored_rows("p0", "01_demo", "other", root=tmp_path).empty
    with pytest.raises(ValueError, match="sweep"):
        stored_rows("p0", "01_demo", "../grid", root=tmp_path)
    with pytest.raises(TypeError, match="seconds must be"):
        stored_rows("p0", "01_demo", "grid", seconds=1, root=tmp_path)


def test_entry_rows_refuse_unfinished_entries_and_clashing_records():
    entry = {"key": "k", "status": "ok", "task": {"seed": 3}, "records": [{"v": 1}, {"v": 2}]}
    assert entry_rows(entry) == [{"seed": 3, "v": 1}, {"seed": 3, "v": 2}]
    assert entry_rows({**entry, "seconds": 1.5}, seconds="s")[1] == {"seed": 3, "v": 2, "s": 1.5}
    assert np.isnan(entry_rows(entry, seconds="s")[0]["s"])  # a line without its time
    with pytest.raises(ValueError, match="finished store line"):
        entry_rows({**entry, "status": "failed"})
    with pytest.raises(ValueError, match="finished store line"):
        entry_rows({"key": "k", "status": "ok", "records": []})
    with pytest.raises(ValueError, match=r"returned keys \['seed'\]"):
        entry_rows({**entry, "records": [{"seed": 4}]})
    with pytest.raises(ValueError, match=r"returned keys \['s'\]"):
        entry_rows({**entry, "records": [{"s": 4}]}, seconds="s")


def test_store_keeps_nan_and_inf_exactly(tmp_path):
    values = {"a": float("nan"), "b": float("inf"), "c": 0.1 + 0.2, "d": -1e-300}
    table = sweep([{"seed": 0}], lambda seed: values, store=tmp_path, progress=False)
    again = sweep([{"seed": 0}], lambda seed: {}, store=tmp_path, progress=False)
    pd.testing.assert_frame_equal(table, again)
    assert again["c"].iloc[0] == 0.1 + 0.2 and np.isinf(again["b"].iloc[0]) and np.isnan(again["a"].iloc[0])


# ---------------------------------------------------------------- failures


def _fails_on(seed, bad):
    if seed in bad.split(","):
        raise ArithmeticError(f"task {seed} is broken on purpose")
    return {"v": int(seed) ** 2}


@pytest.mark.parametrize("workers", [None, 2])
def test_failing_task_is_recorded_and_only_it_is_retried(tmp_path, workers):
    tasks = [{"seed": str(s), "bad": "2"} for s in range(5)]
    with pytest.raises(SweepFailed) as info:
        sweep(tasks, _fails_on, store=tmp_path, desc="grid", progress=False, workers=workers)
    message = str(info.value)
    assert "1 task(s) failed" in message and "'seed': '2'" in message
    assert "ArithmeticError: task 2 is broken on purpose" in message
    (traceback,) = info.value.failures.values()
    assert "Traceback" in traceback and "_fails_on" in traceback
    lines = _lines(tmp_path / "grid.jsonl")
    assert sorted(line["task"]["seed"] for line in lines if line["status"] == "ok") == ["0", "1", "3", "4"]
    (failed,) = [line for line in lines if line["status"] == "failed"]
    assert failed["task"]["seed"] == "2" and "ArithmeticError" in failed["error"]

    fixed = [{"seed": str(s), "bad": "2"} for s in range(5)]
    calls = []

    def repaired(seed, bad):
        calls.append(seed)
        return {"v": int(seed) ** 2}

    table = sweep(fixed, repaired, store=tmp_path, desc="grid", progress=False)
    assert calls == ["2"]
    assert table["v"].tolist() == [0, 1, 4, 9, 16]


# ---------------------------------------------------------------- Dask workers


def _square(seed):
    return {"v": seed * seed}


def _draw_after(seed, n, gate):
    """A seeded draw whose first task waits until the file ``gate`` holds a line.

    Given the sweep's own store as ``gate``, the first task finishes only after
    another task's result is stored, so a parallel run completes out of task
    order by construction, not by timing.
    """
    if (seed, n) == (0, 10):
        deadline = time.monotonic() + 120
        while not (os.path.exists(gate) and os.path.getsize(gate) > 0):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no task was stored in {gate}")
            time.sleep(0.01)
    return {"mean": float(np.random.default_rng(seed).normal(size=n).mean()), "pid": 0}


def _worker_environment(seed):
    return {"trim": os.environ.get("MALLOC_TRIM_THRESHOLD_", "unset"), "omp": os.environ.get("OMP_NUM_THREADS")}


def test_local_workers_keep_the_c_library_memory_settings(monkeypatch):
    # Dask's default MALLOC_TRIM_THRESHOLD_=65536 doubled the time of torch tasks (bench_sweep.py)
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    table = sweep([{"seed": 0}], _worker_environment, progress=False, workers=1, gpu_workers=0)
    assert table.loc[0, "trim"] == "unset" and table.loc[0, "omp"] == "1"


def test_local_cluster_gives_the_serial_table(tmp_path):
    opened = tmp_path / "open"  # a gate that is already open: the in-order runs never wait
    opened.write_text("open\n")
    grid = [{"seed": s, "n": n} for s in range(8) for n in (10, 1000)]
    serial = sweep([{**t, "gate": str(opened)} for t in grid], _draw_after, progress=False)
    one = sweep([{**t, "gate": str(opened)} for t in grid], _draw_after, progress=False, workers=1,
                gpu_workers=0)
    store = tmp_path / "grid.jsonl"
    tasks = [{**t, "gate": str(store)} for t in grid]
    two = sweep(tasks, _draw_after, store=tmp_path, desc="grid", progress=False, workers=2, gpu_workers=0)
    pd.testing.assert_frame_equal(serial, one)
    pd.testing.assert_frame_equal(serial.drop(columns="gate"), two.drop(columns="gate"))
    lines = _lines(store)
    assert lines[0]["key"] != task_key(tasks[0])  # the first task waited for a stored one
    assert sorted(line["key"] for line in lines) == sorted(task_key(t) for t in tasks)
    assert {line["worker"] for line in lines} == {"cpu-0", "cpu-1"}
    assert lines[0]["engine"] == {"mode": "local cluster", "workers": 2, "threads_per_worker": 1,
                                  "gpu_workers": 0}
    resumed = sweep(tasks, _draw_after, store=tmp_path, desc="grid", progress=False, workers=2, gpu_workers=0)
    pd.testing.assert_frame_equal(two, resumed)


def _dies_once(seed, marker):
    flag = Path(marker) / f"killed-{seed}"
    if seed == 3 and not flag.exists():
        flag.touch()
        os.kill(os.getpid(), signal.SIGKILL)  # the worker process dies in the middle of the sweep
    time.sleep(0.1)
    return {"v": seed, "pid": os.getpid()}


def test_killed_worker_loses_nothing_and_stores_no_task_twice(tmp_path):
    tasks = [{"seed": s, "marker": str(tmp_path)} for s in range(10)]
    table = sweep(tasks, _dies_once, store=tmp_path, desc="grid", progress=False, workers=2, gpu_workers=0)
    assert (tmp_path / "killed-3").exists()
    assert table["v"].tolist() == list(range(10))
    lines = _lines(tmp_path / "grid.jsonl")
    assert len(lines) == 10 and len({line["key"] for line in lines}) == 10
    assert all(line["status"] == "ok" for line in lines)


def _where_it_ran(seed, device):
    from distributed import get_worker

    return {"worker": get_worker().name}


def test_gpu_tasks_go_to_gpu_workers_only():
    tasks = [{"seed": s, "device": d} for s in range(6) for d in ("cpu", "cuda")]
    table = sweep(tasks, _where_it_ran, progress=False, workers=2, gpu_workers=1)
    on_gpu = table[table["device"] == "cuda"]["worker"]
    assert (on_gpu == "gpu-0").all()
    with pytest.raises(ValueError, match="no worker carries the GPU resource"):
        sweep(tasks, _where_it_ran, progress=False, workers=2, gpu_workers=0)


def test_unpicklable_function_is_named():
    lock = threading.Lock()

    def holds_a_lock(seed):
        with lock:
            return {"v": seed}

    with pytest.raises(TypeError, match="fn .*holds_a_lock cannot be sent to the workers"):
        sweep([{"seed": 0}], holds_a_lock, progress=False, workers=1, gpu_workers=0)


# ---------------------------------------------------------------- the runner: interrupt, resume, clone

SLOW_NOTEBOOK = textwrap.dedent(
    '''\
    ---
    jupytext:
      text_representation:
        extension: .md
        format_name: myst
    kernelspec:
      display_name: Python 3
      language: python
      name: python3
    ---

    # Slow tasks

    ```{code-cell} ipython3
    :tags: [parameters]
    profile = "ci"
    ```

    ```{code-cell} ipython3
    import os, time
    from calibtut.run import save_table, sweep

    def draw(seed):
        if os.path.exists(f"FAIL{seed}"):
            raise RuntimeError(f"seed {seed} fails on purpose")
        time.sleep(float(open("SLEEP").read()) if os.path.exists("SLEEP") else 0.0)
        with open("calls.txt", "a") as out:
            out.write(f"{seed}\\n")
        return {"value": seed * 10}

    table = sweep([{"seed": k} for k in range(8)], draw, progress=False)
    save_table(table, "draws")
    ```
    '''
)


def _book(root):
    root.mkdir(exist_ok=True)
    (root / "_toc.yml").write_text("root: intro\n")
    folder = root / "notebooks" / "p9"
    folder.mkdir(parents=True)
    (folder / "01_slow.md").write_text(SLOW_NOTEBOOK)
    return folder


def _runner(root, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CALIBTUT_")}
    return [sys.executable, "-m", "calibtut.run", "notebooks/p9/01_slow.md", "--profile", "full", *args], \
        {"cwd": root, "env": {**env, "PYTHONWARNINGS": "ignore"}, "capture_output": True, "text": True}


def _calls(folder):
    path = folder / "calls.txt"
    seeds = [int(s) for s in path.read_text().split()] if path.exists() else []
    path.unlink(missing_ok=True)
    return seeds


def test_runner_interrupted_then_resumed_computes_only_the_missing_tasks(tmp_path):
    folder = _book(tmp_path)
    (folder / "SLEEP").write_text("0.4")
    store = tmp_path / "results" / "p9" / "01_slow" / "sweeps" / "draw.jsonl"
    cmd, kwargs = _runner(tmp_path, "--no-progress")
    capture = kwargs.pop("capture_output")
    proc = subprocess.Popen(cmd, **kwargs, stdout=subprocess.PIPE if capture else None,
                            stderr=subprocess.PIPE if capture else None)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not store.exists() or len(store.read_text().splitlines()) < 2):
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "run the same command again to resume" in err
    stored = [line["task"]["seed"] for line in _lines(store)]
    assert 2 <= len(stored) < 8
    _calls(folder)

    (folder / "SLEEP").unlink()
    cmd, kwargs = _runner(tmp_path, "--no-progress", "--workers", "2", "--gpu-workers", "0")
    done = subprocess.run(cmd, **kwargs, timeout=300)
    assert done.returncode == 0, done.stderr
    assert sorted(_calls(folder)) == sorted(set(range(8)) - set(stored))
    lines = _lines(store)
    assert len(lines) == 8 and len({line["key"] for line in lines}) == 8
    assert {line["engine"]["mode"] for line in lines[len(stored):]} == {"local cluster"}
    (run,) = (tmp_path / "_build" / "runs" / "p9" / "01_slow").glob("full-*")
    assert pd.read_csv(run / "draws.csv")["value"].tolist() == [10 * k for k in range(8)]


def _git(root, *args):
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
                   check=True, capture_output=True)


def test_store_committed_in_one_clone_resumes_in_another(tmp_path):
    first = tmp_path / "first"
    folder = _book(first)
    for seed in (5, 6, 7):
        (folder / f"FAIL{seed}").write_text("")
    cmd, kwargs = _runner(first, "--no-progress")
    failed = subprocess.run(cmd, **kwargs, timeout=300)
    assert failed.returncode == 1 and "3 task(s) failed" in failed.stderr
    assert "RuntimeError: seed 5 fails on purpose" in failed.stderr
    assert sorted(_calls(folder)) == [0, 1, 2, 3, 4]
    (tmp_path / "first" / ".gitignore").write_text("_build/\nFAIL*\ncalls.txt\n")
    _git(first, "init", "-q")
    _git(first, "add", ".")
    _git(first, "commit", "-q", "-m", "a run that stopped half way")

    second = tmp_path / "second"
    subprocess.run(["git", "clone", "-q", str(first), str(second)], check=True)
    cmd, kwargs = _runner(second, "--no-progress", "--publish")
    done = subprocess.run(cmd, **kwargs, timeout=300)
    assert done.returncode == 0, done.stderr
    assert sorted(_calls(second / "notebooks" / "p9")) == [5, 6, 7]
    draws = pd.read_csv(second / "results" / "p9" / "01_slow" / "draws.csv")
    assert draws["value"].tolist() == [10 * k for k in range(8)]
    lines = _lines(second / "results" / "p9" / "01_slow" / "sweeps" / "draw.jsonl")
    assert [line["status"] for line in lines].count("ok") == 8


# ---------------------------------------------------------------- recheck


def test_recheck_finds_a_tampered_line(tmp_path, capsys):
    from calibtut.run.recheck import main as recheck_main
    from calibtut.run.recheck import recheck

    path = tmp_path / "grid.jsonl"
    sweep([{"seed": s} for s in range(6)], _square, store=path, progress=False)
    lines = path.read_text().splitlines()
    entry = json.loads(lines[2])
    entry["records"][0]["v"] += 1
    entry["cpu"] = "Another CPU (avx512f)"
    path.write_text("\n".join(lines[:2] + [json.dumps(entry)] + lines[3:]) + "\n")
    table = recheck(path, sample=6, progress=False)
    assert table["match"].sum() == 5
    assert table.set_index("key").loc[entry["key"], "differing"] == "v"
    assert set(table["cpu"]) == {cpu_label()}
    assert set(table["stored_cpu"]) == {cpu_label(), "Another CPU (avx512f)"}
    assert recheck_main([str(path), "--sample", "6", "--workers", "1"]) == 1
    out = capsys.readouterr().out
    assert "5 of 6 recomputed tasks match the store exactly" in out
    assert "1 of the differing tasks were stored from another CPU (Another CPU (avx512f);" in out
    assert recheck_main([str(tmp_path / "missing.jsonl")]) == 2
    assert "does not exist" in capsys.readouterr().err
    with pytest.raises(ValueError, match="sample must be"):
        recheck(path, sample=0)


def test_engine_and_progress_check_their_counts():
    with pytest.raises(ValueError, match="workers must be >= 1, got 0"):
        engines.Engine(workers=0)
    with pytest.raises(TypeError, match=r"gpu_workers must be an integer, got inf"):
        engines.Engine(workers=2, gpu_workers=float("inf"))
    from calibtut.run.progress import SweepProgress

    with pytest.raises(ValueError, match="done must be <= 4, got 5"):
        SweepProgress(4, 5, "demo", bar=False, slots=1)
    from calibtut.run.recheck import recheck

    with pytest.raises(ValueError, match="max_seconds must be a finite real number, got inf"):
        recheck("missing.jsonl", max_seconds=float("inf"))  # refused before the store is read


def test_recheck_recomputes_under_the_stored_thread_count(tmp_path, monkeypatch):
    """Lines that record a thread count other than this process's are recomputed in a new process.

    Lines stored before profiles were recorded came from one-thread workers
    (``stored_numerics`` says 1 thread); a shell without a profile runs
    torch's default thread count, whose reductions can give other bits (a
    regression-study task gives other bits on 1 and on 2 threads), so the
    profile alone must not decide that the sample can be recomputed here.
    """
    from calibtut.numerics import numerics_label, numerics_state
    from calibtut.run import recheck as rechecking

    path = tmp_path / "grid.jsonl"
    sweep([{"seed": s} for s in range(3)], _square, store=path, progress=False)
    state = numerics_state(load=True)
    own = numerics_label(state)["threads"]
    profile = state["profile"] or "native"
    calls = []

    def elsewhere(path, profile, threads, **kwargs):
        calls.append((profile, threads))
        return pd.DataFrame({"match": [True]})

    monkeypatch.setattr(rechecking, "_recheck_elsewhere", elsewhere)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert {entry["numerics"]["threads"] for entry in lines} == {own}
    for entry in lines:
        entry["numerics"]["threads"] = own + 6
    path.write_text("".join(json.dumps(entry) + "\n" for entry in lines))
    rechecking.recheck(path, sample=3, progress=False)
    assert calls == [(profile, own + 6)]

    calls.clear()
    for entry in lines:
        entry["numerics"]["threads"] = own
    path.write_text("".join(json.dumps(entry) + "\n" for entry in lines))
    table = rechecking.recheck(path, sample=3, progress=False)
    assert calls == [] and table["match"].all()  # this process's own profile and threads: recomputed here
