"""The trainer callbacks of the TRL runs: the metrics line and metrics.csv row per step, and OPD's
routing RNG saved in each checkpoint (restored by trl_engine.train_opd)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from . import opd as O
from .opd_state import OPDState
from .rl import METRICS, _mean
from .rollout import ChorusRollout

# ---------------------------------------------------------------------------------------------
# metrics


def _metrics_callback(out: Path, rollout: ChorusRollout, opd_state: OPDState | None, log):
    from transformers import TrainerCallback

    path = out / 'metrics.csv'
    mini = max(int(getattr(rollout.cfg, 'mini_batches', 1)), 1)
    fields = METRICS if opd_state is None else O.OPD_METRICS

    class Metrics(TrainerCallback):
        def on_train_begin(self, args, state, control, **kw):
            if state.is_world_process_zero and (not path.exists() or state.global_step == 0):
                with open(path, 'w', newline='') as f:
                    csv.DictWriter(f, fieldnames=fields).writeheader()

        def on_log(self, args, state, control, logs=None, **kw):
            if not state.is_world_process_zero or not logs or 'loss' not in logs:
                return
            facts = [f for f in rollout.facts if f[0] != 'group']
            groups = [f for f in rollout.facts if f[0] == 'group']
            if opd_state is None:
                direct = [f for f in facts if f[0] == 0]
                refine = [f for f in facts if f[0] > 0]
                row = {
                    'step': -(-state.global_step // mini),  # rollout steps; `mini_batches` updates each
                    'updates': state.global_step,
                    'reward': _mean(f[1] for f in facts),
                    'coverage': _mean(f[2] for f in facts),
                    'pass_rate': _mean(f[3] for f in facts),
                    'reward_direct': _mean(f[1] for f in direct),
                    'reward_refine': _mean(f[1] for f in refine),
                    'coverage_direct': _mean(f[2] for f in direct),
                    'coverage_refine': _mean(f[2] for f in refine),
                    'clip_frac': logs.get('clip_ratio/region_mean'),
                    'clip_lo_frac': logs.get('clip_ratio/low_mean'),
                    'clip_hi_frac': logs.get('clip_ratio/high_mean'),
                    'entropy': logs.get('entropy'),
                    'response_len': _mean(f[4] for f in facts),
                    'truncated_frac': _mean(f[5] for f in facts),
                    'loss': logs.get('loss'),
                    'zero_adv_groups': sum(1 for g in groups if g[2]),
                    'score_failures': sum(g[3] for g in groups),
                    'masked_rows': rollout.masked_rows,
                    'overlong_rows': rollout.overlong_rows,
                    'max_prompt_tokens': rollout.max_prompt,
                    'seconds': logs.get('step_time'),
                }
                log(
                    f'step {row["step"]}: reward {row["reward"]:.3f} coverage {row["coverage"]:.3f} clip {row["clip_frac"]} loss {row["loss"]}'
                )
            else:
                ds = list(opd_state.routes.values())
                row = {
                    'step': state.global_step,
                    'units': len(ds),
                    'distilled': sum(d.kind == 'distill' for d in ds),
                    'gate_closed': sum(d.gate_closed for d in ds),
                    'rl_fallback': sum(d.kind == 'rl' and not d.gate_closed for d in ds),
                    'skipped': sum(d.kind == 'skip' for d in ds),
                    'integrity_failures': sum(d.integrity for d in ds),
                    'reward_student': _mean(f[1] for f in facts),
                    'reward_teachers': _mean(
                        s.reward for ts in opd_state.teacher_scores for t in ts for s in t if s is not None and s.reward is not None
                    ),
                    'loss': logs.get('loss'),
                    'tokens': None,
                    'score_failures': sum(g[3] for g in groups),
                    'masked_rows': rollout.masked_rows,
                    'overlong_rows': rollout.overlong_rows,
                    'max_prompt_tokens': rollout.max_prompt,
                    'seconds': logs.get('step_time'),
                    **opd_state.step_stats,
                }
                opd_state.teacher_scores = []
                log(
                    f'opd step {row["step"]}: distilled {row["distilled"]} gate-closed {row["gate_closed"]} rl {row["rl_fallback"]} mean a {row["mean_a"]:.3f}'
                )
            if rollout.overlong_rows:
                log(
                    f'step {row["step"]}: {rollout.overlong_rows} of {rollout.step_rows} rows left out, their prompt passes the cap '
                    f'of {rollout.cfg.prompt_cap} tokens (max_context - max_new_tokens) even without older turns'
                )
            if rollout.masked_rows:  # never fatal, never silent
                log(
                    f'step {row["step"]}: {rollout.masked_rows} of {rollout.step_rows} rows masked, the reward service gave no '
                    f'answer ({"; ".join(rollout.mask_reasons[:2])})'
                )
            with open(path, 'a', newline='') as f:
                csv.DictWriter(f, fieldnames=fields).writerow({k: row.get(k) for k in fields})

    return Metrics()


# ---------------------------------------------------------------------------------------------
# OPD's routing RNG in checkpoints


ROUTE_RNG = 'chorus_route_rng.json'  # OPD's routing RNG, saved beside TRL's own RNG state in each checkpoint


def _rng_state(x):
    return tuple(tuple(v) if isinstance(v, list) else v for v in x)


def _route_rng_callback(state: OPDState):
    from transformers import TrainerCallback

    class RouteRng(TrainerCallback):
        def on_save(self, args, st, control, **kw):
            d = Path(args.output_dir) / f'checkpoint-{st.global_step}'
            if st.is_world_process_zero and d.exists():
                (d / ROUTE_RNG).write_text(json.dumps(state.rng.getstate()))

    return RouteRng()
