"""Command line: ``python -m calibtut.run NOTEBOOK [--profile P] [-p NAME VALUE ...]``."""

from __future__ import annotations

import argparse
import sys

from .artifacts import publish
from .execute import NotebookFailed, parse_value, run_notebook
from .profiles import PROFILES


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
    parser.add_argument("--out", help="run directory (default: _build/runs/<part>/<nb>/<profile>-<hash>)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--resume", dest="fresh", action="store_false",
                      help="reuse the run directory, skipping finished sweep tasks (the default)")
    mode.add_argument("--fresh", dest="fresh", action="store_true", help="delete the run directory first")
    parser.set_defaults(fresh=False)
    parser.add_argument("--publish", action="store_true",
                        help="copy tables and provenance of a full run into results/<part>/<nb>/")
    parser.add_argument("--no-progress", dest="progress", action="store_false", help="hide the progress bar")
    parser.add_argument("--log-output", action="store_true", help="stream the notebook's outputs to the terminal")
    return parser


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
    try:
        run_dir = run_notebook(
            args.notebook, args.profile, parameters, out=args.out, fresh=args.fresh,
            progress=args.progress, log_output=args.log_output,
        )
    except NotebookFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except (FileNotFoundError, ValueError, TypeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"run directory: {run_dir}")
    if args.publish:
        print(f"published to: {publish(run_dir)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
