"""The Cantor basis of GF(2^16) and the change of basis to galois's polynomial basis.

Our GF(2^16) words are in the polynomial basis modulo ``0x1002D`` (galois's default, see
:data:`mpi_coded.gf_kernels.POLYS`).  The additive FFT of :mod:`mpi_coded.codes.rs_fft`
evaluates at the points ``omega_i = phi(i)``, where

    phi(b) = XOR of CANTOR[t] over the set bits t of b,

and ``CANTOR`` is a Cantor basis: ``v_0 = 1`` and ``v_t^2 + v_t = v_{t-1}`` (D. G. Cantor, "On
arithmetical algorithms over finite fields", 1989).  The reed-solomon-simd / Leopard-RS
libraries store field elements as the bit vector ``b`` itself ("Cantor representation"); ``phi``
is the field isomorphism from their representation to ours (their logarithm table is
``log(b) = log_x(phi(b))``).  Their shard bytes hold 64-byte chunks in which element ``j`` is
``chunk[j] | chunk[32 + j] << 8`` (:func:`to_shards` / :func:`from_shards`).
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["CANTOR", "from_cantor", "from_shards", "phi_inverse_table", "phi_table",
           "to_cantor", "to_shards"]

#: The Cantor basis v_0..v_15 of GF(2^16) as polynomial-basis words (modulo 0x1002D).
CANTOR: tuple[int, ...] = (
    0x0001, 0xACCA, 0x3C0E, 0x163E, 0xC582, 0xED2E, 0x914C, 0x4012,
    0x6C98, 0x10D8, 0x6A72, 0xB900, 0xFDB8, 0xFB34, 0xFF38, 0x991E,
)


@functools.cache
def phi_table() -> np.ndarray:
    """``phi(b)`` for every 16-bit ``b`` (uint16, 65536 entries), built by doubling."""
    out = np.zeros(1 << 16, dtype=np.uint16)
    for t, v in enumerate(CANTOR):
        half = 1 << t
        out[half:2 * half] = out[:half] ^ np.uint16(v)
    out.flags.writeable = False
    return out


@functools.cache
def phi_inverse_table() -> np.ndarray:
    """The inverse permutation of :func:`phi_table` (polynomial basis -> Cantor representation)."""
    out = np.zeros(1 << 16, dtype=np.uint16)
    out[phi_table()] = np.arange(1 << 16, dtype=np.uint16)
    out.flags.writeable = False
    return out


def from_cantor(words: np.ndarray) -> np.ndarray:
    """Cantor representation -> polynomial basis, elementwise (uint16 in and out)."""
    return phi_table()[np.asarray(words, dtype=np.uint16)]


def to_cantor(words: np.ndarray) -> np.ndarray:
    """Polynomial basis -> Cantor representation, elementwise (uint16 in and out)."""
    return phi_inverse_table()[np.asarray(words, dtype=np.uint16)]


def to_shards(rows: np.ndarray) -> list[bytes]:
    """Rows of polynomial-basis words ``(r, V)``, ``V % 32 == 0``, as library shards.

    Each row becomes ``2 V`` bytes in the Cantor representation: per 32 words a 64-byte chunk
    with the low bytes first and the high bytes after them.
    """
    words = to_cantor(rows)
    r, v = words.shape
    if v % 32:
        raise ValueError(f"shards need a multiple of 32 words per row (got {v})")
    chunks = words.reshape(r, v // 32, 32)
    out = np.empty((r, v // 32, 64), dtype=np.uint8)
    out[:, :, :32] = chunks & 0xFF
    out[:, :, 32:] = chunks >> 8
    return [row.tobytes() for row in out.reshape(r, 2 * v)]


def from_shards(shards: list[bytes]) -> np.ndarray:
    """Inverse of :func:`to_shards`: library shards -> ``(r, V)`` polynomial-basis words."""
    raw = np.frombuffer(b"".join(shards), dtype=np.uint8).reshape(len(shards), -1, 64)
    words = raw[:, :, :32].astype(np.uint16) | (raw[:, :, 32:].astype(np.uint16) << 8)
    return from_cantor(words.reshape(len(shards), -1))
