"""The course guide's data file and what is drawn from it (tools/course_guide.py)."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta
from types import SimpleNamespace

import pytest
import yaml

from tools import course_guide as cg

# --------------------------------------------------------------------------- the book's own data


@pytest.fixture(scope="module")
def guide():
    return cg.load_guide()


def test_the_data_file_names_exactly_the_chapters_of_the_toc_in_reading_order(guide):
    toc = [chapter for _, chapters in cg.toc_parts() for chapter in chapters]
    assert list(guide["chapters"]) == toc
    assert len(toc) > 30


def test_the_prerequisites_form_no_cycle_and_point_backwards(guide):
    order = {c: i for i, (_, cs) in enumerate(cg.toc_parts()) for c in cs}
    for chapter, entry in guide["chapters"].items():
        assert all(order[need] <= order[chapter] for need in entry["needs"]), chapter


def test_the_workshop_lasts_about_six_hours(guide):
    minutes = 0
    for step in guide["workshop"]:
        start, end = (datetime.strptime(t, "%H:%M") for t in step["slot"].split("-"))
        minutes += (end - start) / timedelta(minutes=1)
    assert 5.5 * 60 <= minutes <= 6.5 * 60


def test_the_syllabus_has_twelve_weeks_each_graded(guide):
    assert [week["week"] for week in guide["syllabus"]] == list(range(1, 13))
    assert all(week.get("graded") for week in guide["syllabus"]), "a week without graded exercises"


# --------------------------------------------------------------------------- the checks refuse bad data


EXERCISE_SOURCE = """\
# A chapter

```{exercise} A derivation
:label: a-ex-one

Text.
```

:::{exercise-start} A computation
:class: dropdown
:label: a-ex-two
:::
"""


@pytest.fixture
def small(tmp_path):
    """A three-chapter book: parts, data and chapter sources under tmp_path."""
    (tmp_path / "notebooks" / "base").mkdir(parents=True)
    (tmp_path / "notebooks" / "paper_one").mkdir(parents=True)
    for chapter in ("base/01_a", "base/02_b", "paper_one/01_c"):
        (tmp_path / "notebooks" / f"{chapter}.md").write_text(EXERCISE_SOURCE.replace("a-ex", chapter[-1] + "-ex"))
    parts = [
        ("Base", ["notebooks/base/01_a", "notebooks/base/02_b"]),
        ("Paper one (paper 1)", ["notebooks/paper_one/01_c"]),
    ]
    data = {
        "chapters": {
            "notebooks/base/01_a": {"short": "A", "needs": []},
            "notebooks/base/02_b": {"short": "B", "needs": ["notebooks/base/01_a"]},
            "notebooks/paper_one/01_c": {"short": "C", "needs": ["notebooks/base/01_a"]},
        },
        "workshop": [
            {"chapter": "notebooks/base/01_a", "slot": "09:00-10:00", "exercises": ["a-ex-one"]},
            {"chapter": "notebooks/paper_one/01_c", "slot": "10:00-11:00", "exercises": ["c-ex-two"]},
        ],
        "syllabus": [
            {"week": 1, "chapters": ["notebooks/base/01_a", "notebooks/base/02_b"], "outcome": "o",
             "graded": ["b-ex-one"]},
            {"week": 2, "chapters": ["notebooks/paper_one/01_c"], "outcome": "o", "graded": []},
        ],
    }
    return SimpleNamespace(root=tmp_path, parts=parts, data=data)


def test_the_small_book_passes(small):
    assert cg.check_guide(small.data, small.parts, root=small.root) is small.data


def test_exercises_reads_labels_and_titles_of_both_fences(small):
    found = cg.exercises("notebooks/base/01_a", root=small.root)
    assert found == {"a-ex-one": "A derivation", "a-ex-two": "A computation"}


def _broken(small, edit):
    data = copy.deepcopy(small.data)
    edit(data)
    return data


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["chapters"].pop("notebooks/base/02_b"), "missing"),
        (lambda d: d["chapters"].update({"notebooks/base/03_z": {"short": "Z", "needs": []}}), "not in _toc.yml"),
        (lambda d: d.update(chapters=dict(reversed(d["chapters"].items()))), "reading order"),
        (lambda d: d["chapters"]["notebooks/base/01_a"].update(needs=["notebooks/base/02_b"]), "cycle"),
        (lambda d: d["chapters"]["notebooks/base/01_a"].update(needs=["notebooks/base/01_a"]), "cycle"),
        (lambda d: d["chapters"]["notebooks/base/02_b"].update(needs=["notebooks/nowhere/01_x"]), "not a chapter"),
        (lambda d: d["workshop"].reverse(), "comes before"),
        (lambda d: d["workshop"][0].update(exercises=["a-ex-three"]), "no exercise labelled a-ex-three"),
        (lambda d: d["workshop"][0].update(exercises=["b-ex-one"]), "no exercise labelled b-ex-one"),
        (lambda d: d["syllabus"].reverse(), "comes before"),
        (lambda d: d["syllabus"][1]["chapters"].append("notebooks/base/01_a"), "already taught"),
        (lambda d: d["syllabus"][1]["chapters"].clear(), "leaves out"),
        (lambda d: d["syllabus"][1].update(graded=["a-ex-one"]), "no exercise labelled a-ex-one"),
    ],
)
def test_bad_data_is_refused_with_a_message_naming_the_problem(small, edit, message):
    with pytest.raises(ValueError, match=message):
        cg.check_guide(_broken(small, edit), small.parts, root=small.root)


def test_a_later_prerequisite_without_a_cycle_is_refused(small):
    data = _broken(small, lambda d: d["chapters"]["notebooks/base/02_b"].update(needs=["notebooks/paper_one/01_c"]))
    with pytest.raises(ValueError, match="reading order puts after it"):
        cg.check_guide(data, small.parts, root=small.root)


def test_load_guide_reads_a_toc_and_a_data_file(small):
    toc = small.root / "_toc.yml"
    toc.write_text(yaml.safe_dump({"parts": [
        {"caption": caption, "chapters": [{"file": c} for c in chapters]} for caption, chapters in small.parts
    ] + [{"caption": "Reference", "chapters": [{"file": "book/api"}]},
         {"caption": cg.APPENDICES, "chapters": [{"file": "notebooks/appendix/costs"}]}]}))
    data = small.root / "guide.yml"
    data.write_text(yaml.safe_dump(small.data, sort_keys=False))
    assert cg.toc_parts(toc) == small.parts
    assert cg.load_guide(data, toc) == small.data


# --------------------------------------------------------------------------- figure and timings


def test_the_figure_draws_an_arrow_per_need_within_a_part_and_codes_the_others(small):
    fig = cg.dependency_figure(small.data, small.parts)
    texts = [t for t in fig.axes[0].texts if not hasattr(t, "arrow_patch")]
    arrows = [t for t in fig.axes[0].texts if getattr(t, "arrow_patch", None) is not None]
    assert len(arrows) == 1  # B needs A, in the same part
    labels = [t.get_text() for t in texts]
    assert "1. C +B1" in labels  # C needs A, chapter 1 of part "base" (code B)
    assert any(label.startswith("Paper one (PO)") for label in labels)


def test_part_code_is_the_initials_of_the_folder():
    assert cg.part_code("notebooks/covariate_shift/01_x") == "CS"
    assert cg.part_code("notebooks/drift/01_x") == "D"


NOTEBOOK = """\
---
jupytext:
  text_representation:
    format_name: myst
kernelspec:
  name: python3
  display_name: Python 3
---
# T

```{code-cell} ipython3
x = %s
```
"""


class FakeCache:
    """The two methods of a jupyter-cache that chapter_timings uses."""

    def __init__(self, records, current):
        self.records, self.current = records, current

    def list_cache_records(self):
        return self.records

    def match_cache_notebook(self, nb):
        source = next(cell.source for cell in nb.cells if cell.cell_type == "code")
        if source not in self.current:
            raise KeyError(source)
        return self.current[source]


def test_chapter_timings_prefers_the_current_version_then_flags_an_older_one(tmp_path):
    (tmp_path / "notebooks" / "p").mkdir(parents=True)
    for name, value in (("now", 1), ("old", 2), ("never", 3)):
        (tmp_path / "notebooks" / "p" / f"{name}.md").write_text(NOTEBOOK % value)
    t0 = datetime(2026, 1, 1)

    def record(name, days, **data):
        return SimpleNamespace(uri=str(tmp_path / "notebooks" / "p" / f"{name}.md"), created=t0 + timedelta(days=days),
                               data=data)

    current = record("now", 0, cpu_seconds=4.0, execution_seconds=5.0)
    records = [current, record("old", 0, execution_seconds=9.0), record("old", 1, execution_seconds=7.0)]
    found = cg.chapter_timings(
        ["notebooks/p/now", "notebooks/p/old", "notebooks/p/never"],
        cache=FakeCache(records, {"x = 1": current}), root=tmp_path,
    )
    assert found["notebooks/p/now"] == cg.Timing(4.0, 5.0, True)
    assert found["notebooks/p/old"] == cg.Timing(None, 7.0, False)  # the latest record of the file
    assert found["notebooks/p/never"] is None
    assert found["notebooks/p/now"].held_s == 4.0 and found["notebooks/p/old"].held_s == 7.0


def test_an_exercise_link_keeps_the_math_of_its_title():
    titles = {"ex-units": "Does the rule depend on the units of $y$? [derivation]"}
    link = cg._exercise_ref("ex-units", titles)
    assert link == r"[Does the rule depend on the units of $y$? \[derivation\]](#ex-units)"
    assert cg._exercise_ref("ex-none", {}) == "[ex-none](#ex-none)"
