"""Tensor printing as tutorials show it, set_printoptions, and .numpy()/from_numpy sharing memory."""
import numpy as np


def run(torch):
    out = {}
    cases = {
        "ints": torch.arange(6).reshape(2, 3),
        "floats": torch.tensor([[1.0, 2.5], [3.25, -4.0]]),
        "small": torch.tensor([1e-5, 1.0, 100.0]),
        "large": torch.tensor([1e6, 2.0, 3.0]),
        "sci": torch.tensor([1e-10, 1e10]),
        "bool": torch.tensor([True, False]),
        "scalar": torch.tensor(3.5),
        "int_scalar": torch.tensor(7),
        "empty": torch.zeros(0),
        "empty2d": torch.zeros(2, 0),
        "f64": torch.tensor([1.0, 2.0], dtype=torch.float64),
        "i32": torch.tensor([1, 2], dtype=torch.int32),
        "half": torch.tensor([1.5, 2.0], dtype=torch.float16),
        "nan_inf": torch.tensor([float("nan"), float("inf"), -float("inf"), 1.0]),
        "neg_zero": torch.tensor([-0.0, 0.5]),
        "three_d": torch.arange(8.0).reshape(2, 2, 2),
        "long_row": torch.arange(1200.0),
        "big2d": torch.arange(2000).reshape(100, 20),
        "whole_floats": torch.tensor([1.0, 2.0, 3.0]),
        "mixed_exp": torch.tensor([0.001, 1000.0]),
        "ones_like": torch.ones(2, 3),
        "rand_row": torch.linspace(0, 1, 7),
        "neg_int": torch.tensor([-3, 10, 200]),
        "u8": torch.tensor([1, 255], dtype=torch.uint8),
        "req_grad": torch.tensor([1.0, 2.0], requires_grad=True),
    }
    for k, v in cases.items():
        out[k] = str(v)
        out[k + "_repr"] = repr(v)
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    out["grad_fn_print"] = str(y)
    out["sum_print"] = str(y.sum())
    out["mean_print"] = str(y.mean())
    out["item_fmt"] = f"{torch.tensor(2.5).item():.2f} {torch.tensor(3).item()}"
    out["format_spec"] = f"{torch.tensor(2.5):.3f}"
    out["shape_print"] = (str(torch.zeros(2, 3).shape), repr(torch.zeros(2, 3).size()), str(torch.Size([4])))
    out["dtype_print"] = (str(torch.float32), str(torch.int64), str(torch.bool))
    out["device_print"] = (str(torch.device("cpu")), repr(torch.device("cpu")), str(torch.zeros(1).device))
    torch.set_printoptions(precision=2)
    out["precision2"] = str(torch.tensor([1.23456, 2.5]))
    torch.set_printoptions(sci_mode=False)
    out["nosci"] = str(torch.tensor([1e-5, 1.0]))
    torch.set_printoptions(profile="default")
    out["default_again"] = str(torch.tensor([1.23456, 1e-5]))
    torch.set_printoptions(threshold=5, edgeitems=2)
    out["threshold"] = str(torch.arange(10))
    torch.set_printoptions(profile="default")
    out["linewidth_default"] = str(torch.arange(30.0))

    a = torch.ones(5)
    b = a.numpy()
    a.add_(1)
    out["numpy_shares"] = b.tolist()
    n = np.ones(5)
    t = torch.from_numpy(n)
    np.add(n, 1, out=n)
    out["from_numpy_shares"] = (t.tolist(), str(t.dtype))
    t2 = torch.as_tensor(n)
    n[0] = 7
    out["as_tensor_shares"] = t2[0].item()
    t3 = torch.tensor(n)
    n[0] = 9
    out["tensor_copies"] = t3[0].item()
    return out
