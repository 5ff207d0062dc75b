"""How much IW+Temp. depends on the source network it corrects (issue 41): the network study's sweep.

Run from the repository root, under the book's reference numerics::

    python -m calibtut.numerics -- python benchmarks/cs_network_study.py

It runs :func:`calibtut.experiments.covariate_shift.run_network_study` over
:func:`calibtut.experiments.covariate_shift.network_study_tasks` (the authors'
shipped network, then ten seeds of our recipe and of the authors' recipe,
interleaved, three calibrator repeats each) through :func:`calibtut.run.sweep`,
serially, into the store that chapter 6 reads
(``results/covariate_shift/06_paper_vs_ours/sweeps/cs_network_study.jsonl``;
``--store`` puts it elsewhere). The sweep is resumable: run the same command
again and only the tasks missing from the store are computed. A network of
the authors' recipe costs about ten CPU-minutes (500 epochs), one of ours
about one and a half.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from calibtut.experiments.covariate_shift import network_study_tasks, run_network_study
from calibtut.run import sweep

ROOT = Path(__file__).resolve().parents[1]
STORE = ROOT / "results" / "covariate_shift" / "06_paper_vs_ours" / "sweeps" / "cs_network_study.jsonl"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=10, help="source seeds per trained recipe")
    parser.add_argument("--repeats", type=int, default=3, help="calibrator repeats per network")
    parser.add_argument("--store", type=Path, default=STORE)
    args = parser.parse_args(argv)
    tasks = network_study_tasks(range(args.seeds), repeats=args.repeats)
    rows = sweep(tasks, run_network_study, store=args.store, desc="cs_network_study", seconds="seconds",
                 progress=False)
    print(rows.groupby(["recipe", "seed"])["seconds"].sum().to_string(), flush=True)


if __name__ == "__main__":
    main()
