"""Helpers the programs share: deterministic parameters, so outputs compare across libraries."""


def fill_params(torch, module, scale=0.1):
    """Every parameter and floating buffer set from sin(arange): the same numbers in eager and PyTorch."""
    with torch.no_grad():
        for i, (_, p) in enumerate(sorted(module.named_parameters(), key=lambda kv: kv[0])):
            n = p.numel()
            p.copy_((torch.arange(n, dtype=torch.float64) * 0.37 + i).sin().reshape(p.shape).to(p.dtype) * scale)
    return module


def det_input(torch, *shape, scale=1.0):
    n = 1
    for s in shape:
        n *= s
    return ((torch.arange(n, dtype=torch.float64) * 0.61).cos() * scale).float().reshape(shape)


def rounded(t, nd=4):
    return [round(v, nd) for v in t.detach().reshape(-1).tolist()]
