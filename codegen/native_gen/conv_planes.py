"""The window functions' loops through a padded plane on the stack, and max-pooling's
gradient as a scatter when no two windows share a cell (conv.py's CWindow inherits these).

Why a padded plane: a window row's columns inside the image depend on the kernel offset,
so the direct loops have bounds per row that the compiler cannot vectorize well; on W6's
14-wide rows they ran mostly scalar (fold 0.71 ms, unfold 0.54 ms of a 10 ms step on one
thread). With every window inside a plane of (oh-1)*sh+(kh-1)*dh+1 rows by
(ow-1)*sw+(kw-1)*dw+1 columns, the loops have constant trip counts. Planes larger than
PLANE_BYTES keep the bounded loops.
"""
from __future__ import annotations

from static.ir import Node

from .function import CFunction, _parallel


def _disjoint(geometry: tuple) -> bool:
    """Whether no two windows of a 2-d geometry share a cell (each stride at least the
    window's extent along it)."""
    kh, kw, sh, sw, _, _, dh, dw = geometry
    return sh >= (kh - 1) * dh + 1 and sw >= (kw - 1) * dw + 1


# the most bytes of a padded plane kept on a thread's stack (unfold and fold through one)
PLANE_BYTES = 64 * 1024


def _padded_extent(geometry: tuple, oh: int, ow: int, T: str) -> tuple[int, int] | None:
    """(rows, columns) of the padded plane every window of a 2-d geometry lies in, when it
    fits in PLANE_BYTES on the stack; None otherwise (the bounded loops run instead)."""
    kh, kw, sh, sw, _, _, dh, dw = geometry
    ph, pw = (oh - 1) * sh + (kh - 1) * dh + 1, (ow - 1) * sw + (kw - 1) * dw + 1
    size = 4 if T == "float" else 8
    return (ph, pw) if ph * pw * size <= PLANE_BYTES else None


class PlaneLoops(CFunction):
    """The padded-plane unfold and fold and the disjoint pooling gradient's scatter, for
    CWindow (conv.py): each appends its loop nest to self.lines."""

    anchor: Node  # the window node whose geometry the loops follow (CWindow sets it)

    @staticmethod
    def _par(work: int) -> str:
        return ("#pragma omp parallel for num_threads(gm_nt) schedule(static)" if _parallel(work)
                else "// little work: the calling thread")

    def _unfold_padded(self, T: str, geometry: tuple, n: int, c: int, h: int, w: int, oh: int, ow: int, cx: str,
                       strides: tuple, at: str, out: str, pad: str, name: str) -> None:
        """unfold through a padded plane on the stack, one per image plane: the plane is
        filled once (padding, then the image's cells), and each offset's window rows are
        read from it with constant trip counts. The bounded loops of the direct form ran
        mostly scalar on W6's 14-wide rows (0.54 ms for the second convolution's columns)."""
        kh, kw, sh, sw, pt, pl, dh, dw = geometry
        sy, sx = strides
        if sh == 1 and sw == 1 and dw == 1 and ow == w and sx == 1 and sy == w:
            self._unfold_shifted(T, geometry, n, c, h, w, oh, cx, at, out, pad, name)
            return
        ph, pw = _padded_extent(geometry, oh, ow, T)  # type: ignore[misc]
        rows = c * kh * kw * n
        r0, r1, c0, c1 = min(pt, ph), min(ph, h + pt), min(pl, pw), min(pw, w + pl)
        self.lines += [
            f"{{  // %{name} = unfold: {rows} window rows of {oh}x{ow} from ({n}, {c}, {h}, {w}), "
            f"through a {ph}x{pw} padded plane",
            f"    {self._par(rows * oh * ow)}",
            # each image plane copied once into a padded plane on the stack, then each
            # offset's window row read from it with constant trip counts (the bounded
            # loops of the direct form ran mostly scalar on 14-wide rows)
            f"    for (long long p = 0; p < {n * c}LL; ++p) {{",
            f"        const long long nn = p / {c}, cc = p % {c};",
            f"        const {T}* src = {cx} + {at};",
            f"        {T} plane[{ph * pw}];",
            # the padding, then the image's rows and columns that lie in the plane (bounds
            # known here: a fill with a bounds test per cell was miscompiled by gcc 12's
            # AVX-512 vectorizer, cells of the image read as padding)
            f"        for (long long e = 0; e < {ph * pw}; ++e) plane[e] = {pad};",
            f"        for (long long py = {r0}; py < {r1}; ++py) {{",
            f"            for (long long px = {c0}; px < {c1}; ++px) "
            f"plane[py * {pw} + px] = src[(py - {pt}) * {sy}LL + (px - {pl}) * {sx}LL];",
            "        }",
            f"        for (long long i = 0; i < {kh}; ++i) {{",
            f"        for (long long j = 0; j < {kw}; ++j) {{",
            f"            {T}* dst = {out} + ((cc * {kh * kw} + i * {kw} + j) * {n} + nn) * {oh * ow}LL;",
            f"            const {T}* s = plane + i * {dh * pw} + j * {dw};",
            f"            for (long long oy = 0; oy < {oh}; ++oy) {{",
            "                #pragma omp simd",
            f"                for (long long ox = 0; ox < {ow}; ++ox) dst[oy * {ow} + ox] = s[oy * {sh * pw} + ox * {sw}];",
            "            }",
            "        }",
            "        }",
            "    }",
            "}",
        ]

    def _unfold_shifted(self, T: str, geometry: tuple, n: int, c: int, h: int, w: int, oh: int, cx: str, at: str,
                        out: str, pad: str, name: str) -> None:
        """unfold of a stride-1 layer whose window rows are as long as the image's rows (the
        usual "same" 3x3 convolution) from a C-contiguous image plane: each kernel offset's
        window row is the plane shifted by dy rows and dx columns, one long copy (bounds
        known here, per offset), then the cells whose column falls off the image (the copy
        wrapped them to a neighbour row) set to the padding, as eager's im2col does
        (gmnative/csrc/eager_conv.cpp). The padded plane's copy and its 28-wide rows cost
        W6's first layer 0.13 ms of a 2.9 ms step (two threads). Copies only: the same bits."""
        kh, kw, _, _, pt, pl, dh, _ = geometry
        size = oh * w
        body = []
        for i in range(kh):
            for j in range(kw):
                dy, dx = i * dh - pt, j - pl
                oh_lo = min(max(-dy, 0), oh)
                oh_hi = max(min(h - dy, oh), oh_lo)
                shift = dy * w + dx
                j0, j1 = oh_lo * w, oh_hi * w
                js = min(max(j0, -shift), j1)
                je = max(min(j1, h * w - shift), js)
                lo, hi = min(max(-dx, 0), w), max(min(w - dx, w), 0)  # the columns inside the image
                body += [
                    f"        {{  // offset ({i}, {j}): shifted by {dy} rows, {dx} columns",
                    f"            {T}* d = {out} + ((cc * {kh * kw} + {i * kw + j}) * {n} + nn) * {size}LL;",
                    f"            for (long long q = 0; q < {js}; ++q) d[q] = {pad};",
                    "            #pragma omp simd",
                    f"            for (long long q = {js}; q < {je}; ++q) d[q] = src[q + ({shift})];",
                    f"            for (long long q = {je}; q < {size}; ++q) d[q] = {pad};"]
                if lo > 0 or hi < w:
                    body += [f"            for (long long oy = {oh_lo}; oy < {oh_hi}; ++oy) {{",
                             f"                for (long long ox = 0; ox < {lo}; ++ox) d[oy * {w} + ox] = {pad};",
                             f"                for (long long ox = {hi}; ox < {w}; ++ox) d[oy * {w} + ox] = {pad};",
                             "            }"]
                body.append("        }")
        self.lines += [
            f"{{  // %{name} = unfold: {c * kh * kw * n} window rows of {oh}x{w} from ({n}, {c}, {h}, {w}), "
            "each offset's rows one shifted copy of the plane",
            f"    {self._par(c * kh * kw * n * size)}",
            f"    for (long long p = 0; p < {n * c}LL; ++p) {{",
            f"        const long long nn = p / {c}, cc = p % {c};",
            f"        const {T}* src = {cx} + {at};",
            *body,
            "    }",
            "}",
        ]

    def _fold_padded(self, T: str, geometry: tuple, n: int, c: int, h: int, w: int, oh: int, ow: int, cols: str,
                     out: str, row_base: str | None = None) -> None:
        """fold through a padded plane on the stack, one per output plane: every window row
        lands inside it, so each offset (i, j) adds its oh rows of ow columns with no bounds
        to work out (the loops' trip counts are constants the compiler vectorizes), in the
        library's order of offsets; the image's part is then copied out (padding dropped).
        The bounded loops of the row gather ran mostly scalar on W6's 14-wide rows. `row_base`:
        the C expression of window row (cc, i, j, nn)'s first element where the columns are a
        view (else they are C-contiguous (C, KH, KW, N, OH, OW))."""
        kh, kw, sh, sw, pt, pl, dh, dw = geometry
        ph, pw = _padded_extent(geometry, oh, ow, T)  # type: ignore[misc]
        rows, cols_in = max(0, min(h, ph - pt)), max(0, min(w, pw - pl))
        self.lines += [
            f"{{  // %{self.anchor.outputs[0].name} = fold: ({n}, {c}, {h}, {w}) from {kh}x{kw} windows of {oh}x{ow}, "
            f"through a {ph}x{pw} padded plane",
            f"    {self._par(n * c * oh * ow * kh * kw)}",
            f"    for (long long p = 0; p < {n * c}LL; ++p) {{",
            f"        const long long nn = p / {c}, cc = p % {c};",
            f"        {T} acc[{ph * pw}];",
            f"        for (long long e = 0; e < {ph * pw}; ++e) acc[e] = ({T})0;",
            f"        for (long long i = 0; i < {kh}; ++i) {{",
            f"        for (long long j = 0; j < {kw}; ++j) {{",
            f"            const {T}* s = {cols} + {row_base or f'(((cc * {kh} + i) * {kw} + j) * {n} + nn) * {oh * ow}LL'};",
            f"            {T}* r = acc + i * {dh * pw} + j * {dw};",
            f"            for (long long oy = 0; oy < {oh}; ++oy) {{",
            "                #pragma omp simd",
            f"                for (long long ox = 0; ox < {ow}; ++ox) r[oy * {sh * pw} + ox * {sw}] += s[oy * {ow} + ox];",
            "            }",
            "        }",
            "        }",
            f"        {T}* o = {out} + p * {h * w}LL;",
            # the image's cells the windows reach, copied; those past them (an image larger
            # than the windows cover) zero: bounds known here, no test per cell
            f"        for (long long yy = 0; yy < {rows}; ++yy) {{",
            f"            for (long long x = 0; x < {cols_in}; ++x) o[yy * {w} + x] = acc[(yy + {pt}) * {pw} + x + {pl}];",
            f"            for (long long x = {cols_in}; x < {w}; ++x) o[yy * {w} + x] = ({T})0;",
            "        }",
            f"        for (long long e = {rows * w}; e < {h * w}; ++e) o[e] = ({T})0;",
            "    }",
            "}",
        ]

    def _pool_scatter(self, T: str, geometry: tuple, n: int, c: int, h: int, w: int, oh: int, ow: int, out: str,
                      grad: str, index: str | None, term: str) -> None:
        """Max-pooling's gradient when no two windows share a cell (stride at least the
        window's extent, MaxPool2d's default): each window's gradient goes to its one chosen
        cell, read once and added once onto the zeroed plane (0 + g, the library's bits: every
        other addend of that cell is a +0). With the index, the cell is computed from it (an
        index outside the window chooses nothing, as index_mask); with a mask, each offset's
        masked term is added to its cell (one addend per cell still)."""
        kh, kw, sh, sw, pt, pl, dh, dw = geometry
        if index is not None:
            body = [
                f"                const long long k = (long long){index};",
                f"                if (k < 0 || k >= {kh * kw}) continue;",
                f"                const long long yy = oy * {sh} - {pt} + (k / {kw}) * {dh}, "
                f"xx = ox * {sw} - {pl} + (k % {kw}) * {dw};",
                f"                if (yy < 0 || yy >= {h} || xx < 0 || xx >= {w}) continue;",
                f"                plane[yy * {w} + xx] += {grad};",
            ]
        else:
            body = [
                f"                for (long long k = 0; k < {kh * kw}; ++k) {{",
                f"                    const long long yy = oy * {sh} - {pt} + (k / {kw}) * {dh}, "
                f"xx = ox * {sw} - {pl} + (k % {kw}) * {dw};",
                f"                    if (yy < 0 || yy >= {h} || xx < 0 || xx >= {w}) continue;",
                f"                    plane[yy * {w} + xx] += {term};",
                "                }",
            ]
        self.lines += [
            f"{{  // %{self.anchor.outputs[0].name} = max-pooling's gradient ({n}, {c}, {h}, {w}) from {kh}x{kw} "
            f"windows of {oh}x{ow} that share no cell: each window's gradient to its chosen cell",
            f"    {self._par(n * c * h * w)}",
            f"    for (long long p = 0; p < {n * c}LL; ++p) {{",
            f"        const long long nn = p / {c}, cc = p % {c};",
            f"        {T}* plane = {out} + p * {h * w}LL;",
            f"        for (long long e = 0; e < {h * w}LL; ++e) plane[e] = ({T})0;",
            f"        for (long long oy = 0; oy < {oh}; ++oy) {{",
            f"            for (long long ox = 0; ox < {ow}; ++ox) {{",
            *body,
            "            }",
            "        }",
            "    }",
            "}",
        ]


def mask_rows(out_m: str, kh: int, kw: int, n: int, oh: int, ow: int) -> list[str]:
    """C lines writing a pooled row's max-pool mask, laid out (C, kh*kw, N, oh, ow), from the
    window offsets the row chose (`chosen[ox]`): each offset's mask row written contiguously,
    since kh*kw stores a window, each to another plane, cost more than the pooling (0.85 ms of
    W6's first pooling)."""
    return [
        f"        for (long long k = 0; k < {kh * kw}; ++k) {{",
        f"            unsigned char* mrow = (unsigned char*){out_m} + ((cc * {kh * kw} + k) * {n} + nn) * "
        f"{oh * ow}LL + oy * {ow};",
        f"            for (long long ox = 0; ox < {ow}; ++ox) mrow[ox] = (unsigned char)(chosen[ox] == k);",
        "        }",
    ]
