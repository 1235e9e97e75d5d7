"""The C caller: how Python calls a compiled kernel, `void k(void* const* args, int threads)`.

A small CPython extension (csrc/caller.cpp, built once per interpreter and NumPy version and
cached like the kernels) checks each NumPy array (C-contiguous, aligned, its type, its byte
size, writeable where written) and passes its data pointer, about 20 ns an argument;
`call_new` also allocates the small outputs (in C, a fraction of np.empty's cost from Python)
and returns them. Without Python headers a ctypes path does the same, slower. The extension
builds on a helper thread while a graph's kernels compile (prefetch_caller). gmnative.build
re-exports these names (generated modules call `build.caller()`).
"""
from __future__ import annotations

import ctypes
import functools
import importlib.machinery
import importlib.util
import os
import sys
import threading

import numpy as np

from ._sources import read_source

# the CPython extension that checks each array and calls the kernel: csrc/caller.cpp
_CALLER_SOURCE = read_source("caller.cpp")


def _ctypes_call(addr: int, nt: int, sizes: tuple, types: bytes, *arrays) -> None:
    """The ctypes path (no Python or NumPy headers): the extension's checks, slower."""
    import numpy as np  # noqa: PLC0415

    if len(sizes) != len(arrays) or len(types) != len(arrays):
        raise TypeError("native kernel: one size and one type per array")
    ptrs = (ctypes.c_void_p * max(len(arrays), 1))()
    for i, (want, a) in enumerate(zip(sizes, arrays)):
        if not isinstance(a, np.ndarray):
            raise TypeError(f"native kernel: argument {i} is not a NumPy array")
        if not (a.flags.c_contiguous and a.flags.aligned and a.dtype.isnative):
            raise ValueError(f"native kernel: array {i} is not C-contiguous, aligned and native")
        if a.dtype != np.dtype(_TYPE_NAMES[types[i]]):
            raise ValueError(f"native kernel: array {i} has dtype {a.dtype}, expected {_TYPE_NAMES[types[i]]}")
        if a.nbytes != abs(want):
            raise ValueError(f"native kernel: array {i} has {a.nbytes} bytes, expected {abs(want)}")
        if want < 0 and not a.flags.writeable:
            raise ValueError(f"native kernel: array {i} is read-only")
        ptrs[i] = a.ctypes.data
    _kernel_type(addr)(ptrs, nt)


def _ctypes_call_new(addr: int, nt: int, sizes: tuple, types: bytes, shapes: tuple, *arrays) -> tuple:
    """call_new through ctypes: the new arrays from np.empty."""
    given = len(arrays)
    fresh = tuple(np.empty(shape, _TYPE_NAMES[types[given + j]]) for j, shape in enumerate(shapes))
    _ctypes_call(addr, nt, sizes, types, *arrays, *fresh)
    return fresh


_TYPE_NAMES: dict = {}


@functools.cache
def _kernel_type(addr: int):
    proto = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int)
    return proto(addr)


@functools.cache
def formats(dtype_names: tuple) -> bytes:
    """The NumPy type number of each dtype, one byte each, as the call path checks them.
    (Cached: a generated module asks for one per kernel call site, mostly the same tuple,
    while it loads.)"""
    import numpy as np  # noqa: PLC0415

    nums = []
    for name in dtype_names:
        dt = np.dtype(name)
        if dt.num not in _TYPE_NAMES:  # (dtype.name is a slow property)
            _TYPE_NAMES[dt.num] = dt.name
        nums.append(dt.num)
    return bytes(nums)


_UNSET = object()
_caller_lock = threading.Lock()  # held while the extension is built
_caller_value: object = _UNSET
_caller_started = False


def _reset_caller_lock_in_child() -> None:
    global _caller_lock, _caller_started
    _caller_lock = threading.Lock()  # a fork while a helper thread held it must not deadlock the child
    _caller_started = _caller_value is not _UNSET


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_caller_lock_in_child)


def prefetch_caller() -> None:
    """Build (or load from the cache) the call-path extension on a helper thread, while this
    thread compiles a graph's kernels: on a first use the two compiles overlap."""
    global _caller_started
    if _caller_started:
        return
    _caller_started = True
    threading.Thread(target=_caller_module, name="graphmode-native-caller", daemon=True).start()


def _caller_module():
    """The compiled call-path extension module (None: calls go through ctypes); built once,
    by whichever thread asks first (the others wait for it)."""
    global _caller_value, _caller_started
    if _caller_value is not _UNSET:
        return _caller_value
    with _caller_lock:
        _caller_started = True
        if _caller_value is _UNSET:
            _caller_value = _build_caller()
    return _caller_value


def _build_caller():
    from . import build  # noqa: PLC0415  (build re-exports this module's names: imported when first needed)

    tc = build.toolchain()
    if tc.openmp:
        build._set_wait_policy()  # before anything loads libgomp
    if tc.python_include is None:
        return None
    tag = f"py{sys.version_info[0]}{sys.version_info[1]}-{sys.implementation.cache_tag}-numpy{np.__version__}"
    try:
        data, _, _, _ = build.build_bytes(_CALLER_SOURCE + f"\n// {tag}\n", "gm_native_call",
                                    extra=(f"-I{tc.python_include}", f"-I{np.get_include()}"))
    except build.NativeCompileError:
        return None
    tmp = build._private_copy(data)
    try:
        loader = importlib.machinery.ExtensionFileLoader("graphmode_native_call", tmp)
        spec = importlib.util.spec_from_file_location("graphmode_native_call", tmp, loader=loader)
        assert spec is not None  # given a loader, importlib always makes a spec
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
    finally:
        os.unlink(tmp)
    return module


def caller():
    """call(kernel_address, threads, sizes, formats, *buffers): the compiled extension's, or ctypes'."""
    module = _caller_module()
    return _ctypes_call if module is None else module.call


def caller_new():
    """call_new(kernel_address, threads, sizes, formats, shapes, *buffers) -> the new output
    arrays (the last len(shapes) buffers, allocated by the call path)."""
    module = _caller_module()
    return _ctypes_call_new if module is None else module.call_new


def loaded_copy_pairs():
    """The call-path extension's copy_pairs where the extension is already loaded in this
    process (a native kernel ran), else None: writing back never builds it."""
    module = _caller_value
    return None if module is _UNSET or module is None else getattr(module, "copy_pairs", None)
