#!/usr/bin/env python3
"""The two commands of the calibtut repository (standard library only).

    python3 tasks.py book   # set up .venv, execute every notebook (ci profile), render the HTML book,
                            # write the reader notebooks and print the whole book to one PDF
    python3 tasks.py test   # the whole test suite (what CI runs)
    python3 tasks.py pair   # regenerate every notebooks/**/*.ipynb from its .md, outputs stripped
    python3 tasks.py variants   # every chapter under five numerics variants: book/reproducibility.md
    python3 tasks.py lock   # rewrite constraints.txt from the versions installed in .venv

``.venv`` is created when missing and (re)installed with
``pip install -c constraints.txt -e ".[book,test]"`` whenever ``pyproject.toml``,
``constraints.txt`` or the Python version changed since the last install (a
stamp in ``.venv`` keeps the hash). ``pyproject.toml`` declares compatible
ranges (what ``pip install calibtut`` needs); ``constraints.txt`` pins the exact
versions the book is built and tested with.
The JavaScript that renders widgets offline is downloaded once from the npm
registry, checked against the registry's sha512 integrity, into
``book/_vendor/`` (ignored by git).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")
STAMP = VENV / ".calibtut-install"
CONSTRAINTS = ROOT / "constraints.txt"
BUILD = ROOT / "_build"
HTML = BUILD / "html"
LOGS = BUILD / "logs"
#: The reader notebooks (``tools/reader_notebooks.py``), which the book build copies into ``HTML / "reader"``.
READER = BUILD / "reader"
SINGLEHTML = BUILD / "singlehtml"
#: The whole book as one PDF (also copied into the HTML folder, which the book's landing page links).
PDF = BUILD / "pdf" / "calibtut.pdf"
CHROMIUM = Path("/usr/bin/chromium")
#: Headless Chromium as the browser check runs it, plus printing: no header and footer, and
#: (virtual) time for MathJax and the widgets to finish before the page is printed.
CHROMIUM_PRINT_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--no-pdf-header-footer",
    "--run-all-compositor-stages-before-draw", "--virtual-time-budget=60000",
)
#: The chapters that failed under ``tools.nbcache execute`` (written by it, read by the book's Sphinx glue).
FAILED_CHAPTERS = BUILD / "failed-chapters.json"
VENDOR = ROOT / "book" / "_vendor" / "widgets"
NPM_REGISTRY = "https://registry.npmjs.org"
#: npm package, version, {file in the tarball: name under book/_vendor/widgets/}
NPM_FILES = (
    ("requirejs", "2.3.7", {"package/require.js": "require.js"}),
    (
        "@jupyter-widgets/html-manager",
        "1.0.6",
        {"package/dist/embed-amd.js": "embed-amd.js", "package/dist/*.woff*": None, "package/dist/*.ttf": None,
         "package/dist/*.eot": None, "package/dist/*.svg": None},
    ),
)
NOTEBOOK_BUDGET_S = float(os.environ.get("CALIBTUT_NOTEBOOK_BUDGET", "60"))


def _numerics():
    """``calibtut/numerics.py``, loaded from its file: it uses the standard library only, and
    tasks.py runs before the virtual environment (and so the package) is installed."""
    spec = importlib.util.spec_from_file_location("calibtut_numerics", ROOT / "calibtut" / "numerics.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


NUMERICS = _numerics()
#: The numerics profile every command runs its notebooks and tests under, one thread per process
#: (``CALIBTUT_NUMERICS`` picks another: ``CALIBTUT_NUMERICS=native python3 tasks.py test`` runs them
#: with the CPU's own kernels).
PROFILE = os.environ.get(NUMERICS.PROFILE_ENV) or NUMERICS.DEFAULT_PROFILE


def say(msg: str) -> None:
    print(f"[tasks] {msg}", flush=True)


def run(cmd, *, log: Path | None = None, env=None, check=True) -> int:
    """Run a command from the repository root, echoing it; tee its output to ``log``."""
    cmd = [str(c) for c in cmd]
    say("$ " + " ".join(cmd))
    full_env = dict(os.environ)
    # The numerics profile (calibtut/numerics.py): every library's CPU kernels limited alike and
    # one thread per process, so that the notebooks see the same bits on any x86-64 machine (and
    # two notebooks or test workers at once do not oversubscribe two cores).
    for name, value in NUMERICS.profile_environment(PROFILE, threads=1).items():
        if value is None:
            full_env.pop(name, None)
        else:
            full_env[name] = value
    full_env.update(env or {})
    full_env.setdefault("JUPYTER_PLATFORM_DIRS", "1")
    full_env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), full_env.get("PYTHONPATH")]))
    if log is None:
        rc = subprocess.run(cmd, cwd=ROOT, env=full_env, stdin=subprocess.DEVNULL).returncode
    else:
        log.parent.mkdir(parents=True, exist_ok=True)
        with subprocess.Popen(cmd, cwd=ROOT, env=full_env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, bufsize=1) as proc, \
                open(log, "w", encoding="utf8") as out:
            for line in proc.stdout:
                sys.stdout.write(line)
                out.write(line)
            rc = proc.wait()
        sys.stdout.flush()
    if check and rc != 0:
        sys.exit(f"[tasks] command failed with exit status {rc}: {' '.join(cmd)}")
    return rc


# --------------------------------------------------------------------------- set-up

def install_key() -> str:
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes())
    digest.update(CONSTRAINTS.read_bytes())
    digest.update(f"python {sys.version_info[0]}.{sys.version_info[1]}".encode())
    return digest.hexdigest()


def _bootstrap_pip() -> None:
    """Install pip into a venv made ``--without-pip`` (Debian without python3-venv)."""
    meta = json.load(urllib.request.urlopen("https://pypi.org/pypi/pip/json", timeout=60))
    wheel = next(f for f in meta["urls"] if f["filename"].endswith("-py3-none-any.whl"))
    data = urllib.request.urlopen(wheel["url"], timeout=120).read()
    if hashlib.sha256(data).hexdigest() != wheel["digests"]["sha256"]:
        sys.exit("[tasks] the pip wheel downloaded from PyPI fails its sha256 check")
    path = VENV / wheel["filename"]
    path.write_bytes(data)
    run([PY, f"{path}/pip", "install", "--no-index", str(path)])
    path.unlink()


def ensure_venv() -> float:
    """Create/refresh ``.venv``; returns the seconds spent installing (0 when up to date)."""
    if sys.version_info < (3, 11):
        sys.exit("[tasks] Python >= 3.11 is required")
    key = install_key()
    if PY.exists() and STAMP.exists() and STAMP.read_text().strip() == key:
        return 0.0
    start = time.perf_counter()
    if not PY.exists():
        say(f"creating the virtual environment {VENV.relative_to(ROOT)}")
        made = subprocess.run([sys.executable, "-m", "venv", str(VENV)]).returncode == 0
        if not made:
            say("venv without ensurepip: bootstrapping pip from PyPI")
            shutil.rmtree(VENV, ignore_errors=True)
            run([sys.executable, "-m", "venv", "--without-pip", str(VENV)])
            _bootstrap_pip()
    else:
        say("pyproject.toml, constraints.txt (or Python) changed since the last install: reinstalling")
    run([PY, "-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "off", "-c", CONSTRAINTS,
         "-e", ".[book,test]"])
    STAMP.write_text(key + "\n")
    seconds = time.perf_counter() - start
    say(f"environment ready in {seconds:.0f} s")
    return seconds


def _npm_fetch(name: str, version: str) -> bytes:
    meta_url = f"{NPM_REGISTRY}/{name.replace('/', '%2f')}/{version}"
    meta = json.load(urllib.request.urlopen(meta_url, timeout=60))
    dist = meta["dist"]
    data = urllib.request.urlopen(dist["tarball"], timeout=300).read()
    algo, _, expected = dist["integrity"].partition("-")
    if algo != "sha512" or base64.b64encode(hashlib.sha512(data).digest()).decode() != expected:
        sys.exit(f"[tasks] {name}@{version} from the npm registry fails its integrity check")
    return data


def ensure_vendor_js() -> None:
    """Download the widget JavaScript into ``book/_vendor/widgets`` (once per version)."""
    wanted = ",".join(f"{name}@{version}" for name, version, _ in NPM_FILES)
    stamp = VENDOR / ".versions"
    if stamp.exists() and stamp.read_text().strip() == wanted:
        return
    say(f"downloading {wanted} from {NPM_REGISTRY}")
    shutil.rmtree(VENDOR, ignore_errors=True)
    VENDOR.mkdir(parents=True)
    from fnmatch import fnmatch

    for name, version, files in NPM_FILES:
        with tarfile.open(fileobj=io.BytesIO(_npm_fetch(name, version)), mode="r:gz") as tar:
            for member in tar.getmembers():
                for pattern, target in files.items():
                    if member.isfile() and fnmatch(member.name, pattern):
                        dest = VENDOR / (target or Path(member.name).name)
                        dest.write_bytes(tar.extractfile(member).read())
    stamp.write_text(wanted + "\n")


def ensure_env() -> float:
    seconds = ensure_venv()
    ensure_vendor_js()
    return seconds


# --------------------------------------------------------------------------- notebooks

def book_notebooks() -> list[Path]:
    """The ``.md`` notebooks listed in ``_toc.yml``, in reading order."""
    toc = (ROOT / "_toc.yml").read_text(encoding="utf8")
    files = re.findall(r"^\s*-?\s*file:\s*['\"]?(notebooks/[^\s'\"#]+)", toc, flags=re.M)
    return [ROOT / (f if f.endswith(".md") else f + ".md") for f in files]


def papermill_notebook() -> Path | None:
    """The first book notebook whose parameters cell sets ``seed``."""
    candidates = [p for p in book_notebooks() if p.exists()]
    for path in candidates:
        text = path.read_text(encoding="utf8")
        for cell in re.findall(r"```\{code-cell\}[^\n]*\n(.*?)```", text, flags=re.S):
            if re.search(r"tags:\s*\[[^\]]*\bparameters\b", cell) and re.search(r"^seed\s*=", cell, flags=re.M):
                return path
    return candidates[0] if candidates else None


def papermill_step() -> int:
    nb = papermill_notebook()
    if nb is None:
        say("no notebook in _toc.yml: nothing to run through papermill")
        return 1
    rel = nb.relative_to(ROOT)
    out = BUILD / "runs" / "papermill-check"
    shutil.rmtree(out, ignore_errors=True)
    if (ROOT / "calibtut" / "run" / "__main__.py").exists() or (ROOT / "calibtut" / "run.py").exists():
        rc = run([PY, "-m", "calibtut.run", rel, "--profile", "ci", "-p", "seed", "1", "--out", out,
                  "--fresh", "--no-progress"], log=LOGS / "papermill.log", check=False)
    else:  # without the runner: jupytext pipes the notebook into papermill
        out.mkdir(parents=True)
        cmd = (f"'{BIN / 'jupytext'}' --to ipynb -o - '{rel}' | '{BIN / 'papermill'}' - '{out / (nb.stem + '.ipynb')}' "
               f"-p profile ci -p seed 1 --cwd '{nb.parent}'")
        say("$ " + cmd)
        rc = subprocess.run(cmd, shell=True, cwd=ROOT, stdin=subprocess.DEVNULL).returncode
    if rc != 0:
        return rc
    # The override must have reached the notebook: papermill's injected cell sets seed = 1.
    executed = list(out.glob("*.ipynb"))
    injected = [
        cell for path in executed for cell in json.loads(path.read_text(encoding="utf8"))["cells"]
        if "injected-parameters" in cell.get("metadata", {}).get("tags", [])
    ]
    if not any(re.search(r"^seed = 1$", "".join(cell["source"]), flags=re.M) for cell in injected):
        say(f"papermill ran, but no injected-parameters cell with seed = 1 in {executed}")
        return 1
    say(f"papermill run of {rel} with seed = 1 ok")
    return 0


def book_build(strict: bool) -> tuple[int, int]:
    """Build the HTML book; returns (exit status, notebooks the build executed itself)."""
    cmd = [BIN / "jupyter-book", "build", ".", "-n", "--keep-going"]
    if strict:
        # A clean HTML folder (pages of deleted notebooks must not linger for the
        # browser check); the execution cache next to it is kept.
        for folder in (HTML, BUILD / "jupyter_execute"):
            shutil.rmtree(folder, ignore_errors=True)
        cmd += ["-W", "--all"]
    log = LOGS / ("book-build-strict.log" if strict else "book-build.log")
    rc = run(cmd, log=log, check=False)
    text = log.read_text(encoding="utf8")
    executed = len(re.findall(r"Executing notebook using", text))
    if not strict:
        warnings = len(re.findall(r"WARNING:", text))
        if warnings:
            say(f"the build reported {warnings} warning(s); see {log.relative_to(ROOT)}")
    return rc, executed


def reader_step() -> int:
    """Write the reader notebooks (student and teacher sets) of every chapter into ``_build/reader``.

    Run after the execution step, so that their glued values are those of this ``ci`` run, and
    before the build, which links the pages' download and launch buttons to them.
    """
    shutil.rmtree(READER, ignore_errors=True)
    return run([PY, "-m", "tools.reader_notebooks", "--out", READER], check=False)


def print_pdf(page: Path, pdf: Path, chromium: Path = CHROMIUM, timeout: float = 1200) -> int:
    """Print an HTML page to ``pdf`` with headless Chromium; returns 0 when the PDF was written.

    Parameters
    ----------
    page : Path
        The HTML file (its images, styles and scripts are read from beside it).
    pdf : Path
        Where the PDF goes; its folder is created, an older PDF there removed first.
    chromium : Path
        The Chromium executable (Debian's ``/usr/bin/chromium``).
    timeout : float
        Seconds Chromium may take.

    Examples
    --------
    >>> print_pdf(SINGLEHTML / "calibtut.html", PDF)  # doctest: +SKIP
    0
    """
    page, pdf = Path(page).resolve(), Path(pdf).resolve()
    if not page.is_file():
        raise ValueError(f"page must be an existing HTML file, got {str(page)!r}")
    pdf.parent.mkdir(parents=True, exist_ok=True)
    pdf.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="calibtut-chromium-") as profile:
        cmd = [str(chromium), *CHROMIUM_PRINT_FLAGS, f"--user-data-dir={profile}", f"--print-to-pdf={pdf}",
               page.as_uri()]
        say("$ " + " ".join(cmd))
        try:
            proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            say(f"Chromium did not finish printing {page.name} in {timeout:g} s")
            return 1
    if proc.returncode != 0 or not pdf.is_file() or pdf.stat().st_size == 0:
        say(f"Chromium failed to print {page.name} (exit status {proc.returncode}):\n{proc.stderr[-2000:]}")
        return 1
    return 0


def pdf_step() -> int:
    """Build the book as one HTML page (from the same execution cache) and print it to ``PDF``.

    The PDF is copied into the HTML folder as ``calibtut.pdf``, which the landing page links.
    Without Chromium the step says so and makes no PDF.
    """
    if not CHROMIUM.exists():
        say(f"no Chromium at {CHROMIUM}: the whole-book PDF is not made (apt-get install chromium)")
        return 0
    log = LOGS / "book-build-singlehtml.log"
    rc = run([BIN / "jupyter-book", "build", ".", "--builder", "singlehtml", "-n", "--keep-going"], log=log,
             check=False)
    # The book is the root page (index.html only redirects to it), written at book/intro.html
    # with links to _static/ and _images/ as if it were at the top: print a copy from there.
    root = re.search(r"^root:\s*(\S+)", (ROOT / "_toc.yml").read_text(encoding="utf8"), flags=re.M)
    built = SINGLEHTML / f"{root.group(1) if root else 'index'}.html"
    if rc != 0 or not built.is_file():
        say(f"the single-page build FAILED (see {log.relative_to(ROOT)})")
        return 1
    page = SINGLEHTML / f"{PDF.stem}.html"
    shutil.copy2(built, page)
    rc = print_pdf(page, PDF)
    if rc == 0:
        shutil.copy2(PDF, HTML / PDF.name)
        say(f"whole-book PDF: {PDF} ({PDF.stat().st_size / 1e6:.1f} MB)")
    return rc


def failed_chapters() -> list[dict]:
    """The chapters whose execution by ``tools.nbcache execute`` failed, in the order it listed them."""
    if not FAILED_CHAPTERS.exists():
        return []
    return list(json.loads(FAILED_CHAPTERS.read_text(encoding="utf8")).values())


def report_failed_chapters(failures: list[dict]) -> None:
    """Print each failed chapter, what failed and the command that reruns it alone."""
    print(f"\n{len(failures)} chapter(s) failed to execute; their pages show the outputs up to the error, "
          "under a marker at the top:", flush=True)
    for failure in failures:
        print(f"  {failure['source']}: {failure['summary']}\n"
              f"      reproduce: {PY.relative_to(ROOT)} -m calibtut.run {failure['source']}", flush=True)


# --------------------------------------------------------------------------- commands

def cmd_pair(_args) -> int:
    ensure_venv()
    return run([PY, "-m", "tools.pair_notebooks"], check=False)


def cmd_book(args) -> int:
    """Execute the notebooks the cache lacks and render the book, also when chapters fail.

    A chapter that fails is rendered with its outputs up to the error and a
    marker; the failed chapters are listed at the end and make the exit status
    1, as does a failed build. The reader notebooks are written before the
    build (its pages link them) and, unless ``--no-pdf``, the book is printed
    to one PDF after it; a failure of either makes the exit status 1 too.
    """
    start = time.perf_counter()
    ensure_env()
    execute_rc = run([PY, "-m", "tools.nbcache", "execute", "--jobs", str(args.jobs)], check=False)
    failures = failed_chapters()
    reader_rc = reader_step()
    rc, executed = book_build(strict=False)
    if executed:
        say(f"the build executed {executed} notebook(s) itself (the execution step did not store them)")
    pdf_rc = pdf_step() if args.pdf and rc == 0 else 0
    print("\nPer-notebook execution time (ci profile; the budget holds the kernel's CPU time):", flush=True)
    run([PY, "-m", "tools.nbcache", "timings", "--book-only", "--budget", str(NOTEBOOK_BUDGET_S)], check=False)
    index = HTML / "index.html"
    if failures:
        report_failed_chapters(failures)
    if rc != 0 or not index.exists() or (execute_rc != 0 and not failures):
        say(f"book build FAILED (see {LOGS.relative_to(ROOT)}/)")
        return 1
    failed_steps = [what for what, code in (("the reader notebooks", reader_rc), ("the whole-book PDF", pdf_rc))
                    if code]
    if failures or failed_steps:
        problems = [f"{len(failures)} chapter(s) failed to execute"] if failures else []
        say(f"book built in {time.perf_counter() - start:.0f} s, but "
            + "; ".join(problems + [f"{what} FAILED" for what in failed_steps]) + " (see above)")
        print(index)
        return 1
    say(f"book built in {time.perf_counter() - start:.0f} s")
    print(index)
    return 0


def cmd_test(args) -> int:
    start = time.perf_counter()
    install_s = ensure_env()
    say(f"numerics profile: {PROFILE}, one thread per process (calibtut/numerics.py; CALIBTUT_NUMERICS chooses)")
    steps: list[tuple[str, int, float, str]] = []

    def step(name, func, note=""):
        t0 = time.perf_counter()
        say(f"=== {name}")
        rc = func()
        steps.append((name, rc, time.perf_counter() - t0, note))
        return rc

    step("pair check (.md vs .ipynb)",
         lambda: run([PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_notebook_pairs.py"],
                     check=False))
    step("unit + property tests, doctests, nbval on every notebook",
         lambda: run([PY, "-m", "pytest", "-n", str(args.jobs), "--dist", "loadfile", "-p", "tools.pytest_nbcache",
                      "--doctest-modules", "--nbval-lax", "--nbval-current-env", "--nbval-cell-timeout", "300",
                      "--durations", "10", "--ignore", "tests/test_notebook_pairs.py", "--ignore", "tests/browser",
                      "tests", "calibtut", "notebooks"], log=LOGS / "pytest.log", check=False))
    step("papermill run with overridden parameters (seed=1)", papermill_step)
    build = {}

    def strict_build():
        rc, build["executed"] = book_build(strict=True)
        return rc

    step("strict book build (-W -n --keep-going)", strict_build)
    if build.get("executed"):
        steps.append(("no notebook executed twice", 1, 0.0,
                      f"the build executed {build['executed']} notebook(s) itself (cache miss)"))
    step("headless browser check of every page",
         lambda: run([PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", str(args.jobs), "tests/browser",
                      "--book-html", HTML],
                     log=LOGS / "browser.log", check=False))
    print("\nPer-notebook execution time (ci profile, from the nbval run; the budget holds the kernel's CPU time):",
          flush=True)
    timing_rc = run([PY, "-m", "tools.nbcache", "timings", "--budget", str(NOTEBOOK_BUDGET_S)], check=False)
    steps.append((f"every notebook within {NOTEBOOK_BUDGET_S:g} CPU-seconds", timing_rc, 0.0, ""))

    total = time.perf_counter() - start
    print("\nSummary:")
    for name, rc, seconds, note in steps:
        status = "ok" if rc == 0 else "FAILED"
        print(f"  {status:<6} {seconds:7.1f} s  {name}" + (f"  ({note})" if note else ""))
    failed = [name for name, rc, _, _ in steps if rc != 0]
    setup = f", set-up {install_s:.0f} s" if install_s else ""
    if failed:
        print(f"tasks.py test: FAILED ({len(failed)} of {len(steps)} checks: {'; '.join(failed)}) "
              f"in {total:.0f} s{setup}")
        return 1
    print(f"tasks.py test: PASSED (all {len(steps)} checks) in {total:.0f} s{setup}")
    return 0


def cmd_variants(args) -> int:
    """Every chapter at ``ci`` under several numerics variants; rewrites the reproducibility report."""
    ensure_env()
    return run([PY, "-m", "tools.variants", *args.options], check=False)


def cmd_lock(_args) -> int:
    """Write the exact versions installed in ``.venv`` to ``constraints.txt``."""
    ensure_venv()
    frozen = subprocess.run([PY, "-m", "pip", "freeze", "--exclude-editable", "--disable-pip-version-check"],
                            cwd=ROOT, check=True, capture_output=True, text=True).stdout
    # A local build label (torch 2.13.0+cpu from a CPU wheel index) would not match PyPI's wheels.
    pins = sorted({re.sub(r"\+[\w.]+$", "", line.strip()) for line in frozen.splitlines()
                   if "==" in line and not line.lower().startswith("calibtut==")}, key=str.lower)
    header = ("# Exact versions the book is built and tested with (the lock), installed by tasks.py and CI as\n"
              "#   pip install -c constraints.txt -e \".[book,test]\"\n"
              "# pyproject.toml keeps compatible ranges. Regenerate with `python3 tasks.py lock`.\n")
    CONSTRAINTS.write_text(header + "\n".join(pins) + "\n", encoding="utf8")
    say(f"wrote {len(pins)} pins to {CONSTRAINTS.relative_to(ROOT)}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 tasks.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    book = sub.add_parser("book", help="set up .venv, execute the notebooks, render the HTML book")
    book.add_argument("-j", "--jobs", type=int, default=2, help="notebooks executed in parallel (default 2)")
    book.add_argument("--no-pdf", dest="pdf", action="store_false",
                      help="skip the single-page build and its PDF (_build/pdf/calibtut.pdf)")
    book.set_defaults(func=cmd_book)
    test = sub.add_parser("test", help="run the whole test suite")
    test.add_argument("-j", "--jobs", type=int, default=2, help="pytest-xdist workers (default 2)")
    test.set_defaults(func=cmd_test)
    pair = sub.add_parser("pair", help="regenerate notebooks/**/*.ipynb from the .md sources")
    pair.set_defaults(func=cmd_pair)
    variants = sub.add_parser("variants", help="every chapter under several numerics variants (the reproducibility "
                                               "report); options after it go to tools/variants.py (--help there)")
    variants.add_argument("options", nargs=argparse.REMAINDER)
    variants.set_defaults(func=cmd_variants)
    lock = sub.add_parser("lock", help="rewrite constraints.txt from the versions installed in .venv")
    lock.set_defaults(func=cmd_lock)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
