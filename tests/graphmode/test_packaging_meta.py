"""Package metadata a user (and PyPI) reads: one version everywhere, the platforms the
README promises, project links, and `dir(static)` showing the public API only."""
from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

import eager
import graphmode
import static
from graphmode import cli

ROOT = Path(__file__).resolve().parents[2]
tomllib = pytest.importorskip("tomllib", reason="tomllib is Python 3.11's")  # 3.10 has no TOML reader
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_one_version_everywhere(capsys):
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", graphmode.__version__)
    assert graphmode.__version__ == eager.__version__ == PROJECT["version"]
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out == f"graphmode {graphmode.__version__}\n"


def test_classifiers_name_the_platforms_the_readme_promises():
    classifiers = set(PROJECT["classifiers"])
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "macOS" in readme and "Windows" in readme
    assert {"Operating System :: POSIX :: Linux", "Operating System :: MacOS",
            "Operating System :: Microsoft :: Windows"} <= classifiers


def test_project_urls_and_readme_links_work_outside_the_repository():
    urls = PROJECT["urls"]
    assert {"Homepage", "Documentation", "Source", "Issues", "Changelog"} <= set(urls)
    assert all(u.startswith("https://") for u in urls.values())
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", readme)
    assert links, "the README has no links: the scan is broken"
    relative = [link for link in links if not link.startswith(("https://", "http://", "#", "mailto:"))]
    # PyPI renders the README alone: a link relative to the repository leads nowhere there
    assert not relative, f"relative links in README.md: {relative}"


def test_dir_of_static_is_its_public_api():
    importlib.import_module("static.compiled")  # an imported submodule must not show up

    names = dir(static)
    assert names == sorted(static.__all__)
    assert "compile" in names and "trace" in names and "value_and_grad" in names
    assert not [n for n in names if n.startswith("_") or n in ("importlib", "types", "Any", "TYPE_CHECKING")]
    for name in names:
        assert getattr(static, name) is not None
    assert set(static._LAZY) == set(static.__all__)  # every lazy public name is listed, and only those
