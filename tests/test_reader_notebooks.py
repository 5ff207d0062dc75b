"""Reader notebooks (tools/reader_notebooks.py): Markdown that stock Jupyter renders.

Every chapter is converted in both sets (about two seconds for the whole
book) and its Markdown, and that Markdown rendered by a CommonMark renderer
(markdown-it-py, as Jupyter's renderers follow CommonMark), is scanned for
MyST that a reader would see raw. Tiny hand-written chapters check each
conversion. The book's glue that points the launch and download buttons at
the reader notebooks, and the PDF printer of ``tasks.py book`` (on a small
page, where Chromium is installed), are checked at the end.
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
from markdown_it import MarkdownIt

import tasks
from tools import nbcache
from tools import reader_notebooks as rn

#: MyST a reader must never see: a role, a directive fence, a target, a glue word.
RAW_MYST = re.compile(
    r"\{[\w:-]+\}`|^\s*(?:`{3,}|:{3,})\{|^\([^()\s]+\)=\s*$|\{glue|glue:text", re.M
)
#: The same in rendered HTML (a role's backticks become <code>, a fence a code block).
RAW_HTML = re.compile(
    r"\{[\w:-]+\}<code>|<code class=\"language-\{|\{glue|\(\S+\)=</p>"
)
COMMONMARK = MarkdownIt("commonmark")

BOOK = rn.Book(
    "https://example.org/book/",
    {"notebooks/part/other": "Another chapter"},
    {"other-ex": rn.Label("notebooks/part/other", "Exercise 2", "other-ex")},
    {
        "guo2017": {
            "authors": ["Guo", "Pleiss", "Sun"],
            "year": "2017",
            "link": "https://doi.org/10.5555/x",
        },
        "murphy1973": {"authors": ["Murphy"], "year": "1973", "link": None},
    },
)

CHAPTER = """\
---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
    format_version: 0.13
kernelspec:
  display_name: Python 3 (ipykernel)
  language: python
  name: python3
---

# A tiny chapter

(sec-intro)=
## Introduction

As {cite:t}`guo2017` showed, and others agree {cite:p}`guo2017,murphy1973`,
the error is {glue:text}`ece:.3f` and the rate {glue:text}`rate`; see
{ref}`sec-intro`, {doc}`the other chapter <other>`, {ref}`other-ex`,
{eq}`eq-a` and {func}`~calibtut.metrics.ece`.

$$
a = b
$$ (eq-a)

```{code-cell} ipython3
:tags: [remove-cell]

import sys
if "google.colab" in sys.modules:
    pass
```

```{code-cell} ipython3
from calibtut.run import glue
glue("ece", 0.01234)
```

```{prf:theorem} Marginal coverage
:label: thm-cov

The set covers $Y$ with probability at least $1 - \\alpha$.
```

```{prf:proof}
Exchangeability.
```

```{prf:proof}
By

$$
1 = 1
$$
```

```{prf:algorithm} Loop
1. Start.
2. Stop.
```

Theorem: {prf:ref}`thm-cov`; {numref}`Box {number} <thm-cov>`.

:::{note}
A note with {math}`x^2`.
:::

```{exercise} First try (derivation)
:label: ex-one

Derive it.
```

```{solution} ex-one
:class: dropdown

SECRET-ONE is the answer.
```

```{exercise} Second try (code)
:label: ex-two

Compute it.
```

```{solution-start} ex-two
:class: dropdown
```

SECRET-TWO in words.

```{code-cell} ipython3
secret_two = 2
```

```{solution-end}
```

```{code-cell} ipython3
after = 1
```

```{code-cell} ipython3
---
mystnb:
  figure:
    caption: "A line, the rate of {cite:t}`guo2017` as $r$."
    name: fig-line
---
plt.plot([0, after])
```
"""


@pytest.fixture
def tiny(tmp_path, monkeypatch) -> Path:
    """A chapter at notebooks/part/tiny.md of a fake repository."""
    root = tmp_path / "repo"
    path = root / "notebooks" / "part" / "tiny.md"
    path.parent.mkdir(parents=True)
    path.write_text(CHAPTER, encoding="utf8")
    monkeypatch.setattr(rn, "ROOT", root)
    return path


def markdown(nb) -> str:
    return "\n\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


def code(nb) -> str:
    return "\n\n".join(c.source for c in nb.cells if c.cell_type == "code")


def raw_myst(nb) -> list[str]:
    """Raw MyST left in the notebook's Markdown or in its CommonMark rendering."""
    text = markdown(nb)
    html = COMMONMARK.render(text)
    return [m.group(0) for m in RAW_MYST.finditer(text)] + [
        m.group(0) for m in RAW_HTML.finditer(html)
    ]


def test_every_chapter_converts_to_plain_markdown(tmp_path):
    chapters = nbcache.book_notebooks()
    assert chapters
    written = rn.write_sets(tmp_path, chapters, cache_dir=tmp_path / "no-cache")
    assert len(written) == 2 * len(chapters)
    problems = []
    for path in written:
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        assert nb.metadata.kernelspec.name == "python3"
        assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")
        problems += [f"{path.relative_to(tmp_path)}: {raw!r}" for raw in raw_myst(nb)]
        if path.parts[-3] == "student":
            shown = markdown(nb)
            if "solution below it" in shown:
                problems.append(
                    f"{path.relative_to(tmp_path)}: says the solutions follow"
                )
            problems += [
                f"{path.relative_to(tmp_path)}: a solution"
                for _ in re.finditer("Solution to", shown)
            ]
    assert not problems, "\n".join(problems[:20])


def _names(sources: list[str], context) -> set[str]:
    """The names the code stores (``ast.Store``: assignments, definitions, arguments,
    imports) or loads (``ast.Load``)."""
    found = set()
    for source in sources:
        tree = ast.parse(
            re.sub(r"^\s*[%!].*$", "", source, flags=re.M)
        )  # IPython magics
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, context):
                found.add(node.id)
            elif context is ast.Store and isinstance(
                node, (ast.FunctionDef, ast.ClassDef)
            ):
                found.add(node.name)
            elif context is ast.Store and isinstance(node, ast.arg):
                found.add(node.arg)
            elif context is ast.Store and isinstance(node, ast.alias):
                found.add((node.asname or node.name).split(".")[0])
    return found


def test_student_set_runs_without_the_solutions_code():
    """No student code cell needs a name that only a left-out solution defines."""
    problems = []
    for chapter in nbcache.book_notebooks():
        student = [
            c.source
            for c in rn.convert(chapter, "student", glued={}).cells
            if c.cell_type == "code"
        ]
        teacher = [
            c.source
            for c in rn.convert(chapter, "teacher", glued={}).cells
            if c.cell_type == "code"
        ]
        left_out = [source for source in teacher if source not in student]
        needed = (_names(left_out, ast.Store) - _names(student, ast.Store)) & _names(
            student, ast.Load
        )
        problems += [f"{chapter.name}: {name}" for name in sorted(needed)]
    assert not problems


def test_student_set_has_no_solution_text(tmp_path):
    """Each solution's own words: missing from the student set, in the teacher's."""
    chapter = next(
        p
        for p in nbcache.book_notebooks()
        if "solution-start" in p.read_text(encoding="utf8")
    )
    student = rn.convert(chapter, "student", glued={})
    teacher = rn.convert(chapter, "teacher", glued={})
    gated = re.findall(
        r"```\{solution-start\}[^\n]*\n(?::[^\n]*\n)*```\n\n([^\n]+)",
        chapter.read_text(encoding="utf8"),
    )
    assert gated
    for line in gated:
        assert line not in markdown(student)
        assert line in markdown(teacher)


def test_hand_chapter_student(tiny):
    nb = rn.convert(tiny, "student", glued={"ece": "0.01234"}, book=BOOK)
    text, source = markdown(nb), code(nb)
    assert not raw_myst(nb)
    # the install cell first, visible, after the header
    assert nb.cells[0].source.startswith("# A tiny chapter")
    assert (
        "google.colab" in nb.cells[1].source and "jupyter" not in nb.cells[1].metadata
    )
    # citations, author-year with a link
    assert "[Guo et al. (2017)](https://doi.org/10.5555/x) showed" in text
    assert (
        "([Guo et al., 2017](https://doi.org/10.5555/x); "
        "[Murphy, 1973](https://example.org/book/book/bibliography.html))"
    ) in text
    # glue with and without a value, and the ci note
    assert (
        "the error is 0.012 and the rate (computed when you run the notebook)" in text
    )
    assert "book's `ci` run" in nb.cells[0].source
    # cross-references
    assert (
        "see\n[Introduction](https://example.org/book/notebooks/part/tiny.html#sec-intro)"
        in text
    )
    assert (
        "[the other chapter](https://example.org/book/notebooks/part/other.html)"
        in text
    )
    assert (
        "[Exercise 2 (in “Another chapter”)](https://example.org/book/notebooks/part/other.html#other-ex)"
        in text
    )
    assert "(1) and `ece`" in text and "\\tag{1}" in text
    # boxes and admonitions
    assert "> **Theorem 1 (Marginal coverage).** The set covers" in text
    assert "> *Proof.* Exchangeability. ∎" in text
    assert "> *Proof.* By\n>\n> $$\n> 1 = 1\n> $$\n>\n> ∎" in text
    assert "> **Algorithm 1 (Loop).**\n>\n> 1. Start.\n> 2. Stop." in text
    assert (
        "Theorem: [Theorem 1](https://example.org/book/notebooks/part/tiny.html#thm-cov);"
        " "
        "[Box 1](https://example.org/book/notebooks/part/tiny.html#thm-cov)."
    ) in text
    assert "> **Note**\n>\n> A note with $x^2$." in text
    # exercises numbered; no solution, not even the code of a gated one
    assert (
        "### Exercise 1: First try (derivation)" in text
        and "### Exercise 2: Second try (code)" in text
    )
    assert (
        "SECRET" not in text
        and "secret_two" not in source
        and "Solution to" not in text
    )
    assert "after = 1" in source


def test_hand_chapter_teacher(tiny):
    nb = rn.convert(tiny, "teacher", glued={}, book=BOOK)
    text = markdown(nb)
    assert not raw_myst(nb)
    assert (
        "<details>\n<summary>Solution to Exercise 1</summary>\n\n"
        "SECRET-ONE is the answer." in text
    )
    assert "<summary>Solution to Exercise 2</summary>\n\nSECRET-TWO in words." in text
    gated = next(
        c for c in nb.cells if c.cell_type == "code" and "secret_two" in c.source
    )
    assert gated.metadata["jupyter"] == {"source_hidden": True}
    # the solution folds: its words are inside <details> once rendered
    html = COMMONMARK.render(text)
    assert re.search(
        r"<details>\s*<summary>Solution to Exercise 1</summary>\s*<p>SECRET-ONE", html
    )
    # no glued value at all: no note about the ci run
    assert "ci` run" not in nb.cells[0].source


def test_glue_values_read_from_a_cache(tiny, tmp_path):
    """A cached execution's glue outputs are read back (the cache matched by code)."""
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    cache_dir = tmp_path / "cache"
    nb = nbcache.read_source(tiny)
    glued = next(c for c in nb.cells if c.cell_type == "code" and "glue(" in c.source)
    glued.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={"application/papermill.record/text/plain": "0.01234"},
            metadata={
                "scrapbook": {
                    "name": "ece",
                    "mime_prefix": "application/papermill.record/",
                }
            },
        )
    ]
    get_cache(str(cache_dir)).cache_notebook_bundle(
        CacheBundleIn(nb, str(tiny)), check_validity=False
    )
    assert rn.glue_values(tiny, cache_dir) == {"ece": "0.01234"}
    assert rn.glue_values(tiny, tmp_path / "missing") == {}


def test_glue_figure_and_unknown_directive(tiny):
    tiny.write_text(
        CHAPTER
        + "\n```{glue:figure} ece\nThe caption.\n```\n\n```{margin}\nAside.\n```\n",
        encoding="utf8",
    )
    nb = rn.convert(tiny, "student", glued={}, book=BOOK)
    text = markdown(nb)
    assert not raw_myst(nb)
    assert (
        '> The figure *ece* comes from the code cell that calls `glue("ece", ...)`.'
        in text
    )
    assert "> **Margin**\n>\n> Aside." in text


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (
            lambda p: rn.convert(p, "teachers", glued={}, book=BOOK),
            ValueError,
            "solutions",
        ),
        (
            lambda p: rn.convert(p.with_suffix(".txt"), "student", glued={}, book=BOOK),
            ValueError,
            "md_path",
        ),
        (lambda p: rn.write_sets(p.parent, [p], sets=("all",)), ValueError, "sets"),
        (lambda p: rn.write_sets(p.parent, [p]), ValueError, "chapters"),
        (lambda p: rn.parse_blocks(3), TypeError, "text"),
        (
            lambda p: rn.book_url({"repository": {"url": "ftp://x"}}),
            ValueError,
            "repository.url",
        ),
    ],
)
def test_bad_arguments(tiny, call, error, match):
    with pytest.raises(error, match=match):
        call(tiny)


def test_command_line(tmp_path):
    chapter = nbcache.book_notebooks()[0]
    assert (
        rn.main(
            [
                "--out",
                str(tmp_path),
                "--set",
                "student",
                "--cache",
                str(tmp_path / "none"),
                str(chapter),
            ]
        )
        == 0
    )
    assert [p.relative_to(tmp_path).parts[0] for p in tmp_path.rglob("*.ipynb")] == [
        "student"
    ]


# ---------------------------------------------------------- the book's buttons and PDF


def _book_glue():
    """``book/_ext/calibtut_book.py``, imported as Sphinx loads it (from its folder)."""
    sys.path.insert(0, str(nbcache.ROOT / "book" / "_ext"))
    try:
        return importlib.import_module("calibtut_book")
    finally:
        sys.path.pop(0)


class _Config(dict):
    """Sphinx's config, read as the theme reads it (``config[name]``)."""

    def __getattr__(self, name):
        return self[name]


def _header_buttons(tmp_path: Path, pagename: str) -> list[dict]:
    """A chapter's header buttons: the launch group from sphinx-book-theme, configured
    as ``_config.yml`` configures it, and the download group as the theme builds it."""
    from sphinx_book_theme.header_buttons.launch import add_launch_buttons

    source = tmp_path / "src" / f"{pagename}.md"
    executed = tmp_path / "_build" / "jupyter_execute" / f"{pagename}.ipynb"
    for path in (source, source.with_suffix(".ipynb"), executed):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}", encoding="utf8")
    config = nbcache.book_config()
    theme = {
        "launch_buttons": config["launch_buttons"],
        "repository_branch": config["repository"]["branch"],
    }
    app = SimpleNamespace(
        env=SimpleNamespace(
            doc2path=lambda doc: str(tmp_path / "src" / f"{doc}.md"),
            metadata={pagename: {"kernelspec": {"name": "python3"}}},
        ),
        config=_Config(html_theme_options=theme),
        outdir=str(tmp_path / "_build" / "html"),
    )
    org, repo = config["repository"]["url"].rstrip("/").split("/")[-2:]
    context = {
        "pagename": pagename,
        "sourcename": f"{pagename}.md",
        "header_buttons": [],
        "github_url": "https://github.com",
        "github_user": org,
        "github_repo": repo,
    }
    add_launch_buttons(app, pagename, "page.html", context, None)
    return context["header_buttons"] + [
        {
            "label": "download-buttons",
            "buttons": [
                {
                    "label": "download-notebook-button",
                    "url": f"../../_sources/{pagename}.ipynb",
                    "text": ".ipynb",
                },
                {
                    "label": "download-source-button",
                    "url": f"../../_sources/{pagename}.md",
                    "text": ".md",
                },
            ],
        }
    ]


def test_launch_and_download_buttons_point_at_the_student_notebook(tmp_path):
    glue = _book_glue()
    buttons = _header_buttons(tmp_path, "notebooks/drift/01_online_setting")
    glue.point_buttons_at_reader(
        buttons,
        "notebooks/drift/01_online_setting",
        "main",
        "../../reader/student/drift/01_online_setting.ipynb",
    )
    urls = [b["url"] for group in buttons for b in group["buttons"]]
    assert urls == [
        "https://mybinder.org/v2/gh/calibtut/calibtut/reader-notebooks"
        "?urlpath=lab/tree/reader/student/drift/01_online_setting.ipynb",
        "https://colab.research.google.com/github/calibtut/calibtut/blob/reader-notebooks/"
        "reader/student/drift/01_online_setting.ipynb",
        "../../reader/student/drift/01_online_setting.ipynb",
        "../../_sources/notebooks/drift/01_online_setting.md",
    ]
    with pytest.raises(ValueError, match="pagename"):
        glue.point_buttons_at_reader(buttons, "book/intro", "main", "x")
    with pytest.raises(ValueError, match="solutions"):
        glue.reader_notebook("notebooks/a/b", "everyone")


def test_page_hook_rewrites_only_when_the_reader_notebook_exists(tmp_path):
    glue = _book_glue()
    app = SimpleNamespace(
        outdir=str(tmp_path / "html"),
        config=SimpleNamespace(html_theme_options={"repository_branch": "main"}),
    )
    page = "notebooks/drift/01_online_setting"
    context = {
        "header_buttons": _header_buttons(tmp_path, page),
        "pathto": lambda target, resource: f"../../{target}",
    }
    glue._link_reader_notebooks(app, page, "page.html", context, None)
    assert context["header_buttons"] == _header_buttons(
        tmp_path, page
    )  # none written: the links stay
    written = tmp_path / "reader" / "student" / "drift" / "01_online_setting.ipynb"
    written.parent.mkdir(parents=True)
    written.write_text("{}", encoding="utf8")
    glue._link_reader_notebooks(app, page, "page.html", context, None)
    assert (
        context["header_buttons"][1]["buttons"][0]["url"]
        == "../../reader/student/drift/01_online_setting.ipynb"
    )
    # the build copies them into the site
    app.builder = SimpleNamespace(name="html")
    glue._copy_reader_notebooks(app, None)
    assert (
        tmp_path / "html" / "reader" / "student" / "drift" / "01_online_setting.ipynb"
    ).is_file()


@pytest.mark.skipif(
    not tasks.CHROMIUM.exists(),
    reason="no /usr/bin/chromium (apt-get install chromium)",
)
def test_print_pdf_of_a_small_page(tmp_path):
    page = tmp_path / "page.html"
    page.write_text(
        "<!doctype html><meta charset='utf-8'><h1>A book</h1><p>$x$ and text.</p>",
        encoding="utf8",
    )
    pdf = tmp_path / "out" / "book.pdf"
    assert tasks.print_pdf(page, pdf, timeout=120) == 0
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF-") and b"/Type /Page" in data
    with pytest.raises(ValueError, match="page"):
        tasks.print_pdf(tmp_path / "missing.html", pdf)


def test_exercises_numbered_per_chapter():
    """Each page's exercises are renumbered 1, 2, ... in page order; other kinds keep theirs."""
    renumber = _book_glue().number_exercises_per_chapter
    numbers = {
        "a": {"exercise": {"x": (4,), "y": (3,), "z": (5,)}, "figure": {"f": (9,)}},
        "b": {"exercise": {"w": (6,)}},
        "c": {},
    }
    renumber(numbers)
    assert numbers == {
        "a": {"exercise": {"x": (2,), "y": (1,), "z": (3,)}, "figure": {"f": (9,)}},
        "b": {"exercise": {"w": (1,)}},
        "c": {},
    }


def test_a_figure_caption_follows_its_cell(tiny):
    nb = rn.convert(tiny, "student", glued={}, book=BOOK)
    index = next(i for i, c in enumerate(nb.cells) if c.source.startswith("plt.plot"))
    caption = nb.cells[index + 1]
    assert caption.cell_type == "markdown"
    assert caption.source == (
        "*Figure: A line, the rate of [Guo et al. (2017)](https://doi.org/10.5555/x) as $r$.*"
    )
    assert not raw_myst(nb)


def test_the_single_page_build_gets_the_html_handlers_it_lacks():
    """The whole-book PDF prints the one-page build: a node registered for ``html`` only
    (sphinx-proof's boxes) must reach ``singlehtml`` when another extension registered
    ``singlehtml`` handlers of its own (sphinx-exercise), and those keep theirs."""
    html_only, both = (lambda *a: None, None), (lambda *a: None, None)
    own = (lambda *a: None, None)
    handlers = {"html": {"proof_node": html_only, "exercise_node": both}, "singlehtml": {"exercise_node": own}}
    app = SimpleNamespace(registry=SimpleNamespace(translation_handlers=handlers),
                          builder=SimpleNamespace(name="singlehtml", format="html"))
    _book_glue()._share_html_handlers(app)
    assert handlers["singlehtml"] == {"exercise_node": own, "proof_node": html_only}
    latex = {"html": {"proof_node": html_only}, "latex": {}}
    app.registry.translation_handlers, app.builder = latex, SimpleNamespace(name="latex", format="latex")
    _book_glue()._share_html_handlers(app)
    assert latex["latex"] == {}
