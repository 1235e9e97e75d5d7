"""eager.load against hostile and damaged checkpoints (hand-built PyTorch and eager files)
and against real files written by PyTorch: every view is bounds-checked, every size checked
before it is allocated or inflated, and every failure is a RuntimeError naming the member;
map_location, shared storages, safe_globals and whole-module loading behave as in PyTorch."""
from __future__ import annotations

import io
import json
import pickle
import struct
import tracemalloc
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import eager
from eager.serialization import allowlist


# -- building torch.save-like files by hand ------------------------------------------------------------
def frag(x) -> bytes:
    """The opcodes that push x (a protocol-2 pickle without its PROTO header and STOP)."""
    return pickle.dumps(x, protocol=2)[2:-1]


def glob(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def storage_pid(key="0", numel=4, storage="FloatStorage", location="cpu") -> bytes:
    return b"(" + frag("storage") + glob("torch", storage) + frag(key) + frag(location) + frag(numel) + b"tQ"


def tensor_op(offset=0, size=(4,), stride=(1,), pid=None, requires_grad=False) -> bytes:
    pid = storage_pid() if pid is None else pid
    args = (b"(" + pid + frag(offset) + frag(size) + frag(stride) + frag(requires_grad)
            + glob("collections", "OrderedDict") + b")R" + b"t")
    return glob("torch._utils", "_rebuild_tensor_v2") + args + b"R"


def top_dict(**entries: bytes) -> bytes:
    body = b"".join(frag(k) + v for k, v in entries.items())
    return b"\x80\x02}(" + body + b"u."


def torch_zip(pkl: bytes, storages=None, compress=zipfile.ZIP_STORED) -> io.BytesIO:
    storages = {"0": np.arange(4, dtype=np.float32).tobytes()} if storages is None else storages
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compress) as z:
        z.writestr("archive/data.pkl", pkl)
        z.writestr("archive/byteorder", b"little")
        for key, data in storages.items():
            z.writestr(f"archive/data/{key}", data)
    buf.seek(0)
    return buf


def test_hand_built_file_loads_as_a_view_of_its_storage():
    got = eager.load(torch_zip(top_dict(t=tensor_op(1, (3,), (1,)), u=tensor_op(0, (2,), (2,)))))
    assert got["t"].tolist() == [1.0, 2.0, 3.0] and got["u"].tolist() == [0.0, 2.0]
    got["t"].mul_(10)  # one storage: the write is seen through the other view
    assert got["u"].tolist() == [0.0, 20.0]


@pytest.mark.parametrize("offset,size,stride,what", [
    (0, (64,), (1,), "reads element 63"),           # size beyond the storage
    (3, (2,), (1,), "reads element 4"),              # offset + size beyond it
    (0, (2,), (4,), "reads element 4"),              # a stride that leaves it (3 >= ... )
    (0, (2, 2), (1, 100), "out of bounds"),          # a big stride
    (-1, (2,), (1,), "out of range"),                # a negative offset
    (0, (-2,), (1,), "out of range"),                # a negative size
    (0, (2,), (-1,), "out of range"),                # a negative stride
    (2**70, (1,), (1,), "out of range"),             # beyond int64
    (0, (2,), (1, 1), "different lengths"),
    (0, "ab", (1,), "tuple of ints"),
    (0, (2.0,), (1,), "must be an integer"),
    (True, (2,), (1,), "must be an integer"),
])
def test_views_outside_their_storage_are_refused(offset, size, stride, what):
    with pytest.raises(RuntimeError, match=what) as info:
        eager.load(torch_zip(top_dict(t=tensor_op(offset, size, stride))))
    assert "archive/data/0" in str(info.value) or "out of range" in str(info.value) or "integer" in str(info.value)


def test_out_of_bounds_view_is_refused_by_pytorch_too():
    torch = pytest.importorskip("torch")
    buf = torch_zip(top_dict(t=tensor_op(0, (64,), (1,))))
    with pytest.raises(RuntimeError):
        torch.load(buf, weights_only=True)
    buf.seek(0)
    with pytest.raises(RuntimeError, match="out of bounds"):
        eager.load(buf)


def test_a_lying_element_count_is_refused_before_reading():
    # the storage declares 64 elements, its member holds 4
    pid = storage_pid(numel=64)
    with pytest.raises(RuntimeError, match=r"member archive/data/0 holds 16 bytes.*64 elements"):
        eager.load(torch_zip(top_dict(t=tensor_op(0, (64,), (1,), pid=pid))))
    with pytest.raises(RuntimeError, match="has no member archive/data/7"):
        eager.load(torch_zip(top_dict(t=tensor_op(pid=storage_pid(key="7")))))
    with pytest.raises(RuntimeError, match="out of range"):
        eager.load(torch_zip(top_dict(t=tensor_op(pid=storage_pid(numel=-4)))))


def test_a_huge_stride_zero_view_is_refused_without_allocating():
    tracemalloc.start()
    try:
        with pytest.raises(RuntimeError, match="memory bound"):
            eager.load(torch_zip(top_dict(t=tensor_op(0, (10**6, 10**6), (0, 0)))))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50 << 20


def test_a_small_stride_zero_view_is_a_view():
    got = eager.load(torch_zip(top_dict(t=tensor_op(1, (3, 2), (0, 1)))))
    assert got["t"].tolist() == [[1.0, 2.0]] * 3


def test_storage_types_and_dtypes():
    data = {"0": np.array([1, -2], np.int64).tobytes(), "1": np.array([1, 0], np.bool_).tobytes(),
            "2": np.array([0x3FC0, 0xC000], np.uint16).tobytes()}  # bfloat16 1.5, -2.0
    pkl = top_dict(a=tensor_op(0, (2,), (1,), storage_pid("0", 2, "LongStorage")),
                   b=tensor_op(0, (2,), (1,), storage_pid("1", 2, "BoolStorage")),
                   c=tensor_op(0, (2,), (1,), storage_pid("2", 2, "BFloat16Storage")),
                   d=glob("torch", "float16"))
    got = eager.load(torch_zip(pkl, data))
    assert got["a"].dtype is eager.int64 and got["a"].tolist() == [1, -2]
    assert got["b"].tolist() == [True, False] and got["c"].tolist() == [1.5, -2.0]
    assert got["d"] is eager.float16
    with pytest.raises(RuntimeError, match="ComplexFloatStorage"):
        eager.load(torch_zip(top_dict(a=tensor_op(pid=storage_pid(storage="ComplexFloatStorage")))))
    with pytest.raises(RuntimeError, match="not a torch storage type"):
        eager.load(torch_zip(top_dict(a=tensor_op(pid=b"(" + frag("storage") + frag("x") + frag("0") + frag("cpu")
                                                  + frag(4) + b"tQ"))))
    with pytest.raises(RuntimeError, match="requires_grad"):
        eager.load(torch_zip(top_dict(a=tensor_op(0, (2,), (1,), storage_pid("0", 2, "LongStorage"), True)), data))


def test_member_sizes_are_checked_before_inflating():
    zeros = bytes(4 << 20)  # 4 MiB of zeros deflate to a few kB
    pid = storage_pid(numel=1 << 20)
    buf = torch_zip(top_dict(t=tensor_op(0, (1 << 20,), (1,), pid)), {"0": zeros}, zipfile.ZIP_DEFLATED)
    assert len(buf.getvalue()) < 64 << 10
    tracemalloc.start()
    try:
        with pytest.raises(RuntimeError, match="memory bound"):
            eager.load(buf, max_bytes=1 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 << 20
    buf.seek(0)
    assert eager.load(buf)["t"].shape == (1 << 20,)  # within the default bound: read


def _patch_sizes(data: bytes, name: bytes, size: int) -> bytes:
    """Rewrite the uncompressed size of member `name` in its local header and the central
    directory (a bomb that declares less than it inflates to)."""
    out = bytearray(data)
    for sig, field, name_at in ((b"PK\x03\x04", 22, 30), (b"PK\x01\x02", 24, 46)):
        at = out.find(sig)
        while at >= 0:
            n = struct.unpack_from("<H", out, at + (26 if sig == b"PK\x03\x04" else 28))[0]
            if bytes(out[at + name_at: at + name_at + n]) == name:
                struct.pack_into("<I", out, at + field, size)
            at = out.find(sig, at + 4)
    return bytes(out)


def test_a_member_that_inflates_beyond_its_declared_size_is_damaged():
    zeros = bytes(1 << 20)
    buf = torch_zip(top_dict(t=tensor_op(0, (4,), (1,), storage_pid(numel=4))), {"0": zeros}, zipfile.ZIP_DEFLATED)
    data = _patch_sizes(buf.getvalue(), b"archive/data/0", 16)
    tracemalloc.start()
    try:
        with pytest.raises(RuntimeError, match="archive/data/0"):
            eager.load(io.BytesIO(data))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def test_total_declared_size_is_bounded():
    storages = {str(k): bytes(4096) for k in range(8)}
    with pytest.raises(RuntimeError, match="declare .* bytes in all"):
        eager.load(torch_zip(top_dict(t=tensor_op()), storages), max_bytes=16 << 10)
    with pytest.raises(ValueError, match="max_bytes"):
        eager.load(torch_zip(top_dict(t=tensor_op())), max_bytes=-1)


@pytest.mark.parametrize("pkl,what", [
    (b"\x80\x02", "damaged"),                                           # truncated
    (b"garbage", "damaged"),
    (b"\x80\x02" + storage_pid() + b".", "damaged"),                       # a bare pid: fine as an object?
    (b"\x80\x02(" + frag("nope") + b"tQ.", "unknown persistent id"),
    (b"\x80\x02" + glob("builtins", "set") + frag(("a string",)) + b"R.", "damaged"),
    (b"\x80\x02" + glob("builtins", "bytearray") + frag((10**12,)) + b"R.", "damaged"),
    (b"\x80\x02" + glob("_codecs", "encode") + frag(("x", "zlib_codec")) + b"R.", "damaged"),
])
def test_malformed_pickles_raise_runtime_error(pkl, what):
    if pkl.endswith(storage_pid() + b"."):
        got = eager.load(torch_zip(pkl))  # a storage on its own is returned as one
        assert got is not None
        return
    with pytest.raises(RuntimeError, match=what):
        eager.load(torch_zip(pkl))


@pytest.mark.parametrize("module,name", [("os", "system"), ("builtins", "eval"), ("__builtin__", "getattr"),
                                         ("torch", "load"), ("subprocess", "Popen")])
def test_unknown_globals_are_refused(module, name):
    pkl = b"\x80\x02" + glob(module, name) + frag(("echo",)) + b"R."
    with pytest.raises(pickle.UnpicklingError, match=f"{module}.{name}.*add_safe_globals") as info:
        eager.load(torch_zip(pkl))
    assert isinstance(info.value, RuntimeError)  # the one type of every eager.load failure


def test_protocol_2_spellings():
    pkl = top_dict(s=glob("__builtin__", "set") + b"(]" + b"(" + frag(1) + frag(2) + b"e" + b"tR",
                   f=glob("__builtin__", "frozenset") + b"(]" + b"(" + frag(3) + b"e" + b"tR",
                   b=glob("_codecs", "encode") + frag(("\xff\x00", "latin1")) + b"R",
                   o=glob("collections", "OrderedDict") + b")R" + b"(" + frag("k") + frag(1) + b"u")
    got = eager.load(torch_zip(pkl))
    assert got == {"s": {1, 2}, "f": frozenset({3}), "b": b"\xff\x00", "o": OrderedDict(k=1)}


# -- eager's own format --------------------------------------------------------------------------------
def _eager_file(manifest, members=None) -> io.BytesIO:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("manifest.json", manifest if isinstance(manifest, str) else json.dumps(manifest))
        for name, data in (members or {}).items():
            z.writestr(name, data)
    buf.seek(0)
    return buf


def _npy(arr) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


GOOD_STORAGE = [{"file": "data/0.npy", "dtype": "float32", "numel": 4}]
GOOD_MEMBERS = {"data/0.npy": _npy(np.arange(4, dtype=np.float32))}


def _tensor(**kw):
    node = {"tensor": 0, "storage": 0, "offset": 0, "shape": [4], "stride": [1], "dtype": "float32",
            "requires_grad": False, "parameter": False, "device": "cpu"}
    node.update(kw)
    return node


def _manifest(root, storages=GOOD_STORAGE, version=2):
    return {"format": "eager-checkpoint", "version": version, "root": root, "storages": storages}


def test_hand_built_eager_manifest_loads():
    got = eager.load(_eager_file(_manifest({"list": [_tensor(), _tensor(tensor=1, offset=2, shape=[2])]}),
                                 GOOD_MEMBERS))
    assert got[0].tolist() == [0.0, 1.0, 2.0, 3.0] and got[1].tolist() == [2.0, 3.0]


@pytest.mark.parametrize("manifest,members", [
    ("{not json", GOOD_MEMBERS),
    ("[" * 100000 + "]" * 100000, GOOD_MEMBERS),
    (json.dumps([1, 2]), GOOD_MEMBERS),
    (_manifest(None, version="2"), GOOD_MEMBERS),
    ({"format": "eager-checkpoint", "version": 2}, GOOD_MEMBERS),
    (_manifest({"tensor": 0}), GOOD_MEMBERS),
    (_manifest(_tensor(shape=[64])), GOOD_MEMBERS),
    (_manifest(_tensor(offset=-1)), GOOD_MEMBERS),
    (_manifest(_tensor(stride=[3])), GOOD_MEMBERS),
    (_manifest(_tensor(storage=5)), GOOD_MEMBERS),
    (_manifest(_tensor(storage="0")), GOOD_MEMBERS),
    (_manifest(_tensor(dtype="float64")), GOOD_MEMBERS),
    (_manifest(_tensor(dtype="complex128")), GOOD_MEMBERS),
    (_manifest(_tensor(dtype=["x"])), GOOD_MEMBERS),
    (_manifest(_tensor(requires_grad="yes")), GOOD_MEMBERS),
    (_manifest(_tensor(device=7)), GOOD_MEMBERS),
    (_manifest(_tensor(device="tpu")), GOOD_MEMBERS),
    (_manifest(_tensor(), [{"file": "data/0.npy", "dtype": "float32", "numel": 64}]), GOOD_MEMBERS),
    (_manifest(_tensor(), [{"file": "data/9.npy", "dtype": "float32", "numel": 4}]), GOOD_MEMBERS),
    (_manifest(_tensor(), [{"file": 3, "dtype": "float32", "numel": 4}]), GOOD_MEMBERS),
    (_manifest(_tensor(), ["x"]), GOOD_MEMBERS),
    (_manifest(_tensor(), {"a": 1}), GOOD_MEMBERS),
    (_manifest(_tensor()), {"data/0.npy": b"\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'fortran_order': False, "
                                           b"'shape': (100000000000,), }" + b" " * 60 + b"\n" + bytes(16)}),
    (_manifest(_tensor()), {"data/0.npy": _npy(np.arange(4, dtype=np.float32))[:-4]}),
    (_manifest(_tensor()), {"data/0.npy": _npy(np.array(["a", "b", "c", "d"]))}),
    (_manifest(_tensor()), {"data/0.npy": b"not an npy" + bytes(16)}),
    (_manifest({"dict": [[1]]}), {}),
    (_manifest({"dict": "x"}), {}),
    (_manifest({"dict": [[{"list": []}, 1]]}), {}),
    (_manifest({"float": "1e999999"}), {}),
    (_manifest({"dtype": "nope"}), {}),
    (_manifest({"ndarray": "data/9.npy"}), {}),
    (_manifest({"what": 1}), {}),
    (_manifest({}), {}),
    (_manifest({"pickle": "objects/0.pkl", "refs": "x"}), {"objects/0.pkl": pickle.dumps(1)}),
    (_manifest({"pickle": "objects/0.pkl", "refs": []}), {"objects/0.pkl": b"\x80\x04(K\x05tQ."}),
    (_manifest({"pickle": "objects/0.pkl", "refs": []}), {"objects/0.pkl": b"\x80\x04"}),
    (_manifest({"pickle": "objects/0.pkl"}), {}),
    (_manifest(1, version=99), {}),
])
def test_malformed_eager_files_raise_runtime_error(manifest, members):
    with pytest.raises(RuntimeError, match=r"eager\.load: .*"):
        eager.load(_eager_file(manifest, members))


def test_eager_pickles_are_restricted_unless_asked():
    evil = pickle.dumps(_Evil())
    buf = _eager_file(_manifest({"pickle": "objects/0.pkl", "refs": []}), {"objects/0.pkl": evil})
    with pytest.raises(pickle.UnpicklingError, match="add_safe_globals"):
        eager.load(buf)


class _Evil:
    def __reduce__(self):
        return (eval, ("1 + 1",))


# -- views, map_location, whole modules ----------------------------------------------------------------
def _roundtrip(obj, **kw):
    buf = io.BytesIO()
    eager.save(obj, buf)
    buf.seek(0)
    return eager.load(buf, **kw)


def test_views_saved_together_share_storage_after_load():
    base = eager.arange(12.0)
    obj = {"base": base, "row": base.view(3, 4)[1], "t": base.view(3, 4).t(), "step": base[::3],
           "copy": base.clone(), "bcast": eager.ones(3).expand(2, 3)}
    got = _roundtrip(obj)
    got["row"].fill_(-1.0)
    assert got["base"].tolist()[4:8] == [-1.0] * 4 and got["t"].tolist()[0][1] == -1.0
    assert got["step"].tolist() == [0.0, 3.0, -1.0, 9.0]
    assert got["copy"].tolist() == list(map(float, range(12)))
    assert got["bcast"].shape == (2, 3) and got["bcast"].tolist() == [[1.0] * 3] * 2
    assert got["t"].shape == (4, 3) and got["row"].shape == (4,)


def test_views_saved_by_pytorch_share_storage_after_load():
    torch = pytest.importorskip("torch")
    base = torch.arange(12.0)
    buf = io.BytesIO()
    torch.save({"base": base, "row": base.view(3, 4)[1], "t": base.view(3, 4).t()}, buf)
    buf.seek(0)
    got = eager.load(buf)
    ref = torch.load(io.BytesIO(buf.getvalue()))
    got["row"].fill_(-1.0)
    ref["row"].fill_(-1.0)
    assert got["base"].tolist() == ref["base"].tolist()
    assert got["t"].tolist() == ref["t"].tolist()


@pytest.mark.parametrize("new_zip", [True, False])
def test_files_written_by_pytorch(new_zip):
    torch = pytest.importorskip("torch")
    x = torch.arange(6.0).reshape(2, 3)
    obj = {"x": x, "v": x[:, 1:], "s": {1, 2}, "fs": frozenset([3]), "b": b"xy", "dt": torch.float16,
           "dev": torch.device("cpu"), "sz": torch.Size([2, 3]), "p": torch.nn.Parameter(torch.ones(2)),
           "bf": torch.tensor([1.5, -2.0], dtype=torch.bfloat16), "od": OrderedDict(a=1), "c": 1 + 2j,
           "e": torch.zeros(0, 3), "i": torch.tensor([1, 2], dtype=torch.int32), "h": torch.ones(2).half(),
           "state": torch.nn.Linear(3, 2).state_dict(), "g": torch.ones(2, requires_grad=True)}
    buf = io.BytesIO()
    torch.save(obj, buf, _use_new_zipfile_serialization=new_zip)
    got = eager.load(io.BytesIO(buf.getvalue()))
    assert got["x"].tolist() == x.tolist() and got["v"].tolist() == x[:, 1:].tolist()
    assert got["s"] == {1, 2} and got["fs"] == frozenset({3}) and got["b"] == b"xy" and got["c"] == 1 + 2j
    assert got["dt"] is eager.float16 and got["dev"] == eager.device("cpu") and got["sz"] == (2, 3)
    assert isinstance(got["p"], eager.nn.Parameter) and got["bf"].tolist() == [1.5, -2.0]
    assert got["e"].shape == (0, 3) and got["i"].dtype is eager.int32 and got["h"].dtype is eager.float16
    assert list(got["state"]) == ["weight", "bias"] and got["g"].requires_grad
    np.testing.assert_array_equal(got["state"]["weight"].numpy(), obj["state"]["weight"].numpy())
    got["v"].add_(100.0)  # a view of x's storage, as in PyTorch
    assert got["x"].tolist() == [[0.0, 101.0, 102.0], [3.0, 104.0, 105.0]]


@pytest.mark.parametrize("map_location", [
    "cpu", eager.device("cpu"), {"cpu": "cpu"}, {"cuda:0": "cpu"}, lambda storage, loc: storage,
    lambda storage, loc: storage.cpu(), lambda storage, loc: None])
def test_map_location_forms(map_location):
    got = eager.load(torch_zip(top_dict(t=tensor_op())), map_location=map_location)
    assert got["t"].tolist() == [0.0, 1.0, 2.0, 3.0] and got["t"].device == eager.device("cpu")
    got = _roundtrip({"t": eager.ones(2)}, map_location=map_location)
    assert got["t"].device == eager.device("cpu")


def test_map_location_moves_cuda_storages():
    from eager._device import cuda_is_available

    pkl = top_dict(t=tensor_op(pid=storage_pid(location="cuda:0")))
    seen = []

    def to_cpu(storage, loc):
        seen.append((loc, storage.nbytes()))
        return storage

    got = eager.load(torch_zip(pkl), map_location=to_cpu)
    assert seen == [("cuda:0", 16)] and got["t"].device == eager.device("cpu")
    assert eager.load(torch_zip(pkl), map_location={"cuda:0": "cpu"})["t"].device == eager.device("cpu")
    if not cuda_is_available():
        with pytest.raises(RuntimeError, match="map_location"):
            eager.load(torch_zip(pkl))
    with pytest.raises(RuntimeError, match="must return the storage"):
        eager.load(torch_zip(pkl), map_location=lambda s, loc: 5)


class Net(eager.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = eager.nn.Linear(3, 2)
        self.norm = eager.nn.BatchNorm1d(2)

    def forward(self, x):
        return self.norm(self.fc(x))


def test_whole_module_needs_weights_only_false_or_safe_globals():
    model = Net().eval()
    x = eager.randn(4, 3)
    buf = io.BytesIO()
    eager.save(model, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match=r"Weights only load failed.*Net.*add_safe_globals"):
        eager.load(buf)
    buf.seek(0)
    back = eager.load(buf, weights_only=False)
    assert isinstance(back, Net) and eager.equal(back(x), model(x))
    assert back.fc.weight is not model.fc.weight and isinstance(back.fc.weight, eager.nn.Parameter)
    assert list(dict(back.named_parameters())) == list(dict(model.named_parameters()))
    buf.seek(0)
    with eager.serialization.safe_globals([Net, eager.nn.Linear, eager.nn.BatchNorm1d]):
        assert Net in eager.serialization.get_safe_globals()
        back = eager.load(buf)
    assert Net not in eager.serialization.get_safe_globals()
    assert eager.equal(back(x), model(x))
    buf.seek(0)
    try:
        eager.serialization.add_safe_globals([Net])
        with pytest.raises(pickle.UnpicklingError, match="Linear"):
            eager.load(buf)
        eager.serialization.add_safe_globals([eager.nn.Linear, (eager.nn.BatchNorm1d, "x.Unused")])
        with pytest.raises(pickle.UnpicklingError, match="BatchNorm1d"):
            buf.seek(0)
            eager.load(buf)
    finally:
        eager.serialization.clear_safe_globals()
    assert eager.serialization.get_safe_globals() == []


def test_custom_class_in_a_pytorch_file():
    torch = pytest.importorskip("torch")
    buf = io.BytesIO()
    torch.save({"w": torch.ones(2), "meta": _Meta(3)}, buf)
    with pytest.raises(pickle.UnpicklingError, match="_Meta"):
        eager.load(io.BytesIO(buf.getvalue()))
    assert eager.load(io.BytesIO(buf.getvalue()), weights_only=False)["meta"].n == 3
    with eager.serialization.safe_globals([_Meta]):
        assert eager.load(io.BytesIO(buf.getvalue()))["meta"].n == 3


class _Meta:
    def __init__(self, n):
        self.n = n


def test_legacy_stream_damage():
    torch = pytest.importorskip("torch")
    buf = io.BytesIO()
    torch.save({"w": torch.arange(8.0)}, buf, _use_new_zipfile_serialization=False)
    data = buf.getvalue()
    assert eager.load(io.BytesIO(data))["w"].tolist() == list(map(float, range(8)))
    for cut in (len(data) - 4, len(data) - 40, 40, 12):
        with pytest.raises(RuntimeError, match="eager.load"):
            eager.load(io.BytesIO(data[:cut]))
    with pytest.raises(RuntimeError, match="memory bound"):
        eager.load(io.BytesIO(data), max_bytes=16)


def test_allowlist_rejects_malformed_entries():
    with pytest.raises(TypeError):
        eager.serialization.add_safe_globals(Net)
    with pytest.raises(TypeError):
        eager.serialization.add_safe_globals([(Net, 3)])
    assert allowlist.get_safe_globals() == []


def test_whole_module_saved_by_pytorch():
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.ReLU(), torch.nn.BatchNorm1d(2),
                                torch.nn.LayerNorm(2)).eval()
    buf = io.BytesIO()
    torch.save(model, buf)
    data = buf.getvalue()
    with pytest.raises(pickle.UnpicklingError, match=r"torch\.nn\.modules\.container\.Sequential.*add_safe_globals"):
        eager.load(io.BytesIO(data))
    ref = torch.load(io.BytesIO(data), weights_only=False)
    back = eager.load(io.BytesIO(data), weights_only=False)
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    assert isinstance(back, eager.nn.Sequential) and isinstance(back[0], eager.nn.Linear)
    np.testing.assert_allclose(back(eager.tensor(x)).detach().numpy(), ref(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    assert list(back.state_dict()) == list(ref.state_dict())
    assert [n for n, _ in back.named_parameters()] == [n for n, _ in ref.named_parameters()]
    back.train()
    assert back[2].training
    back(eager.tensor(x)).sum().backward()
    assert back[0].weight.grad is not None
    with eager.serialization.safe_globals([eager.nn.Sequential, eager.nn.Linear, eager.nn.ReLU, eager.nn.BatchNorm1d,
                                           eager.nn.LayerNorm]):
        again = eager.load(io.BytesIO(data))
    assert isinstance(again, eager.nn.Sequential) and len(again) == 4


def test_a_view_of_a_large_array_saves_only_what_its_tensors_reach():
    big = eager.arange(100000.0)
    buf = io.BytesIO()
    eager.save({"a": big[10:20], "b": big[15:30:5]}, buf)
    assert len(buf.getvalue()) < 4000  # not the 400 kB root
    buf.seek(0)
    got = eager.load(buf)
    assert got["a"].tolist() == list(map(float, range(10, 20))) and got["b"].tolist() == [15.0, 20.0, 25.0]
    got["b"].fill_(-1.0)
    assert got["a"].tolist()[5] == -1.0  # still one storage


def test_default_memory_bound_is_a_module_setting(monkeypatch):
    buf = io.BytesIO()
    eager.save({"w": eager.zeros(1000)}, buf)
    monkeypatch.setattr(eager.serialization, "DEFAULT_MAX_BYTES", 1000)
    buf.seek(0)
    with pytest.raises(RuntimeError, match="max_bytes=1000"):
        eager.load(buf)
    buf.seek(0)
    assert eager.load(buf, max_bytes=1 << 20)["w"].shape == (1000,)


def test_an_eager_archive_bomb_is_refused_before_inflating():
    """A small archive whose .npy member inflates to 48 MB while the manifest declares four
    elements: refused from the sizes alone, without inflating it."""
    buf = io.BytesIO()
    big = np.zeros(12 << 20, np.float32)
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("manifest.json", json.dumps(_manifest(_tensor())))
        z.writestr("data/0.npy", _npy(big))
    assert len(buf.getvalue()) < 200_000
    buf.seek(0)
    tracemalloc.start()
    try:
        with pytest.raises(RuntimeError, match="data/0.npy holds .* bytes, too few or too many for 4 elements"):
            eager.load(buf)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20


def test_dtypes_saved_as_values_by_pytorch():
    torch = pytest.importorskip("torch")
    buf = io.BytesIO()
    torch.save({"a": torch.float64, "b": torch.bfloat16, "c": torch.int8, "d": torch.bool}, buf)
    got = eager.load(io.BytesIO(buf.getvalue()))
    assert got == {"a": eager.float64, "b": eager.bfloat16, "c": eager.int8, "d": eager.bool}
    buf = io.BytesIO()
    torch.save({"z": torch.complex64}, buf)
    with pytest.raises(RuntimeError, match="complex64"):
        eager.load(io.BytesIO(buf.getvalue()))


@pytest.mark.parametrize("target", [
    glob("torch", "float32"),                 # eager's dtype singleton
    glob("collections", "OrderedDict"),        # a function of the allowlist
    glob("torch._utils", "_rebuild_tensor_v2"),
    tensor_op(),                               # a tensor the file made: its state is not the pickle's to set
])
def test_build_never_reaches_objects_the_file_did_not_make(target):
    """BUILD (set state) on a global would outlive the load: eager.float32's name rewritten."""
    pkl = b"\x80\x02" + target + b"}(" + frag("name") + frag("evil") + frag("_data") + frag(None) + b"ub."
    with pytest.raises(RuntimeError, match="did not make|weights_only"):
        eager.load(torch_zip(pkl))
    assert eager.float32.name == "float32"


def test_build_on_a_state_dict_ordered_dict_is_allowed():
    pkl = (b"\x80\x02" + glob("collections", "OrderedDict") + b")R" + b"(" + frag("w") + tensor_op() + b"u"
           + b"}(" + frag("_metadata") + frag({"": {"version": 1}}) + b"ub.")
    got = eager.load(torch_zip(pkl))
    assert list(got) == ["w"] and got._metadata == {"": {"version": 1}}


def test_build_in_an_eager_file_cannot_reach_a_dtype():
    pkl = b"\x80\x04K\x00Q" + b"}(" + frag("name") + frag("evil") + b"ub."  # persistent ref 0 is eager.float32
    buf = _eager_file(_manifest({"pickle": "objects/0.pkl", "refs": [{"dtype": "float32"}]}), {"objects/0.pkl": pkl})
    with pytest.raises(RuntimeError, match="did not make"):
        eager.load(buf)
    assert eager.float32.name == "float32"


def test_round_trip_of_every_layout():
    base = eager.arange(24.0).reshape(2, 3, 4)
    cases = {"flip": eager.flip(base, [2]), "perm": base.permute(2, 0, 1), "step": base[:, ::2, 1::2],
             "expand": eager.ones(1, 4).expand(3, 4), "scalar": eager.tensor(2.5), "empty": eager.zeros(0, 5),
             "empty_view": base[:, 3:], "int": eager.arange(6).reshape(2, 3).t(), "bool": eager.tensor([True, False]),
             "half": eager.ones(3, dtype=eager.float16)[1:], "base": base}
    got = _roundtrip(cases)
    for key, value in cases.items():
        assert got[key].dtype is value.dtype and got[key].shape == value.shape, key
        np.testing.assert_array_equal(got[key].numpy(), value.numpy(), err_msg=key)


def test_numpy_values_in_a_pytorch_file_need_allowlisting_as_in_pytorch():
    torch = pytest.importorskip("torch")
    buf = io.BytesIO()
    torch.save({"acc": np.float64(0.5), "arr": np.arange(3)}, buf)
    data = buf.getvalue()
    with pytest.raises(pickle.UnpicklingError, match=r"add_safe_globals\(\[numpy\.(_core|core)\.multiarray\.scalar\]\)"):
        eager.load(io.BytesIO(data))
    core = getattr(np, "_core", None) or np.core
    allow = [core.multiarray.scalar, np.dtype, core.multiarray._reconstruct, np.ndarray]
    allow += [getattr(np.dtypes, n) for n in ("Float64DType", "Int64DType") if hasattr(np, "dtypes")]
    with eager.serialization.safe_globals(allow):
        got = eager.load(io.BytesIO(data))
    with torch.serialization.safe_globals(allow):
        ref = torch.load(io.BytesIO(data))
    assert got["acc"] == ref["acc"] == 0.5 and got["arr"].tolist() == ref["arr"].tolist() == [0, 1, 2]


def test_version_1_files_still_load():
    """Format 1 (one contiguous .npy per tensor, plain pickles) as the previous eager wrote it."""
    tensor = {"tensor": 0, "file": "data/0.npy", "dtype": "float32", "shape": [2, 2], "requires_grad": True,
              "parameter": False, "device": "cpu"}
    manifest = {"format": "eager-checkpoint", "version": 1,
                "root": {"dict": [["w", tensor], ["again", {"tensor": 0, "file": None, "dtype": "float32",
                                                           "shape": [2, 2], "requires_grad": True}]],
                         "ordered": False}}
    got = eager.load(_eager_file(manifest, {"data/0.npy": _npy(np.arange(4, dtype=np.float32).reshape(2, 2))}))
    assert got["w"].tolist() == [[0.0, 1.0], [2.0, 3.0]] and got["w"].requires_grad and got["again"] is got["w"]
    with pytest.raises(RuntimeError, match="holds 4 elements"):
        bad = dict(tensor, shape=[3])
        eager.load(_eager_file(dict(manifest, root=bad), {"data/0.npy": _npy(np.arange(4, dtype=np.float32))}))


def test_an_archive_listing_too_many_members_is_refused_before_listing():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for k in range(200):
            z.writestr(f"archive/data/{k}", b"")
        z.writestr("archive/data.pkl", b"\x80\x02N.")
    buf.seek(0)
    with pytest.raises(RuntimeError, match="lists 201 members"):
        eager.load(buf, max_bytes=100_000)
    buf.seek(0)
    assert eager.load(buf) is None
