"""calibtut.run.read_published: a chapter's full run as published, interim or absent."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import IPython.display

from calibtut.run import (
    NOT_PUBLISHED,
    PUBLICATION_STATUSES,
    Publication,
    glue_unpublished,
    read_published,
    read_published_with,
)
from calibtut.run.glue import GLUE_PREFIX
from calibtut.run.store import SweepStore


def _publish(root, table="runs", provenance=True):
    folder = root / "results" / "p0" / "01_demo"
    folder.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"seed": [0, 1], "ece": [0.1, 0.2]}).to_csv(folder / f"{table}.csv", index=False)
    if provenance:
        (folder / "provenance.json").write_text(json.dumps({"finished": "2026-12-01T10:00:00"}))
    return folder


def _store(root, n):
    store = SweepStore(root / "results" / "p0" / "01_demo" / "sweeps" / "grid.jsonl")
    for seed in range(n):
        store.append({"key": str(seed), "status": "ok", "task": {"seed": seed}, "records": [{"ece": 0.1 * seed}]})


def _says_no_path(publication, root):
    shown = publication.note + publication._repr_markdown_() + repr(publication)
    return str(root) not in shown and "/" not in shown and "results" not in shown


def test_a_published_table_is_read_with_its_provenance(tmp_path):
    _publish(tmp_path)
    _store(tmp_path, 3)  # a store beside a published table is not read
    full = read_published("p0", "01_demo", "runs", store="grid", root=tmp_path)
    assert full.status == "published" and full.found
    assert full.rows["ece"].tolist() == [0.1, 0.2] and full.provenance["finished"].startswith("2026-12-01")
    assert full.note == "The full run is published (finished 2026-12-01T10:00:00)."
    assert full._repr_markdown_() == "> The full run is **published** (finished 2026-12-01T10:00:00)."
    assert _says_no_path(full, tmp_path)


def test_without_a_table_the_store_so_far_is_an_interim_result(tmp_path):
    _store(tmp_path, 3)
    full = read_published("p0", "01_demo", "runs", store="grid", root=tmp_path)
    assert full.status == "interim" and full.provenance is None
    assert full.rows["seed"].tolist() == [0, 1, 2]
    assert "3 rows so far" in full.note and "interim" in full.note
    assert full._repr_markdown_().startswith("> The full run is **not yet published**: shown is the interim")
    assert _says_no_path(full, tmp_path)
    # without the store's name there is no interim
    assert read_published("p0", "01_demo", "runs", root=tmp_path).status == "absent"


@pytest.mark.parametrize("setup", ["nothing", "empty store", "unfinished run", "other table"])
def test_absent_says_so_in_one_message_with_no_path(tmp_path, setup):
    if setup == "empty store":
        (tmp_path / "results" / "p0" / "01_demo" / "sweeps").mkdir(parents=True)
        (tmp_path / "results" / "p0" / "01_demo" / "sweeps" / "grid.jsonl").write_text("")
    elif setup == "unfinished run":
        _publish(tmp_path, provenance=False)
    elif setup == "other table":
        _publish(tmp_path, table="other")
    full = read_published("p0", "01_demo", "runs", store="grid", root=tmp_path)
    assert full.status == "absent" and full.rows is None and not full.found
    assert full.note == "The full run is not yet published: the chapter shows its live run."
    assert full._repr_markdown_() == "> The full run is **not yet published**: the chapter shows its live run."
    assert _says_no_path(full, tmp_path)


def test_the_note_names_the_run(tmp_path):
    full = read_published("p0", "01_demo", "runs", what="the GPU run", root=tmp_path)
    assert full.note.startswith("The GPU run is not yet published")


def test_arguments_are_checked(tmp_path):
    with pytest.raises(TypeError, match="what"):
        read_published("p0", "01_demo", "runs", what="", root=tmp_path)
    with pytest.raises(ValueError, match="part"):
        read_published("../p0", "01_demo", "runs", root=tmp_path)
    with pytest.raises(ValueError, match="status"):
        Publication("maybe", None, None, "the full run")
    with pytest.raises(ValueError, match="rows must be None"):
        Publication("absent", pd.DataFrame(), None, "the full run")
    assert PUBLICATION_STATUSES == ("published", "interim", "absent")


def test_a_run_in_its_own_layout_is_published_or_absent_by_its_reader():
    def missing():
        raise FileNotFoundError("/somewhere/results/runs.csv")

    absent = read_published_with(missing, what="the GPU run")
    assert absent.status == "absent" and "/" not in absent.note
    found = read_published_with(lambda: {"frozen": pd.DataFrame({"a": [1]})}, what="the GPU run")
    assert found.status == "published" and found.rows["frozen"]["a"].tolist() == [1]
    assert found.note == "The GPU run is published."

    def broken():
        raise ValueError("a malformed file is an error, not an absence")

    with pytest.raises(ValueError, match="malformed"):
        read_published_with(broken)
    with pytest.raises(TypeError, match="reader"):
        read_published_with("runs.csv")


def test_glue_unpublished_glues_the_one_placeholder_under_each_name(monkeypatch):
    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda data, raw, metadata: shown.append((data, metadata)))
    glue_unpublished(("acc", "share"), prefix="full_")
    assert [meta["scrapbook"]["name"] for _, meta in shown] == ["full_acc", "full_share"]
    assert {data[GLUE_PREFIX + "text/plain"] for data, _ in shown} == {repr(NOT_PUBLISHED)}
    # the absent note and the placeholder say the same words
    assert NOT_PUBLISHED.strip("()") in Publication("absent", None, None, "the run").note
    shown.clear()
    glue_unpublished(["pr_full_rarest"])
    assert shown[0][1]["scrapbook"]["name"] == "pr_full_rarest"


@pytest.mark.parametrize(
    "names, prefix, error",
    [("acc", "", TypeError), ([], "", ValueError), (["a", 1], "", TypeError), (["a/b"], "", ValueError),
     (["acc"], 3, TypeError)],
)
def test_glue_unpublished_checks_its_arguments_before_gluing(monkeypatch, names, prefix, error):
    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda *a, **k: shown.append(a))
    with pytest.raises(error):
        glue_unpublished(names, prefix=prefix)
    assert shown == []
