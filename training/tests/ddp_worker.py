"""One DAPO step, run by test_rl_ddp.py either in one process or under torchrun with 2 ranks.

usage: ddp_worker.py CHECKPOINT OUT [prompts|members|opd TEACHER]   (final weights: OUT/final.pt from rank 0)
`prompts`: 4 prompts per step, each rank takes whole prompts; `members`: 1 prompt per step, the
ranks split its group of 4 (the reference's 4 prompts on 8 or 16 GPUs); `opd`: one OPD step of one
prompt, 2 gated rounds (distilled, then the RL fallback), the ranks splitting the student's group.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chorus_train import rl  # noqa: E402
from chorus_train.envs import TokenRewardEnv  # noqa: E402
from chorus_train.policy import Sample, load_policy  # noqa: E402

TEXTS = [
    'module tb; endmodule',
    'initial begin $finish; end',
    'always @(posedge clk) q <= d;',
    'assign y = a & b;',
    'logic [7:0] x;',
    'wire w;',
    'reg r = 0;',
    '// nothing',
]


class PerPromptSampler:
    """Deterministic replies that depend only on the prompt and how often it was asked: the same in
    one process and on any rank (a shared counter would differ across ranks)."""

    def __init__(self, tok, rank: int = 0, shift: int = 0):
        self.tok = tok
        self.shift = shift
        self.rank = rank  # a rank given part of a group draws its members: rank * n onward
        self.seen: dict[tuple, int] = {}

    def sample(self, prompts, n):
        out = []
        for p in prompts:
            key = tuple(p)
            k0 = self.seen.get(key, 0) + self.rank * n
            self.seen[key] = self.seen.get(key, 0) + n
            group = []
            for k in range(k0, k0 + n):
                t = TEXTS[(sum(p) + 3 * k + self.shift) % len(TEXTS)]
                group.append(Sample(list(p), self.tok(t, add_special_tokens=False)['input_ids'] + [self.tok.eos_token_id], t))
            out.append(group)
        return out


def main() -> None:
    torch.set_num_threads(1)
    ck, out = sys.argv[1], Path(sys.argv[2])
    mode = sys.argv[3] if len(sys.argv) > 3 else 'prompts'
    import os

    rank = int(os.environ.get('RANK', '0'))
    model, tok = load_policy(ck)
    emb = model.get_input_embeddings().weight.detach().float()
    good = set(torch.nonzero(emb @ torch.randn(emb.shape[1], generator=torch.Generator().manual_seed(0)) > 0).flatten().tolist())
    tasks = [{'id': i, 'messages': [{'role': 'user', 'content': f'Task {i}: write a testbench for m{i}.'}]} for i in range(4)]
    if mode == 'opd':
        from chorus_train import opd

        teacher, _ = load_policy(sys.argv[4])
        teacher.eval().requires_grad_(False)
        ocfg = opd.OPDConfig(
            out=str(out / 'run'),
            lr=1e-3,
            updates=10,
            prompts_per_step=1,
            student_samples=4,
            teacher_samples=2,
            agentic_rounds=2,
            routing='random_source',
            max_new_tokens=8,
            micro_batch=4,
            save_every=0,
            seed=4,
            grad_clip=0.0,
        )
        res = opd.train(
            ocfg,
            tasks,
            TokenRewardEnv(good),
            student=model,
            tok=tok,
            teachers=[teacher],
            student_sampler=PerPromptSampler(tok, rank),
            teacher_samplers=[PerPromptSampler(tok, 0, shift=5)],
            steps=1,
            resume=False,
            log=print,
        )
        if res['rank'] == 0:
            (out / 'decisions.json').write_text(__import__('json').dumps(res['history'][0]['decisions']))
    else:
        res = train_rl(model, tok, good, tasks, out, mode, rank)
    if res['rank'] == 0:
        torch.save({k: v.detach().cpu() for k, v in res['model'].state_dict().items()}, out / 'final.pt')
        # the step's gradient (left on the parameters; under DDP the all-reduced one): Adam's first
        # update is nearly scale-free, so the gradient is the sharper check of the normalization
        torch.save({k: p.grad.detach().cpu() for k, p in res['model'].named_parameters() if p.grad is not None}, out / 'grads.pt')
        (out / 'world.txt').write_text(str(res['world']))


def train_rl(model, tok, good, tasks, out, mode, rank):
    cfg = rl.RLConfig(
        out=str(out / 'run'),
        lr=1e-3,
        updates=100,
        group_size=4,
        prompts_per_step=4 if mode == 'prompts' else 1,
        agentic_rounds=2,
        max_new_tokens=8,
        mini_batches=1,
        micro_batch=4,
        save_every=0,
        seed=0,
        grad_clip=0.0,
    )
    return rl.train(
        cfg,
        tasks,
        TokenRewardEnv(good),
        model=model,
        tok=tok,
        sampler=PerPromptSampler(tok, rank if mode == 'members' else 0),
        steps=1,
        resume=False,
        log=print,
    )


if __name__ == '__main__':
    main()
