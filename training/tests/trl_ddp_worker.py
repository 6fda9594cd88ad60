"""One TRL step (trl_engine), run by test_trl_ddp.py in one process or under torchrun with 2 ranks.

usage: trl_ddp_worker.py CHECKPOINT OUT rl|split|opd|count [TEACHER]   (final weights: OUT/final.pt from rank 0;
OUT/rank{R}.json: the sequences each rank asked the engine for, and OPD's student forwards)
`rl`: 2 prompts x 2 rounds x group 4, each rank holds one whole task; `split`: 1 prompt, rank 0 holds
the direct group and rank 1 the refinement group (the carry crosses ranks); `opd`: one OPD step of 2
prompts, one gated open (distilled) and one closed, the ranks splitting them (rank 1 has no distilled
rows); `count`: `split` with the engine's own generation (HF generate under plain DDP) instead of
scripted replies, to count the sequences each rank decodes (no filler rows: 4 per rank).
Replies are a function of (task, round, member), so every layout draws the same rollouts.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chorus_train import opd, rl, trl_engine  # noqa: E402
from chorus_train.envs import TokenRewardEnv  # noqa: E402
from chorus_train.policy import load_policy  # noqa: E402

WORDS = [
    'module tb; endmodule',
    'initial begin $finish; end',
    'always @(posedge clk) q <= d;',
    'assign y = a & b;',
    'logic [7:0] x;',
    'wire w;',
]


def sample_fn(tok):
    def fn(prompt_ids, keys):
        return [
            tok(WORDS[(3 * t + 2 * r + j) % len(WORDS)], add_special_tokens=False)['input_ids'] + [tok.eos_token_id] for t, r, j in keys
        ]

    return fn


class GateEnv(TokenRewardEnv):
    """Token reward for the student; the teacher wins on task 0 only (gate open there, closed on task 1).
    Its scores are consistent (R = 1 + c on success, else 0), so no integrity failure."""

    def score(self, task, samples):
        out = super().score(task, samples)
        for s, x in zip(samples, out, strict=True):
            if s.meta.get('who') == 'teacher':
                r = 3.0 if task['id'] == 0 else 0.0  # above any student reward (1 + c <= 2) on task 0
                x.reward, x.coverage, x.status = r, (r - 1 if r else 0.0), 'success' if r else 'failed'
        return out


def main() -> None:
    torch.set_num_threads(1)
    ck, out, mode = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    model, tok = load_policy(ck)
    emb = model.get_input_embeddings().weight.detach().float()
    good = set(torch.nonzero(emb @ torch.randn(emb.shape[1], generator=torch.Generator().manual_seed(0)) > 0).flatten().tolist())
    tasks = [{'id': i, 'messages': [{'role': 'user', 'content': f'Task {i}: write a testbench for m{i}.'}]} for i in range(2)]
    quiet = lambda *_: None  # noqa: E731
    if mode == 'opd':
        teacher, _ = load_policy(sys.argv[4])
        teacher.eval().requires_grad_(False)
        c = opd.OPDConfig(
            out=str(out / 'run'),
            lr=1e-3,
            updates=10,
            prompts_per_step=2,
            student_samples=4,
            teacher_samples=2,
            agentic_rounds=1,
            max_new_tokens=8,
            micro_batch=2,
            save_every=0,
            seed=4,
            grad_clip=0.0,
        )
        fn = sample_fn(tok)
        tfn = lambda t, prompt, n, key: fn([prompt] * n, [(key[0] + 7, key[1], j) for j in range(n)])  # noqa: E731
        res = trl_engine.train_opd(
            c,
            tasks,
            GateEnv(good),
            student=model,
            tok=tok,
            teachers=[teacher],
            steps=1,
            resume=False,
            sample_fn=fn,
            teacher_sample_fn=tfn,
            log=quiet,
        )
        if res['rank'] == 0:
            kinds = sorted(d['kind'] for d in res['history'][0])
            assert kinds == ['distill', 'skip'], res['history'][0]  # gate_closed: skip (the recipe)
    else:
        c = rl.RLConfig(
            out=str(out / 'run'),
            lr=1e-3,
            updates=100,
            group_size=4,
            prompts_per_step=2 if mode == 'rl' else 1,
            top_k=32,
            agentic_rounds=2,
            max_new_tokens=8,
            micro_batch=2,
            mini_batches=1,
            save_every=0,
            seed=3,
            grad_clip=0.0,
        )
        res = trl_engine.train_rl(
            c,
            tasks,
            TokenRewardEnv(good),
            model=model,
            tok=tok,
            steps=1,
            resume=False,
            sample_fn=None if mode == 'count' else sample_fn(tok),
            log=quiet,
        )
    tr = res['trainer']
    (out / f'rank{res["rank"]}.json').write_text(
        json.dumps({'gen_rows': tr.rollout_func.gen_rows, 'forwards': getattr(tr, 'chorus_forwards', 0)})
    )
    if res['rank'] == 0:
        torch.save({k: v.detach().cpu() for k, v in res['model'].state_dict().items()}, out / 'final.pt')
        (out / 'world.txt').write_text(str(res['world']))
    trl_engine.end_distributed()


if __name__ == '__main__':
    main()
