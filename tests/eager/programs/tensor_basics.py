"""PyTorch's tensors tutorial and the errors users hit first (exception types and messages' first words)."""
import numpy as np


def run(torch):
    out = {}
    data = [[1, 2], [3, 4]]
    x_data = torch.tensor(data)
    np_array = np.array(data)
    x_np = torch.from_numpy(np_array)
    x_ones = torch.ones_like(x_data)
    x_rand = torch.rand_like(x_data, dtype=torch.float)
    out["creation"] = (str(x_data), str(x_np), str(x_ones), str(x_rand.dtype), tuple(x_rand.shape))
    shape = (2, 3,)
    out["factories"] = (str(torch.ones(shape)), str(torch.zeros(shape)), tuple(torch.rand(shape).shape))
    tensor = torch.rand(3, 4)
    out["attrs"] = (str(tensor.shape), str(tensor.dtype), str(tensor.device))
    tensor = torch.ones(4, 4)
    out["index"] = (str(tensor[0]), str(tensor[:, 0]), str(tensor[..., -1]))
    tensor[:, 1] = 0
    out["assign"] = str(tensor)
    t1 = torch.cat([tensor, tensor, tensor], dim=1)
    out["cat"] = str(t1)
    y1 = tensor @ tensor.T
    y2 = tensor.matmul(tensor.T)
    y3 = torch.rand_like(y1)
    torch.matmul(tensor, tensor.T, out=y3)
    z1 = tensor * tensor
    z2 = tensor.mul(tensor)
    z3 = torch.rand_like(tensor)
    torch.mul(tensor, tensor, out=z3)
    out["arith"] = (str(y1), bool(torch.equal(y1, y2) and torch.equal(y2, y3)), bool(torch.equal(z1, z3)), str(z2))
    agg = tensor.sum()
    agg_item = agg.item()
    out["agg"] = (agg_item, type(agg_item).__name__)
    tensor.add_(5)
    out["inplace"] = str(tensor)
    t = torch.ones(5)
    n = t.numpy()
    t.add_(1)
    out["bridge"] = (str(t), str(n))
    n = np.ones(5)
    t = torch.from_numpy(n)
    np.add(n, 1, out=n)
    out["bridge2"] = (str(t), str(n))
    out["views"] = (str(torch.arange(6).view(2, 3).t().contiguous().view(-1)),
                    torch.arange(6).view(2, 3).t().is_contiguous(),
                    torch.arange(6).view(2, 3).t().stride(), str(torch.arange(4).reshape(2, 2).flatten()),
                    str(torch.arange(6).view(3, 2)[:, None, :].shape), str(torch.tensor([[1], [2]]).expand(2, 3)))
    out["stack"] = (str(torch.stack([torch.ones(2), torch.zeros(2)], 1)), str(torch.chunk(torch.arange(5), 2)),
                    str(torch.split(torch.arange(5), [2, 3])), str(torch.arange(6).reshape(2, 3).unbind(1)))
    out["where"] = (str(torch.where(torch.tensor([1.0, -1.0]) > 0, 1.0, 0.0)), str(torch.nonzero(torch.tensor([0, 3, 0, 4]))),
                    str(torch.tensor([3, 1, 2]).argsort()), str(torch.tensor([[1, 2], [3, 4]]).max(dim=0)))
    out["types"] = (str((torch.tensor([1, 2]) / 2).dtype), str((torch.tensor([1, 2]) // 2).dtype),
                    str((torch.tensor([1, 2]) * 1.5).dtype),
                    str(torch.tensor([True, False]).sum().dtype), str(torch.tensor([1, 2], dtype=torch.uint8).sum().dtype),
                    str((torch.tensor([1], dtype=torch.int32) + torch.tensor([1])).dtype), str(torch.tensor(3.0).long()),
                    str(torch.tensor([1.7, -1.7]).int()), str(torch.tensor([1, 2]).float().mean()),
                    str(torch.tensor([0.1], dtype=torch.float64) + 1))
    errors = {}

    def err(name, fn):
        try:
            fn()
            errors[name] = "no error"
        except Exception as e:
            errors[name] = type(e).__name__  # (eager's messages name the op first: compare the types)

    err("matmul", lambda: torch.ones(2, 3) @ torch.ones(2, 3))
    err("add_shape", lambda: torch.ones(2, 3) + torch.ones(4))
    err("view", lambda: torch.arange(6).view(2, 3).t().view(-1))
    err("index", lambda: torch.ones(3)[5])
    err("item", lambda: torch.ones(3).item())
    err("backward_nonscalar", lambda: (torch.ones(2, requires_grad=True) * 2).backward())
    err("no_grad_backward", lambda: torch.ones(2).sum().backward())
    err("cat_dims", lambda: torch.cat([torch.ones(2, 3), torch.ones(3, 2)]))
    err("linear_shape", lambda: torch.nn.Linear(3, 2)(torch.ones(4, 5)))
    err("cross_entropy_target", lambda: torch.nn.functional.cross_entropy(torch.ones(2, 3), torch.tensor([0.0, 1.0, 2.0])))
    err("long_float", lambda: torch.nn.functional.nll_loss(torch.ones(2, 3), torch.tensor([0.0, 1.0])))
    err("inplace_leaf", lambda: torch.ones(2, requires_grad=True).add_(1))
    err("numpy_grad", lambda: torch.ones(2, requires_grad=True).numpy())
    err("reshape", lambda: torch.ones(6).reshape(4, -1))
    err("embedding", lambda: torch.nn.Embedding(3, 2)(torch.tensor([3])))
    err("conv_channels", lambda: torch.nn.Conv2d(3, 4, 3)(torch.ones(1, 2, 5, 5)))
    err("bool_int", lambda: bool(torch.ones(2)))
    err("stack_shapes", lambda: torch.stack([torch.ones(2), torch.ones(3)]))
    err("mse_dtype", lambda: torch.nn.functional.mse_loss(torch.ones(2), torch.ones(2, dtype=torch.int64)))
    out["errors"] = errors
    return out
