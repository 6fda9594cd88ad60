"""Accelerator smoke run (scripts/gpu_smoke.sh): on one GPU, with a Qwen3-0.6B-shaped random model,
2 DAPO steps with vLLM rollouts (weights pushed to vLLM after each update), 1 OPD step, and the
rollout throughput of vLLM against HF `generate` on the same prompts. Prints one JSON object.

    python -m chorus_train.gpu_smoke --model /tmp/qwen3-0.6b-random [--max-new-tokens 512] [--out DIR]

The reward is the synthetic token reward of the CPU tests (no simulator needed), so the figures
are the engine's: rollout tokens/s, update seconds, weight-sync seconds.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch


def _tokens(groups) -> int:
    return sum(len(s.response_ids) for g in groups for s in g)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog='python -m chorus_train.gpu_smoke')
    ap.add_argument('--model', required=True)
    ap.add_argument('--out', default='/tmp/chorus-gpu-smoke')
    ap.add_argument('--max-new-tokens', type=int, default=512)
    ap.add_argument('--skip-vllm', action='store_true')
    a = ap.parse_args(argv)
    assert torch.cuda.is_available(), 'no CUDA device: this smoke run needs the accelerator'
    from . import opd, rl
    from .envs import TokenRewardEnv
    from .policy import HFSampler, load_policy, render

    out = Path(a.out)
    report: dict = {'device': torch.cuda.get_device_name(0), 'torch': torch.__version__, 'max_new_tokens': a.max_new_tokens}
    model, tok = load_policy(a.model, 'bfloat16', 'cuda')
    good = set(range(0, tok.vocab_size if hasattr(tok, 'vocab_size') else 151936, 2))
    env = TokenRewardEnv(good)
    tasks = [
        {'id': i, 'messages': [{'role': 'user', 'content': f'Task {i}: write a SystemVerilog testbench for module m{i}.'}]}
        for i in range(4)
    ]
    prompts = [render(tok, t['messages']) for t in tasks]

    # rollout throughput: the same 4 prompts x 4 samples (one round of the reference batch)
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
        report['vllm'] = 'not installed: RL steps use HF generate'
    sampler = None
    if have_vllm:
        from .policy import vllm_sampler

        t0 = time.time()
        sampler = vllm_sampler(a.model, tok, a.max_new_tokens, 1.0, 1.0, seed=0, gpu_memory_utilization=0.35, dtype='bfloat16')
        report['vllm_start_s'] = round(time.time() - t0, 1)
        sampler.sample(prompts[:1], 1)  # warm-up (graphs, cache)
        t0 = time.time()
        g = sampler.sample(prompts, 4)
        dt = time.time() - t0
        report['vllm_generate'] = {'seconds': round(dt, 2), 'tokens': _tokens(g), 'tokens_per_s': round(_tokens(g) / dt, 1)}
        t0 = time.time()
        sampler.sync(model)
        report['weight_sync_s'] = round(time.time() - t0, 2)

    # 2 DAPO steps (reference batch shape: 4 prompts x group 4 x 2 rounds), rollouts by vLLM when present
    cfg = rl.RLConfig(
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
    t0 = time.time()
    res = rl.train(cfg, tasks, env, model=model, tok=tok, sampler=sampler, steps=2, resume=False, log=print)
    report['rl_2_steps_s'] = round(time.time() - t0, 1)
    report['rl_state'] = res['state']
    report['rl_metrics'] = (out / 'rl' / 'metrics.csv').read_text().splitlines()[-2:]
    report['peak_gpu_memory_gib'] = round(torch.cuda.max_memory_allocated() / 2**30, 2)

    # 1 OPD step: student = the RL result, teacher = the starting checkpoint
    teacher, _ = load_policy(a.model, 'bfloat16', 'cuda')
    teacher.eval().requires_grad_(False)
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
    t0 = time.time()
    ores = opd.train(ocfg, tasks, env, student=res['model'], tok=tok, teachers=[teacher], steps=1, resume=False, log=print)
    report['opd_1_step_s'] = round(time.time() - t0, 1)
    report['opd_totals'] = ores['totals']
    report['peak_gpu_memory_gib'] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    print(json.dumps(report, indent=2))
    (out / 'gpu_smoke.json').write_text(json.dumps(report, indent=2) + '\n')


if __name__ == '__main__':
    main()
