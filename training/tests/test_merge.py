"""Merging: hand-computed method checks, equality with mergekit (linear, TIES), determinism,
streaming (sharded input and output, bounded memory), loadable output."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

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


def test_methods_hand_computed():
    d1 = torch.tensor([1.0, -2.0, 0.0, 3.0])
    d2 = torch.tensor([3.0, 1.0, 0.0, -1.0])
    # sign consensus: signs of sums (+, -, +0, +); aligned non-zero deltas averaged
    got = mm.sign_consensus_mean([d1, d2])
    assert torch.equal(got, torch.tensor([2.0, -2.0, 0.0, 3.0]))
    assert torch.equal(mm.linear([d1, d2], [1, 1]), (d1 + d2) / 2)
    assert torch.equal(mm.magnitude_mask(d1, 0.5), torch.tensor([0.0, -2.0, 0.0, 3.0]))
    # DARE: kept entries are rescaled by 1/rho, the rest zero; the same generator seed, the same mask
    x = torch.randn(10000)
    y = mm.dare(x, 0.5, mm.generator(7))
    kept = y != 0
    assert torch.allclose(y[kept], x[kept] * 2)
    assert 0.45 < kept.float().mean() < 0.55
    assert torch.equal(y, mm.dare(x, 0.5, mm.generator(7)))
    # DELLA: p = min(1, rho*|d|/mean|d|); large entries always kept at scale 1/p = 1
    d = torch.tensor([10.0, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1])
    mean = float(d.abs().mean())
    out = mm.della(d, 0.5, mean, mm.generator(3))
    assert out[0].item() == 10.0  # p = min(1, 0.5*10/1.3375) = 1
    p_small = 0.5 * 0.1 / mean
    for v in out[1:]:
        assert v.item() == 0.0 or v.item() == pytest.approx(0.1 / p_small)
    # expectation is preserved (unbiased rescale)
    big = torch.rand(200000) * 2 - 1
    e = mm.della(big, 0.5, float(big.abs().mean()), mm.generator(1))
    assert abs(float(e.mean() - big.mean())) < 0.01


def test_seeds_depend_on_every_part():
    s = mm.tensor_seed('l', 'dare_ties', 'a', 'b', 'k', 0)
    assert s == mm.tensor_seed('l', 'dare_ties', 'a', 'b', 'k', 0)
    for args in (
        ('L', 'dare_ties', 'a', 'b', 'k', 0),
        ('l', 'della', 'a', 'b', 'k', 0),
        ('l', 'dare_ties', 'c', 'b', 'k', 0),
        ('l', 'dare_ties', 'a', 'c', 'k', 0),
        ('l', 'dare_ties', 'a', 'b', 'k2', 0),
        ('l', 'dare_ties', 'a', 'b', 'k', 1),
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
    (label, method, base, source, key, block), first 8 bytes little-endian, 63 bits."""
    return int.from_bytes(hashlib.sha256('\x1f'.join(map(str, parts)).encode()).digest()[:8], 'little') & ((1 << 63) - 1)


def _uniform(shape, seed) -> torch.Tensor:
    g = torch.Generator(device='cpu')
    g.manual_seed(seed)
    return torch.rand(shape, generator=g, dtype=torch.float32)


def _ref_sparsify(method: str, d: torch.Tensor, rho: float, seed: int) -> torch.Tensor:
    """DARE / DELLA / TIES written out from the definitions, not from merge_methods:
    DARE m ~ Bernoulli(rho), d m / rho; DELLA p = min(1, rho |d| / mean |d|), m ~ Bernoulli(p), d m / p;
    TIES: the k = int(rho n) largest |d| kept (no rescale)."""
    if method == 'dare_ties':
        u = _uniform(d.shape, seed)
        return torch.where(u < rho, d / rho, 0.0)
    if method == 'della':
        mean = d.abs().double().mean().item()
        p = (rho * d.abs() / mean).clamp(max=1.0)
        u = _uniform(d.shape, seed)
        out = torch.zeros_like(d)
        keep = (u < p) & (p > 0)
        out[keep] = d[keep] / p[keep]
        return out
    k = int(rho * d.numel())
    flat = d.flatten()
    keep = torch.zeros_like(flat, dtype=torch.bool)
    keep[flat.abs().sort(descending=True, stable=True).indices[:k]] = True
    return torch.where(keep.view_as(d), d, 0.0)


def _ref_consensus(deltas: list[torch.Tensor]) -> torch.Tensor:
    """Sign of the summed deltas (+ on a zero sum); the mean of the non-zero deltas with that sign."""
    total = sum(deltas)
    sign = torch.where(total >= 0, 1.0, -1.0)
    num = torch.zeros_like(total)
    cnt = torch.zeros_like(total)
    for d in deltas:
        agree = (d != 0) & (torch.sign(d) == sign)
        num += torch.where(agree, d, 0.0)
        cnt += agree.float()
    return torch.where(cnt > 0, num / cnt.clamp(min=1), 0.0)


@pytest.mark.parametrize('method', ['ties', 'dare_ties', 'della'])
def test_ties_family_any_base_reference(tiny_ckpts, tmp_path, method):
    """Against an independent whole-tensor computation (written from the definitions above, not
    with merge_methods), with expert1 as the base."""
    out = tmp_path / method
    M.merge(spec(method, tiny_ckpts, base='e1', density=0.5, label='t'), out, log=lambda *_: None)
    got = load_all(out)
    ins = [load_all(p) for p in tiny_ckpts]
    keys = [
        'model.layers.0.self_attn.q_proj.weight',
        'model.norm.weight',
        'model.embed_tokens.weight',
        'model.layers.1.mlp.down_proj.weight',
    ]
    for k in keys:
        b = ins[1][k].float()
        deltas = [
            _ref_sparsify(method, ins[i][k].float() - b, 0.5, _seed('t', method, 'e1', name, k, 0)) for name, i in (('e0', 0), ('e2', 2))
        ]
        want = (b + _ref_consensus(deltas)).to(torch.bfloat16)
        if method == 'ties':
            # equal |delta| may be broken differently by a top-k: allow a few flips (mergekit's own
            # order is checked bit for bit against mergekit's output in test_ties_matches_mergekit)
            assert (got[k] != want).float().mean() < 0.02, k
        elif method == 'della':
            # p and d / p round differently with the order of the float32 operations: a handful of
            # elements may differ in the last bit, nothing more
            diff = (got[k].float() - want.float()).abs()
            assert int((diff > 0).sum()) <= max(1, diff.numel() // 100000) and float(diff.max()) <= 1e-6, k
        else:
            assert torch.equal(got[k], want), k
        if not torch.equal(ins[0][k], ins[1][k]):  # (norm weights are 1 everywhere: nothing to merge)
            assert not torch.equal(got[k], ins[1][k]), f'{k}: the merge left the base untouched: the check proves nothing'
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


def make_big(tmp_path: Path, n: int, rows: int, cols: int, shard_keys: int) -> list[Path]:
    """Synthetic sharded fp32 checkpoints: 6 tensors of rows x cols, `shard_keys` tensors per shard."""
    out = []
    for i in range(n):
        d = tmp_path / f'big{i}'
        d.mkdir()
        g = torch.Generator().manual_seed(100 + i)
        names = [f't{j}' for j in range(6)]
        wm = {}
        for s in range(0, 6, shard_keys):
            fn = f'model-{s // shard_keys + 1:05d}-of-{6 // shard_keys:05d}.safetensors'
            save_file({k: torch.randn(rows, cols, generator=g) for k in names[s : s + shard_keys]}, str(d / fn))
            wm.update({k: fn for k in names[s : s + shard_keys]})
        (d / 'model.safetensors.index.json').write_text(json.dumps({'metadata': {}, 'weight_map': wm}))
        (d / 'config.json').write_text('{}')
        out.append(d)
    return out


def test_streaming_sharded_bounded_memory(tmp_path, monkeypatch):
    """6 tensors of 16 MiB each per checkpoint (3 checkpoints, 288 MiB in all), merged with
    blocks of 256 KiB: Python-side peak allocation stays a few blocks, far below one tensor; the
    output is sharded and equals the unblocked merge."""
    rows, cols = 2048, 2048
    ck = make_big(tmp_path, 3, rows, cols, shard_keys=2)
    monkeypatch.setattr(M, 'BLOCK_ELEMS', 1 << 16)
    out = tmp_path / 'out'
    from chorus_train.memwatch import PeakWatcher

    with PeakWatcher() as w:
        M.merge(M.MergeSpec('dare_ties', [(f'e{i}', p) for i, p in enumerate(ck)], shard_bytes=40 * 2**20), out, log=lambda *_: None)
    tensor_bytes = rows * cols * 4
    # a few dozen 256 KiB blocks (inputs, deltas, masks, intermediates) at a time: below half a tensor
    assert w.anon_growth < tensor_bytes // 2, f'anonymous memory grew by {w.anon_growth / 2**20:.0f} MiB'
    assert w.rss_growth < 2 * tensor_bytes, f'RSS grew by {w.rss_growth / 2**20:.0f} MiB'
    idx = json.loads((out / 'model.safetensors.index.json').read_text())
    assert len(set(idx['weight_map'].values())) == 3  # 16 MiB tensors, 40 MiB shards -> 2 per shard
    # blocks of 64K elements = 32 rows -> 64 blocks per tensor; check block 3 of t4 by hand
    got = load_all(out)['t4']
    ins = [load_all(p)['t4'] for p in ck]
    r0, r1 = 3 * 32, 4 * 32
    b = ins[0][r0:r1]
    ds = [mm.dare(ins[i][r0:r1] - b, 0.5, mm.generator(mm.tensor_seed('merge', 'dare_ties', 'e0', f'e{i}', 't4', 3))) for i in (1, 2)]
    assert torch.equal(got[r0:r1], b + mm.sign_consensus_mean(ds))


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


def test_linear_matches_mergekit(tiny_ckpts, tmp_path):
    mk = tmp_path / 'mk_linear'
    models = '\n'.join(f'  - model: {p}\n    parameters: {{weight: {w}}}' for p, w in zip(tiny_ckpts, (0.5, 0.3, 0.2), strict=True))
    run_mergekit(f'merge_method: linear\nmodels:\n{models}\ndtype: float32\nout_dtype: bfloat16\n', mk, tmp_path)
    ours = tmp_path / 'ours_linear'
    M.merge(spec('linear', tiny_ckpts, weights=[0.5, 0.3, 0.2]), ours, log=lambda *_: None)
    a, b = load_all(ours), load_all(mk)
    assert set(a) == set(b)
    for k in a:
        assert torch.allclose(a[k].float(), b[k].float(), rtol=1e-2, atol=1e-6), k
        assert (a[k] != b[k]).float().mean() < 1e-3, k  # at most rounding flips


def test_ties_matches_mergekit(tiny_ckpts, tmp_path):
    mk = tmp_path / 'mk_ties'
    models = '\n'.join(f'  - model: {p}\n    parameters: {{weight: 1.0, density: 0.5}}' for p in tiny_ckpts[1:])
    run_mergekit(
        f'merge_method: ties\nbase_model: {tiny_ckpts[0]}\nmodels:\n{models}\nparameters: {{normalize: true}}\n'
        f'dtype: float32\nout_dtype: bfloat16\n',
        mk,
        tmp_path,
    )
    ours = tmp_path / 'ours_ties'
    M.merge(spec('ties', tiny_ckpts, base='e0', density=0.5), ours, log=lambda *_: None)
    a, b = load_all(ours), load_all(mk)
    assert set(a) == set(b)
    for k in a:
        assert torch.allclose(a[k].float(), b[k].float(), rtol=1e-2, atol=1e-6), k
        assert (a[k] != b[k]).float().mean() < 1e-3, k
