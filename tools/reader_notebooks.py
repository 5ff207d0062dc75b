"""Reader notebooks: the book's chapters as plain notebooks for stock Jupyter and Colab.

The ``.ipynb`` twins under ``notebooks/`` are MyST in notebook form: Jupyter
and Colab show their ``{glue:text}`` placeholders, ``{cite}`` roles and
``{prf:theorem}`` fences as raw text, and every solution in plain view. This
module rewrites each chapter's MyST source into CommonMark notebooks that any
Jupyter front end renders, in two sets:

* ``student``: no solutions at all (the code cells of a gated solution go too);
* ``teacher``: each solution folded into a ``<details>`` block, the code cells
  of a gated solution kept runnable with their source collapsed.

Glued values come from the book's ``ci`` execution held in the jupyter-cache
(``_build/.jupyter_cache``, see ``tools/nbcache.py``) and a note at the top
says so; a value the cache lacks reads "(computed when you run the
notebook)". Citations become author-year text with a link, theorem-like boxes
and admonitions headed blockquotes, exercises numbered headings, cross
references readable text linking into the online book, and the chapter's
Colab install cell comes first, visible.

Command line (run with the project's virtualenv)::

    python -m tools.reader_notebooks --out _build/reader [--set both] [chapters...]
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import jupytext
import nbformat
import yaml

from tools import nbcache

ROOT = nbcache.ROOT
SETS = ("student", "teacher")
#: What a glued value the cache lacks reads as.
NOT_COMPUTED = "(computed when you run the notebook)"
#: The sentence that opens the chapters' exercises, untrue of the student set, and
#: what the student set says instead.
SOLUTIONS_NOTE = re.compile(
    r"Each exercise has a solution below it, collapsed(?:;[^.]*)?\."
)
STUDENT_NOTE = "The solutions are left out of this copy; [the book]({}) has them."
#: The code that marks a chapter's Colab install cell (see tests/test_colab_like.py).
INSTALL_MARK = '"google.colab" in sys.modules'
#: Admonition directives of MyST, titled by their name.
ADMONITIONS = (
    "admonition",
    "attention",
    "caution",
    "danger",
    "error",
    "hint",
    "important",
    "note",
    "seealso",
    "tip",
    "warning",
)
#: Python-domain roles, shown as code.
CODE_ROLES = (
    "func",
    "class",
    "meth",
    "mod",
    "data",
    "attr",
    "obj",
    "exc",
    "py:func",
    "py:class",
    "py:meth",
    "py:mod",
    "py:data",
    "py:attr",
    "py:obj",
    "py:exc",
)

FENCE = re.compile(
    r"^ {0,3}(?P<fence>`{3,}|:{3,})\{(?P<name>[^}\s]+)\}[ \t]*(?P<arg>.*)$"
)
PLAIN_FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})")
OPTION = re.compile(r"^:(?P<key>[\w-]+):[ \t]*(?P<value>.*)$")
TARGET = re.compile(r"^\((?P<label>[^()\s]+)\)=\s*$")
HEADING = re.compile(r"^(?P<hashes>#{1,6})\s+(?P<title>.+?)\s*#*\s*$")
EQ_LABEL = re.compile(r"^(?P<math>.*)\$\$[ \t]*\((?P<label>[^()\s]+)\)\s*$")
ROLE = re.compile(r"\{(?P<name>[\w:-]+)\}`(?P<text>[^`]*)`")
TITLED = re.compile(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$", re.S)


def _bad_argument(name: str, value, expected: str) -> ValueError:
    return ValueError(f"{name} must be {expected}, got {value!r}")


# -------------------------------------------------------------------------- MyST blocks


@dataclass
class Directive:
    """A fenced MyST directive: its name, argument, options and body lines."""

    name: str
    arg: str
    options: dict[str, str]
    body: list[str]


@dataclass
class Literal:
    """A plain fenced code block, passed through untouched."""

    lines: list[str]


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return (
        len(line) - len(line.lstrip(" ")) <= 3
        and len(stripped) >= len(fence)
        and set(stripped) == {fence[0]}
    )


def parse_blocks(text: str) -> list:
    """Split MyST into text lines, :class:`Directive` and :class:`Literal` blocks.

    A directive ends at the first fence of its own character at least as long
    as its opening one, as in MyST; its body is left unparsed (parse it again
    to reach nested directives).

    Parameters
    ----------
    text : str
        MyST markdown.

    Returns
    -------
    list
        ``str`` lines, :class:`Directive` and :class:`Literal` items, in order.

    Examples
    --------
    >>> blocks = parse_blocks("Intro\\n```{note}\\n:class: tip\\nBody\\n```")
    >>> blocks[0], blocks[1].name, blocks[1].options, blocks[1].body
    ('Intro', 'note', {'class': 'tip'}, ['Body'])
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    lines, blocks, i = text.splitlines(), [], 0
    while i < len(lines):
        line = lines[i]
        match = FENCE.match(line) or PLAIN_FENCE.match(line)
        if match is None:
            blocks.append(line)
            i += 1
            continue
        fence, end = match["fence"], i + 1
        while end < len(lines) and not _closes(lines[end], fence):
            end += 1
        inner = lines[i + 1 : end]
        if "name" not in match.groupdict():
            blocks.append(Literal(lines[i : end + 1]))
        else:
            options, body = _split_options(inner)
            blocks.append(Directive(match["name"], match["arg"].strip(), options, body))
        i = end + 1
    return blocks


def _split_options(inner: list[str]) -> tuple[dict[str, str], list[str]]:
    """A directive's options (``:key: value`` lines or a ``---`` YAML block), body."""
    if inner and inner[0].strip() == "---":
        end = next((k for k in range(1, len(inner)) if inner[k].strip() == "---"), None)
        if end is not None:
            found = yaml.safe_load("\n".join(inner[1:end])) or {}
            return {str(k): str(v) for k, v in found.items()}, inner[end + 1 :]
    options, k = {}, 0
    while k < len(inner) and (match := OPTION.match(inner[k])):
        options[match["key"]] = match["value"].strip()
        k += 1
    return options, inner[k:]


# -------------------------------------------------------------------- the book's labels


@dataclass
class Label:
    """Where a cross-reference target lives and how a reference to it reads."""

    docname: str
    text: str
    anchor: str


@dataclass
class Numbering:
    """The numbered things of one chapter, in the order the book shows them."""

    docname: str
    counts: dict[str, int] = field(default_factory=dict)
    labels: dict[str, Label] = field(default_factory=dict)
    #: ``id()`` of a numbered Directive -> its number
    numbers: dict[int, int] = field(default_factory=dict)

    def next(self, kind: str) -> int:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        return self.counts[kind]


def _kind(name: str) -> str:
    return name.split(":", 1)[1] if name.startswith("prf:") else name


def number_blocks(blocks: list, numbering: Numbering) -> None:
    """Number the exercises, theorem-like boxes and labelled equations of ``blocks``.

    Parameters
    ----------
    blocks : list
        Items of :func:`parse_blocks`. The body of every directive but
        ``math``, ``code-cell`` and the solution gates is parsed in place (its
        lines replaced by blocks), so that nested directives are numbered
        and rendered; call this once per parse.
    numbering : Numbering
        Updated in place: counts, the number of each directive and the label
        of every numbered target (``Exercise 2``, ``Theorem 1``, ``(3)``) and
        of every ``(label)=`` target (the heading after it).

    Examples
    --------
    >>> n = Numbering("notebooks/x")
    >>> number_blocks(parse_blocks("```{exercise} Try\\n:label: ex-a\\nDo.\\n```"), n)
    >>> n.labels["ex-a"].text
    'Exercise 1'
    """
    pending = None
    for block in blocks:
        if isinstance(block, str):
            if match := TARGET.match(block):
                pending = match["label"]
            elif (match := HEADING.match(block)) and pending:
                numbering.labels[pending] = Label(
                    numbering.docname, _plain(match["title"]), pending
                )
                pending = None
            elif match := EQ_LABEL.match(block):
                number = numbering.next("equation")
                numbering.labels[match["label"]] = Label(
                    numbering.docname, f"({number})", f"equation-{match['label']}"
                )
            continue
        if not isinstance(block, Directive):
            continue
        label = block.options.get("label")
        kind = _kind(block.name)
        if block.name == "exercise" or (
            block.name.startswith("prf:") and kind != "proof"
        ):
            number = numbering.next(kind)
            numbering.numbers[id(block)] = number
            if label:
                numbering.labels[label] = Label(
                    numbering.docname, f"{kind.title()} {number}", label
                )
        elif block.name == "math" and label:
            number = numbering.next("equation")
            numbering.numbers[id(block)] = number
            numbering.labels[label] = Label(
                numbering.docname, f"({number})", f"equation-{label}"
            )
        if block.name not in ("math", "code-cell", "solution-start", "solution-end"):
            nested = parse_blocks("\n".join(block.body))
            block.body = nested
            number_blocks(nested, numbering)


def _plain(title: str) -> str:
    """A heading's text without MyST roles or emphasis markers."""
    return ROLE.sub(lambda m: _role_label(m["text"]), title).replace("*", "").strip()


def _role_label(text: str) -> str:
    match = TITLED.match(text)
    return match["text"] if match else text.lstrip("~").split(".")[-1]


@dataclass
class Book:
    """What a chapter needs from the book: its URL, titles, labels and citations."""

    url: str
    titles: dict[str, str]
    labels: dict[str, Label]
    bib: dict[str, dict]


def book_url(config: dict) -> str:
    """The online book's address, from ``repository.url`` of ``_config.yml``.

    Examples
    --------
    >>> book_url({"repository": {"url": "https://github.com/org/name"}})
    'https://org.github.io/name/'
    """
    url = (config.get("repository") or {}).get("url", "")
    match = re.match(r"https://github\.com/([^/]+)/([^/]+?)/?$", url)
    if match is None:
        raise _bad_argument(
            "repository.url of _config.yml",
            url,
            "a https://github.com/<org>/<repo> URL",
        )
    return f"https://{match[1]}.github.io/{match[2]}/"


def _title(text: str) -> str | None:
    for line in text.splitlines():
        if match := HEADING.match(line):
            if len(match["hashes"]) == 1:
                return _plain(match["title"])
    return None


@lru_cache(maxsize=4)
def load_book(root: Path = ROOT) -> Book:
    """Read every page of the book once: titles, numbered labels and the bibliography.

    Parameters
    ----------
    root : Path
        The repository root.

    Returns
    -------
    Book
    """
    titles, labels = {}, {}
    pages = sorted((root / "book").glob("*.md")) + [
        p for p in nbcache.book_notebooks() if p.exists()
    ]
    for path in pages:
        docname = path.relative_to(root).with_suffix("").as_posix()
        text = path.read_text(encoding="utf8")
        titles[docname] = _title(text) or _humanise(path.stem)
        numbering = Numbering(docname)
        number_blocks(parse_blocks(text), numbering)
        labels.update(numbering.labels)
    return Book(
        book_url(nbcache.book_config()),
        titles,
        labels,
        read_bib(root / "book" / "references.bib"),
    )


def _humanise(label: str) -> str:
    """``cs-ex-a`` -> ``cs ex a``; ``02_the_bound`` -> ``the bound``."""
    return re.sub(r"^\d+\s+", "", re.sub(r"[-_]+", " ", label)).strip()


# ---------------------------------------------------------------------------- citations


def _latex_text(value: str) -> str:
    value = re.sub(r"\\[`'^\"~=.]\{?(\w)\}?", r"\1", value)
    return value.replace("\\&", "&").replace("{", "").replace("}", "").replace("~", " ")


def read_bib(path: Path) -> dict[str, dict]:
    """The fields a citation needs, per key: ``authors``, ``year``, ``link``.

    Parameters
    ----------
    path : Path
        A BibTeX file.

    Returns
    -------
    dict
        ``{key: {"authors": [...], "year": str, "link": str or None}}``; the link
        is the DOI's, else the entry's ``url``, else its arXiv page.

    Examples
    --------
    >>> import tempfile
    >>> bib = Path(tempfile.mkdtemp()) / "r.bib"
    >>> _ = bib.write_text("@article{k, author={Guo, Chuan and Pleiss, Geoff},"
    ...                    " year={2017}, doi={10.1/x}}")
    >>> read_bib(bib)["k"]
    {'authors': ['Guo', 'Pleiss'], 'year': '2017', 'link': 'https://doi.org/10.1/x'}
    """
    from pybtex.database import parse_file

    entries = {}
    for key, entry in parse_file(str(path), bib_format="bibtex").entries.items():
        people = entry.persons.get("author") or entry.persons.get("editor") or []
        authors = [
            _latex_text(" ".join(p.prelast_names + p.last_names)) for p in people
        ]
        fields = entry.fields
        link = None
        if fields.get("doi"):
            link = "https://doi.org/" + fields["doi"]
        elif fields.get("url"):
            link = fields["url"]
        elif fields.get("eprint"):
            link = "https://arxiv.org/abs/" + fields["eprint"]
        entries[key] = {
            "authors": authors or ["Anonymous"],
            "year": fields.get("year", "n.d."),
            "link": link,
        }
    return entries


def cite_text(keys: str, style: str, book: Book) -> str:
    """Author-year text for a ``{cite}``/``{cite:p}`` (bracketed) or ``{cite:t}`` role.

    Examples
    --------
    >>> b = Book("https://x/", {}, {}, {"k": {"authors": ["Guo", "Pleiss", "Sun"],
    ...          "year": "2017", "link": None}})
    >>> cite_text("k", "t", b)
    '[Guo et al. (2017)](https://x/book/bibliography.html)'
    >>> cite_text("k", "p", b)
    '([Guo et al., 2017](https://x/book/bibliography.html))'
    """
    parts = []
    for key in (k.strip() for k in keys.split(",")):
        entry = book.bib.get(key)
        if entry is None:
            parts.append(f"[{key}]")
            continue
        names = entry["authors"]
        who = (
            names[0]
            if len(names) == 1
            else (
                f"{names[0]} and {names[1]}"
                if len(names) == 2
                else f"{names[0]} et al."
            )
        )
        shown = (
            f"{who} ({entry['year']})" if style == "t" else f"{who}, {entry['year']}"
        )
        parts.append(
            f"[{shown}]({entry['link'] or book.url + 'book/bibliography.html'})"
        )
    return ", ".join(parts) if style == "t" else "(" + "; ".join(parts) + ")"


# ------------------------------------------------------------------------- glued values


def glue_values(md_path: Path, cache_dir: Path | None = None) -> dict[str, str]:
    """The ``text/plain`` of every value glued by a chapter's cached ``ci`` execution.

    Parameters
    ----------
    md_path : Path
        The chapter's MyST source.
    cache_dir : Path, optional
        The jupyter-cache folder (default: the book's). A missing folder, or
        a cache without an execution of this version of the chapter, gives
        an empty dict; the cache is only read.

    Returns
    -------
    dict
        ``{glue key: text/plain}`` as myst-nb reads it.
    """
    cache_dir = Path(cache_dir) if cache_dir is not None else nbcache.cache_path()
    if not (cache_dir / "global.db").is_file():
        return {}
    from jupyter_cache import get_cache

    cache = get_cache(str(cache_dir))
    try:
        record = cache.match_cache_notebook(nbcache.read_source(Path(md_path)))
    except KeyError:
        return {}
    values = {}
    for cell in cache.get_cache_bundle(record.pk).nb.cells:
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            scrap = output.get("metadata", {}).get("scrapbook")
            if scrap:
                prefix = scrap.get("mime_prefix", "")
                text = output.get("data", {}).get(prefix + "text/plain")
                if text is not None:
                    values[scrap["name"]] = "".join(text)
    return values


def format_glued(text: str, fmt: str) -> str:
    """Format a glued ``text/plain`` as myst-nb's ``{glue:text}`` does.

    Examples
    --------
    >>> format_glued("0.12345", ".2f"), format_glued("'1.00'", "")
    ('0.12', '1.00')
    """
    try:
        value = ast.literal_eval(text)
    except (SyntaxError, ValueError):
        value = text
    if not fmt:
        return str(value)
    kind = fmt[-1]
    if kind == "s":
        value = str(value)
    elif kind in "bcdoxX":
        value = int(value)
    elif kind in "eEfFgGn%":
        value = float(value)
    return format(value, fmt)


# ---------------------------------------------------------------------------- rendering


@dataclass
class Chapter:
    """The state of one chapter's conversion."""

    docname: str
    book: Book
    numbering: Numbering
    glued: dict[str, str]
    used_glue: bool = False

    def link(self, docname: str, anchor: str = "") -> str:
        return f"{self.book.url}{docname}.html" + (f"#{anchor}" if anchor else "")

    def resolve_doc(self, target: str) -> str:
        base = Path(self.docname).parent
        target = target.removesuffix(".md").removesuffix(".ipynb")
        path = Path(target.lstrip("/")) if target.startswith("/") else base / target
        parts: list[str] = []
        for part in path.parts:
            if part == "..":
                parts = parts[:-1]
            elif part != ".":
                parts.append(part)
        return "/".join(parts)

    def reference(self, text: str, kind: str) -> str:
        """Readable text for a cross-reference, linked where the target is known."""
        match = TITLED.match(text)
        shown, target = (match["text"], match["target"]) if match else (None, text)
        if kind == "doc":
            docname = self.resolve_doc(target)
            title = shown or self.book.titles.get(
                docname, _humanise(Path(docname).name)
            )
            return f"[{title}]({self.link(docname)})"
        label = self.numbering.labels.get(target) or self.book.labels.get(target)
        if label is None:
            return shown or _humanise(target)
        title = shown or label.text
        if kind == "numref":
            number = label.text.split()[-1].strip("()")
            title = title.replace("{number}", number).replace("%s", number)
        if label.docname != self.docname and not shown:
            title += f" (in “{self.book.titles.get(label.docname, label.docname)}”)"
        if kind == "eq" and label.docname == self.docname:
            return title
        return f"[{title}]({self.link(label.docname, label.anchor)})"

    def glue(self, text: str) -> str:
        key, _, fmt = text.partition(":")
        if key in self.glued:
            self.used_glue = True
            return format_glued(self.glued[key], fmt)
        return NOT_COMPUTED

    def role(self, match: re.Match) -> str:
        name, text = match["name"], match["text"]
        if name.startswith("glue"):
            return self.glue(text)
        if name in ("cite", "cite:p", "cite:ps", "cite:t", "cite:ts"):
            return cite_text(text, "t" if name.startswith("cite:t") else "p", self.book)
        if name in ("doc", "ref", "numref", "eq", "prf:ref"):
            return self.reference(text, name)
        if name == "math":
            return f"${text}$"
        if name in CODE_ROLES:
            short = "<" in text or text.startswith("~")
            return f"`{_role_label(text) if short else text}`"
        return _role_label(text)

    def inline(self, line: str) -> str:
        return ROLE.sub(self.role, line)


def quote(text: str) -> str:
    """Prefix every line with ``> `` (a CommonMark blockquote)."""
    return "\n".join(f"> {line}".rstrip() for line in text.splitlines())


def render(blocks: list, chapter: Chapter, solutions: str) -> str:
    """CommonMark text for parsed MyST blocks.

    Parameters
    ----------
    blocks : list
        Items of :func:`parse_blocks`, numbered with :func:`number_blocks`.
    chapter : Chapter
        The chapter's labels, glued values and code.
    solutions : {"student", "teacher"}
        Whether solutions are dropped or folded.

    Returns
    -------
    str
    """
    out = []
    for block in blocks:
        if isinstance(block, str):
            if TARGET.match(block):
                continue
            if match := EQ_LABEL.match(block):
                number = chapter.numbering.labels[match["label"]].text.strip("()")
                math = match["math"].rstrip()
                out.append((math + "\n" if math else "") + f"\\tag{{{number}}}\n$$")
                continue
            out.append(chapter.inline(block))
        elif isinstance(block, Literal):
            out.append("\n".join(block.lines))
        else:
            out.append(render_directive(block, chapter, solutions))
    return "\n".join(out)


def render_directive(block: Directive, chapter: Chapter, solutions: str) -> str:
    """CommonMark text for one directive (see :func:`render`)."""
    name, kind = block.name, _kind(block.name)
    if name == "math":
        number = chapter.numbering.numbers.get(id(block))
        tag = f"\n\\tag{{{number}}}" if number else ""
        return "$$\n" + "\n".join(block.body).strip() + tag + "\n$$"
    if name == "solution" and solutions == "student":
        return ""
    title, text = (
        chapter.inline(block.arg),
        render(block.body, chapter, solutions).strip(),
    )
    if name == "exercise":
        number = chapter.numbering.numbers[id(block)]
        return (
            f"### Exercise {number}" + (f": {title}" if title else "") + "\n\n" + text
        )
    if name == "solution":
        return details(solution_title(block.arg, chapter), text)
    if name.startswith("prf:"):
        if kind == "proof":
            last = text.splitlines()[-1].strip() if text else ""
            block = BLOCK_START.match(last) or last.endswith(("$$", "```"))
            return quote(run_in("*Proof.*", text) + ("\n\n∎" if block else " ∎"))
        head = f"{kind.title()} {chapter.numbering.numbers[id(block)]}" + (
            f" ({title})" if title else ""
        )
        return quote(run_in(f"**{head}.**", text))
    if name in ADMONITIONS:
        head = (
            title
            if name == "admonition"
            else name.title() + (f": {title}" if title else "")
        )
        return quote(f"**{head}**\n\n{text}")
    if name == "figure":
        return f"![{_plain(text) or 'figure'}]({block.arg})" + (
            f"\n\n*{text}*" if text else ""
        )
    if name.startswith("glue"):
        what = "figure" if name == "glue:figure" else "value"
        pointer = (
            f"The {what} *{block.arg}* comes from the code cell that calls "
            f'`glue("{block.arg}", ...)`.'
        )
        return quote(pointer + (f"\n\n{text}" if text else ""))
    return quote(f"**{title or _humanise(name).title()}**\n\n{text}")


#: Markdown that must start its own line: a list item, display math, a fence, a
#: table row, a quote or a heading.
BLOCK_START = re.compile(r"^(?:\d+[.)]\s|[-*+]\s|\$\$|```|~~~|\||>|#)")


def run_in(head: str, text: str) -> str:
    """``head`` run into the first paragraph of ``text``, or on its own above a block.

    Examples
    --------
    >>> run_in("**Theorem 1.**", "It holds.")
    '**Theorem 1.** It holds.'
    >>> print(run_in("**Algorithm 1.**", "1. Start."))
    **Algorithm 1.**
    <BLANKLINE>
    1. Start.
    """
    return f"{head}\n\n{text}" if BLOCK_START.match(text) else f"{head} {text}"


def solution_title(label: str, chapter: Chapter) -> str:
    found = chapter.numbering.labels.get(label.strip())
    return f"Solution to {found.text}" if found else "Solution"


def details(summary: str, text: str) -> str:
    """A folded HTML block with Markdown inside (blank lines keep it Markdown)."""
    return f"<details>\n<summary>{summary}</summary>\n\n{text.strip()}\n\n</details>"


# ---------------------------------------------------------------------------- notebooks


def _markdown_cell(text: str):
    return nbformat.v4.new_markdown_cell(re.sub(r"\n{3,}", "\n\n", text).strip())


def _code_cell(cell, hidden: bool = False):
    new = nbformat.v4.new_code_cell(cell.source)
    tags = [t for t in cell.metadata.get("tags", []) if t == "parameters"]
    if tags:
        new.metadata["tags"] = tags
    if hidden:
        new.metadata["jupyter"] = {"source_hidden": True}
    return new


def _caption_cells(cell, chapter: Chapter) -> list:
    """The caption of a figure cell (``mystnb: figure: caption``) as an italic line below it."""
    caption = cell.metadata.get("mystnb", {}).get("figure", {}).get("caption", "")
    return [_markdown_cell(f"*Figure: {chapter.inline(caption.strip())}*")] if caption.strip() else []


def header(title: str, chapter: Chapter, solutions: str, install: bool) -> str:
    """The notebook's first cell: its title, where it comes from and what it holds."""
    lines = [
        f"# {title}",
        "",
        f"This is the reader's copy of a chapter of the calibtut book "
        f"([online version]({chapter.link(chapter.docname)})), in plain Markdown.",
    ]
    if solutions == "student":
        lines.append("Solutions are left out.")
    else:
        lines.append(
            "Solutions are folded under *Solution* (their code cells are collapsed)."
        )
    if chapter.used_glue:
        lines.append(
            "Numbers in the text are those of the book's `ci` run; "
            "when you run the notebook, the outputs show yours."
        )
    if install:
        lines += [
            "",
            "On Colab, run the next cell first: it installs `calibtut` "
            "(elsewhere it does nothing).",
        ]
    return "\n".join(lines)


def convert(
    md_path: Path,
    solutions: str = "student",
    *,
    glued: dict[str, str] | None = None,
    book: Book | None = None,
) -> nbformat.NotebookNode:
    """A chapter's reader notebook.

    Parameters
    ----------
    md_path : Path
        The chapter's MyST source.
    solutions : {"student", "teacher"}
        ``student`` leaves every solution out; ``teacher`` folds each one.
    glued : dict, optional
        Glued values (:func:`glue_values`); None reads them from the book's cache.
    book : Book, optional
        The book's labels, titles and citations (default: :func:`load_book`).

    Returns
    -------
    nbformat.NotebookNode
        A v4 notebook with no outputs and a ``python3`` kernelspec.

    Examples
    --------
    >>> nb = convert(nbcache.book_notebooks()[0], "student", glued={})
    >>> nb.cells[1].cell_type, nb.metadata.kernelspec.name
    ('code', 'python3')
    """
    if solutions not in SETS:
        raise _bad_argument("solutions", solutions, f"one of {SETS}")
    md_path = Path(md_path).resolve()
    if not md_path.is_file() or md_path.suffix != ".md":
        raise _bad_argument("md_path", str(md_path), "an existing MyST .md chapter")
    book = book if book is not None else load_book()
    source = jupytext.read(md_path, fmt="md:myst")
    docname = md_path.relative_to(ROOT).with_suffix("").as_posix()
    chapter = Chapter(
        docname,
        book,
        Numbering(docname),
        glue_values(md_path) if glued is None else glued,
    )
    parsed = [
        parse_blocks(c.source) if c.cell_type == "markdown" else c for c in source.cells
    ]
    for item in parsed:
        if isinstance(item, list):
            number_blocks(item, chapter.numbering)
    cells, title, install = convert_cells(parsed, chapter, solutions)
    nb = nbformat.v4.new_notebook()
    nb.cells = [_markdown_cell(header(title, chapter, solutions, install is not None))]
    nb.cells += [_code_cell(install)] if install is not None else []
    nb.cells += cells
    nb.metadata = {
        "kernelspec": {
            "display_name": "Python 3",
            "language": "python",
            "name": "python3",
        },
        "language_info": {"name": "python"},
    }
    return nb


def convert_cells(parsed: list, chapter: Chapter, solutions: str):
    """The cells of a chapter after its header: (cells, title, install cell or None).

    A gated solution (``solution-start`` ... ``solution-end``) may span cells:
    everything between the gates is left out of the student set; in the
    teacher set its text is folded and its code cells collapsed.
    """
    cells, title, install, gate = [], None, None, None
    for item in parsed:
        if not isinstance(item, list):
            if install is None and INSTALL_MARK in item.source:
                install = item
            elif gate is None:
                hidden = bool(
                    {"hide-input", "remove-cell", "remove-input"}
                    & set(item.metadata.get("tags", []))
                )
                cells.append(_code_cell(item, hidden))
                cells += _caption_cells(item, chapter)
            elif solutions == "teacher":
                cells.append(_code_cell(item, hidden=True))
            continue
        pieces, buffer = [], []
        for block in item:
            if isinstance(block, Directive) and block.name in (
                "solution-start",
                "solution-end",
            ):
                pieces.append((gate, render(buffer, chapter, solutions)))
                buffer = []
                gate = (
                    solution_title(block.arg, chapter)
                    if block.name == "solution-start"
                    else None
                )
                continue
            if (
                title is None
                and isinstance(block, str)
                and (match := HEADING.match(block))
            ):
                if len(match["hashes"]) == 1:
                    title = chapter.inline(match["title"])
                    continue
            buffer.append(block)
        pieces.append((gate, render(buffer, chapter, solutions)))
        for gated, text in pieces:
            if not text.strip() or (gated and solutions == "student"):
                continue
            if solutions == "student":
                text = SOLUTIONS_NOTE.sub(
                    STUDENT_NOTE.format(chapter.link(chapter.docname)), text
                )
            cells.append(_markdown_cell(details(gated, text) if gated else text))
    return cells, title or _humanise(Path(chapter.docname).name), install


def write_sets(
    out: Path,
    chapters: list[Path] | None = None,
    sets=SETS,
    cache_dir: Path | None = None,
) -> list[Path]:
    """Write the reader notebooks of ``chapters`` as ``out/<set>/<part>/<name>.ipynb``.

    Parameters
    ----------
    out : Path
        The output folder.
    chapters : list of Path, optional
        MyST sources (default: every chapter of ``_toc.yml``).
    sets : sequence of {"student", "teacher"}
        Which sets to write.
    cache_dir : Path, optional
        The jupyter-cache to read glued values from (default: the book's).

    Returns
    -------
    list of Path
        The notebooks written.
    """
    sets = tuple(sets)
    if not sets or any(s not in SETS for s in sets):
        raise _bad_argument("sets", sets, f"a non-empty selection of {SETS}")
    chapters = [Path(p).resolve() for p in (chapters or nbcache.book_notebooks())]
    outside = [str(p) for p in chapters if not p.is_relative_to(nbcache.NOTEBOOKS)]
    if outside:
        raise _bad_argument(
            "chapters", outside, f"MyST sources under {nbcache.NOTEBOOKS}"
        )
    written = []
    for md_path in chapters:
        glued = glue_values(md_path, cache_dir)
        rel = md_path.relative_to(nbcache.NOTEBOOKS).with_suffix(".ipynb")
        for solutions in sets:
            path = Path(out) / solutions / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(convert(md_path, solutions, glued=glued), path)
            written.append(path)
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.reader_notebooks", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    parser.add_argument("--set", choices=(*SETS, "both"), default="both", dest="which")
    parser.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="jupyter-cache folder (default: the book's)",
    )
    parser.add_argument(
        "chapters", nargs="*", type=Path, help="MyST sources (default: every chapter)"
    )
    args = parser.parse_args(argv)
    sets = SETS if args.which == "both" else (args.which,)
    written = write_sets(args.out, args.chapters or None, sets, args.cache)
    print(f"reader_notebooks: wrote {len(written)} notebook(s) under {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
