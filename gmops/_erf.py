"""The error function and its complement on NumPy arrays, vectorized and accurate.

NumPy has no erf, and SciPy is optional (CI runs without it), so exact GELU used to fall
back to `np.vectorize(math.erf)`: a Python call per element, half of a small GPT's
training step. This module evaluates Sun's fdlibm rational approximations (the ones
`s_erf.c`/`s_erff.c` and most C libraries use; the coefficients are the published ones)
over all elements at once. The real line splits into four ranges of |x|, each with its own
rational function. The first range's formula runs on every element (ranges chosen by a
random mask cost more than a few arithmetic passes); the elements beyond it are gathered by
index, so they pay for the other ranges' formulas and nothing else does.

The ranges, for a = |x|:
- a < 0.84375:   erf(x) = x + x * P(x^2) / Q(x^2)
- a < 1.25:      erf(a) = erx + P(a - 1) / Q(a - 1)          (erx = erf(1) rounded to float)
- a < 1/0.35:    erfc(a) = exp(-a^2 - 0.5625 + R(1/a^2) / S(1/a^2)) / a
- beyond: the same with another R/S pair, up to erfc's underflow (28 in float64, 11 in
  float32); erf(-x) = -erf(x), erfc(-x) = 2 - erfc(x).
The tail splits exp(-a^2) into exp(-z^2) * exp((z - a)(z + a)) with z the leading half of
a's mantissa, so that a^2 is not rounded before the exponential (erfc keeps its relative
accuracy down to the underflow).

float32 and float16 arrays are evaluated in float32 with fdlibm's float coefficients (lower
degrees, each accurate to 2^-28, below float32's rounding), float64 in float64.
`tests/eager/test_erf.py` bounds the error against `math.erf`/`math.erfc` in units in the
last place over the whole range, tails, signed zeros, infinities and NaN.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np


class _Coefficients(NamedTuple):
    """One precision's rational approximations (coefficients lowest degree first)."""

    erx: float  # erf(1) rounded short: erf(a) = erx + pa/qa on the middle range
    pp: tuple  # erf on [0, 0.84375]: x + x * pp(z) / qq(z), z = x^2
    qq: tuple
    pa: tuple  # erf on [0.84375, 1.25]: erx + pa(s) / qa(s), s = |x| - 1
    qa: tuple
    ra: tuple  # log(a erfc(a)) + a^2 + 0.5625 on [1.25, 1/0.35]: ra(s) / sa(s), s = 1 / a^2
    sa: tuple
    rb: tuple  # the same on [1/0.35, underflow]
    sb: tuple
    underflow: float  # erfc(a) is 0 in this precision beyond it


_DOUBLE = _Coefficients(
    erx=8.45062911510467529297e-01,
    pp=(1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02,
        -5.77027029648944159157e-03, -2.37630166566501626084e-05),
    qq=(1.0, 3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03,
        1.32494738004321644526e-04, -3.96022827877536812320e-06),
    pa=(-2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01,
        3.18346619901161753674e-01, -1.10894694282396677476e-01, 3.54783043256182359371e-02,
        -2.16637559486879084300e-03),
    qa=(1.0, 1.06420880400844228286e-01, 5.40397917702171048937e-01, 7.18286544141962662868e-02,
        1.26171219808761642112e-01, 1.36370839120290507362e-02, 1.19844998467991074170e-02),
    ra=(-9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e+01,
        -6.23753324503260060396e+01, -1.62396669462573470355e+02, -1.84605092906711035994e+02,
        -8.12874355063065934246e+01, -9.81432934416914548592e+00),
    sa=(1.0, 1.96512716674392571292e+01, 1.37657754143519042600e+02, 4.34565877475229228821e+02,
        6.45387271733267880336e+02, 4.29008140027567833386e+02, 1.08635005541779435134e+02,
        6.57024977031928170135e+00, -6.04244152148580987438e-02),
    rb=(-9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e+01,
        -1.60636384855821916062e+02, -6.37566443368389627722e+02, -1.02509513161107724954e+03,
        -4.83519191608651397019e+02),
    sb=(1.0, 3.03380607434824582924e+01, 3.25792512996573918826e+02, 1.53672958608443695994e+03,
        3.19985821950859553908e+03, 2.55305040643316442583e+03, 4.74528541206955367215e+02,
        -2.24409524465858183362e+01),
    underflow=28.0,
)
# float: lower degrees, each accurate to 2^-28 or better (far below float32's rounding)
_FLOAT = _Coefficients(
    erx=8.42697144e-01,
    pp=(1.28379166e-01, -3.36030394e-01, -1.86261395e-03),
    qq=(1.0, 3.12324315e-01, 2.16070414e-02, -1.98859372e-03),
    pa=(3.65041046e-06, 4.15109307e-01, -2.09395722e-01, 8.67677554e-02),
    qa=(1.0, 4.95560974e-01, 3.71248513e-01, 3.92478965e-02),
    ra=(-9.88156721e-03, -5.43658376e-01, -1.66828310e+00, -6.91554189e-01),
    sa=(1.0, 4.48581553e+00, 4.10799170e+00, 5.53855181e-01),
    rb=(-9.86496918e-03, -5.48049808e-01, -1.84115684e+00),
    sb=(1.0, 4.87132740e+00, 3.04982710e+00, -7.61900663e-01),
    underflow=11.0,
)
_COEFFICIENTS = {np.dtype(np.float32): _FLOAT, np.dtype(np.float64): _DOUBLE}
_SMALL, _MID, _TAIL_SPLIT = 0.84375, 1.25, 1.0 / 0.35
# the leading bits of a float's mantissa kept in z (z * z is then exact)
_HIGH_BITS = {np.dtype(np.float32): (np.uint32, 0xFFFFE000), np.dtype(np.float64): (np.uint64, 0xFFFFFFFF00000000)}


def _horner(coeffs: tuple, t: np.ndarray) -> np.ndarray:
    """sum(c_k t^k) with one buffer: two in-place ufunc passes per coefficient."""
    acc = np.full_like(t, coeffs[-1])
    for c in coeffs[-2::-1]:
        np.multiply(acc, t, out=acc)
        np.add(acc, c, out=acc)
    return acc


def _ratio(num: tuple, den: tuple, t: np.ndarray) -> np.ndarray:
    p = _horner(num, t)
    return np.divide(p, _horner(den, t), out=p)


def _erf_small(x: np.ndarray, k: _Coefficients) -> np.ndarray:
    """erf for |x| < 0.84375 (any sign): x + x * P/Q, relative accuracy kept near 0."""
    y = _ratio(k.pp, k.qq, x * x)
    np.multiply(y, x, out=y)
    return np.add(y, x, out=y)


def _erfc_small(x: np.ndarray, k: _Coefficients) -> np.ndarray:
    """erfc for |x| < 0.84375: 0.5 - (x * P/Q + (x - 0.5)), which keeps the sum's rounding
    below erfc's last place (1 - erf would lose up to two bits near 0.84)."""
    y = _ratio(k.pp, k.qq, x * x)
    np.multiply(y, x, out=y)
    y += x - 0.5
    return np.subtract(0.5, y, out=y)


def _erf_mid(a: np.ndarray, k: _Coefficients) -> np.ndarray:
    """erf(a) - erx for 0.84375 <= a < 1.25."""
    return _ratio(k.pa, k.qa, a - 1.0)


def _erfc_tail(a: np.ndarray, k: _Coefficients) -> np.ndarray:
    """erfc(a) for a >= 1.25 (+inf included: clipped to the underflow bound, where erfc is 0)."""
    t = np.clip(a, _MID, k.underflow)
    s = 1.0 / (t * t)
    near = t < _TAIL_SPLIT
    if near.all():
        r = _ratio(k.ra, k.sa, s)
    elif not near.any():
        r = _ratio(k.rb, k.sb, s)
    else:
        r = np.where(near, _ratio(k.ra, k.sa, s), _ratio(k.rb, k.sb, s))
    uint, high = _HIGH_BITS[t.dtype]
    z = (t.view(uint) & uint(high)).view(t.dtype)
    # exp(-z^2 - 0.5625) * exp((z - t)(z + t) + R/S): t^2 is never rounded as a whole
    r += (z - t) * (z + t)
    np.exp(r, out=r)
    r *= np.exp(-(z * z) - 0.5625)
    r /= t
    return r


def _large(a: np.ndarray, k: _Coefficients, complement: bool) -> np.ndarray:
    """erf(a) (or erfc(a)) for a >= 0.84375, each element through its own range's formula
    (the two ranges gathered apart by index when both occur)."""
    in_mid = a < _MID
    if in_mid.all():
        d = _erf_mid(a, k)
        return np.subtract(1.0 - k.erx, d, out=d) if complement else np.add(d, k.erx, out=d)
    if not in_mid.any():
        c = _erfc_tail(a, k)
        return c if complement else np.subtract(1.0, c, out=c)
    out = np.empty_like(a)
    i_mid, i_tail = np.flatnonzero(in_mid), np.flatnonzero(~in_mid)
    out[i_mid] = _large(np.take(a, i_mid), k, complement)
    out[i_tail] = _large(np.take(a, i_tail), k, complement)
    return out


def _by_range(x: np.ndarray, complement: bool) -> np.ndarray:
    """erf (or erfc) of a flat float32/float64 array, each element through its range's formula.

    The small range's formula runs on every element (it is the common case, and a few
    arithmetic passes cost less than selecting elements by a random mask); only the elements
    beyond it are gathered (by index), evaluated and put back. NaN stays in the small range,
    where it propagates."""
    k = _COEFFICIENTS[x.dtype]
    out = _erfc_small(x, k) if complement else _erf_small(x, k)
    a = np.abs(x)
    idx = np.flatnonzero(a >= _SMALL)
    if not idx.size:
        return out
    val = _large(np.take(a, idx), k, complement)
    neg = np.signbit(np.take(x, idx))
    if neg.any():
        if complement:  # erfc(-a) = 2 - erfc(a)
            val = np.where(neg, 2.0 - val, val)
        else:
            val = np.where(neg, -val, val)
    out[idx] = val
    return out


_BLOCK = 1 << 16  # elements per block of a large array (a few buffers of it stay in cache)


def _evaluate(x, complement: bool) -> np.ndarray:
    x = np.asarray(x)
    dtype = x.dtype
    if dtype.kind != "f":
        x = x.astype(np.float64)
    work = x.astype(np.float32) if dtype == np.float16 else x
    flat = np.ascontiguousarray(work).reshape(-1)
    with np.errstate(all="ignore"):  # 1/a^2 and exp underflow in the dropped branch of a where
        if flat.size <= _BLOCK:
            y = _by_range(flat, complement).reshape(x.shape)
        else:  # block by block: the formula's dozens of passes run in the core's cache
            y = np.empty_like(flat)
            for i in range(0, flat.size, _BLOCK):
                y[i:i + _BLOCK] = _by_range(flat[i:i + _BLOCK], complement)
            y = y.reshape(x.shape)
    return y.astype(dtype, copy=False) if dtype == np.float16 else y


def erf(x) -> np.ndarray:
    """The error function of a NumPy array, elementwise, in its float dtype (float16 computed
    in float32; integers and bools as float64)."""
    return _evaluate(x, complement=False)


def erfc(x) -> np.ndarray:
    """1 - erf(x), elementwise, with relative accuracy in the right tail (down to underflow)."""
    return _evaluate(x, complement=True)
