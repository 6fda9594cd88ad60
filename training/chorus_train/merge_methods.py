"""The merge methods of docs/protocol.md §8, per element, compiled (numba) and run over a block of
a tensor in parallel chunks.

- linear / uniform soup: (sum_i w_i * theta_i) / sum_i w_i, each term added by a fused multiply-add
  (as mergekit's torch `addcmul_`).
- TIES: delta_i = theta_i - theta_base; per tensor, the k = max(1, int(density * n)) largest |delta|
  kept (mergekit's `magnitude`, no rescale; equal magnitudes at the threshold are kept in index
  order), then sign consensus: the majority sign is the sign of sum_i w_i delta_i (+ on a zero
  sum), and the result is base + (sum of the aligned w_i delta_i) / (sum of their w_i).
- DARE-TIES: keep delta with probability rho and rescale it by 1/rho, then the same consensus.
- DELLA: keep delta with probability p = min(1, |delta| * f32(rho / mean|delta|)) and rescale it by
  1/p, then the same consensus. (§8's definition, not mergekit's rank-based `della`.)

Arithmetic is float32 throughout, in the order mergekit's `GeneralizedTaskArithmeticMerge` does it
(delta, mask product, weight product, sum over sources, division, base + mixed), so TIES agrees
with mergekit bit for bit and DARE/DELLA do when mergekit is given the same masks
(tests/test_merge.py). The result is cast to the base's dtype (bf16 by round to nearest even, as
torch casts).

Randomness is counter based: element i of a tensor draws u = splitmix64(seed, i) / 2^64 (53 bits),
with seed = tensor_seed(label, method, base, source, key). The draws depend on nothing but the
element's index, so a merge is reproducible bit for bit whatever the block size, thread count or
order the tensors are visited in, and the draws cost a few instructions each (no sequential
generator state).
"""

from __future__ import annotations

import hashlib

import numba as nb
import numpy as np
from numba.core import types
from numba.extending import intrinsic, overload

# The merge calls these kernels from two threads at once (the merge pass and the next tensor's
# statistics): only a thread-safe layer (OpenMP or TBB) allows that; numba's own `workqueue` would
# abort on the second concurrent launch.
nb.config.THREADING_LAYER = 'threadsafe'

METHODS = ('soup', 'linear', 'ties', 'dare_ties', 'della')
TIES_FAMILY = ('ties', 'dare_ties', 'della')
CHUNK = 1 << 16  # elements per parallel work item; DELLA's mean|delta| is summed chunk by chunk in this order
KIND = {'ties': 0, 'dare_ties': 1, 'della': 2}


def tensor_seed(label: str, method: str, base: str, source: str, key: str) -> int:
    """A 63-bit seed from the merge label, method, base and source checkpoint names and tensor key."""
    h = hashlib.sha256('\x1f'.join([label, method, base, source, key]).encode()).digest()
    return int.from_bytes(h[:8], 'little') & ((1 << 63) - 1)


# -- per element -------------------------------------------------------------------------------


M32 = np.uint64(0xFFFFFFFF)


@nb.njit(inline='always')
def _mix32(x):
    """lowbias32 (a 32-bit bijection with full avalanche), on the low 32 bits of a uint64."""
    x = x ^ (x >> np.uint64(16))
    x = (x * np.uint64(0x7FEB352D)) & M32
    x = x ^ (x >> np.uint64(15))
    x = (x * np.uint64(0x846CA68B)) & M32
    return x ^ (x >> np.uint64(16))


@nb.njit(inline='always')
def uniform(seed, i):
    """Element i's draw in the stream `seed` (uint64s): two keyed rounds of lowbias32 over the
    index, the top 24 bits as a float32 in [0, 1). 32-bit arithmetic, so the compiler vectorises it."""
    x = _mix32((i & M32) ^ (seed & M32))
    x = _mix32(x ^ (seed >> np.uint64(32)) ^ (i >> np.uint64(32)))
    return np.float32(np.int32(x >> np.uint64(8))) * np.float32(1.0 / 16777216.0)


@intrinsic
def fma32(typingctx, a, b, c):  # noqa: ARG001
    """a * b + c rounded once (llvm.fma): mergekit's linear accumulates with torch's addcmul_, which
    is a fused multiply-add on CPUs that have one."""
    sig = types.float32(types.float32, types.float32, types.float32)

    def codegen(context, builder, signature, args):  # noqa: ARG001
        return builder.fma(*args)

    return sig, codegen


def decode(src, dst):  # noqa: ARG001 (typed by the overload below)
    """src (one chunk of stored values) -> dst (float32)."""


@overload(decode, inline='always')
def _decode(src, dst):
    if src.dtype == nb.types.uint16:  # bf16 bits: the float32 with the same top 16 bits

        def bf16(src, dst):
            bits = dst.view(np.uint32)
            for j in range(src.size):
                bits[j] = np.uint32(src[j]) << np.uint32(16)

        return bf16

    def f32(src, dst):
        for j in range(src.size):
            dst[j] = src[j]

    return f32


def encode(src, dst):  # noqa: ARG001
    """src (float32 chunk) -> dst (the stored dtype)."""


@overload(encode, inline='always')
def _encode(src, dst):
    if dst.dtype == nb.types.uint16:  # float32 -> bf16, round to nearest even; NaN -> 0x7FC0 (torch's cast)

        def bf16(src, dst):
            bits = src.view(np.uint32)
            for j in range(dst.size):
                b = bits[j]
                if (b & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000):
                    dst[j] = np.uint16(0x7FC0)
                else:
                    dst[j] = np.uint16((b + np.uint32(0x7FFF) + ((b >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16))

        return bf16

    def f32(src, dst):
        for j in range(dst.size):
            dst[j] = src[j]

    return f32


# -- over a block --------------------------------------------------------------------------------


def _chunks(n: int) -> int:
    return (n + CHUNK - 1) // CHUNK


@nb.njit(inline='always')
def _part(n, parts, t):
    """Part t of `parts` of the chunks of n elements, as an element range: every part starts on a
    chunk boundary, so a chunk's elements are always visited by one thread, in order."""
    nc = (n + CHUNK - 1) // CHUNK
    return min(n, (nc * t // parts) * CHUNK), min(n, (nc * (t + 1) // parts) * CHUNK)


@nb.njit(parallel=True, nogil=True, cache=True)
def linear_block(xs, weights, normalize, parts, out):
    """out = (sum_i w_i x_i) / sum_i w_i, over the rows of xs (one per checkpoint). `parts`: the
    number of threads (each takes a contiguous run of chunks), in every kernel here."""
    n = xs.shape[1]
    s = np.float32(0.0)
    for w in weights:
        s += w
    for t in nb.prange(parts):
        p0, p1 = _part(n, parts, t)
        x = np.empty(CHUNK, np.float32)
        acc = np.empty(CHUNK, np.float32)
        for lo in range(p0, p1, CHUNK):
            m = min(p1, lo + CHUNK) - lo
            acc[:m] = 0
            for r in range(xs.shape[0]):
                decode(xs[r, lo : lo + m], x[:m])
                w = weights[r]
                for j in range(m):
                    acc[j] = fma32(x[j], w, acc[j])
            if normalize and s != 0:
                for j in range(m):
                    acc[j] = acc[j] / s
            encode(acc[:m], out[lo : lo + m])


@nb.njit(inline='always')
def _abs_deltas(xs, s, lo, m, b, x):
    """x[:m] = the bits of |delta| of source s over elements lo .. lo + m (b: the decoded base)."""
    decode(xs[s + 1, lo : lo + m], x[:m])
    for j in range(m):
        x[j] = abs(x[j] - b[j])
    return x.view(np.uint32)


@nb.njit(parallel=True, nogil=True, cache=True)
def abs_delta_hist(xs, select, stride, hist):
    """Histograms of |delta| bits per source (rows 1.. of xs, row 0 the base), one per thread part,
    over every stride-th chunk. select[s] < 0: count by the top 16 bits (for non-negative floats the
    bits order as the values do); otherwise count the low 16 bits of the values whose top 16 bits
    equal select[s] (the second step of a radix select); select[s] > 0xFFFF: skip the source."""
    n = xs.shape[1]
    parts = hist.shape[0]
    for t in nb.prange(parts):
        p0, p1 = _part(n, parts, t)
        b = np.empty(CHUNK, np.float32)
        x = np.empty(CHUNK, np.float32)
        for lo in range(p0, p1, CHUNK * stride):
            m = min(p1, lo + CHUNK) - lo
            decode(xs[0, lo : lo + m], b[:m])
            for s in range(xs.shape[0] - 1):
                sel = select[s]
                if sel > 0xFFFF:
                    continue
                bits = _abs_deltas(xs, s, lo, m, b, x)
                for j in range(m):
                    top = bits[j] >> np.uint32(16)
                    if sel < 0:
                        hist[t, s, top] += 1
                    elif top == sel:
                        hist[t, s, bits[j] & np.uint32(0xFFFF)] += 1


@nb.njit(parallel=True, nogil=True, cache=True)
def abs_delta_bracket(xs, first, bracket, above, kept, kept_chunk, fill):
    """Per source and thread part: how many |delta| have top 16 bits above bracket[s, 1] (above),
    and the bits and chunk of those with top 16 bits in bracket[s, 0] .. bracket[s, 1] (kept, while
    fill < its room; past it fill goes on counting, so the caller sees the overflow)."""
    n = xs.shape[1]
    parts = above.shape[0]
    room = kept.shape[2]
    for t in nb.prange(parts):
        p0, p1 = _part(n, parts, t)
        b = np.empty(CHUNK, np.float32)
        x = np.empty(CHUNK, np.float32)
        for lo in range(p0, p1, CHUNK):
            m = min(p1, lo + CHUNK) - lo
            chunk = (first + lo) // CHUNK
            decode(xs[0, lo : lo + m], b[:m])
            for s in range(xs.shape[0] - 1):
                bits = _abs_deltas(xs, s, lo, m, b, x)
                b0 = np.uint32(bracket[s, 0] << 16)
                b1 = np.uint32(((bracket[s, 1] + 1) << 16) - 1)
                width = np.uint32(b1 - b0)
                k = 0
                for j in range(m):
                    if bits[j] > b1:
                        k += 1
                above[t, s] += k
                f = fill[t, s]
                ks = kept[t, s]
                cs = kept_chunk[t, s]
                for j in range(m):
                    if np.uint32(bits[j] - b0) <= width:  # b0 <= bits <= b1, one unsigned compare
                        if f < room:
                            ks[f] = bits[j]
                            cs[f] = chunk
                        f += 1
                fill[t, s] = f


@nb.njit(parallel=True, nogil=True, cache=True)
def abs_delta_sums(xs, parts, sums):
    """sums[s, c] = sum of |delta| over chunk c (float64, in index order), per source."""
    n = xs.shape[1]
    for t in nb.prange(parts):
        p0, p1 = _part(n, parts, t)
        b = np.empty(CHUNK, np.float32)
        x = np.empty(CHUNK, np.float32)
        for lo in range(p0, p1, CHUNK):
            m = min(p1, lo + CHUNK) - lo
            decode(xs[0, lo : lo + m], b[:m])
            for s in range(xs.shape[0] - 1):
                decode(xs[s + 1, lo : lo + m], x[:m])
                acc = 0.0
                for j in range(m):
                    acc += abs(np.float64(x[j] - b[j]))
                sums[s, lo // CHUNK] = acc


@nb.njit(parallel=True, nogil=True, cache=True)
def count_equal(xs, thresh, quota, parts, counts):
    """counts[s, c] = how many |delta| bits in chunk c of the block equal thresh[s] (sources with
    quota >= 0)."""
    n = xs.shape[1]
    for t in nb.prange(parts):
        p0, p1 = _part(n, parts, t)
        b = np.empty(CHUNK, np.float32)
        x = np.empty(CHUNK, np.float32)
        for lo in range(p0, p1, CHUNK):
            m = min(p1, lo + CHUNK) - lo
            decode(xs[0, lo : lo + m], b[:m])
            for s in range(xs.shape[0] - 1):
                if quota[s] < 0:
                    continue
                bits = _abs_deltas(xs, s, lo, m, b, x)
                k = 0
                for j in range(m):
                    k += bits[j] == thresh[s]
                counts[s, lo // CHUNK] = k


@nb.njit(inline='always')
def _sparsify(x, row, kind, first, lo, m, w, seed, rho, scale, th, quota, rank, rank_end):
    """row[j] = w * (the kept, rescaled delta x[j]) for one source over one chunk. TIES: rank ..
    rank_end number the chunk's values equal to the threshold among the tensor's."""
    zero = np.float32(0.0)
    one = np.float32(1.0)
    bits = x.view(np.uint32)
    if kind == 0:
        if quota < 0 or rank >= quota or rank_end <= quota:  # the chunk keeps all or none of its equal values
            if quota >= 0 and rank >= quota:
                th = th + np.uint32(1)  # none: keep what is above
            for j in range(m):
                keep = (bits[j] & np.uint32(0x7FFFFFFF)) >= th
                row[j] = (x[j] * (one if keep else zero)) * w
        else:
            for j in range(m):
                a = bits[j] & np.uint32(0x7FFFFFFF)
                eq = a == th
                keep = (a > th) or (eq and rank < quota)
                rank += eq
                row[j] = (x[j] * (one if keep else zero)) * w
    elif kind == 1:
        rho32 = np.float32(rho)
        for j in range(m):
            u = uniform(seed, np.uint64(first + lo + j))
            row[j] = (x[j] / rho32 if u < rho32 else zero) * w
    else:
        for j in range(m):
            p = min(abs(x[j]) * scale, one)
            u = uniform(seed, np.uint64(first + lo + j))
            row[j] = (x[j] / p if (u < p and p > zero) else zero) * w
    return rank


@nb.njit(parallel=True, nogil=True, cache=True)
def ties_family_block(xs, kind, first, weights, seeds, rho, scale, thresh, quota, rank, parts, out):
    """The TIES-family merge of one block (elements first .. first + n of the tensor).

    xs: base then sources, stored values; per source: weights (float32), seeds (uint64), scale
    (float32, DELLA's rho / mean|delta|; NaN when the mean is not usable: nothing kept). TIES (kind
    0): keep |delta| bits > thresh[s], and of those equal to it the first quota[s] in index order
    (quota < 0: all of them); rank[s, c]: how many values equal to it come before chunk c of the
    block in the tensor (c up to the block's chunk count, inclusive)."""
    n = xs.shape[1]
    S = xs.shape[0] - 1
    zero = np.float32(0.0)
    one = np.float32(1.0)
    for t in nb.prange(parts):
        p0, p1 = _part(n, parts, t)
        b = np.empty(CHUNK, np.float32)
        x = np.empty(CHUNK, np.float32)
        dw = np.empty((S, CHUNK), np.float32)
        total = np.empty(CHUNK, np.float32)
        mixed = np.empty(CHUNK, np.float32)
        div = np.empty(CHUNK, np.float32)
        for lo in range(p0, p1, CHUNK):
            m = min(p1, lo + CHUNK) - lo
            decode(xs[0, lo : lo + m], b[:m])
            for s in range(S):
                decode(xs[s + 1, lo : lo + m], x[:m])
                for j in range(m):
                    x[j] = x[j] - b[j]
                sc = scale[s]
                if kind == 2 and not np.isfinite(sc):
                    dw[s, :m] = zero
                    continue
                _sparsify(
                    x,
                    dw[s],
                    kind,
                    first,
                    lo,
                    m,
                    weights[s],
                    seeds[s],
                    rho,
                    sc,
                    thresh[s],
                    quota[s],
                    rank[s, lo // CHUNK],
                    rank[s, lo // CHUNK + 1],
                )
            # sign consensus, in mergekit's order: total = sum_s w delta; mixed = sum_s of the
            # aligned w delta; divisor = sum_s of the aligned w
            total[:m] = dw[0, :m]
            for s in range(1, S):
                for j in range(m):
                    total[j] = total[j] + dw[s, j]
            for s in range(S):
                w = weights[s]
                for j in range(m):
                    v = dw[s, j]
                    pos = total[j] >= zero
                    agree = one if ((v > zero and pos) or (v < zero and not pos)) else zero
                    if s == 0:
                        mixed[j] = v * agree
                        div[j] = w * agree
                    else:
                        mixed[j] = mixed[j] + v * agree
                        div[j] = div[j] + w * agree
            for j in range(m):
                d = div[j]
                b[j] = b[j] + mixed[j] / (one if d == zero else d)
            encode(b[:m], out[lo : lo + m])
