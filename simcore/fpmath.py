"""ln, log2 and exp that give the same bits on every CPU.

numpy picks its vector code for ``np.log``, ``np.log2`` and ``np.exp`` by the CPU it runs on
(SSE, AVX2, AVX-512), and those paths differ in the last bit of about one result in ten; so
does the C library's ``math.log`` between its FMA and non-FMA builds. A bag weight or a
min-hash table computed with them would differ between machines, and with it the index
(issue seen: AVX-512 machines built other bag digests than AVX2 ones). The functions here
use only operations IEEE 754 rounds exactly (``+ − × ÷``, ``frexp``, ``ldexp``, ``rint``),
each as its own numpy call, so no compiler or CPU can fuse or reorder them: the same input
gives the same output everywhere. They are within a few units in the last place of the
correctly rounded value (tested against ``math`` on random inputs), and exact where it
matters to the paper's formulas: ``log2`` of a power of two is its exponent, so the distance
weight log2(32 / (1 + d)) is exactly 0 at d = 31.

Both reductions are the textbook ones, with our own series:

* ln x: x = m · 2^e with m in [√½, √2); with s = (m − 1) / (m + 1),
  ln m = 2 atanh s = 2 (s + s³/3 + s⁵/5 + …); |s| ≤ 0.172, so eleven terms leave a truncation
  error below 3·10⁻¹⁷ of the result.
* exp x: x = k ln 2 + r with k = rint(x / ln 2), |r| ≤ ½ ln 2 (ln 2 split in a high part with
  trailing zero bits, so k · high is exact, and a low part); e^r by its Taylor series to r¹⁴.
"""
from __future__ import annotations

import numpy as np

__all__ = ["exp", "log", "log2"]

_SQRT_HALF = 0.7071067811865476
# ln 2 = _LN2_HI + _LN2_LO, _LN2_HI with its 21 low mantissa bits zero: k · _LN2_HI is exact
# for every |k| < 2^21, far beyond the exponent range of a double.
_LN2_HI = float.fromhex("0x1.62e42fee00000p-1")
_LN2_LO = float.fromhex("0x1.a39ef35793c76p-33")
_INV_LN2 = 1.4426950408889634
# 2 / (2k + 1) for k = 1 … 10: the odd-power coefficients of 2 atanh s after the first.
_ATANH = tuple(2.0 / (2 * k + 1) for k in range(10, 0, -1))
# 1 / k! for k = 14 … 2: the Taylor coefficients of e^r beyond 1 + r.
_EXP = tuple(1.0 / float(np.prod(np.arange(1, k + 1, dtype=np.float64))) for k in range(14, 1, -1))
# Beyond these, e^x overflows to inf or underflows to 0 in double precision.
_EXP_MAX = 709.782712893384
_EXP_MIN = -745.1332191019412


def _array(x) -> tuple[np.ndarray, bool]:
    a = np.asarray(x, dtype=np.float64)
    return (a.reshape(1), True) if a.ndim == 0 else (a, False)


def _out(a: np.ndarray, scalar: bool):
    return float(a[0]) if scalar else a


def _ln_parts(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(e, ln m) with x = m · 2^e and m in [√½, √2); x finite and > 0."""
    m, e = np.frexp(x)
    low = m < _SQRT_HALF
    m *= low + 1.0  # doubles m where it is below √½: exact
    e = e.astype(np.float64)
    e -= low
    s = m - 1.0  # exact (Sterbenz)
    m += 1.0
    s /= m
    z = s * s
    p = np.full_like(z, _ATANH[0])
    for c in _ATANH[1:]:
        p *= z
        p += c
    p *= z
    p *= s
    s *= 2.0
    p += s
    return e, p


def _logarithm(x, scale: float | None):
    """ln x (``scale`` None) or log2 x (``scale`` = 1 / ln 2), element-wise, IEEE special values kept."""
    a, scalar = _array(x)
    ok = np.isfinite(a)
    ok &= a > 0.0
    clean = ok.all()
    e, ln_m = _ln_parts(a if clean else np.where(ok, a, 1.0))
    if scale is None:
        result = e * _LN2_LO
        result += ln_m
        result += e * _LN2_HI
    else:
        result = ln_m
        result *= scale
        result += e
    if not clean:
        # log(0) = −inf, log(inf) = inf, log(x < 0) = log(nan) = nan.
        result[a == 0.0] = -np.inf
        result[a == np.inf] = np.inf
        result[(a < 0.0) | np.isnan(a)] = np.nan
    return _out(result, scalar)


def log(x):
    """The natural logarithm, element-wise; the same bits on every CPU (module docstring)."""
    return _logarithm(x, None)


def log2(x):
    """The base-2 logarithm, element-wise; exact for powers of two; the same bits on every CPU."""
    return _logarithm(x, _INV_LN2)


def exp(x):
    """e to the power x, element-wise; the same bits on every CPU (module docstring)."""
    a, scalar = _array(x)
    ok = a <= _EXP_MAX
    ok &= a >= _EXP_MIN  # also False for nan
    clean = ok.all()
    v = a if clean else np.where(ok, a, 0.0)
    k = v * _INV_LN2
    np.rint(k, out=k)
    r = k * _LN2_HI
    np.subtract(v, r, out=r)
    r -= k * _LN2_LO
    p = np.full_like(r, _EXP[0])
    for c in _EXP[1:]:
        p *= r
        p += c
    p *= r * r
    p += r
    p += 1.0
    result = np.ldexp(p, k.astype(np.int64))
    if not clean:
        # e^x overflows to inf above _EXP_MAX, underflows to 0 below _EXP_MIN; e^nan = nan.
        result[a > _EXP_MAX] = np.inf
        result[a < _EXP_MIN] = 0.0
        result[np.isnan(a)] = np.nan
    return _out(result, scalar)
