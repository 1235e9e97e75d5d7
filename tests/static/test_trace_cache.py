"""The post-trace cache: a second compile of the same traced graph skips passes and codegen."""
import os

import numpy as np
import pytest

import eager
import static
import static.passes
from codegen import cache as codegen_cache
from static import trace_cache

X = eager.tensor(np.random.default_rng(0).standard_normal((4, 3)))
W = eager.tensor(np.random.default_rng(1).standard_normal((3, 2)), requires_grad=True)


def f(x):
    return (eager.tanh(x @ W) * 2.0).sum()


@pytest.fixture
def count_passes(monkeypatch, tmp_path):
    monkeypatch.setenv("GRAPHMODE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("GRAPHMODE_CACHE", "1")
    trace_cache.clear_memory()
    calls = []
    real = static.passes.run_passes

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(static.passes, "run_passes", counting)
    yield calls
    trace_cache.clear_memory()


@pytest.mark.parametrize("with_grad", [False, True])
def test_a_fresh_compiled_object_of_the_same_function_runs_no_passes(count_passes, with_grad):
    W.requires_grad_(with_grad)
    try:
        first = static.compile(f)
        expected = first(X)
        assert count_passes  # built: the passes ran
        count_passes.clear()
        second = static.compile(f)
        got = second(X)
        assert count_passes == []  # an in-memory hit
        np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy())
        if with_grad:
            got.backward()
            g = W.grad.numpy().copy()
            W.grad = None
            expected.backward()
            np.testing.assert_allclose(g, W.grad.numpy())
            W.grad = None
        trace_cache.clear_memory()  # a new process: the disk part answers
        third = static.compile(f)
        out = third(X)
        np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy())
        assert count_passes == []
        assert trace_cache.STATS["disk_hits"] >= 1
        if with_grad:  # the backward parsed back from the disk record runs as built
            out.backward()
            np.testing.assert_allclose(W.grad.numpy(), g)
    finally:
        W.requires_grad_(True)
        W.grad = None


def test_other_options_are_another_key(count_passes):
    W.requires_grad_(False)
    try:
        static.compile(f)(X)
        count_passes.clear()
        static.compile(f, opt_level=1)(X)
        assert count_passes  # built again: the options are part of the key
    finally:
        W.requires_grad_(True)


def test_an_edit_of_the_library_source_is_another_key(count_passes, monkeypatch):
    """A record built before an edit of a pass or an op's VJP is not served after it: both
    caches key on the hash of eager's, static's and codegen's sources (a fresh process after
    an edit is a new fingerprint)."""
    W.requires_grad_(True)
    try:
        static.compile(f)(X)
        trace_cache.clear_memory()
        count_passes.clear()
        monkeypatch.setattr(codegen_cache, "_fingerprint", "edited-sources")  # what a process after the edit computes
        static.compile(f)(X)
        assert count_passes, "a record of the sources before the edit was served"
    finally:
        W.grad = None


def _copy_packages(root):
    for name in codegen_cache.FINGERPRINTED:
        (root / name / "sub").mkdir(parents=True)
        (root / name / "__init__.py").write_text("x = 1\n")
        (root / name / "sub" / "rules.py").write_text("def vjp(g):\n    return g * 2\n")
        (root / name / "__pycache__").mkdir()
        (root / name / "__pycache__" / "rules.cpython-311.pyc").write_bytes(b"\0" * 16)


@pytest.mark.parametrize("package", ["gmbase", "gmops", "eager", "static", "codegen"])
def test_the_fingerprint_sees_every_source_file_by_content(tmp_path, monkeypatch, package):
    cache = codegen_cache
    _copy_packages(tmp_path)
    monkeypatch.setattr(cache, "_package_dir", lambda name: tmp_path / name)
    before = cache._hash_sources()
    assert cache._hash_sources() == before  # deterministic
    (tmp_path / package / "__pycache__" / "rules.cpython-311.pyc").write_bytes(b"\1" * 16)
    assert cache._hash_sources() == before  # bytecode is not source
    rules = tmp_path / package / "sub" / "rules.py"
    st = rules.stat()
    rules.write_text("def vjp(g):\n    return g * 3\n")  # same size,
    os.utime(rules, ns=(st.st_atime_ns, st.st_mtime_ns))  # same modification time: still seen
    assert cache._hash_sources() != before
    rules.write_text("def vjp(g):\n    return g * 2\n")
    assert cache._hash_sources() == before
    (tmp_path / package / "sub" / "template.j2").write_text("{{ x }}")  # a new template counts
    assert cache._hash_sources() != before


def test_the_fingerprint_trusts_a_manifest_only_for_files_the_system_says_are_unchanged(tmp_path, monkeypatch):
    """A file's hash is taken from the last manifest when its size, times and inode are the
    noted ones and it is older than the manifest; a write (even one restoring size and
    modification time) changes its change time, so it is read again."""
    cache = codegen_cache
    _copy_packages(tmp_path / "src")
    monkeypatch.setattr(cache, "_package_dir", lambda name: tmp_path / "src" / name)
    monkeypatch.setenv("GRAPHMODE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("GRAPHMODE_CACHE", "0")
    full = cache._hash_sources()  # no cache: every file read
    monkeypatch.setenv("GRAPHMODE_CACHE", "1")
    monkeypatch.setattr(cache, "RACY_NS", 0)  # (files made a moment ago count as old here)
    assert cache._hash_sources() == full  # the manifest written, from files read
    assert list((tmp_path / "cache").glob("gm_sources_*.py"))
    reads = []
    real_open = open
    monkeypatch.setattr("builtins.open", lambda path, *a, **k: reads.append(path) or real_open(path, *a, **k))
    assert cache._hash_sources() == full
    assert reads == []  # every hash from the manifest
    rules = tmp_path / "src" / "static" / "sub" / "rules.py"
    st = rules.stat()
    rules.write_text("def vjp(g):\n    return g * 3\n")  # same size,
    os.utime(rules, ns=(st.st_atime_ns, st.st_mtime_ns))  # same modification time: still seen
    changed = cache._hash_sources()
    assert changed != full and reads == [str(rules)]
    monkeypatch.setenv("GRAPHMODE_CACHE", "0")
    assert cache._hash_sources() == changed  # what reading every file gives


def _long_chain(x):
    for _ in range(1500):  # a graph deeper than pickle's recursion limit when linked value by value
        x = x * 1.0001 + 0.5
    return x.sum()


@pytest.mark.parametrize("with_grad", [False, True])
def test_a_graph_of_thousands_of_nodes_is_kept_on_disk(count_passes, tmp_path, with_grad):
    x = eager.tensor(np.linspace(0.0, 1.0, 8), requires_grad=with_grad)
    first = static.compile(_long_chain, opt_level=1)
    expected = first(x)
    assert list(tmp_path.glob("gm_trace_*")), "the record was not written"
    trace_cache.clear_memory()
    count_passes.clear()
    hits = trace_cache.STATS["disk_hits"]
    got = static.compile(_long_chain, opt_level=1)(x)
    assert trace_cache.STATS["disk_hits"] == hits + 1
    assert count_passes == []
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy())
    if with_grad:
        got.backward()
        g = x.grad.numpy().copy()
        x.grad = None
        expected.backward()
        np.testing.assert_allclose(g, x.grad.numpy())


def test_a_graph_read_back_has_its_producers_and_users():
    g = static.trace(lambda a: eager.exp(a * 2.0) + a, eager.ones(3))
    back = trace_cache.loads(trace_cache.dumps(g))
    assert str(back) == str(g)
    for node in back.nodes:
        for k, out in enumerate(node.outputs):
            assert out.producer is node and out.index == k
        for v in node.input_values():
            assert node in v.users
    static.ir.verify(back)


def test_a_corrupt_or_foreign_record_is_a_miss(count_passes, tmp_path):
    W.requires_grad_(False)
    try:
        static.compile(f)(X)
        (record,) = tmp_path.glob("gm_trace_*")
        record.write_text(record.read_text()[:-20] + "A" * 20)  # altered: the seal no longer matches
        trace_cache.clear_memory()
        count_passes.clear()
        out = static.compile(f)(X)
        assert count_passes  # rebuilt, never trusted
        np.testing.assert_allclose(out.numpy(), (np.tanh(X.numpy() @ W.numpy()) * 2.0).sum(), rtol=1e-6)
    finally:
        W.requires_grad_(True)


@pytest.fixture
def count_autodiff(monkeypatch, count_passes):
    """Counts the backward recordings of calls that need gradients (and the passes)."""
    import static.entry

    calls = []
    real = static.entry.vjp

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(static.entry, "vjp", counting)
    return calls


def _loss(x, w):
    return (eager.tanh(x @ w) * 2.0).sum()


def test_a_hit_records_no_backward(count_autodiff, count_passes):
    x, w = X, eager.tensor(W.detach().numpy().copy(), requires_grad=True)
    first = static.compile(_loss)
    expected = first(x, w)
    expected.backward()
    g = w.grad.numpy().copy()
    assert count_autodiff == [1] and count_passes
    count_passes.clear()
    for where in ("memory", "disk"):
        if where == "disk":
            trace_cache.clear_memory()
        w.grad = None
        got = static.compile(_loss)(x, w)
        assert count_autodiff == [1], where  # neither autodiff nor the passes ran again
        assert count_passes == [], where
        got.backward()
        np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy())
        np.testing.assert_allclose(w.grad.numpy(), g)


def _with_no_grad():
    def h(x):
        with eager.no_grad():
            s = x * 10.0
        return (x * s).sum()
    return h


def _without_no_grad():
    def h(x):
        s = x * 10.0
        return (x * s).sum()
    return h


def test_a_no_grad_region_is_part_of_the_autodiff_key(count_autodiff):
    """The same forward text, differentiated differently: gradients 10x and 20x."""
    for make, factor in ((_with_no_grad, 10.0), (_without_no_grad, 20.0), (_with_no_grad, 10.0)):
        x = eager.tensor([1.0, 2.0], requires_grad=True)
        static.compile(make())(x).backward()
        np.testing.assert_allclose(x.grad.numpy(), factor * x.detach().numpy())


def test_records_are_within_the_cache_size_bound(count_passes, tmp_path, monkeypatch):
    W.requires_grad_(False)
    try:
        static.compile(f)(X)
        assert list(tmp_path.glob("gm_trace_*"))
        monkeypatch.setenv("GRAPHMODE_CACHE_MAX_MB", "0.000001")  # a few bytes: every older file goes
        static.compile(lambda x: (eager.exp(x) * 3.0).sum())(X)
        records = list(tmp_path.glob("gm_trace_*"))
        assert len(records) <= 1  # the first record was evicted like a module
    finally:
        W.requires_grad_(True)


@pytest.mark.parametrize("with_grad", [False, True])
def test_the_traced_graph_is_verified_when_built_from_not_on_a_hit(count_passes, monkeypatch, with_grad):
    verified = []
    real = trace_cache.verify

    def counting(graph):
        verified.append(graph.name)
        return real(graph)

    monkeypatch.setattr(trace_cache, "verify", counting)
    x, w = X, eager.tensor(W.detach().numpy().copy(), requires_grad=with_grad)
    expected = static.compile(_loss)(x, w)
    assert verified  # a miss: verified before the passes
    verified.clear()
    for where in ("memory", "disk"):
        if where == "disk":
            trace_cache.clear_memory()
        got = static.compile(_loss)(x, w)
        assert verified == [], where  # the record's graph, with this very text, was verified when built
        np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy())


def test_a_malformed_traced_graph_is_still_refused_on_a_miss(count_passes, monkeypatch):
    from static.ir.verify import IRVerifyError

    def broken(graph):
        raise IRVerifyError("broken on purpose")

    monkeypatch.setattr(trace_cache, "verify", broken)
    with pytest.raises(IRVerifyError, match="broken on purpose"):
        static.compile(lambda x: (x * 2.0).sum())(eager.tensor([1.0, 2.0]))


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize("with_grad", [False, True])
def test_a_disk_hit_finds_its_modules_without_printing_the_graphs(count_passes, monkeypatch, backend, with_grad):
    """The record keeps each optimized graph's text (codegen's module key): a hit hands it
    on instead of printing the graph again, and it is the text of the graph read back."""
    from static.executable import backend_available
    from static.ir import Graph

    if backend == "native" and not backend_available("native"):
        pytest.skip("no native backend here")
    W.requires_grad_(with_grad)
    try:
        expected = static.compile(f, backend=backend)(X)
        trace_cache.clear_memory()
        count_passes.clear()
        printed = []
        real = Graph.__str__
        monkeypatch.setattr(Graph, "__str__", lambda g: printed.append(g.name) or real(g))
        got = static.compile(f, backend=backend)(X)
        assert trace_cache.STATS["disk_hits"] >= 1 and count_passes == []
        built = next(iter(trace_cache._MEMORY.values()))
        optimized = [built.graph] + ([built.split.backward] if built.split is not None else [])
        assert len(printed) == 1  # the traced graph, for the record's key; no optimized graph
        monkeypatch.setattr(Graph, "__str__", real)
        executables = [built.forward] + ([built.backward] if built.split is not None else [])
        assert [e.ir_text for e in executables] == [str(g) for g in optimized]
        np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy())
    finally:
        W.requires_grad_(True)
        W.grad = None
