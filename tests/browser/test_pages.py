"""Open every page of the built book in headless Chromium, offline, and check it.

On every page: math is typeset (no raw ``\\(`` or ``$$`` left in the text),
every image loaded, every internal link points at an existing file and anchor,
no output cell shows a traceback, widgets rendered, nothing was fetched from
the network (every request leaving ``file://`` is blocked and reported), and
nothing scrolls sideways: no code cell and no output table is wider than its
column in the 1280-pixel-wide window (a page that fails this leaves a
screenshot, scrolled to the first offender, in
``_build/screenshots/overflow/``). Screenshots of the landing page and of a
notebook page go to ``_build/screenshots/``.

Run by ``python3 tasks.py test`` after the book build, as
``pytest tests/browser --book-html _build/html``. Uses Debian's
``/usr/bin/chromium`` (``apt-get install chromium``); never ``playwright install``.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

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

#: Text of the page outside code, scripts and typeset math.
VISIBLE_TEXT_JS = """() => {
  const body = document.body.cloneNode(true);
  body.querySelectorAll('pre, code, script, style, textarea, mjx-container, .highlight, .MathJax')
      .forEach(e => e.remove());
  return body.innerText;
}"""

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
  if (bad.length) bad[0].el.scrollIntoView({block: 'center'});
  return bad.map(b => b.what);
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


@lru_cache(maxsize=None)
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


REDIRECT = re.compile(r"""<meta\s+http-equiv=["']Refresh["']\s+content=["']\d+;\s*url=([^"']+)["']""", re.I)


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
    problems += overflow(page_obj, page_path, html)
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
