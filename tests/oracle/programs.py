"""Random programs for the differential suite, written once against the PyTorch API and run
with `T` bound to real PyTorch or to eager (`import eager as torch` is the project's promise).

A program is a recipe: a list of steps, each an op name and the indices of the earlier
values it reads. Every value stays broadcastable to the inputs' common shape (reductions
keep their dims), so any step may combine any two values."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

# op name -> (arity, how it is applied). Each is smooth or has its kinks where random floats
# do not land, and keeps its inputs in a range where float32 and float64 agree to tolerance.
UNARY = {
    "tanh": lambda T, x: T.tanh(x),
    "sigmoid": lambda T, x: T.sigmoid(x),
    "sin": lambda T, x: T.sin(x),
    "cos": lambda T, x: x.cos(),
    "exp_tanh": lambda T, x: T.exp(T.tanh(x)),
    "relu": lambda T, x: T.relu(x),
    "abs": lambda T, x: x.abs(),
    "neg": lambda T, x: -x,
    "square": lambda T, x: x * x,
    "log1p_abs": lambda T, x: T.log1p(T.abs(x)),
    "sqrt_1p": lambda T, x: T.sqrt(x * x + 1),
    "rsqrt_1p": lambda T, x: T.rsqrt(x * x + 1.5),
    "scale": lambda T, x: x * 2.5,
    "shift": lambda T, x: 1 - x,
    "pow3": lambda T, x: x ** 3,
    "clamp": lambda T, x: x.clamp(-0.7, 0.9),
    "sum_last": lambda T, x: x.sum(-1, keepdim=True) if x.dim() else x.sum(),
    "mean_first": lambda T, x: x.mean(0, keepdim=True) if x.dim() else x.mean(),
    "amax_last": lambda T, x: x.amax(-1, keepdim=True) if x.dim() else x,
    "softmax_last": lambda T, x: T.softmax(x, -1) if x.dim() else x,
    "log_softmax_last": lambda T, x: T.log_softmax(x, -1) if x.dim() else x,
    "logsumexp_last": lambda T, x: T.logsumexp(x, -1, keepdim=True) if x.dim() else x,
    "var_last": lambda T, x: x.var(-1, keepdim=True) if x.dim() and x.shape[-1] > 1 else x,
}
BINARY = {
    "add": lambda T, a, b: a + b,
    "sub": lambda T, a, b: a - b,
    "mul": lambda T, a, b: a * b,
    "div_safe": lambda T, a, b: a / (b * b + 1),
    "maximum": lambda T, a, b: T.maximum(a, b),
    "minimum": lambda T, a, b: T.minimum(a, b),
    "pow_pos": lambda T, a, b: (a * a + 0.5) ** T.tanh(b),
    "where_gt": lambda T, a, b: T.where(a > b, a, b * 2),
    "atan2ish": lambda T, a, b: a * T.sigmoid(b) - b * T.tanh(a),
}


@st.composite
def shapes(draw, n: int = 2, max_dims: int = 3):
    """n shapes broadcastable to a common one: some leading dims dropped, some sizes 1."""
    base = draw(st.lists(st.integers(1, 4), min_size=0, max_size=max_dims))
    out = []
    for _ in range(n):
        drop = draw(st.integers(0, len(base)))
        shape = [1 if draw(st.booleans()) and draw(st.booleans()) else d for d in base[drop:]]
        out.append(tuple(shape))
    return out


@st.composite
def programs(draw, n_inputs: int = 2, max_steps: int = 6):
    steps = []
    for k in range(draw(st.integers(1, max_steps))):
        n_values = n_inputs + k
        if draw(st.booleans()):
            steps.append((draw(st.sampled_from(sorted(UNARY))), draw(st.integers(0, n_values - 1))))
        else:
            steps.append((draw(st.sampled_from(sorted(BINARY))), draw(st.integers(0, n_values - 1)),
                          draw(st.integers(0, n_values - 1))))
    return steps


def run(program, T, *inputs):
    """The program's last value, computed with `T` (torch or eager)."""
    values = list(inputs)
    for name, *args in program:
        fn = UNARY.get(name) or BINARY[name]
        values.append(fn(T, *[values[i] for i in args]))
    return values[-1]


def arrays(seed: int, shapes_, dtype) -> list:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-2, 2, size=s).astype(dtype) for s in shapes_]


def tolerance(dtype) -> dict:
    return dict(rtol=2e-4, atol=2e-5) if np.dtype(dtype) == np.float32 else dict(rtol=1e-7, atol=1e-9)


def describe(program, n_inputs: int = 2) -> str:
    return "; ".join(f"v{n_inputs + i} = {name}({', '.join(f'v{j}' for j in args)})"
                     for i, (name, *args) in enumerate(program))
