"""Every paper table shipped in calibtut/papers/ against the schema its sidecar documents."""

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
    assert {"drift", "quantile_regularization"} <= parts


@pytest.mark.parametrize("item", TABLES, ids=_ids)
def test_sidecar_names_its_source(item):
    src = paper_source(*item)
    assert set(src) == SIDECAR_KEYS
    assert set(src["paper"]) == PAPER_KEYS
    assert re.fullmatch(r"Table \d+|Figure \d+", src["table"]), src["table"]
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
