"""Horizontal fusion of the driver's small kernel calls (a "combo kernel"): region functions
that open no OpenMP team are called as one C function that calls each of them in turn.

A training step ends with many small independent regions: an optimizer's update of each
parameter, batch norm's running statistics, the step counts. Each was one call of the native
call path (its arguments checked, its outputs made), and one more Python line the step runs
cold after its large kernels. Here each such call moves down to just before the first line
that reads what it writes (the end of the driver when only the caller reads it), and the
calls that meet there become one: one call, one argument check, every output made at once.
A region reading another's output in the same group gets the other's buffer in C, and an
output only the group reads is scratch on the C stack rather than an array the call makes.

Nothing is computed differently: each region is the same C function with the same operands,
called in the same relative order, so the results are the same bits. What moves is only when
a region runs relative to the Python lines between its old and new place, none of which reads
its outputs or rebinds its inputs (the driver's names are single assignments; a line that
rebinds a name a call reads stops the move there). `GRAPHMODE_NATIVE_COMBINE=0`
(in the native backend's cache key) writes every call where it was.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from gmbase import settings

from ..render import py_literal

if TYPE_CHECKING:
    from .driver import NativeModule

_IDENT = re.compile(r"[A-Za-z_]\w*")
_ASSIGNED = re.compile(r"^\s*([A-Za-z_][\w, ]*?)\s*=[^=]")


def enabled() -> bool:
    """Whether small region calls are combined (GRAPHMODE_NATIVE_COMBINE, on unless 0)."""
    return settings.switch("GRAPHMODE_NATIVE_COMBINE")


def fingerprint() -> str:
    return "" if enabled() else ";native_combine=0"


def combinable(lines: list) -> bool:
    """Whether a region function may be called from a combined function: it opens no OpenMP
    team (every loop below GM_PARALLEL_MIN elements runs on the calling thread), so what it
    costs is mostly its call, which combining saves."""
    return not any("omp parallel" in line for line in lines)


def _assigned(line: str) -> set:
    found = _ASSIGNED.match(line)
    return set(_IDENT.findall(found.group(1))) if found else set()


def _top_level(line: str) -> bool:
    return not line[:1].isspace()


def combine_calls(m: "NativeModule") -> None:
    """Rewrite m.body: the combinable calls (kernel records with `combinable`) moved as late as
    their readers allow and those that meet called as one C function (added to m.functions
    and m.kernels). A lone call stays where it was."""
    calls = [k for k in m.kernels if k.get("combinable")]
    if len(calls) < 2 or m.symbols or not enabled():
        return
    body = m.body
    n = len(body)
    owner: dict = {}  # body index -> the combinable call whose lines hold it
    for k in calls:
        start, end = k["at"]
        if not _top_level(body[start]):
            return  # (every call of the module's own body is at its top level)
        for j in range(start, end):
            owner[j] = k
    tokens = [set(_IDENT.findall(line)) for line in body]
    pinned: set = set()
    while True:  # a call left alone stays where it was: the calls it waits for are placed again
        deadline = _deadlines(body, calls, owner, tokens, pinned)
        groups: dict = {}
        for k in calls:
            groups.setdefault(deadline[id(k)], []).append(k)
        alone = {id(ks[0]) for ks in groups.values() if len(ks) == 1} - pinned
        if not alone:
            break
        pinned |= alone
    placed: dict = {}
    moved: set = set()
    outputs = {m.src(v) for v in m.graph.outputs}
    for at, members in groups.items():
        if len(members) < 2:
            continue
        spans = {j for k in members for j in range(*k["at"])}
        read = outputs.union(*(tokens[j] for j in range(n) if j not in spans))
        placed[at] = _combined_call(m, members, read)
        for k in members:
            moved.add(id(k))
    if not placed:
        return
    out: list = []
    j = 0
    while j <= n:
        if j in placed:
            out += placed[j]
        if j == n:
            break
        k = owner.get(j)
        if k is not None and id(k) in moved:
            out.append(f"# {k['const']} ({k['fn']}): runs in the combined call below")
            j = k["at"][1]
            continue
        out.append(body[j])
        j += 1
    m.body = out


def _deadlines(body: list, calls: list, owner: dict, tokens: list, pinned: set) -> dict:
    """Per call (by id): the body index it can move down to, which is before the first line
    that reads what it writes or rebinds what it reads, and no later than the place of a
    combinable call reading it; a pinned call keeps its own place."""
    n = len(body)
    deadline: dict = {}
    for k in reversed(calls):
        start, end = k["at"]
        if id(k) in pinned:
            deadline[id(k)] = start
            continue
        writes = set(k["made"]) | {src for _, src, _, w in k["params"] if w}
        reads = {src for _, src, _, w in k["params"] if not w}
        d, j = n, end
        while j < d:
            other = owner.get(j)
            if other is not None:  # another combinable call: it runs after this one where it reads it
                if any(tokens[i] & writes for i in range(j, other["at"][1])):
                    d = min(d, deadline[id(other)])
                j = other["at"][1]
                continue
            if tokens[j] & writes or _assigned(body[j]) & (reads | writes):
                d = j
                break
            j += 1
        while end < d < n and not _top_level(body[d]):
            d -= 1  # to the statement holding the reader
        while end < d and body[d - 1].startswith("#"):
            d -= 1  # above the reader's IR comments
        deadline[id(k)] = d
    return deadline


SCRATCH_MAX_BYTES = 1 << 12  # a combined call's scratch on the C stack, at most


def _combined_call(m: "NativeModule", members: list, read: set) -> list:
    """The driver lines of one call running `members` in order, and its C function. An output
    of a member that only later members read (not a line outside the group: `read`, nor the
    graph's result) is scratch of the C function, not an array the call makes (a step's
    learning-rate factors, a reduction's partial sums)."""
    given: list = []  # (source, converted source, byte size, writable, dtype)
    made: list = []  # (name, byte size, dtype)
    scratch: list = []  # (name, byte size)
    where: dict = {}  # name -> ("given" | "made", position), for the names the group passes
    plans = []
    for k in members:
        idx = []
        for (_, src, nbytes, w), dt, conv in zip(k["params"], k["dtypes_of"], k["converted_of"]):
            if w and src in k["made"] and src not in read and \
                    sum(nb for _, nb in scratch) + nbytes <= SCRATCH_MAX_BYTES:
                where[src] = ("scratch", len(scratch))
                scratch.append((src, nbytes))
            elif w and src in k["made"]:
                where[src] = ("made", len(made))
                made.append((src, nbytes, dt))
            elif src in where and (w or where[src][0] != "given" or given[where[src][1]][2:] == (nbytes, False, dt)):
                if w:  # (a buffer written twice in a group is not formed: names are single assignments)
                    raise AssertionError(f"{src} written by two calls of one group")
            else:
                where[src] = ("given", len(given))
                given.append((src, conv, nbytes, w, dt))
            idx.append(where[src])
        plans.append((k, idx))
    n_given = len(given)
    const = f"_K{len(m.kernels)}"
    fn = f"gm_combo{len(m.functions)}"
    # declared here, at block scope (C linkage, as the function encloses them): a split build
    # (gmnative.build.split_source) may compile the regions in another part
    lines = [f"void {fn_name}(void* const*, int);" for fn_name in dict.fromkeys(k["fn"] for k in members)]
    lines += [f"alignas(64) unsigned char gm_scratch{j}[{max(nb, 1)}];  // {name}" for j, (name, nb) in enumerate(scratch)]

    def arg(kind: str, p: int) -> str:
        return f"gm_args[{p}]" if kind == "given" else f"gm_args[{n_given + p}]" if kind == "made" else \
            f"(void*)gm_scratch{p}"
    for k, idx in plans:
        args = ", ".join(arg(kind, p) for kind, p in idx)
        lines += [f"{{  // {k['const']}: {k['fn']}", f"    void* const gm_part[] = {{{args}}};",
                  f"    {k['fn']}(gm_part, gm_nt);", "}"]
    title = f"{len(members)} small regions called as one: " + ", ".join(k["fn"] for k in members)
    m.functions.append({"name": fn, "title": title, "head": title, "also": [], "decls": [], "lines": lines,
                        "fused_multiply_add": False})
    sizes = py_literal(tuple(-nb if w else nb for _, _, nb, w, _ in given) + tuple(-nb for _, nb, _ in made))
    dtypes = py_literal(tuple(dt for *_, dt in given) + tuple(dt for _, _, dt in made))
    shapes = py_literal(tuple(m.made_by_call[name] for name, _, _ in made))
    m.kernels.append({"const": const, "fn": fn, "sizes": sizes, "dtypes": dtypes, "shapes": shapes if made else None})
    plain = [src for src, *_ in given]
    converted = [conv for _, conv, *_ in given]
    names = [name for name, _, _ in made]
    if made:
        head = f"{', '.join(names)}{',' if len(names) == 1 else ''} = _call_new({const}, _nt, {const}_SIZES, " \
               f"{const}_FORMATS, {const}_SHAPES, "
    else:
        head = f"_call({const}, _nt, {const}_SIZES, {const}_FORMATS, "
    from .driver import _converting_call  # noqa: PLC0415  (the driver imports this module)

    return [f"# {', '.join(k['const'] for k in members)}: {len(members)} small regions as one call "
            "(codegen/native_gen/combine.py)"] + _converting_call(head, plain, converted)
