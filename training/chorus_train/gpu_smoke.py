"""Accelerator smoke run (scripts/gpu_smoke.sh) of the TRL engine path (trl_engine.py): on one GPU,
with a Qwen3-0.6B-shaped random model, 2 DAPO steps on TRL's GRPOTrainer with TRL's colocated vLLM
rollouts (weights synced into vLLM after each update), 1 OPD step on TRL, and the rollout
throughput of vLLM inside TRL against HF `generate` on the same prompts. Prints one JSON object.

    python -m chorus_train.gpu_smoke --model /tmp/qwen3-0.6b-random [--max-new-tokens 512] [--out DIR] [--dry-run]

The reward is the synthetic token reward of the CPU tests (no simulator needed), so the figures
are the engine's: rollout tokens/s, update seconds, weight-sync seconds. It also checks that the RL
steps at the recipe's lr 1e-6 MOVE the weights (fp32 master weights: >= 99% of the non-embedding
parameters change; pure bf16 would round ~98% of the updates away) and ends with a short table.
Under `torchrun --nproc_per_node 2` (gpu_smoke.sh does it when 2 GPUs exist) each rank runs on its
own GPU and rank 0 reports. OPD's teachers sample with HF generate, one batched call per teacher and round
(vLLM teachers are not built). gpu_smoke.sh runs the GPU checks (gpu_checks.py) before this.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch


def _tokens(groups) -> int:
    return sum(len(s.response_ids) for g in groups for s in g)


def _configs(a, out: Path, have_vllm: bool):
    from . import opd, rl

    rcfg = rl.RLConfig(
        out=str(out / 'rl'),
        model=a.model,
        lr=1e-6,
        updates=2,
        group_size=4,
        prompts_per_step=4,
        agentic_rounds=2,
        max_new_tokens=a.max_new_tokens,
        micro_batch=4,
        save_every=0,
        dtype='bfloat16',
        device='cuda',
        rollout_engine='vllm' if have_vllm else 'hf',
    )
    ocfg = opd.OPDConfig(
        out=str(out / 'opd'),
        lr=1e-6,
        updates=1,
        prompts_per_step=4,
        student_samples=4,
        teacher_samples=2,
        agentic_rounds=2,
        max_new_tokens=a.max_new_tokens,
        micro_batch=4,
        save_every=0,
        dtype='bfloat16',
        device='cuda',
        routing='always_best',
    )
    return rcfg, ocfg


# TRL's colocated vLLM (one engine in this process, weights synced from the policy after every update)
VLLM_ARGS = {'vllm_mode': 'colocate', 'vllm_gpu_memory_utilization': 0.35, 'vllm_enable_sleep_mode': False}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog='python -m chorus_train.gpu_smoke')
    ap.add_argument('--model', required=True)
    ap.add_argument('--out', default='/tmp/chorus-gpu-smoke')
    ap.add_argument('--max-new-tokens', type=int, default=512)
    ap.add_argument('--skip-vllm', action='store_true')
    ap.add_argument('--dry-run', action='store_true', help='print the TRL configurations of the run (no GPU, no model)')
    a = ap.parse_args(argv)
    from . import trainers, trl_engine

    out = Path(a.out)
    if a.dry_run:
        rcfg, ocfg = _configs(a, out, have_vllm=not a.skip_vllm)
        plan = {}
        for name, c, g, extra in (
            ('rl', rcfg, rcfg.group_size, VLLM_ARGS if not a.skip_vllm else {}),
            ('opd', ocfg, ocfg.student_samples, {}),
        ):
            c.device = 'cpu'  # the plan only; the run is on the GPU
            args = trainers.grpo_args(
                c,
                group=g,
                rounds=c.agentic_rounds,
                prompts=c.prompts_per_step,
                world=1,
                steps_total=c.updates,
                use_vllm=False,
                **{k: v for k, v in extra.items() if k != 'vllm_mode'},
            )
            keys = (
                'loss_type',
                'epsilon',
                'epsilon_high',
                'beta',
                'num_generations',
                'generation_batch_size',
                'per_device_train_batch_size',
                'steps_per_generation',
                'gradient_accumulation_steps',
                'learning_rate',
                'adam_beta1',
                'adam_beta2',
                'temperature',
                'top_p',
                'max_completion_length',
                'max_steps',
            )
            plan[name] = {k: getattr(args, k) for k in keys} | {'rollouts': 'vllm colocate' if extra else 'hf generate'}
        checks = {
            'weights_move': 'fraction of non-embedding parameters changed by the 2 RL steps at lr 1e-6 >= 0.99',
            'ranks': 'this process; gpu_smoke.sh adds a 2-rank torchrun run when 2 GPUs exist',
        }
        print(json.dumps({'model': a.model, 'out': str(out), 'plan': plan, 'checks': checks}, indent=2, default=str))
        return
    assert torch.cuda.is_available(), 'no CUDA device: this smoke run needs the accelerator'
    from .envs import TokenRewardEnv
    from .evaluate import free_port
    from .policy import HFSampler, load_policy, render

    # TRL's colocated vLLM runs as an external launcher of torch.distributed, even in one process
    for k, v in {'RANK': '0', 'LOCAL_RANK': '0', 'WORLD_SIZE': '1', 'MASTER_ADDR': '127.0.0.1', 'MASTER_PORT': str(free_port())}.items():
        os.environ.setdefault(k, v)
    local = int(os.environ['LOCAL_RANK'])
    rank0 = int(os.environ['RANK']) == 0
    torch.cuda.set_device(local)
    dev = f'cuda:{local}'
    report: dict = {
        'device': torch.cuda.get_device_name(0),
        'torch': torch.__version__,
        'max_new_tokens': a.max_new_tokens,
        'engine': 'trl',
    }
    import trl

    report['trl'] = trl.__version__
    model, tok = load_policy(a.model, 'bfloat16', dev)
    # the weights before the RL steps (non-embedding: the embedding rows of unseen tokens get no gradient)
    before = {n: p.detach().float().cpu() for n, p in model.named_parameters() if 'embed' not in n and 'lm_head' not in n}
    report['world'] = int(os.environ['WORLD_SIZE'])
    good = set(range(0, tok.vocab_size if hasattr(tok, 'vocab_size') else 151936, 2))
    env = TokenRewardEnv(good)
    tasks = [
        {'id': i, 'messages': [{'role': 'user', 'content': f'Task {i}: write a SystemVerilog testbench for module m{i}.'}]}
        for i in range(4)
    ]
    prompts = [render(tok, t['messages']) for t in tasks]

    # HF generate on the same 4 prompts x 4 samples (one round of the reference batch): the baseline
    hf = HFSampler(model, tok, a.max_new_tokens, 1.0, 1.0, seed=0)
    torch.cuda.synchronize()
    t0 = time.time()
    g = hf.sample(prompts, 4)
    torch.cuda.synchronize()
    dt = time.time() - t0
    report['hf_generate'] = {'seconds': round(dt, 2), 'tokens': _tokens(g), 'tokens_per_s': round(_tokens(g) / dt, 1)}
    try:
        import vllm  # noqa: F401

        have_vllm = not a.skip_vllm
        report['vllm'] = vllm.__version__
    except ImportError:
        have_vllm = False
        report['vllm'] = 'not installed: the RL steps use HF generate inside TRL'
    rcfg, ocfg = _configs(a, out, have_vllm)

    # 2 DAPO steps on TRL (4 prompts x group 4 x 2 rounds), rollouts by TRL's colocated vLLM when present
    t0 = time.time()
    res = trl_engine.train_rl(
        rcfg, tasks, env, model=model, tok=tok, steps=2, resume=False, log=print, args_over=VLLM_ARGS if have_vllm else None
    )
    report['rl_2_steps_s'] = round(time.time() - t0, 1)
    ro = res['rollout']
    report['rl_rollout'] = {
        'engine': 'vllm (TRL colocate)' if have_vllm else 'hf generate (TRL)',
        'seconds': round(ro.gen_seconds, 2),
        'tokens': ro.gen_tokens,
        'tokens_per_s': round(ro.gen_tokens / max(ro.gen_seconds, 1e-9), 1),
    }
    report['rl_global_step'] = res['trainer'].state.global_step
    after = dict(res['model'].named_parameters())
    changed = sum(int((after[n].detach().float().cpu() != b).sum()) for n, b in before.items())
    total = sum(b.numel() for b in before.values())
    report['weights_changed_frac'] = round(changed / max(total, 1), 4)
    report['weights_move'] = changed / max(total, 1) >= 0.99
    report['policy_param_dtype'] = str(next(res['model'].parameters()).dtype)
    del before, after
    report['rl_metrics'] = (out / 'rl' / 'metrics.csv').read_text().splitlines()[-2:]
    report['peak_gpu_memory_gib'] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    student = res['model']
    del res
    torch.cuda.empty_cache()

    # 1 OPD step on TRL: student = the RL result, teacher = the starting checkpoint
    teacher, _ = load_policy(a.model, 'bfloat16', dev)
    teacher.eval().requires_grad_(False)
    t0 = time.time()
    ores = trl_engine.train_opd(ocfg, tasks, env, student=student, tok=tok, teachers=[teacher], steps=1, resume=False, log=print)
    report['opd_1_step_s'] = round(time.time() - t0, 1)
    report['opd_totals'] = ores['totals']
    report['peak_gpu_memory_gib'] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    trl_engine.end_distributed()
    if not rank0:
        return
    print(json.dumps(report, indent=2))
    (out / 'gpu_smoke.json').write_text(json.dumps(report, indent=2) + '\n')
    print(table(report))


def table(r: dict) -> str:
    """The short summary table printed at the end."""
    rows = [
        ('ranks', r.get('world')),
        ('rollouts', r.get('rl_rollout', {}).get('engine')),
        ('rollout tokens/s', r.get('rl_rollout', {}).get('tokens_per_s')),
        ('HF generate tokens/s', r.get('hf_generate', {}).get('tokens_per_s')),
        ('RL 2 steps (s)', r.get('rl_2_steps_s')),
        ('weights changed at lr 1e-6', f'{r.get("weights_changed_frac")} ({"PASS" if r.get("weights_move") else "FAIL"})'),
        ('policy parameter dtype', r.get('policy_param_dtype')),
        ('OPD 1 step (s)', r.get('opd_1_step_s')),
        ('OPD routes', r.get('opd_totals')),
        ('peak GPU memory (GiB)', r.get('peak_gpu_memory_gib')),
    ]
    w = max(len(k) for k, _ in rows)
    return '\n'.join(f'{k:<{w}}  {v}' for k, v in rows)


if __name__ == '__main__':
    main()
