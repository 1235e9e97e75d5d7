"""The `eager.*` functions and the Tensor methods that share them: argument handling as
PyTorch spells it (dim/keepdim, *sizes, negative axes), then one op call. The math lives
in eager.ops; nothing here computes on arrays.

One module per job, mirroring `eager/ops/`: elementwise, comparison, reductions, linalg,
shape_ops, indexing and sorting; `_common` holds what they share. The simple pointwise
functions (sin, mul, eq, isnan, ...) are generated from their records' `surface`
(`eager._surface`) and bound here too, so `F.sin` is `eager.sin`."""

from .._surface import functions as _generated  # noqa: E402
from ._common import _host, _renamed, _row_major, _sizes  # noqa: F401
from .calculus import gradient  # noqa: F401
from .comparison import isclose  # noqa: F401
from .elementwise import addcdiv, addcmul, check_sub, clone, lerp, to_dtype  # noqa: F401
from .indexing import (  # noqa: F401
    IndexEntry,
    argwhere,
    combinations,
    diagonal_mask,
    gather,
    getitem,
    index_add,
    index_fill,
    index_key,
    index_put,
    index_select,
    masked_fill,
    masked_select,
    nonzero,
    put_at_index,
    repeat_interleave,
    scatter,
    scatter_add,
    scatter_reduce,
    unique,
)
from .linalg import (  # noqa: F401
    CDIST_MODES,
    addmm,
    addmv,
    baddbmm,
    bmm,
    cdist,
    diag,
    diag_embed,
    diagonal,
    dot,
    einsum,
    ger,
    matmul,
    mm,
    outer,
    trace,
    tril,
    triu,
)
from .reductions import (  # noqa: F401
    all,
    amax,
    amin,
    any,
    argmax,
    argmin,
    count_nonzero,
    cumprod,
    cumsum,
    histc,
    log_softmax,
    logsumexp,
    max,
    mean,
    min,
    norm,
    prod,
    return_types_max,
    return_types_min,
    softmax,
    std,
    std_mean,
    sum,
    var,
    var_mean,
)
from .scatters import diagonal_scatter, index_copy, index_reduce, masked_scatter, put, select_scatter, slice_scatter  # noqa: F401
from .shape_ops import (  # noqa: F401
    atleast_1d,
    atleast_2d,
    atleast_3d,
    broadcast_shape,
    broadcast_to,
    cartesian_prod,
    cat,
    chunk,
    column_stack,
    concat,
    concatenate,
    diff,
    dstack,
    expand,
    flatten,
    flip,
    fliplr,
    flipud,
    hstack,
    meshgrid,
    moveaxis,
    movedim,
    narrow,
    permute,
    repeat,
    reshape,
    roll,
    row_stack,
    select,
    split,
    squeeze,
    stack,
    swapaxes,
    t,
    tile,
    transpose,
    unbind,
    unfold_windows,
    unsqueeze,
    vstack,
)
from .sorting import (  # noqa: F401
    argsort,
    bucketize,
    kthvalue,
    median,
    return_types_kthvalue,
    return_types_median,
    return_types_sort,
    return_types_topk,
    searchsorted,
    sort,
    topk,
)
from .statistics import (  # noqa: F401
    corrcoef,
    cov,
    histogram,
    mode,
    nanmedian,
    nanquantile,
    quantile,
    return_types_histogram,
    return_types_mode,
    return_types_nanmedian,
)
from .strided import as_strided  # noqa: F401

globals().update({name: fn for name, fn in _generated().items() if name not in globals()})  # written here wins


def __getattr__(name: str):  # noqa: ANN202  (unannotated: an annotation here is resolved after its importers in mypy's cycle)
    """Only reached for a name that is neither written here nor generated (the generated ones
    are bound above); declared so that type checkers know this package also holds the
    generated functions (`F.sin`)."""
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
