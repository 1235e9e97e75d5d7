"""Random programs over the op set, drawn by hypothesis as recipes (shapes, steps, dtype)
and applied to tracers and eager tensors alike: the IR round-trip tests and the native
backend's tests run the same programs."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import eager

SHAPES = [(3, 4), (4,), (3, 1), (), (2, 3, 4), (4, 3)]
UNARY = ["exp", "tanh", "sin", "cos", "neg", "abs", "sigmoid", "relu", "log1p", "sqrt", "square"]
BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "pow"]
REDUCE = ["sum", "mean", "amax", "amin", "logsumexp", "prod"]


def _unary(name, x):
    if name == "log1p":
        return eager.log1p(x.abs())
    if name == "sqrt":
        return (x * x + 1.0).sqrt()
    if name == "square":
        return x ** 2
    return getattr(eager, name)(x) if hasattr(eager, name) else getattr(x, name)()


def _binary(name, a, b):
    if name == "pow":
        return a.abs() ** b
    return {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b, "div": lambda: a / (b * b + 1.0),
            "maximum": lambda: eager.maximum(a, b), "minimum": lambda: eager.minimum(a, b)}[name]()


def _broadcastable(s1, s2):
    try:
        np.broadcast_shapes(s1, s2)
        return True
    except ValueError:
        return False


def apply_recipe(recipe, xs):
    """Run a recipe on eager tensors or tracers; steps that do not fit the shapes are skipped
    (shapes are static, so both runs skip the same steps)."""
    pool = list(xs)
    for step in recipe:
        kind, a, b, c, p = step
        x, y, z = pool[a % len(pool)], pool[b % len(pool)], pool[c % len(pool)]
        if kind == "unary":
            out = _unary(UNARY[p % len(UNARY)], x)
        elif kind == "binary":
            if not _broadcastable(tuple(x.shape), tuple(y.shape)):
                continue
            out = _binary(BINARY[p % len(BINARY)], x, y)
        elif kind == "scalar":
            out = [x * 0.5, 2.0 - x, x / 3.0, x + 1][p % 4]
        elif kind == "reduce":
            if x.ndim == 0:
                continue
            dim = p % x.ndim
            name = REDUCE[(p // 3) % len(REDUCE)]
            keepdim = bool(p % 2)
            out = getattr(x, name)(dim, keepdim=keepdim) if name != "logsumexp" else eager.logsumexp(x, dim, keepdim)
        elif kind == "shape":
            choice = p % 5
            if choice == 0 and x.ndim >= 2:
                out = x.transpose(0, x.ndim - 1)
            elif choice == 1:
                out = x.reshape(-1)
            elif choice == 2:
                out = x.unsqueeze(0)
            elif choice == 3 and x.ndim >= 1:
                out = x[0] if p % 2 else x[..., :1]
            elif choice == 4:
                out = eager.softmax(x, dim=-1) if x.ndim else x
            else:
                continue
        elif kind == "matmul":
            if x.ndim not in (1, 2) or y.ndim not in (1, 2) or x.shape[-1] != y.shape[0]:
                continue
            out = x @ y
        elif kind == "where":
            if not (_broadcastable(tuple(x.shape), tuple(y.shape))
                    and _broadcastable(np.broadcast_shapes(tuple(x.shape), tuple(y.shape)), tuple(z.shape))):
                continue
            out = eager.where(x > 0, y, z)
        elif kind == "inplace":
            out = x.clone()
            out.mul_(1.5)
            out += 1
        else:  # "stack"
            if tuple(x.shape) != tuple(y.shape):
                continue
            out = eager.stack([x, y], dim=0) if p % 2 else eager.cat([x, y], dim=0) if x.ndim else x + y
        pool.append(out)
    return tuple(pool[len(xs):][-3:]) or (pool[-1] * 1.0,)


STEP = st.tuples(st.sampled_from(["unary", "binary", "scalar", "reduce", "shape", "matmul", "where", "inplace",
                                  "stack"]),
                 st.integers(0, 20), st.integers(0, 20), st.integers(0, 20), st.integers(0, 50))
PROGRAM = st.tuples(st.lists(st.sampled_from(SHAPES), min_size=1, max_size=3), st.lists(STEP, min_size=1, max_size=12),
                    st.sampled_from(["float32", "float64"]))


def program_inputs(program, dtype=None):
    """The program's input arrays (in its own dtype unless `dtype` is given), the same for
    every run of one program."""
    shapes, _, own = program
    rng = np.random.default_rng(len(shapes))
    return [rng.standard_normal(s).astype(dtype or own) for s in shapes]


def program_function(program):
    """fn(*xs): the program's last outputs (at most three), as a tuple."""
    def fn(*xs):
        return apply_recipe(program[1], xs)
    return fn


def program_loss(program):
    """loss(*xs): the sum of the program's floating outputs, a scalar to differentiate."""
    def loss(*xs):
        return sum((o * 1.0).sum() for o in apply_recipe(program[1], xs) if o.is_floating_point())
    return loss
