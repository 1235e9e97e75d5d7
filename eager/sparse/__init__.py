"""`eager.sparse`: sparse COO tensors (`torch.sparse_coo`), compact and honest.

A `SparseTensor` holds `indices` (int64, (sparse_dim, nnz)) and `values` (a dense tensor of
shape (nnz, *dense_shape)) for a tensor of `size`. Every op it supports is written with
dense ops on `values` (index_add, index_select, multiplication), so autograd needs nothing
of its own: gradients reach the values (and through them whatever made them) and the
dense operand of a product, and a sparse leaf's `.grad` is the sparse tensor of its
values' gradient on its own pattern, as PyTorch's.

Supported: `eager.sparse_coo_tensor`, `Tensor.to_sparse()`, `to_dense()`, `coalesce()`,
`is_coalesced()`, `indices()`/`values()` (coalesced only, as PyTorch) and
`_indices()`/`_values()`, `_nnz()`, `sparse_dim()`/`dense_dim()`, `t()`/`transpose()` of
sparse dims, `eager.sparse.mm`/`spmm`/`addmm`/`sum`, `eager.mm`/`matmul`/`@` of a sparse
matrix and a dense one (either side), sparse + dense (dense), sparse + sparse, sparse *
scalar or dense (sparse), negation, the zero-preserving unary ops (abs, sqrt, sin, tanh,
...), dtype casts and clone. Any other op on a sparse tensor raises a RuntimeError naming
the op and saying to call `.to_dense()` first.

Modules: `tensor` (SparseTensor, layouts), `construction`, `products` and `dispatch` (ops on
sparse operands)."""
from . import tensor  # noqa: F401  (first: the other modules are written over SparseTensor)
from .construction import DoubleTensor, FloatTensor, LongTensor, sparse_coo_tensor, to_sparse  # noqa: F401
from .products import addmm, mm, spmm, sum  # noqa: F401
from .tensor import SparseTensor, _rebuild_sparse, layout, sparse_coo, strided  # noqa: F401  (_rebuild_sparse: old pickles)

__all__ = ["DoubleTensor", "FloatTensor", "LongTensor", "SparseTensor", "addmm", "layout", "mm", "sparse_coo",
           "sparse_coo_tensor", "spmm", "strided", "sum", "to_sparse"]
