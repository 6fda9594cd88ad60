"""Merge checkpoints (docs/protocol.md §8): uniform soup, linear, TIES, DARE-TIES, DELLA.

    python -m chorus_train merge --method dare_ties --base stage0 \\
        stage0=ckpts/stage0 stage1=ckpts/stage1 stage2=ckpts/stage2 --out merged/dare_ties_base0

Streams tensor by tensor and, inside a tensor, block by block (`BLOCK_ELEMS` elements of every
input at a time, read with pread into two reused buffers: the next block is read while the
compiled kernels of merge_methods merge this one on every core): memory stays at a few blocks
whatever the model size, and the time is close to that of reading the inputs. Statistics a
method needs over a whole tensor first (TIES's k-th largest |delta| by a two-step radix select,
DELLA's mean |delta|) are extra passes over that tensor, read again from the page cache.
Inputs are (sharded) safetensors checkpoints; the output is written shard by shard as it is
computed (the header of each shard is known up front, since the output has the base's tensor
names, shapes and dtypes). Any checkpoint can be the base: it gives the deltas' reference (TIES
family), the output dtypes, the non-float tensors (copied) and the config/tokenizer files
(copied), so the result loads with `AutoModelForCausalLM.from_pretrained`.

Reproducible: random draws are counted per element and seeded per (label, method, base, source,
tensor key); the same inputs and arguments give byte-identical output files.
"""

from __future__ import annotations

import argparse
import errno
import json
import math
import os
import shutil
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import merge_methods as mm

BLOCK_ELEMS = 1 << 24  # elements per block and input (a multiple of merge_methods.CHUNK)
DEFAULT_SHARD_BYTES = 5 * 10**9

# stored dtype -> the numpy dtype its bytes are read as (bf16 as its 16-bit patterns)
NP_DTYPES = {
    'F64': np.float64,
    'F32': np.float32,
    'F16': np.float16,
    'BF16': np.uint16,
    'I64': np.int64,
    'I32': np.int32,
    'I16': np.int16,
    'I8': np.int8,
    'U8': np.uint8,
    'BOOL': np.uint8,
    'F8_E4M3': np.uint8,
    'F8_E5M2': np.uint8,
}
FLOAT_ST = {'F64', 'F32', 'F16', 'BF16'}  # merged; other dtypes (integers, fp8) are copied from the base
KERNEL_ST = {'F32', 'BF16'}  # the kernels read and write these directly; F16/F64 go through float32
ITEMSIZE = {k: np.dtype(v).itemsize for k, v in NP_DTYPES.items()}
WEIGHT_SUFFIXES = ('.safetensors', '.bin', '.pt', '.pth', '.gguf', '.onnx', '.onnx_data')
WEIGHT_INDEXES = ('model.safetensors.index.json', 'pytorch_model.bin.index.json')


def _header(path: Path) -> tuple[dict, int]:
    """The safetensors header and the byte offset where the tensor data starts."""
    size = path.stat().st_size
    with open(path, 'rb') as f:
        n = int.from_bytes(f.read(8), 'little')
        try:
            if not 2 <= n <= min(size - 8, 100 << 20):
                raise ValueError(f'header length {n} in a file of {size} bytes')
            h = json.loads(f.read(n))
            end = max((v['data_offsets'][1] for k, v in h.items() if k != '__metadata__'), default=0)
        except (ValueError, KeyError, TypeError, IndexError) as e:
            raise SystemExit(f'{path}: not a readable safetensors file ({e}); re-export or re-download the checkpoint') from None
    if 8 + n + end > size:
        raise SystemExit(f'{path}: {size} bytes, but its header needs {8 + n + end} (a truncated checkpoint?)')
    h.pop('__metadata__', None)
    return h, 8 + n


@dataclass(frozen=True)
class TensorInfo:
    dtype: str
    shape: tuple[int, ...]
    path: Path
    offset: int  # absolute byte offset of the tensor's data in its file

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


class Reader:
    """Tensor metadata and element-range reads over a (sharded) safetensors checkpoint. Reads go
    through pread into the caller's buffer: no file mapping, so file pages never count in the
    process's resident set."""

    def __init__(self, ckpt: Path):
        self.dir = Path(ckpt)
        index = self.dir / 'model.safetensors.index.json'
        if index.exists():
            files = list(dict.fromkeys(json.loads(index.read_text())['weight_map'].values()))
        elif (self.dir / 'model.safetensors').exists():
            files = ['model.safetensors']
        else:
            files = sorted(p.name for p in self.dir.glob('*.safetensors'))
        if not files:
            raise SystemExit(f'{self.dir}: no safetensors weights (model.safetensors or an index)')
        self.meta: dict[str, TensorInfo] = {}
        for name in files:
            p = self.dir / name
            if not p.exists():
                raise SystemExit(f'{self.dir}: missing weight file {name}')
            header, start = _header(p)
            for k, v in header.items():
                if v['dtype'] not in NP_DTYPES:
                    raise SystemExit(f'{p}: tensor {k} has dtype {v["dtype"]}, which the merge does not read')
                self.meta[k] = TensorInfo(v['dtype'], tuple(v['shape']), p, start + v['data_offsets'][0])
        self._fds: dict[Path, int] = {}
        self._lock = threading.Lock()

    def keys(self) -> list[str]:
        return list(self.meta)

    def _fd(self, path: Path) -> int:
        with self._lock:  # reads come from several threads
            fd = self._fds.get(path)
            if fd is None:
                fd = self._fds[path] = os.open(path, os.O_RDONLY)
            return fd

    def read_into(self, key: str, start: int, dst: np.ndarray) -> None:
        """Elements start .. start + dst.size of tensor `key` into dst (of the stored dtype)."""
        t = self.meta[key]
        fd = self._fd(t.path)
        view = memoryview(dst.reshape(-1).view(np.uint8))
        pos = t.offset + start * ITEMSIZE[t.dtype]
        done = 0
        while done < len(view):
            n = os.preadv(fd, [view[done:]], pos + done)
            if n <= 0:
                raise SystemExit(f'{t.path}: ends inside tensor {key} (a truncated checkpoint?)')
            done += n

    def close(self) -> None:
        with self._lock:
            for fd in self._fds.values():
                os.close(fd)
            self._fds.clear()


def blocks(n: int) -> list[tuple[int, int]]:
    """(first element, count) of each block of a tensor of n elements (one block for an empty one)."""
    return [(s, min(BLOCK_ELEMS, n - s)) for s in range(0, n, BLOCK_ELEMS)] or [(0, 0)]


class BlockStream:
    """The blocks of one tensor from every input, stacked as rows (base first): block k + 1 is read
    on a second thread while the caller merges block k. Two buffers, reused for every tensor."""

    def __init__(self, readers: list[Reader]):
        self.readers = readers
        self.pool = ThreadPoolExecutor(max_workers=1)
        self.bufs: dict[str, list[np.ndarray]] = {}

    def _buf(self, dtype: str, i: int) -> np.ndarray:
        if dtype not in self.bufs:
            m = len(self.readers)
            self.bufs[dtype] = [np.empty(m * BLOCK_ELEMS, NP_DTYPES[dtype]) for _ in range(2)]
        return self.bufs[dtype][i]

    def _read(self, key: str, dtype: str, first: int, count: int, i: int) -> np.ndarray:
        xs = self._buf(dtype, i)[: len(self.readers) * count].reshape(len(self.readers), count)
        for r, row in zip(self.readers, xs, strict=True):
            r.read_into(key, first, row)
        return xs

    def __call__(self, key: str, dtype: str, n: int):
        """Yields (first, rows) for each block of tensor `key` (all inputs stored as `dtype`)."""
        bl = blocks(n)
        fut = self.pool.submit(self._read, key, dtype, *bl[0], 0)
        for k, (first, _count) in enumerate(bl):
            xs = fut.result()
            if k + 1 < len(bl):
                fut = self.pool.submit(self._read, key, dtype, *bl[k + 1], (k + 1) % 2)
            yield first, xs

    def close(self) -> None:
        self.pool.shutdown()
        for r in self.readers:
            r.close()


class ShardWriter:
    """Writes safetensors shards incrementally: the layout (names, dtypes, shapes) is fixed first,
    then tensor bytes are appended in order, block by block."""

    def __init__(self, out: Path, layout: list[tuple[str, str, tuple[int, ...]]], shard_bytes: int, metadata: dict | None = None):
        self.out = out
        shards: list[list[tuple[str, str, tuple[int, ...]]]] = [[]]
        size = 0
        for k, dt, shape in layout:
            n = math.prod(shape) * ITEMSIZE[dt]
            if shards[-1] and size + n > shard_bytes:
                shards.append([])
                size = 0
            shards[-1].append((k, dt, shape))
            size += n
        self.n = len(shards)
        self.names = ['model.safetensors'] if self.n == 1 else [f'model-{i + 1:05d}-of-{self.n:05d}.safetensors' for i in range(self.n)]
        self.plan: list[tuple[int, str, int]] = []  # (shard, key, nbytes) in write order
        self.headers = []
        self.weight_map = {}
        for i, sh in enumerate(shards):
            header: dict = {'__metadata__': {'format': 'pt', **(metadata or {})}}
            off = 0
            for k, dt, shape in sh:
                n = math.prod(shape) * ITEMSIZE[dt]
                header[k] = {'dtype': dt, 'shape': list(shape), 'data_offsets': [off, off + n]}
                self.plan.append((i, k, n))
                self.weight_map[k] = self.names[i]
                off += n
            self.headers.append(header)
        self.total_size = sum(n for _, _, n in self.plan)
        self._pos = 0  # index into plan
        self._left = self.plan[0][2] if self.plan else 0
        self._shard = -1
        self._f = None

    def _open_shard(self, i: int) -> None:
        if self._f:
            self._f.close()
        self._shard = i
        h = json.dumps(self.headers[i], separators=(',', ':')).encode()
        h += b' ' * ((8 - len(h) % 8) % 8)
        self._f = open(self.out / (self.names[i] + '.part'), 'wb')
        self._f.write(len(h).to_bytes(8, 'little'))
        self._f.write(h)

    def write(self, key: str, block: np.ndarray) -> None:
        shard, k, _ = self.plan[self._pos]
        if k != key:
            raise RuntimeError(f'writer expected {k}, got {key}')
        if shard != self._shard:
            self._open_shard(shard)
        raw = np.ascontiguousarray(block).reshape(-1).view(np.uint8)
        if raw.nbytes > self._left:
            raise RuntimeError(f'{key}: more bytes than its shape holds')
        self._f.write(raw.data)
        self._left -= raw.nbytes
        if self._left == 0:
            self._pos += 1
            if self._pos < len(self.plan):
                self._left = self.plan[self._pos][2]

    def close(self) -> None:
        if self._pos != len(self.plan):
            raise RuntimeError(f'writer: {len(self.plan) - self._pos} tensors not written')
        if self._f:
            self._f.close()
        for name in self.names:
            (self.out / (name + '.part')).rename(self.out / name)
        if self.n > 1:
            (self.out / 'model.safetensors.index.json').write_text(
                json.dumps({'metadata': {'total_size': self.total_size}, 'weight_map': self.weight_map}, indent=2) + '\n'
            )


@dataclass
class MergeSpec:
    method: str  # soup | linear | ties | dare_ties | della
    models: list[tuple[str, Path]]  # (name, path); names enter the seeds
    base: str | None = None  # a name from models (default: the first)
    weights: list[float] | None = None  # linear / TIES family (per model; base's ignored for TIES)
    density: float = 0.5
    label: str = 'merge'
    shard_bytes: int = DEFAULT_SHARD_BYTES
    extra: dict = field(default_factory=dict)

    def base_name(self) -> str:
        return self.base or self.models[0][0]


def _check_layout(readers: dict[str, Reader], base: str) -> list[tuple[str, str, tuple[int, ...]]]:
    b = readers[base]
    layout = []
    for k in b.keys():
        dt, shape = b.meta[k].dtype, b.meta[k].shape
        for name, r in readers.items():
            if k not in r.meta:
                raise SystemExit(f'tensor {k} is in the base {base} but not in {name}')
            if r.meta[k].shape != shape:
                raise SystemExit(f'tensor {k}: shape {list(shape)} in {base}, {list(r.meta[k].shape)} in {name}')
            if r.meta[k].dtype.startswith('F8') or (dt in FLOAT_ST) != (r.meta[k].dtype in FLOAT_ST):
                raise SystemExit(
                    f'tensor {k}: {dt} in {base}, {r.meta[k].dtype} in {name}: the merge reads float tensors in '
                    'F32/BF16/F16/F64 (fp8 checkpoints: convert them to bf16 first)'
                )
        layout.append((k, dt, shape))
    return layout


def _as_float32(raw: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == 'BF16':
        return (raw.astype(np.uint32) << np.uint32(16)).view(np.float32)
    return raw.astype(np.float32)


def _from_float32(v: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == 'BF16':
        out = np.empty(v.size, np.uint16)
        mm.encode_block(v, out)
        return out
    return v.astype(NP_DTYPES[dtype])


TIES_KEEP_MAX = 1 << 24  # values kept around TIES's threshold per tensor and source, at most (64 MiB)


@dataclass
class Prepared:
    """What ties_family_block needs of a tensor beyond its blocks."""

    seeds: np.ndarray
    rho: float
    scale: np.ndarray
    thresh: np.ndarray
    quota: np.ndarray
    equal: list | None = None  # TIES: per source, how many values equal the threshold per chunk (None: counted per block)
    taken: np.ndarray | None = None  # TIES, counted per block: equal values in the blocks before

    def ranks(self, xs: np.ndarray, first: int, parts: int) -> np.ndarray:
        """rank[s, c]: the values equal to source s's threshold before chunk c of this block (and
        rank[s, nc]: before the next block)."""
        S = len(self.quota)
        nc = (xs.shape[1] + mm.CHUNK - 1) // mm.CHUNK
        rank = np.zeros((S, nc + 1), np.int64)
        if not (self.quota >= 0).any():
            return rank
        c0 = first // mm.CHUNK
        todo = self.quota.copy()
        for s in range(S):
            if self.equal is not None and self.equal[s] is not None:
                before = int(self.equal[s][:c0].sum())
                rank[s] = before + np.concatenate(([0], np.cumsum(self.equal[s][c0 : c0 + nc])))
                todo[s] = -1
        if (todo >= 0).any():
            if self.taken is None:
                self.taken = np.zeros(S, np.int64)
            counts = np.zeros((S, nc), np.int64)
            mm.count_equal(xs, self.thresh, todo, parts, counts)
            for s in np.nonzero(todo >= 0)[0]:
                rank[s] = self.taken[s] + np.concatenate(([0], np.cumsum(counts[s])))
                self.taken[s] += counts[s].sum()
        return rank


class BackgroundWriter:
    """Writes blocks on a thread of its own, in order, so that merging the next block overlaps
    the write of this one. `slot`: which of two reused buffers a block is in; wait(slot) returns
    once the last write from that buffer is done."""

    def __init__(self, w: ShardWriter):
        self.w = w
        self.pool = ThreadPoolExecutor(max_workers=1)
        self.last: list = [None, None]
        self.futures: list = []

    def write(self, key: str, block: np.ndarray, slot: int | None = None) -> None:
        f = self.pool.submit(self.w.write, key, block)
        self.futures.append(f)
        if slot is not None:
            self.last[slot] = f
        if len(self.futures) > 64:  # surface a failed write early; keep the list short
            for g in self.futures[:-8]:
                g.result()
            self.futures = self.futures[-8:]

    def wait(self, slot: int) -> None:
        if self.last[slot] is not None:
            self.last[slot].result()

    def close(self) -> None:
        for f in self.futures:
            f.result()
        self.pool.shutdown()
        self.w.close()


class TensorMerge:
    """Merges one float tensor key by key: the passes a method needs, block by block."""

    def __init__(self, spec: MergeSpec, readers: dict[str, Reader], order: list[str], base: str, weights: list[float]):
        self.spec, self.readers, self.order, self.base = spec, readers, order, base
        self.stream = BlockStream([readers[n] for n in order])  # the merge pass
        self.stats = BlockStream([readers[n] for n in order])  # whole-tensor passes, one tensor ahead
        self.sources = order[1:]
        w = dict(zip([n for n, _ in spec.models], weights, strict=True))
        self.weights = np.array([w[n] for n in order], np.float32)  # linear: every input's
        self.src_w = self.weights[1:]  # TIES family: the sources'
        self.outs = {dt: [np.empty(BLOCK_ELEMS, dt) for _ in range(2)] for dt in (np.uint16, np.float32)}
        self.turn = 0
        self.parts = mm.nb.get_num_threads()

    def rows(self, key: str, dtypes: list[str], n: int, stream: BlockStream):
        """(first, rows) per block: stored values when every input has the base's kernel dtype,
        else float32."""
        if len(set(dtypes)) == 1 and dtypes[0] in KERNEL_ST:
            yield from stream(key, dtypes[0], n)
            return
        for first, count in blocks(n):
            rows = np.empty((len(self.order), count), np.float32)
            for r, name, dt in zip(rows, self.order, dtypes, strict=True):
                raw = np.empty(count, NP_DTYPES[dt])
                self.readers[name].read_into(key, first, raw)
                r[:] = _as_float32(raw, dt)
            yield first, rows

    def dtypes(self, key: str) -> list[str]:
        return [self.readers[n].meta[key].dtype for n in self.order]

    def prepare(self, key: str) -> Prepared | None:
        """What the merge of tensor `key` needs first (TIES family; None for linear): run on a
        thread while the tensor before is merged, so its reads from disk overlap that merge."""
        if self.spec.method not in mm.TIES_FAMILY:
            return None
        return self._prepare(key, self.dtypes(key), self.readers[self.base].meta[key].numel)

    def __call__(self, key: str, t: TensorInfo, w: BackgroundWriter, prep: Prepared | None) -> None:
        dtypes = self.dtypes(key)
        direct = len(set(dtypes)) == 1 and t.dtype in KERNEL_ST
        method = self.spec.method
        for first, xs in self.rows(key, dtypes, t.numel, self.stream):
            if direct:  # the output buffer the write before last used (the writer has finished with it)
                self.turn ^= 1
                w.wait(self.turn)
                out = self.outs[np.uint16 if t.dtype == 'BF16' else np.float32][self.turn][: xs.shape[1]]
            else:
                out = np.empty(xs.shape[1], np.float32)
            if prep is None:
                mm.linear_block(xs, self.weights, True, self.parts, out)
            else:
                rank = prep.ranks(xs, first, self.parts)
                mm.ties_family_block(
                    xs, mm.KIND[method], first, self.src_w, prep.seeds, prep.rho, prep.scale, prep.thresh, prep.quota, rank, self.parts, out
                )
            w.write(key, out if direct else _from_float32(out, t.dtype), self.turn)

    def _prepare(self, key: str, dtypes: list[str], n: int) -> Prepared:
        """The per-source arguments of ties_family_block after the whole-tensor passes."""
        S = len(self.sources)
        p = Prepared(
            seeds=np.array([mm.tensor_seed(self.spec.label, self.spec.method, self.base, s, key) for s in self.sources], np.uint64),
            rho=float(self.spec.density),
            scale=np.full(S, np.nan, np.float32),
            thresh=np.zeros(S, np.uint32),
            quota=np.full(S, -1, np.int64),
        )
        if self.spec.method == 'della':
            total = np.zeros(S, np.float64)
            for _first, xs in self.rows(key, dtypes, n, self.stats):
                sums = np.zeros((S, (xs.shape[1] + mm.CHUNK - 1) // mm.CHUNK), np.float64)
                mm.abs_delta_sums(xs, self.parts, sums)
                for s in range(S):
                    for v in sums[s]:  # in index order: the sum is defined by it
                        total[s] += v
            for s in range(S):
                mean = total[s] / max(1, n)
                if mean > 0 and math.isfinite(mean):
                    p.scale[s] = np.float32(p.rho / mean)
        if self.spec.method == 'ties' and p.rho < 1 and n > 0:
            self._ties_threshold(key, dtypes, n, max(1, int(p.rho * n)), p)
        return p

    def _ties_threshold(self, key: str, dtypes: list[str], n: int, k: int, p: Prepared) -> None:
        """Per source, the bits of the k-th largest |delta| (p.thresh) and how many of the values
        equal to it are kept (p.quota, -1: all), by a radix select on the bits (for non-negative
        floats they order as the values do). One pass: a histogram of the top 16 bits of a sample
        of the first block gives a bracket of bins around the k-th; the pass counts the values
        above the bracket and keeps those in it, with their chunk; the threshold is then found
        among the kept values, with where the equal ones lie (p.equal). Should the bracket miss
        (a first block unlike the rest) or overflow, two more passes count the top 16 bits and
        then the low 16 bits of the k-th bin."""
        S, parts = len(self.sources), self.parts
        bracket = kept = kept_chunk = None
        above = np.zeros((parts, S), np.int64)
        fill = np.zeros((parts, S), np.int64)
        for first, xs in self.rows(key, dtypes, n, self.stats):
            if bracket is None:
                bracket, room = self._bracket(xs, n, k)
                kept, kept_chunk = np.empty((parts, S, room), np.uint32), np.empty((parts, S, room), np.int32)
            mm.abs_delta_bracket(xs, first, bracket, above, kept, kept_chunk, fill)
        nc = (n + mm.CHUNK - 1) // mm.CHUNK
        p.equal = [None] * S
        missed = []
        for s in range(S):
            over = int(above[:, s].sum())
            if not (over < k <= over + int(fill[:, s].sum())) or (fill[:, s] > kept.shape[2]).any():
                missed.append(s)
                continue
            vals = np.concatenate([kept[t, s, : fill[t, s]] for t in range(parts)])
            chunks = np.concatenate([kept_chunk[t, s, : fill[t, s]] for t in range(parts)])
            part = np.partition(vals, vals.size - (k - over))  # the (k - over)-th largest kept value, in place
            th = part[vals.size - (k - over)]
            more = int((vals > th).sum())
            equal = vals == th
            self._set_threshold(p, s, th, k - over - more, int(equal.sum()))
            if p.quota[s] >= 0:
                p.equal[s] = np.bincount(chunks[equal], minlength=nc)
        if missed:
            self._ties_threshold_by_histograms(key, dtypes, n, k, p, missed)

    def _bracket(self, xs: np.ndarray, n: int, k: int) -> tuple[np.ndarray, int]:
        """From a sample of the first block (every 8th chunk; all of a small one): per source the
        top-16-bit bins around the estimated k-th largest |delta|, and room for the values they
        will hold (per thread part)."""
        S, parts, count = len(self.sources), self.parts, xs.shape[1]
        stride = 8 if count >= 64 * mm.CHUNK else 1
        h = np.zeros((parts, S, 1 << 16), np.int64)
        mm.abs_delta_hist(xs, np.full(S, -1, np.int64), stride, h)
        h = h.sum(axis=0)
        seen = max(1, int(h[0].sum()))
        bracket = np.zeros((S, 2), np.int64)
        expect = 0
        for s in range(S):
            est, _ = _kth_bin(h[s], max(1, min(seen, round(k * seen / n))))
            bracket[s] = (max(0, est - 1), min(0xFFFF, est + 1))
            expect = max(expect, int(h[s, bracket[s, 0] : bracket[s, 1] + 1].sum()) * n // seen)
        return bracket, min(expect * 3 // 2 // parts + 4096, TIES_KEEP_MAX // parts)

    def _ties_threshold_by_histograms(self, key: str, dtypes: list[str], n: int, k: int, p: Prepared, sources: list[int]) -> None:
        """The exact radix select in two passes (top 16 bits, then the low 16 bits of the k-th
        bin); the values equal to the threshold are then counted block by block in the merge."""
        S, parts = len(self.sources), self.parts
        skip = np.full(S, 1 << 17, np.int64)  # above 0xFFFF: the kernel skips the source
        select = skip.copy()
        select[sources] = -1
        hist = np.zeros((parts, S, 1 << 16), np.int64)
        for _first, xs in self.rows(key, dtypes, n, self.stats):
            mm.abs_delta_hist(xs, select, 1, hist)
        hist = hist.sum(axis=0)
        over = np.zeros(S, np.int64)
        for s in sources:
            select[s], over[s] = _kth_bin(hist[s], k)
        low = np.zeros((parts, S, 1 << 16), np.int64)
        for _first, xs in self.rows(key, dtypes, n, self.stats):
            mm.abs_delta_hist(xs, select, 1, low)
        low = low.sum(axis=0)
        for s in sources:
            lo, more = _kth_bin(low[s], k - over[s])
            self._set_threshold(p, s, (int(select[s]) << 16) | lo, k - over[s] - more, int(low[s][lo]))

    @staticmethod
    def _set_threshold(p: Prepared, s: int, th: int, need: int, equal: int) -> None:
        """Source s keeps |delta| bits above th and `need` of the `equal` values at th."""
        p.thresh[s] = th
        p.quota[s] = need if need < equal else -1

    def close(self) -> None:
        self.stream.close()
        self.stats.close()


def _kth_bin(hist: np.ndarray, k: int) -> tuple[int, int]:
    """The bin holding the k-th largest value (bins in increasing order) and the count above it."""
    down = np.cumsum(hist[::-1])  # values in the top i + 1 bins
    i = int(np.searchsorted(down, k))  # the first i with down[i] >= k
    if i >= hist.size:
        raise RuntimeError(f'k-th largest: k = {k} but only {int(down[-1])} values')
    return hist.size - 1 - i, int(down[i] - hist[hist.size - 1 - i])


def merge(spec: MergeSpec, out: Path, log=print) -> dict:
    """Run the merge; returns a summary (seconds, tensors, bytes)."""
    if spec.method not in mm.METHODS:
        raise SystemExit(f'unknown method {spec.method}; one of {", ".join(mm.METHODS)}')
    names = [n for n, _ in spec.models]
    if len(set(names)) != len(names):
        raise SystemExit(f'checkpoint names must be distinct: {names}')
    base = spec.base_name()
    if base not in names:
        raise SystemExit(f'base {base!r} is not one of {names}')
    weights = [1.0] * len(names) if spec.method == 'soup' else (list(spec.weights) if spec.weights else [1.0] * len(names))
    if len(weights) != len(names):
        raise SystemExit(f'{len(weights)} weights for {len(names)} checkpoints')
    if not 0 < spec.density <= 1:
        raise SystemExit('density must be in (0, 1]')
    t0 = time.time()
    readers = {n: Reader(p) for n, p in spec.models}
    layout = _check_layout(readers, base)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for p in out.glob('*.safetensors'):
        p.unlink()
    meta = {'chorus_merge': json.dumps({'method': spec.method, 'base': base, 'label': spec.label, 'density': spec.density})}
    w = ShardWriter(out, layout, spec.shard_bytes, meta)
    # linear: every checkpoint in the order given; TIES family: the base, then the sources
    order = names if spec.method not in mm.TIES_FAMILY else [base] + [n for n in names if n != base]
    tm = TensorMerge(spec, readers, order, base, weights)
    bw = BackgroundWriter(w)
    floats = [key for key, dt, _ in layout if dt in FLOAT_ST]
    after = dict(zip(floats, floats[1:], strict=False))
    ahead = ThreadPoolExecutor(max_workers=1)
    prepared = {floats[0]: ahead.submit(tm.prepare, floats[0])} if floats else {}
    try:
        for key, dt, _shape in layout:
            t = readers[base].meta[key]
            if dt in FLOAT_ST:
                if key in after:  # the next tensor's statistics, while this one is merged
                    prepared[after[key]] = ahead.submit(tm.prepare, after[key])
                tm(key, t, bw, prepared.pop(key).result())
                continue
            for first, count in blocks(t.numel):  # non-float tensors: copied from the base
                raw = np.empty(count, NP_DTYPES[dt])
                readers[base].read_into(key, first, raw)
                bw.write(key, raw)
        bw.close()
    except OSError as e:  # leave no half-written shard behind; a full disk says where and how much
        bw.pool.shutdown(cancel_futures=True)
        if w._f:
            w._f.close()
        for p in out.glob('*.safetensors.part'):
            p.unlink()
        if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            need = w.total_size / 1e9
            raise SystemExit(f'{out}: writing the merged checkpoint failed ({e}); it needs {need:.1f} GB free there') from None
        raise
    finally:
        ahead.shutdown(cancel_futures=True)
        tm.close()
        bw.pool.shutdown(cancel_futures=True)
    copy_side_files(readers[base].dir, out)
    info = {
        'method': spec.method,
        'base': base,
        'models': [[n, str(p)] for n, p in spec.models],
        'weights': weights,
        'density': spec.density,
        'label': spec.label,
        'seconds': round(time.time() - t0, 3),
        'tensors': len(layout),
        'bytes': w.total_size,
        'shards': w.n,
    }
    (out / 'chorus_merge.json').write_text(json.dumps(info, indent=2) + '\n')
    log(f'merged {len(layout)} tensors ({w.total_size / 1e9:.2f} GB, {w.n} shard(s)) with {spec.method} in {info["seconds"]} s -> {out}')
    return info


def copy_side_files(src: Path, dst: Path) -> None:
    """config, generation config, tokenizer and other small files of the base (not its weights)."""
    for p in src.iterdir():
        if p.is_file() and not p.name.endswith(WEIGHT_SUFFIXES) and p.name not in WEIGHT_INDEXES and p.name != 'chorus_merge.json':
            shutil.copyfile(p, dst / p.name)


def parse_models(items: list[str]) -> list[tuple[str, Path]]:
    """NAME=PATH or PATH (name: the directory name, made unique with #i)."""
    out: list[tuple[str, Path]] = []
    for _i, it in enumerate(items):
        if '=' in it and not Path(it).exists():
            n, p = it.split('=', 1)
        else:
            p = it
            n = Path(it).resolve().name
        out.append((n, Path(p)))
    seen: dict[str, int] = {}
    for n, _ in out:
        seen[n] = seen.get(n, 0) + 1
    return [(f'{n}#{i}' if seen[n] > 1 else n, p) for i, (n, p) in enumerate(out)]


def add_args(ap: argparse.ArgumentParser) -> None:
    ap.add_argument('models', nargs='*', help='checkpoints: NAME=DIR or DIR (the name enters the mask seeds)')
    ap.add_argument('--method', choices=mm.METHODS, default='soup')
    ap.add_argument('--base', default=None, help='name of the base checkpoint (default: the first)')
    ap.add_argument('--weights', default=None, help='comma list, one per checkpoint (linear, TIES family)')
    ap.add_argument('--density', type=float, default=0.5, help='rho (TIES family; §8: 0.5)')
    ap.add_argument('--label', default='merge', help='label hashed into the mask seeds')
    ap.add_argument('--shard-size', type=float, default=DEFAULT_SHARD_BYTES / 1e9, help='output shard size in GB')
    ap.add_argument('--out', type=Path, default=None)
    ap.add_argument('--config', type=Path, default=None, help='a recipe YAML (merge section) instead of the flags')


def spec_from_args(a: argparse.Namespace) -> tuple[MergeSpec, Path]:
    return (
        MergeSpec(
            method=a.method,
            models=parse_models(a.models),
            base=a.base,
            weights=[float(x) for x in a.weights.split(',')] if a.weights else None,
            density=a.density,
            label=a.label,
            shard_bytes=int(a.shard_size * 1e9),
        ),
        a.out,
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog='chorus-train merge', description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_args(ap)
    a = ap.parse_args(argv)
    if not a.models or a.out is None:
        ap.error('give the checkpoints and --out')
    spec, out = spec_from_args(a)
    merge(spec, out)


if __name__ == '__main__':
    main(sys.argv[1:])
