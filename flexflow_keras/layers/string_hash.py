"""The string hashes TensorFlow's hashing ops use, written from the algorithms' published descriptions and
vectorized with NumPy over many strings at once (uint64 arithmetic wraps modulo 2**64, as C's does):

- `fingerprint64`: FarmHash's Fingerprint64 (the "na" variant of Hash64, seed 81), which
  `tf.strings.to_hash_bucket_fast` and `tf.fingerprint` compute;
- `siphash`: SipHash-2-4 with a 128-bit key (two uint64 words), which `tf.strings.to_hash_bucket_strong`
  computes;
- `fingerprint_cat64`: the combiner `tf.sparse.cross_hashed` folds the features of a cross with.

Each function takes a list of byte strings (or uint64 arrays) and returns a uint64 array. Strings are laid
out as rows of a zero-padded byte matrix; every 8-byte load (`_Bytes.word`) gathers from per-row offsets,
so strings of different lengths share one pass, with `np.where` choosing per length class.
"""

from __future__ import annotations

import numpy as np

_U64 = np.uint64
K0, K1, K2 = _U64(0xC3A5C85C97CB3127), _U64(0xB492B66FBE98F273), _U64(0x9AE16A3B2F90404F)
_KMUL = _U64(0xC6A4A7935BD1E995)  # the multiplier of the 64-bit combiner


def _rotr(x: np.ndarray, shift: int) -> np.ndarray:
    return (x >> _U64(shift)) | (x << _U64(64 - shift))


def _rotl(x: np.ndarray, shift: int) -> np.ndarray:
    return (x << _U64(shift)) | (x >> _U64(64 - shift))


def _shift_mix(x: np.ndarray) -> np.ndarray:
    return x ^ (x >> _U64(47))


class _Bytes:
    """Byte strings as a zero-padded uint8 matrix (16 spare bytes per row) and their lengths."""

    def __init__(self, strings: list):
        self.lengths = _lengths(strings)
        width = int(self.lengths.max(initial=0)) + 16
        buf = bytearray(len(strings) * width)
        for i, s in enumerate(strings):
            buf[i * width:i * width + len(s)] = s
        self.matrix = np.frombuffer(bytes(buf), np.uint8).reshape(len(strings), width)
        self.rows = np.arange(len(strings))[:, None]

    def word(self, offsets, size: int = 8) -> np.ndarray:
        """The little-endian `size`-byte words (8 or 4) of each row at its offset (an array or an int)."""
        off = np.clip(np.broadcast_to(np.asarray(offsets, np.int64), self.lengths.shape), 0,
                      self.matrix.shape[1] - size)
        cols = off[:, None] + np.arange(size)
        raw = np.ascontiguousarray(self.matrix[self.rows, cols])
        return raw.view("<u8" if size == 8 else "<u4")[:, 0].astype(_U64)

    def byte(self, offsets) -> np.ndarray:
        off = np.clip(np.asarray(offsets, np.int64), 0, None)
        return self.matrix[self.rows[:, 0], off].astype(_U64)


# --- FarmHash Fingerprint64 -----------------------------------------------------------------------------
def _hash_len16(u, v, mul):
    a = _shift_mix((u ^ v) * mul)
    b = _shift_mix((v ^ a) * mul)
    return b * mul


def _len0to16(s: _Bytes, n: np.ndarray) -> np.ndarray:
    n64 = n.astype(_U64)
    mul = K2 + n64 * _U64(2)
    # 8..16 bytes: two (overlapping) words
    a8 = s.word(0) + K2
    b8 = s.word(n - 8)
    c8 = _rotr(b8, 37) * mul + a8
    d8 = (_rotr(a8, 25) + b8) * mul
    long8 = _hash_len16(c8, d8, mul)
    # 4..7 bytes: two (overlapping) 32-bit words
    a4 = s.word(0, 4)
    long4 = _hash_len16(n64 + (a4 << _U64(3)), s.word(n - 4, 4), mul)
    # 1..3 bytes: first, middle and last byte
    y = s.byte(0) + (s.byte(n >> 1) << _U64(8))
    z = n64 + (s.byte(n - 1) << _U64(2))
    short = _shift_mix(y * K2 ^ z * K0) * K2
    return np.where(n >= 8, long8, np.where(n >= 4, long4, np.where(n > 0, short, K2)))


def _mid_words(s: _Bytes, n: np.ndarray, first_mul):
    """The multiplier and the four words the 17..32 and 33..64 byte cases start from."""
    mul = K2 + n.astype(_U64) * _U64(2)
    return mul, s.word(0) * first_mul, s.word(8), s.word(n - 8) * mul, s.word(n - 16) * K2


def _len17to32(s: _Bytes, n: np.ndarray) -> np.ndarray:
    mul, a, b, c, d = _mid_words(s, n, K1)
    return _hash_len16(_rotr(a + b, 43) + _rotr(c, 30) + d, a + _rotr(b + K2, 18) + c, mul)


def _len33to64(s: _Bytes, n: np.ndarray) -> np.ndarray:
    mul, a, b, c, d = _mid_words(s, n, K2)
    y = _rotr(a + b, 43) + _rotr(c, 30) + d
    z = _hash_len16(y, a + _rotr(b + K2, 18) + c, mul)
    e = s.word(16) * mul
    f = s.word(24)
    g = (y + s.word(n - 32)) * mul
    h = (z + s.word(n - 24)) * mul
    return _hash_len16(_rotr(e + f, 43) + _rotr(g, 30) + h, e + _rotr(f + a, 18) + g, mul)


def _weak32(s: _Bytes, off, a, b):
    """FarmHash's WeakHashLen32WithSeeds on the 32 bytes at `off`, seeds a and b."""
    w, x, y, z = s.word(off), s.word(off + 8), s.word(off + 16), s.word(off + 24)
    a = a + w
    b = _rotr(b + a + z, 21)
    c = a
    a = a + x + y
    b = b + _rotr(a, 44)
    return a + z, b + c


def _over64(s: _Bytes, n: np.ndarray) -> np.ndarray:
    """Strings of 65 bytes or more: 64-byte blocks, then the last 64 bytes (rows with fewer blocks keep
    their state while the others run)."""
    rows = len(n)
    seed = _U64(81)
    x = np.full(rows, seed)
    y = x * K1 + _U64(113)
    z = _shift_mix(y * K2 + _U64(113)) * K2
    v1 = v2 = w1 = w2 = np.zeros(rows, _U64)
    x = x * K2 + s.word(0)
    blocks = (n - 1) // 64
    for k in range(int(blocks.max(initial=0))):
        live = k < blocks
        off = np.full(rows, 64 * k)
        nx = _rotr(x + y + v1 + s.word(off + 8), 37) * K1
        ny = _rotr(y + v2 + s.word(off + 48), 42) * K1
        nx = nx ^ w2
        ny = ny + v1 + s.word(off + 40)
        nz = _rotr(z + w1, 33) * K1
        nv1, nv2 = _weak32(s, off, v2 * K1, nx + w1)
        nw1, nw2 = _weak32(s, off + 32, nz + w2, ny + s.word(off + 16))
        nx, nz = nz, nx
        x, y, z = np.where(live, nx, x), np.where(live, ny, y), np.where(live, nz, z)
        v1, v2, w1, w2 = (np.where(live, new, old) for new, old in ((nv1, v1), (nv2, v2), (nw1, w1), (nw2, w2)))
    mul = K1 + ((z & _U64(0xFF)) << _U64(1))
    last = n - 64
    w1 = w1 + ((n - 1) & 63).astype(_U64)
    v1 = v1 + w1
    w1 = w1 + v1
    x = _rotr(x + y + v1 + s.word(last + 8), 37) * mul
    y = _rotr(y + v2 + s.word(last + 48), 42) * mul
    x = x ^ (w2 * _U64(9))
    y = y + v1 * _U64(9) + s.word(last + 40)
    z = _rotr(z + w1, 33) * mul
    v1, v2 = _weak32(s, last, v2 * mul, x + w1)
    w1, w2 = _weak32(s, last + 32, z + w2, y + s.word(last + 16))
    x, z = z, x
    return _hash_len16(_hash_len16(v1, w1, mul) + _shift_mix(y) * K0 + z, _hash_len16(v2, w2, mul) + x, mul)


def _groups(lengths: np.ndarray, edges: tuple = ()):
    """Row indices grouped by length class (`edges`: the last length of each class) and within a class by
    power of two, so no group's byte matrix is more than twice the size of its strings."""
    key = np.searchsorted(np.asarray(edges, np.int64), lengths) * 64 + np.frexp(lengths.astype(np.float64))[1]
    for k in np.unique(key):
        yield np.nonzero(key == k)[0]


def _lengths(strings: list) -> np.ndarray:
    return np.fromiter((len(s) for s in strings), np.int64, len(strings))


def fingerprint64(strings: list) -> np.ndarray:
    """FarmHash Fingerprint64 of each byte string (uint64), as TensorFlow's `Fingerprint64`."""
    out = np.zeros(len(strings), _U64)
    lengths = _lengths(strings)
    for idx in _groups(lengths, (16, 32, 64)):
        group = _Bytes([strings[i] for i in idx])
        n = int(lengths[idx[0]])
        fn = _len0to16 if n <= 16 else _len17to32 if n <= 32 else _len33to64 if n <= 64 else _over64
        out[idx] = fn(group, group.lengths)
    return out


# --- SipHash-2-4 ---------------------------------------------------------------------------------------
def _sip_round(v0, v1, v2, v3):
    v0 = v0 + v1
    v1 = _rotl(v1, 13) ^ v0
    v0 = _rotl(v0, 32)
    v2 = v2 + v3
    v3 = _rotl(v3, 16) ^ v2
    v0 = v0 + v3
    v3 = _rotl(v3, 21) ^ v0
    v2 = v2 + v1
    v1 = _rotl(v1, 17) ^ v2
    v2 = _rotl(v2, 32)
    return v0, v1, v2, v3


def siphash(strings: list, key0: int, key1: int) -> np.ndarray:
    """SipHash-2-4 of each byte string with the key (key0, key1) (uint64 words, taken modulo 2**64)."""
    out = np.zeros(len(strings), _U64)
    for idx in _groups(_lengths(strings)):
        out[idx] = _siphash(_Bytes([strings[i] for i in idx]), _U64(key0 % 2**64), _U64(key1 % 2**64))
    return out


def _siphash(s: _Bytes, k0, k1) -> np.ndarray:
    rows = len(s.lengths)
    v0 = np.full(rows, k0 ^ _U64(0x736F6D6570736575))
    v1 = np.full(rows, k1 ^ _U64(0x646F72616E646F6D))
    v2 = np.full(rows, k0 ^ _U64(0x6C7967656E657261))
    v3 = np.full(rows, k1 ^ _U64(0x7465646279746573))
    full = s.lengths // 8
    for k in range(int(full.max(initial=0)) + 1):
        # block k: a full word for rows with more, the padded tail with the length byte for the last one
        live = k <= full
        tail = k == full
        m = s.word(np.full(rows, 8 * k))
        keep = np.where(tail, (_U64(1) << (8 * (s.lengths % 8)).astype(_U64)) - _U64(1), ~_U64(0))
        m = (m & keep) | np.where(tail, (s.lengths & 0xFF).astype(_U64) << _U64(56), _U64(0))
        n0, n1, n2, n3 = _sip_round(v0, v1, v2, v3 ^ m)
        n0, n1, n2, n3 = _sip_round(n0, n1, n2, n3)
        n0 = n0 ^ m
        v0, v1, v2, v3 = (np.where(live, new, old) for new, old in ((n0, v0), (n1, v1), (n2, v2), (n3, v3)))
    v2 = v2 ^ _U64(0xFF)
    for _ in range(4):
        v0, v1, v2, v3 = _sip_round(v0, v1, v2, v3)
    return v0 ^ v1 ^ v2 ^ v3


# --- the cross combiner ---------------------------------------------------------------------------------
def fingerprint_cat64(fp1: np.ndarray, fp2: np.ndarray) -> np.ndarray:
    """TensorFlow's `FingerprintCat64`: combine two uint64 fingerprints (order matters)."""
    result = fp1 ^ _KMUL
    result = result ^ (_shift_mix(fp2 * _KMUL) * _KMUL)
    result = result * _KMUL
    result = _shift_mix(result) * _KMUL
    return _shift_mix(result)
