"""The post-trace cache: the optimized graphs and executables of a traced graph, looked up
right after tracing, so that a hit skips the passes and code generation.

The key is the traced graph's text (the joint forward+backward graph when the call records
gradients; the forward graph before its backward is recorded for the autodiff cache, whose
hit skips autodiff as well) with the options that shape what is built from it (opt_level, passes, fast_math,
backend). It is consulted in memory first (a second `static.compile` of the same function
in the same process), then on disk next to codegen's cache of generated modules: a file
holds the optimized graphs, which are given to codegen, whose own disk cache then holds
their modules (as torch.compile's FX graph cache sits in front of its code
cache). Set GRAPHMODE_CACHE=0 to turn the disk part off, as for codegen's cache; compiles
that record their stages for `explain` bypass it."""
from __future__ import annotations

import base64
import hashlib
import io
import pickle
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..ir import Graph, Value, verify
from ..passes import Split, is_recording, optimize_joint, run_pipeline
from .executable import build_executable, capabilities, row_regions

FORMAT = "3"  # 3: the record keeps the optimized graphs' texts (codegen's module keys)


@dataclass
class Built:
    """What an Entry builds from its traced graph."""

    graph: Graph  # the forward that runs at call time
    forward: Any  # its executable
    split: Split | None = None  # with gradients: forward/backward graphs and residuals
    backward: Any = None  # the backward's executable


# Held weakly: an entry lives as long as a compiled function's signature uses it, so the
# generated modules of dropped functions are freed (the Entry holds its Built).
_MEMORY: "weakref.WeakValueDictionary[str, Built]" = weakref.WeakValueDictionary()
STATS = {"memory_hits": 0, "disk_hits": 0, "misses": 0}


def _options(owner) -> tuple:
    passes = owner.passes
    if isinstance(passes, dict):
        passes = tuple(sorted(passes.items()))
    elif passes is not None:
        passes = tuple(passes)
    # the backend's declared capabilities shape the passes (fusion's regions, the remat split)
    return (owner.opt_level, passes, bool(owner.fast_math), owner.backend, capabilities(owner.backend))


def _key(text: str, owner, extra: tuple) -> str:
    h = hashlib.sha256()
    for part in (FORMAT, _version(), repr(_options(owner)), repr(extra), text):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _version() -> str:
    """The code a record depends on besides its key's text: graphmode's sources, and NumPy's
    version (constant folding computes with NumPy, whose results may change between versions)."""
    try:
        from gmbase.cache import graphmode_version, source_fingerprint  # noqa: PLC0415

        return f"{graphmode_version()}/{source_fingerprint()}/numpy-{np.__version__}"
    except ImportError:
        from eager import __version__  # noqa: PLC0415

        return f"{__version__}/numpy-{np.__version__}"


def _disk():
    """codegen's cache module when the disk cache is on (None otherwise)."""
    try:
        from gmbase import cache  # noqa: PLC0415
    except ImportError:
        return None
    return cache if cache.enabled() else None


def _path(cache, key: str) -> Path | None:
    """The record's file; None when the cache directory is not used (codegen.cache refused
    it: unusable or unsafe, and it warned once), so the cache works from memory only."""
    directory = cache.directory()
    # named like a module (gm_....py), so that the cache's size bound counts and evicts it: an
    # evicted record is a miss
    return None if directory is None else directory / f"gm_trace_{key[:40]}.py"


def _load(key: str, owner) -> Built | None:
    cache = _disk()
    path = None if cache is None else _path(cache, key)
    if path is None:
        return None
    try:
        text = cache.read(path, key)  # sealed for this key: a record copied over another's name is a miss
    except cache.Refused:  # not owned by this user or writable by others: never loaded
        return None
    if text is None:
        return None
    try:  # the file is sealed with the hash of its contents (codegen.cache), as generated modules are
        record_key, (graph, split), texts = loads(base64.b64decode(cache.body(text)))  # (read checked the hash)
    except Exception:  # noqa: BLE001  (an unreadable record is rebuilt, never trusted)
        return None
    if record_key != key:  # a prefix collision of the file name, or a record copied over: a miss
        return None
    # each graph's text as printed when the record was made (the same graph, from the same
    # sealed record): codegen finds the graph's module by it without printing the graph again
    if split is None:
        return Built(graph, build_executable(graph, owner.backend, owner.fast_math, texts[0]))
    return Built(split.forward, build_executable(split.forward, owner.backend, owner.fast_math, texts[0]), split,
                 build_executable(split.backward, owner.backend, owner.fast_math, texts[1]))


def _store(key: str, built: Built) -> None:
    cache = _disk()
    path = None if cache is None else _path(cache, key)
    if path is None:
        return
    try:
        texts = (getattr(built.forward, "ir_text", None), getattr(built.backward, "ir_text", None))
        record = dumps((key, (None if built.split else built.graph, built.split), texts))
        cache.write(path, cache.seal(base64.b64encode(record).decode("ascii"), key))
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        pass  # not kept on disk (an attribute that cannot be pickled, a full disk): built again next time


# -- the record format ---------------------------------------------------------------------------
# A graph is a web of references (a Value's producer and users, a node's operands), so plain
# pickle recurses once per link and overflows on graphs of a few thousand nodes. Values are
# written as a flat table and referred to by index (pickle's persistent ids); producers and
# use lists are rebuilt on load from the nodes, as building a graph maintains them.
class _Pickler(pickle.Pickler):
    def __init__(self, file) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.values: list = []
        self.ids: dict = {}

    def persistent_id(self, obj):  # noqa: D102 - pickle API
        if type(obj) is not Value:
            return None
        index = self.ids.get(id(obj))
        if index is None:
            index = self.ids[id(obj)] = len(self.values)
            self.values.append(obj)
        return index


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, values: list) -> None:
        super().__init__(file)
        self.values = values

    def persistent_load(self, pid):  # noqa: D102 - pickle API
        return self.values[pid]


def dumps(obj) -> bytes:
    """`obj` (graphs, splits, anything holding Values) as bytes that `loads` reads back."""
    body = io.BytesIO()
    pickler = _Pickler(body)
    pickler.dump(obj)
    # equal types written once: a graph's thousands of values share a few dozen, and each
    # type read back is a tuple made by Python code (half of loading a record)
    interned: dict = {}
    table = [(v.name, interned.setdefault(v.type, v.type), v.index) for v in pickler.values]
    return pickle.dumps((table, body.getvalue()), protocol=pickle.HIGHEST_PROTOCOL)


def loads(data: bytes):
    """What `dumps` wrote, with every graph's producers and use lists rebuilt."""
    table, body = pickle.loads(data)  # noqa: S301  (our own sealed record, checked before)
    values = [Value(name, spec, None, index) for name, spec, index in table]
    obj = _Unpickler(io.BytesIO(body), values).load()
    for graph in _graphs_in(obj):
        _relink(graph)
    return obj


def _graphs_in(obj) -> list:
    if isinstance(obj, Graph):
        return [obj]
    if isinstance(obj, Split):
        return [obj.forward, obj.backward]
    if isinstance(obj, (tuple, list)):
        return [g for item in obj for g in _graphs_in(item)]
    return []


def _relink(graph: Graph) -> None:
    for node in graph.nodes:
        for k, out in enumerate(node.outputs):
            out.producer, out.index = node, k
        for v in node.inputs:
            if type(v) is Value:
                v.users.append(node)
        if node.body is not None:
            _relink(node.body)


def _remember(key: str, built: Built) -> Built:
    _MEMORY[key] = built
    return built


def _lookup(key: str, owner) -> Built | None:
    built = _MEMORY.get(key)
    if built is not None:
        STATS["memory_hits"] += 1
        return built
    built = _load(key, owner)
    if built is not None:
        STATS["disk_hits"] += 1
        _remember(key, built)
        from ..logs import stages  # noqa: PLC0415  (GRAPHMODE_LOGS=stages: say why no stage is printed)

        stages.debug("@%s: optimized graphs loaded from the disk cache (built by an earlier process): no pass ran, "
                     "so no stage is printed; explain() rebuilds and shows them, GRAPHMODE_CACHE=0 skips the cache",
                     getattr(owner, "__name__", "fn"))
    return built


def build_forward(traced: Graph, stages: list, owner) -> Built:
    """The forward-only pipeline and its executable, from the cache when this traced graph
    was built before with the same options. The traced graph is verified when it is built
    from, not on a hit."""
    if is_recording():
        verify(traced)
        graph = run_pipeline(traced, stages, opt_level=owner.opt_level, passes=owner.passes,
                             fast_math=owner.fast_math, row_regions=row_regions(owner.backend), backend=owner.backend)
        return Built(graph, build_executable(graph, owner.backend, owner.fast_math))
    key = _key(str(traced), owner, ("forward",))
    built = _lookup(key, owner)
    if built is None:
        STATS["misses"] += 1
        verify(traced)  # (a hit's record was built from a graph verified then, with this text)
        graph = run_pipeline(traced, stages, opt_level=owner.opt_level, passes=owner.passes,
                             fast_math=owner.fast_math, row_regions=row_regions(owner.backend), backend=owner.backend)
        built = _remember(key, Built(graph, build_executable(graph, owner.backend, owner.fast_math)))
        _store(key, built)
    return built


def build_joint(joint: Graph, primal: list, seeds: list, n_forward_outputs: int, stages: list, owner) -> Built:
    """The joint graph optimized and split, with both executables, from the cache when this
    traced joint graph was built before with the same options."""
    def build() -> Built:
        verify(joint)  # (a hit's record was built from a graph verified then, with this text)
        split, _ = optimize_joint(joint, primal, seeds, n_forward_outputs, stages, opt_level=owner.opt_level,
                                  passes=owner.passes, fast_math=owner.fast_math,
                                  row_regions=row_regions(owner.backend), backend=owner.backend)
        return Built(split.forward, build_executable(split.forward, owner.backend, owner.fast_math), split,
                     build_executable(split.backward, owner.backend, owner.fast_math))

    if is_recording():
        return build()
    primal_ids = {id(v) for v in primal}
    extra = ("joint", n_forward_outputs, tuple(v.name for v in seeds),
             tuple(v.name for v in joint.inputs if id(v) in primal_ids))
    key = _key(str(joint), owner, extra)
    built = _lookup(key, owner)
    if built is None:
        STATS["misses"] += 1
        built = _remember(key, build())
        _store(key, built)
    return built


def autodiff_key(state, candidates: list, order: list, wrt: list, owner) -> str:
    """The key of the autodiff cache: the forward graph as traced, before its backward is
    recorded, with what the backward is recorded for: the outputs and updates (in order), the
    ones differentiated, the inputs differentiated with respect to, which values promote as
    Python numbers, and which nodes were recorded under no_grad (both shape what the VJP
    rules record and neither is in the text), and the options. A hit skips autodiff too."""
    graph = state.graph
    no_grad = state.no_grad_nodes
    extra = ("autodiff", tuple(getattr(v, "name", repr(v)) for v in candidates), tuple(v.name for v in order),
             tuple(v.name for v in wrt), tuple(sorted(v.name for v in state.weak)),
             tuple(i for i, n in enumerate(graph.nodes) if n in no_grad) if no_grad else ())
    return _key(str(graph), owner, extra)


def lookup_autodiff(key: str, owner) -> Built | None:
    """What was built for an autodiff key (memory, then disk), or None."""
    if is_recording():
        return None
    return _lookup(key, owner)


def remember_autodiff(key: str, built: Built) -> None:
    """Keep what was built from a recorded backward under its autodiff key too."""
    if key not in _MEMORY:
        _remember(key, built)
        _store(key, built)


def clear_memory() -> None:
    """Forget the in-memory part (the disk part stays): what a new process starts with."""
    _MEMORY.clear()
