"""`torch.<name>(t, ...)` spellings of Tensor methods (torch.abs_(t), torch.clamp_(t, 0), torch.detach(t),
torch.is_nonzero(t), torch.frexp(t), ...): each calls the method, so it is exactly the method's behaviour."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any


# -- Tensor predicates and in-place methods under their torch.* names ----------------------------------
def _method_spelling(name: str) -> Callable[..., Any]:
    """torch.<name>(t, *args): the Tensor method `t.<name>(*args)`."""
    def spelled(input: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(input, name)(*args, **kwargs)
    spelled.__name__ = spelled.__qualname__ = name
    spelled.__doc__ = f"torch.{name}(input, ...): input.{name}(...)."
    return spelled


METHOD_SPELLINGS = (
    "detach", "detach_", "fill_", "index_put_", "is_nonzero", "is_same_size", "is_signed", "is_conj", "is_neg",
    "is_inference", "is_distributed", "get_device", "zero_", "resize_as_", "as_strided_", "adjoint",
    "abs_", "acos_", "acosh_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_", "arctanh_", "asin_",
    "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_", "clamp_min_", "clip_", "cos_", "cosh_",
    "deg2rad_", "rad2deg_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fix_", "floor_", "frac_", "gcd_", "lcm_",
    "i0_", "ldexp_", "log10_", "log1p_", "log2_", "log_", "logit_", "nan_to_num_", "neg_", "negative_",
    "reciprocal_", "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_", "tanh_",
    "trunc_", "xlogy_", "addmv_", "conj_physical_", "frexp", "unsafe_chunk",
    "unsafe_split", "unsafe_split_with_sizes", "nonzero_static",
)


def fill(input: Any, value: Any) -> Any:
    """torch.fill(input, value): a new tensor of input's shape and dtype holding value (differentiable in input
    as zero, as PyTorch's)."""
    return input.clone().fill_(value)


def install(namespace: dict[str, Any]) -> list[str]:
    """Add the method spellings to `namespace` (eager's module dict) where it lacks them; returns the names."""
    added = []
    if "fill" not in namespace:
        namespace["fill"] = fill
        added.append("fill")
    for name in METHOD_SPELLINGS:
        if name not in namespace:
            namespace[name] = _method_spelling(name)
            added.append(name)
    return added
