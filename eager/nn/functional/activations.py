"""Activations of `eager.nn.functional` (relu through glu, softmax and its kin, their in-place
forms): each composed from eager's ops, so gradients come from the op registry."""
from __future__ import annotations

import warnings

from ... import _functional as _F
from ... import _inplace
from ..._factories import rand_like, zeros_like
from ..._tensor import Tensor


def _in_place(input: Tensor, fn, name: str, grad_name: str) -> Tensor:
    """Write `fn(input)` into input, as PyTorch's `inplace=True` does: the returned tensor is
    input, its version bumps, it takes the history (named `grad_name`, PyTorch's in-place node)
    and a leaf requiring grad is refused. The out-of-place function reads a snapshot of input,
    so its saved values are the ones before the write. A traced tensor records the write with
    copy_, which the tracer sees as an in-place update of that value."""
    if hasattr(type(input), "__graphmode_inplace__") or not isinstance(input, Tensor):  # a traced value
        return input.copy_(fn(input))
    return _inplace.apply_inplace(input, fn, (), name, grad_name=grad_name)


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(input, 0), elementwise (in place with `inplace=True`). Mirrors torch.nn.functional.relu."""
    return input.relu_() if inplace else _F.relu(input)


def tanh(input: Tensor) -> Tensor:
    """The hyperbolic tangent, elementwise. Mirrors torch.nn.functional.tanh."""
    return _F.tanh(input)


def sigmoid(input: Tensor) -> Tensor:
    """1 / (1 + exp(-input)), elementwise. Mirrors torch.nn.functional.sigmoid."""
    return _F.sigmoid(input)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """The Gaussian error linear unit x * Phi(x); approximate='tanh' uses the tanh formula.

    Mirrors torch.nn.functional.gelu."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    from ... import _fused_gelu  # noqa: PLC0415  (one node each way: eager/_fused_gelu.py)

    fused = _fused_gelu.gelu(input, approximate)
    return _F.gelu(input, approximate=approximate) if fused is None else fused


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta * input)) / beta, linear where beta * input > threshold.

    Mirrors torch.nn.functional.softplus."""
    return _F.softplus(input, beta, threshold)


def _implicit_dim(name: str, ndim: int) -> int:
    """PyTorch's legacy choice when dim is omitted (with the same deprecation warning)."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", UserWarning, stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, dtype=None) -> Tensor:
    """exp(input) normalized to sum to 1 along `dim`.

    Without `dim`, PyTorch's deprecated implicit choice (with its warning). Mirrors torch.nn.functional.softmax."""
    if dim is None:
        dim = _implicit_dim("softmax", input.ndim)
    return _F.softmax(input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int | None = None, dtype=None) -> Tensor:
    """log(softmax(input, dim)), computed stably.

    Without `dim`, PyTorch's deprecated implicit choice (with its warning). Mirrors torch.nn.functional.log_softmax."""
    if dim is None:
        dim = _implicit_dim("log_softmax", input.ndim)
    return _F.log_softmax(input, dim, dtype=dtype)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x), elementwise.

    `inplace=True` writes the result into input, as PyTorch's. Mirrors torch.nn.functional.silu."""
    if inplace:
        return _in_place(input, silu, "silu_", "SiluBackward0")
    return _F._renamed(input * _F.sigmoid(input), "SiluBackward0")


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x)), elementwise.

    `inplace=True` writes the result into input, as PyTorch's. Mirrors torch.nn.functional.mish."""
    if inplace:
        return _in_place(input, mish, "mish_", "MishBackward0")
    return _F._renamed(input * _F.tanh(_F.softplus(input)), "MishBackward0")


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x where x > 0, else negative_slope * x.

    `inplace=True` writes the result into input, as PyTorch's.
    Mirrors torch.nn.functional.leaky_relu."""
    if inplace:
        return _in_place(input, lambda s: leaky_relu(s, negative_slope), "leaky_relu_", "LeakyReluBackward1")
    return _F._renamed(_F.where(input > 0, input, input * negative_slope), "LeakyReluBackward0")


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x where x > 0, else alpha * (exp(x) - 1).

    `inplace=True` writes the result into input, as PyTorch's. Mirrors torch.nn.functional.elu."""
    # expm1 of x clipped to <= 0: the branch where() drops never overflows (its zero gradient
    # stays 0, not nan). The clip is a where, not minimum(x, 0): at x = 0 PyTorch takes the
    # negative branch's whole gradient (alpha), where minimum would split it in two. The test
    # is x <= 0, as PyTorch's: a NaN takes the identity branch (gradient 1, not NaN).
    if inplace:
        return _in_place(input, lambda s: elu(s, alpha), "elu_", "EluBackward1")
    return _F._renamed(_F.where(input <= 0, _F.expm1(_nonpositive(input)) * alpha, input), "EluBackward0")


def _nonpositive(input: Tensor) -> Tensor:
    """x where x <= 0, else 0 (NaN included), with the gradient of x passing wherever x <= 0."""
    return _F.where(input <= 0, input, 0.0)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """scale * elu(x, alpha) with the self-normalizing constants.

    `inplace=True` writes the result into input, as PyTorch's. Mirrors torch.nn.functional.selu."""
    if inplace:
        return _in_place(input, selu, "selu_", "EluBackward1")
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    return _F._renamed(elu(input, alpha) * scale, "EluBackward0")


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x where x > 0, else alpha * (exp(x / alpha) - 1).

    `inplace=True` writes the result into input, as PyTorch's. Mirrors torch.nn.functional.celu."""
    if inplace:
        return _in_place(input, lambda s: celu(s, alpha), "celu_", "CeluBackward1")
    return _F._renamed(_F.where(input <= 0, _F.expm1(_nonpositive(input) / alpha) * alpha, input), "CeluBackward0")


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """input clamped to [min_val, max_val].

    The gradient is 1 strictly inside the interval and 0 at its bounds, as PyTorch's
    (clamp passes it at the bounds, so this is not clamp).
    `inplace=True` writes the result into input, as PyTorch's. Mirrors torch.nn.functional.hardtanh."""
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val ({min_val}) cannot be greater than max_val ({max_val})")
    if inplace:
        return _in_place(input, lambda s: hardtanh(s, min_val, max_val), "hardtanh_", "HardtanhBackward0")
    # (a bound of zero gives +0.0 for a -0.0 input where PyTorch keeps -0.0: keeping it costs
    # relu6 about 1.7x, two more passes, so the sign of that zero is not kept)
    return _F._renamed(_F.where(input <= min_val, min_val, _F.where(input >= max_val, max_val, input)),
                       "HardtanhBackward0")


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6), elementwise.

    `inplace=True` writes the result into input, as PyTorch's. Mirrors torch.nn.functional.relu6."""
    return hardtanh(input, 0.0, 6.0, inplace)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """clamp(x / 6 + 1/2, 0, 1), elementwise.

    `inplace=True` writes the result into input, as PyTorch's.
    Its gradient is 1/6 strictly inside (-3, 3) and 0 at and beyond ±3 and at NaN (which
    gives NaN), as PyTorch's. Mirrors torch.nn.functional.hardsigmoid."""
    if inplace:
        return _in_place(input, hardsigmoid, "hardsigmoid_", "HardsigmoidBackward0")
    outside = _F.where(input <= -3.0, 0.0, _F.where(input >= 3.0, 1.0, input.detach()))  # NaN: itself, no gradient
    return _F._renamed(_F.where((input > -3.0) & (input < 3.0), (input + 3.0) / 6.0, outside), "HardsigmoidBackward0")


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * hardsigmoid(x), elementwise.

    `inplace=True` writes the result into input, as PyTorch's.
    PyTorch's gradient convention: 0 for x <= -3, x / 3 + 1/2 for -3 < x < 3, 1 for x >= 3
    and for NaN (the identity branch). Mirrors torch.nn.functional.hardswish."""
    # the quadratic sees x only inside (-3, 3): elsewhere (NaN too) its zero gradient stays 0
    if inplace:
        return _in_place(input, hardswish, "hardswish_", "HardswishBackward0")
    inside = _F.where((input > -3.0) & (input < 3.0), input, 0.0)
    return _F._renamed(_F.where(input <= -3.0, 0.0, _F.where(input < 3.0, inside * (inside + 3.0) / 6.0, input)),
                       "HardswishBackward0")


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)), computed stably; `log_sigmoid` is the same. Mirrors torch.nn.functional.logsigmoid."""
    return _F._renamed(_F._row_major(-_F.softplus(-input)), "LogSigmoidBackward0")  # row-major, as PyTorch's


log_sigmoid = logsigmoid


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """value where input <= threshold, else input (NaN stays NaN, its gradient passing, as
    PyTorch's), its node named ThresholdBackward0; `inplace=True` writes it into input, as
    PyTorch's. An integer tensor keeps its dtype: both numbers are cast into it (truncated, as
    PyTorch's kernel does). Mirrors torch.nn.functional.threshold."""
    if inplace:
        return _in_place(input, lambda s: globals()["threshold"](s, threshold, value), "threshold_", "ThresholdBackward1")
    kind = getattr(input.dtype, "category", None)
    if kind == 0:
        raise NotImplementedError("\"threshold_cpu\" not implemented for 'Bool'; threshold takes integer or "
                                  "floating tensors (cast the mask with .float() first)")
    if kind == 1:  # integers: PyTorch compares with the threshold cast into the dtype
        threshold, value = int(threshold), int(value)
    return _F._renamed(_F.where(input <= threshold, value, input), "ThresholdBackward0")


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """input where |input| > lambd, else 0. Mirrors torch.nn.functional.hardshrink."""
    return _F.where(_F.abs(input) > lambd, input, 0.0)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """input - lambd above lambd, input + lambd below -lambd, else 0. Mirrors torch.nn.functional.softshrink."""
    return _F.where(input > lambd, input - lambd, _F.where(input < -lambd, input + lambd, 0.0))


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """input where input > 0, else weight * input (so at 0 the gradient is weight, as
    PyTorch's), weight (one value or one per channel, dim 1) broadcast over the rest.
    Mirrors torch.nn.functional.prelu."""
    if weight.numel() != 1:
        channels = input.shape[1] if input.ndim > 1 else input.shape[0]
        if weight.numel() != channels:
            raise RuntimeError(f"prelu: Mismatch of parameter numbers and input channel size. Found parameter numbers "
                               f"= {weight.numel()} and channel size = {channels}.")
        if input.ndim > 1:
            weight = weight.reshape(-1, *([1] * (input.ndim - 2)))
    return _F.where(input > 0, input, input * weight)


def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|), elementwise. Mirrors torch.nn.functional.softsign."""
    return input / (_F.abs(input) + 1.0)


def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x), elementwise. Mirrors torch.nn.functional.tanhshrink."""
    return input - _F.tanh(input)


def softmin(input: Tensor, dim: int | None = None, dtype=None) -> Tensor:
    """softmax(-input, dim): weights that favour the smallest values. Mirrors torch.nn.functional.softmin."""
    return softmax(-input, dim, dtype=dtype)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """The gated linear unit a * sigmoid(b), with a and b the two halves of input along `dim`.

    Mirrors torch.nn.functional.glu."""
    a, b = _F.chunk(input, 2, dim)
    return a * _F.sigmoid(b)


def gumbel_softmax(logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """A sample of the Gumbel-softmax (concrete) distribution: softmax((logits + g) / tau) with
    g = -log(E), E ~ Exp(1), drawn from eager's generator (a compiled function draws the same
    numbers for the same seed). With hard=True the one-hot of its argmax in the forward and the
    soft sample's gradient (the straight-through estimator). `eps` is unused, as in PyTorch.
    Mirrors torch.nn.functional.gumbel_softmax."""
    exponential = -_F.log1p(-rand_like(logits))  # Exp(1) from U in [0, 1): finite
    y_soft = _F.softmax((logits - _F.log(exponential)) / tau, dim)
    if not hard:
        return y_soft
    index = _F.argmax(y_soft, dim, keepdim=True)
    y_hard = _F.scatter(zeros_like(logits), dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Randomized leaky ReLU: negative inputs are scaled by a slope drawn from U(lower, upper)
    per element while training, by (lower + upper) / 2 otherwise. Mirrors torch.nn.functional.rrelu."""
    if inplace:
        return _in_place(input, lambda s: rrelu(s, lower, upper, training), "rrelu_", "RreluWithNoiseBackward1")
    if training:
        slope = rand_like(input) * (upper - lower) + lower
    else:
        slope = (lower + upper) / 2
    out = _F.where(input > 0, input, input * slope)  # at 0 the gradient is the slope, as PyTorch's
    return out


def _inplace_form(fn, name: str):
    def inplace(input: Tensor, *args, **kwargs) -> Tensor:
        return fn(input, *args, inplace=True, **kwargs)

    inplace.__name__ = inplace.__qualname__ = name
    inplace.__doc__ = f"{fn.__name__}, written into input. Mirrors torch.nn.functional.{name}."
    return inplace


relu_ = _inplace_form(relu, "relu_")
elu_ = _inplace_form(elu, "elu_")
selu_ = _inplace_form(selu, "selu_")
celu_ = _inplace_form(celu, "celu_")
leaky_relu_ = _inplace_form(leaky_relu, "leaky_relu_")
hardtanh_ = _inplace_form(hardtanh, "hardtanh_")
threshold_ = _inplace_form(threshold, "threshold_")
rrelu_ = _inplace_form(rrelu, "rrelu_")
