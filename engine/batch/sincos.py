"""sin and cos of a chunk of joint angles: a table at multiples of 1/128 rad and short series.

numpy's own sin/cos of float64 is slow here and holds up other threads; this is ~1 ulp and
about twice as fast on (joints, states) arrays of angles.
"""
from __future__ import annotations

import numpy as np

_STEPS = 128  # table of sin/cos at multiples of 1/128 rad over [-8 pi, 8 pi] (2 x 51 kB)
_HALF = int(np.ceil(8 * np.pi * _STEPS)) + 1
_TABLE_SIN = np.sin(np.arange(-_HALF, _HALF + 1) / _STEPS)
_TABLE_COS = np.cos(np.arange(-_HALF, _HALF + 1) / _STEPS)
_TWO_PI = (6.2831854820251465, -1.7484555314695172e-07, -6.8604979977715316e-15)  # 2 pi, 3 parts
# of 24, 24 and 53 bits (Cody-Waite): n * part is exact for |n| < 2**29


def sincos(theta: np.ndarray, s: np.ndarray, c: np.ndarray, t1: np.ndarray, t2: np.ndarray,
           index: np.ndarray) -> None:
    """s, c = sin(theta), cos(theta) to ~1 ulp, elementwise (numpy's own sin/cos of float64 is
    slow here and holds up other threads): theta = k / 128 + x with the table for k and short
    Taylor series for |x| <= 1/256 (the next terms, x^7 / 7! and x^6 / 6!, are below 1e-17).
    Angles past the table (|theta| > 8 pi) are first reduced by 2 pi; numpy's for
    |theta| > 6e5. theta is overwritten."""
    np.multiply(theta, float(_STEPS), out=t1)  # exact
    np.rint(t1, out=t1)  # k
    if t1.size and not -_HALF <= t1.min() <= t1.max() <= _HALF:  # past the table: reduce
        if not _reduce(theta, t1, t2):
            np.sin(theta, out=s)
            np.cos(theta, out=c)
            return
        np.multiply(theta, float(_STEPS), out=t1)
        np.rint(t1, out=t1)
    np.add(t1, _HALF, out=index, casting="unsafe")  # NaN: any index; x stays NaN below
    np.take(_TABLE_SIN, index, out=s, mode="clip")
    np.take(_TABLE_COS, index, out=c, mode="clip")
    np.multiply(t1, 1.0 / _STEPS, out=t1)
    np.subtract(theta, t1, out=theta)  # x, exact
    np.multiply(theta, theta, out=t1)  # z = x^2
    np.multiply(t1, 1.0 / 120, out=t2)  # sin x = x (1 + z (-1/6 + z / 120))
    t2 -= 1.0 / 6
    t2 *= t1
    t2 += 1.0
    t2 *= theta  # sin x
    np.multiply(t1, 1.0 / 24, out=theta)  # cos x = 1 + z (-1/2 + z / 24)
    theta -= 0.5
    theta *= t1
    theta += 1.0  # cos x
    np.multiply(s, t2, out=t1)  # sin_k sin_x
    s *= theta  # sin_k cos_x
    np.multiply(c, t2, out=t2)  # cos_k sin_x
    s += t2
    c *= theta  # cos_k cos_x
    c -= t1


def _reduce(theta: np.ndarray, t1: np.ndarray, t2: np.ndarray) -> bool:
    """theta -= 2 pi n, into [-pi, pi], exactly (Cody-Waite); False (theta unchanged) when
    some |theta| is too large for that (joint limits of 1e16) or not finite."""
    np.multiply(theta, 1.0 / (2 * np.pi), out=t1)
    np.rint(t1, out=t1)  # n
    if not np.max(np.abs(t1)) <= 1e5:
        return False
    for part in _TWO_PI:
        np.multiply(t1, part, out=t2)
        np.subtract(theta, t2, out=theta)
    return True
