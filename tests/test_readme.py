"""The README's quickstart runs and prints what the README says it prints.

The block is the fenced ``python`` block after the ``<!-- quickstart`` marker;
it is executed as written (numpy-side families only, a fraction of a CPU-second).
"""

from __future__ import annotations

import contextlib
import io
import re
import warnings
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def quickstart_block(text):
    match = re.search(r"<!-- quickstart[^\n]*-->\n```python\n(.*?)\n```\n", text, flags=re.S)
    assert match, "README.md has no python block after a <!-- quickstart ... --> marker"
    return match.group(1)


def test_the_readme_quickstart_runs_as_written():
    text = README.read_text(encoding="utf8")
    code = quickstart_block(text)
    out = io.StringIO()
    namespace = {"__name__": "readme_quickstart"}
    with warnings.catch_warnings(), contextlib.redirect_stdout(out):
        warnings.simplefilter("error")  # the quickstart must not warn (logits, not probabilities)
        exec(compile(code, str(README), "exec"), namespace)
    printed = out.getvalue()
    assert namespace["ts"].temperature_ == pytest.approx(2.0, abs=0.15)  # the true temperature
    # the README quotes the printed numbers
    first = printed.splitlines()[0]
    assert first in text, f"the README's text does not quote {first!r}"
    for number in re.findall(r"coverage (\d\.\d{3})", printed) + re.findall(r"mean size (\d\.\d\d)", printed):
        assert number in text.split("<!-- quickstart")[1], f"{number} printed but not in the README"
    # coverage at least 1 - alpha up to the spread of 2,000 test points (binomial s.d. 0.007) and the
    # calibration draw (about as much): 3 s.d. of the sum
    for cov in map(float, re.findall(r"coverage (\d\.\d{3})", printed)):
        assert cov > 0.9 - 3 * 0.0095, printed


def test_the_marker_finds_the_block():
    text = "intro\n<!-- quickstart: x -->\n```python\nx = 1\n```\nmore\n"
    assert quickstart_block(text) == "x = 1"
