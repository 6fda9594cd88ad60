"""`chorus-train` / `python -m chorus_train`: data | rl | merge | opd | export | eval | plan.

Every stage takes a recipe (`--config training/recipes/X.yaml`) and/or flags; `--dry-run` prints
the plan (GPUs, batch, steps, memory estimate) without loading a model.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _load_recipe(path: Path | None) -> dict:
    if not path:
        return {}
    from .recipes import load_recipe

    return load_recipe(path)


def cmd_merge(argv: list[str]) -> None:
    from . import merge as M

    ap = argparse.ArgumentParser(prog='chorus-train merge', description=M.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    M.add_args(ap)
    ap.add_argument('--dry-run', action='store_true')
    a = ap.parse_args(argv)
    if a.config:
        from .recipes import merge_specs

        specs = merge_specs(_load_recipe(a.config))
        for spec, out in specs:
            print(f'merge {spec.method:9s} base={spec.base_name():8s} density={spec.density} -> {out}')
            if not a.dry_run:
                M.merge(spec, out)
        return
    if not a.models or a.out is None:
        ap.error('give the checkpoints and --out (or --config)')
    spec, out = M.spec_from_args(a)
    if a.dry_run:
        print(
            json.dumps(
                {'method': spec.method, 'base': spec.base_name(), 'models': [[n, str(p)] for n, p in spec.models], 'out': str(out)},
                indent=2,
            )
        )
        return
    M.merge(spec, out)


def cmd_rl(argv: list[str]) -> None:
    from .recipes import plan_rl

    ap = argparse.ArgumentParser(prog='chorus-train rl', description='DAPO RL with agentic refinement (docs/protocol.md §8)')
    ap.add_argument('--config', type=Path, help='recipe YAML (rl section)')
    ap.add_argument('--stage', default=None, help='recipe stage to run (stage0, stage1, stage2)')
    ap.add_argument('--model', default=None)
    ap.add_argument('--data', default=None, help='tasks JSONL (output of `chorus-train data`)')
    ap.add_argument('--out', default=None)
    ap.add_argument('--service', action='append', default=None, help='reward service URL (repeat for round-robin); default: start one')
    ap.add_argument('--carry', choices=['worst', 'best'], default=None, help='member carried into refinement (best: the ablation)')
    ap.add_argument('--updates', type=int, default=None)
    ap.add_argument('--steps', type=int, default=None, help='stop after this many rollout steps (smoke runs)')
    ap.add_argument('--max-new-tokens', type=int, default=None)
    ap.add_argument('--no-resume', action='store_true')
    ap.add_argument('--dry-run', action='store_true')
    a = ap.parse_args(argv)
    from .recipes import rl_config

    cfg = rl_config(
        _load_recipe(a.config),
        a.stage,
        {
            k: v
            for k, v in {
                'model': a.model,
                'data': a.data,
                'out': a.out,
                'service': a.service,
                'carry': a.carry,
                'updates': a.updates,
                'max_new_tokens': a.max_new_tokens,
            }.items()
            if v is not None
        },
    )
    recipe = _load_recipe(a.config)
    print(plan_rl(cfg, recipe.get('cluster', {})))
    if a.dry_run:
        return
    from . import rl
    from .envs import ServiceEnv
    from .reward_client import connect
    from .trl_engine import end_distributed, train_rl  # the training runs on TRL's GRPOTrainer

    tasks = rl.load_tasks(cfg.data)
    with connect(cfg.service or None) as client:
        train_rl(cfg, tasks, ServiceEnv(client, cfg.timeout_s), steps=a.steps, resume=not a.no_resume)
    end_distributed()


def cmd_opd(argv: list[str]) -> None:
    from .recipes import opd_config, plan_opd

    ap = argparse.ArgumentParser(prog='chorus-train opd', description='adaptive multi-teacher on-policy distillation (docs/protocol.md §8)')
    ap.add_argument('--config', type=Path)
    ap.add_argument('--student', default=None)
    ap.add_argument('--teacher', action='append', default=None)
    ap.add_argument(
        '--routing',
        default=None,
        help='best | median | always_best | random_teacher | random_source | always_rl (best_skip: old name of best)',
    )
    ap.add_argument(
        '--gate-closed',
        choices=['skip', 'rl_fallback'],
        default=None,
        help='a closed gate: skip (the paper, Eq. 3: no gradient) or rl_fallback (the reference code: the DAPO loss)',
    )
    ap.add_argument(
        '--opd-lambda', type=float, default=None, help='the OPD coefficient (distilled advantage = lambda x a_t; 1 in the paper)'
    )
    ap.add_argument(
        '--data-offset-steps', type=int, default=None, help='start the task order this many steps x prompts in (1000: after RL)'
    )
    ap.add_argument('--data', default=None)
    ap.add_argument('--out', default=None)
    ap.add_argument('--service', action='append', default=None)
    ap.add_argument('--steps', type=int, default=None)
    ap.add_argument('--no-resume', action='store_true')
    ap.add_argument('--dry-run', action='store_true')
    a = ap.parse_args(argv)
    recipe = _load_recipe(a.config)
    cfg = opd_config(
        recipe,
        {
            k: v
            for k, v in {
                'student': a.student,
                'teachers': a.teacher,
                'routing': a.routing,
                'gate_closed': a.gate_closed,
                'opd_lambda': a.opd_lambda,
                'data_offset_steps': a.data_offset_steps,
                'data': a.data,
                'out': a.out,
                'service': a.service,
            }.items()
            if v is not None
        },
    )
    print(plan_opd(cfg, recipe.get('cluster', {})))
    if a.dry_run:
        return
    from .envs import ServiceEnv
    from .reward_client import connect
    from .rl import load_tasks
    from .trl_engine import end_distributed, train_opd  # on TRL's GRPOTrainer (ChorusOPDTrainer)

    with connect(cfg.service or None) as client:
        train_opd(cfg, load_tasks(cfg.data), ServiceEnv(client, cfg.timeout_s), steps=a.steps, resume=not a.no_resume)
    end_distributed()


def cmd_data(argv: list[str]) -> None:
    from . import data

    data.main(argv)


def cmd_export(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(
        prog='chorus-train export', description='HF checkpoint -> transformers.js ONNX layout (fp32, q4), optional GGUF'
    )
    ap.add_argument('checkpoint', type=Path)
    ap.add_argument('out', type=Path)
    ap.add_argument('--dtypes', default='fp32,q4')
    ap.add_argument('--block-size', type=int, default=32)
    ap.add_argument('--gguf', default=None, help='also write a GGUF file: q4_k_m, q4_0, q8_0 or f16')
    a = ap.parse_args(argv)
    from .export_onnx import export

    export(a.checkpoint, a.out, [d.strip() for d in a.dtypes.split(',') if d.strip()], block=a.block_size)
    if a.gguf:
        from .gguf_export import export_gguf

        print(export_gguf(a.checkpoint, a.out, a.gguf))


def cmd_eval(argv: list[str]) -> None:
    from .evaluate import main as eval_main

    sys.exit(eval_main(argv))


def cmd_chain(argv: list[str]) -> None:
    """The whole reproduction as one plan: RL on the three stages, the merges, OPD, export."""
    from .recipes import chain_plan

    ap = argparse.ArgumentParser(prog='chorus-train chain', description='the CHORUS chain: RL x3 -> merge -> OPD -> export')
    ap.add_argument('--config', type=Path, required=True, help='recipes/chain_1x8.yaml or chain_2x8.yaml')
    ap.add_argument('--dry-run', action='store_true', help='print the plan, memory and GPU-hour estimates, and the launch commands')
    a = ap.parse_args(argv)
    plan, commands = chain_plan(_load_recipe(a.config), a.config)
    print(plan)
    for c in commands:
        print('$ ' + c)
    if a.dry_run:
        return
    import subprocess

    for c in commands:
        print(f'==> {c}', flush=True)
        subprocess.run(c, shell=True, check=True)


COMMANDS = {'chain': cmd_chain, 'data': cmd_data, 'rl': cmd_rl, 'merge': cmd_merge, 'opd': cmd_opd, 'export': cmd_export, 'eval': cmd_eval}


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ('-h', '--help') or argv[0] not in COMMANDS:
        print(__doc__.strip())
        print('\ncommands: ' + ', '.join(COMMANDS))
        sys.exit(0 if not argv or argv[0] in ('-h', '--help') else 2)
    COMMANDS[argv[0]](argv[1:])


if __name__ == '__main__':
    main()
