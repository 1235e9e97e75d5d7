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


# -- views and in-place writes -------------------------------------------------------------------
# A mutation program starts from y = x * 1 (so writes do not touch a leaf) and takes views
# of values (which share their storage) and writes into values in place. After a write,
# views of the same storage taken before it are no longer read: PyTorch regenerates their
# history lazily, and that case has its own fixed tests (see test_oracle_known.py).
VIEWS = {
    "select0": (lambda t: t.dim() >= 1 and t.shape[0] >= 2, lambda T, t: t[1]),
    "slice_last": (lambda t: t.dim() >= 1 and t.shape[-1] >= 2, lambda T, t: t[..., 1:]),
    "step0": (lambda t: t.dim() >= 1 and t.shape[0] >= 2, lambda T, t: t[::2]),
    "transpose": (lambda t: t.dim() >= 2, lambda T, t: t.transpose(0, 1)),
    "unsqueeze": (lambda t: t.dim() <= 2, lambda T, t: t.unsqueeze(0)),
}
WRITES = {
    "mul_": lambda T, t, other: t.mul_(1.5),
    "add_": lambda T, t, other: t.add_(other.sum() * 0.25),
    "sub_scalar_": lambda T, t, other: t.sub_(0.5),
    "setitem_scalar": lambda T, t, other: t.__setitem__(0, 0.25) if t.dim() else t.fill_(0.25),
    "setitem_value": lambda T, t, other: t.__setitem__(..., T.tanh(other.sum()) * t),
    "clamp_": lambda T, t, other: t.clamp_(-1.0, 1.0),
}
PURE = {
    "tanh": lambda T, t: T.tanh(t),
    "scale": lambda T, t: t * 0.75 + 0.1,
    "square": lambda T, t: t * t,
}


@st.composite
def mutation_programs(draw, max_steps: int = 6, write_views: bool = True):
    """Steps over a symbolic state (shapes, storage roots, liveness), so that each drawn step
    applies: ("view", name, i), ("write", name, i, j) or ("pure", name, i). Without
    `write_views`, writes go to whole tensors only (what static functionalizes; it refuses a
    write through a view with a TraceError that says so)."""
    shape = tuple(draw(st.lists(st.integers(2, 3), min_size=1, max_size=3)))
    # value k: [shape, root, live]; value 0 is y = x * 1
    state = [[shape, 0, True]]
    steps = []
    for _ in range(draw(st.integers(1, max_steps))):
        live = [k for k, v in enumerate(state) if v[2]]
        kind = draw(st.sampled_from(["view", "write", "write", "pure"]))
        i = draw(st.sampled_from(live))
        shp, root, _ = state[i]
        probe = _Shape(shp)
        if kind == "view":
            names = [n for n, (ok, _) in VIEWS.items() if ok(probe)]
            if not names:
                continue
            name = draw(st.sampled_from(names))
            steps.append(("view", name, i))
            state.append([_view_shape(name, shp), root, True])
        elif kind == "write":
            if not write_views and i != root:
                continue
            name = draw(st.sampled_from(sorted(WRITES)))
            j = draw(st.sampled_from(live))
            steps.append(("write", name, i, j))
            for k, v in enumerate(state):  # earlier views of the storage are stale now
                if v[1] == root and k not in (i, root):
                    v[2] = False
        else:
            name = draw(st.sampled_from(sorted(PURE)))
            steps.append(("pure", name, i))
            state.append([shp, len(state), True])
    return shape, steps


class _Shape:
    def __init__(self, shape):
        self.shape = shape

    def dim(self):
        return len(self.shape)


def _view_shape(name, shape):
    if name == "select0":
        return shape[1:]
    if name == "slice_last":
        return shape[:-1] + (shape[-1] - 1,)
    if name == "step0":
        return ((shape[0] + 1) // 2,) + shape[1:]
    if name == "transpose":
        return (shape[1], shape[0]) + shape[2:]
    return (1,) + shape


def run_mutations(steps, T, x):
    """Every value of the program after it ran (stale views left out), for the loss."""
    values = [x * 1]
    live = [True]
    roots = [0]
    for step in steps:
        kind, name, i, *rest = step
        if kind == "view":
            values.append(VIEWS[name][1](T, values[i]))
            live.append(True)
            roots.append(roots[i])
        elif kind == "write":
            WRITES[name](T, values[i], values[rest[0]])
            for k in range(len(values)):
                if roots[k] == roots[i] and k not in (i, roots[i]):
                    live[k] = False
        else:
            values.append(PURE[name](T, values[i]))
            live.append(True)
            roots.append(len(values) - 1)
    return [v for v, ok in zip(values, live) if ok]


# -- shape ops: each step maps one value to a new one of another shape ------------------------
def _idx(T, t):
    return T.tensor([t.shape[0] - 1, 0, t.shape[0] - 1])


SHAPE_OPS = {
    "transpose": (lambda s: len(s) >= 2, lambda T, t: t.transpose(0, -1)),
    "permute": (lambda s: len(s) == 3, lambda T, t: t.permute(2, 0, 1)),
    "flatten": (lambda s: len(s) >= 2, lambda T, t: t.reshape(-1)),
    "split_last": (lambda s: len(s) >= 1 and s[-1] % 2 == 0,
                   lambda T, t: t.reshape(*t.shape[:-1], 2, t.shape[-1] // 2)),
    "unsqueeze_expand": (lambda s: len(s) <= 2, lambda T, t: t.unsqueeze(0).expand(2, *t.shape)),
    "squeeze": (lambda s: 1 in s, lambda T, t: t.squeeze()),
    "narrow": (lambda s: len(s) >= 1 and s[0] >= 2, lambda T, t: t[1:]),
    "select_last": (lambda s: len(s) >= 2, lambda T, t: t[..., 0]),
    "gather_rows": (lambda s: len(s) >= 1, lambda T, t: t[_idx(T, t)]),
    "cat_self": (lambda s: len(s) >= 1, lambda T, t: T.cat([t, t * 2], 0)),
    "stack_self": (lambda s: len(s) <= 2, lambda T, t: T.stack([t, T.tanh(t)], -1)),
    "gram": (lambda s: len(s) == 2, lambda T, t: t @ t.transpose(0, 1)),
    "matvec": (lambda s: len(s) == 2, lambda T, t: T.matmul(t, T.tanh(t[0]))),
    "flip_sign_where": (lambda s: True, lambda T, t: T.where(t > 0, t, -0.5 * t)),
    "softmax0": (lambda s: len(s) >= 1, lambda T, t: T.softmax(t, 0)),
    "sum0": (lambda s: len(s) >= 1, lambda T, t: t.sum(0)),
    "tanh": (lambda s: True, lambda T, t: T.tanh(t)),
}


def _shape_after(name, shape):
    """The shape a step gives: the step run by eager on zeros of that shape (tiny)."""
    import eager  # noqa: PLC0415

    return tuple(SHAPE_OPS[name][1](eager, eager.zeros(*shape)).shape)


@st.composite
def shape_programs(draw, max_steps: int = 5):
    shape = tuple(draw(st.lists(st.sampled_from([1, 2, 3, 4]), min_size=1, max_size=3)))
    steps, cur = [], shape
    for _ in range(draw(st.integers(1, max_steps))):
        names = [n for n, (ok, _) in SHAPE_OPS.items() if ok(cur)]
        name = draw(st.sampled_from(names))
        nxt = _shape_after(name, cur)
        if len(nxt) > 4 or (nxt and max(nxt) > 16):
            continue
        steps.append(name)
        cur = nxt
    return shape, steps


def run_shape_program(steps, T, x):
    for name in steps:
        x = SHAPE_OPS[name][1](T, x)
    return x
