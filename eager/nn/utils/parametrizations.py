"""Ready-made parametrizations (torch.nn.utils.parametrizations): weight_norm (original0 =
g, original1 = v), spectral_norm (buffers _u/_v on the parametrization, power iteration in
training mode) and orthogonal (matrix_exp / cayley / householder maps, as PyTorch)."""
from __future__ import annotations

from enum import Enum, auto

from ... import _functional as _F
from ... import linalg as _linalg
from ..._factories import eye, randn, zeros_like
from ..._grad_mode import no_grad
from ..._linalg_more import geqrf, householder_product
from ..._settings import finfo
from ..._tensor import Tensor
from .. import functional as F
from ..module import Module
from . import parametrize
from ._norm_helpers import norm_except_dim, weight_norm_values
from ._spectral_norm import _default_dim

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _is_orthogonal(q: Tensor) -> bool:
    n, k = q.size(-2), q.size(-1)
    ident = eye(k, dtype=q.dtype)
    eps = 10.0 * n * finfo(q.dtype).eps
    return bool(((q.mT @ q - ident).abs() <= eps).all())


def _make_orthogonal(a: Tensor) -> Tensor:
    """The Q of a = QR (a tall) with diag(R) >= 0."""
    q, r = _linalg.qr(a)
    return q * r.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    base: Tensor

    def __init__(self, weight: Tensor, orthogonal_map: _OrthMaps, *, use_trivialization: bool = True) -> None:
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:  # noqa: N803
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT  # noqa: N806
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()  # noqa: N806
            if n != k:
                X = _F.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)  # noqa: N806
            A = X - X.mT  # noqa: N806
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = _linalg.matrix_exp(A)  # noqa: N806
            else:
                ident = eye(n, dtype=A.dtype)
                Q = _linalg.solve(ident - 0.5 * A, ident + 0.5 * A)  # noqa: N806
            if n != k:
                Q = Q[..., :k]  # noqa: N806
        else:
            A = X.tril(diagonal=-1)  # noqa: N806
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = householder_product(A, tau)  # noqa: N806
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)  # noqa: N806
        if "base" in self._buffers:
            Q = self.base @ Q  # noqa: N806
        if transposed:
            Q = Q.mT  # noqa: N806
        return Q

    def right_inverse(self, Q: Tensor) -> Tensor:  # noqa: N803
        with no_grad():
            if Q.shape != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                                 f"Got a tensor of shape {Q.shape}.")
            q_init = Q
            n, k = Q.size(-2), Q.size(-1)
            transpose = n < k
            if transpose:
                Q = Q.mT  # noqa: N806
                n, k = k, n
            if "base" not in self._buffers:
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError("It is not possible to assign to the matrix exponential "
                                              "or the Cayley parametrizations when use_trivialization=False.")
                A, tau = geqrf(Q)  # noqa: N806
                d = A.diagonal(dim1=-2, dim2=-1)
                d.copy_(_F.where(tau == 0.0, -d.sign(), d.sign()))
                return A.mT if transpose else A
            if n == k:
                Q = _make_orthogonal(Q) if not _is_orthogonal(Q) else Q.clone()  # noqa: N806
            else:
                N = randn(*(tuple(Q.size()[:-2]) + (n, n - k)), dtype=Q.dtype)  # noqa: N806
                Q = _make_orthogonal(_F.cat([Q, N], dim=-1))  # noqa: N806
            self.base = Q
            neg_id = zeros_like(q_init)
            neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_id


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Constrain `module.<name>` to (batches of) orthogonal matrices (orthonormal columns or
    rows when not square); the default map: matrix_exp for square weights, householder otherwise."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.size(-2) == weight.size(-1) else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_norm_values(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """`module.<name>` = g * v / ||v|| with g = parametrizations.<name>.original0 and
    v = original1 (the norm over every dim but `dim`; None: the whole tensor)."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but "
                             f"got n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.size()
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        """Update the buffers _u and _v in place (PyTorch's out=): n steps of power iteration."""
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(_F.matmul(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(_F.matmul(weight_mat.mT, self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = _F.dot(u, _F.matmul(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Module:
    """`module.<name>` divided by its spectral norm, estimated by power iteration (the vectors
    are buffers of the parametrization: parametrizations.<name>.0._u / _v)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    dim = _default_dim(module) if dim is None else dim
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


