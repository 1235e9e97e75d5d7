"""Dtypes as PyTorch spells them, backed by NumPy dtypes.

`eager.float32` is a `dtype` object rather than a raw NumPy dtype so that it prints as
users expect and so that promotion can follow PyTorch's rules (where a Python float never
upcasts a float32 tensor and 0-d tensors do not upcast dimensioned ones).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

_O = TypeVar("_O")


class dtype:
    """A tensor element type. Compare with `==`; `.np` is the NumPy dtype."""

    __slots__ = ("name", "np", "is_floating_point", "is_signed", "itemsize", "category")

    def __init__(self, name: str, np_dtype: type[np.generic], category: int) -> None:
        self.name = name
        self.np = np.dtype(np_dtype)
        self.category = category  # 0 bool, 1 integer, 2 floating
        self.is_floating_point = category == 2
        self.is_signed = self.np.kind in "fi"
        self.itemsize = self.np.itemsize

    def __repr__(self) -> str:
        return f"eager.{self.name}"

    def __reduce__(self) -> tuple[Callable[[str], dtype], tuple[str]]:
        return (from_name, (self.name,))


bool_ = dtype("bool", np.bool_, 0)
uint8 = dtype("uint8", np.uint8, 1)
int8 = dtype("int8", np.int8, 1)
int16 = dtype("int16", np.int16, 1)
int32 = dtype("int32", np.int32, 1)
int64 = dtype("int64", np.int64, 1)
float16 = dtype("float16", np.float16, 2)
float32 = dtype("float32", np.float32, 2)
float64 = dtype("float64", np.float64, 2)

ALL = (bool_, uint8, int8, int16, int32, int64, float16, float32, float64)
_BY_NP = {d.np: d for d in ALL}
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update(
    bool=bool_, half=float16, float=float32, double=float64, short=int16, int=int32, long=int64,
    f16=float16, f32=float32, f64=float64, i8=int8, i16=int16, i32=int32, i64=int64, u8=uint8,
)

DEFAULT_FLOAT = float32
DEFAULT_INT = int64


def from_name(name: str) -> dtype:
    return _BY_NAME[name]


def from_numpy(np_dtype: npt.DTypeLike) -> dtype:
    """The eager dtype of a NumPy dtype; TypeError for ones eager has no tensor type for."""
    try:
        return _BY_NP[np.dtype(np_dtype)]
    except (KeyError, TypeError):
        raise TypeError(
            f"can't convert np.ndarray of type {np.dtype(np_dtype)}. The only supported types are: "
            "float64, float32, float16, int64, int32, int16, int8, uint8, and bool."
        ) from None


class UnsupportedDtype:
    """A PyTorch dtype NumPy has no type for (bfloat16, complex32). The name exists because
    scripts build tables of dtypes at import (nanoGPT's `{'bfloat16': torch.bfloat16, ...}`)
    and pick float32 or float16 on a CPU; using one (a factory, `.to()`) raises TypeError."""

    __slots__ = ("name", "is_floating_point", "is_complex", "itemsize")

    def __init__(self, name: str, is_floating_point: bool, is_complex: bool, itemsize: int) -> None:
        self.name, self.is_floating_point, self.is_complex, self.itemsize = name, is_floating_point, is_complex, itemsize

    def __repr__(self) -> str:
        return f"eager.{self.name}"


bfloat16 = UnsupportedDtype("bfloat16", True, False, 2)
complex32 = UnsupportedDtype("complex32", False, True, 4)
_UNSUPPORTED = {d.name for d in (bfloat16, complex32)}


def _unsupported(name: str) -> TypeError:
    return TypeError(f"dtype {name} is not supported: eager's arrays are NumPy's (or CuPy's), which have no "
                     f"{name}; use float32, or float16 for half precision")


def as_dtype(value: dtype | npt.DTypeLike) -> dtype:
    """Accept an eager dtype, its name ('float32', 'double'), a NumPy dtype or a Python type."""
    if isinstance(value, dtype):
        return value
    if isinstance(value, UnsupportedDtype):
        raise _unsupported(value.name)
    if value is float:
        return float64  # torch.tensor(..., dtype=float) is float64, as in NumPy
    if value is int:
        return int64
    if value is bool:
        return bool_
    if isinstance(value, str):
        name = value.removeprefix("torch.").removeprefix("eager.")
        found = _BY_NAME.get(name)
        if found is None:
            if name in _UNSUPPORTED:
                raise _unsupported(name)
            raise TypeError(
                f"unknown dtype {value!r}; expected one of {', '.join(d.name for d in ALL)} "
                "(or an alias such as 'float', 'double', 'long')"
            )
        return found
    try:
        return from_numpy(value)
    except TypeError:
        raise TypeError(f"unknown dtype {value!r}; expected an eager dtype such as eager.float32") from None


_SCALAR_TYPE = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
                "int64": "Long", "float16": "Half", "float32": "Float", "float64": "Double"}


def scalar_type_name(d: dtype) -> str:
    """The name PyTorch's messages use for a dtype (Float, Long, ...)."""
    return _SCALAR_TYPE[d.name]


_CPP_TYPE = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char", "int16": "short int",
             "int32": "int", "int64": "long int", "float16": "c10::Half", "float32": "float", "float64": "double"}


def cpp_type_name(d: dtype) -> str:
    """The element type's C++ name, which some PyTorch messages print (float, long int)."""
    return _CPP_TYPE[d.name]


def short_name(d: dtype) -> str:
    """The compact name the IR prints: f32, i64, bool."""
    return {"bool": "bool", "uint8": "u8"}.get(d.name, d.name[0] + d.name.lstrip("abcdefghijklmnopqrstuvwxyz"))


def promote(a: dtype, b: dtype) -> dtype:
    """Promotion of two tensor dtypes of equal standing (both dimensioned or both 0-d)."""
    if a is b:
        return a
    if a.category != b.category:
        # PyTorch: the higher category wins with its own dtype (int32 + float32 -> float32),
        # where NumPy would widen to hold every integer exactly (float64)
        return a if a.category > b.category else b
    return _BY_NP[np.promote_types(a.np, b.np)]


def scalar_category(value: object) -> int:
    if isinstance(value, (bool, np.bool_)):
        return 0
    if isinstance(value, (int, np.integer)):
        return 1
    return 2


def result_type(dims: list[dtype], zero_dims: list[dtype], scalars: Sequence[object]) -> dtype:
    """PyTorch's three-tier promotion.

    Dimensioned tensors decide first; a 0-d tensor or a Python scalar only matters when it
    is of a higher category (bool < integer < floating) than everything above it, and then
    contributes the default dtype of its category (for scalars) or its own dtype (0-d).
    """
    result = None
    for d in dims:
        result = d if result is None else promote(result, d)
    zd = None
    for d in zero_dims:
        zd = d if zd is None else promote(zd, d)
    if zd is not None and (result is None or zd.category > result.category):
        result = zd
    if scalars:
        cat = max(scalar_category(s) for s in scalars)
        if result is None or cat > result.category:
            result = (bool_, DEFAULT_INT, DEFAULT_FLOAT)[cat]
    if result is None:
        raise TypeError("result_type: no operand to promote (no tensor and no Python number)")
    return result


# How an operand takes part in promotion (see promote_operands).
DIMENSIONED, ZERO_DIM, WEAK = 0, 1, 2


def promote_operands(promote: str, skip: tuple[int, ...], operands: Sequence[_O],
                     describe: Callable[[_O], tuple[dtype, int] | None],
                     cast: Callable[[_O, dtype], _O]) -> Sequence[_O]:
    """An op's operands cast to its result dtype by PyTorch's rules: the one promotion of
    eager and static (eager casts tensors, the tracer records casts into the graph).

    `promote` is the op's rule ("same", or "float": a float result even from integers);
    operands at the positions in `skip` (a condition) take no part. `describe(o)` gives a
    tensor operand's dtype and standing (DIMENSIONED, ZERO_DIM, or WEAK: a traced Python
    number, which promotes like one but is cast like a tensor), None for a Python number.
    Python numbers stay weak: 2.0 never makes a float32 tensor float64. Returns `operands`
    itself when nothing changes."""
    dims: list[dtype] = []
    zero: list[dtype] = []
    scalars: list[Any] = []
    described: list[tuple[dtype, int] | None] = []
    for i, o in enumerate(operands):
        d = None if i in skip else describe(o)
        described.append(d)
        if i in skip:
            continue
        if d is None:
            scalars.append(o)
        elif d[1] == DIMENSIONED:
            dims.append(d[0])
        elif d[1] == ZERO_DIM:
            zero.append(d[0])
        else:
            scalars.append((True, 1, 1.0)[d[0].category])
    target = result_type(dims, zero, scalars)
    if promote == "float" and not target.is_floating_point:
        target = DEFAULT_FLOAT
    out: list[_O] | None = None
    for i, (o, d) in enumerate(zip(operands, described)):
        if i in skip:
            continue
        if d is not None and d[0] is not target:
            new = cast(o, target)
        elif d is None and isinstance(o, bool) and target.category:
            new = int(o)  # type: ignore[assignment]  # a bool operand of a number op counts as 0/1
        else:
            continue
        if out is None:
            out = list(operands)
        out[i] = new
    return operands if out is None else out


# PyTorch's CPU kernels of these ops take a scalar operand (a Python number or a 0-d tensor)
# beside float16 tensors at float32 precision ("opmath"): `x / 100000` divides by 1e5, where
# NumPy would first round 1e5 to float16 (inf) and give zeros. Other ops (add, sub,
# comparisons) round the scalar to float16 first in PyTorch too, as NumPy does. A dtype rule,
# so it lives here: eager's dispatch, the tracer and the IR's type rule all read this table.
HALF_SCALAR_IN_FLOAT32 = frozenset({"mul", "div"})


def half_beside_0d(described: Iterable[tuple[dtype, int] | None]) -> bool:
    """float16 dimensioned tensors beside a 0-d tensor of another number dtype
    (`t / tensor(1e5)`): PyTorch computes such a mul/div at float32 precision ("opmath",
    see HALF_SCALAR_IN_FLOAT32). Operands as `promote_operands` describes
    them; Python numbers and weak values take no part."""
    half = other_0d = False
    for d in described:
        if d is None or d[1] == WEAK:
            continue
        dt, standing = d
        if standing == DIMENSIONED:
            if dt is not float16:
                return False
            half = True
        elif dt is not float16:
            if dt.category == 0:
                return False
            other_0d = True
    return half and other_0d
