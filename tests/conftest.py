"""Shared pytest set-up of the test suite.

The headless-browser checks in ``tests/browser/`` need a built book, so a
plain ``pytest`` leaves them out. They run when named explicitly
(``pytest tests/browser``, checking ``_build/html``) or when ``--book-html``
names the HTML folder (``tasks.py test`` passes ``--book-html _build/html``
after the book build).
"""

from pathlib import Path


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
