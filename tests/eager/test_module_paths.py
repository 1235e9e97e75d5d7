"""torch's module paths exist in eager as real modules, each name defined once and
re-exported (torch.nn.modules.<file>.<Class>, torch.utils.data.<module>, torch.backends.*,
torch.nn.parallel, torch.distributed, torch.onnx), checked against PyTorch's own tree."""
from __future__ import annotations

import importlib
import inspect

import pytest

import eager


def test_nn_modules_files_hold_the_classes_pytorch_defines_there():
    torch = pytest.importorskip("torch")
    import eager.nn.modules as ours

    checked = 0
    for name in dir(ours):
        mod = getattr(ours, name)
        if not inspect.ismodule(mod) or name == "utils":
            continue
        theirs = importlib.import_module(f"torch.nn.modules.{name}")
        for cls_name in mod.__all__:
            assert getattr(mod, cls_name) is getattr(eager.nn, cls_name)  # one definition, re-exported
            assert inspect.isclass(getattr(theirs, cls_name)), f"torch.nn.modules.{name} has no {cls_name}"
            checked += 1
    assert checked > 80
    for torch_file in ("linear", "conv", "activation", "loss", "container", "module", "batchnorm", "normalization",
                       "dropout", "rnn", "sparse", "pooling", "transformer", "flatten"):
        assert hasattr(ours, torch_file), torch_file
    from eager.nn.modules.linear import Linear
    from eager.nn.modules.utils import _pair

    assert Linear is eager.nn.Linear and isinstance(eager.nn.Linear(2, 3), eager.nn.modules.module.Module)
    assert _pair(3) == (3, 3) and _pair((1, 2)) == (1, 2)
    assert torch.nn.modules.utils._pair(3) == _pair(3)


def test_utils_data_modules():
    from eager.utils.data import DataLoader, RandomSampler, default_collate
    from eager.utils.data._utils.collate import default_collate as collate2
    from eager.utils.data.dataloader import DataLoader as DL2
    from eager.utils.data.dataset import Dataset, TensorDataset
    from eager.utils.data.distributed import DistributedSampler
    from eager.utils.data.sampler import RandomSampler as RS2

    assert DL2 is DataLoader and RS2 is RandomSampler and collate2 is default_collate
    assert eager.utils.data.Dataset is Dataset and eager.utils.data.TensorDataset is TensorDataset
    ds = list(range(10))
    shares = [list(DistributedSampler(ds, num_replicas=3, rank=r, shuffle=False)) for r in range(3)]
    assert shares == [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]  # PyTorch pads with the first indices
    assert list(DistributedSampler(ds, shuffle=False)) == ds


def test_backends_are_importable_modules():
    import eager.backends.cudnn as cudnn
    import eager.backends.mps as mps
    from eager.backends import cuda

    cudnn.benchmark = True
    assert eager.backends.cudnn.benchmark is True
    cudnn.benchmark = False
    cuda.matmul.allow_tf32 = True
    assert eager.backends.cuda.matmul.allow_tf32 is True
    cuda.matmul.allow_tf32 = False
    assert mps.is_available() is False and cudnn.is_available() is False
    assert eager.backends.cpu.get_cpu_capability() in ("AVX512", "AVX2", "DEFAULT")


def test_data_parallel_wrappers_call_the_module():
    lin = eager.nn.Linear(3, 2)
    for wrap in (eager.nn.DataParallel(lin), eager.nn.parallel.DistributedDataParallel(lin)):
        x = eager.randn(4, 3)
        assert bool((wrap(x) == lin(x)).all())
        assert list(wrap.state_dict()) == ["module.weight", "module.bias"]
        assert wrap.module is lin
    ddp = eager.nn.parallel.DistributedDataParallel(lin)
    with ddp.no_sync():
        ddp(eager.randn(2, 3)).sum().backward()
    assert lin.weight.grad is not None


def test_distributed_and_onnx_import_and_say_what_to_use_instead():
    import eager.distributed as dist
    import eager.onnx

    assert dist.is_available() is False and dist.is_initialized() is False
    with pytest.raises(RuntimeError, match="one process"):
        dist.init_process_group("gloo")
    with pytest.raises(RuntimeError, match="not been initialized"):
        dist.get_rank()
    assert eager.onnx.is_in_onnx_export() is False
    with pytest.raises(RuntimeError, match="eager.save"):
        eager.onnx.export(eager.nn.Linear(2, 2), eager.randn(1, 2), "model.onnx")
