"""Every MyST notebook has an ``.ipynb`` twin generated from it, without outputs.

``jupytext --diff`` exits 0 even when the files differ, so the comparison is
done here on jupytext's reading of both files. Fix any failure with
``python3 tasks.py pair``.
"""

from __future__ import annotations

import json
from pathlib import Path

import jupytext
import pytest

from tools.pair_notebooks import (
    MAX_CODE_COLUMNS,
    NOTEBOOKS,
    OUTPUT_NB_METADATA,
    ROOT,
    expected_ipynb,
    long_code_lines,
    sources,
)

FIX = "regenerate it with `python3 tasks.py pair`"
SOURCES = sources()


def _id(path: Path) -> str:
    return str(path.relative_to(NOTEBOOKS))


def _rel(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def _cells(nb):
    return [(cell.cell_type, cell.source, dict(cell.metadata)) for cell in nb.cells]


def test_notebooks_exist():
    assert SOURCES, "no notebooks/**/*.md found"


@pytest.mark.parametrize("md", SOURCES, ids=_id)
def test_twin_exists(md):
    assert md.with_suffix(".ipynb").exists(), f"{_rel(md)} has no .ipynb twin: {FIX}"


@pytest.mark.parametrize("md", SOURCES, ids=_id)
def test_twin_has_no_outputs(md):
    twin = md.with_suffix(".ipynb")
    if not twin.exists():
        pytest.skip("no twin (reported by test_twin_exists)")
    raw = json.loads(twin.read_text(encoding="utf8"))
    dirty = [
        index
        for index, cell in enumerate(raw["cells"])
        if cell["cell_type"] == "code" and (cell.get("outputs") or cell.get("execution_count") is not None)
    ]
    assert not dirty, f"{_rel(twin)}: cells {dirty} carry outputs: {FIX}"
    leftover = [key for key in OUTPUT_NB_METADATA if key in raw.get("metadata", {})]
    assert not leftover, f"{_rel(twin)}: execution metadata {leftover}: {FIX}"


@pytest.mark.parametrize("md", SOURCES, ids=_id)
def test_twin_agrees_with_source(md):
    twin = md.with_suffix(".ipynb")
    if not twin.exists():
        pytest.skip("no twin (reported by test_twin_exists)")
    from_md, from_ipynb = jupytext.read(md), jupytext.read(twin)
    assert from_ipynb.metadata.get("kernelspec") == from_md.metadata.get("kernelspec"), (
        f"{_rel(twin)}: kernelspec differs from the .md: {FIX}"
    )
    left, right = _cells(from_md), _cells(from_ipynb)
    assert len(left) == len(right), f"{_rel(twin)}: {len(right)} cells, the .md has {len(left)}: {FIX}"
    for index, (a, b) in enumerate(zip(left, right)):
        assert a == b, f"{_rel(twin)}: cell {index} differs from the .md: {FIX}\n.md:   {a}\n.ipynb: {b}"


@pytest.mark.parametrize("md", SOURCES, ids=_id)
def test_twin_is_what_pairing_writes(md):
    """Byte for byte what ``jupytext --to ipynb --update`` writes (outputs stripped)."""
    twin = md.with_suffix(".ipynb")
    if not twin.exists():
        pytest.skip("no twin (reported by test_twin_exists)")
    assert twin.read_text(encoding="utf8") == expected_ipynb(md), f"{_rel(twin)} is stale: {FIX}"


def test_no_orphan_ipynb():
    orphans = [
        str(p.relative_to(ROOT))
        for p in NOTEBOOKS.rglob("*.ipynb")
        if ".ipynb_checkpoints" not in p.parts and not p.with_suffix(".md").exists()
    ]
    assert not orphans, f"notebooks without a .md source: {orphans}"


def test_pair_check_detects_a_difference(tmp_path):
    """The comparison fails on a twin whose code differs (jupytext --diff would exit 0)."""
    md = SOURCES[0]
    copy_md = tmp_path / md.name
    copy_md.write_text(md.read_text(encoding="utf8"), encoding="utf8")
    nb = jupytext.read(copy_md)
    code = next(cell for cell in nb.cells if cell.cell_type == "code")
    code.source += "\nx_changed = 1"
    jupytext.write(nb, copy_md.with_suffix(".ipynb"))
    with pytest.raises(AssertionError, match="differs from the .md"):
        test_twin_agrees_with_source(copy_md)


@pytest.mark.parametrize("md", SOURCES, ids=_id)
def test_code_fits_the_page(md):
    """No code line is wider than the book's code column (88 characters)."""
    wide = long_code_lines(md)
    assert not wide, f"{_rel(md)}: code lines over {MAX_CODE_COLUMNS} columns: {wide}"


def test_long_code_lines_are_found(tmp_path):
    md = tmp_path / "wide.md"
    text = SOURCES[0].read_text(encoding="utf8")
    md.write_text(text + "\n```{code-cell} ipython3\nx = 1\ny = '" + "a" * 90 + "'\n```\n", encoding="utf8")
    found = long_code_lines(md)
    assert len(found) == 1 and found[0].endswith("line 2: 96 columns"), found
    assert long_code_lines(md, limit=100) == []
