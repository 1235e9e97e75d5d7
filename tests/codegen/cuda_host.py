"""Run generated CuPy modules on the CPU: a stand-in for the `cupy` module whose
ElementwiseKernel / ReductionKernel compile their CUDA C++ bodies with the host C++
compiler, through the same target-neutral helper layer (c_helpers.py: GM_INLINE is
`static inline` there), and whose array functions are NumPy's. So the arithmetic of every
CuPy kernel is checked on every run, with no GPU.

Kernels are compiled lazily and together: everything constructed since the last compile
goes into one translation unit at the first kernel call (one compiler start for many
kernels). Each kernel is a loop over its elements with CuPy's semantics: inputs broadcast
to the outputs' shape; reductions map, reduce in `reduce_type`, then post-map."""
from __future__ import annotations

import numpy as np
from cuda_tu import C_OF

from codegen import c_helpers, native_build

_HOST_CUDA_SPELLINGS = r"""
// the few CUDA spellings generated kernels use outside the helper layer
#ifndef __CUDACC__
#define __device__
#define __forceinline__ inline
#endif
"""


def _params(text: str) -> list:
    return [tuple(p.split()) for p in text.split(",") if p.strip()]


class _Kernel:
    def __init__(self, host: "HostCupy", name: str) -> None:
        self.host, self.name = host, name
        self.symbol = f"gm_host_{len(host.kernels)}_{name}"
        self.address = None
        host.kernels.append(self)
        host.pending.append(self)

    def _call(self, buffers: list) -> None:
        if self.address is None:
            self.host.compile_pending()
        sizes = tuple(-b.nbytes if b.flags.writeable and k >= self.n_in else b.nbytes for k, b in enumerate(buffers))
        formats = native_build.formats(tuple(b.dtype.name for b in buffers))
        native_build.caller()(self.address, 1, sizes, formats, *buffers)


def _pointers(ins, outs) -> list:
    """The kernel's parameters as typed pointers into its argument array: the inputs first
    (read only), then the outputs."""
    lines = [f"    const {C_OF[t]}* {n}_ptr = (const {C_OF[t]}*)gm_args[{k}];" for k, (t, n) in enumerate(ins)]
    return lines + [f"    {C_OF[t]}* {n}_ptr = ({C_OF[t]}*)gm_args[{len(ins) + k}];" for k, (t, n) in enumerate(outs)]


class ElementwiseKernel(_Kernel):
    def __init__(self, host, in_params, out_params, body, name, preamble="", **_):
        super().__init__(host, name)
        self.ins, self.outs, self.body, self.preamble = _params(in_params), _params(out_params), body, preamble
        self.n_in = len(self.ins)

    def source(self) -> str:
        ins, outs = self.ins, self.outs
        lines = [f"namespace {self.symbol}_ns {{", self.preamble,
                 f'extern "C" void {self.symbol}(void* const* gm_args, int gm_nt) {{',
                 f"    const long long n = ((const long long*)gm_args[{len(ins) + len(outs)}])[0];"]
        lines += _pointers(ins, outs)
        lines.append("    for (long long i = 0; i < n; ++i) {")
        lines += [f"        const {C_OF[t]} {n} = {n}_ptr[i];" for t, n in ins]
        lines += [f"        {C_OF[t]} {n};" for t, n in outs]
        lines += ["        {", self.body, "        }"]
        lines += [f"        {n}_ptr[i] = {n};" for t, n in outs]
        lines += ["    }", "}", "}"]
        return "\n".join(lines)

    def __call__(self, *arrays):
        ins, outs = arrays[:len(self.ins)], arrays[len(self.ins):]
        assert len(outs) == len(self.outs), "the generated code passes its outputs"
        shape = outs[0].shape
        buffers = [np.ascontiguousarray(np.broadcast_to(np.asarray(a, dtype=_np_type(t)), shape))
                   for a, (t, _) in zip(ins, self.ins)]
        results = [np.empty(shape, _np_type(t)) for t, _ in self.outs]
        self._call(buffers + results + [np.array([int(np.prod(shape, dtype=np.int64))], np.int64)])
        for o, r in zip(outs, results):
            o[...] = r


class ReductionKernel(_Kernel):
    def __init__(self, host, in_params, out_params, map_expr, reduce_expr, post_map_expr, identity, name,
                 reduce_type=None, preamble="", **_):
        super().__init__(host, name)
        self.ins, self.outs = _params(in_params), _params(out_params)
        self.map_expr, self.reduce_expr, self.post_map_expr = map_expr, reduce_expr, post_map_expr
        self.identity, self.reduce_type, self.preamble = identity, reduce_type or C_OF[self.outs[0][0]], preamble
        self.n_in = len(self.ins)

    def source(self) -> str:
        ins, outs = self.ins, self.outs
        red = self.reduce_type  # CuPy takes the C type of the accumulator ("float", not "float32")
        assert red in C_OF.values(), f"reduce_type {red!r} is not a C type name"
        k = len(ins) + len(outs)
        lines = [f"namespace {self.symbol}_ns {{", self.preamble,
                 f"#define REDUCE(a, b) ({self.reduce_expr})", f"#define POST_MAP(a) ({self.post_map_expr})",
                 f'extern "C" void {self.symbol}(void* const* gm_args, int gm_nt) {{',
                 f"    const long long n_out = ((const long long*)gm_args[{k}])[0];",
                 f"    const long long n_red = ((const long long*)gm_args[{k}])[1];"]
        lines += _pointers(ins, outs)
        lines += ["    for (long long o = 0; o < n_out; ++o) {", f"        typedef {red} _type_reduce;",
                  f"        _type_reduce _s = _type_reduce({self.identity});",
                  "        for (long long r = 0; r < n_red; ++r) {", "            const long long i = o * n_red + r;"]
        lines += [f"            const {C_OF[t]} {n} = {n}_ptr[i];" for t, n in ins]
        lines += [f"            _type_reduce _a = static_cast<_type_reduce>({self.map_expr});",
                  "            _s = REDUCE(_s, _a);", "        }"]
        lines += [f"        {C_OF[t]} {n};" for t, n in outs] + ["        POST_MAP(_s);"]
        lines += [f"        {n}_ptr[o] = {n};" for t, n in outs]
        lines += ["    }", "}", "#undef REDUCE", "#undef POST_MAP", "}"]
        return "\n".join(lines)

    def __call__(self, *arrays, axis=None, keepdims=False):
        ins = [np.asarray(a) for a in arrays[:len(self.ins)]]
        shape = np.broadcast_shapes(*[a.shape for a in ins])
        rank = len(shape)
        axes = tuple(range(rank)) if axis is None else tuple(a % rank for a in (axis if isinstance(axis, tuple)
                                                                               else (axis,)))
        kept = [a for a in range(rank) if a not in axes]
        order = kept + list(axes)
        n_out = int(np.prod([shape[a] for a in kept], dtype=np.int64))
        n_red = int(np.prod([shape[a] for a in axes], dtype=np.int64))
        buffers = [np.ascontiguousarray(np.transpose(np.broadcast_to(a.astype(_np_type(t), copy=False), shape), order))
                   for a, (t, _) in zip(ins, self.ins)]
        out = np.empty(n_out, _np_type(self.outs[0][0]))
        self._call(buffers + [out, np.array([n_out, n_red], np.int64)])
        result_shape = tuple(1 if a in axes else shape[a] for a in range(rank)) if keepdims else \
            tuple(shape[a] for a in kept)
        return out.reshape(result_shape)


def _np_type(name: str):
    return np.dtype("bool" if name == "bool" else name)


class HostCupy:
    """Stands in for `cupy` in a generated module: kernels on the host, arrays in NumPy."""

    def __init__(self) -> None:
        self.kernels: list = []
        self.pending: list = []
        self.libraries: list = []
        self.sources: list = []

    def __getattr__(self, name):
        return getattr(np, name)

    def ElementwiseKernel(self, *args, **kwargs):  # noqa: N802 - CuPy's name
        return ElementwiseKernel(self, *args, **kwargs)

    def ReductionKernel(self, *args, **kwargs):  # noqa: N802 - CuPy's name
        return ReductionKernel(self, *args, **kwargs)

    @staticmethod
    def asnumpy(a):
        return np.asarray(a)

    def translation_unit(self, kernels: list) -> str:
        tc = native_build.toolchain()
        return "\n".join([c_helpers.host_prelude(tc.vector_math), _HOST_CUDA_SPELLINGS]
                         + [k.source() for k in kernels]) + "\n"

    def compile_pending(self) -> None:
        kernels, self.pending = self.pending, []
        source = self.translation_unit(kernels)
        self.sources.append(source)
        lib = native_build.load_library(source, "gm_cuda_on_host")
        self.libraries.append(lib)
        for k in kernels:
            k.address = lib.address(k.symbol)

    def load(self, module_source: str, name: str = "gm_cupy_on_host") -> dict:
        """Execute a generated CuPy module with this object as its `cp`; its globals."""
        assert "import cupy as cp\n" in module_source
        namespace = {"__name__": name, "cp": self}
        exec(compile(module_source.replace("import cupy as cp\n", ""), f"<{name}>", "exec"), namespace)  # noqa: S102
        return namespace
