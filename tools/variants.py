"""Execute every chapter at ``ci`` under several numerics variants; write the reproducibility report.

A chapter's ``ci`` claims must hold on any CPU, thread count and nearby seed,
not only under the numerics the test command uses (the ``reference`` profile
of :mod:`calibtut.numerics`). This tool executes each chapter once per
variant, each in a kernel started with the variant's environment, keeps going
after a failing cell, and records per chapter and variant: pass or fail, the
cells that raised, the kernel's CPU seconds and wall seconds, what the
libraries loaded inside the kernel (read back from them), and the sha256 of
the chapter's source. The rows go to ``book/_data/variants.json``; the book
page ``book/reproducibility.md`` is written from them, and
``tests/test_reproducibility_report.py`` fails when a chapter's source has
changed after its rows were written (or a row failed).

Command line (from the repository root, with the project's virtualenv)::

    python3 tasks.py variants                                   # every chapter, every variant
    python3 tasks.py variants --chapters notebooks/venn_admit/06_protein.md --variants native seed+1
    python3 tasks.py variants --chapters notebooks/drift/01_online_setting.md \\
        --python /path/to/other-venv/bin/python --dry-run       # another torch, rows not kept

``--python`` runs the kernels under another interpreter (a virtualenv with
another torch of the declared range, calibtut installed in it and nbclient
available): the rows record the torch version the kernel loaded.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import nbformat

from calibtut.numerics import ISA_VARS, PROFILE_ENV, isa_environment, thread_environment
from calibtut.run._paths import RUN_DIR_ENV
from calibtut.run.execute import parameter_defaults
from calibtut.run.provenance import git_state, libraries, machine, package_versions
from tools import nbcache

ROOT = nbcache.ROOT
DATA = ROOT / "book" / "_data" / "variants.json"
PAGE = ROOT / "book" / "reproducibility.md"
READBACK = "CALIBTUT-NUMERICS "
READBACK_CELL = (
    "import json as _json\n"
    "from calibtut.numerics import numerics_state as _numerics_state\n"
    f"print({READBACK!r} + _json.dumps(_numerics_state(load=True)))"
)


@dataclass(frozen=True)
class Variant:
    """One numerics variant: an instruction-set level, a thread count and a seed shift."""

    name: str
    isa: str
    threads: int
    seed_shift: int
    description: str

    def environment(self) -> dict:
        """The variables a kernel of this variant starts with (None: unset).

        With several threads, OpenMP's idle threads sleep instead of spinning
        (``OMP_WAIT_POLICY=PASSIVE``, which changes no result): two chapters run
        at once on a shared machine, and spinning threads would burn the CPU
        the other one needs (a chapter of 38 CPU-seconds took 142 with them).
        """
        wait = {"OMP_WAIT_POLICY": "PASSIVE" if self.threads > 1 else None}
        return {PROFILE_ENV: "reference" if self.is_reference_numerics else f"variant {self.name}",
                **isa_environment(self.isa), **thread_environment(self.threads), **wait}

    @property
    def is_reference_numerics(self) -> bool:
        return (self.isa, self.threads) == ("avx2", 1)


VARIANTS = (
    Variant("reference", "avx2", 1, 0, "the test command's numerics: every library's kernels limited to AVX2 "
                                       "(MKL to its vendor-independent path), one thread"),
    Variant("native", "native", 1, 0, "the CPU's own kernels (AVX-512 where it has them), one thread"),
    Variant("generic", "generic", 1, 0, "kernels limited to SSE4 (no AVX), as on the oldest x86-64 CPUs"),
    Variant("threads2", "avx2", 2, 0, "the reference kernels with two threads per library"),
    Variant("seed+1", "avx2", 1, 1, "the reference numerics with the chapter's seed parameter shifted by one"),
)
BY_NAME = {v.name: v for v in VARIANTS}


class NotApplicable(ValueError):
    """A variant that does not apply to a chapter (the seed shift, for a page without parameters)."""


def source_sha256(md_path: Path) -> str:
    """sha256 of a chapter's MyST source, as its rows record it."""
    return hashlib.sha256(Path(md_path).read_bytes()).hexdigest()


def _rel(path: Path) -> str:
    return Path(path).resolve().relative_to(ROOT).as_posix()


def prepare(md_path: Path, seed_shift: int):
    """The notebook to execute: the book's reading of the source, the seed shifted, a read-back cell appended.

    Returns ``(notebook, numbers)``: ``numbers[i]`` is the 1-based position of
    cell ``i`` among the source's code cells, None for an injected cell.
    """
    nb = nbcache.read_source(md_path)
    numbers, count = [], 0
    for cell in nb.cells:
        if cell.cell_type == "code":
            count += 1
            numbers.append(count)
        else:
            numbers.append(None)
    if seed_shift:
        try:
            defaults = parameter_defaults(nb)
        except ValueError as exc:  # no parameters cell: the page draws nothing at random (the appendix)
            raise NotApplicable(f"{_rel(md_path)} has no parameters cell, so no seed to shift") from exc
        if not isinstance(defaults.get("seed"), int):
            raise ValueError(f"{_rel(md_path)} has no integer seed parameter to shift")
        at = next(i for i, c in enumerate(nb.cells)
                  if c.cell_type == "code" and "parameters" in c.get("metadata", {}).get("tags", []))
        cell = nbformat.v4.new_code_cell(f"seed = {defaults['seed'] + seed_shift}",
                                         metadata={"tags": ["injected-parameters"]})
        nb.cells.insert(at + 1, cell)
        numbers.insert(at + 1, None)
    nb.cells.append(nbformat.v4.new_code_cell(READBACK_CELL))
    numbers.append(None)
    return nb, numbers


def _readback(stdout: str) -> dict | None:
    line = next((line for line in stdout.splitlines() if line.startswith(READBACK)), None)
    return None if line is None else json.loads(line[len(READBACK):])


def _numerics_summary(state: dict | None) -> dict:
    if not state:
        return {}
    torch = state.get("torch") or {}
    blas = sorted({f"{b.get('internal_api')} {b.get('architecture')}" for b in state.get("blas", [])
                   if b.get("internal_api") in ("openblas", "mkl")})
    return {"torch": torch.get("version"), "torch_isa": torch.get("cpu_capability"), "mkl": torch.get("mkl_branch"),
            "threads": torch.get("threads"), "numpy_simd": (state.get("numpy") or {}).get("simd"), "blas": blas}


def run_one(md_path: Path, variant: Variant, python: str, timeout: int) -> dict:
    """Execute one chapter under one variant; returns its row."""
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    row = {"variant": variant.name, "source_sha256": source_sha256(md_path), "written": started}
    try:
        nb, numbers = prepare(md_path, variant.seed_shift)
    except NotApplicable as exc:
        return {**row, "status": "n/a", "failed": [], "note": str(exc), "cpu_s": None, "wall_s": None,
                "numerics": {}}
    except ValueError as exc:
        return {**row, "status": "fail", "failed": [str(exc)], "cpu_s": None, "wall_s": None, "numerics": {}}
    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="variants-") as folder:
        env[RUN_DIR_ENV] = folder  # tables the chapter saves go here, not to a folder shared by two jobs
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        for name, value in variant.environment().items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        prepared, result_path = Path(folder) / "chapter.ipynb", Path(folder) / "result.json"
        nbformat.write(nb, prepared)
        done = subprocess.run([python, "-m", "tools.execute_notebook", str(prepared), str(result_path),
                               "--cwd", str(md_path.parent), "--timeout", str(timeout)],
                              cwd=ROOT, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if not result_path.is_file():
            tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
            return {**row, "status": "fail", "failed": ["the executor failed: " + " | ".join(tail)],
                    "cpu_s": None, "wall_s": None, "numerics": {}}
        result = json.loads(result_path.read_text(encoding="utf8"))
    failed = []
    for error in result["errors"]:
        number = numbers[error["index"]]
        where = f"code cell {number}" if number else "an injected cell"
        evalue = " ".join(str(error.get("evalue") or "").split())
        failed.append(f"{where}: {error['ename']}: {evalue[:200]}")
    if result["crashed"]:
        failed.append(f"execution stopped: {result['crashed'][:200]}")
    return {**row, "status": "fail" if failed else "pass", "failed": failed, "cpu_s": round(result["cpu_s"], 1),
            "wall_s": round(result["wall_s"], 1), "numerics": _numerics_summary(_readback(result["last_stdout"]))}


def check_report(report: dict, chapters: dict) -> list[str]:
    """What makes a report not describe ``chapters`` (name -> source path) as they are now.

    A chapter or a variant without a row, a row written from another version
    of the chapter's source (its sha256 differs), a failed row, a row for a
    chapter that is gone: each is one message naming the command that
    rewrites it. An empty list means the report is current and every row passed.
    """
    problems = []
    rerun = "python3 tasks.py variants --chapters {}"
    for name, path in chapters.items():
        rows = report["chapters"].get(name, {})
        missing = [v.name for v in VARIANTS if v.name not in rows]
        if missing:
            problems.append(f"{name} has no row for {missing}: {rerun.format(name)}")
        digest = source_sha256(path)
        stale = sorted(variant for variant, row in rows.items() if row["source_sha256"] != digest)
        if stale:
            problems.append(f"{name} changed after its rows {stale} were written: {rerun.format(name)}")
        failed = {variant: row["failed"] for variant, row in rows.items() if row["status"] == "fail"}
        if failed:
            problems.append(f"{name} fails under {failed}")
    gone = sorted(set(report["chapters"]) - set(chapters))
    if gone:
        problems.append(f"the report has rows for chapters that are not in the book: {gone}")
    return problems


def load_report(path: Path = DATA) -> dict:
    """The stored report (empty when there is none yet)."""
    if path.is_file():
        return json.loads(path.read_text(encoding="utf8"))
    return {"environment": {}, "chapters": {}}


def _environment_record(python: str) -> dict:
    record = {"machine": machine(), "libraries": libraries(), "packages": package_versions(),
              "python": python if python != sys.executable else "the repository's .venv",
              **git_state(ROOT)}
    record["variants"] = {v.name: {"description": v.description,
                                   "environment": {k: val for k, val in v.environment().items() if val}}
                          for v in VARIANTS}
    return record


# --------------------------------------------------------------------------- the page

PAGE_HEAD = """\
# Reproducibility report

<!-- Written by `python3 tasks.py variants` (tools/variants.py) from book/_data/variants.json: do not edit. -->

Every chapter asserts the claims it shows, at the `ci` profile, each time the
book is built. Those claims must not depend on the machine: on which CPU
kernels numpy and torch pick, on how many threads they use, or on the exact
seed. The test command runs every chapter under one fixed set of numerics, the
**reference profile** of `calibtut.numerics` (every library's kernels limited
to AVX2, MKL to the path it runs alike on Intel and AMD CPUs, one thread), so
that it gives the same bits on any x86-64 machine with AVX2.
This page checks the rest: each chapter executed again under each variant
below, each in a kernel started with that variant's environment. A chapter
passes a variant when every one of its cells runs and every `assert` holds.

The table is written by `python3 tasks.py variants` (`tools/variants.py`); a
test fails when a chapter's source changes after its row was written, or
when a row failed, so the table always describes the chapters as they are.
What the libraries loaded inside each kernel was read back from them (torch's
CPU capability, numpy's SIMD targets, the BLAS kernels, the thread count).
"""


def _fmt_env(env: dict) -> str:
    shown = ", ".join(f"`{k}={v}`" for k, v in env.items() if k != PROFILE_ENV and v is not None)
    if not any(env.get(name) for name in ISA_VARS):
        shown = "no instruction-set limit; " + shown
    return shown


def render_page(report: dict) -> str:
    """The Markdown of ``book/reproducibility.md`` for a report."""
    environment = report.get("environment", {})
    lines = [PAGE_HEAD, "## The variants", ""]
    seen = {}
    for rows in report["chapters"].values():
        for name, row in rows.items():
            if row.get("numerics"):
                seen.setdefault(name, row["numerics"])
    lines += ["| variant | what changes | read back in the kernels |", "|---|---|---|"]
    for variant in VARIANTS:
        back = seen.get(variant.name, {})
        simd = (back.get("numpy_simd") or ["none"])[-1]
        readback = (f"torch {back.get('torch_isa')}, MKL {back.get('mkl')}, numpy up to {simd}, "
                    f"{', '.join(back.get('blas') or [])}, {back.get('threads')} thread(s)") if back else "not run"
        lines.append(f"| {variant.name} | {variant.description} | {readback} |")
    lines += ["", "The environment of each variant:", ""]
    for variant in VARIANTS:
        lines.append(f"- **{variant.name}**: {_fmt_env(variant.environment())}"
                     + (f"; `seed` + {variant.seed_shift}" if variant.seed_shift else ""))
    machine_info = environment.get("machine", {})
    libs = environment.get("libraries", {})
    packages = environment.get("packages", {})
    lines += ["", "## The machine", "",
              f"- CPU: {machine_info.get('cpu_model')}, {machine_info.get('cpu_count')} logical CPUs; "
              f"vector extensions: {', '.join(machine_info.get('cpu_simd') or [])}",
              f"- platform: {machine_info.get('platform')}",
              f"- Python {packages.get('python')}, torch {libs.get('torch')}, numpy {libs.get('numpy')}, "
              f"scipy {packages.get('scipy')}, pandas {packages.get('pandas')}, "
              f"scikit-learn {packages.get('sklearn')}",
              f"- torch's MKL: {libs.get('mkl')}; its oneDNN: {libs.get('onednn')}",
              f"- BLAS: {'; '.join(libs.get('blas') or [])}",
              f"- code: commit `{(environment.get('commit') or 'unknown')[:12]}`"
              + (" (with uncommitted changes)" if environment.get("dirty") else ""), ""]
    lines += ["## Chapters and variants", "",
              "Each cell says whether the chapter passed (✓) or failed (✗) under that variant, and its "
              "kernel's CPU seconds; a failing cell is named below the table.", ""]
    names = [v.name for v in VARIANTS]
    lines += ["| chapter | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    failures, notes = [], []
    totals = dict.fromkeys(names, 0.0)
    for chapter in sorted(report["chapters"], key=_toc_order):
        rows = report["chapters"][chapter]
        cells = []
        for name in names:
            row = rows.get(name)
            if row is None:
                cells.append("not run")
                continue
            seconds = "" if row.get("cpu_s") is None else f" {row['cpu_s']:.0f}"
            cells.append({"pass": "✓", "n/a": "–"}.get(row["status"], "**✗**") + seconds)
            if row["status"] == "n/a":
                notes.append(f"- `{chapter}`, {name}: not applicable ({row['note']})")
            totals[name] += row.get("cpu_s") or 0.0
            failures += [f"- `{chapter}`, {name}: {message}" for message in row.get("failed", [])]
        part, number = Path(chapter).parent.name.replace("_", " "), Path(chapter).stem.split("_")[0]
        lines.append(f"| [{part} {number}](../{chapter}) | " + " | ".join(cells) + " |")
    lines.append("| **all chapters (CPU s)** | " + " | ".join(f"{totals[n]:.0f}" for n in names) + " |")
    passed = sum(row["status"] == "pass" for rows in report["chapters"].values() for row in rows.values())
    total = sum(row["status"] != "n/a" for rows in report["chapters"].values() for row in rows.values())
    lines += ["", f"{passed} of {total} chapter runs pass.", *([""] + notes if notes else []), ""]
    if failures:
        lines += ["### Failing cells", "", *failures, ""]
    lines += ["## Running it", "",
              "```bash",
              "python3 tasks.py variants                        # every chapter under every variant",
              "python3 tasks.py variants --chapters notebooks/venn_admit/06_protein.md --variants native",
              "```", "",
              "Two chapters run at a time (`--jobs`). `--python PATH` runs the kernels under another",
              "interpreter, for example a virtual environment with another torch of the declared range",
              "(with `--dry-run`, so that its rows are printed and not kept).", ""]
    return "\n".join(lines)


@functools.cache
def _toc() -> tuple:
    return tuple(_rel(p) for p in nbcache.book_notebooks())


def _toc_order(chapter: str) -> int:
    return _toc().index(chapter) if chapter in _toc() else len(_toc())


# --------------------------------------------------------------------------- command line

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.variants", description=__doc__.split("\n\n")[0])
    parser.add_argument("--chapters", nargs="+", type=Path, help="notebooks/<part>/<nb>.md (default: every chapter)")
    parser.add_argument("--variants", nargs="+", choices=list(BY_NAME), help="default: every variant")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="chapters executed at once (default 2)")
    parser.add_argument("--python", default=sys.executable, help="interpreter of the kernels (default this one)")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per cell (default 900)")
    parser.add_argument("--dry-run", action="store_true", help="print the rows; keep neither data nor page")
    parser.add_argument("--render", action="store_true", help="only rewrite the page from the stored rows")
    args = parser.parse_args(argv)
    if args.render:
        PAGE.write_text(render_page(load_report()), encoding="utf8")
        return 0
    chapters = [p.resolve() for p in (args.chapters or nbcache.book_notebooks())]
    missing = [str(p) for p in chapters if not p.is_file()]
    if missing:
        parser.error(f"no such chapter: {', '.join(missing)}")
    variants = [BY_NAME[name] for name in (args.variants or BY_NAME)]
    jobs = [(chapter, variant) for chapter in chapters for variant in variants]
    print(f"variants: {len(jobs)} executions ({len(chapters)} chapter(s) x {len(variants)} variant(s)), "
          f"{args.jobs} at a time", flush=True)
    start = time.perf_counter()
    report = load_report()
    environment = _environment_record(args.python)  # before this run writes its rows (git state)
    failed = 0

    def one(job):
        chapter, variant = job
        return chapter, variant, run_one(chapter, variant, args.python, args.timeout)

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for count, (chapter, variant, row) in enumerate(pool.map(one, jobs), start=1):
            failed += row["status"] == "fail"
            detail = f"  {row['failed'][0]}" if row["failed"] else ""
            back = row["numerics"]
            kernels = f"; torch {back['torch']} {back['torch_isa']}, MKL {back['mkl']}" if back else ""
            print(f"[{count}/{len(jobs)}] {_rel(chapter)} {variant.name}: {row['status']} "
                  f"({row['cpu_s']} CPU-s, {row['wall_s']} s{kernels}){detail}", flush=True)
            if not args.dry_run:
                report["chapters"].setdefault(_rel(chapter), {})[variant.name] = row
                DATA.parent.mkdir(parents=True, exist_ok=True)
                DATA.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n", encoding="utf8")
    if not args.dry_run:
        report["environment"] = environment
        DATA.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n", encoding="utf8")
        PAGE.write_text(render_page(report), encoding="utf8")
        print(f"wrote {_rel(DATA)} and {_rel(PAGE)}")
    print(f"variants: {len(jobs) - failed} of {len(jobs)} passed in {time.perf_counter() - start:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
