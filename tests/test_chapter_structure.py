"""Every chapter of the book has learning goals, a summary and exercises with solutions.

Read from the MyST sources of the chapters that ``_toc.yml`` lists: an admonition
titled "Learning goals", a section "## What we learned", and at least three
sphinx-exercise ``exercise`` directives, each with a ``solution`` (or a gated
``solution-start`` ... ``solution-end``) that names its label.
"""

from __future__ import annotations

import re

import pytest

from tools.course_guide import EXERCISE, ROOT, toc_parts

MIN_EXERCISES = 3

GOALS = re.compile(r"^```\{admonition\} Learning goals\s*$", re.MULTILINE)
SUMMARY = re.compile(r"^## What we learned\s*$", re.MULTILINE)
SOLUTION = re.compile(r"^```\{solution(?:-start)?\} (\S+)\s*$", re.MULTILINE)
GATE_START = re.compile(r"^```\{solution-start\}", re.MULTILINE)
GATE_END = re.compile(r"^```\{solution-end\}", re.MULTILINE)


def problems(text: str) -> list[str]:
    """What a chapter's MyST source lacks; empty when it complies."""
    found = []
    if not GOALS.search(text):
        found.append("no 'Learning goals' admonition")
    if not SUMMARY.search(text):
        found.append("no '## What we learned' section")
    exercises = [label for _, label in EXERCISE.findall(text)]
    if len(exercises) < MIN_EXERCISES:
        found.append(f"{len(exercises)} exercises, at least {MIN_EXERCISES} needed")
    solved = set(SOLUTION.findall(text))
    found += [f"exercise {label} has no solution" for label in exercises if label not in solved]
    if len(GATE_START.findall(text)) != len(GATE_END.findall(text)):
        found.append("unbalanced solution-start / solution-end")
    return found


CHAPTERS = [chapter for _, chapters in toc_parts() for chapter in chapters]


def test_toc_lists_chapters():
    assert CHAPTERS, "_toc.yml lists no chapter under notebooks/"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_structure(chapter):
    text = (ROOT / f"{chapter}.md").read_text(encoding="utf8")
    assert not problems(text), f"{chapter}.md: {problems(text)}"


def test_problems_are_found():
    """The check fails on a chapter that lacks each element in turn."""
    exercise = "```{exercise} Title\n:label: ex-%d\n\nText.\n```\n\n"
    solution = "```{solution} ex-%d\n:class: dropdown\n\nAnswer.\n```\n\n"
    good = (
        "# Chapter\n\n```{admonition} Learning goals\n:class: tip\n\n* one\n```\n\n"
        "## What we learned\n\nThings.\n\n## Exercises\n\n"
        + "".join(exercise % i + solution % i for i in range(3))
    )
    assert problems(good) == []
    assert problems(good.replace("Learning goals", "Goals")) == ["no 'Learning goals' admonition"]
    assert problems(good.replace("## What we learned", "## Summary")) == ["no '## What we learned' section"]
    assert problems(good.replace(solution % 2, "")) == ["exercise ex-2 has no solution"]
    assert problems(good.replace(exercise % 2 + solution % 2, "")) == ["2 exercises, at least 3 needed"]
    gated = good.replace(solution % 1, "```{solution-start} ex-1\n:class: dropdown\n```\n\n")
    assert problems(gated) == ["unbalanced solution-start / solution-end"]
    assert problems(gated + "```{solution-end}\n```\n") == []
