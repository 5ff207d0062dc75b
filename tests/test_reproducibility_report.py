"""The reproducibility report (book/reproducibility.md) describes the chapters as they are.

``python3 tasks.py variants`` executes every chapter under every numerics
variant and records, per row, the sha256 of the chapter's source. These tests
fail when a chapter changed after its rows were written, when a chapter or a
variant has no row, when a row failed, or when the page no longer matches its
data: rerun the tool for the chapters named.
"""

from __future__ import annotations

import copy

import pytest

from tools import nbcache
from tools.variants import PAGE, VARIANTS, _rel, check_report, load_report, render_page, source_sha256

CHAPTERS = {_rel(p): p for p in nbcache.book_notebooks()}
REPORT = load_report()


@pytest.mark.parametrize("chapter", sorted(CHAPTERS))
def test_every_chapter_has_a_current_passing_row_for_every_variant(chapter):
    assert check_report({"chapters": {chapter: REPORT["chapters"].get(chapter, {})}},
                        {chapter: CHAPTERS[chapter]}) == []


def test_the_report_holds_no_chapter_that_is_gone():
    problems = check_report(REPORT, CHAPTERS)
    assert not [p for p in problems if "not in the book" in p], problems


def test_the_page_is_written_from_the_data():
    assert PAGE.read_text(encoding="utf8") == render_page(REPORT), \
        "book/reproducibility.md differs from book/_data/variants.json: python -m tools.variants --render"


def test_the_check_finds_a_changed_a_missing_and_a_failed_row(tmp_path):
    chapter = tmp_path / "01_demo.md"
    chapter.write_text("# A chapter\n")
    row = {"source_sha256": source_sha256(chapter), "status": "pass", "failed": []}
    report = {"chapters": {"demo": {v.name: dict(row) for v in VARIANTS}}}
    assert check_report(report, {"demo": chapter}) == []
    chapter.write_text("# A chapter, edited\n")
    (problem,) = check_report(report, {"demo": chapter})
    assert "demo changed after its rows" in problem and "--chapters demo" in problem
    chapter.write_text("# A chapter\n")
    broken = copy.deepcopy(report)
    del broken["chapters"]["demo"]["native"]
    broken["chapters"]["demo"]["seed+1"].update(status="fail", failed=["code cell 3: AssertionError: x"])
    problems = check_report(broken, {"demo": chapter})
    assert any("no row for ['native']" in p for p in problems)
    assert any("fails under {'seed+1': ['code cell 3: AssertionError: x']}" in p for p in problems)
    assert check_report(report, {}) == ["the report has rows for chapters that are not in the book: ['demo']"]
    # a variant that does not apply (no seed to shift on a page without parameters) is no failure
    report["chapters"]["demo"]["seed+1"].update(status="n/a", note="no parameters cell")
    assert check_report(report, {"demo": chapter}) == []
