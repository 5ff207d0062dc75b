"""Regenerate the committed ``.ipynb`` twin of every MyST notebook, outputs stripped.

The ``.md`` under ``notebooks/`` is the source of truth. Its ``.ipynb`` twin is
what ``jupytext --to ipynb --update X.md`` writes (which keeps the cell ids of an
existing twin), with every output, execution count and widget state removed.

Usage (with the project's virtualenv; ``python3 tasks.py pair`` does this)::

    python -m tools.pair_notebooks            # rewrite the twins that differ
    python -m tools.pair_notebooks --check    # only report, exit 1 if any differs

Both also report every code line wider than :data:`MAX_CODE_COLUMNS` (the
book's code column holds 88 characters without a horizontal scroll bar); such
a line makes ``--check`` (and ``tests/test_notebook_pairs.py``) fail.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jupytext
from jupytext.combine import combine_inputs_with_outputs

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"

#: Cell metadata that only describes an execution, never the source.
OUTPUT_CELL_METADATA = ("execution", "ExecuteTime", "collapsed", "scrolled")
#: Notebook metadata that only describes an execution.
OUTPUT_NB_METADATA = ("widgets", "language_info", "papermill")
#: The widest code line a notebook may have (what the book shows without scrolling).
MAX_CODE_COLUMNS = 88


def sources() -> list[Path]:
    """Every MyST notebook source ``notebooks/**/*.md``."""
    return sorted(p for p in NOTEBOOKS.rglob("*.md") if ".ipynb_checkpoints" not in p.parts)


def strip_outputs(nb):
    """Remove outputs, execution counts and execution metadata from ``nb`` in place."""
    for key in OUTPUT_NB_METADATA:
        nb.metadata.pop(key, None)
    for cell in nb.cells:
        for key in OUTPUT_CELL_METADATA:
            cell.metadata.pop(key, None)
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return nb


def long_code_lines(md_path: Path, limit: int = MAX_CODE_COLUMNS) -> list[str]:
    """``"cell N, line M: W columns"`` for every code line of ``md_path`` wider than ``limit``."""
    found = []
    code_cells = (cell for cell in jupytext.read(md_path).cells if cell.cell_type == "code")
    for index, cell in enumerate(code_cells, start=1):
        for number, line in enumerate(cell.source.splitlines(), start=1):
            if len(line) > limit:
                found.append(f"code cell {index}, line {number}: {len(line)} columns")
    return found


def expected_ipynb(md_path: Path) -> str:
    """The text ``jupytext --to ipynb --update`` would write for ``md_path``, stripped."""
    nb = jupytext.read(md_path)
    twin = Path(md_path).with_suffix(".ipynb")
    if twin.exists():
        nb = combine_inputs_with_outputs(nb, jupytext.read(twin), fmt="md:myst")
    text = jupytext.writes(strip_outputs(nb), fmt="ipynb")
    return text if text.endswith("\n") else text + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.pair_notebooks", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="report differences, change nothing")
    args = parser.parse_args(argv)
    stale = wide = 0
    for md in sources():
        for where in long_code_lines(md):
            wide += 1
            print(f"{md.relative_to(ROOT)}: {where} (at most {MAX_CODE_COLUMNS}; wrap it)")
        twin = md.with_suffix(".ipynb")
        text = expected_ipynb(md)
        current = twin.read_text(encoding="utf8") if twin.exists() else None
        if current == text:
            continue
        stale += 1
        rel = twin.relative_to(ROOT)
        if args.check:
            print(f"out of date: {rel}")
        else:
            twin.write_text(text, encoding="utf8")
            print(f"wrote {rel}")
    orphans = [p for p in sorted(NOTEBOOKS.rglob("*.ipynb")) if not p.with_suffix(".md").exists()
               and ".ipynb_checkpoints" not in p.parts]
    for orphan in orphans:
        print(f"no .md source for {orphan.relative_to(ROOT)} (delete it or restore its source)")
    if not args.check:
        print(f"{len(sources())} notebook(s) paired, {stale} rewritten")
    return 1 if (args.check and (stale or wide)) or orphans else 0


if __name__ == "__main__":
    sys.exit(main())
