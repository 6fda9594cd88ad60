"""One TRL step (trl_engine), run by test_trl_ddp.py in one process or under torchrun with 2 ranks.

usage: trl_ddp_worker.py CHECKPOINT OUT rl|split|opd|count [TEACHER]   (final weights: OUT/final.pt from rank 0;
OUT/rank{R}.json: the sequences each rank asked the engine for, and OPD's student forwards)
       trl_ddp_worker.py CHECKPOINT OUT service LIVE_URL DEAD_URL | lockstep
(`service`: 3 tasks x 2 rounds x group 4 against the real ServiceEnv and client, pointed at a refused URL
and at tests/fake_reward_service.py; rank{R}.json adds the masked rows, the client's retries and the log;
`lockstep`: `split` through a fake engine call that all-reduces over the ranks; rank{R}.json adds the
rows of each call)
`rl`: 2 prompts x 2 rounds x group 4, each rank holds one whole task; `split`: 1 prompt, rank 0 holds
the direct group and rank 1 the refinement group (the carry crosses ranks); `opd`: one OPD step of 2
prompts, one gated open (distilled) and one closed, the ranks splitting them (rank 1 has no distilled
rows); `count`: `split` with the engine's own generation (HF generate under plain DDP) instead of
scripted replies, to count the sequences each rank decodes (4 per rank, and one filler row in the round a rank has none).
Replies are a function of (task, round, member), so every layout draws the same rollouts.
CHORUS_WORKER_DEVICE=cuda (`lockstep` only; chorus_train/gpu_checks.py, run by scripts/gpu_smoke.sh): the
trainer on the GPU, both ranks on GPU 0 (one GPU shared by 2 processes: a gloo process group, DDP
without device_ids), rank{R}.json adds the policy's device.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chorus_train import opd, rl, trl_engine  # noqa: E402
from chorus_train.envs import ServiceEnv, TokenRewardEnv  # noqa: E402
from chorus_train.policy import load_policy  # noqa: E402

WORDS = [
    'module tb; endmodule',
    'initial begin $finish; end',
    'always @(posedge clk) q <= d;',
    'assign y = a & b;',
    'logic [7:0] x;',
    'wire w;',
]
DEVICE = os.environ.get('CHORUS_WORKER_DEVICE', 'cpu')  # cuda: gpu_checks.py's lockstep check on one GPU


def share_one_gpu() -> dict:
    """2 ranks on one GPU: NCCL refuses two ranks on one device, so the process group is gloo (made here, before
    connect_for_job's PartialState would make an NCCL one; the trainer's TrainingArguments keep it), and DDP
    wraps the model without device_ids (rank 1's would be GPU 1). The GRPOConfig overrides to pass."""
    from datetime import timedelta

    from accelerate import PartialState

    os.environ['ACCELERATE_BYPASS_DEVICE_MAP'] = 'true'
    PartialState(backend='gloo', timeout=timedelta(seconds=600))
    return {'ddp_backend': 'gloo'}


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


def service_run(model, tok, out: Path, live: str, dead: str) -> tuple[dict, dict]:
    """One RL step through ServiceEnv and RewardClient against the faulty fake service (and a URL that
    refuses every connection), replies marked with their (task, round, member)."""
    from chorus_train.reward_client import RewardClient

    tasks = [
        {'id': f'task{i}', 'top': top, 'design_files': [{'name': f'{top}.sv', 'content': f'module {top}; endmodule'}]}
        for i, top in enumerate(('ma', 'mb', 'mc'))
    ]

    def fn(prompt_ids, keys):
        return [
            tok(f'```systemverilog\nmodule tb_{t}_{r}_{j}; endmodule\n```', add_special_tokens=False)['input_ids'] + [tok.eos_token_id]
            for t, r, j in keys
        ]

    client = RewardClient([dead, live], timeout_s=2.0, retries=12, max_backoff_s=0.05)
    client.down_s = 0.02
    c = rl.RLConfig(
        out=str(out / 'run'),
        lr=1e-3,
        updates=10,
        group_size=4,
        prompts_per_step=3,
        agentic_rounds=2,
        max_new_tokens=24,
        micro_batch=2,
        save_every=0,
        seed=3,
        grad_clip=0.0,
    )
    logs: list[str] = []
    res = trl_engine.train_rl(c, tasks, ServiceEnv(client), model=model, tok=tok, steps=1, resume=False, sample_fn=fn, log=logs.append)
    ro = res['trainer'].rollout_func
    return res, {'masked_rows': ro.masked_rows, 'step_rows': ro.step_rows, 'client': client.stats, 'log': logs}


def lockstep_run(model, tok, out: Path) -> tuple[dict, dict]:
    """`split` (rank 0: the direct group, rank 1: the refinement group) through the engine's generation call,
    replaced by a fake holding the collective a real engine has inside (an all-reduce over every rank, as
    vLLM's weight sync on waking from sleep mode or a tensor-parallel gather): a rank that skipped the
    call in a round where it has no rows would leave the other waiting forever."""
    import torch.distributed as dist
    from trl import GRPOTrainer

    over = share_one_gpu() if DEVICE != 'cpu' and int(os.environ.get('WORLD_SIZE', '1')) > 1 else None
    calls: list[int] = []
    reply = tok('wire w;', add_special_tokens=False)['input_ids'] + [tok.eos_token_id]

    def generate(self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
        t = torch.ones(1)
        if dist.is_available() and dist.is_initialized():
            dist.all_reduce(t)
        calls.append(len(prompt_ids))
        return [list(reply) for _ in prompt_ids], None

    GRPOTrainer._generate_single_turn = generate
    # the process group made before the trainer, as `chorus-train rl` without --service does (one reward
    # service per node, reward_client.connect_for_job): the trainer must run on it
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from fake_reward_service import FakeService

    from chorus_train.reward_client import RewardClient, connect_for_job

    started: list = []

    def start(**kw):
        started.append(FakeService())
        return RewardClient(started[-1].url, **kw)

    client = connect_for_job(None, start=start, timeout_s=600)
    c = rl.RLConfig(
        out=str(out / 'run'),
        lr=1e-3,
        updates=10,
        group_size=4,
        prompts_per_step=1,
        agentic_rounds=2,
        max_new_tokens=8,
        micro_batch=2,
        save_every=0,
        seed=3,
        grad_clip=0.0,
        device=DEVICE,
    )
    env = TokenRewardEnv(set(range(100)))
    tasks = [{'id': i, 'messages': [{'role': 'user', 'content': f'Task {i}: write a testbench for m{i}.'}]} for i in range(2)]
    res = trl_engine.train_rl(c, tasks, env, model=model, tok=tok, steps=1, resume=False, log=lambda *_: None, args_over=over)
    return res, {
        'gen_calls': calls,
        'service': client.urls[0],
        'started': len(started),
        'health': client.health().get('status'),
        'device': str(next(res['model'].parameters()).device),
    }


def main() -> None:
    torch.set_num_threads(1)
    ck, out, mode = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    model, tok = load_policy(ck)
    extra: dict = {}
    emb = model.get_input_embeddings().weight.detach().float()
    good = set(torch.nonzero(emb @ torch.randn(emb.shape[1], generator=torch.Generator().manual_seed(0)) > 0).flatten().tolist())
    tasks = [{'id': i, 'messages': [{'role': 'user', 'content': f'Task {i}: write a testbench for m{i}.'}]} for i in range(2)]
    quiet = lambda *_: None  # noqa: E731
    if mode == 'lockstep':
        res, extra = lockstep_run(model, tok, out)
    elif mode == 'service':
        res, extra = service_run(model, tok, out, sys.argv[4], sys.argv[5])
    elif mode == 'opd':
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
        json.dumps({'gen_rows': tr.rollout_func.gen_rows, 'forwards': getattr(tr, 'chorus_forwards', 0), **extra})
    )
    if res['rank'] == 0:
        torch.save({k: v.detach().cpu() for k, v in res['model'].state_dict().items()}, out / 'final.pt')
        (out / 'world.txt').write_text(str(res['world']))
    trl_engine.end_distributed()


if __name__ == '__main__':
    main()
