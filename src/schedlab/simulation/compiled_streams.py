"""The named streams of :mod:`schedlab.streams` in Numba-compiled code, bit for bit.

``stream(seed, replication, name, unit)`` is ``Generator(PCG64(SeedSequence(seed,
spawn_key=(replication, STREAMS[name], unit))))``; building those three Python objects costs
~20 us, four times per generation unit of 4096 jobs, and drawing through the Generator adds
fancy-indexing passes: together ~90 ns per job, a fifth of a ServerFilling run (issue 12 item 4,
engine speed vs a plain C simulator). This module ports the parts the job sequence uses to
compiled code, so that a generation unit is drawn in one call without any Python object:

- ``SeedSequence`` entropy mixing and ``generate_state(4, uint64)`` (NumPy
  ``numpy/random/bit_generator.pyx``: ``_int_to_uint32_array``, ``get_assembled_entropy``,
  ``mix_entropy``, ``hashmix``, ``mix``, ``generate_state``);
- PCG64 seeding and output (``numpy/random/src/pcg64/pcg64.h``: ``pcg64_set_seed``,
  ``pcg_setseq_128_srandom_r``, ``pcg_setseq_128_step_r``, ``pcg_output_xsl_rr_128_64``), the
  128-bit state held as two uint64 halves;
- ``Generator.random`` (``next_double``: the top 53 bits times 2^-53) and
  ``Generator.exponential`` (``numpy/random/src/distributions/distributions.c``:
  ``random_standard_exponential``, ``standard_exponential_unlikely``, the ziggurat with NumPy's
  tables ``ke_double``, ``we_double``, ``fe_double``, ``ziggurat_exp_r``, which Numba ships
  identically in ``numba.np.random._constants``, imported through :mod:`schedlab._jit`).

Every number equals NumPy 2.x's (tests/simulation/test_compiled_units.py checks it draw for
draw), so every recorded seed keeps its results. A generator state is a uint64 array of 4 words:
``[state_high, state_low, inc_high, inc_low]``.

All arithmetic is in uint64 with ``np.uint64`` constants: in Numba, uint64 mixed with a plain
(int64) literal is promoted to float64.
"""

from __future__ import annotations

import numpy as np

from schedlab._jit import fe_double, ke_double, kernel, we_double, ziggurat_exp_r
from schedlab.streams import STREAMS

_U64 = np.uint64
_M32 = _U64(0xFFFFFFFF)
_ONE = _U64(1)
# SeedSequence constants (bit_generator.pyx)
_INIT_A = _U64(0x43B0D7E5)
_MULT_A = _U64(0x931E8875)
_INIT_B = _U64(0x8B51F9DD)
_MULT_B = _U64(0x58F38DED)
_MIX_MULT_L = _U64(0xCA01F9DD)
_MIX_MULT_R = _U64(0x4973F715)
_XSHIFT = _U64(16)
_POOL_SIZE = 4
# PCG64 default multiplier (pcg64.h: PCG_DEFAULT_MULTIPLIER_HIGH, _LOW)
_MUL_HIGH = _U64(2549297995355413924)
_MUL_LOW = _U64(4865540595714422341)
_TO_DOUBLE = 1.0 / 9007199254740992.0  # 2^-53
_KE = ke_double.astype(np.uint64)
_WE = we_double.astype(np.float64)
_FE = fe_double.astype(np.float64)
_EXP_R = float(ziggurat_exp_r)


def uint32_words(n: int) -> list[int]:
    """``_int_to_uint32_array``: the little-endian 32-bit words of n >= 0 (0 -> [0])."""
    if n < 0:
        raise ValueError("expected a non-negative integer")
    if n == 0:
        return [0]
    words = []
    while n > 0:
        words.append(n & 0xFFFFFFFF)
        n >>= 32
    return words


def stream_entropy(seed: int, replication: int, name: str) -> np.ndarray:
    """The assembled entropy of ``stream(seed, replication, name, unit)`` without the unit's
    words (``get_assembled_entropy``: the run entropy zero-padded to the pool size, since a spawn
    key is present, then the spawn key's words), as uint64 words < 2^32. Computed once per run
    and stream; :func:`seed_state` appends the unit."""
    run = uint32_words(seed)
    run += [0] * max(0, _POOL_SIZE - len(run))
    return np.array(run + uint32_words(replication) + uint32_words(STREAMS[name]), np.uint64)


@kernel(wraparound=False)
def _hashmix(value, hash_const):
    """``hashmix`` on 32-bit words held in uint64; returns (value, new hash_const)."""
    value ^= hash_const
    hash_const = (hash_const * _MULT_A) & _M32
    value = (value * hash_const) & _M32
    value ^= value >> _XSHIFT
    return value, hash_const


@kernel(wraparound=False)
def _mix(x, y):
    result = (_MIX_MULT_L * x - _MIX_MULT_R * y) & _M32
    return result ^ (result >> _XSHIFT)


@kernel(wraparound=False)
def _pool(entropy):
    """``SeedSequence.mix_entropy`` into a pool of 4 words."""
    pool = np.zeros(_POOL_SIZE, np.uint64)
    h = _INIT_A
    for i in range(_POOL_SIZE):
        value = entropy[i] if i < entropy.shape[0] else _U64(0)
        pool[i], h = _hashmix(value, h)
    for i_src in range(_POOL_SIZE):
        for i_dst in range(_POOL_SIZE):
            if i_src != i_dst:
                hashed, h = _hashmix(pool[i_src], h)
                pool[i_dst] = _mix(pool[i_dst], hashed)
    for i_src in range(_POOL_SIZE, entropy.shape[0]):
        for i_dst in range(_POOL_SIZE):
            hashed, h = _hashmix(entropy[i_src], h)
            pool[i_dst] = _mix(pool[i_dst], hashed)
    return pool


@kernel(wraparound=False)
def _generate_state(pool):
    """``SeedSequence.generate_state(4, np.uint64)``: 8 words of 32 bits, paired little-endian."""
    out = np.zeros(4, np.uint64)
    h = _INIT_B
    for i in range(8):
        value = pool[i % _POOL_SIZE] ^ h
        h = (h * _MULT_B) & _M32
        value = (value * h) & _M32
        value ^= value >> _XSHIFT
        if i % 2 == 0:
            out[i // 2] = value
        else:
            out[i // 2] |= value << _U64(32)
    return out


@kernel(wraparound=False)
def _mulhi(a, b):
    """The high 64 bits of the 128-bit product a * b (NumPy's ``pcg64.h`` uses ``__uint128_t``;
    LLVM compiles this to the same single multiply)."""
    a_lo, a_hi = a & _M32, a >> _U64(32)
    b_lo, b_hi = b & _M32, b >> _U64(32)
    p0, p1, p2, p3 = a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi
    mid = (p0 >> _U64(32)) + (p1 & _M32) + (p2 & _M32)
    return p3 + (p1 >> _U64(32)) + (p2 >> _U64(32)) + (mid >> _U64(32))


@kernel(wraparound=False)
def _step(st):
    """``pcg_setseq_128_step_r``: state = state * multiplier + inc (mod 2^128)."""
    hi, lo = st[0], st[1]
    new_hi = _mulhi(lo, _MUL_LOW) + lo * _MUL_HIGH + hi * _MUL_LOW
    new_lo = lo * _MUL_LOW
    sum_lo = new_lo + st[3]
    carry = _ONE if sum_lo < new_lo else _U64(0)
    st[0] = new_hi + st[2] + carry
    st[1] = sum_lo


@kernel(wraparound=False)
def seed_state(entropy, unit):
    """The PCG64 state of ``stream(...)`` for generation unit ``unit`` (>= 0), given
    :func:`stream_entropy`: the unit's 32-bit words appended, mixed, ``generate_state`` and
    ``pcg64_set_seed`` (state = (val[0], val[1]), initseq = (val[2], val[3]), high word first,
    then ``pcg_setseq_128_srandom_r``)."""
    n_unit = 1
    rest = unit >> 32
    while rest > 0:
        n_unit += 1
        rest >>= 32
    full = np.empty(entropy.shape[0] + n_unit, np.uint64)
    full[: entropy.shape[0]] = entropy
    rest = unit
    for i in range(n_unit):
        full[entropy.shape[0] + i] = _U64(rest & 0xFFFFFFFF)
        rest >>= 32
    val = _generate_state(_pool(full))
    st = np.zeros(4, np.uint64)
    st[2] = (val[2] << _ONE) | (val[3] >> _U64(63))
    st[3] = (val[3] << _ONE) | _ONE
    _step(st)
    lo = st[1] + val[1]
    carry = _ONE if lo < st[1] else _U64(0)
    st[0] = st[0] + val[0] + carry
    st[1] = lo
    _step(st)
    return st


@kernel(wraparound=False)
def next_uint64(st):
    """``pcg64_next64``: step, then the XSL-RR output of the new state."""
    _step(st)
    x = st[0] ^ st[1]
    rot = st[0] >> _U64(58)
    return (x >> rot) | (x << ((_U64(64) - rot) & _U64(63)))


@kernel(wraparound=False)
def next_double(st):
    """``pcg64_next_double``: a uniform in [0, 1) from the top 53 bits."""
    return float(np.int64(next_uint64(st) >> _U64(11))) * _TO_DOUBLE  # < 2^53: exact


@kernel(wraparound=False)
def standard_exponential(st):
    """``random_standard_exponential`` (ziggurat) with ``standard_exponential_unlikely``
    written as the loop it recurses into."""
    while True:
        ri = next_uint64(st) >> _U64(3)
        idx = ri & _U64(0xFF)
        ri >>= _U64(8)
        x = float(np.int64(ri)) * _WE[idx]  # ri < 2^53: converted exactly
        if ri < _KE[idx]:
            return x
        if idx == 0:
            return _EXP_R - np.log1p(-next_double(st))
        if (_FE[idx - _ONE] - _FE[idx]) * next_double(st) + _FE[idx] < np.exp(-x):
            return x


@kernel(wraparound=False)
def fill_random(st, out):
    """``Generator.random(n)`` into out."""
    for i in range(out.shape[0]):
        out[i] = next_double(st)


@kernel(wraparound=False)
def fill_exponential(st, scale, out):
    """``Generator.exponential(scale, n)`` into out: ``scale * standard_exponential`` each."""
    for i in range(out.shape[0]):
        out[i] = scale * standard_exponential(st)
