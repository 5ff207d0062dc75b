"""The licences and the citation file say the same thing everywhere."""

from __future__ import annotations

import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def test_code_is_mit_everywhere_it_is_declared():
    assert (ROOT / "LICENSE").read_text(encoding="utf8").startswith("MIT License\n")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf8"))["project"]
    assert project["license"] == "MIT"
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf8"))
    assert cff["license"] == "MIT" and cff["version"] == project["version"]


def test_citation_file_has_what_cff_requires():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf8"))
    assert cff["cff-version"] == "1.2.0"
    assert {"message", "title", "authors"} <= set(cff) and cff["authors"]


def test_text_licence_is_in_the_footer_and_names_what_it_does_not_cover():
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf8"))
    assert "MIT" in config["copyright"] and "CC BY 4.0" in config["copyright"]
    content = (ROOT / "LICENSE-CONTENT.md").read_text(encoding="utf8")
    assert "creativecommons.org/licenses/by/4.0" in content and "Apache-2.0" in content
