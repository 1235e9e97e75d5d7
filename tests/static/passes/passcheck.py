"""Text in, text out: parse IR, run one pass, match the printed result against CHECK
lines (FileCheck style: CHECK finds the next line containing the text, in order;
CHECK-NOT forbids a text anywhere in the output)."""
from __future__ import annotations

import textwrap

import static
from static.passes import PASSES
from static.passes.rewrite import renumber


def run(pass_name: str, ir: str, **options):
    graph = static.parse_ir(textwrap.dedent(ir).strip())
    stats = PASSES[pass_name](graph, **options)
    static.verify(graph)
    if pass_name not in ("dce", "fuse", "memory"):
        PASSES["dce"](graph)  # rewrites leave the replaced nodes for DCE
    renumber(graph)
    return str(graph), stats


def check(output: str, pattern: str) -> None:
    lines = output.splitlines()
    pos = 0
    for raw in textwrap.dedent(pattern).strip().splitlines():
        raw = raw.strip()
        if raw.startswith("CHECK-NOT:"):
            text = raw[len("CHECK-NOT:"):].strip()
            assert text not in output, f"found forbidden {text!r} in:\n{output}"
        elif raw.startswith("CHECK:"):
            text = raw[len("CHECK:"):].strip()
            while pos < len(lines) and text not in lines[pos]:
                pos += 1
            assert pos < len(lines), f"CHECK {text!r} not found (in order) in:\n{output}"
            pos += 1
