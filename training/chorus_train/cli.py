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
    ap.add_argument('--seed', type=int, default=None, help="the prompt draw's seed (default: the stage's, see rl.yaml)")
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
                'seed': a.seed,
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
    from .reward_client import connect_for_job
    from .trl_engine import end_distributed, train_rl  # the training runs on TRL's GRPOTrainer

    tasks = rl.load_tasks(cfg.data)
    with connect_for_job(cfg.service or None, timeout_s=cfg.ddp_timeout_s) as client:  # the given URLs, or one service per node
        train_rl(cfg, tasks, ServiceEnv(client, cfg.timeout_s), steps=a.steps, resume=not a.no_resume)
        end_distributed()  # every rank done with the service before its node's first rank stops it


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
    ap.add_argument('--seed', type=int, default=None, help="the prompt draw's seed (the recipe: the student's RL stage's)")
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
                'seed': a.seed,
                'service': a.service,
            }.items()
            if v is not None
        },
    )
    print(plan_opd(cfg, recipe.get('cluster', {})))
    if a.dry_run:
        return
    from .envs import ServiceEnv
    from .reward_client import connect_for_job
    from .rl import load_tasks
    from .trl_engine import end_distributed, train_opd  # on TRL's GRPOTrainer (ChorusOPDTrainer)

    with connect_for_job(cfg.service or None, timeout_s=cfg.ddp_timeout_s) as client:  # the given URLs, or one service per node
        train_opd(cfg, load_tasks(cfg.data), ServiceEnv(client, cfg.timeout_s), steps=a.steps, resume=not a.no_resume)
        end_distributed()  # every rank done with the service before its node's first rank stops it


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
    """The whole reproduction as one plan: RL on the three stages, the merges, OPD, export. On several nodes
    run it on every node (NODE_RANK, MASTER_ADDR as for the launches): the launches join one job, and the
    merges and the export run once, on node 0, while the other nodes wait (run_chain)."""
    import os

    from .recipes import chain_plan

    ap = argparse.ArgumentParser(prog='chorus-train chain', description='the CHORUS chain: RL x3 -> merge -> OPD -> export')
    ap.add_argument('--config', type=Path, required=True, help='recipes/chain_1x8.yaml or chain_2x8.yaml')
    ap.add_argument('--dry-run', action='store_true', help='print the plan, memory and GPU-hour estimates, and the launch commands')
    a = ap.parse_args(argv)
    plan, commands = chain_plan(_load_recipe(a.config), a.config)
    print(plan)
    for c, _ in commands:
        print('$ ' + c)
    if a.dry_run:
        return
    nodes = json.loads(plan.removeprefix('plan: '))['nodes']
    run_chain(
        commands,
        node_rank=int(os.environ.get('NODE_RANK', '0')),
        nodes=nodes,
        addr=os.environ.get('MASTER_ADDR', '127.0.0.1'),
        port=int(os.environ.get('CHORUS_CHAIN_PORT', '29501')),
    )


def _shell(command: str) -> int:
    import subprocess

    return subprocess.run(command, shell=True).returncode


def run_chain(
    commands: list[tuple[str, bool]],
    node_rank: int = 0,
    nodes: int = 1,
    addr: str = '127.0.0.1',
    port: int = 29501,
    run=_shell,
    timeout_s: float = 7 * 86400,
) -> None:
    """The chain's commands in order on this node. A launch (once=False) runs on every node. A once-per-job
    command (the merges, the export: they write shared files) runs on node 0 only; the other nodes wait
    for its exit status before their next command, through a TCP store on node 0 (MASTER_ADDR:port, the
    launches use 29500): a barrier that needs no shared file system. A failure stops every node, named."""
    store = None
    if nodes > 1:
        from datetime import timedelta

        import torch.distributed as dist

        store = dist.TCPStore(addr, port, world_size=nodes, is_master=node_rank == 0, timeout=timedelta(seconds=timeout_s))
    for i, (command, once) in enumerate(commands):
        if once and node_rank != 0:
            print(f'==> node {node_rank}: waiting for node 0: {command}', flush=True)
            rc = int(store.get(f'chorus-chain-{i}'))
            store.set(f'chorus-chain-{i}-seen-{node_rank}', '1')
            if rc:
                raise SystemExit(f'node 0 failed (exit {rc}): {command}')
            continue
        print(f'==> {command}', flush=True)
        rc = run(command)
        if once and store is not None:
            store.set(f'chorus-chain-{i}', str(rc))
            if rc:  # the store lives in this process: keep it until every node has read the failure
                store.wait([f'chorus-chain-{i}-seen-{n}' for n in range(1, nodes)])
        if rc:
            raise SystemExit(f'failed (exit {rc}): {command}')
    if store is not None:  # node 0 keeps the store up until every node has read its last answer
        if node_rank == 0:
            store.wait([f'chorus-chain-done-{n}' for n in range(1, nodes)])
        else:
            store.set(f'chorus-chain-done-{node_rank}', '1')


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
