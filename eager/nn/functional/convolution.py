"""Convolutions of `eager.nn.functional` (1-3 spatial dims, transposed) and unfold/fold."""
from __future__ import annotations

import math as _math

from gmops import conv as _conv

from ... import _functional as _F
from ..._tensor import Tensor
from .. import _fused_conv
from ._utils import _pair


def _conv_padding(name, padding, kernel, dilation, stride, spatial):
    if isinstance(padding, str):
        if padding == "valid":
            return (0,) * (2 * spatial)
        if padding != "same":
            raise ValueError(f"Invalid padding string {padding!r}, should be one of ('valid', 'same')")
        if any(s != 1 for s in stride):
            raise ValueError("padding='same' is not supported for strided convolutions")
        out = []
        for k, dl in zip(kernel, dilation):
            total = dl * (k - 1)
            out += [total // 2, total - total // 2]  # the odd one out goes on the right, as PyTorch
        return tuple(out)
    pads = _pair(padding, spatial)
    return tuple(v for p in pads for v in (p, p))


def _batch_of_images(name: str, input: Tensor, weight: Tensor) -> tuple[Tensor, bool]:
    """A 2-D convolution's (N, C, H, W) input (a (C, H, W) one gains N = 1) and whether it had
    no batch dimension; any other rank, or a weight that is not 4-D, is refused."""
    if input.ndim not in (3, 4) or weight.ndim != 4:
        raise RuntimeError(f"{name}: Expected 3D (unbatched) or 4D (batched) input to {name}, but got input of size: "
                           f"{list(input.shape)} (weight {list(weight.shape)})")
    return (input.unsqueeze(0), True) if input.ndim == 3 else (input, False)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """2-D cross-correlation of (N, C, H, W) (or (C, H, W)) with weight (O, C/groups, kh, kw):
    im2col through a strided view, then one (batched) matmul, channels first."""
    input, unbatched = _batch_of_images("conv2d", input, weight)
    c = input.shape[1]
    o, cg, kh, kw = weight.shape
    if c != cg * groups:
        raise RuntimeError(f"conv2d: Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                           f"{list(input.shape)} to have {cg * groups} channels, but got {c} channels instead")
    if o % groups:
        raise RuntimeError(f"conv2d: out_channels ({o}) must be divisible by groups ({groups})")
    stride, dilation = _pair(stride), _pair(dilation)
    pads = _conv_padding("conv2d", padding, (kh, kw), dilation, stride, 2)
    if _fused_conv.eligible(input, weight, bias, groups):  # one node, columns image by image
        fused = _fused_conv.conv2d(input, weight, bias, stride, pads, dilation)
        if fused is not None:
            return fused.squeeze(0) if unbatched else fused
    out = _conv2d_ops(input, weight, bias, stride, pads, dilation, groups)
    return out.squeeze(0) if unbatched else out


# Columns per image from which conv2d's product runs image by image. Below it (a first
# layer's 9 or 27) the product (O, K) @ (K, N * L) is mostly its output's writes either way,
# and its channel-major gradient lets the compiled batch norm gradient pass compute dW in
# its own pass (W6's compiled step: 10.3 against 11.4 ms with every layer image by image).
_BATCHED_MIN_K = 64


def _conv2d_ops(input: Tensor, weight: Tensor, bias: Tensor | None, stride: tuple, pads: tuple, dilation: tuple,
                groups: int = 1) -> Tensor:
    """conv2d of a batch (N, C, H, W) op by op (pads: top, bottom, left, right): what a trace
    records, and what the fused conv2d's graph-recording backward differentiates."""
    n, c = input.shape[0], input.shape[1]
    o, cg, kh, kw = weight.shape
    geometry = dict(kernel=(kh, kw), stride=stride, padding=pads, dilation=dilation)
    cols = _conv.UNFOLD(input, pad_value=0.0, **geometry)  # (C, kh, kw, N, oh, ow)
    oh, ow = cols.shape[4], cols.shape[5]
    if groups == 1 and n > 1 and c * kh * kw >= _BATCHED_MIN_K:
        # image by image: (O, K) @ (N, K, L) is PyTorch's row-major (N, O, ...) result as it
        # comes (no permute or copy after the product); compiled, the backward's column
        # gradient (N, K, L) is folded where it lies and dW = sum_n G[n] cols[n]^T runs as one
        # product (codegen/native_gen/conv.py)
        k = c * kh * kw
        out = _F.matmul(weight.reshape(o, k), cols.reshape(k, n, oh * ow).permute(1, 0, 2)).reshape(n, o, oh, ow)
    else:
        if groups == 1:  # one (O, K) @ (K, N*L) product
            out = _F.matmul(weight.reshape(o, c * kh * kw), cols.reshape(c * kh * kw, n * oh * ow))
        else:
            g_cols = cols.reshape(groups, cg * kh * kw, n * oh * ow)
            out = _F.matmul(weight.reshape(groups, o // groups, cg * kh * kw), g_cols)
        # the product is channel-major (O, N, ...); PyTorch's result is row-major (N, O, ...), and
        # scripts rely on it (conv(x).view(N, -1)), so batches of more than one image are copied
        out = out.reshape(o, n, oh, ow).permute(1, 0, 2, 3)
        if n > 1:
            out = out.contiguous()
    if bias is not None:
        out = out + bias.reshape(1, o, 1, 1)
    return _F._renamed(out, "ConvolutionBackward0")


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """The transpose (input-gradient) of conv2d: weight (C_in, C_out/groups, kh, kw); each
    input pixel scatters weight * value into the output, which is one matmul onto columns
    and a fold (col2im) of them, channels first."""
    input, unbatched = _batch_of_images("conv_transpose2d", input, weight)
    n, c, h, w = input.shape
    cin, og, kh, kw = weight.shape
    if c != cin:
        raise RuntimeError(f"conv_transpose2d: Given transposed=1, weight of size {list(weight.shape)}, expected input"
                           f"{list(input.shape)} to have {cin} channels, but got {c} channels instead")
    if cin % groups:
        raise RuntimeError(f"conv_transpose2d: in_channels ({cin}) must be divisible by groups ({groups})")
    (sh, sw), (ph, pw), (oph, opw), (dh, dw) = _pair(stride), _pair(padding), _pair(output_padding), _pair(dilation)
    if oph >= max(sh, dh) or opw >= max(sw, dw):
        raise RuntimeError("conv_transpose2d: output padding must be smaller than either stride or dilation, but got "
                           f"output_padding={(oph, opw)}, stride={(sh, sw)}, dilation={(dh, dw)}")
    out_h = (h - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1
    out_w = (w - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1
    x = input.permute(1, 0, 2, 3).reshape(groups, cin // groups, n * h * w)
    wt = weight.reshape(groups, cin // groups, og * kh * kw).transpose(1, 2)  # (G, C_out/G * K, C_in/G)
    cols = _F.matmul(wt, x).reshape(groups * og, kh, kw, n, h, w)
    # output_padding needs no padding of its own: the fold's buffer of out + 2 * padding rows
    # already holds the extra rows, which no column reaches (they stay zero, as in PyTorch)
    out = _conv.FOLD(cols, size=(out_h, out_w), kernel=(kh, kw), stride=(sh, sw), padding=(ph, ph, pw, pw),
                     dilation=(dh, dw))
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1)
    _F._renamed(out, "ConvolutionBackward0")
    return out.squeeze(0) if unbatched else out


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """The 1-d transposed convolution (the gradient of conv1d) of a (N, C_in, L) input.

    Mirrors torch.nn.functional.conv_transpose1d."""
    out = conv_transpose2d(input.unsqueeze(-2), weight.unsqueeze(-2), bias, (1, _pair(stride, 1)[0]),
                           (0, _pair(padding, 1)[0]), (0, _pair(output_padding, 1)[0]), groups,
                           (1, _pair(dilation, 1)[0]))
    return out.squeeze(-2)


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """1-D cross-correlation of (N, C, L): conv2d over a height of 1."""
    if input.ndim not in (2, 3) or weight.ndim != 3:
        raise RuntimeError(f"conv1d: Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: "
                           f"{list(input.shape)} (weight {list(weight.shape)})")
    pad = padding if isinstance(padding, str) else (0, _pair(padding, 1)[0])
    out = conv2d(input.unsqueeze(-2), weight.unsqueeze(-2), bias, (1, _pair(stride, 1)[0]), pad,
                 (1, _pair(dilation, 1)[0]), groups)
    return _F._renamed(out.squeeze(-2), "ConvolutionBackward0")


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """im2col as PyTorch's F.unfold: (N, C*kh*kw, L)."""
    kh, kw = _pair(kernel_size)
    ph, pw = _pair(padding)
    cols = _conv.UNFOLD(input, kernel=(kh, kw), stride=_pair(stride), padding=(ph, ph, pw, pw),
                        dilation=_pair(dilation), pad_value=0.0)  # (C, kh, kw, N, oh, ow)
    n, c = input.shape[0], input.shape[1]
    return cols.reshape(c * kh * kw, n, -1).permute(1, 0, 2).contiguous()  # row-major, as PyTorch's


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """col2im as PyTorch's F.fold: (N, C*kh*kw, L) blocks summed back into (N, C, H, W), the
    inverse arrangement of unfold (overlaps add up)."""
    kh, kw = _pair(kernel_size)
    (ph, pw), (sh, sw), (dh, dw) = _pair(padding), _pair(stride), _pair(dilation)
    height, width = _pair(output_size)
    batched = input.ndim == 3
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported (got "
                           f"{input.ndim}D)")
    x = input if batched else input.unsqueeze(0)
    oh = (height + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (width + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    n, ckk, blocks = x.shape
    if ckk % (kh * kw) != 0:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, "
                           f"but got input.size(1)={ckk} and kernel_size={(kh, kw)}")
    if blocks != oh * ow:
        raise RuntimeError(f"Given output_size={(height, width)}, kernel_size={(kh, kw)}, dilation={(dh, dw)}, "
                           f"padding={(ph, pw)}, stride={(sh, sw)}, expected size of input's dimension 2 to match "
                           f"the calculated number of sliding blocks {oh} * {ow} = {oh * ow}, but got "
                           f"input.size(2)={blocks}.")
    c = ckk // (kh * kw)
    cols = x.reshape(n, c, kh, kw, oh, ow).permute(1, 2, 3, 0, 4, 5)  # unfold's layout: (C, kh, kw, N, oh, ow)
    out = _conv.FOLD(cols, size=(height, width), kernel=(kh, kw), stride=(sh, sw), padding=(ph, ph, pw, pw),
                     dilation=(dh, dw))
    return out if batched else out.squeeze(0)


def _convnd(name: str, input: Tensor, weight: Tensor, bias: Tensor | None, stride, padding, dilation, groups: int,
            spatial: int) -> Tensor:
    """Cross-correlation over `spatial` trailing dims: one unfold (im2col, channels first) and
    one (batched) matmul, as conv2d."""
    if input.ndim not in (spatial + 1, spatial + 2) or weight.ndim != spatial + 2:
        raise RuntimeError(f"{name}: Expected {spatial + 1}D (unbatched) or {spatial + 2}D (batched) input to {name}, "
                           f"but got input of size: {list(input.shape)} (weight {list(weight.shape)}, which must "
                           f"be {spatial + 2}-D: (out_channels, in_channels/groups, *kernel))")
    unbatched = input.ndim == spatial + 1
    if unbatched:
        input = input.unsqueeze(0)
    n, c = input.shape[0], input.shape[1]
    o, cg = weight.shape[0], weight.shape[1]
    kernel = tuple(weight.shape[2:])
    if c != cg * groups:
        raise RuntimeError(f"{name}: Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                           f"{list(input.shape)} to have {cg * groups} channels, but got {c} channels instead")
    if o % groups:
        raise RuntimeError(f"{name}: out_channels ({o}) must be divisible by groups ({groups})")
    stride, dilation = _pair(stride, spatial), _pair(dilation, spatial)
    pads = _conv_padding(name, padding, kernel, dilation, stride, spatial)
    cols = _conv.UNFOLD(input, kernel=kernel, stride=stride, padding=pads, dilation=dilation, pad_value=0.0)
    out_sizes = tuple(cols.shape[spatial + 2:])
    k = cg * _math.prod(kernel)
    length = n * _math.prod(out_sizes)
    if groups == 1:
        out = _F.matmul(weight.reshape(o, k), cols.reshape(k, length))
    else:
        out = _F.matmul(weight.reshape(groups, o // groups, k), cols.reshape(groups, k, length))
    out = out.reshape(o, n, *out_sizes).permute(1, 0, *range(2, spatial + 2))
    if n > 1:  # row-major (N, O, ...), as PyTorch's (see conv2d)
        out = out.contiguous()
    if bias is not None:
        out = out + bias.reshape(1, o, *(1,) * spatial)
    _F._renamed(out, "ConvolutionBackward0")
    return out.squeeze(0) if unbatched else out


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """3-D cross-correlation of (N, C, D, H, W) (or (C, D, H, W)) with weight
    (O, C/groups, kd, kh, kw); padding may be "same" or "valid".

    Mirrors torch.nn.functional.conv3d."""
    return _convnd("conv3d", input, weight, bias, stride, padding, dilation, groups, 3)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """The transpose (input-gradient) of conv3d: weight (C_in, C_out/groups, kd, kh, kw); one
    matmul onto columns and a fold (col2im) of them, as conv_transpose2d.
    Mirrors torch.nn.functional.conv_transpose3d."""
    if input.ndim not in (4, 5):
        raise RuntimeError(f"conv_transpose3d: Expected 4D (unbatched) or 5D (batched) input, but got input of size "
                           f"{list(input.shape)}")
    unbatched = input.ndim == 4
    if unbatched:
        input = input.unsqueeze(0)
    n, c = input.shape[0], input.shape[1]
    sizes = tuple(input.shape[2:])
    cin, og = weight.shape[0], weight.shape[1]
    kernel = tuple(weight.shape[2:])
    if c != cin:
        raise RuntimeError(f"conv_transpose3d: Given transposed=1, weight of size {list(weight.shape)}, expected "
                           f"input{list(input.shape)} to have {cin} channels, but got {c} channels instead")
    if cin % groups:
        raise RuntimeError(f"conv_transpose3d: in_channels ({cin}) must be divisible by groups ({groups})")
    st, pd, op, dl = _pair(stride, 3), _pair(padding, 3), _pair(output_padding, 3), _pair(dilation, 3)
    if any(o >= max(s_, d_) for o, s_, d_ in zip(op, st, dl)):
        raise RuntimeError("conv_transpose3d: output padding must be smaller than either stride or dilation, but got "
                           f"output_padding={op}, stride={st}, dilation={dl}")
    out = tuple((i - 1) * s_ - 2 * p_ + d_ * (k - 1) + o + 1 for i, s_, p_, d_, k, o in zip(sizes, st, pd, dl, kernel, op))
    x = input.permute(1, 0, 2, 3, 4).reshape(groups, cin // groups, n * _math.prod(sizes))
    wt = weight.reshape(groups, cin // groups, og * _math.prod(kernel)).transpose(1, 2)
    cols = _F.matmul(wt, x).reshape(groups * og, *kernel, n, *sizes)
    y = _conv.FOLD(cols, size=out, kernel=kernel, stride=st, padding=(pd[0], pd[0], pd[1], pd[1], pd[2], pd[2]),
                   dilation=dl)
    if bias is not None:
        y = y + bias.reshape(1, -1, 1, 1, 1)
    _F._renamed(y, "ConvolutionBackward0")
    return y.squeeze(0) if unbatched else y
