"""graphmode's base layer: what every other layer reads and which itself imports nothing of
graphmode (tests/test_import_contracts.py checks both, in a fresh interpreter too).

- dtypes: the dtype objects, their NumPy/CuPy counterparts and type promotion (with the
  half-in-float32 table);
- fpstate: NumPy's floating-point error state, read and set cheaply per op;
- threads: thread counts, the cores this process may use, BLAS threads;
- cache: the on-disk cache of generated modules and its source fingerprint;
- settings: the generator knobs that change generated source (part of the cache key);
- errors: the `torch._dynamo.exc` exception types (static's TraceError derives from one);
- version: the package version the cache stamps its files with;
- signatures: wrappers generated with the wrapped function's own parameters (no `*args,
  **kwargs` packing on a hot path);
- allocator: glibc's allocator set to keep large freed blocks for reuse (once, when eager
  loads).

Importing this package loads none of them; each is imported by its own name. The old homes
(eager._dtypes, eager._fpstate, eager._threads, codegen.cache, codegen.settings) are the
same module objects, for scripts, pickles and tests that name them.
"""
