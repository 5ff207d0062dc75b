"""Paper 004's IW+Temp. under every way of estimating and using the weights (issue 29).

Run from the repository root::

    python benchmarks/cs_weight_variants.py                       # U->M, 3 repeats
    python benchmarks/cs_weight_variants.py --shifts U->M M->U --repeats 3

For each shift and calibrator repeat it calls
:func:`calibtut.experiments.covariate_shift.run_weight_variants` at the sizes
of the book's ``full`` profile (all images, a 50-epoch LeNet-5, as the
published run of ``notebooks/covariate_shift/05_experiments.md``): logistic or
network discriminator, its temperature ``beta_g`` fitted or not, the clip
``U`` at 10, 100 and 1000, weights ``1/g - 1/2`` or ``1/g - 1``, exact or SGD
temperature, with the effective sample size and the other diagnostics of the
weights. The network, fitted-``beta_g``, ``U = 1000``, ``1/g - 1/2``, SGD row
is the published run's IW+Temp. of the same repeat, which the script checks
against ``results/covariate_shift/05_experiments/runs.csv``.

Writes ``results/covariate_shift/weight_variants/weight_variants.csv.gz`` (one
row per shift, repeat and variant, gzip with time stamp 0 as the committed
results are kept; rewritten after every repeat, so a stopped run keeps what it
finished; :func:`calibtut.run.load_result` reads it) and ``provenance.json``
(machine, packages, commit, settings, CPU seconds per repeat, and the check
against the published run).
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from pathlib import Path

import pandas as pd

from calibtut.experiments.covariate_shift import run_weight_variants
from calibtut.run.provenance import git_state, machine, package_versions

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "results" / "covariate_shift" / "05_experiments" / "runs.csv"
#: The full profile of the published run (05_experiments.md).
FULL = {"n_source": None, "n_target": None, "epochs": 50, "seed": 0}


def published_check(rows):
    """The published IW+Temp. ECE beside the matching variant of the same repeats."""
    runs = pd.read_csv(PUBLISHED, keep_default_na=False, na_values=[""])
    runs = runs[runs["method"] == "IW+Temp"].set_index(["shift", "repeat"])["ece"]
    mine = rows.query("discriminator == 'mlp' and beta_g == 'fitted' and upper == 1000 and kind == 'bound' "
                      "and temperature == 'sgd'").set_index(["shift", "repeat"])["ece"]
    return pd.DataFrame({"published": runs.reindex(mine.index), "rerun": mine})


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shifts", nargs="+", default=["U->M"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--uppers", nargs="+", type=float, default=[10.0, 100.0, 1000.0])
    parser.add_argument("--temperatures", nargs="+", default=["exact", "sgd"])
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "covariate_shift" / "weight_variants")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    settings = {**FULL, "shifts": args.shifts, "repeats": args.repeats, "uppers": args.uppers,
                "temperatures": args.temperatures, "discriminators": ["logistic", "mlp"]}
    frames, seconds = [], {}
    for shift in args.shifts:
        for repeat in range(args.repeats):
            cpu = time.process_time()
            rows = run_weight_variants(shift, FULL["seed"], repeat, n_source=FULL["n_source"],
                                       n_target=FULL["n_target"], epochs=FULL["epochs"], uppers=args.uppers,
                                       temperatures=args.temperatures)
            seconds[f"{shift} repeat {repeat}"] = round(time.process_time() - cpu, 1)
            frames.append(rows.assign(shift=shift, repeat=repeat))
            table = pd.concat(frames, ignore_index=True)
            table = table[["shift", "repeat", *[c for c in table.columns if c not in ("shift", "repeat")]]]
            data = gzip.compress(table.to_csv(index=False).encode(), compresslevel=9, mtime=0)
            (args.out / "weight_variants.csv.gz").write_bytes(data)
            (args.out / "weight_variants.csv").unlink(missing_ok=True)
            check = published_check(table)
            provenance = {"script": "benchmarks/cs_weight_variants.py", "settings": settings,
                          "cpu_seconds": seconds, "published_iw_temp_check": check.reset_index().to_dict("records"),
                          "machine": machine(), "packages": package_versions(), **git_state(ROOT)}
            (args.out / "provenance.json").write_text(json.dumps(provenance, indent=2, default=str))
            print(f"{shift} repeat {repeat}: {seconds[f'{shift} repeat {repeat}']} CPU s", flush=True)
    print(check)


if __name__ == "__main__":
    main()
