"""The course guide's data, its checks, and the Sphinx directives that draw it.

``book/_data/course_guide.yml`` holds what only an author can say: which
chapter needs which, the one-day workshop path and the twelve-week syllabus.
Everything else on ``book/course-guide.md`` is read at build time, so that the
page stays true when the book changes:

* the chapters and their parts come from ``_toc.yml``, and the data file must
  name exactly those chapters (:func:`load_guide` refuses it otherwise, and
  refuses a cycle, a prerequisite that comes later in the reading order, a
  workshop or syllabus that teaches a chapter before what it needs, and an
  exercise label that is not an exercise of the chapter named);
* the dependency figure is drawn from the data file at every build
  (:func:`dependency_figure`);
* each chapter's running time is the one the execution cache recorded for the
  current version of the chapter (:func:`chapter_timings`): the kernel's CPU
  seconds of the test command's nbval run (``tools/pytest_nbcache.py``) or of
  the book command's execution step (``tools/nbcache.py``), or the wall
  seconds of the build's own execution.

Loaded by the book as the Sphinx extension ``tools.course_guide``; it adds the
directives ``chapter-dependency-figure``, ``chapter-timings`` and
``course-plan`` (``workshop`` or ``syllabus``).
"""

from __future__ import annotations

import graphlib
import os
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import yaml
from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from matplotlib.figure import Figure
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective

from tools import nbcache

ROOT = nbcache.ROOT
DATA = ROOT / "book" / "_data" / "course_guide.yml"
#: The budget every chapter is held to at the ``ci`` profile (kernel CPU seconds).
BUDGET_S = 60.0
FIGURE_NAME = "chapter_dependencies.svg"
EXERCISE = re.compile(
    r"^(?:`{3,}|:{3,})\{exercise(?:-start)?\}[ \t]*([^\n]*)\n(?::[^\n]*\n)*?:label:\s*(\S+)", re.MULTILINE
)


# --------------------------------------------------------------------------- data


#: The caption of the part of ``_toc.yml`` that holds the appendices. A notebook there
#: (``notebooks/appendix/``) is executed, tested and held to the time budget like a
#: chapter, but is no chapter: it has no learning goals, exercises or place in the course.
APPENDICES = "Appendices"


def toc_parts(toc: Path = nbcache.TOC) -> list[tuple[str, list[str]]]:
    """The parts of ``_toc.yml`` that hold chapters under ``notebooks/``: ``[(caption, [chapter, ...])]``.

    A chapter is named as in ``_toc.yml``: ``notebooks/<part>/<file>``, no suffix.
    The part captioned :data:`APPENDICES` holds no chapters.
    """
    parts = []
    for part in yaml.safe_load(toc.read_text(encoding="utf8")).get("parts", []):
        if part.get("caption") == APPENDICES:
            continue
        chapters = [
            entry["file"].removesuffix(".md")
            for entry in part.get("chapters", [])
            if str(entry.get("file", "")).startswith("notebooks/")
        ]
        if chapters:
            parts.append((part["caption"], chapters))
    return parts


def exercises(chapter: str, root: Path = ROOT) -> dict[str, str]:
    """The ``exercise`` directives of a chapter's MyST source: ``{label: title}``."""
    text = (root / f"{chapter}.md").read_text(encoding="utf8")
    return {label: title.strip() for title, label in EXERCISE.findall(text)}


def _check_known(names, known, where: str) -> None:
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(f"{where}: not a chapter of _toc.yml: {', '.join(unknown)}")


def _check_labels(labels, chapters, where: str, root: Path) -> None:
    offered = {label for chapter in chapters for label in exercises(chapter, root)}
    missing = [label for label in labels if label not in offered]
    if missing:
        raise ValueError(f"{where}: no exercise labelled {', '.join(missing)} in {', '.join(chapters)}")


def check_guide(guide: dict, parts: list[tuple[str, list[str]]], root: Path = ROOT) -> dict:
    """Check the course-guide data against the table of contents; returns ``guide``.

    Raises
    ------
    ValueError
        When the data name other chapters than ``parts``, or out of reading
        order; when the prerequisites form a cycle or one comes after its
        chapter; when the workshop or the syllabus teaches a chapter before a
        chapter it needs (or the syllabus leaves one out, or has one twice);
        when an exercise label is not an exercise of the chapters it is given for.
    """
    order = [chapter for _, chapters in parts for chapter in chapters]
    position = {chapter: index for index, chapter in enumerate(order)}
    chapters = guide.get("chapters") or {}
    missing = [c for c in order if c not in chapters]
    extra = [c for c in chapters if c not in position]
    if missing or extra:
        raise ValueError(
            "the chapters of book/_data/course_guide.yml differ from _toc.yml: "
            f"missing {missing or 'none'}, not in _toc.yml {extra or 'none'}"
        )
    if list(chapters) != order:
        raise ValueError("book/_data/course_guide.yml must list the chapters in the reading order of _toc.yml")
    needs = {chapter: list(entry.get("needs") or []) for chapter, entry in chapters.items()}
    for chapter, required in needs.items():
        _check_known(required, position, f"needs of {chapter}")
    try:
        tuple(graphlib.TopologicalSorter(needs).static_order())
    except graphlib.CycleError as error:
        raise ValueError(f"the chapter prerequisites form a cycle: {' -> '.join(error.args[1])}") from None
    for chapter, required in needs.items():
        late = [r for r in required if position[r] >= position[chapter]]
        if late:
            raise ValueError(f"{chapter} needs {', '.join(late)}, which the reading order puts after it")

    seen: set[str] = set()
    for step in guide.get("workshop") or []:
        chapter = step["chapter"]
        _check_known([chapter], position, "workshop")
        absent = [r for r in needs[chapter] if r not in seen]
        if absent:
            raise ValueError(f"workshop: {chapter} comes before {', '.join(absent)}, which it needs")
        _check_labels(step.get("exercises") or [], [chapter], f"workshop, {chapter}", root)
        seen.add(chapter)

    taught: dict[str, int] = {}
    for week in guide.get("syllabus") or []:
        studied = list(week.get("chapters") or []) + list(week.get("reading") or [])
        _check_known(studied, position, f"syllabus week {week['week']}")
        twice = [c for c in studied if c in taught]
        if twice:
            raise ValueError(f"syllabus week {week['week']}: already taught in an earlier week: {', '.join(twice)}")
        taught.update({c: week["week"] for c in studied})
        for chapter in studied:
            absent = [r for r in needs[chapter] if r not in taught]
            if absent:
                raise ValueError(
                    f"syllabus week {week['week']}: {chapter} comes before {', '.join(absent)}, which it needs"
                )
        _check_labels(week.get("graded") or [], week.get("chapters") or [], f"syllabus week {week['week']}", root)
    if guide.get("syllabus"):
        left_out = [c for c in order if c not in taught]
        if left_out:
            raise ValueError(f"the syllabus leaves out {', '.join(left_out)}")
    return guide


def load_guide(path: Path = DATA, toc: Path = nbcache.TOC) -> dict:
    """Read and check ``book/_data/course_guide.yml`` (see :func:`check_guide`)."""
    guide = yaml.safe_load(Path(path).read_text(encoding="utf8")) or {}
    return check_guide(guide, toc_parts(toc), root=Path(toc).parent)


# --------------------------------------------------------------------------- timings


@dataclass(frozen=True)
class Timing:
    """The execution time the cache recorded for one chapter.

    ``cpu_s`` is the kernel's CPU time (recorded by both commands), ``wall_s``
    the wall time; either may be None. ``current`` is False when the record is
    of an earlier version of the chapter (no execution of this version yet).
    """

    cpu_s: float | None
    wall_s: float | None
    current: bool

    @property
    def held_s(self) -> float | None:
        """The time held to the budget: CPU seconds when recorded, else wall seconds."""
        return self.cpu_s if self.cpu_s is not None else self.wall_s


def chapter_timings(chapters: list[str], cache=None, root: Path = ROOT) -> dict[str, Timing | None]:
    """Running time of each chapter from the book's execution cache.

    The record of the chapter's current source when there is one; else the
    latest record of the same file, marked ``current=False``; else None.
    """
    cache = nbcache.get_cache() if cache is None else cache
    records = cache.list_cache_records()
    found: dict[str, Timing | None] = {}
    for chapter in chapters:
        path = root / f"{chapter}.md"
        try:
            record, current = cache.match_cache_notebook(nbcache.read_source(path)), True
        except KeyError:
            same_file = [r for r in records if Path(r.uri).resolve() == path.resolve()]
            record = max(same_file, key=lambda r: r.created) if same_file else None
            current = False
        if record is None:
            found[chapter] = None
            continue
        data = record.data or {}
        found[chapter] = Timing(data.get("cpu_seconds"), data.get("execution_seconds"), current)
    return found


# --------------------------------------------------------------------------- figure


def _wrap(text: str, width: int) -> str:
    return "\n".join(textwrap.wrap(text, width))


def part_code(chapter: str) -> str:
    """The short code of a chapter's part: the initials of its folder (``covariate_shift`` -> ``CS``)."""
    folder = chapter.split("/")[1]
    words = folder.split("_")
    return folder[0].upper() if len(words) == 1 else "".join(word[0].upper() for word in words)


#: Parts side by side in one band of the dependency figure.
PARTS_PER_BAND = 3
#: Distance from a column's centre to its first bracket (a column is 1), beyond the widest box.
BRACKET_OFFSET = 0.46
ARROW_COLOUR = "#555555"


def layout(parts: list[tuple[str, list[str]]]) -> tuple[dict[str, tuple[float, float]], list[tuple[float, float]]]:
    """Positions in the dependency figure: ``({chapter: (x, y)}, [title position of each part])``.

    Parts are columns, :data:`PARTS_PER_BAND` to a band, bands from top to
    bottom; a part's chapters go down its column in reading order, one unit apart.
    """
    pos, titles, top = {}, [], 0.0
    for first in range(0, len(parts), PARTS_PER_BAND):
        band = parts[first:first + PARTS_PER_BAND]
        for column, (_, chapters) in enumerate(band):
            titles.append((float(column), top))
            pos.update({chapter: (float(column), top - 1.0 - row) for row, chapter in enumerate(chapters)})
        top -= 1.0 + max(len(chapters) for _, chapters in band) + 0.2
    return pos, titles


def dependency_figure(guide: dict, parts: list[tuple[str, list[str]]]) -> Figure:
    """The chapter dependency graph, one column per part, chapters in reading order.

    An arrow joins a chapter to one of the same part that needs it; a need
    from another part is written in the box (``+F3``: chapter 3 of the part
    coded F, the codes being given in the column titles).
    """
    number = {c: (part_code(c), i) for _, chapters in parts for i, c in enumerate(chapters, start=1)}
    pos, titles = layout(parts)
    bottom = min(y for _, y in pos.values()) - 0.5
    fig = Figure(figsize=(2.3 * (PARTS_PER_BAND + 0.2), 0.58 * (0.5 - bottom)))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(-0.5, PARTS_PER_BAND - 0.5 + 0.2)
    ax.set_ylim(bottom, 0.5)
    ax.axis("off")
    boxes = {}
    for (caption, chapters), (x, y) in zip(parts, titles):
        title = re.sub(r"\s*\(paper \d+\)", "", caption)
        ax.text(x, y, _wrap(f"{title} ({part_code(chapters[0])})", 24), ha="center", va="center",
                fontsize=9, fontweight="bold")
        for chapter in chapters:
            code, index = number[chapter]
            outside = [f"+{number[n][0]}{number[n][1]}" for n in guide["chapters"][chapter].get("needs") or []
                       if number[n][0] != code]
            label = _wrap(" ".join([f"{index}. {guide['chapters'][chapter]['short']}", *outside]), 22)
            boxes[chapter] = ax.text(
                *pos[chapter], label, ha="center", va="center", fontsize=8.5,
                bbox={"boxstyle": "round,pad=0.35", "facecolor": "#eef3fa", "edgecolor": "#4a6fa5"},
            )
    lanes: dict[str, int] = {}
    for chapter, entry in guide["chapters"].items():
        for need in entry.get("needs") or []:
            if number[need][0] != number[chapter][0]:
                continue
            (x, y0), (_, y1) = pos[need], pos[chapter]
            start = (x, y0)
            if round(y0 - y1) > 1:
                # a farther chapter: a bracket on the right of the column, beyond
                # the widest box, each bracket of a column in a lane of its own
                code = number[chapter][0]
                lane = lanes[code] = lanes.get(code, -1) + 1
                right = x + BRACKET_OFFSET + 0.05 * lane
                ax.plot([x, right, right], [y0, y0, y1], color=ARROW_COLOUR, lw=0.9, zorder=1)
                start = (right, y1)
            ax.annotate(
                "", xy=(x, y1), xytext=start,
                arrowprops={
                    "arrowstyle": "-|>", "color": ARROW_COLOUR, "lw": 0.9, "shrinkA": 0, "shrinkB": 2,
                    "patchA": boxes[need].get_bbox_patch() if start == (x, y0) else None,
                    "patchB": boxes[chapter].get_bbox_patch(),
                },
            )
    return fig


# --------------------------------------------------------------------------- Sphinx


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def _doc(chapter: str) -> str:
    return f"{{doc}}`/{chapter}`"


class _GuideDirective(SphinxDirective):
    """Shared by the course guide's directives: the checked data, noted as dependencies of the page."""

    def guide(self) -> tuple[dict, list[tuple[str, list[str]]]]:
        srcdir = Path(self.env.srcdir)
        toc = srcdir / "_toc.yml"
        data = srcdir / DATA.relative_to(ROOT)
        parts = toc_parts(toc)
        for path in (toc, data, *(srcdir / f"{c}.md" for _, cs in parts for c in cs)):
            self.env.note_dependency(str(path))
        try:
            return check_guide(yaml.safe_load(data.read_text(encoding="utf8")), parts, root=srcdir), parts
        except ValueError as error:
            raise ExtensionError(f"{data}: {error}") from None

    def markdown(self, lines: list[str]) -> list[nodes.Node]:
        container = nodes.container()
        self.state.nested_parse(StringList(lines), self.content_offset, container)
        return container.children

    def timings(self, chapters: list[str]) -> dict[str, Timing | None]:
        database = nbcache.cache_path() / "global.db"
        if database.exists():
            self.env.note_dependency(str(database))
        return chapter_timings(chapters, root=Path(self.env.srcdir))


class DependencyFigure(_GuideDirective):
    """``chapter-dependency-figure``: the dependency graph, drawn at build time from the data file."""

    option_spec: ClassVar[dict] = {"alt": directives.unchanged}

    def run(self):
        guide, parts = self.guide()
        folder = Path(self.env.app.doctreedir).parent / "course_guide"
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / FIGURE_NAME
        figure = dependency_figure(guide, parts)
        figure.savefig(target, metadata={"Date": None})
        uri = "/" + Path(os.path.relpath(target, self.env.srcdir)).as_posix()
        alt = self.options.get("alt", "The chapters of the book, with an arrow from each to the chapters that need it.")
        image = nodes.image(uri=uri, alt=alt, candidates={"*": uri})
        return [nodes.figure("", image, classes=["chapter-dependencies"])]


class ChapterTimings(_GuideDirective):
    """``chapter-timings``: every chapter's recorded running time at the ``ci`` profile."""

    def run(self):
        _, parts = self.guide()
        timings = self.timings([c for _, cs in parts for c in cs])
        lines = ["| | chapter | kernel CPU s | wall s |", "|---|---|--:|--:|"]
        for _, chapters in parts:
            for index, chapter in enumerate(chapters, start=1):
                timing = timings[chapter]
                if timing is None:
                    lines.append(f"| {part_code(chapter)}{index} | {_doc(chapter)} | not executed | |")
                    continue
                mark = "" if timing.current else " *"
                lines.append(
                    f"| {part_code(chapter)}{index} | {_doc(chapter)} | {_seconds(timing.cpu_s)}{mark} "
                    f"| {_seconds(timing.wall_s)}{mark} |"
                )
        held = [t.held_s for t in timings.values() if t is not None and t.held_s is not None]
        summary = (
            f"Recorded for {len(held)} of {len(timings)} chapters on the machine that built this page "
            f"({os.cpu_count()} CPU cores): {sum(held) / 60:.0f} minutes in all, the longest "
            f"{max(held, default=0):.0f} s, {sum(h > BUDGET_S for h in held)} over the {BUDGET_S:.0f}-second "
            "budget. A dash in the CPU column marks a time taken by the book build's own execution, "
            "which records wall time only."
        )
        if any(t is not None and not t.current for t in timings.values()):
            summary += " `*`: the time of an earlier version of the chapter (this version was not executed yet)."
        return self.markdown(lines + ["", summary])


def _exercise_ref(label: str, titles: dict[str, str]) -> str:
    r"""A MyST link to an exercise, its title as the text: ``$...$`` in it stays math.

    A ``{ref}`` role would print the title as plain text; the link's text is
    parsed as Markdown, so a title's math is typeset (the target is found
    among the book's labels, as ``{ref}`` finds it).

    Examples
    --------
    >>> print(_exercise_ref("ex-units", {"ex-units": "The units of $y$ [derivation]"}))
    [The units of $y$ \[derivation\]](#ex-units)
    """
    title = re.sub(r"([\[\]])", r"\\\1", titles.get(label, label))
    return f"[{title}](#{label})"


class CoursePlan(_GuideDirective):
    """``course-plan``: the data file's ``workshop`` path (a table) or ``syllabus`` (a list of weeks)."""

    required_arguments = 1

    def run(self):
        guide, parts = self.guide()
        srcdir = Path(self.env.srcdir)
        titles = {label: title for _, cs in parts for c in cs for label, title in exercises(c, srcdir).items()}
        which = self.arguments[0]
        if which == "workshop":
            steps = guide.get("workshop") or []
            timings = self.timings([step["chapter"] for step in steps])
            lines = ["| time | chapter | run time at `ci` (s) | exercises in class |", "|---|---|--:|---|"]
            for step in steps:
                timing = timings[step["chapter"]]
                held = _seconds(None if timing is None else timing.held_s)
                labels = "; ".join(_exercise_ref(label, titles) for label in step.get("exercises") or [])
                lines.append(f"| {step['slot']} | {_doc(step['chapter'])} | {held} | {labels} |")
            return self.markdown(lines)
        if which == "syllabus":
            lines = []
            for week in guide.get("syllabus") or []:
                studied = "; ".join(_doc(c) for c in week["chapters"])
                if week.get("reading"):
                    studied += "; reading: " + "; ".join(_doc(c) for c in week["reading"])
                graded = "; ".join(_exercise_ref(label, titles) for label in week.get("graded") or [])
                lines += [
                    f"- **Week {week['week']}.** {studied}.",
                    f"  - *Learning outcome:* {' '.join(week['outcome'].split())}",
                    f"  - *Graded:* {graded or 'any exercise of these chapters'}.",
                ]
            return self.markdown(lines)
        raise self.error(f"course-plan: the argument is 'workshop' or 'syllabus', not {which!r}")


def setup(app):
    app.add_directive("chapter-dependency-figure", DependencyFigure)
    app.add_directive("chapter-timings", ChapterTimings)
    app.add_directive("course-plan", CoursePlan)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
