"""Smoke test of benchmarks/bench_peers.py: its quick mode runs, checks the outputs and writes its table."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


def test_quick_peer_benchmark_writes_ratios_of_agreeing_outputs(tmp_path):
    out = tmp_path / "peers.csv"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_peers.py"), "--quick", "--repeats", "1",
                    "--out", str(out)], check=True, capture_output=True, text=True, timeout=600, cwd=ROOT)
    table = pd.read_csv(out)
    assert {"kernel", "peer", "size", "calibtut_s", "peer_s", "ratio", "agreement", "note"} <= set(table.columns)
    assert (table["ratio"] > 0).all() and len(table) >= 10
    # where the definitions coincide the outputs agree: numbers to 1e-9, sets and neighbours exactly
    exact = table[table["kernel"].isin(["Venn-ABERS (p0, p1)", "CRPS, Gaussian", "split conformal interval",
                                        "ECE (confidence, correct)"])]
    assert not exact.empty and (exact["agreement"] < 1e-9).all()
    lac = table[table["kernel"] == "split sets, LAC"]
    assert (lac["agreement"] > 0.999).all()
    machine = json.loads(out.with_suffix(".json").read_text())
    assert machine["threads_per_side"] == 1 and machine["mode"] == "quick"
