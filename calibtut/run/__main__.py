"""Command line: ``python -m calibtut.run NOTEBOOK [--profile P] [-p NAME VALUE ...] [--workers N]``."""

from __future__ import annotations

import argparse
import signal
import sys

from calibtut.numerics import DEFAULT_PROFILE
from calibtut.numerics import PROFILES as NUMERICS_PROFILES
from calibtut.run.artifacts import publish, read_provenance
from calibtut.run.engine import connect, resolve_engine
from calibtut.run.execute import (
    FreshRefused,
    NotebookFailed,
    RunInterrupted,
    format_summary,
    parse_value,
    run_notebook,
)
from calibtut.run.profiles import PROFILES


def build_parser():
    """The argument parser of ``python -m calibtut.run``.

    Examples
    --------
    >>> args = build_parser().parse_args(["nb.md", "-p", "seed", "3"])
    >>> args.profile, args.parameters, args.fresh
    ('ci', [['seed', '3']], False)
    """
    parser = argparse.ArgumentParser(
        prog="python -m calibtut.run",
        description="Execute a calibtut notebook with papermill at a profile, "
        "saving the executed notebook, its tables and provenance.json in a run directory.",
    )
    parser.add_argument("notebook", help="notebooks/<part>/<nn>_<name>.md (or .ipynb)")
    parser.add_argument("--profile", default="ci", choices=PROFILES, help="size profile (default: ci)")
    parser.add_argument(
        "-p", "--parameter", dest="parameters", nargs=2, action="append", default=[],
        metavar=("NAME", "VALUE"), help="override a parameter (parsed like papermill's -p); repeatable",
    )
    parser.add_argument("--out", help="run directory (default: _build/runs/<part>/<nb>/<profile>-<hash>; "
                                      "not inside notebooks/ or results/)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--resume", dest="fresh", action="store_false",
                      help="reuse the run directory, skipping finished sweep tasks (the default)")
    mode.add_argument("--fresh", dest="fresh", action="store_true",
                      help="delete the run directory first (with the sweep stores it holds); "
                           "nothing under results/ is deleted: when the run keeps its sweep stores in "
                           "results/<part>/<nb>/sweeps/ (a full run at the default parameters) and they hold "
                           "files, the run is refused (exit status 2)")
    parser.set_defaults(fresh=False)
    parser.add_argument("--publish", action="store_true",
                        help="copy tables and provenance of a full run into results/<part>/<nb>/")
    parser.add_argument("--numerics", default=DEFAULT_PROFILE, choices=list(NUMERICS_PROFILES),
                        help="numerics profile of the kernel and the local workers (default: reference, every "
                             "library limited to AVX2 and one thread, the same bits on any x86-64 machine; "
                             "native: the CPU's fastest kernels)")
    parser.add_argument("--no-progress", dest="progress", action="store_false", help="hide the progress bar")
    parser.add_argument("--log-output", action="store_true", help="stream the notebook's outputs to the terminal")
    where = parser.add_argument_group(
        "where sweeps run", "every calibtut.run.sweep of the notebook runs there (default: serially in the kernel)")
    place = where.add_mutually_exclusive_group()
    place.add_argument("--workers", type=int, metavar="N",
                       help="a local Dask cluster of N worker processes (e.g. the number of cores)")
    place.add_argument("--scheduler", metavar="ADDRESS",
                       help="an existing Dask cluster, e.g. tcp://host:8786 (dask-jobqueue, dask-kubernetes)")
    where.add_argument("--threads-per-worker", type=int, metavar="T",
                       help="BLAS/OpenMP/torch threads per worker (default 1)")
    where.add_argument("--gpu-workers", type=int, metavar="K",
                       help="local workers that take tasks with device='cuda' (default 1 if torch sees a GPU)")
    return parser


def _terminate_as_interrupt(signum, frame):
    """SIGTERM stops the run the way Ctrl-C does: the kernel is shut down, finished tasks stay stored."""
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv=None):
    """Run the command line; returns the exit status.

    Examples
    --------
    >>> main(["missing.md"])  # doctest: +SKIP
    error: notebook missing.md does not exist
    1
    """
    args = build_parser().parse_args(argv)
    parameters = {}
    for name, value in args.parameters:
        if name == "profile":
            print("error: set the profile with --profile, not -p profile", file=sys.stderr)
            return 2
        parameters[name] = parse_value(value)
    if args.publish and args.profile != "full":
        print("error: --publish needs --profile full (only full runs go into results/)", file=sys.stderr)
        return 2
    asked = (args.workers, args.scheduler, args.threads_per_worker, args.gpu_workers)
    try:
        engine = resolve_engine(*asked) if any(a is not None for a in asked) else None
        if engine is not None and engine.scheduler is not None:
            connect(engine).close()  # fail now, not in the first sweep, when it cannot be reached
    except (ValueError, TypeError, ImportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    previous = signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    try:
        run_dir = run_notebook(
            args.notebook, args.profile, parameters, out=args.out, fresh=args.fresh,
            progress=args.progress, log_output=args.log_output, engine=engine, numerics=args.numerics,
        )
    except KeyboardInterrupt as exc:
        print("interrupted: finished sweep tasks are stored; run the same command again to resume",
              file=sys.stderr)
        if isinstance(exc, RunInterrupted):
            _print_summary(exc.run_dir)
        return 130
    except NotebookFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        _print_summary(exc.run_dir)
        return 1
    except FreshRefused as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (FileNotFoundError, ValueError, TypeError, ImportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(f"run directory: {run_dir}")
    if args.publish:
        print(f"published to: {publish(run_dir)}")
    _print_summary(run_dir)
    return 0


def _print_summary(run_dir):
    """Print what the run in ``run_dir`` computed, stored, wrote and checked (see ``format_summary``)."""
    print(format_summary(read_provenance(run_dir)["summary"]), flush=True)


if __name__ == "__main__":
    sys.exit(main())
