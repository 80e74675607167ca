"""splitmix64: the mixing function every simweb sampler draws its randomness from.

A splitmix64 stream (Steele, Lea, Flood, "Fast splittable pseudorandom number generators",
OOPSLA 2014) seeded by a 64-bit state s outputs, as its number i (i = 0, 1, …),
``fmix64(s + (i + 1) · φ)`` with φ = 0x9E3779B97F4A7C15 (the golden ratio in 64 bits) and
fmix64 the Stafford "Mix13" finaliser below. The samplers of :mod:`simweb.core.minhash` and
:mod:`simweb.core.dartminhash` seed their streams with a term's 64-bit hash XOR
:func:`seed_key` of the signature seed, so every random number is a pure function of
(term, seed, position in the stream): the same on every machine and in every bag.

Everything here is integer arithmetic on uint64, wrapping modulo 2^64.
"""
from __future__ import annotations

import numpy as np

__all__ = ["GOLDEN", "fmix64", "fmix64_inplace", "seed_key"]

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def fmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 / Stafford 13 finaliser, element-wise on uint64 (wrapping)."""
    x = x ^ (x >> np.uint64(30))
    x = x * _M1
    x = x ^ (x >> np.uint64(27))
    x = x * _M2
    return x ^ (x >> np.uint64(31))


def fmix64_inplace(x: np.ndarray, tmp: np.ndarray) -> np.ndarray:
    """:func:`fmix64` computed in place in ``x`` (``tmp``: scratch of the same shape)."""
    np.right_shift(x, np.uint64(30), out=tmp)
    x ^= tmp
    x *= _M1
    np.right_shift(x, np.uint64(27), out=tmp)
    x ^= tmp
    x *= _M2
    np.right_shift(x, np.uint64(31), out=tmp)
    x ^= tmp
    return x


def seed_key(seed: int) -> np.uint64:
    """The 64-bit key a signature seed contributes to every stream: ``fmix64(seed + φ)``."""
    return np.uint64(fmix64(np.array([seed], dtype=np.uint64) + GOLDEN)[0])
