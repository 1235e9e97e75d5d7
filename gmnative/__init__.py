"""graphmode's native layer: the C++ toolchain, the shared-object cache, the call path from
Python into a kernel, and eager's native kernels.

It sits below the op records and eager, which call its kernels (gmops._native), and
below codegen, whose native backend compiles generated C++ with the same toolchain and cache
(codegen.native_gen). It imports only the base layer (gmbase: threads, the disk cache), as
tests/test_import_contracts.py checks, and nothing at all until asked: importing this package
loads no module.

- build: the compiler probe, compile flags, the cache of shared objects;
- caller: the C caller (a CPython extension, else ctypes) through which kernels are called;
- kernels: eager's kernels (layer_norm, batch norm, GELU, large tanh/exp, arg-reductions,
  col2im, embedding's gradient, matmul's row blocks, PCG64 draws);
- c_helpers: the `gm_` helper functions every C expression may call (host and CUDA);
- csrc/: the C++ of all three, as real source files (package data).
"""
