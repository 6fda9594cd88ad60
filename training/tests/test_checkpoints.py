"""Checkpoints a merge can read (issue 43): the model weights a checkpoint stores are bf16 (what merge, OPD's
teachers and export read), the fp32 masters come back bit for bit on a resume (their low bits in the
optimizer's state), and a run ends with one save of its last checkpoint, not two."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file

from chorus_train import masters, rl, trl_engine
from chorus_train.envs import TokenRewardEnv
from chorus_train.policy import load_policy

pytest.importorskip('trl')
TASKS = [{'id': i, 'messages': [{'role': 'user', 'content': f'Task {i}: write a testbench for m{i}.'}]} for i in range(2)]


def test_split_and_combine_are_exact():
    """Every fp32 pattern class: random normals, ±0, subnormals, large values, and the rounding edges (low 16
    bits 0x7FFF, 0x8000 (a tie), 0x8001, 0xFFFF): combine(split(x)) is x bit for bit; the bf16 half is
    torch's rounding except on an exact tie, where it is the neighbour of smaller magnitude."""
    g = torch.Generator().manual_seed(0)
    x = torch.cat([torch.randn(100_000, generator=g) * s for s in (1e-3, 1.0, 1e3)])
    bits = torch.randint(-(2**31), 2**31 - 1, (100_000,), generator=g, dtype=torch.int64).to(torch.int32)
    edges = torch.tensor([0x7FFF, 0x8000, 0x8001, 0xFFFF, 0], dtype=torch.int32)
    hi = torch.randint(-(2**15), 2**15, (2000,), generator=g, dtype=torch.int32) * 65536
    edged = (hi[:, None] + edges[None, :]).flatten().view(torch.float32)
    special = torch.tensor([0.0, -0.0, 1e-40, -1e-40, 3e38, -3e38, 1.0, -1.0])
    x = torch.cat([x, bits.view(torch.float32), edged, special])
    x = x[torch.isfinite(x)]
    b16, lo = masters.split(x)
    assert b16.dtype == torch.bfloat16 and lo.dtype == torch.int16
    back = masters.combine(b16, lo)
    assert torch.equal(back.view(torch.int32), x.view(torch.int32))
    assert torch.equal(masters.combine(b16, lo.float()).view(torch.int32), x.view(torch.int32))  # lo held as floats
    tie = (x.view(torch.int32) & 0xFFFF) == 0x8000
    assert tie.any() and torch.equal(b16[~tie], x[~tie].to(torch.bfloat16))
    assert (b16[tie].float().abs() <= x[tie].abs()).all()


def _run(ck, out, tok_model, steps, save_every, **kw):
    model, tok = tok_model
    emb = model.get_input_embeddings().weight.detach().float()
    good = set(torch.nonzero(emb @ torch.randn(emb.shape[1], generator=torch.Generator().manual_seed(0)) > 0).flatten().tolist())

    def fn(prompt_ids, keys):
        words = ['wire w;', 'assign y = a & b;', 'logic [7:0] x;']
        return [tok(words[(t + r + j) % 3], add_special_tokens=False)['input_ids'] + [tok.eos_token_id] for t, r, j in keys]

    cfg = rl.RLConfig(
        out=str(out), lr=1e-3, updates=10, group_size=2, prompts_per_step=2, agentic_rounds=1, max_new_tokens=8,
        micro_batch=4, save_every=save_every, seed=0, dtype='bfloat16', grad_clip=0.0,
    )  # fmt: skip
    return trl_engine.train_rl(cfg, TASKS, TokenRewardEnv(good), model=model, tok=tok, steps=steps, sample_fn=fn, log=lambda *_: None, **kw)


def test_checkpoints_hold_bf16_weights_and_resume_exact_fp32_masters(tiny_ckpts, tmp_path, monkeypatch):
    """dtype bfloat16 (the recipes): checkpoint-1's model file is bf16 and its config says so; the fp32
    masters' low bits lie beside it; the resumed run starts from the first run's fp32 masters bit for bit
    (which the bf16 weights alone are not: the check can fail); each run saves its last step once."""
    from transformers import Trainer, TrainerCallback

    saves: list[int] = []
    orig = Trainer._save_checkpoint

    def counting(self, model, trial):
        saves.append(self.state.global_step)
        return orig(self, model, trial)

    monkeypatch.setattr(Trainer, '_save_checkpoint', counting)
    model, tok = load_policy(str(tiny_ckpts[0]))
    res = _run(tiny_ckpts[0], tmp_path / 'run', (model, tok), steps=1, save_every=2)
    assert saves == [1]  # the Trainer's save at max_steps; trl_engine does not save checkpoint-1 again
    ck = tmp_path / 'run' / 'checkpoint-1'
    sd = load_file(str(ck / 'model.safetensors'))
    assert {v.dtype for v in sd.values() if v.is_floating_point()} == {torch.bfloat16}
    assert json.loads((ck / 'config.json').read_text())['dtype'] == 'bfloat16'
    low = load_file(str(ck / masters.RESUME_DIR / masters.RESIDUAL_FILE))  # in a folder of its own: no *.safetensors glob sees it
    params = dict(res['model'].named_parameters())
    assert set(low) == set(params) and {v.dtype for v in low.values()} == {torch.int16}
    assert sorted(f.name for f in ck.glob('*.safetensors')) == ['model.safetensors']
    opt = torch.load(ck / 'optimizer.pt', weights_only=False)  # AdamW's moments stay fp32
    assert {v.dtype for st in opt['state'].values() for k, v in st.items() if k != 'step'} == {torch.float32}
    want = {n: p.detach().clone() for n, p in res['model'].named_parameters()}  # the fp32 masters after step 1
    assert any(not torch.equal(w.to(torch.bfloat16).float(), w) for w in want.values())  # bf16 alone would lose bits

    got = {}

    class Snap(TrainerCallback):
        def on_train_begin(self, args, state, control, model=None, **kw):
            got.update({n: p.detach().clone() for n, p in model.named_parameters()})

    saves.clear()
    m2, _ = load_policy(str(ck))  # what the engine loads on a resume (fp32 from the bf16 file)
    monkeypatch.setattr(trl_engine, '_metrics_callback', lambda *a, **k: Snap())  # observe where the resumed run starts
    _run(tiny_ckpts[0], tmp_path / 'run', (m2, tok), steps=1, save_every=2)
    assert saves == [2]  # the resumed run ends on a save boundary: the Trainer's save only
    assert got.keys() == want.keys()
    for n in want:
        assert torch.equal(got[n].view(torch.int32), want[n].view(torch.int32)), n
