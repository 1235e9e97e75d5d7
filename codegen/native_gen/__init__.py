"""Generate the native CPU backend's code for a graph: one C++ translation unit (every fused
region one C function) and the Python driver module that calls them.

The C expressions of the ops are the CuPy backend's (`CupyLowering.expr`, emitted by the
same `c_kernel.KernelBody`), over the target-neutral helpers of c_helpers.py: one lowering
for both targets; the driver's library calls and op-by-op regions are `c_kernel.Driver`'s.
A fused region that `regions.analyze` splits into phases becomes:
- one OpenMP loop per shape of the prologue values it yields, over that shape; the loop over
  the whole iteration space also accumulates every full reduction, per thread in double,
  the per-thread partials then added in thread order (the same result for the same thread
  count);
- for each reduction over some axes: a loop over its outputs (in parallel), each summing
  its reduced elements in double, recomputing the prologue values it needs; over leading
  axes (column sums) the outputs go in blocks of 64, a contiguous SIMD loop per row;
- one loop per shape of the epilogue values it yields, reading the reduced values.
A row region (`regions.analyze_rows`: reductions along the last axis whose results are read
back over the whole space, as in a softmax) becomes one loop over the rows, each row walked
in passes (_row_passes): the reductions' results stay in registers and the row's values in
the L1 cache, where the blocked kinds would take a function call and a pass over memory per
reduction.
Operands of other shapes (broadcasts) are read by index arithmetic on the flat index, with
the static shapes folded into constants. Loops of at least GM_PARALLEL_MIN elements get
`#pragma omp parallel for simd`, smaller ones `#pragma omp simd` alone (decided here, from
the static shapes: no parallel region to outline, so a graph of small loops compiles twice
as fast and without libgomp). Consecutive parallel loops of one function share one team
(one_team): an outlined region was the largest part of gcc's time on a kernel. A region
whose C code is that of an earlier one (a model's next layer) calls the earlier function
(same_code): W5's training step compiles 35 functions for its 82 regions. A 0-d region is
straight-line code.

Everything else (matmul, shape ops, regions that do not fit) runs as the NumPy backend's
library calls in the driver, so the module runs every graph.

The package, by concern: `indexing` (flat and strided index arithmetic, views read in
place, C storage and index types), `function` (a C function, its parallel and SIMD loops,
shared OpenMP teams, reduction accumulators), `region` (a fused region as a C function),
`matmul` (batches of small products as one loop nest), `driver` (the Python driver module
and the entry points).
"""
from .driver import EAGER_KERNEL_OPS, NativeModule, eager_kernel_call, generate, generate_c
from .function import one_team, same_code, supported
from .indexing import INT_INDEX_MAX, ROW_MIN, compose_index, index_expr, index_type
from .matmul import small_batched_matmul

__all__ = ["generate", "generate_c", "index_expr", "compose_index", "supported", "NativeModule", "one_team",
           "same_code", "EAGER_KERNEL_OPS", "eager_kernel_call", "INT_INDEX_MAX", "ROW_MIN", "index_type",
           "small_batched_matmul"]
