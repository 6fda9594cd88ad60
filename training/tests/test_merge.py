"""Merging: hand-computed method checks, equality with mergekit (linear, TIES), determinism,
streaming (sharded input and output, bounded memory), loadable output."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from chorus_train import merge as M
from chorus_train import merge_methods as mm


def load_all(d: Path) -> dict[str, torch.Tensor]:
    out = {}
    for p in sorted(d.glob('*.safetensors')):
        out.update(load_file(str(p)))
    return out


def digest(d: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(d.glob('*.safetensors')):
        h.update(p.read_bytes())
    return h.hexdigest()


def _block(kind: int, base, sources, rho=0.5, scale=None, thresh=0, quota=-1, weights=None) -> np.ndarray:
    """ties_family_block on float32 rows (base, sources...) of one small block."""
    xs = np.stack([np.asarray(base, np.float32), *[np.asarray(x, np.float32) for x in sources]])
    S = len(sources)
    out = np.empty(xs.shape[1], np.float32)
    mm.ties_family_block(
        xs,
        kind,
        0,
        np.asarray(weights or [1.0] * S, np.float32),
        np.arange(1, S + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15),
        rho,
        np.asarray(scale if scale is not None else [np.nan] * S, np.float32),
        np.full(S, thresh, np.uint32),
        np.full(S, quota, np.int64),
        np.array([[0, xs.shape[1]]] * S, np.int64),  # one chunk, every equal value numbered in it
        2,
        out,
    )
    return out


def test_methods_hand_computed():
    d1 = [1.0, -2.0, 0.0, 3.0]
    d2 = [3.0, 1.0, 0.0, -1.0]
    # sign consensus (every delta kept: threshold 0): signs of the sums (+, -, +0, +); the aligned
    # non-zero deltas averaged
    assert _block(0, [0.0] * 4, [d1, d2]).tolist() == [2.0, -2.0, 0.0, 3.0]
    # deltas are taken from the base: here (0, -3, -1, 2) and (2, 0, -1, -2), sums (+, -, -, +0)
    assert _block(0, [1.0] * 4, [d1, d2]).tolist() == [3.0, -2.0, 0.0, 3.0]
    # weights: the weighted mean of the aligned deltas
    assert _block(0, [0.0] * 4, [d1, d2], weights=[3.0, 1.0]).tolist() == [1.5, -2.0, 0.0, 3.0]
    # TIES threshold: |delta| bits above it kept; of the equal ones, the first `quota` in index order
    two = int(np.float32(2.0).view(np.uint32))
    assert _block(0, [0.0] * 4, [[1.0, -2.0, 2.0, 3.0]], thresh=two, quota=1).tolist() == [0.0, -2.0, 0.0, 3.0]
    # linear
    out = np.empty(4, np.float32)
    mm.linear_block(np.array([d1, d2], np.float32), np.ones(2, np.float32), True, 2, out)
    assert out.tolist() == [2.0, -0.5, 0.0, 1.0]
    # DARE: kept entries are rescaled by 1/rho, the rest zero; the same seed, the same mask
    x = np.random.default_rng(0).standard_normal(100000).astype(np.float32)
    y = _block(1, np.zeros_like(x), [x])
    kept = y != 0
    assert np.array_equal(y[kept], x[kept] * 2)
    assert 0.49 < kept.mean() < 0.51
    assert np.array_equal(y, _block(1, np.zeros_like(x), [x]))
    # DELLA: p = min(1, |d| * rho / mean|d|); large entries always kept at scale 1/p = 1
    d = np.array([10.0, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1], np.float32)
    scale = np.float32(0.5 / np.abs(d).mean())
    out = _block(2, np.zeros_like(d), [d], scale=[scale])
    assert out[0] == 10.0
    for v in out[1:]:
        assert v == 0.0 or v == pytest.approx(0.1 / (0.1 * scale))
    # the rescale keeps the expectation
    big = np.random.default_rng(1).uniform(-1, 1, 200000).astype(np.float32)
    e = _block(2, np.zeros_like(big), [big], scale=[np.float32(0.5 / np.abs(big).mean())])
    assert abs(float(e.mean() - big.mean())) < 0.01
    # a DELLA mean that cannot be used (NaN scale): nothing kept
    assert _block(2, [1.0, 1.0], [[2.0, 3.0]]).tolist() == [1.0, 1.0]


def test_seeds_depend_on_every_part():
    s = mm.tensor_seed('l', 'dare_ties', 'a', 'b', 'k')
    assert s == mm.tensor_seed('l', 'dare_ties', 'a', 'b', 'k')
    for args in (
        ('L', 'dare_ties', 'a', 'b', 'k'),
        ('l', 'della', 'a', 'b', 'k'),
        ('l', 'dare_ties', 'c', 'b', 'k'),
        ('l', 'dare_ties', 'a', 'c', 'k'),
        ('l', 'dare_ties', 'a', 'b', 'k2'),
    ):
        assert mm.tensor_seed(*args) != s


def spec(method, ckpts, base=None, **kw):
    return M.MergeSpec(method=method, models=[(f'e{i}', p) for i, p in enumerate(ckpts)], base=base, **kw)


def test_soup_is_mean_and_output_loads(tiny_ckpts, tmp_path):
    out = tmp_path / 'soup'
    M.merge(spec('soup', tiny_ckpts), out, log=lambda *_: None)
    got = load_all(out)
    ins = [load_all(p) for p in tiny_ckpts]
    for k, v in got.items():
        assert v.dtype == torch.bfloat16
        want = ((ins[0][k].float() + ins[1][k].float() + ins[2][k].float()) / 3).to(torch.bfloat16)
        assert torch.equal(v, want), k
    for f in ('config.json', 'tokenizer.json', 'tokenizer_config.json', 'generation_config.json'):
        assert (out / f).exists()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    m = AutoModelForCausalLM.from_pretrained(out)
    AutoTokenizer.from_pretrained(out)
    assert m.config.model_type == 'qwen3'


def _seed(*parts) -> int:
    """PROTOCOL §8's per-tensor seed, computed here independently: sha256 over the unit-separated
    (label, method, base, source, key), first 8 bytes little-endian, 63 bits."""
    return int.from_bytes(hashlib.sha256('\x1f'.join(map(str, parts)).encode()).digest()[:8], 'little') & ((1 << 63) - 1)


def _mix32(x: np.ndarray) -> np.ndarray:
    x = x ^ (x >> np.uint64(16))
    x = (x * np.uint64(0x7FEB352D)) & np.uint64(0xFFFFFFFF)
    x = x ^ (x >> np.uint64(15))
    x = (x * np.uint64(0x846CA68B)) & np.uint64(0xFFFFFFFF)
    return x ^ (x >> np.uint64(16))


def _uniform(n: int, seed: int) -> np.ndarray:
    """The draws of elements 0..n-1 (written from the definition in merge_methods' docstring)."""
    i = np.arange(n, dtype=np.uint64)
    x = _mix32((i & np.uint64(0xFFFFFFFF)) ^ np.uint64(seed & 0xFFFFFFFF))
    x = _mix32(x ^ np.uint64(seed >> 32) ^ (i >> np.uint64(32)))
    return (x >> np.uint64(8)).astype(np.float32) * np.float32(2.0**-24)


def _ref_sparsify(method: str, d: np.ndarray, rho: float, seed: int) -> np.ndarray:
    """DARE / DELLA / TIES on a whole flat float32 delta, from the definitions (numpy, not the
    kernels): DARE keep u < rho, d / rho; DELLA mean|d| summed in float64 chunk by chunk in index
    order, p = min(1, |d| * f32(rho / mean)), keep u < p, d / p; TIES the k = max(1, int(rho n))
    largest |d| (equal ones in index order) kept unscaled."""
    zero = np.float32(0)
    if method == 'dare_ties':
        r = np.float32(rho)
        return np.where(_uniform(d.size, seed) < r, d / r, zero)
    if method == 'della':
        a = np.abs(d.astype(np.float64))
        total = 0.0
        for c in range(0, d.size, mm.CHUNK):
            total += float(np.cumsum(a[c : c + mm.CHUNK])[-1])
        mean = total / d.size
        if not mean > 0:
            return np.zeros_like(d)
        p = np.minimum(np.abs(d) * np.float32(rho / mean), np.float32(1))
        keep = (_uniform(d.size, seed) < p) & (p > 0)
        return np.where(keep, d / np.where(p > 0, p, np.float32(1)), zero)
    k = max(1, int(rho * d.size))
    keep = np.zeros(d.size, bool)
    keep[np.argsort(-np.abs(d), kind='stable')[:k]] = True
    return d * keep.astype(np.float32)


def _ref_consensus(b: np.ndarray, deltas: list[np.ndarray], weights: list[float]) -> np.ndarray:
    """mergekit's consensus, written out: majority sign of sum w d (+ on a zero sum); the aligned
    w d summed and divided by the aligned weights; added to the base."""
    dw = [d * np.float32(w) for d, w in zip(deltas, weights, strict=True)]
    total = dw[0].copy()
    for v in dw[1:]:
        total += v
    pos = total >= 0
    mixed, div = None, None
    for v, w in zip(dw, weights, strict=True):
        agree = (((v > 0) & pos) | ((v < 0) & ~pos)).astype(np.float32)
        mixed = v * agree if mixed is None else mixed + v * agree
        div = np.float32(w) * agree if div is None else div + np.float32(w) * agree
    div[div == 0] = 1
    return b + mixed / div


def _ref_merge(method: str, ins: list[dict], base: int, key: str, rho: float, label: str, names: list[str]) -> torch.Tensor:
    b = ins[base][key].float().numpy().reshape(-1)
    src = [i for i in range(len(ins)) if i != base]
    deltas = [
        _ref_sparsify(method, ins[i][key].float().numpy().reshape(-1) - b, rho, _seed(label, method, names[base], names[i], key))
        for i in src
    ]
    out = torch.from_numpy(_ref_consensus(b, deltas, [1.0] * len(src))).reshape(ins[base][key].shape)
    return out.to(ins[base][key].dtype)


@pytest.mark.parametrize('method', ['ties', 'dare_ties', 'della'])
def test_ties_family_any_base_reference(tiny_ckpts, tmp_path, method):
    """Bit for bit against an independent whole-tensor computation (numpy, written from the
    definitions above, not with merge_methods), with expert1 as the base, on every tensor."""
    out = tmp_path / method
    M.merge(spec(method, tiny_ckpts, base='e1', density=0.5, label='t'), out, log=lambda *_: None)
    got = load_all(out)
    ins = [load_all(p) for p in tiny_ckpts]
    changed = 0
    for k in got:
        want = _ref_merge(method, ins, 1, k, 0.5, 't', ['e0', 'e1', 'e2'])
        assert torch.equal(got[k], want), k
        changed += not torch.equal(got[k], ins[1][k])
    assert changed >= len(got) // 2, 'the merge left the base untouched: the check proves nothing'
    info = json.loads((out / 'chorus_merge.json').read_text())
    assert info['base'] == 'e1'


def test_deterministic_bytes_and_seed_sensitivity(tiny_ckpts, tmp_path):
    a, b, c = tmp_path / 'a', tmp_path / 'b', tmp_path / 'c'
    M.merge(spec('dare_ties', tiny_ckpts, label='x'), a, log=lambda *_: None)
    M.merge(spec('dare_ties', tiny_ckpts, label='x'), b, log=lambda *_: None)
    M.merge(spec('dare_ties', tiny_ckpts, label='y'), c, log=lambda *_: None)
    assert digest(a) == digest(b)
    assert digest(a) != digest(c)


def test_non_float_tensors_copied_from_base(tmp_path):
    ck = []
    for i in range(3):
        d = tmp_path / f'm{i}'
        d.mkdir()
        g = torch.Generator().manual_seed(i)
        save_file({'w': torch.randn(8, 4, generator=g).to(torch.float16), 'idx': torch.arange(5) + i}, str(d / 'model.safetensors'))
        (d / 'config.json').write_text('{}')
        ck.append(d)
    out = tmp_path / 'o'
    M.merge(spec('ties', ck, base='e2'), out, log=lambda *_: None)
    got = load_all(out)
    assert torch.equal(got['idx'], torch.arange(5) + 2)
    assert got['w'].dtype == torch.float16


def test_bad_checkpoints_are_named(tiny_ckpts, tmp_path):
    """A truncated weight file or a header that is not safetensors stops the merge with the file's
    name and what to do, before anything is written."""
    import shutil

    bad = tmp_path / 'bad'
    shutil.copytree(tiny_ckpts[2], bad)
    f = bad / 'model.safetensors'
    f.write_bytes(f.read_bytes()[:-1000])
    with pytest.raises(SystemExit, match='truncated checkpoint'):
        M.merge(spec('ties', [tiny_ckpts[0], tiny_ckpts[1], bad]), tmp_path / 'o1', log=lambda *_: None)
    f.write_bytes(b'\x10\x00\x00\x00\x00\x00\x00\x00{not json at all}')
    with pytest.raises(SystemExit, match='not a readable safetensors file'):
        M.merge(spec('ties', [tiny_ckpts[0], tiny_ckpts[1], bad]), tmp_path / 'o2', log=lambda *_: None)
    assert not (tmp_path / 'o1').exists() and not (tmp_path / 'o2').exists()  # refused before the output is made


def test_a_full_disk_is_named_and_leaves_no_partial_shard(tiny_ckpts, tmp_path, monkeypatch):
    import errno

    real = M.ShardWriter.write
    calls = []

    def full(self, key, block):
        calls.append(key)
        if len(calls) > 3:  # after a few tensors: the shard file exists, half written
            raise OSError(errno.ENOSPC, 'No space left on device')
        real(self, key, block)

    monkeypatch.setattr(M.ShardWriter, 'write', full)
    out = tmp_path / 'o'
    with pytest.raises(SystemExit, match=r'writing the merged checkpoint failed .*No space left.* needs [0-9.]+ GB free'):
        M.merge(spec('dare_ties', tiny_ckpts), out, log=lambda *_: None)
    assert not list(out.glob('*.part')) and not list(out.glob('*.safetensors'))


def make_big(tmp_path: Path, n: int, rows: int, cols: int, shard_keys: int) -> list[Path]:
    """Synthetic sharded bf16 checkpoints: 6 tensors of rows x cols, `shard_keys` tensors per shard
    (bf16: many equal |delta| at TIES's threshold, so which of them are kept matters)."""
    out = []
    for i in range(n):
        d = tmp_path / f'big{i}'
        d.mkdir()
        g = torch.Generator().manual_seed(100 + i)
        names = [f't{j}' for j in range(6)]
        wm = {}
        for s in range(0, 6, shard_keys):
            fn = f'model-{s // shard_keys + 1:05d}-of-{6 // shard_keys:05d}.safetensors'
            save_file({k: torch.randn(rows, cols, generator=g).to(torch.bfloat16) for k in names[s : s + shard_keys]}, str(d / fn))
            wm.update({k: fn for k in names[s : s + shard_keys]})
        (d / 'model.safetensors.index.json').write_text(json.dumps({'metadata': {}, 'weight_map': wm}))
        (d / 'config.json').write_text('{}')
        out.append(d)
    return out


@pytest.mark.parametrize('method', ['ties', 'dare_ties', 'della', 'soup'])
def test_streaming_sharded_bounded_memory(tmp_path, monkeypatch, method):
    """6 tensors of 32 MiB each per checkpoint (3 checkpoints, 576 MiB in all), merged in blocks
    of 128K elements (128 blocks per tensor): memory stays a few blocks and the kernels' fixed
    scratch (~10 MiB), far below one tensor; the
    output is sharded and byte-identical to the merge in one block per tensor (the draws and
    TIES's choice among equal magnitudes do not depend on the blocks), and equal to the
    whole-tensor reference."""
    rows, cols = 4096, 4096
    ck = make_big(tmp_path, 3, rows, cols, shard_keys=2)
    models = [(f'e{i}', p) for i, p in enumerate(ck)]
    whole = tmp_path / 'whole'
    M.merge(M.MergeSpec(method, models, shard_bytes=80 * 2**20), whole, log=lambda *_: None)  # also compiles the kernels
    monkeypatch.setattr(M, 'BLOCK_ELEMS', 1 << 17)
    out = tmp_path / 'out'
    from chorus_train.memwatch import PeakWatcher

    with PeakWatcher() as w:
        M.merge(M.MergeSpec(method, models, shard_bytes=80 * 2**20), out, log=lambda *_: None)
    tensor_bytes = rows * cols * 2
    assert w.anon_growth < tensor_bytes // 2, f'anonymous memory grew by {w.anon_growth / 2**20:.0f} MiB'
    assert w.rss_growth < 2 * tensor_bytes, f'RSS grew by {w.rss_growth / 2**20:.0f} MiB'
    idx = json.loads((out / 'model.safetensors.index.json').read_text())
    assert len(set(idx['weight_map'].values())) == 3  # 32 MiB tensors, 80 MiB shards -> 2 per shard
    assert digest(out) == digest(whole)
    if method != 'soup':
        ins = [load_all(p) for p in ck]
        got = load_all(out)
        for k in ('t0', 't4'):
            assert torch.equal(got[k], _ref_merge(method, ins, 0, k, 0.5, 'merge', ['e0', 'e1', 'e2'])), k


@pytest.mark.parametrize('how', ['overflow', 'miss'])
def test_ties_threshold_when_the_bracket_fails(tmp_path, monkeypatch, how):
    """TIES's one-pass threshold falls back to two histogram passes (and counts the equal values
    block by block) when the values kept around the estimated threshold overflow their room, or
    when the bracket estimated from the first block misses the k-th value: same bytes as the
    one-pass merge, equal to the reference."""
    ck = make_big(tmp_path, 3, 1024, 1024, shard_keys=3)
    models = [(f'e{i}', p) for i, p in enumerate(ck)]
    monkeypatch.setattr(M, 'BLOCK_ELEMS', 1 << 17)
    one_pass = tmp_path / 'one'
    M.merge(M.MergeSpec('ties', models), one_pass, log=lambda *_: None)
    if how == 'overflow':
        monkeypatch.setattr(M, 'TIES_KEEP_MAX', 64)
    else:
        far = lambda self, xs, n, k: (np.zeros((len(self.sources), 2), np.int64), 1024)  # noqa: E731
        monkeypatch.setattr(M.TensorMerge, '_bracket', far)
    calls = []
    fallback = M.TensorMerge._ties_threshold_by_histograms
    monkeypatch.setattr(M.TensorMerge, '_ties_threshold_by_histograms', lambda self, *a: calls.append(a[0]) or fallback(self, *a))
    out = tmp_path / 'out'
    M.merge(M.MergeSpec('ties', models), out, log=lambda *_: None)
    assert len(calls) == 6, 'the fallback did not run for every tensor'
    assert digest(out) == digest(one_pass)
    ins = [load_all(p) for p in ck]
    got = load_all(out)
    for k in ('t0', 't5'):
        assert torch.equal(got[k], _ref_merge('ties', ins, 0, k, 0.5, 'merge', ['e0', 'e1', 'e2'])), k


# ------------------------------------------------------------------------------------------
# mergekit equivalence


def run_mergekit(cfg: str, out: Path, tmp_path: Path) -> None:
    # mergekit is part of the training requirements: missing, it is a broken install, not a skip
    exe = Path(sys.executable).parent / 'mergekit-yaml'
    assert exe.exists(), f'{exe} is missing: pip install -r training/requirements-train.txt'
    y = tmp_path / f'{out.name}.yml'
    y.write_text(cfg)
    r = subprocess.run([str(exe), str(y), str(out), '--allow-crimes', '--lazy-unpickle'], capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(r.stdout[-3000:] + r.stderr[-3000:])


@pytest.fixture(scope='module')
def fp32_ckpts(tiny_ckpts, tmp_path_factory) -> list[Path]:
    """The tiny checkpoints in float32 with continuous noise added: no two |delta| of a tensor are
    equal, so a top-k has one answer (mergekit's argsort breaks equal magnitudes in an order of its
    own, which no streaming merge can reproduce)."""
    root = tmp_path_factory.mktemp('fp32')
    out = []
    for i, src in enumerate(tiny_ckpts):
        d = root / f'expert{i}'
        d.mkdir()
        g = torch.Generator().manual_seed(50 + i)
        t = {k: v.float() + torch.randn(v.shape, generator=g) * 0.01 for k, v in load_all(src).items()}
        save_file(t, str(d / 'model.safetensors'), metadata={'format': 'pt'})
        M.copy_side_files(src, d)
        out.append(d)
    return out


def test_linear_matches_mergekit(fp32_ckpts, tmp_path):
    mk = tmp_path / 'mk_linear'
    models = '\n'.join(f'  - model: {p}\n    parameters: {{weight: {w}}}' for p, w in zip(fp32_ckpts, (0.5, 0.3, 0.2), strict=True))
    run_mergekit(f'merge_method: linear\nmodels:\n{models}\ndtype: float32\nout_dtype: float32\n', mk, tmp_path)
    ours = tmp_path / 'ours_linear'
    M.merge(spec('linear', fp32_ckpts, weights=[0.5, 0.3, 0.2]), ours, log=lambda *_: None)
    a, b = load_all(ours), load_all(mk)
    assert set(a) == set(b)
    for k in a:
        assert torch.equal(a[k], b[k]), k


def test_ties_matches_mergekit(fp32_ckpts, tmp_path):
    """TIES bit for bit against mergekit's CLI (float32 in and out)."""
    mk = tmp_path / 'mk_ties'
    models = '\n'.join(f'  - model: {p}\n    parameters: {{weight: 1.0, density: 0.5}}' for p in fp32_ckpts[1:])
    run_mergekit(
        f'merge_method: ties\nbase_model: {fp32_ckpts[0]}\nmodels:\n{models}\nparameters: {{normalize: true}}\n'
        f'dtype: float32\nout_dtype: float32\n',
        mk,
        tmp_path,
    )
    ours = tmp_path / 'ours_ties'
    M.merge(spec('ties', fp32_ckpts, base='e0', density=0.5), ours, log=lambda *_: None)
    a, b, base = load_all(ours), load_all(mk), load_all(fp32_ckpts[0])
    assert set(a) == set(b)
    for k in a:
        assert torch.equal(a[k], b[k]), k
        assert not torch.equal(a[k], base[k]), f'{k}: the merge left the base untouched: the check proves nothing'


@pytest.mark.parametrize('method', ['dare_ties', 'della'])
def test_stochastic_methods_match_mergekit_given_the_draws(tiny_ckpts, tmp_path, monkeypatch, method):
    """DARE-TIES and DELLA bit for bit against mergekit's own merge (bf16 in and out, base e1), its
    sparsification step handed §8's masks from this file's reference draws (mergekit draws with
    torch's global generator, and its `della` is rank based): the draws, the rescale, the sign
    consensus, the weighting, the division and the cast agree."""
    import yaml
    from mergekit.config import MergeConfiguration
    from mergekit.merge import run_merge
    from mergekit.merge_methods import generalized_task_arithmetic as gta
    from mergekit.options import MergeOptions

    names = ['e0', 'e1', 'e2']
    ins = [load_all(p) for p in tiny_ckpts]
    which: dict[bytes, tuple[str, str]] = {}
    for k in ins[1]:
        for i in (0, 2):
            d = (ins[i][k].float() - ins[1][k].float()).numpy()
            if d.any():
                h = hashlib.sha256(d.tobytes()).digest()
                assert h not in which, f'{k}: the same delta as {which[h]}: the masks cannot be told apart'
                which[h] = (k, names[i])
    calls = []

    def sparsify(tensor, density, **_):
        d = tensor.numpy()
        if not d.any():
            return tensor.clone()
        k, src = which[hashlib.sha256(d.tobytes()).digest()]
        calls.append(k)
        out = _ref_sparsify(method, d.reshape(-1), density, _seed('merge', method, 'e1', src, k))
        return torch.from_numpy(out).reshape(tensor.shape)

    monkeypatch.setattr(gta, 'sparsify', sparsify)
    models = '\n'.join(f'  - model: {p}\n    parameters: {{weight: 1.0, density: 0.5}}' for p in (tiny_ckpts[0], tiny_ckpts[2]))
    cfg = (
        f'merge_method: {method}\nbase_model: {tiny_ckpts[1]}\nmodels:\n{models}\n'
        'parameters: {normalize: true, rescale: false}\ndtype: float32\nout_dtype: bfloat16\n'
    )
    mk = tmp_path / 'mk'
    run_merge(
        MergeConfiguration.model_validate(yaml.safe_load(cfg)),
        str(mk),
        options=MergeOptions(allow_crimes=True, lazy_unpickle=True, quiet=True),
    )
    assert len(calls) >= len(ins[1]), 'mergekit never asked for the masks'
    ours = tmp_path / 'ours'
    M.merge(spec(method, tiny_ckpts, base='e1', density=0.5), ours, log=lambda *_: None)
    a, b = load_all(ours), load_all(mk)
    assert set(a) == set(b)
    for k in a:
        assert torch.equal(a[k], b[k]), k
