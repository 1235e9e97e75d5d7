"""The documentation site says what the code does: every page in the navigation exists,
the command reference shows the parser's own --help, the JSON schema page documents every
field `graphmode compare --json` writes, and the API pages name objects that exist.
(`make docs` builds the site with --strict in CI; these checks need no MkDocs.)"""
from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import eager
from graphmode import cli

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
MKDOCS = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")


def test_every_page_in_the_navigation_exists_and_every_page_is_in_it():
    pages = re.findall(r":\s*([\w/.-]+\.md)\s*$", MKDOCS, flags=re.M)
    assert len(pages) >= 12
    assert all((DOCS / p).is_file() for p in pages), [p for p in pages if not (DOCS / p).is_file()]
    for needed in ("tutorial.md", "sharp-bits.md", "cli.md", "json-schema.md", "troubleshooting.md", "faq.md",
                   "api/eager.md", "api/eager-nn.md", "api/eager-optim.md", "api/static.md", "api/graphmode.md"):
        assert needed in pages


def test_the_api_pages_name_objects_that_exist():
    names = [n for page in (DOCS / "api").glob("*.md")
             for n in re.findall(r"^::: ([\w.]+)", page.read_text(encoding="utf-8"), flags=re.M)]
    assert len(names) >= 40
    for dotted in names:
        parts = dotted.split(".")
        for k in range(len(parts), 0, -1):  # the longest importable prefix, then attributes
            try:
                obj = importlib.import_module(".".join(parts[:k]))
            except ImportError:
                continue
            for attr in parts[k:]:
                obj = getattr(obj, attr)
            break
        else:
            pytest.fail(f"{dotted} does not import")


def _help(command: str) -> str:
    env = dict(os.environ, COLUMNS="100")
    out = subprocess.run([sys.executable, "-m", "graphmode", command, "--help"], capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=60, check=True).stdout
    return out.rstrip()


def test_the_command_reference_shows_the_parsers_help():
    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    shown = re.findall(r"```text\n(.*?)\n```", page, flags=re.S)
    commands = ("compare", "ir", "graph", "cache")
    assert len(shown) == len(commands)
    for command, text in zip(commands, shown):
        assert text == _help(command), f"docs/cli.md is out of date for `graphmode {command} --help`"
    for status in (0, 1, 2, 3, 4, 130):
        assert re.search(rf"^\| {status} \|", page, flags=re.M)
    assert (cli.DISAGREE, cli.USAGE_ERROR, cli.WORKLOAD_FAILED, cli.TOOL_MISSING, cli.INTERRUPTED) == (1, 2, 3, 4, 130)


def test_every_option_has_help_that_shows_its_default():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, p in sub.choices.items():
        if name.startswith("_"):
            continue
        formatter = p._get_formatter()
        for action in p._actions:
            if action.option_strings and action.dest != "help":
                assert action.help, f"graphmode {name} {action.option_strings[0]} has no help text"
                shown = formatter._get_help_string(action)
                assert "default" in shown or "required" in shown, (name, action.option_strings, shown)


def test_the_json_schema_page_documents_every_field(tmp_path):
    out = tmp_path / "r.json"
    code = cli.main(["compare", str(ROOT / "examples/workloads/w1_seed.py"), "--sizes", "64", "--repeat", "1",
                     "--json", str(out)])
    assert code == 0
    data = json.loads(out.read_text())
    page = (DOCS / "json-schema.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `(\w+)` \|", page, flags=re.M))
    result = data["results"][0]
    fields = set(data) | set(result) | set(result["eager"])
    assert fields <= documented, sorted(fields - documented)
    assert data["schema"] == "graphmode-compare/1" and "graphmode-compare/1" in page
    peer_fields = {"library", "available", "note", "eager", "compiled", "compile_s", "max_rel_error"}
    assert peer_fields <= documented
    example = json.loads(re.search(r"```json\n(.*?)\n```", page, flags=re.S).group(1))
    assert set(example) == set(data) and set(example["results"][0]) == set(result)


def test_the_sharp_bits_page_links_the_compiled_semantics_and_covers_its_topics():
    page = (DOCS / "sharp-bits.md").read_text(encoding="utf-8")
    assert "compiled-semantics.md" in page
    for heading in ("What tracing cannot see", "Retraces", "The first step", "Randomness"):
        assert f"## {heading}" in page
    assert eager.__version__ in (DOCS / "json-schema.md").read_text(encoding="utf-8")
