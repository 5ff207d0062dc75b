"""The runner never loses published work, says what a run did, and stops cleanly.

- ``--fresh`` (``run_notebook(fresh=True)``) deletes nothing under ``results/``;
  ``--out`` and ``publish`` cannot either;
- every run ends with a summary (tasks computed now and read from the store,
  tables written, the cells holding an assert), also recorded in provenance;
- Ctrl-C or SIGTERM ends with status 130, no traceback, the finished tasks
  stored and the kernel shut down;
- ``pip install .``'s ``build/`` leaves the code version clean.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from calibtut.run import RUN_DIR_ENV, publish, read_provenance, run_notebook
from calibtut.run.__main__ import main
from calibtut.run.execute import FreshRefused, default_run_dir
from calibtut.run.provenance import git_state

REPO = Path(__file__).resolve().parent.parent

HEADER = textwrap.dedent(
    """\
    ---
    kernelspec:
      display_name: Python 3
      language: python
      name: python3
    ---

    """
)


def _cell(source, tags=None):
    tag_line = f":tags: [{', '.join(tags)}]\n" if tags else ""
    return f"```{{code-cell}} ipython3\n{tag_line}{textwrap.dedent(source).strip()}\n```\n\n"


#: A sweep of three tasks, a table and two cells with asserts; the second fails when ``fail``.
COUNTING = HEADER + _cell('profile = "ci"\nfail = False', ["parameters"]) + _cell(
    """
    from calibtut.run import save_table, sweep

    def square(seed):
        return {"value": seed * seed}

    table = sweep([{"seed": seed} for seed in range(3)], square, desc="squares")
    save_table(table, "squares")
    assert table["value"].tolist() == [0, 1, 4]
    """
) + _cell('assert not fail, "failing on purpose"')

#: One quick task, then one that sleeps until the run is stopped.
SLOW = HEADER + _cell('profile = "ci"', ["parameters"]) + _cell(
    """
    import time
    from calibtut.run import sweep

    def wait(seed):
        time.sleep(0.1 if seed == 0 else 300)
        return {"seed_again": seed}

    sweep([{"seed": 0}, {"seed": 1}], wait, desc="waits")
    """
)


@pytest.fixture
def book(tmp_path, monkeypatch):
    """A repository root holding ``notebooks/p9/``; the working directory while the test runs."""
    monkeypatch.delenv(RUN_DIR_ENV, raising=False)
    monkeypatch.delenv("CALIBTUT_ROOT", raising=False)
    (tmp_path / "_toc.yml").write_text("root: intro\n")
    (tmp_path / "notebooks" / "p9").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _notebook(book, name, text):
    path = book / "notebooks" / "p9" / f"{name}.md"
    path.write_text(text)
    return path.relative_to(book).as_posix()


# ---------------------------------------------------------------- nothing under results/ is deleted


def test_fresh_refuses_when_the_stores_under_results_hold_files(book, capsys):
    notebook = _notebook(book, "01_counting", COUNTING)
    stores = book / "results" / "p9" / "01_counting" / "sweeps"
    stores.mkdir(parents=True)
    (stores / "squares.jsonl").write_text('{"key": "a", "status": "ok", "records": []}\n')
    (stores / "old.jsonl.gz").write_bytes(b"")
    run_dir = default_run_dir(book, "p9", "01_counting", "full", {"profile": "full", "fail": False})
    run_dir.mkdir(parents=True)
    (run_dir / "provenance.json").write_text("{}")

    assert main([notebook, "--profile", "full", "--fresh", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "results/p9/01_counting/sweeps/squares.jsonl" in err
    assert "results/p9/01_counting/sweeps/old.jsonl.gz" in err
    assert "nothing was deleted" in err and "without --fresh" in err
    assert "git rm -r results/p9/01_counting/sweeps" in err and "-p NAME VALUE" in err
    # refused before anything was deleted: the stores and the run directory are still there
    assert (stores / "squares.jsonl").read_text().startswith('{"key": "a"')
    assert (stores / "old.jsonl.gz").is_file() and (run_dir / "provenance.json").is_file()

    with pytest.raises(ValueError, match="never deletes anything under results/") as info:
        run_notebook(notebook, "full", fresh=True)
    assert isinstance(info.value, FreshRefused) and str(info.value) in err
    assert (stores / "squares.jsonl").is_file()


def test_fresh_help_says_what_it_deletes(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "delete the run directory first" in text
    assert "nothing under results/ is deleted" in text


def test_out_cannot_be_a_folder_under_results(book, capsys):
    notebook = _notebook(book, "01_counting", COUNTING)
    published = book / "results" / "p9" / "01_counting"
    published.mkdir(parents=True)
    (published / "squares.csv").write_text("seed,value\n0,0\n")
    (published / "provenance.json").write_text(json.dumps({"status": "completed", "profile": "full"}))
    assert main([notebook, "--out", "results/p9/01_counting", "--fresh"]) == 1
    assert "lies inside results/" in capsys.readouterr().err
    assert sorted(p.name for p in published.iterdir()) == ["provenance.json", "squares.csv"]


def test_publish_replaces_only_the_published_tables(book):
    run = book / "_build" / "runs" / "p9" / "01_counting" / "full-abc"
    run.mkdir(parents=True)
    (run / "squares.csv").write_text("seed,value\n0,0\n")
    prov = {"status": "completed", "profile": "full", "part": "p9", "notebook": "01_counting"}
    (run / "provenance.json").write_text(json.dumps(prov))
    dest = book / "results" / "p9" / "01_counting"
    (dest / "sweeps").mkdir(parents=True)
    (dest / "sweeps" / "squares.jsonl").write_text("{}\n")
    (dest / "squares.csv").write_text("seed,value\n9,81\n")
    (dest / "stale.csv.gz").write_bytes(b"")
    (dest / "notes.md").write_text("kept\n")

    assert publish(run) == dest
    assert sorted(p.name for p in dest.iterdir()) == ["notes.md", "provenance.json", "squares.csv", "sweeps"]
    assert (dest / "squares.csv").read_text() == "seed,value\n0,0\n"
    assert (dest / "sweeps" / "squares.jsonl").read_text() == "{}\n"
    # a published folder is not a run directory: publishing it onto itself is refused, nothing deleted
    with pytest.raises(ValueError, match="lies under results/"):
        publish(dest)
    assert (dest / "squares.csv").is_file()


# ---------------------------------------------------------------- the summary


def test_a_run_ends_with_a_summary_also_when_it_fails(book, capsys):
    notebook = _notebook(book, "01_counting", COUNTING)
    out = book / "_build" / "runs" / "counting"
    # a failing run: the sweep before the failing cell computed its three tasks, its table is written
    assert main([notebook, "-p", "fail", "True", "--out", str(out), "--no-progress"]) == 1
    captured = capsys.readouterr()
    assert "failing on purpose" in captured.err
    lines = captured.out.splitlines()
    assert lines[0].startswith("summary: failed after ")
    assert lines[1:] == [
        "  sweep squares: 3 tasks, 3 computed now, 0 read from the store",
        "  tables written: squares",
        "  checks: 2 code cells with an assert ran, 1 passed, 1 raised",
    ]
    summary = read_provenance(out)["summary"]
    assert summary["sweeps"] == {"squares": {"tasks": 3, "computed_now": 3, "from_store": 0}}
    assert summary["checks"] == {"cells": 2, "ran": 2, "passed": 1} and summary["status"] == "failed"

    # the same run directory again: every task is read from the store, every check passes
    assert main([notebook, "--out", str(out), "--no-progress"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"run directory: {out}"
    assert lines[1].startswith("summary: completed in ") and lines[1].endswith(" s")
    assert lines[2:] == [
        "  sweep squares: 3 tasks, 0 computed now, 3 read from the store",
        "  tables written: squares",
        "  checks: 2 code cells with an assert ran, all passed",
    ]
    prov = read_provenance(out)
    assert prov["summary"]["wall_time_s"] == prov["wall_time_s"] > 0
    assert prov["summary"]["tables"] == ["squares"] and prov["summary"]["other_stores"] == {}
    assert prov["sweeps"]["squares"]["store"] == "_build/runs/counting/sweep/squares.jsonl"


# ---------------------------------------------------------------- Ctrl-C and SIGTERM


def _wait_for_lines(path, n, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.is_file() and len(path.read_text().splitlines()) >= n:
            return
        time.sleep(0.2)
    raise AssertionError(f"{path} did not get {n} line(s) within {timeout} s")


def _kernels(pid):
    return [p for p in psutil.Process(pid).children(recursive=True) if "ipykernel" in " ".join(p.cmdline())]


def _gone(process, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not process.is_running() or process.status() == psutil.STATUS_ZOMBIE:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_stopping_the_runner_ends_cleanly(book, signum):
    notebook = _notebook(book, "02_slow", SLOW)
    runner = subprocess.Popen(
        [sys.executable, "-m", "calibtut.run", notebook, "--no-progress"], cwd=book,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,  # its own process group, which a terminal's Ctrl-C signals as a whole
    )
    try:
        store = default_run_dir(book, "p9", "02_slow", "ci", {"profile": "ci"}) / "sweep" / "waits.jsonl"
        _wait_for_lines(store, 1, timeout=120)  # the quick task is stored; the slow one runs
        (kernel,) = _kernels(runner.pid)
        os.killpg(runner.pid, signum)
        out, err = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            os.killpg(runner.pid, signal.SIGKILL)
            runner.wait()
    assert runner.returncode == 130, err
    assert "Traceback" not in err and "ZMQError" not in err, err
    assert err.rstrip().endswith(
        "interrupted: finished sweep tasks are stored; run the same command again to resume")
    assert "summary: interrupted after" in out
    assert "  store _build/runs/p9/02_slow/ci-" in out and "/sweep/waits.jsonl: 1 finished task stored" in out
    assert _gone(kernel), f"kernel {kernel.pid} still running"
    assert [json.loads(line)["task"] for line in store.read_text().splitlines()] == [{"seed": 0}]
    assert read_provenance(store.parent.parent)["status"] == "interrupted"


# ---------------------------------------------------------------- build/ leaves the code clean


def test_build_and_dist_are_ignored():
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    for path in ("build/anything", "build/lib/calibtut/run/execute.py", "dist/calibtut-0.1.0.tar.gz"):
        done = subprocess.run(["git", "-C", str(REPO), "check-ignore", "-q", path], check=False)
        assert done.returncode == 0, f"{path} is not ignored"


def test_git_state_is_clean_beside_an_ignored_build_folder(tmp_path):
    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    shutil.copyfile(REPO / ".gitignore", tmp_path / ".gitignore")
    (tmp_path / "code.py").write_text("a = 1\n")
    git("add", "-A")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init")
    (tmp_path / "build" / "lib" / "calibtut").mkdir(parents=True)  # what `pip install .` leaves
    (tmp_path / "build" / "lib" / "calibtut" / "code.py").write_text("a = 1\n")
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / "calibtut-0.1.0.tar.gz").write_bytes(b"")
    assert git_state(tmp_path)["dirty"] is False
    (tmp_path / "new.py").write_text("b = 1\n")  # an untracked file that is not ignored still counts
    assert git_state(tmp_path)["dirty"] is True
