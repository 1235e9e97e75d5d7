"""eager.utils.data (datasets, samplers, DataLoader, collation, random_split) and
eager.save / eager.load (round trips, refusals, damaged files)."""
from __future__ import annotations

import io
import json
import pickle
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest

import eager
from eager.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    Subset,
    TensorDataset,
    default_collate,
    random_split,
)


def test_tensor_dataset_and_loader_batches():
    X, y = eager.arange(20.0).reshape(10, 2), eager.arange(10)
    ds = TensorDataset(X, y)
    assert len(ds) == 10 and ds[3][1].item() == 3
    batches = list(DataLoader(ds, batch_size=4))
    assert [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert batches[0][0].shape == (4, 2)
    assert len(DataLoader(ds, batch_size=4)) == 3 and len(DataLoader(ds, batch_size=4, drop_last=True)) == 2
    assert [b[1].tolist() for b in DataLoader(ds, batch_size=4, drop_last=True)][-1] == [4, 5, 6, 7]
    with pytest.raises(AssertionError, match="Size mismatch"):
        TensorDataset(X, eager.arange(3))


def test_shuffle_is_a_permutation_reproducible_with_a_generator_and_new_each_epoch():
    ds = TensorDataset(eager.arange(12))

    def epoch(loader):
        return [v for (b,) in loader for v in b.tolist()]

    a = DataLoader(ds, batch_size=5, shuffle=True, generator=eager.Generator().manual_seed(3), num_workers=4,
                   pin_memory=True)
    b = DataLoader(ds, batch_size=5, shuffle=True, generator=eager.Generator().manual_seed(3))
    first, second = epoch(a), epoch(a)
    assert sorted(first) == list(range(12)) and first != list(range(12))
    assert first == epoch(b) and second != first
    eager.manual_seed(0)
    c = epoch(DataLoader(ds, batch_size=5, shuffle=True))
    eager.manual_seed(0)
    assert epoch(DataLoader(ds, batch_size=5, shuffle=True)) == c


def test_default_collate_of_nested_samples():
    batch = [{"img": np.full((2,), i, np.float32), "label": i, "w": 0.5, "name": f"s{i}", "pair": (i, eager.ones(1))}
             for i in range(3)]
    out = default_collate(batch)
    assert out["img"].shape == (3, 2) and out["img"].dtype is eager.float32
    assert out["label"].tolist() == [0, 1, 2] and out["label"].dtype is eager.int64
    assert out["w"].dtype is eager.float64  # PyTorch collates Python floats to float64
    assert out["name"] == ["s0", "s1", "s2"]
    assert isinstance(out["pair"], list) and out["pair"][1].shape == (3, 1)  # tuples become lists, as PyTorch
    with pytest.raises(TypeError, match="default_collate"):
        default_collate([object(), object()])


def test_custom_dataset_collate_fn_samplers_and_iterable_datasets():
    class Squares(Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return i * i

    loader = DataLoader(Squares(), batch_size=2, collate_fn=lambda xs: sum(xs))
    assert list(loader) == [1, 13, 16]
    assert list(BatchSampler(SequentialSampler(range(5)), 2, False)) == [[0, 1], [2, 3], [4]]
    idx = list(RandomSampler(range(6), generator=eager.Generator().manual_seed(0)))
    assert sorted(idx) == list(range(6))
    assert len(list(RandomSampler(range(6), replacement=True, num_samples=10))) == 10

    class Stream(IterableDataset):
        def __iter__(self):
            return iter(range(7))

    assert [b.tolist() for b in DataLoader(Stream(), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    with pytest.raises(ValueError, match="shuffle"):
        DataLoader(Stream(), shuffle=True)
    with pytest.raises(ValueError, match="mutually exclusive"):
        DataLoader(Squares(), sampler=SequentialSampler(range(5)), shuffle=True)
    assert list(DataLoader(Squares(), batch_size=None)) == [0, 1, 4, 9, 16]  # no batching: samples as they are


def test_random_split_subset_and_concat():
    ds = TensorDataset(eager.arange(10))
    a, b = random_split(ds, [7, 3], generator=eager.Generator().manual_seed(0))
    got = sorted([a[i][0].item() for i in range(7)] + [b[i][0].item() for i in range(3)])
    assert got == list(range(10))
    c, d, e = random_split(ds, [0.5, 0.3, 0.2])
    assert (len(c), len(d), len(e)) == (5, 3, 2)
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(ds, [5, 6])
    assert Subset(ds, [9, 1])[0][0].item() == 9
    cat = ConcatDataset([Subset(ds, [0, 1]), Subset(ds, [5])])
    assert len(cat) == 3 and cat[2][0].item() == 5 and cat[-1][0].item() == 5



def test_random_split_lengths_numpy_ints_and_floats_that_are_not_fractions():
    ds = TensorDataset(eager.arange(10))
    a, b = random_split(ds, [np.int64(4), np.int64(6)], generator=eager.Generator().manual_seed(0))
    assert (len(a), len(b)) == (4, 6)
    with pytest.raises(TypeError, match=r"random_split: lengths must be ints, or fractions that sum to 1; got \[4.0, 6.0\]"):
        random_split(ds, [4.0, 6.0])


def test_lengths_of_streams_and_datasets_without_len_raise_len_s_type_error():
    class Stream(IterableDataset):
        def __iter__(self):
            return iter(range(3))

    class NoLen(Dataset):
        def __getitem__(self, i):
            return i

    with pytest.raises(TypeError, match="object of type 'Stream' has no len()"):
        len(DataLoader(Stream(), batch_size=2))
    with pytest.raises(TypeError, match="object of type 'NoLen' has no len()"):
        len(DataLoader(NoLen(), batch_size=2))
    with pytest.raises(TypeError, match="object of type 'NoLen' has no len()"):
        ConcatDataset([NoLen()])
    assert len(BatchSampler(range(5), 2, True)) == 2 and len(BatchSampler(range(5), 2, False)) == 3


def test_default_collate_keeps_the_mapping_type_and_key_order():
    out = default_collate([OrderedDict([("b", 1), ("a", 2.0)]), OrderedDict([("b", 3), ("a", 4.0)])])
    assert isinstance(out, OrderedDict) and list(out) == ["b", "a"]
    assert out["b"].tolist() == [1, 3] and out["a"].tolist() == [2.0, 4.0]

# -- save / load ----------------------------------------------------------------------------------
def _roundtrip(obj, **kw):
    buf = io.BytesIO()
    eager.save(obj, buf)
    buf.seek(0)
    return eager.load(buf, **kw)


def test_round_trip_keeps_dtype_shape_values_requires_grad_and_structure():
    w = eager.randn(3, 2, requires_grad=True)
    obj = {"w": w, "ints": eager.tensor([1, 2], dtype=eager.int32), "flag": eager.tensor(True),
           "half": eager.ones(2, dtype=eager.float16), "scalar": eager.tensor(3.5),
           "nested": [1, 2.5, None, "text", (w, float("inf"))], "dt": eager.float64, "dev": eager.device("cpu"),
           "param": eager.nn.Parameter(eager.zeros(2)), "od": OrderedDict([("b", 1), ("a", 2)]), 7: "int key"}
    back = _roundtrip(obj)
    assert back["w"].requires_grad and back["w"].dtype is eager.float32 and back["w"].shape == (3, 2)
    np.testing.assert_array_equal(back["w"].detach().numpy(), w.detach().numpy())
    assert back["ints"].dtype is eager.int32 and back["flag"].dtype is eager.bool and back["flag"].shape == ()
    assert back["half"].dtype is eager.float16 and back["scalar"].item() == 3.5 and back["scalar"].shape == ()
    assert back["nested"][:4] == [1, 2.5, None, "text"] and back["nested"][4][1] == float("inf")
    assert back["nested"][4][0] is back["w"]  # a tensor saved twice comes back as one tensor
    assert back["dt"] is eager.float64 and back["dev"] == eager.device("cpu")
    assert isinstance(back["param"], eager.nn.Parameter) and back["param"].requires_grad
    assert list(back["od"]) == ["b", "a"] and isinstance(back["od"], OrderedDict) and back[7] == "int key"


def test_model_and_optimizer_checkpoint_round_trip(tmp_path):
    model = eager.nn.Sequential(eager.nn.Linear(3, 4), eager.nn.BatchNorm1d(4), eager.nn.Linear(4, 1))
    opt = eager.optim.Adam(model.parameters(), lr=0.01)
    model(eager.randn(5, 3)).sum().backward()
    opt.step()
    path = tmp_path / "ckpt.pt"
    eager.save({"model": model.state_dict(), "opt": opt.state_dict()}, path)
    loaded = eager.load(path, map_location="cpu")
    fresh = eager.nn.Sequential(eager.nn.Linear(3, 4), eager.nn.BatchNorm1d(4), eager.nn.Linear(4, 1))
    fresh.load_state_dict(loaded["model"])
    for key, value in model.state_dict().items():
        assert eager.equal(fresh.state_dict()[key], value), key
    fresh_opt = eager.optim.Adam(fresh.parameters(), lr=0.5)
    fresh_opt.load_state_dict(loaded["opt"])
    assert fresh_opt.param_groups[0]["lr"] == 0.01 and fresh_opt.state[fresh[0].weight]["step"] == 1


class _Custom:
    def __init__(self, v):
        self.v = v


def test_load_refuses_arbitrary_objects_unless_asked():
    buf = io.BytesIO()
    eager.save({"t": eager.ones(1), "obj": _Custom(5)}, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="weights_only=False"):
        eager.load(buf)
    buf.seek(0)
    assert eager.load(buf, weights_only=False)["obj"].v == 5


def test_damaged_and_foreign_files_raise_clear_errors(tmp_path):
    buf = io.BytesIO()
    eager.save({"w": eager.randn(100)}, buf)
    data = buf.getvalue()
    truncated = tmp_path / "cut.pt"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(RuntimeError, match="cut.pt is not an eager checkpoint or is truncated"):
        eager.load(truncated)
    foreign = tmp_path / "notes.txt"
    foreign.write_text("hello")
    with pytest.raises(RuntimeError, match="not a complete zip archive"):
        eager.load(foreign)
    import zipfile  # noqa: PLC0415

    other = tmp_path / "other.zip"
    with zipfile.ZipFile(other, "w") as z:
        z.writestr("notes/readme.txt", b"x")
    with pytest.raises(RuntimeError, match="no manifest.json"):
        eager.load(other)
    broken = tmp_path / "broken.pt"
    with zipfile.ZipFile(broken, "w") as z:
        z.writestr("archive/data.pkl", b"x")
    with pytest.raises(RuntimeError, match="broken.pt is damaged"):
        eager.load(broken)


DATA = Path(__file__).resolve().parent / "data"


def test_reads_a_file_written_by_torch_save():
    # torch_saved.pt was written by PyTorch 2.13: torch.save({"model": Linear(3, 2).state_dict() plus
    # "steps": tensor(5) and "h": ones(2, float16), "epoch": 3, "p": Parameter(arange(6.).reshape(2, 3)[:, 1:]),
    # "b": tensor([True, False])}, path); the expected values are in torch_saved.json
    expected = json.loads((DATA / "torch_saved.json").read_text())
    got = eager.load(DATA / "torch_saved.pt")
    assert isinstance(got["model"], OrderedDict) and list(got["model"]) == ["weight", "bias", "steps", "h"]
    np.testing.assert_array_equal(got["model"]["weight"].numpy(), np.array(expected["weight"], np.float32))
    assert got["model"]["steps"].dtype is eager.int64 and got["model"]["steps"].shape == ()
    assert got["model"]["h"].dtype is eager.float16 and got["epoch"] == 3
    assert isinstance(got["p"], eager.nn.Parameter) and got["p"].tolist() == [[1.0, 2.0], [4.0, 5.0]]
    assert got["b"].tolist() == [True, False]


def test_a_torch_file_naming_other_classes_is_refused(tmp_path):
    import zipfile  # noqa: PLC0415

    payload = pickle.dumps(_Custom(1))
    path = tmp_path / "evil.pt"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("evil/data.pkl", payload)
    with pytest.raises(pickle.UnpicklingError, match="does not reconstruct"):
        eager.load(path)
