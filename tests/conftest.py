"""Shared pytest set-up of the test suite.

The headless-browser checks in ``tests/browser/`` need a built book, so a
plain ``pytest`` leaves them out. They run when named explicitly
(``pytest tests/browser``, checking ``_build/html``) or when ``--book-html``
names the HTML folder (``tasks.py test`` passes ``--book-html _build/html``
after the book build).

Every test runs with one torch intra-op thread (session-wide autouse fixture
``_one_torch_thread``): the team shares two cores, and torch's default thread
pool oversubscribes them and slows small tensor operations tenfold.

Tests that need an optional oracle library import it with
``pytest.importorskip`` where that library could be missing: the
minimum-dependencies check (``tests/test_packaging.py``) runs the metrics and
recalibration tests in an environment with only the oldest declared numpy,
scipy, pandas and scikit-learn, and without torch.
"""

from pathlib import Path

import pytest


def pytest_addoption(parser):
    parser.addoption(
        "--book-html",
        default=None,
        help="folder of the built HTML book (default _build/html); enables the browser checks in tests/browser/",
    )


def pytest_ignore_collect(collection_path: Path, config):
    if collection_path.name == "browser" and collection_path.parent == Path(__file__).parent:
        return config.getoption("--book-html") is None
    return None


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    try:
        import torch
    except ImportError:  # the minimum-dependencies environment has no torch
        yield
        return
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
