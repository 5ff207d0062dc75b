"""Sphinx glue for the calibtut book (loaded through ``_config.yml``).

It does seven things:

* writes one API page per public module of ``calibtut`` into ``book/api/``
  (ignored by git; ``_toc.yml`` lists it with a glob) at every build, so a
  module added later appears in the API reference without any edit. Each object
  is documented once, under the public module that defines it, and a reference
  written through a re-export (``calibtut.run.save_table``) still resolves;
* teaches nitpicky mode (``-n``) which references cannot resolve offline
  (Python built-ins, the standard library and third-party packages: there is
  no intersphinx without network), so that every remaining unresolved
  reference is a real error;
* repairs the scripts of each page: removes the inline scripts Jupyter Book
  1.0.4 puts twice on every page (a JavaScript error in the browser) and lets
  the offline widget manager find its fonts and MathJax 3;
* keeps napoleon from reading ``#: A phrase: text`` on a constant as a type
  (counted with the nitpicky item above);
* stops the build early with a clear message when the vendored widget
  JavaScript is missing (``python3 tasks.py book`` downloads it);
* marks the pages of the chapters that failed to execute: ``python3 tasks.py
  book`` stores such a chapter in the execution cache with its outputs up to
  the error and lists it in ``_build/failed-chapters.json``; each listed page
  gets an admonition after its title (which cell raised what, and the runner
  command that reproduces it) and the build a warning, so that a strict
  (``-W``) build fails on it;
* points a chapter's Colab and Binder buttons and its ``.ipynb`` download at
  its reader notebook (``tools/reader_notebooks.py``) when ``python3 tasks.py
  book`` wrote them to ``_build/reader``: the download at the student copy,
  which the build copies into the site's ``reader/`` folder, the launch
  buttons at the same file on the ``reader-notebooks`` branch, which the
  book workflow publishes.
"""

from __future__ import annotations

import builtins
import hashlib
import importlib
import inspect
import json
import pkgutil
import re
import shutil
import sys
from pathlib import Path

from docutils import nodes
from sphinx.errors import ConfigError
from sphinx.util import logging
from sphinx_exercise.nodes import solution_node

LOGGER = logging.getLogger(__name__)

API_FOLDER = "book/api"
#: id(object) -> its documented full name, rebuilt once per build (see _documented_index).
_DOCUMENTED: dict[int, str] = {}
PACKAGE = "calibtut"

#: Third-party packages whose objects appear in docstring types and signatures.
EXTERNAL_PACKAGES = (
    "numpy", "np", "scipy", "pandas", "pd", "torch", "matplotlib", "mpl",
    "sklearn", "IPython", "ipywidgets", "nbformat", "papermill", "jupytext",
    "collections", "typing", "pathlib", "os", "datetime", "numbers",
    "concurrent", "contextlib", "json", "random", "re", "io", "abc",
)

#: Words that numpydoc-style type descriptions use and that are not objects.
TYPE_WORDS = (
    "array_like", "array-like", "optional", "default", "callable", "scalar",
    "sequence", "iterable", "mapping", "path-like", "file-like", "str or None",
)


def public_modules(package: str = PACKAGE) -> list[str]:
    """Names of the public modules of ``package`` (no component starts with ``_``)."""
    root = importlib.import_module(package)
    names = [package]
    for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        names.append(info.name)
    return sorted(names)


def _documented_members(module) -> list[str]:
    """Members autodoc shows for ``module`` with ``:members:``."""
    explicit = getattr(module, "__all__", None)
    if explicit is not None:
        return list(explicit)
    return [
        name
        for name, obj in vars(module).items()
        if not name.startswith("_")
        and (inspect.isfunction(obj) or inspect.isclass(obj))
        and getattr(obj, "__module__", None) == module.__name__
    ]


def _home(obj, exporters: list[str], public: set[str]) -> str:
    """The module under which ``obj`` is documented: where it is defined, when
    that module is public; for module data, the deepest module exporting it;
    else the first public module that exports it."""
    defined = getattr(obj, "__module__", None)
    if defined in public:
        return defined
    if not (inspect.isfunction(obj) or inspect.isclass(obj)):
        # Module data (dicts, tuples, strings) carry no __module__: its
        # ``#:`` doc comment sits in the deepest module that exports it.
        return max(exporters, key=lambda name: name.count("."))
    return exporters[0]


def api_pages(package: str = PACKAGE) -> dict[str, str]:
    """One reStructuredText page per public module of ``package``: ``{module name: text}``.

    Each object is documented once, under its home module (see ``_home``);
    other paths to it (a package re-exporting it) resolve through
    :func:`_resolve_alias`.
    """
    names = public_modules(package)
    public = set(names)
    modules = {name: importlib.import_module(name) for name in names}
    exporters: dict[int, list[str]] = {}
    for name, module in modules.items():
        for member in _documented_members(module):
            obj = getattr(module, member, None)
            if obj is not None:
                exporters.setdefault(id(obj), []).append(name)
    pages = {}
    for name, module in modules.items():
        exclude = sorted(
            member
            for member in _documented_members(module)
            if (obj := getattr(module, member, None)) is not None
            and _home(obj, exporters[id(obj)], public) != name
        )
        options = ["   :members:"]
        if exclude:
            options.append("   :exclude-members: " + ", ".join(exclude))
        title = f"``{name}``"
        pages[name] = "\n".join(
            [
                ".. Generated by book/_ext/calibtut_book.py at every build; do not edit.",
                "",
                title,
                "=" * len(title),
                "",
                f".. automodule:: {name}",
                *options,
                "",
            ]
        )
    return pages


def write_api_pages(srcdir: Path) -> None:
    """Write ``book/api/<module>.rst`` for every public module, removing stale pages.

    The pages are reStructuredText, not MyST, because docstrings use rST
    footnotes (``.. [2]``) that MyST pages reject.
    """
    folder = srcdir / API_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    pages = api_pages()
    for stale in [*folder.glob("*.md"), *folder.glob("*.rst")]:
        if stale.suffix != ".rst" or stale.stem not in pages:
            stale.unlink()
    for name, text in pages.items():
        path = folder / f"{name}.rst"
        if not path.exists() or path.read_text(encoding="utf8") != text:
            path.write_text(text, encoding="utf8")


def _documented_index(env) -> dict[int, str]:
    """``id(object) -> documented full name`` for every object of the Python domain."""
    if not _DOCUMENTED:
        for fullname in env.get_domain("py").objects:
            obj = _import_path(fullname)
            if obj is not None:
                _DOCUMENTED.setdefault(id(obj), fullname)
    return _DOCUMENTED


def _import_path(path: str):
    """The object at a dotted ``path`` (module prefix, then attributes), or None."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


def _resolve_alias(app, env, node, contnode):
    """Resolve a Python reference written with another path to a documented object.

    ``calibtut.run.save_table`` (a re-export) and ``save_table`` in the docstring of
    ``calibtut.run`` (or of a module below it) both reach the object documented as
    ``calibtut.run.artifacts.save_table``.
    """
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip("~.")
    module, cls = node.get("py:module"), node.get("py:class")
    candidates = []
    if module and cls:
        candidates.append(f"{module}.{cls}.{target}")
    if module:
        # the current module, then the packages above it
        parts = module.split(".")
        candidates += [".".join(parts[:cut] + [target]) for cut in range(len(parts), 0, -1)]
    candidates.append(target)
    if not any(c.split(".")[0] == PACKAGE for c in candidates):
        return None
    index = _documented_index(env)
    domain = env.get_domain("py")
    for candidate in candidates:
        if candidate.split(".")[0] != PACKAGE:
            continue
        obj = _import_path(candidate)
        fullname = index.get(id(obj)) if obj is not None else None
        if fullname is None:
            continue
        return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"], fullname, node, contnode)
    return None


def _forget_index(app, env, *args):
    _DOCUMENTED.clear()


def _configure(app, config):
    ignore = list(config.nitpick_ignore_regex or [])
    packages = "|".join(EXTERNAL_PACKAGES)
    ignore.append((r"py:.*", rf"({packages})(\..*)?"))
    ignore.append((r"py:.*", rf"({'|'.join(sorted(sys.stdlib_module_names))})(\..*)?"))
    ignore.append((r"py:.*", "|".join(n for n in dir(builtins) if not n.startswith("_"))))
    ignore.append((r"py:.*", "|".join(w.replace(" ", r"\s") for w in TYPE_WORDS)))
    config.nitpick_ignore_regex = ignore

    srcdir = Path(app.srcdir)
    write_api_pages(srcdir)
    missing = [
        rel
        for rel in config.nb_ipywidgets_js
        if "://" not in rel
        and not any((srcdir / static / rel).is_file() for static in config.html_static_path)
    ]
    if missing:
        raise ConfigError(
            "vendored widget JavaScript not found: "
            + ", ".join(missing)
            + " (run `python3 tasks.py book` once, it downloads them from the npm registry)"
        )


#: Inline script placed before the widget manager on pages with widgets:
#: require.js resolves the manager's own files (its fonts) from ``_static/widgets``
#: instead of the page's folder, and the manager's MathJax 2 call
#: (``MathJax.Hub.Queue``) is served by MathJax 3, which the book loads.
WIDGET_SHIM = """\
require.config({paths: {"@jupyter-widgets/html-manager/dist": "%s"}});
window.addEventListener("load", function () {
  if (window.MathJax && !window.MathJax.Hub) {
    window.MathJax.Hub = {Queue: function () {
      if (window.MathJax.typesetPromise) { window.MathJax.typesetPromise(); }
    }};
  }
});"""


def _fix_page_scripts(app, pagename, templatename, context, doctree):
    """Repair the script list of a page before it is written.

    * Drop repeated inline scripts: with Jupyter Book 1.0.4 on Sphinx 7.4 the
      inline scripts that extensions add after the builder starts
      (``const THEBE_JS_URL = ...``) reach every page twice, once with the file
      name ``None`` and once with ``''``; the second ``const`` throws.
    * On pages with widgets, put :data:`WIDGET_SHIM` before the widget manager.
    """
    scripts = context.get("script_files")
    if not isinstance(scripts, list):
        return
    seen, kept = set(), []
    for script in scripts:
        key = (getattr(script, "filename", None) or "", tuple(sorted(getattr(script, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            kept.append(script)
    for index, script in enumerate(kept):
        if str(getattr(script, "filename", "") or "").endswith("widgets/embed-amd.js"):
            folder = context["pathto"]("_static/widgets", 1)
            shim = type(script)(None, priority=script.priority, body=WIDGET_SHIM % folder)
            kept.insert(index, shim)
            break
    context["script_files"] = kept


#: What an inline type looks like: names joined by ``of``, ``or`` or commas.
TYPE_PHRASE = re.compile(r"^[\w.\[\]()]+(?:\s*,\s*[\w.\[\]()]+|\s+(?:of|or)\s+[\w.\[\]()]+)*$")


def _restore_sentence_colon(app, what, name, obj, options, lines):
    """Undo napoleon's reading of ``#: Some sentence: more text`` as a type.

    napoleon takes the text before the first colon of a data or attribute
    docstring as its type (Google style ``#: int: The count``). When that text
    is a phrase rather than a type (two plain words side by side, as in
    ``The valid profile names``), put it back in front of the description.
    """
    if what not in ("data", "attribute"):
        return
    for index in range(len(lines) - 1, -1, -1):
        if lines[index].startswith(":type: "):
            phrase = lines[index][len(":type: "):].strip()
            if not TYPE_PHRASE.match(phrase):
                del lines[index]
                while index > 0 and index - 1 < len(lines) and not lines[index - 1].strip():
                    del lines[index - 1]
                    index -= 1
                first = next((i for i, line in enumerate(lines) if line.strip()), None)
                if first is None:
                    lines.append(phrase + ":")
                else:
                    lines[first] = f"{phrase}: {lines[first].lstrip()}"
            return


def _take_over_hide_solutions(app, config):
    """Hide solutions ourselves: sphinx-exercise 1.2 drops a gated solution's start but keeps its end.

    Its own ``hide_solutions`` then fails the build on the orphaned end node, so
    the switch is read here and whole solutions are removed after the gates are
    merged (:func:`_drop_solutions`). The copy is an ``env`` value, so changing
    the switch re-reads every page.
    """
    config.calibtut_hide_solutions = bool(config.hide_solutions)
    config.hide_solutions = False


def _drop_solutions(app, doctree):
    """Remove every solution of a page when the book is built with ``hide_solutions: true``."""
    if app.config.calibtut_hide_solutions:
        for node in list(doctree.findall(solution_node)):
            node.parent.remove(node)


#: Written by ``python -m tools.nbcache execute`` beside the HTML folder: ``{docname: failure}``
#: for the chapters whose execution failed (see ``chapter_failure`` in ``tools/nbcache.py``).
FAILED_CHAPTERS = "failed-chapters.json"
#: docname -> failure of the chapters marked in this build, read once per build (see _read_failed_chapters).
_FAILED: dict[str, dict] = {}


def _read_failed_chapters(app, env, added, changed, removed):
    """Load the failure list and have every page whose failure changed since its last reading read again.

    An entry whose source changed since the execution it describes is left
    out. A chapter can fail, or pass again, with an unchanged source (a fix in
    the package), so without this Sphinx would keep its old page.
    """
    path = Path(app.outdir).parent / FAILED_CHAPTERS
    listed = json.loads(path.read_text(encoding="utf8")) if path.exists() else {}
    srcdir = Path(app.srcdir)
    _FAILED.clear()
    _FAILED.update(
        (docname, failure)
        for docname, failure in listed.items()
        if (srcdir / failure["source"]).is_file()
        and hashlib.sha256((srcdir / failure["source"]).read_bytes()).hexdigest() == failure["source_sha256"]
    )
    marked = getattr(env, "calibtut_failed", {})
    read_anyway = added | changed | removed
    return [
        docname
        for docname in env.found_docs
        if _FAILED.get(docname) != marked.get(docname) and docname not in read_anyway
    ]


def failure_admonition(failure: dict) -> nodes.admonition:
    """The marker at the top of a chapter that failed to execute.

    Parameters
    ----------
    failure : dict
        An entry of ``_build/failed-chapters.json``.

    Returns
    -------
    docutils.nodes.admonition
        A red admonition naming the cell, its line, the exception and the
        command that reproduces it; with the traceback when the page does not
        show it under the cell (a timeout, a dead kernel, a hidden output).
    """
    body = nodes.paragraph()
    summary = failure["summary"] if failure["summary"].endswith(".") else failure["summary"] + "."
    body += nodes.Text(f"This chapter failed to execute when this book was built: {summary} ")
    if failure["shown"]:
        body += nodes.Text("The outputs below stop at that cell, whose traceback is shown under it. ")
    body += nodes.Text("Reproduce it with ")
    body += nodes.literal(text=failure["command"])
    body += nodes.Text(".")
    admonition = nodes.admonition(classes=["error", "calibtut-failed-chapter"])
    admonition += nodes.title(text="This chapter failed to execute")
    admonition += body
    if not failure["shown"]:
        admonition += nodes.literal_block(text=failure["traceback"], language="none")
    return admonition


def _mark_failed_chapter(app, doctree):
    """Put the failure marker after the title of a chapter that failed to execute, and warn."""
    env = app.env
    if not hasattr(env, "calibtut_failed"):
        env.calibtut_failed = {}
    failure = _FAILED.get(env.docname)
    if failure is None:
        env.calibtut_failed.pop(env.docname, None)
        return
    env.calibtut_failed[env.docname] = failure
    LOGGER.warning(
        f"the chapter failed to execute: {failure['summary']}; reproduce it with `{failure['command']}`",
        location=env.docname,
        type="calibtut",
        subtype="failed-chapter",
    )
    section = next(doctree.findall(nodes.section), None)
    parent = section if section is not None else doctree
    at = 1 if len(parent) and isinstance(parent[0], nodes.title) else 0
    parent.insert(at, failure_admonition(failure))


def _purge_failed_mark(app, env, docname):
    getattr(env, "calibtut_failed", {}).pop(docname, None)


def _merge_failed_marks(app, env, docnames, other):
    if not hasattr(env, "calibtut_failed"):
        env.calibtut_failed = {}
    env.calibtut_failed.update(
        (docname, failure) for docname, failure in getattr(other, "calibtut_failed", {}).items() if docname in docnames
    )


#: The folder of the reader notebooks: under the build folder (``_build/reader``), in the site
#: and on :data:`READER_BRANCH`, each with the sets ``student/`` and ``teacher/``.
READER_FOLDER = "reader"
#: The branch .github/workflows/book.yml publishes: the commit the book was built from plus
#: ``reader/``, so that Colab opens the notebooks and Binder builds them with the package.
READER_BRANCH = "reader-notebooks"


def reader_notebook(pagename: str, solutions: str = "student") -> str | None:
    """The path of a chapter's reader notebook under the site or the branch; None for other pages.

    Examples
    --------
    >>> reader_notebook("notebooks/drift/01_online_setting")
    'reader/student/drift/01_online_setting.ipynb'
    >>> reader_notebook("book/intro") is None
    True
    """
    if solutions not in ("student", "teacher"):
        raise ValueError(f"solutions must be 'student' or 'teacher', got {solutions!r}")
    if not pagename.startswith("notebooks/"):
        return None
    return f"{READER_FOLDER}/{solutions}/{pagename.removeprefix('notebooks/')}.ipynb"


def point_buttons_at_reader(buttons: list[dict], pagename: str, branch: str, download_url: str) -> None:
    """Rewrite a page's header buttons (sphinx-book-theme's) to its student reader notebook.

    Parameters
    ----------
    buttons : list of dict
        ``context["header_buttons"]``, changed in place: in the group labelled
        ``launch-buttons`` every URL naming the page's source
        (``notebooks/<part>/<name>.ipynb`` or ``.md``) at ``branch`` names its
        reader notebook at :data:`READER_BRANCH`; the ``download-notebook-button``
        gets ``download_url``.
    pagename : str
        The page's docname (``notebooks/<part>/<name>``).
    branch : str
        The branch the launch URLs were built with (``repository.branch``).
    download_url : str
        The URL (relative to the page) of the page's reader notebook in the site.

    Examples
    --------
    >>> group = {"label": "launch-buttons", "buttons": [{"text": "Colab",
    ...     "url": "https://colab.research.google.com/github/o/r/blob/main/notebooks/p/c.ipynb"}]}
    >>> point_buttons_at_reader([group], "notebooks/p/c", "main", "../../reader/student/p/c.ipynb")
    >>> group["buttons"][0]["url"]
    'https://colab.research.google.com/github/o/r/blob/reader-notebooks/reader/student/p/c.ipynb'
    """
    target = reader_notebook(pagename)
    if target is None:
        raise ValueError(f"pagename must be a chapter's docname (notebooks/...), got {pagename!r}")
    source = re.compile(re.escape(pagename) + r"\.(?:ipynb|md)\b")
    at_branch = re.compile(rf"(/blob/|/v2/gh/[^/?]+/[^/?]+/){re.escape(branch)}(?=[/?])")
    for group in buttons:
        for button in group.get("buttons", []):
            url = button.get("url") or ""
            if group.get("label") == "launch-buttons" and source.search(url):
                button["url"] = at_branch.sub(rf"\g<1>{READER_BRANCH}", source.sub(target, url))
            elif button.get("label") == "download-notebook-button":
                button["url"] = download_url
                button["tooltip"] = "Download the notebook (plain Markdown, no solutions)"


def _link_reader_notebooks(app, pagename, templatename, context, doctree):
    """Point a chapter's launch and download buttons at its reader notebook, when it was written."""
    target = reader_notebook(pagename)
    buttons = context.get("header_buttons")
    if target is None or not isinstance(buttons, list):
        return
    if not (Path(app.outdir).parent / target).is_file():
        return
    branch = app.config.html_theme_options.get("repository_branch") or "master"  # as the theme reads it
    point_buttons_at_reader(buttons, pagename, branch, context["pathto"](target, 1))


def _copy_reader_notebooks(app, exception):
    """Copy ``_build/reader`` into the HTML site, replacing an older copy."""
    source = Path(app.outdir).parent / READER_FOLDER
    if exception is not None or app.builder.name != "html" or not source.is_dir():
        return
    shutil.rmtree(Path(app.outdir) / READER_FOLDER, ignore_errors=True)
    shutil.copytree(source, Path(app.outdir) / READER_FOLDER)


def number_exercises_per_chapter(toc_fignumbers: dict) -> None:
    """Renumber each page's exercises 1, 2, 3, ... in page order, in place.

    Without a numbered table of contents, Sphinx counts the exercises of
    sphinx-exercise across the whole book ("Exercise 108"); a student looks
    for "Exercise 3" in the chapter in front of them. ``toc_fignumbers`` is
    Sphinx's ``{docname: {figtype: {id: (number,)}}}``.

    Examples
    --------
    >>> numbers = {"a": {"exercise": {"x": (4,), "y": (3,)}}, "b": {"figure": {"f": (9,)}}}
    >>> number_exercises_per_chapter(numbers)
    >>> numbers["a"]["exercise"], numbers["b"]
    ({'x': (2,), 'y': (1,)}, {'figure': {'f': (9,)}})
    """
    for numbers in toc_fignumbers.values():
        exercises = numbers.get("exercise")
        if exercises:
            for i, key in enumerate(sorted(exercises, key=exercises.get), start=1):
                exercises[key] = (i,)


def _number_exercises(app, env):
    number_exercises_per_chapter(env.toc_fignumbers)
    return []  # no page to rewrite beyond those Sphinx already rewrites


def _share_html_handlers(app):
    """Give the single-page builder the HTML handlers of every node that has none of its own.

    Sphinx looks a node's handlers up by builder name and falls back to the builder's
    format (``html``) only when no extension registered any handler for that name.
    sphinx-exercise registers its nodes for ``singlehtml`` too, so sphinx-proof's
    theorem boxes, registered for ``html`` only, had no handler in the one-page build
    that the whole-book PDF prints.
    """
    handlers = app.registry.translation_handlers
    if app.builder.format == "html" and app.builder.name in handlers:
        for node, pair in handlers.get("html", {}).items():
            handlers[app.builder.name].setdefault(node, pair)


def setup(app):
    app.add_config_value("calibtut_hide_solutions", False, "env")
    # after Sphinx's own numbering, which also runs on env-get-updated (priority 500)
    app.connect("env-get-updated", _number_exercises, priority=900)
    app.connect("config-inited", _take_over_hide_solutions)
    app.connect("doctree-read", _drop_solutions)
    app.connect("config-inited", _configure)
    app.connect("autodoc-process-docstring", _restore_sentence_colon, priority=600)
    app.connect("missing-reference", _resolve_alias)
    app.connect("env-updated", _forget_index)
    app.connect("html-page-context", _fix_page_scripts, priority=900)
    app.connect("env-get-outdated", _read_failed_chapters)
    app.connect("doctree-read", _mark_failed_chapter)
    app.connect("builder-inited", _share_html_handlers)
    app.connect("env-purge-doc", _purge_failed_mark)
    app.connect("env-merge-info", _merge_failed_marks)
    app.connect("html-page-context", _link_reader_notebooks, priority=600)
    app.connect("build-finished", _copy_reader_notebooks)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
