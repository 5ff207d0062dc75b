"""Every paper table shipped in calibtut/papers/ against the schema its sidecar documents."""

import ast
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calibtut.papers import paper_source, paper_table, paper_tables

ROOT = Path(__file__).resolve().parents[1]
TABLES = paper_tables()
SIDECAR_KEYS = {"paper", "table", "page", "caption", "columns", "key", "units", "missing", "notes"}
PAPER_KEYS = {"title", "authors", "venue", "cite", "copy"}


def _ids(item):
    return "/".join(item)


def _selected(table, where):
    mask = pd.Series(True, index=table.index)
    for column, value in where.items():
        mask &= table[column] == value
    return mask


def test_every_part_has_tables():
    parts = {part for part, _ in TABLES}
    assert {"drift", "quantile_regularization", "regression_study"} <= parts


@pytest.mark.parametrize("item", TABLES, ids=_ids)
def test_sidecar_names_its_source(item):
    src = paper_source(*item)
    assert set(src) == SIDECAR_KEYS
    assert set(src["paper"]) == PAPER_KEYS
    # "Text claims": directional statements of the text, kept as data like a table (paper 002)
    assert re.fullmatch(r"Table \d+|Figure \d+|Text claims", src["table"]), src["table"]
    assert isinstance(src["page"], int) and src["page"] >= 1
    bib = (ROOT / "book" / "references.bib").read_text(encoding="utf8")
    assert "{" + src["paper"]["cite"] + "," in bib, f"{src['paper']['cite']} is not in book/references.bib"
    assert src["caption"] and all(spec["meaning"] for spec in src["columns"].values())


@pytest.mark.parametrize("item", TABLES, ids=_ids)
def test_table_follows_its_schema(item):
    src = paper_source(*item)
    table = paper_table(*item)
    columns = src["columns"]
    assert table.columns.tolist() == list(columns), "columns differ from the sidecar (names or order)"
    assert len(table) > 0
    for name, spec in columns.items():
        assert spec["type"] in ("str", "float")
        if spec["type"] == "str":
            assert table[name].notna().all(), f"text column {name} has blank cells"
            if "values" in spec:
                bad = set(table[name]) - set(spec["values"])
                assert not bad, f"column {name}: values {bad} are not in the sidecar"
                assert set(spec["values"]) <= set(table[name]), f"column {name}: a documented value is absent"
        else:
            assert table[name].dtype == np.float64
            assert np.isfinite(table[name].dropna()).all()
    assert set(src["key"]) <= set(columns)
    assert not table.duplicated(src["key"]).any(), "two rows share a key"
    metrics = set(table["metric"]) if "metric" in table else set()
    assert metrics <= set(src["units"]), f"metrics without units: {metrics - set(src['units'])}"


@pytest.mark.parametrize("item", TABLES, ids=_ids)
def test_blank_cells_are_exactly_the_documented_ones(item):
    src = paper_source(*item)
    table = paper_table(*item)
    documented = pd.DataFrame(False, index=table.index, columns=table.columns)
    for entry in src["missing"]:
        assert set(entry) == {"where", "column", "why"} and entry["why"]
        mask = _selected(table, entry["where"])
        assert mask.any(), f"missing entry {entry} selects no row"
        assert table.loc[mask, entry["column"]].isna().all(), f"missing entry {entry} selects a filled cell"
        documented.loc[mask, entry["column"]] = True
    blank = table.isna()
    undocumented = blank & ~documented
    assert not undocumented.any().any(), f"blank cells without a reason:\n{table[undocumented.any(axis=1)]}"


def test_qr_tables_agree_where_the_paper_repeats_itself():
    """Tables 6-7 repeat the single-model columns of Tables 1-2 and 4-5: a typing check."""
    for model, t12, t45, t67 in (("dropout", "table1", "table4", "table6"), ("ensemble", "table2", "table5", "table7")):
        key = ["dataset", "metric"]
        repeated = paper_table("quantile_regularization", t67).set_index(key)["mean"]
        first = pd.concat([paper_table("quantile_regularization", t) for t in (t12, t45)])
        first = first[first["method"] == "base"].set_index(key)["mean"]
        common = repeated.index.intersection(first.index)
        assert len(common) == 14, (model, len(common))
        assert np.array_equal(repeated[common].values, first[common].values), model


def test_drift_table1_hand_checked_cells():
    t = paper_table("drift", "table1").set_index(["row", "metric", "method"])["value"]
    assert t["scale_shift", "sharpness", "regret"] == 10.90
    assert t["stock", "ece", "ours"] == 0.051
    assert math.isnan(t["COVID", "pinball", "regret"])


@pytest.mark.parametrize("part, table, error", [
    (1, "table1", TypeError),
    ("drift", None, TypeError),
    ("drift", "table9", ValueError),
    ("qr", "table1", ValueError),
])
def test_unknown_tables_are_refused(part, table, error):
    with pytest.raises(error, match="part|table"):
        paper_table(part, table)


# ------------------------------------------------------------------ no paper numbers typed in notebooks

#: A code cell with this many literals that look printed (two or more decimals, not a multiple of 0.05)
#: is a paper's table typed inline. Today's chapters have at most 6 in a cell; the tables they used to type
#: inline had 18 to 261.
MAX_PRINTED_LITERALS = 12


def printed_literals(code):
    """Float literals of ``code`` that look typed from a table: 13.15, 0.052, not 0.5, 1e-3 or 2.0."""
    found = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Constant) and isinstance(node.value, float):
            text = ast.get_source_segment(code, node) or ""
            if "." not in text or "e" in text.lower():
                continue
            if len(text.split(".")[1]) >= 2 and not math.isclose(node.value * 20, round(node.value * 20)):
                found.append(node.value)
    return found


def test_the_detector_finds_a_typed_table():
    values = paper_table("drift", "table1")["value"].dropna().tolist()
    typed = "paper = " + repr(values)
    assert len(printed_literals(typed)) >= MAX_PRINTED_LITERALS
    assert printed_literals("x = [0.5, 2.0, 1e-3, 0.25, 0.95, 0.1]") == []


@pytest.mark.parametrize("md", sorted((ROOT / "notebooks").rglob("*.md")), ids=lambda p: p.name)
def test_no_notebook_types_a_paper_table(md):
    import jupytext

    for index, cell in enumerate(c for c in jupytext.read(md).cells if c.cell_type == "code"):
        found = printed_literals(cell.source)
        assert len(found) < MAX_PRINTED_LITERALS, (
            f"{md.relative_to(ROOT)}, code cell {index + 1}: {len(found)} numbers that look typed from a paper "
            f"({found[:5]}, ...); put them in calibtut/papers/<part>/<table>.csv and read them with paper_table"
        )
