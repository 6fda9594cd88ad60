"""Merge checkpoints (docs/protocol.md §8): uniform soup, linear, TIES, DARE-TIES, DELLA.

    python -m chorus_train merge --method dare_ties --base stage0 \\
        stage0=ckpts/stage0 stage1=ckpts/stage1 stage2=ckpts/stage2 --out merged/dare_ties_base0

Streams tensor by tensor and, inside a large tensor, row block by row block (at most
`BLOCK_ELEMS` elements per block): memory stays at a few blocks per input, whatever the model
size. Inputs are (sharded) safetensors checkpoints read through `safe_open` slices; the output is
written shard by shard as it is computed (the header of each shard is known up front, since the
output has the base's tensor names, shapes and dtypes). Any checkpoint can be the base: it gives
the deltas' reference (TIES family), the output dtypes, the non-float tensors (copied) and the
config/tokenizer files (copied), so the result loads with `AutoModelForCausalLM.from_pretrained`.

Reproducible: random masks are seeded per (label, method, base, source, tensor key, block); the
same inputs and arguments give byte-identical output files.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors import safe_open

from . import merge_methods as mm

BLOCK_ELEMS = 1 << 23  # elements per row block (32 MiB in fp32); part of the seeding scheme
DEFAULT_SHARD_BYTES = 5 * 10**9

ST_DTYPES = {
    'F64': torch.float64,
    'F32': torch.float32,
    'F16': torch.float16,
    'BF16': torch.bfloat16,
    'I64': torch.int64,
    'I32': torch.int32,
    'I16': torch.int16,
    'I8': torch.int8,
    'U8': torch.uint8,
    'BOOL': torch.bool,
}
if hasattr(torch, 'float8_e4m3fn'):
    ST_DTYPES.update({'F8_E4M3': torch.float8_e4m3fn, 'F8_E5M2': torch.float8_e5m2})
FLOAT_ST = {'F64', 'F32', 'F16', 'BF16', 'F8_E4M3', 'F8_E5M2'}
ITEMSIZE = {'F64': 8, 'F32': 4, 'F16': 2, 'BF16': 2, 'I64': 8, 'I32': 4, 'I16': 2, 'I8': 1, 'U8': 1, 'BOOL': 1, 'F8_E4M3': 1, 'F8_E5M2': 1}
WEIGHT_SUFFIXES = ('.safetensors', '.bin', '.pt', '.pth', '.gguf', '.onnx', '.onnx_data')
WEIGHT_INDEXES = ('model.safetensors.index.json', 'pytorch_model.bin.index.json')


def _header(path: Path) -> dict:
    with open(path, 'rb') as f:
        n = int.from_bytes(f.read(8), 'little')
        h = json.loads(f.read(n))
    h.pop('__metadata__', None)
    return h


class Reader:
    """Tensor metadata and row-block reads over a (sharded) safetensors checkpoint."""

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
        self.meta: dict[str, tuple[str, tuple[int, ...], Path]] = {}
        for name in files:
            p = self.dir / name
            if not p.exists():
                raise SystemExit(f'{self.dir}: missing weight file {name}')
            for k, v in _header(p).items():
                self.meta[k] = (v['dtype'], tuple(v['shape']), p)

    def keys(self) -> list[str]:
        return list(self.meta)

    def rows(self, key: str, r0: int, r1: int) -> torch.Tensor:
        """Rows r0:r1 of a tensor. The file is mapped for this read only (the mapping is dropped
        on return), so file pages do not pile up in the process's resident set."""
        dt, shape, p = self.meta[key]
        with safe_open(str(p), framework='pt', device='cpu') as f:
            if len(shape) == 0:
                return f.get_tensor(key).clone()
            return f.get_slice(key)[r0:r1].clone()

    def full(self, key: str) -> torch.Tensor:
        dt, shape, p = self.meta[key]
        with safe_open(str(p), framework='pt', device='cpu') as f:
            return f.get_tensor(key).clone()


def row_blocks(shape: tuple[int, ...]) -> list[tuple[int, int]]:
    """Row ranges of at most BLOCK_ELEMS elements (one block for scalars, vectors and small tensors)."""
    if len(shape) == 0:
        return [(0, 0)]
    n = math.prod(shape)
    if n <= BLOCK_ELEMS or len(shape) == 1:
        return [(0, shape[0])]
    row = n // shape[0]
    per = max(1, BLOCK_ELEMS // row)
    return [(r, min(r + per, shape[0])) for r in range(0, shape[0], per)]


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

    def write(self, key: str, block: torch.Tensor) -> None:
        shard, k, _ = self.plan[self._pos]
        if k != key:
            raise RuntimeError(f'writer expected {k}, got {key}')
        if shard != self._shard:
            self._open_shard(shard)
        b = block.contiguous().reshape(-1)
        if b.dtype == torch.bool:
            b = b.to(torch.uint8)
        raw = b.view(torch.uint8).numpy() if b.numel() else b''
        n = len(raw) if isinstance(raw, bytes) else raw.nbytes
        if n > self._left:
            raise RuntimeError(f'{key}: more bytes than its shape holds')
        self._f.write(raw if isinstance(raw, bytes) else raw.data)
        self._left -= n
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
        dt, shape, _ = b.meta[k]
        for name, r in readers.items():
            if k not in r.meta:
                raise SystemExit(f'tensor {k} is in the base {base} but not in {name}')
            if r.meta[k][1] != shape:
                raise SystemExit(f'tensor {k}: shape {list(shape)} in {base}, {list(r.meta[k][1])} in {name}')
        layout.append((k, dt, shape))
    return layout


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
    if spec.method == 'soup':
        weights = [1.0] * len(names)
    else:
        weights = list(spec.weights) if spec.weights else [1.0] * len(names)
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
    sources = [n for n in names if n != base]
    src_w = [weights[names.index(n)] for n in sources]
    ties_family = spec.method in mm.SPARSIFY
    for key, dt, shape in layout:
        blocks = row_blocks(shape)
        if dt not in FLOAT_ST:  # non-float tensors: copied from the base
            for r0, r1 in blocks:
                w.write(key, readers[base].rows(key, r0, r1))
            continue
        out_dtype = ST_DTYPES[dt]
        if not ties_family:
            for r0, r1 in blocks:
                merged = mm.linear([readers[n].rows(key, r0, r1) for n in names], weights)
                w.write(key, merged.to(out_dtype))
            continue
        # per-tensor statistics that a block-by-block merge needs first
        stats: dict[str, float] = {}
        if spec.method == 'ties' and len(blocks) > 1 and spec.density < 1:
            for n in sources:
                d = readers[n].full(key).to(torch.float32).sub_(readers[base].full(key).to(torch.float32)).abs_()
                stats[n] = mm.magnitude_threshold(d, spec.density)
                del d
        if spec.method == 'della':
            for n in sources:
                s = 0.0
                for r0, r1 in blocks:
                    s += float(
                        (readers[n].rows(key, r0, r1).to(torch.float32) - readers[base].rows(key, r0, r1).to(torch.float32))
                        .abs()
                        .sum(dtype=torch.float64)
                    )
                stats[n] = s / max(1, math.prod(shape))
        for bi, (r0, r1) in enumerate(blocks):
            b = readers[base].rows(key, r0, r1).to(torch.float32)
            deltas = []
            for n in sources:
                d = readers[n].rows(key, r0, r1).to(torch.float32) - b
                if spec.method == 'ties':
                    if n in stats:
                        d = torch.where(d.abs() >= stats[n], d, torch.zeros((), dtype=d.dtype))
                    else:
                        d = mm.magnitude_mask(d, spec.density)
                else:
                    g = mm.generator(mm.tensor_seed(spec.label, spec.method, base, n, key, bi))
                    d = mm.dare(d, spec.density, g) if spec.method == 'dare_ties' else mm.della(d, spec.density, stats[n], g)
                deltas.append(d)
            merged = b.add_(mm.sign_consensus_mean(deltas, src_w)) if deltas else b
            w.write(key, merged.to(out_dtype))
    w.close()
    copy_side_files(readers[base].dir, out)
    info = {
        'method': spec.method,
        'base': base,
        'models': [[n, str(p)] for n, p in spec.models],
        'weights': weights,
        'density': spec.density,
        'label': spec.label,
        'block_elems': BLOCK_ELEMS,
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
