"""Tests of calibtut.run: profiles, tables and provenance, glue, the runner (sweeps: test_sweep.py)."""

from __future__ import annotations

import copy
import gzip
import json
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest

from calibtut.run import (
    PROFILES,
    RUN_DIR_ENV,
    Settings,
    find_root,
    load_result,
    paper_vs_ours,
    parse_value,
    publish,
    read_provenance,
    save_table,
    settings,
    table_path,
)
from calibtut.run.__main__ import main
from calibtut.run._paths import COMPRESS_ABOVE, gzip_bytes, stored_path
from calibtut.run.glue import GLUE_PREFIX, glue_bundle
from calibtut.run.provenance import cpu_label, git_state
from calibtut.run.recheck import main as recheck_main
from calibtut.run.recheck import recheck, resolve_function
from calibtut.run.store import SweepStore
from calibtut.run.sweep import function_reference, sweep


@pytest.fixture
def no_runner(monkeypatch):
    monkeypatch.delenv(RUN_DIR_ENV, raising=False)
    monkeypatch.delenv("CALIBTUT_ROOT", raising=False)


@pytest.fixture
def run_dir(tmp_path, monkeypatch):
    folder = tmp_path / "run"
    folder.mkdir()
    monkeypatch.setenv(RUN_DIR_ENV, str(folder))
    return folder


# ---------------------------------------------------------------- settings


def test_settings_picks_profile_and_is_read_only():
    s = settings("ci", ci={"n": 10, "datasets": ["a"]}, full={"n": 1000, "datasets": ["a", "b"]})
    assert isinstance(s, Settings)
    assert (s.n, s["datasets"], s.profile) == (10, ["a"], "ci")
    assert dict(s) == {"n": 10, "datasets": ["a"]}
    assert repr(s) == "Settings(profile='ci', n=10, datasets=['a'])"
    with pytest.raises(AttributeError, match="read-only"):
        s.n = 5
    with pytest.raises(AttributeError, match="no setting 'm'"):
        _ = s.m
    with pytest.raises(TypeError):
        s["n"] = 5
    assert settings("full", ci={"n": 1}, full={"n": 2}).n == 2
    assert pickle.loads(pickle.dumps(s)) == s and copy.deepcopy(s) == s


def test_settings_rejects_unknown_profile_listing_valid_ones():
    with pytest.raises(ValueError, match="'ci', 'full'") as info:
        settings("paper", ci={}, full={})
    assert "paper" in str(info.value)
    with pytest.raises(TypeError, match="profile"):
        settings(1, ci={}, full={})
    assert PROFILES == ("ci", "full")


@pytest.mark.parametrize(
    ("ci", "full", "match"),
    [
        ({"n": 1, "extra": 2}, {"n": 1}, r"only in ci: \['extra'\]"),
        ({"n": 1}, {"n": 1, "epochs": 3}, r"only in full: \['epochs'\]"),
        ({"not valid": 1}, {"not valid": 1}, "identifiers"),
        ({"profile": 1}, {"profile": 1}, "reserved"),
    ],
)
def test_settings_checks_keys(ci, full, match):
    with pytest.raises(ValueError, match=match):
        settings("ci", ci=ci, full=full)


def test_settings_rejects_non_dicts():
    with pytest.raises(TypeError, match="full"):
        settings("ci", ci={}, full=[("n", 1)])


# ---------------------------------------------------------------- -p values


@pytest.mark.parametrize("text", ["3", "-2", "0.5", "1e-3", "True", "False", "None", "adult", "1,2", "nan"])
def test_parse_value_matches_papermill(text):
    from papermill.cli import _resolve_type

    got, want = parse_value(text), _resolve_type(text)
    assert type(got) is type(want)
    assert got == want or (isinstance(got, float) and np.isnan(got) and np.isnan(want))


# ---------------------------------------------------------------- root, tables, provenance


def test_find_root_walks_up(tmp_path, no_runner):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "calibtut"\n')
    deep = tmp_path / "notebooks" / "001"
    deep.mkdir(parents=True)
    assert find_root(deep) == tmp_path.resolve()
    other = tmp_path / "elsewhere"
    (other / "x").mkdir(parents=True)
    (other / "pyproject.toml").write_text('[project]\nname = "other"\n')
    assert find_root(other / "x") == tmp_path.resolve()


def test_find_root_fails_clearly(tmp_path, no_runner):
    assert find_root(tmp_path, required=False) is None
    with pytest.raises(FileNotFoundError, match="CALIBTUT_ROOT"):
        find_root(tmp_path)


def test_save_table_into_run_dir(run_dir):
    df = pd.DataFrame({"method": ["a", "b"], "ece": [0.1, 0.25]})
    assert save_table(df, "table1") is None  # a cell ending with it shows no path
    assert table_path("table1") == run_dir / "table1.csv"
    pd.testing.assert_frame_equal(pd.read_csv(run_dir / "table1.csv"), df)
    save_table(df.set_index("method"), "t2")
    pd.testing.assert_frame_equal(pd.read_csv(table_path("t2")), df)
    assert not list(run_dir.glob("*.tmp"))


def test_save_table_checks_arguments(run_dir):
    with pytest.raises(TypeError, match="df"):
        save_table({"a": [1]}, "t")
    with pytest.raises(ValueError, match="name"):
        save_table(pd.DataFrame({"a": [1]}), "../t")
    wide = pd.DataFrame([[1, 2]], columns=pd.MultiIndex.from_tuples([("a", "x"), ("a", "y")]))
    with pytest.raises(ValueError, match="MultiIndex"):
        save_table(wide, "t")


def test_save_table_outside_runner(tmp_path, monkeypatch, no_runner):
    monkeypatch.chdir(tmp_path)
    assert table_path("t") is None
    save_table(pd.DataFrame({"a": [1]}), "t")  # nowhere to write: nothing written
    assert not list(tmp_path.rglob("*.csv"))
    (tmp_path / "_toc.yml").write_text("root: intro\n")
    save_table(pd.DataFrame({"a": [1]}), "t")
    assert table_path("t") == tmp_path.resolve() / "_build" / "runs" / "interactive" / "t.csv"
    assert table_path("t").is_file()


def _fake_run(root, profile="full", status="completed"):
    run = root / "_build" / "runs" / "p1" / "02_demo" / f"{profile}-abc"
    run.mkdir(parents=True)
    pd.DataFrame({"method": ["a"], "value": [0.5]}).to_csv(run / "scores.csv", index=False)
    prov = {"status": status, "profile": profile, "part": "p1", "notebook": "02_demo", "tables": ["scores"]}
    (run / "provenance.json").write_text(json.dumps(prov))
    return run


def test_publish_and_load_result_round_trip(tmp_path, monkeypatch, no_runner):
    (tmp_path / "_toc.yml").write_text("")
    run = _fake_run(tmp_path)
    dest = tmp_path / "results" / "p1" / "02_demo"
    dest.mkdir(parents=True)
    (dest / "stale.csv").write_text("x\n1\n")
    assert publish(run) == dest
    assert sorted(p.name for p in dest.iterdir()) == ["provenance.json", "scores.csv"]
    monkeypatch.chdir(tmp_path / "_build")
    df, prov = load_result("p1", "02_demo.md", "scores")
    assert df.to_dict("list") == {"method": ["a"], "value": [0.5]}
    assert prov["profile"] == "full"


def test_load_result_keeps_labels_that_pandas_would_read_as_missing(tmp_path):
    (tmp_path / "_toc.yml").write_text("")
    dest = tmp_path / "results" / "p1" / "02_demo"
    dest.mkdir(parents=True)
    frame = pd.DataFrame({"method": ["None", "NA", "Temp"], "ece": [40.0, np.nan, 3.5]})
    frame.to_csv(dest / "runs.csv", index=False)
    (dest / "provenance.json").write_text(json.dumps({"profile": "full"}))
    df, _ = load_result("p1", "02_demo", "runs", root=tmp_path)
    assert df["method"].tolist() == ["None", "NA", "Temp"]
    assert df["ece"].isna().tolist() == [False, True, False]


def test_publish_refuses_ci_and_failed_runs(tmp_path, no_runner):
    (tmp_path / "_toc.yml").write_text("")
    with pytest.raises(ValueError, match="full"):
        publish(_fake_run(tmp_path / "a", profile="ci"), root=tmp_path)
    with pytest.raises(ValueError, match="did not complete"):
        publish(_fake_run(tmp_path / "b", status="failed"), root=tmp_path)
    with pytest.raises(FileNotFoundError, match="provenance.json"):
        publish(tmp_path, root=tmp_path)


def test_load_result_missing_names_the_command(tmp_path, monkeypatch, no_runner):
    repo, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    repo.mkdir()
    elsewhere.mkdir()
    (repo / "_toc.yml").write_text("")
    monkeypatch.chdir(repo)
    command = "python -m calibtut.run notebooks/p1/02_demo.md --profile full --publish"
    with pytest.raises(FileNotFoundError, match=command.replace(".", r"\.")):
        load_result("p1", "02_demo", "scores")
    monkeypatch.chdir(elsewhere)
    with pytest.raises(FileNotFoundError, match="not with the installed package"):
        load_result("p1", "02_demo", "scores")


# ---------------------------------------------------------------- glue


def test_glue_bundle_is_read_by_myst_nb():
    glue_ext = pytest.importorskip("myst_nb.ext.glue")
    from myst_nb.core.variables import format_plain_text

    outputs = []
    for name, value, fmt in [("x", np.float64(0.123456), None), ("pct", 0.0712, ".1%"), ("w", "hi", None),
                             ("one", np.float64(1.0), ".2f")]:
        data, metadata = glue_bundle(name, value, fmt)
        outputs.append(nbformat.v4.new_output("display_data", data=data, metadata=metadata))
    cell = nbformat.v4.new_code_cell("", outputs=outputs)
    found = dict(glue_ext.extract_glue_data_cell(cell))
    assert cell.outputs == []  # hidden in the notebook itself
    assert format_plain_text(found["x"].data["text/plain"], ".2f") == "0.12"
    assert format_plain_text(found["pct"].data["text/plain"], "s") == "7.1%"
    assert format_plain_text(found["w"].data["text/plain"], "s") == "hi"
    # {glue:text}`one` (no spec) shows the value as formatted, trailing zeros kept
    assert format_plain_text(found["one"].data["text/plain"], "") == "1.00"
    assert format_plain_text(found["pct"].data["text/plain"], "") == "7.1%"


def test_glue_bundle_rich_values_and_errors():
    data, metadata = glue_bundle("t", pd.DataFrame({"a": [1]}))
    assert {GLUE_PREFIX + "text/html", GLUE_PREFIX + "text/plain"} <= set(data)
    assert metadata["scrapbook"] == {"name": "t", "mime_prefix": GLUE_PREFIX}
    with pytest.raises(ValueError, match="fmt"):
        glue_bundle("t", "text", fmt=".2f")
    with pytest.raises(ValueError, match="name"):
        glue_bundle("a/b", 1)


# ---------------------------------------------------------------- paper vs ours


def test_paper_vs_ours():
    paper = pd.DataFrame({"data": ["x", "x", "y"], "method": ["A", "B", "A"], "value": [1.0, 2.0, 3.0]})
    ci = pd.DataFrame({"data": ["x", "x", "x"], "method": ["A", "A", "B"], "value": [1.5, 2.5, 2.0]})
    full = pd.DataFrame({"data": ["x", "y"], "method": ["A", "A"], "value": [1.1, 2.5]})
    table = paper_vs_ours(paper, ci, on=["data", "method"], full=full, decimals=2)
    assert table.columns.tolist() == ["data", "method", "paper", "ours (ci)", "ours (full)", "difference"]
    assert table["ours (ci)"].tolist()[:2] == [2.0, 2.0] and np.isnan(table["ours (ci)"].iloc[2])
    assert table["difference"].tolist()[0] == 0.1 and table["difference"].tolist()[2] == -0.5
    assert np.isnan(table["difference"].iloc[1])
    no_full = paper_vs_ours(paper, ci, on=["data", "method"])
    assert "ours (full)" not in no_full and no_full["difference"].iloc[0] == 1.0
    # a full-profile notebook's live run is labelled as such (and compared with the paper)
    live_full = paper_vs_ours(paper, ci, on=["data", "method"], live="full")
    assert live_full.columns.tolist() == ["data", "method", "paper", "ours (full)", "difference"]
    assert live_full["difference"].iloc[0] == 1.0


def test_paper_vs_ours_checks_arguments():
    paper = pd.DataFrame({"m": ["A", "A"], "value": [1.0, 2.0]})
    with pytest.raises(ValueError, match="one row per key"):
        paper_vs_ours(paper, paper, on="m")
    with pytest.raises(ValueError, match="lacks column"):
        paper_vs_ours(paper.iloc[:1], paper, on="m", value="ece")
    with pytest.raises(ValueError, match="numeric"):
        paper_vs_ours(paper.iloc[:1], paper.assign(value=["a", "b"]), on="m")
    with pytest.raises(ValueError, match="decimals"):
        paper_vs_ours(paper.iloc[:1], paper, on="m", decimals=-1)
    with pytest.raises(ValueError, match="live must be"):
        paper_vs_ours(paper.iloc[:1], paper, on="m", live="paper")
    with pytest.raises(ValueError, match="full=None"):
        paper_vs_ours(paper.iloc[:1], paper, on="m", live="full", full=paper)


# ---------------------------------------------------------------- the runner, end to end

NOTEBOOK = textwrap.dedent(
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

    # A tiny notebook

    ```{code-cell} ipython3
    :tags: [parameters]
    profile = "ci"
    seed = 0
    ```

    ```{code-cell} ipython3
    import os
    import numpy as np
    import pandas as pd
    from calibtut.run import glue, save_table, settings, sweep

    s = settings(profile, ci={"n_seeds": 3}, full={"n_seeds": 4})
    stop_after = int(open("STOP").read()) if os.path.exists("STOP") else None
    calls = []

    def draw(seed):
        if stop_after is not None and len(calls) == stop_after:
            raise RuntimeError("interrupted on purpose")
        calls.append(seed)
        return {"value": float(np.random.default_rng(seed).normal())}

    table = sweep([{"seed": seed + k} for k in range(s.n_seeds)], draw)
    save_table(table, "draws")
    save_table(pd.DataFrame({"seed": calls}, dtype="int64"), "calls")
    glue("n_calls", len(calls))
    ```
    '''
)


@pytest.fixture
def book(tmp_path, monkeypatch, no_runner):
    (tmp_path / "_toc.yml").write_text("root: intro\n")
    folder = tmp_path / "notebooks" / "p9"
    folder.mkdir(parents=True)
    (folder / "01_tiny.md").write_text(NOTEBOOK)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_cli_end_to_end(book, capsys):
    notebook = "notebooks/p9/01_tiny.md"
    # interrupted full run: one task done, then a cell fails; exit status 1 names the cell
    (book / "notebooks" / "p9" / "STOP").write_text("1")
    assert main([notebook, "--profile", "full", "-p", "seed", "10", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "failed in code cell 2 of the source" in err and "RuntimeError: interrupted on purpose" in err
    runs = list((book / "_build" / "runs" / "p9" / "01_tiny").iterdir())
    assert len(runs) == 1 and runs[0].name.startswith("full-")
    assert read_provenance(runs[0])["status"] == "failed"

    # rerun without the stop: same run dir, only the 3 missing tasks are computed
    (book / "notebooks" / "p9" / "STOP").unlink()
    done = subprocess.run(
        [sys.executable, "-m", "calibtut.run", notebook, "--profile", "full", "-p", "seed", "10", "--publish"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    assert done.returncode == 0, done.stderr
    run = runs[0]
    assert f"run directory: {run}" in done.stdout
    calls = pd.read_csv(run / "calls.csv")["seed"].tolist()
    assert calls == [11, 12, 13]
    draws = pd.read_csv(run / "draws.csv")
    assert draws["seed"].tolist() == [10, 11, 12, 13]
    assert draws["value"].tolist() == [float(np.random.default_rng(s).normal()) for s in range(10, 14)]

    prov = read_provenance(run)
    assert prov["status"] == "completed" and prov["profile"] == "full"
    assert prov["parameters"] == {"profile": "full", "seed": 10}
    assert prov["notebook_path"] == notebook and (prov["part"], prov["notebook"]) == ("p9", "01_tiny")
    assert prov["tables"] == ["calls", "draws"]
    assert set(prov["packages"]) >= {"python", "numpy", "scipy", "pandas", "torch", "sklearn", "calibtut"}
    assert prov["machine"]["cpu_count"] >= 1 and "gpu" in prov["machine"]
    assert {"commit", "dirty", "started", "finished", "wall_time_s"} <= set(prov)
    assert prov["wall_time_s"] > 0
    # the resumed run says which tasks it computed and which came from the store, and where they ran
    (summary,) = prov["sweeps"].values()
    assert (summary["tasks"], summary["computed_now"], summary["from_store"]) == (4, 3, 1)
    assert summary["cpu"] == {cpu_label(): 4} and sum(summary["code"].values()) == 4
    assert summary["first_finished"] <= summary["last_finished"] and summary["task_seconds"] >= 0

    executed = nbformat.read(run / "01_tiny.ipynb", as_version=4)
    assert executed.metadata.papermill.input_path == str(book / notebook)
    tags = [c.metadata.get("tags", []) for c in executed.cells if c.cell_type == "code"]
    assert tags[:2] == [["parameters"], ["injected-parameters"]]
    glued = [o for o in executed.cells[-1].outputs if "scrapbook" in o.get("metadata", {})]
    assert glued[0].data == {GLUE_PREFIX + "text/plain": "3"}

    # published, and loadable back
    df, published = load_result("p9", "01_tiny", "draws")
    pd.testing.assert_frame_equal(df, draws)
    assert published == prov

    # a different parameter gets its own run dir; --fresh recomputes everything
    assert main([notebook, "-p", "seed", "0", "--no-progress"]) == 0
    assert main([notebook, "-p", "seed", "0", "--no-progress", "--fresh"]) == 0
    ci_runs = sorted((book / "_build" / "runs" / "p9" / "01_tiny").glob("ci-*"))
    assert len(ci_runs) == 1
    assert pd.read_csv(ci_runs[0] / "calls.csv")["seed"].tolist() == [0, 1, 2]
    assert not (book / "notebooks" / "p9" / "01_tiny.ipynb").exists()


def test_cli_rejects_bad_arguments(book, capsys):
    notebook = "notebooks/p9/01_tiny.md"
    assert main([notebook, "-p", "sed", "1"]) == 1
    assert "unknown parameter(s) ['sed']" in capsys.readouterr().err
    assert main([notebook, "--publish"]) == 2
    assert main([notebook, "-p", "profile", "full"]) == 2
    assert main(["notebooks/p9/missing.md"]) == 1
    assert "does not exist" in capsys.readouterr().err
    assert main([notebook, "--out", "notebooks/p9/run"]) == 1
    assert "inside notebooks/" in capsys.readouterr().err
    (book / "mine").mkdir()
    (book / "mine" / "keep.csv").write_text("a\n1\n")
    assert main([notebook, "--out", "mine", "--fresh"]) == 1
    assert "holds no calibtut run" in capsys.readouterr().err
    assert (book / "mine" / "keep.csv").is_file()
    with pytest.raises(SystemExit):
        main([notebook, "--profile", "paper"])
    with pytest.raises(SystemExit):
        main([notebook, "--resume", "--fresh"])


def test_runner_names_the_missing_extra(monkeypatch, book, capsys):
    monkeypatch.setitem(sys.modules, "papermill", None)  # as if calibtut[run] were not installed
    assert main(["notebooks/p9/01_tiny.md"]) == 1
    assert "pip install \"calibtut[run]\"" in capsys.readouterr().err


def test_git_state_ignores_what_the_runner_writes_under_results(tmp_path):
    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "results" / "part").mkdir(parents=True)
    (tmp_path / "sub").mkdir()
    (tmp_path / "code.py").write_text("a = 1\n")
    (tmp_path / "sub" / "more.py").write_text("b = 1\n")
    (tmp_path / "results" / "part" / "store.jsonl").write_text("{}\n")
    git("add", "-A")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init")
    assert git_state(tmp_path)["dirty"] is False
    # a growing store and a table about to be published leave the code clean
    (tmp_path / "results" / "part" / "store.jsonl").write_text("{}\n{}\n")
    (tmp_path / "results" / "part" / "table.csv").write_text("x\n")
    assert git_state(tmp_path)["dirty"] is False and git_state(tmp_path / "sub")["dirty"] is False
    # a change to code anywhere in the tree, seen from any folder of it, does not
    (tmp_path / "code.py").write_text("a = 2\n")
    assert git_state(tmp_path / "sub")["dirty"] is True
    (tmp_path / "code.py").write_text("a = 1\n")
    (tmp_path / "results.py").write_text("c = 1\n")
    assert git_state(tmp_path)["dirty"] is True


RESULTS = Path(__file__).resolve().parent.parent / "results"
STORES = sorted([*RESULTS.glob("*/*/sweeps/*.jsonl"), *RESULTS.glob("*/*/sweeps/*.jsonl.gz")])


def _stored_functions(store):
    return sorted({entry["fn"] for entry in SweepStore(store).entries(repair=False)})


def test_committed_results_are_compressed_when_large():
    """Every committed table or store over the limit is kept as ``.gz``, and no name has both forms."""
    files = [p for p in RESULTS.rglob("*") if p.is_file()]
    large = [p.relative_to(RESULTS) for p in files if not p.name.endswith(".gz") and p.stat().st_size > COMPRESS_ABOVE]
    assert large == []
    for packed in (p for p in files if p.name.endswith(".gz")):
        assert stored_path(packed.with_name(packed.name.removesuffix(".gz"))) == packed
        assert packed.read_bytes()[4:8] == b"\0\0\0\0"  # gzip time stamp 0: the bytes depend on the content only


def test_every_part_has_a_committed_store():
    assert {store.relative_to(RESULTS).parts[0] for store in STORES} >= {
        "drift", "quantile_regularization", "regression_study", "covariate_shift", "venn_admit"}


@pytest.mark.parametrize("store", STORES, ids=lambda p: str(p.relative_to(RESULTS)))
def test_every_stored_runner_still_imports(store):
    """The ``fn`` of every committed store line resolves in the current layout, so
    ``python -m calibtut.run.recheck`` can recompute it and a resumed sweep finds it."""
    for reference in _stored_functions(store):
        fn = resolve_function(reference)
        assert callable(fn), reference
        module, _, name = reference.partition(":")
        assert fn.__name__ == name and fn.__module__.startswith(module), (reference, fn.__module__)
        # a resumed or new run of the same runner records the same name
        assert function_reference(fn) == reference


# ---------------------------------------------------------------- compressed results


def _count_call(seed):
    """A task that leaves a trace of every call (the folder in CALIBTUT_TEST_CALLS)."""
    folder = Path(os.environ["CALIBTUT_TEST_CALLS"])
    (folder / f"{seed}-{len(list(folder.iterdir()))}").touch()
    return {"v": seed * seed, "text": "x" * 200}


@pytest.fixture
def calls(tmp_path, monkeypatch):
    folder = tmp_path / "calls"
    folder.mkdir()
    monkeypatch.setenv("CALIBTUT_TEST_CALLS", str(folder))
    return folder


def test_a_sweep_resumes_from_a_compressed_store(tmp_path, calls):
    plain = tmp_path / "sweeps" / "grid.jsonl"
    first = sweep([{"seed": s} for s in range(4)], _count_call, store=plain, progress=False)
    packed = plain.with_name("grid.jsonl.gz")
    packed.write_bytes(gzip_bytes(plain.read_bytes()))
    plain.unlink()
    # the folder (and the plain name) find the compressed store; only the two new tasks run
    whole = sweep([{"seed": s} for s in range(6)], _count_call, store=tmp_path / "sweeps", desc="grid",
                  progress=False)
    assert len(list(calls.iterdir())) == 6 and not plain.exists()
    assert whole["v"].tolist() == [s * s for s in range(6)] and whole.iloc[:4].equals(first)
    # a compressed store is compacted into one member at the end of the sweep: the same lines, the same bytes
    entries = SweepStore(plain).entries()
    assert len(entries) == 6
    lines = "".join(json.dumps(e, separators=(", ", ": ")) + "\n" for e in entries).encode()
    assert packed.read_bytes() == gzip_bytes(lines)
    assert sweep([{"seed": s} for s in range(6)], _count_call, store=plain, progress=False).equals(whole)
    assert len(list(calls.iterdir())) == 6


def test_a_large_plain_store_is_compressed_when_its_sweep_ends(tmp_path, calls):
    store = tmp_path / "big.jsonl"
    tasks = [{"seed": s} for s in range(COMPRESS_ABOVE // 300 + 10)]  # each line is over 300 bytes
    sweep(tasks[:5], _count_call, store=store, progress=False)
    assert store.is_file()  # small: stays plain
    rows = sweep(tasks, _count_call, store=store, progress=False)
    assert not store.exists() and (tmp_path / "big.jsonl.gz").is_file()
    assert len(SweepStore(store).load()[0]) == len(tasks) == len(rows)
    with gzip.open(tmp_path / "big.jsonl.gz", "rt") as handle:  # a standard gzip file
        assert len(handle.readlines()) == len(tasks)


def test_an_unfinished_gzip_member_is_cut_like_an_unfinished_line(tmp_path):
    store = SweepStore(tmp_path / "s.jsonl.gz")
    for k in range(3):
        store.append({"key": str(k), "status": "ok", "records": [{"v": k}]})
    whole = store.path.read_bytes()
    last = len(gzip_bytes((json.dumps({"key": "2", "status": "ok", "records": [{"v": 2}]},
                                      separators=(", ", ": ")) + "\n").encode()))
    for cut in range(len(whole) - last + 1, len(whole)):  # every way a crash can cut the last append
        store.path.write_bytes(whole[:cut])
        assert sorted(SweepStore(store.path).load(repair=False)[0]) == ["0", "1"]
        assert store.path.stat().st_size == cut  # read-only
        with pytest.warns(RuntimeWarning, match="unfinished last gzip member"):
            fresh = SweepStore(store.path)
            fresh.append({"key": "3", "status": "ok", "records": []})
        assert sorted(fresh.load()[0]) == ["0", "1", "3"]
    store.path.write_bytes(whole[:40] + b"garbage" + whole[47:])
    with pytest.raises(ValueError, match="damaged at byte 0"):
        SweepStore(store.path).load()


_WRITER = """
import sys
from calibtut.run.store import SweepStore
store = SweepStore(sys.argv[1])
for k in range(100000):
    store.append({"key": str(k), "status": "ok", "records": [{"v": k, "pad": "y" * (k % 5000)}]})
    print(k, flush=True)
"""


@pytest.mark.filterwarnings("ignore:.*unfinished last gzip member:RuntimeWarning")  # when killed mid-write
def test_a_killed_writer_leaves_a_readable_compressed_store(tmp_path):
    path = tmp_path / "killed.jsonl.gz"
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        written = [int(writer.stdout.readline()) for _ in range(40)]
        writer.kill()  # SIGKILL: no cleanup, possibly in the middle of a write
        writer.wait(timeout=30)
    finally:
        if writer.poll() is None:
            writer.kill()
    done, failed = SweepStore(path).load()
    keys = sorted(int(k) for k in done)
    assert failed == {} and keys == list(range(len(keys))) and keys[: len(written)] == written
    assert done["0"]["records"] == [{"v": 0, "pad": ""}]


def test_recheck_reads_a_compressed_store(tmp_path, calls, capsys):
    path = tmp_path / "grid.jsonl"
    sweep([{"seed": s} for s in range(5)], _count_call, store=path, progress=False)
    packed = tmp_path / "grid.jsonl.gz"
    packed.write_bytes(gzip_bytes(path.read_bytes()))
    path.unlink()
    assert recheck(packed, sample=3, progress=False)["match"].all()
    assert recheck_main([str(path), "--sample", "5"]) == 0  # the plain name finds the compressed store
    assert "5 of 5 recomputed tasks match the store exactly" in capsys.readouterr().out
    path.write_text("")
    with pytest.raises(ValueError, match="both .* and its compressed twin grid.jsonl.gz exist"):
        recheck(path)


def test_publish_compresses_large_tables_the_same_way_every_time(tmp_path, no_runner):
    (tmp_path / "_toc.yml").write_text("")
    run = _fake_run(tmp_path)
    big = pd.DataFrame({"method": ["None", "a"] * 10000, "value": np.arange(20000) / 7})
    big.to_csv(run / "runs.csv", index=False)
    assert (run / "runs.csv").stat().st_size > COMPRESS_ABOVE
    dest = publish(run)
    assert sorted(p.name for p in dest.iterdir()) == ["provenance.json", "runs.csv.gz", "scores.csv"]
    first = (dest / "runs.csv.gz").read_bytes()
    df, _ = load_result("p1", "02_demo", "runs", root=tmp_path)
    assert df["method"].tolist() == big["method"].tolist() and np.allclose(df["value"], big["value"])
    # republishing gives the same bytes; a table that shrank is stored plain again, the old file gone
    assert (publish(run) / "runs.csv.gz").read_bytes() == first
    big.iloc[:3].to_csv(run / "runs.csv", index=False)
    assert sorted(p.name for p in publish(run).iterdir()) == ["provenance.json", "runs.csv", "scores.csv"]
