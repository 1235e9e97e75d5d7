"""The methods of the Tensor API written by hand: those that are an `eager.<name>` function
(bound as a method, `x.sum(1)` is `eager.sum(x, 1)`) and those whose arguments differ from the
function's (`x.where(cond, y)`, `x.T`, `x.var_mean(...)`).

Why by hand: these functions take argument handling of their own (dims, sizes, keywords); the
methods of simple pointwise ops are generated from their records instead (`eager._surface`),
and a test keeps a name from being in both places.
"""
from __future__ import annotations

import builtins
from typing import Any

from .. import _functional as F
from .hooks import TensorHooks


class TensorMethods(TensorHooks):
    """The named methods of a tensor that are not pointwise records' generated ones."""

    __slots__ = ()

    clone = F.clone
    sum = F.sum
    mean = F.mean
    prod = F.prod
    var = F.var
    std = F.std
    logsumexp = F.logsumexp
    amax = F.amax
    amin = F.amin
    scatter_reduce = F.scatter_reduce
    max = F.max
    min = F.min
    argmax = F.argmax
    argmin = F.argmin
    all = F.all
    any = F.any
    norm = F.norm
    softmax = F.softmax
    log_softmax = F.log_softmax
    matmul = F.matmul
    mm = F.mm
    dot = F.dot
    flatten = F.flatten
    transpose = F.transpose
    swapaxes = F.transpose
    t = F.t
    permute = F.permute
    expand = F.expand
    broadcast_to = F.broadcast_to
    squeeze = F.squeeze
    unsqueeze = F.unsqueeze
    split = F.split
    chunk = F.chunk
    unbind = F.unbind
    select = F.select
    narrow = F.narrow
    lerp = F.lerp
    outer = F.outer
    ger = F.outer
    bmm = F.bmm
    addmm = F.addmm
    baddbmm = F.baddbmm
    addmv = F.addmv
    cumsum = F.cumsum
    cumprod = F.cumprod
    argsort = F.argsort
    sort = F.sort
    topk = F.topk
    kthvalue = F.kthvalue
    median = F.median
    gather = F.gather
    scatter = F.scatter
    scatter_add = F.scatter_add
    index_select = F.index_select
    index_add = F.index_add
    index_fill = F.index_fill
    nonzero = F.nonzero
    argwhere = F.nonzero
    masked_select = F.masked_select
    masked_fill = F.masked_fill
    unique = F.unique
    flip = F.flip
    fliplr = F.fliplr
    flipud = F.flipud
    roll = F.roll
    repeat = F.repeat
    repeat_interleave = F.repeat_interleave
    tril = F.tril
    triu = F.triu
    diagonal = F.diagonal
    diag = F.diag
    diag_embed = F.diag_embed
    trace = F.trace
    isclose = F.isclose
    movedim = F.movedim
    moveaxis = F.movedim
    tile = F.tile
    diff = F.diff
    count_nonzero = F.count_nonzero
    addcmul = F.addcmul
    addcdiv = F.addcdiv
    index_copy = F.index_copy
    index_reduce = F.index_reduce
    masked_scatter = F.masked_scatter
    put = F.put
    select_scatter = F.select_scatter
    slice_scatter = F.slice_scatter
    diagonal_scatter = F.diagonal_scatter
    as_strided = F.as_strided
    quantile = F.quantile
    nanquantile = F.nanquantile
    nanmedian = F.nanmedian
    mode = F.mode
    cov = F.cov
    corrcoef = F.corrcoef
    histogram = F.histogram

    def polygamma(self, n: builtins.int) -> Any:
        """The n-th derivative of digamma at each element. Mirrors torch.Tensor.polygamma."""
        from .._functional.gamma_family import polygamma  # noqa: PLC0415

        return polygamma(n, self)

    def mvlgamma(self, p: builtins.int) -> Any:
        """The multivariate log-gamma of dimension p. Mirrors torch.Tensor.mvlgamma."""
        from .._functional.gamma_family import mvlgamma  # noqa: PLC0415

        return mvlgamma(self, p)

    def igamma(self, other: Any) -> Any:
        """The regularized lower incomplete gamma P(self, other). Mirrors torch.Tensor.igamma."""
        from .._functional.gamma_family import igamma  # noqa: PLC0415

        return igamma(self, other)

    def igammac(self, other: Any) -> Any:
        """The regularized upper incomplete gamma Q(self, other). Mirrors torch.Tensor.igammac."""
        from .._functional.gamma_family import igammac  # noqa: PLC0415

        return igammac(self, other)

    def matrix_exp(self) -> Any:
        """The matrix exponential of the last two dims. Mirrors torch.Tensor.matrix_exp."""
        from .._linalg_decompositions import matrix_exp  # noqa: PLC0415

        return matrix_exp(self)

    # -- methods whose argument order differs from the function's ----------------------------------
    @property
    def T(self) -> Any:
        """The dimensions in reverse order (the transpose of a matrix). Mirrors torch.Tensor.T."""
        return F.permute(self, tuple(range(self.ndim - 1, -1, -1)))

    @property
    def mT(self) -> Any:
        """The last two dimensions swapped (a batch of matrices transposed); needs at least 2 dimensions.

        Mirrors torch.Tensor.mT."""
        if self.ndim < 2:
            raise RuntimeError(
                f"tensor.mT is only supported on matrices or batches of matrices. Got {self.ndim}-D tensor.")
        return F.transpose(self, -2, -1)

    def allclose(self, other: Any, rtol: builtins.float = 1e-05, atol: builtins.float = 1e-08,
                 equal_nan: builtins.bool = False) -> builtins.bool:
        """Whether every element is close to `other` (see isclose). Mirrors torch.Tensor.allclose."""
        return builtins.bool(F.all(F.isclose(self, other, rtol, atol, equal_nan)))

    def reshape(self, *shape: Any) -> Any:
        """The same elements in the given shape (a view when possible, else a copy). Mirrors torch.Tensor.reshape."""
        return F.reshape(self, *shape)

    def view_as(self, other: Any) -> Any:
        """`self.view(*other.shape)`. Mirrors torch.Tensor.view_as."""
        return self.view(*other.shape)

    def reshape_as(self, other: Any) -> Any:
        """`self.reshape(*other.shape)`. Mirrors torch.Tensor.reshape_as."""
        return F.reshape(self, *other.shape)

    def expand_as(self, other: Any) -> Any:
        """`self.expand(*other.shape)`. Mirrors torch.Tensor.expand_as."""
        return F.expand(self, *other.shape)

    def inverse(self) -> Any:
        """The matrix inverse of the last two dims. Mirrors torch.Tensor.inverse."""
        from gmops.linalg import INV  # noqa: PLC0415

        return INV(self)

    def det(self) -> Any:
        """The determinant of the last two dims. Mirrors torch.Tensor.det."""
        from gmops.linalg import DET  # noqa: PLC0415

        return DET(self)

    def unfold(self, dimension: builtins.int, size: builtins.int, step: builtins.int) -> Any:
        """Every window of `size` elements `step` apart along dimension, as a new last dimension.
        Mirrors torch.Tensor.unfold (a copy here, not a view)."""
        return F.unfold_windows(self, dimension, size, step)


    def logit(self, eps: builtins.float | None = None) -> Any:
        """log(p / (1 - p)), p clamped to [eps, 1 - eps] when eps is given. Mirrors torch.Tensor.logit."""
        from ..special import logit  # noqa: PLC0415  (composed of ops: eager and traced values alike)

        return logit(self, eps)

    def var_mean(self, dim: Any = None, unbiased: builtins.bool | None = None, keepdim: builtins.bool = False, *,
                 correction: builtins.float | None = None) -> Any:
        """The variance and the mean over `dim`, as a tuple. Mirrors torch.var_mean."""
        return F.var_mean(self, dim, unbiased, keepdim, correction=correction)

    def std_mean(self, dim: Any = None, unbiased: builtins.bool | None = None, keepdim: builtins.bool = False, *,
                 correction: builtins.float | None = None) -> Any:
        """The standard deviation and the mean over `dim`, as a tuple. Mirrors torch.std_mean."""
        return F.std_mean(self, dim, unbiased, keepdim, correction=correction)
