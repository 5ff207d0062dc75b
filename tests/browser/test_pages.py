"""Open every page of the built book in headless Chromium, offline, and check it.

On every page: math is typeset (no raw ``\\(`` or ``$$`` left in the text),
every image loaded, every internal link points at an existing file and anchor,
no output cell shows a traceback, widgets rendered, nothing was fetched from
the network (every request leaving ``file://`` is blocked and reported), and
nothing scrolls sideways: no code cell and no output table is wider than its
column in the 1280-pixel-wide window, and no element of the page reaches past
the text column unless it sits in a box that scrolls (a page that fails this
leaves a screenshot, scrolled to the first offender, in
``_build/screenshots/overflow/``). Screenshots of the landing page and of a
notebook page go to ``_build/screenshots/``.

What a reader sees, checked as text and pixels:

* no MyST source left unparsed: no directive fence (```` ```{name} ```` or
  ``:::{name}``) and no ``{role}`` in the text (a fence whose title holds a
  backtick is not a fence for CommonMark, and everything after it turns into
  literal text and code blocks), no ``$...$`` or ``\\begin{`` outside typeset
  math;
* no output flood: an output a reader sees without opening anything holds at
  most :data:`MAX_OUTPUT_LINES` lines of text or table rows, shows no
  truncated pandas frame ("88 rows × 5 columns") and no stray object repr
  (``<matplotlib.legend.Legend at 0x...>``, ``[Text(0.5, 1.0, 'title')]``);
  longer outputs go into a collapsed dropdown (the ``hide-output`` tag) or
  become a compact table;
* no plumbing in an output (a build path, ``Settings(...)``, a missing value
  shown as ``NaN``, a full run "not yet published") and no words about the
  making of the book in its prose ("the reading notes", "the extracted
  text", "once they have been published");
* figure text at least :data:`MIN_TEXT_PX` pixels high: a figure shrunk to
  the column loses its text size in proportion, and its smallest text, the
  house style's :data:`calibtut.plots.MIN_FONT_PT` points at the PNG's
  recorded dpi, times the rendered width over the natural width, must stay
  legible.
* at a phone's width (:data:`PHONE_WIDTH` pixels), no table header breaks
  inside a word: a header cell narrower than its longest word would show that
  word a few letters (or one letter) per line.

Run by ``python3 tasks.py test`` after the book build, as
``pytest tests/browser --book-html _build/html``. Uses Debian's
``/usr/bin/chromium`` (``apt-get install chromium``); never ``playwright install``.
"""

from __future__ import annotations

import base64
import io
import re
from functools import cache
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from PIL import Image

from calibtut.plots import MIN_FONT_PT

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SKIP_DIRS = {"_static", "_sources", "_images", "_downloads", "_panels_static"}
RAW_MATH = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$")
TRACEBACK = "Traceback (most recent call last)"
#: A MyST directive fence, a role, or LaTeX source left as text by the parser.
DIRECTIVE_FENCE = re.compile(r"(?:`{3,}|:{3,})\s*\{[a-z][\w:-]*\}")
DIRECTIVE_FENCE_LINE = re.compile(r"^\s*(?:`{3,}|:{3,})\s*\{[a-z][\w:-]*\}", re.MULTILINE)
ROLE = re.compile(r"\{[a-z]+(?::[a-z-]+)*\}(?=[`\w~<])")
RAW_TEX = re.compile(r"\\begin\{|(?<![\w$])\$[^$\s][^$\n]*\$(?![\w$])")
#: Longest output (text lines or table rows) a reader sees without opening a dropdown.
MAX_OUTPUT_LINES = 40
#: Smallest figure text, in CSS pixels, once the figure is shrunk to its column.
MIN_TEXT_PX = 9.0
#: The width of a phone's window (CSS pixels) at which table headers are checked.
PHONE_WIDTH = 390
#: How a figure's PNG inlined in an HTML output begins.
PNG_DATA = "data:image/png;base64,"

#: Text of the page outside code, scripts and typeset math.
VISIBLE_TEXT_JS = """() => {
  const body = document.body.cloneNode(true);
  body.querySelectorAll('pre, code, script, style, textarea, mjx-container, .highlight, .MathJax')
      .forEach(e => e.remove());
  return body.innerText;
}"""

#: Prose of the page (notebook cells left out) with its literal blocks and typeset math
#: removed and its inline code replaced by a marker, and its literal blocks that have no
#: language on their own.
PROSE_JS = """() => {
  const body = (document.querySelector('article.bd-article') || document.body).cloneNode(true);
  body.querySelectorAll('div.cell, script, style, textarea, mjx-container, .MathJax, .headerlink')
      .forEach(e => e.remove());
  // blocks without a language: what a broken fence leaves
  const blocks = [...body.querySelectorAll('div.highlight-default pre')].map(e => e.textContent);
  body.querySelectorAll('pre, .highlight').forEach(e => e.remove());
  body.querySelectorAll('code').forEach(e => e.replaceWith('`code`'));  // a role's target
  return {text: body.textContent, blocks: blocks};
}"""

#: Outputs a reader sees without opening anything (each with its longest text or table),
#: and every output's text for stray reprs and truncated frames.
OUTPUTS_SEEN_JS = """() => {
  const out = [];
  document.querySelectorAll('div.cell div.cell_output').forEach(o => {
    const cell = o.closest('div.cell');
    const input = cell.querySelector('div.cell_input pre');
    const where = (input ? input.textContent.trim().split('\\n').slice(-1)[0] : '').slice(0, 60);
    let lines = 0;
    o.querySelectorAll('pre').forEach(p => { lines = Math.max(lines, p.textContent.trimEnd().split('\\n').length); });
    o.querySelectorAll('table').forEach(t => { lines = Math.max(lines, t.querySelectorAll('tr').length); });
    out.push({where: where, seen: o.checkVisibility(), lines: lines, text: o.innerText || o.textContent});
  });
  return out;
}"""

#: Every figure in an output: where its PNG is, its natural and rendered widths.
FIGURES_JS = """() => [...document.querySelectorAll('div.cell_output img')].map(img => {
  const cell = img.closest('div.cell');
  const input = cell && cell.querySelector('div.cell_input pre');
  return {src: img.src, natural: img.naturalWidth, rendered: img.getBoundingClientRect().width,
          where: (input ? input.textContent.trim().split('\\n')[0] : img.alt || '').slice(0, 60)};
})"""

IMAGES_JS = """async () => {
  const imgs = [...document.images];
  imgs.forEach(i => { i.loading = 'eager'; });
  await Promise.all(imgs.map(i => i.complete ? null :
      new Promise(r => { i.addEventListener('load', r); i.addEventListener('error', r);
                         setTimeout(r, 5000); })));
  return imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.getAttribute('src'));
}"""

MATHJAX_JS = """async () => {
  if (!window.MathJax || !window.MathJax.startup || !window.MathJax.startup.promise) return null;
  await window.MathJax.startup.promise;
  return true;
}"""

OUTPUTS_JS = """() => {
  const cells = [...document.querySelectorAll('.cell_output')];
  const bad = cells.filter(c => c.querySelector('.traceback, .output.error')
                                || c.innerText.includes('Traceback (most recent call last)'));
  return bad.map(c => c.innerText.slice(0, 300));
}"""

WIDGETS_JS = """async () => {
  const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]');
  if (!views.length) return null;
  for (let t = 0; t < 100; t++) {
    const rendered = document.querySelectorAll('.jupyter-widgets, .widget-slider, .lm-Widget').length;
    if (rendered >= views.length) return [views.length, rendered];
    await new Promise(r => setTimeout(r, 100));
  }
  return [views.length, document.querySelectorAll('.jupyter-widgets, .widget-slider, .lm-Widget').length];
}"""


#: Code cells and output tables wider than their column, scrolled into view in order.
OVERFLOW_JS = """() => {
  document.querySelectorAll('div.cell details').forEach(d => { d.open = true; });  // hide-input code too
  const bad = [];
  const label = el => (el.textContent || '').trim().split('\\n')[0].slice(0, 60);
  document.querySelectorAll('div.cell div.cell_input pre').forEach(pre => {
    const excess = pre.scrollWidth - pre.clientWidth;
    if (excess > 1) bad.push({el: pre, what: `code cell ${excess}px wider than its column: ${label(pre)}`});
  });
  document.querySelectorAll('div.cell_output table').forEach(table => {
    const column = table.closest('div.cell') || table.parentElement;
    const excess = Math.round(table.getBoundingClientRect().width - column.clientWidth);
    if (excess > 1) bad.push({el: table, what: `output table ${excess}px wider than its column: ${label(table)}`});
  });
  const column = document.querySelector('article.bd-article');
  if (column) {
    const edge = column.getBoundingClientRect().right + 1;
    const scrolls = el => ['auto', 'scroll', 'hidden', 'clip'].includes(getComputedStyle(el).overflowX);
    const past = new Set();
    column.querySelectorAll('*').forEach(el => {
      const r = el.getBoundingClientRect();
      if (r.width === 0 || r.right <= edge) return;
      for (let a = el.parentElement; a && a !== column; a = a.parentElement) {
        if (past.has(a) || (scrolls(a) && a.getBoundingClientRect().right <= edge)) return;
      }
      past.add(el);
      bad.push({el: el, what: `<${el.tagName.toLowerCase()} class="${el.className}"> reaches ${Math.round(r.right - edge)}px past the text column: ${label(el)}`});
    });
  }
  const page = document.scrollingElement;
  if (page.scrollWidth > page.clientWidth + 1)
    bad.push({el: document.body, what: `the page is ${page.scrollWidth - page.clientWidth}px wider than the window`});
  if (bad.length) bad[0].el.scrollIntoView({block: 'center'});
  return bad.map(b => b.what);
}"""


#: Words of table headers that the browser broke over two lines or more. A word is a run of
#: characters between spaces, hyphens, dashes and slashes (where a line may break); it is
#: broken when its text boxes lie on more than one line. Dropdowns are opened first.
BROKEN_HEADERS_JS = """() => {
  const column = document.querySelector('article.bd-article') || document.body;
  column.querySelectorAll('details').forEach(d => { d.open = true; });
  const bad = [];
  column.querySelectorAll('th').forEach(th => {
    const cell = th.getBoundingClientRect();
    if (cell.width === 0 || cell.height === 0) return;
    const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const word of node.textContent.matchAll(/[^\\s\\-\\/\u2010-\u2014]+/g)) {
        const range = document.createRange();
        range.setStart(node, word.index);
        range.setEnd(node, word.index + word[0].length);
        const boxes = [...range.getClientRects()].filter(b => b.width > 0).sort((a, b) => a.top - b.top);
        const lines = boxes.filter((b, i) => i === 0 || b.top - boxes[i - 1].top > b.height / 2).length;
        if (lines > 1)
          bad.push(`"${word[0]}" breaks over ${lines} lines in a ${Math.round(cell.width)}px header cell`);
      }
    }
  });
  return [...new Set(bad)];
}"""


def book_pages(html: Path) -> list[Path]:
    """Every HTML page of the book (not the theme's static files)."""
    return sorted(
        p for p in html.rglob("*.html") if not (set(p.relative_to(html).parts[:-1]) & SKIP_DIRS)
    )


def html_option(config) -> Path:
    """``--book-html``, by default ``_build/html`` of the repository."""
    return Path(config.getoption("--book-html") or config.rootpath / "_build" / "html").resolve()


def pytest_generate_tests(metafunc):
    if "page_path" in metafunc.fixturenames:
        html = html_option(metafunc.config)
        pages = book_pages(html) if html.is_dir() else []
        metafunc.parametrize("page_path", pages, ids=[str(p.relative_to(html)) for p in pages])


@pytest.fixture(scope="session")
def html_dir(pytestconfig) -> Path:
    html = html_option(pytestconfig)
    assert (html / "index.html").exists(), f"no built book in {html} (run `python3 tasks.py book`)"
    return html


@pytest.fixture(scope="session")
def browser():
    assert CHROMIUM.exists(), "Debian chromium is missing: apt-get install -y chromium"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def context(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.blocked = []

    def route(route):
        url = route.request.url
        if url.startswith(("file:", "data:", "blob:", "about:")):
            route.continue_()
        else:
            context.blocked.append(url)
            route.abort()

    context.route("**/*", route)
    yield context
    context.close()


@cache
def anchors(path: Path) -> frozenset[str]:
    """The ids and names defined in an HTML file."""
    text = path.read_text(encoding="utf8", errors="replace")
    return frozenset(re.findall(r"""\b(?:id|name)\s*=\s*["']([^"']+)["']""", text))


def broken_links(hrefs: list[str], html: Path) -> list[str]:
    """The internal links among ``hrefs`` whose file or anchor does not exist."""
    problems = []
    for href in sorted(set(hrefs)):
        parts = urlsplit(href)
        if parts.scheme != "file":
            continue
        target = Path(unquote(parts.path))
        if target.is_dir():
            target = target / "index.html"
        if not target.exists():
            problems.append(f"{href} (no such file)")
            continue
        fragment = unquote(parts.fragment)
        if fragment and target.suffix == ".html" and fragment not in anchors(target):
            problems.append(f"{href} (no anchor #{fragment})")
        if html not in target.resolve().parents:
            problems.append(f"{href} (outside the book)")
    return problems


REDIRECT = re.compile(r"""<meta\s+http-equiv=["']Refresh["']\s+content=["']\d+;\s*url=([^"']+)["']""", re.IGNORECASE)


def check_page(page_obj, page_path: Path, html: Path) -> list[str]:
    redirect = REDIRECT.search(page_path.read_text(encoding="utf8", errors="replace"))
    if redirect:  # the root index.html only forwards to the landing page
        target = (page_path.parent / unquote(redirect.group(1))).resolve()
        return [] if target.is_file() else [f"redirects to a missing page: {redirect.group(1)}"]
    problems = []
    errors = []
    page_obj.on("pageerror", lambda exc: errors.append(str(exc)))
    failed = []
    page_obj.on("requestfailed", lambda req: failed.append(req.url) if req.url.startswith("file:") else None)
    page_obj.goto(page_path.as_uri(), wait_until="load")
    if page_obj.evaluate(MATHJAX_JS) is None and page_obj.query_selector(".math"):
        problems.append("the page has math but MathJax is not loaded")
    raw = RAW_MATH.findall(page_obj.evaluate(VISIBLE_TEXT_JS))
    if raw:
        problems.append(f"untypeset math delimiters in the text: {sorted(set(raw))}")
    for src in page_obj.evaluate(IMAGES_JS):
        problems.append(f"image did not load: {src}")
    hrefs = page_obj.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
    problems += [f"broken link: {p}" for p in broken_links(hrefs, html)]
    for text in page_obj.evaluate(OUTPUTS_JS):
        problems.append(f"traceback in an output cell: {text!r}")
    widgets = page_obj.evaluate(WIDGETS_JS)
    if widgets is not None and widgets[1] < widgets[0]:
        problems.append(f"widgets not rendered: {widgets[0]} views, {widgets[1]} rendered")
    problems += [f"JavaScript error: {e}" for e in errors]
    problems += [f"local resource failed to load: {u}" for u in failed]
    prose = page_obj.evaluate(PROSE_JS)
    problems += unparsed_markup(prose)
    problems += process_words(prose)
    problems += output_floods(page_obj.evaluate(OUTPUTS_SEEN_JS))
    problems += overflow(page_obj, page_path, html)  # opens the hide-input dropdowns
    problems += small_figure_text(page_obj.evaluate(FIGURES_JS))
    problems += broken_headers(page_obj)  # resizes the window to a phone's
    problems += [f"at {PHONE_WIDTH} px: {p}" for p in small_figure_text(page_obj.evaluate(FIGURES_JS))]
    return problems


def broken_headers(page_obj, width: int = PHONE_WIDTH) -> list[str]:
    """Table header words broken over lines once the window is ``width`` pixels wide."""
    page_obj.set_viewport_size({"width": width, "height": 844})
    found = page_obj.evaluate(BROKEN_HEADERS_JS)
    shown = [f"table header broken inside a word at {width} px: {what}" for what in found[:10]]
    if len(found) > 10:
        shown.append(f"... and {len(found) - 10} more broken header words at {width} px")
    return shown


def unparsed_markup(prose: dict) -> list[str]:
    """MyST or LaTeX source that reached the reader as text."""
    fences = DIRECTIVE_FENCE.findall(prose["text"])
    for block in prose["blocks"]:  # a literal block may quote a fence inside a line (a doctest)
        fences += DIRECTIVE_FENCE_LINE.findall(block)
    problems = [f"directive fence left as text: {fence.strip()!r}" for fence in fences]
    problems += [f"role left as text: {role!r}" for role in ROLE.findall(prose["text"])]
    problems += [f"LaTeX source left as text: {tex[:60]!r}" for tex in RAW_TEX.findall(prose["text"])]
    return sorted(set(problems))


#: Plumbing in an output: a build path, the settings' constructor call, a missing value
#: shown as NaN (the book shows "–", :mod:`calibtut.run.display`), a run that is missing.
PLUMBING = re.compile(r"PosixPath\(|\bSettings\(|\bNaN\b|not yet published")
#: Words about how the book was made, which a reader of the prose should not meet.
PROCESS_WORDS = re.compile(r"until it is published|once they have been published|extracted text|reading notes",
                           re.IGNORECASE)

#: The repr of an object a cell returned by accident (``ax.legend()``, ``ax.set(...)``).
OBJECT_REPR = re.compile(r"<[\w.]+ (?:object )?at 0x[0-9a-fA-F]+>|\bText\([-\d.e]+, [-\d.e]+, '")
TRUNCATED_FRAME = re.compile(r"\b\d+ rows × \d+ columns\b")


def output_floods(outputs: list[dict]) -> list[str]:
    """Outputs too long to read in place, truncated frames and stray object reprs."""
    problems = []
    for out in outputs:
        where = f"(cell ending {out['where']!r})"
        if out["seen"] and out["lines"] > MAX_OUTPUT_LINES:
            problems.append(f"output of {out['lines']} lines or rows shown open, over {MAX_OUTPUT_LINES} "
                            f"{where}: collapse it (hide-output) or shorten it")
        for found in sorted(set(TRUNCATED_FRAME.findall(out["text"]))):
            problems.append(f"truncated table in an output ({found}) {where}")
        for found in sorted(set(OBJECT_REPR.findall(out["text"]))):
            problems.append(f"object repr printed in an output: {found} {where}")
        for found in sorted(set(PLUMBING.findall(out["text"]))):
            problems.append(f"plumbing in an output: {found!r} {where}")
    return problems


def process_words(prose: dict) -> list[str]:
    """Phrases about the making of the book left in its prose."""
    return [f"process words in the prose: {found!r}" for found in sorted(set(PROCESS_WORDS.findall(prose["text"])))]


def png_dpi(src: str) -> float | None:
    """The dpi a PNG records (matplotlib writes its figure dpi), or None.

    The PNG is a file of the book, or a ``data:image/png;base64,`` URI (the
    two forms of a figure of side-by-side panels, ``calibtut.run.display``).
    """
    parts = urlsplit(src)
    path = Path(unquote(parts.path))
    if parts.scheme == "data" and src.startswith(PNG_DATA):
        source = io.BytesIO(base64.b64decode(src[len(PNG_DATA):]))
    elif parts.scheme == "file" and path.suffix.lower() == ".png" and path.is_file():
        source = path
    else:
        return None
    with Image.open(source) as image:
        dpi = image.info.get("dpi")
    return float(dpi[0]) if dpi else None


def small_figure_text(figures: list[dict]) -> list[str]:
    """Figures whose smallest text falls under :data:`MIN_TEXT_PX` pixels as rendered."""
    problems = []
    for fig in figures:
        dpi = png_dpi(fig["src"])
        if dpi is None or not fig["natural"] or not fig["rendered"]:
            continue
        scale = fig["rendered"] / fig["natural"]
        px = MIN_FONT_PT / 72 * dpi * scale
        if px < MIN_TEXT_PX:
            inches = fig["natural"] / dpi
            problems.append(
                f"figure text {px:.1f}px high, under {MIN_TEXT_PX:g}px: a {inches:.1f}-inch-wide figure "
                f"shrunk to {scale:.0%} ({fig['where']!r})"
            )
    return problems


def overflow(page_obj, page_path: Path, html: Path) -> list[str]:
    """What scrolls sideways on the page; a screenshot of the first offender when anything does."""
    found = page_obj.evaluate(OVERFLOW_JS)
    if not found:
        return []
    out = html.parent / "screenshots" / "overflow"
    out.mkdir(parents=True, exist_ok=True)
    shot = out / ("-".join(page_path.relative_to(html).with_suffix("").parts) + ".png")
    page_obj.screenshot(path=str(shot))
    return [f"scrolls sideways at 1280 px ({shot.relative_to(html.parent)}): {what}" for what in found]


def test_page(context, html_dir, page_path):
    before = len(context.blocked)
    page = context.new_page()
    try:
        problems = check_page(page, page_path, html_dir)
    finally:
        page.close()
    problems += [f"network request (the book must work offline): {u}" for u in context.blocked[before:]]
    assert not problems, f"{page_path.relative_to(html_dir)}:\n  " + "\n  ".join(problems)


def first_notebook_page(html: Path) -> Path | None:
    pages = sorted((html / "notebooks").rglob("*.html")) if (html / "notebooks").is_dir() else []
    with_widgets = [p for p in pages if "application/vnd.jupyter.widget-view+json" in p.read_text(encoding="utf8")]
    return (with_widgets or pages or [None])[0]


def test_screenshots(context, html_dir):
    out = html_dir.parent / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    landing = html_dir / "book" / "intro.html"
    notebook = first_notebook_page(html_dir)
    assert landing.exists(), "no landing page book/intro.html"
    assert notebook is not None, "no notebook page in the book"
    page = context.new_page()
    try:
        page.goto(landing.as_uri(), wait_until="load")
        page.evaluate(MATHJAX_JS)
        page.screenshot(path=str(out / "landing.png"))
        page.goto(notebook.as_uri(), wait_until="load")
        page.evaluate(MATHJAX_JS)
        page.evaluate(WIDGETS_JS)
        page.screenshot(path=str(out / "notebook.png"))
        widget = page.query_selector(".widget-slider, .jupyter-widgets")
        if widget is not None:
            widget.scroll_into_view_if_needed()
            page.screenshot(path=str(out / "notebook-widget.png"))
    finally:
        page.close()
    for name in ("landing.png", "notebook.png"):
        assert (out / name).stat().st_size > 10_000, f"{name} looks empty"


def test_reader_checks_catch_the_defects_they_target(tmp_path):
    """Each text and pixel check fails on a defect of the kind issue 31 found."""
    broken = "Theorem 1 of {cite:t}`code`, for\n```{prf:theorem} Theorem 1\nwith $\\psi$ the digamma"
    assert len(unparsed_markup({"text": broken, "blocks": ["\n```{prf:proof}\nLet $e$"]})) == 4
    doctest = '>>> _ = p.write_text("# Title\\n\\n```{code-cell} ipython3\\nx = 1\\n```\\n")'
    assert unparsed_markup({"text": "labels in {0, 1}, see {x} below", "blocks": [doctest]}) == []
    outputs = [
        {"where": "table", "seen": True, "lines": MAX_OUTPUT_LINES + 1, "text": ""},
        {"where": "collapsed", "seen": False, "lines": 200, "text": "88 rows × 5 columns"},
        {"where": "legend", "seen": True, "lines": 1, "text": "<matplotlib.legend.Legend at 0x7fe928bb6610>"},
        {"where": "set", "seen": True, "lines": 1, "text": "[Text(0.5, 0, 'angle'), Text(0, 0.5, 'ECE')]"},
        {"where": "path", "seen": True, "lines": 1, "text": "PosixPath('/tmp/x/_build/runs/t.csv')"},
        {"where": "settings", "seen": True, "lines": 1, "text": "Settings(profile='ci', n=200)"},
        {"where": "nan", "seen": True, "lines": 2, "text": "method\tece\nTemp\tNaN"},
        {"where": "fine", "seen": True, "lines": MAX_OUTPUT_LINES, "text": "0.25, nan-safe, –"},
    ]
    found = output_floods(outputs)
    assert len(found) == 8 and not [p for p in found if "'fine'" in p]
    assert process_words({"text": "The reading notes list seventeen claims"}) == [
        "process words in the prose: 'reading notes'"]
    assert process_words({"text": "Seventeen claims, typed once"}) == []
    assert [p for p in found if "'collapsed'" in p] == [
        "truncated table in an output (88 rows × 5 columns) (cell ending 'collapsed')"]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figures = []
    for width in (15, 7):
        fig = plt.figure(figsize=(width, 3))
        fig.savefig(tmp_path / f"{width}.png")
        plt.close(fig)
        figures.append({"src": (tmp_path / f"{width}.png").as_uri(), "natural": width * 100, "rendered": 690,
                        "where": f"{width} inches"})
    assert png_dpi(figures[0]["src"]) == pytest.approx(100, abs=0.01)
    assert [p.split("(")[-1] for p in small_figure_text(figures)] == ["'15 inches')"]
    inline = PNG_DATA + base64.b64encode((tmp_path / "15.png").read_bytes()).decode("ascii")
    assert png_dpi(inline) == pytest.approx(100, abs=0.01)
    assert png_dpi("data:image/svg+xml;base64,PHN2Zy8+") is None


def test_header_check_finds_a_header_broken_inside_a_word(browser):
    """The phone-width check flags a header that wraps inside a word, not one that wraps between them."""
    table = ('<article class="bd-article"><table style="width: 1px"><tr>'
             '<th style="overflow-wrap: {wrap}">within_bin_variance of a bin</th><td>0.25</td></tr>'
             '</table></article>')
    page = browser.new_page()
    try:
        page.set_content(table.format(wrap="anywhere"))
        found = broken_headers(page)
        assert any('"within_bin_variance" breaks over' in problem for problem in found), found
        page.set_content(table.format(wrap="normal"))
        assert broken_headers(page) == []
    finally:
        page.close()
