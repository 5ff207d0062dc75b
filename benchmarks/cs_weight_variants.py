"""Paper 004's IW+Temp. under every way of estimating and using the weights (issue 29).

Run from the repository root::

    python benchmarks/cs_weight_variants.py                       # U->M, 3 repeats
    python benchmarks/cs_weight_variants.py --shifts U->M M->U --repeats 3
    python benchmarks/cs_weight_variants.py --source authors --disc-schedules book authors \
        --discriminators mlp --uppers 100 1000 --repeats 5 \
        --out results/covariate_shift/weight_variants_authors

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

Two things the published study held fixed are flags: ``--source authors``
trains the source LeNet-5 by the authors' recipe (Adam at 1e-2 halved every
100 epochs, 500 epochs, batch 100, best validation error kept; ``book`` is the
full profile's 50 epochs at 1e-3; ``--source-epochs`` shortens either, for a
pilot), and ``--disc-schedules authors`` trains the network discriminator by
the authors' schedule (:data:`calibtut.experiments.covariate_shift.DISC_SCHEDULES`).
Every combination of the recipes and schedules given is run, repeat by
repeat (the repeats vary slowest, so a stopped run covers every combination).

Writes ``<out>/weight_variants.csv.gz`` (default ``--out``:
``results/covariate_shift/weight_variants/``; one row per shift, repeat,
source recipe, discriminator schedule and variant, gzip with time stamp 0 as
the committed results are kept; rewritten after every run, so a stopped run
keeps what it finished; :func:`calibtut.run.load_result` reads it) and
``provenance.json`` (machine, packages, commit, settings, CPU seconds per run,
and the check against the published run).
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import time
from pathlib import Path

import pandas as pd

from calibtut.experiments.covariate_shift import DISC_SCHEDULES, run_weight_variants
from calibtut.run.provenance import git_state, machine, package_versions

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "results" / "covariate_shift" / "05_experiments" / "runs.csv"
#: The full profile of the published run (05_experiments.md).
FULL = {"n_source": None, "n_target": None, "epochs": 50, "seed": 0}
#: Source LeNet-5 recipes: the full profile's, and the authors' (paper 004's code).
SOURCE_RECIPES = {"book": {"epochs": FULL["epochs"], "lr": 1e-3, "lr_step": None},
                  "authors": {"epochs": 500, "lr": 1e-2, "lr_step": 100}}
#: The columns that say which source model and discriminator schedule a row used.
RECIPE_COLUMNS = ["source_recipe", "source_epochs", "source_lr", "source_lr_step", "disc_schedule"]


def published_check(rows):
    """The published IW+Temp. ECE beside the matching variant of the same repeats (the book's recipe)."""
    runs = pd.read_csv(PUBLISHED, keep_default_na=False, na_values=[""])
    runs = runs[runs["method"] == "IW+Temp"].set_index(["shift", "repeat"])["ece"]
    mine = rows.query("discriminator == 'mlp' and beta_g == 'fitted' and upper == 1000 and kind == 'bound' "
                      "and temperature == 'sgd' and source_recipe == 'book' and source_epochs == @FULL['epochs'] "
                      "and disc_schedule == 'book'").set_index(["shift", "repeat"])["ece"]
    return pd.DataFrame({"published": runs.reindex(mine.index), "rerun": mine})


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shifts", nargs="+", default=["U->M"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--uppers", nargs="+", type=float, default=[10.0, 100.0, 1000.0])
    parser.add_argument("--temperatures", nargs="+", default=["exact", "sgd"])
    parser.add_argument("--discriminators", nargs="+", choices=["logistic", "mlp"], default=["logistic", "mlp"])
    parser.add_argument("--source", nargs="+", choices=list(SOURCE_RECIPES), default=["book"],
                        help="source LeNet-5 recipes (default: book)")
    parser.add_argument("--source-epochs", type=int, default=None,
                        help="train every source recipe for this many epochs instead (a pilot)")
    parser.add_argument("--disc-schedules", nargs="+", choices=list(DISC_SCHEDULES), default=["book"],
                        help="network discriminator schedules (default: book)")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "covariate_shift" / "weight_variants")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    recipes = {name: {**SOURCE_RECIPES[name], **({} if args.source_epochs is None else {"epochs": args.source_epochs})}
               for name in args.source}
    settings = {**FULL, "shifts": args.shifts, "repeats": args.repeats, "uppers": args.uppers,
                "temperatures": args.temperatures, "discriminators": args.discriminators,
                "source_recipes": recipes, "disc_schedules": {s: DISC_SCHEDULES[s] for s in args.disc_schedules}}
    frames, seconds = [], {}
    for repeat, shift, source, schedule in itertools.product(range(args.repeats), args.shifts, recipes,
                                                             args.disc_schedules):
        recipe = recipes[source]
        name = f"{shift} {source} source / {schedule} discriminator, repeat {repeat}"
        cpu = time.process_time()
        rows = run_weight_variants(shift, FULL["seed"], repeat, n_source=FULL["n_source"], n_target=FULL["n_target"],
                                   epochs=recipe["epochs"], lr=recipe["lr"], lr_step=recipe["lr_step"],
                                   discriminators=args.discriminators, uppers=args.uppers,
                                   temperatures=args.temperatures, disc_schedule=schedule)
        seconds[name] = round(time.process_time() - cpu, 1)
        frames.append(rows.assign(shift=shift, repeat=repeat, source_recipe=source, source_epochs=recipe["epochs"],
                                  source_lr=recipe["lr"], source_lr_step=recipe["lr_step"], disc_schedule=schedule))
        table = pd.concat(frames, ignore_index=True)
        first = ["shift", "repeat", *RECIPE_COLUMNS]
        table = table[[*first, *[c for c in table.columns if c not in first]]]
        data = gzip.compress(table.to_csv(index=False).encode(), compresslevel=9, mtime=0)
        (args.out / "weight_variants.csv.gz").write_bytes(data)
        (args.out / "weight_variants.csv").unlink(missing_ok=True)
        check = published_check(table)
        provenance = {"script": "benchmarks/cs_weight_variants.py", "settings": settings,
                      "cpu_seconds": seconds, "published_iw_temp_check": check.reset_index().to_dict("records"),
                      "machine": machine(), "packages": package_versions(), **git_state(ROOT)}
        (args.out / "provenance.json").write_text(json.dumps(provenance, indent=2, default=str))
        print(f"{name}: {seconds[name]} CPU s", flush=True)
    print(check)


if __name__ == "__main__":
    main()
