"""RL (DAPO) and OPD on TRL's `GRPOTrainer` (trl 1.16): the engine owns generation (HF generate, or
vLLM colocated / as a `trl vllm-serve` server with weight sync), the clipped surrogate, data
parallelism and sharding (accelerate: DDP, FSDP, DeepSpeed), checkpoints and resume. CHORUS
supplies only what is its own:

- the environment (`ChorusRollout`, TRL's `rollout_func`): per task, the direct group, then the
  worst scored member (its <think> stripped) and the service's feedback turn as the refinement
  prompt (envs.py / rl.carry_messages; the service owns prompts, parsing and feedback);
- the reward, R = 1 + coverage when the testbench runs, else 0, from the service (a member the
  service fails to score is re-scored, then left out: reward None and no loss tokens, never 0);
- for OPD (`ChorusOPDTrainer`), the gate, routing and integrity rules of opd.py, decided on every
  agentic round; a round whose gate opens gets the per-token distillation advantage
  a_t = r_t - b_t (opd.opd_advantages) in place of the group advantage, every other round keeps
  the DAPO loss on the student's group.

Row layout. TRL groups rewards by `num_generations` consecutive rows. Each task of a step is
drawn `agentic_rounds x group` times in a row (`_get_train_sampler`): rows 0..G-1 of the block are
the direct group, rows G..2G-1 the refinement group. TRL splits the generation batch over the
processes in contiguous slices, so a rank may hold a task's direct group and another its
refinement group: the rounds run in lockstep, the scored members gathered after each round, so
every rank carries the same member (as rl.rollout_batch did).

DAPO on TRL: loss_type "dapo" (token-level mean over the whole generation batch, all ranks),
epsilon 0.2 / epsilon_high 0.28, beta 0 (no KL, no reference model), group-scaled advantages
(R - mean) / (std + 1e-4) (TRL's epsilon; ours was 1e-6), log-probs at the rollout temperature,
AdamW (0.9, 0.95) at a constant lr, one optimizer update per rollout batch (mini_batches > 1:
several). On-policy (one update per generation) TRL's ratio is 1, so the surrogate's gradient on a
row with per-token advantages a_t is exactly the distillation gradient -a_t grad log pi_S.
"""

from __future__ import annotations

import csv
import json
import os
import random
from dataclasses import asdict
from pathlib import Path

import torch

from . import opd as O
from .envs import Env, rescore_failed
from .policy import Sample, render, save_tokenizer
from .rl import METRICS, _mean, carry_messages, pick_carry

os.environ.setdefault('TRL_EXPERIMENTAL_SILENCE', '1')


# ---------------------------------------------------------------------------------------------
# configuration


def _divisor_at_most(n: int, k: int) -> int:
    return max(d for d in range(1, max(min(n, k), 1) + 1) if n % d == 0)


def grpo_args(
    cfg,
    *,
    group: int,
    rounds: int,
    prompts: int,
    world: int,
    steps_total: int,
    use_vllm: bool = False,
    sample_top_k: int | None = None,
    **over,
):
    """TRL's GRPOConfig for a CHORUS recipe section (RLConfig or OPDConfig).

    One generation batch = one CHORUS step: prompts x rounds x group rows (the reference: 4 x 2 x 4
    = 32), split over `world` processes; micro-batches of at most `micro_batch` rows; one optimizer
    update per generation (`mini_batches` updates when the recipe asks for more)."""
    from trl import GRPOConfig

    rows = prompts * rounds * group
    mini = max(int(getattr(cfg, 'mini_batches', 1)), 1)
    if rows % (world * mini):
        raise SystemExit(
            f'{rows} rows per step ({prompts} prompts x {rounds} rounds x {group}) do not split over {world} processes x {mini} mini-batches'
        )
    per_rank = rows // world
    per_device = _divisor_at_most(per_rank // mini, cfg.micro_batch)
    spg = per_rank // per_device  # micro-batches per generation
    cpu = cfg.device == 'cpu' or not torch.cuda.is_available()
    kw = dict(
        output_dir=cfg.out,
        learning_rate=cfg.lr,
        lr_scheduler_type='constant',
        warmup_steps=0,
        optim='adamw_torch',
        adam_beta1=cfg.adam_beta1,
        adam_beta2=cfg.adam_beta2,
        weight_decay=float(getattr(cfg, 'weight_decay', 0.0)),
        max_grad_norm=float(cfg.grad_clip or 0.0),
        per_device_train_batch_size=per_device,
        gradient_accumulation_steps=spg // mini,
        steps_per_generation=spg,
        num_iterations=1,
        num_generations=group,
        max_completion_length=cfg.max_new_tokens,
        temperature=cfg.temperature,
        top_p=cfg.top_p,
        top_k=int(sample_top_k or 0),
        loss_type='dapo',
        epsilon=cfg.eps_lo,
        epsilon_high=cfg.eps_hi,
        beta=0.0,
        scale_rewards='group',
        mask_truncated_completions=False,
        max_steps=steps_total,
        save_strategy='steps' if cfg.save_every else 'no',
        save_steps=max(int(cfg.save_every or 1), 1),
        save_total_limit=max(int(getattr(cfg, 'keep_checkpoints', 3) or 0), 1),
        logging_steps=1,
        report_to=[],
        seed=cfg.seed,
        data_seed=cfg.seed,
        use_cpu=cpu,
        bf16=cfg.dtype == 'bfloat16' and not cpu,
        remove_unused_columns=False,
        shuffle_dataset=True,
        disable_tqdm=True,
        log_completions=False,
        use_vllm=use_vllm,
        vllm_mode=getattr(cfg, 'vllm_mode', 'colocate'),
        **({'vllm_server_base_url': cfg.vllm_server} if getattr(cfg, 'vllm_server', '') else {}),
        save_only_model=False,
        dataloader_num_workers=0,
    )
    kw.update(over)
    return GRPOConfig(**kw)


# ---------------------------------------------------------------------------------------------
# the environment: TRL's rollout_func


class ChorusRollout:
    """`rollout_func(prompts, trainer)` for this process's rows (see the module docstring).

    `sample_fn(prompt_ids_rows, keys) -> completion_ids_rows` replaces the engine's generation in
    tests (keys: (task index, round, member), the same on any rank); by default the trainer's own
    generation runs (HF generate, or vLLM with its weight sync)."""

    def __init__(self, tasks: list[dict], env: Env, tok, cfg, group: int, rounds: int, sample_fn=None, opd=None):
        self.tasks, self.env, self.tok, self.cfg = tasks, env, tok, cfg
        self.group, self.rounds = group, rounds
        self.sample_fn = sample_fn
        self.opd = opd  # OPDState for ChorusOPDTrainer, else None
        self.facts: list[tuple] = []  # the last step's gathered facts (metrics)
        self.last: dict = {}  # the last step's per-row record (tests, OPD routes)
        self.gen_seconds = 0.0  # time in the engine's generation, and the tokens it returned (gpu_smoke)
        self.gen_tokens = 0

    # ---- helpers that touch the engine
    def _gather(self, trainer, items: list) -> list:
        if trainer.accelerator.num_processes == 1:
            return list(items)
        from accelerate.utils import gather_object

        return gather_object(items)

    def _generate(self, trainer, prompt_ids: list[list[int]], keys: list[tuple]) -> tuple[list[list[int]], list | None]:
        """Completions for this rank's rows of one round. Every rank calls the engine once per round with
        as many rows as the busiest rank (filler rows discarded), so collective generation (vLLM server
        mode, DeepSpeed ZeRO-3 parameter gathering) sees every rank."""
        import time

        t0 = time.perf_counter()
        try:
            ids, lps = self._generate_rows(trainer, prompt_ids, keys)
        finally:
            self.gen_seconds += time.perf_counter() - t0
        self.gen_tokens += sum(len(x) for x in ids)
        return ids, lps

    def _generate_rows(self, trainer, prompt_ids: list[list[int]], keys: list[tuple]) -> tuple[list[list[int]], list | None]:
        if self.sample_fn is not None:
            return (self.sample_fn(prompt_ids, keys) if prompt_ids else []), None
        need = len(prompt_ids)
        if trainer.accelerator.num_processes > 1:
            need = max(self._gather(trainer, [len(prompt_ids)]))
        if need == 0:
            return [], None
        filler = prompt_ids[0] if prompt_ids else [self.tok.eos_token_id]
        rows = prompt_ids + [filler] * (need - len(prompt_ids))
        ids, logprobs = trainer._generate_single_turn(rows, None, {}, self.group)
        ids = [list(map(int, x)) for x in ids[: len(prompt_ids)]]
        if logprobs is not None:
            logprobs = [[lp[0] if isinstance(lp, (list, tuple)) else lp for lp in seq] for seq in logprobs[: len(prompt_ids)]]
        return ids, logprobs

    def _eos(self, trainer) -> set[int]:
        ids = getattr(trainer, 'eos_token_ids', None) or [self.tok.eos_token_id]
        return {int(x) for x in (ids if isinstance(ids, (list, tuple, set)) else [ids])}

    # ---- the rounds
    def __call__(self, prompts: list, trainer) -> dict:
        acc = trainer.accelerator
        G, R = self.group, self.rounds
        inputs = trainer._chorus_inputs
        n = len(prompts)
        base = acc.process_index * n
        task_of = self._gather(trainer, [int(x['task_idx']) for x in inputs])  # global row -> task index
        eos = self._eos(trainer)
        blocks = {g // (R * G) for g in range(len(task_of))}
        msgs = {b: None for b in blocks}  # the conversation of each task block, filled on demand
        rows: dict[int, dict] = {}  # this rank's rows: global index -> record
        facts: list[tuple] = []
        live = set(blocks)
        for rnd in range(R):
            mine = [g for g in range(base, base + n) if (g % (R * G)) // G == rnd and g // (R * G) in live]
            for g in mine:
                b = g // (R * G)
                if msgs[b] is None:
                    msgs[b] = list(self.env.first_turn(self.tasks[task_of[g]]))
            p_ids = [render(self.tok, msgs[g // (R * G)]) for g in mine]
            keys = [(task_of[g], rnd, g % G) for g in mine]
            comp, lps = self._generate(trainer, p_ids, keys)
            samples = {}
            for k, g in enumerate(mine):
                resp = comp[k]
                text = self.tok.decode(resp, skip_special_tokens=True)
                samples[g] = Sample(
                    p_ids[k], resp, text, truncated=not resp or resp[-1] not in eos, meta={'who': 'student', 'key': keys[k]}
                )
                rows[g] = {
                    'round': rnd,
                    'sample': samples[g],
                    'logprobs': lps[k] if lps is not None else None,
                    'messages': msgs[g // (R * G)],
                }
            # scores, per task block (one request per block and round)
            local = []
            for b in sorted({g // (R * G) for g in mine}):
                gs = [g for g in mine if g // (R * G) == b]
                task = self.tasks[task_of[gs[0]]]
                sc = self.env.score(task, [samples[g] for g in gs])
                if self.opd is None:  # RL: a failed score is asked for again now (OPD first gates on integrity)
                    sc = rescore_failed(self.env, task, [samples[g] for g in gs], sc, tries=self.cfg.rescore_tries)
                local += [(g, samples[g], s) for g, s in zip(gs, sc, strict=False)]
            if self.opd is not None:
                local = self.opd.round(self, trainer, rnd, mine, samples, local, task_of, msgs)
            everyone = sorted(self._gather(trainer, local), key=lambda x: x[0])
            for g, _, s in local:
                rows[g]['score'] = s
            nxt = set()
            for b in sorted(live):
                members = [x for x in everyone if x[0] // (R * G) == b and (x[0] % (R * G)) // G == rnd]
                if not members:
                    continue
                scores = [x[2] for x in members]
                ok = [s for s in scores if s is not None and not s.failed]
                facts += [
                    (rnd, s.reward, s.coverage, float(s.passed), len(x[1].response_ids), float(x[1].truncated))
                    for x, s in zip(members, scores, strict=True)
                    if s in ok
                ]
                facts.append(('group', rnd, len({s.reward for s in ok}) <= 1, len(scores) - len(ok)))
                if rnd + 1 < R:
                    k = pick_carry(scores, self.cfg.carry)
                    if k is not None:  # nothing scored: nothing to refine from, the block's later rows stay empty
                        nxt.add(b)
                        later = any((g % (R * G)) // G > rnd and g // (R * G) == b for g in range(base, base + n))
                        if later:  # only the ranks that sample a later round ask the service for the feedback turn
                            task = self.tasks[task_of[members[k][0]]]
                            if msgs[b] is None:
                                msgs[b] = list(self.env.first_turn(task))
                            msgs[b] = carry_messages(msgs[b], self.env, task, members[k][1], scores[k])
            live = nxt
        self.facts = facts
        out = {'prompt_ids': [], 'completion_ids': [], 'logprobs': [], 'env_mask': [], 'chorus_reward': []}
        any_lp = any(r.get('logprobs') is not None for r in rows.values())
        for g in range(base, base + n):
            r = rows.get(g)
            s = r.get('score') if r else None
            if r is None:  # a refinement row of a task with nothing carried: no tokens, no reward
                out['prompt_ids'].append([self.tok.eos_token_id])
                out['completion_ids'].append([self.tok.eos_token_id])
                out['logprobs'].append([0.0])
                out['env_mask'].append([0])
                out['chorus_reward'].append(None)
                continue
            smp = r['sample']
            resp = smp.response_ids or [self.tok.eos_token_id]
            ok = s is not None and not s.failed
            out['prompt_ids'].append(smp.prompt_ids)
            out['completion_ids'].append(resp)
            lp = list(r['logprobs'] or [])[: len(resp)]
            out['logprobs'].append(lp + [0.0] * (len(resp) - len(lp)))  # one per completion token (TRL's shape)
            out['env_mask'].append([1 if ok else 0] * len(resp))  # an unscored member is left out of the loss
            out['chorus_reward'].append(float(s.reward) if ok else None)
        if not any_lp:
            out['logprobs'] = None  # HF generate: TRL recomputes the old log-probs when it needs them
        self.last = {'rows': rows, 'base': base, 'task_of': task_of}
        return out


def chorus_reward(prompts=None, completions=None, chorus_reward=None, **_):
    """TRL reward function: the service's reward carried by the rollout (None: unscored, excluded from the
    group's mean and std by TRL and given advantage 0)."""
    return list(chorus_reward)


# ---------------------------------------------------------------------------------------------
# the trainers


def _trainer_classes():
    from trl import GRPOTrainer
    from trl.trainer.utils import RepeatSampler

    class ChorusGRPOTrainer(GRPOTrainer):
        """GRPOTrainer whose generation batch holds whole tasks: rounds x group rows per task."""

        def __init__(self, *a, chorus_rounds: int = 2, **kw):
            self.chorus_rounds = chorus_rounds
            self._chorus_inputs = None
            super().__init__(*a, **kw)

        def _get_train_sampler(self, dataset=None):
            ds = dataset if dataset is not None else self.train_dataset
            block = self.num_generations * self.chorus_rounds
            return RepeatSampler(
                data_source=ds,
                mini_repeat_count=block,
                batch_size=self.args.generation_batch_size // block,
                repeat_count=self.num_iterations * self.args.steps_per_generation,
                shuffle=self.shuffle_dataset,
                seed=self.args.seed,
            )

        def _generate_and_score_completions(self, inputs):
            self._chorus_inputs = inputs  # the rollout reads each row's task index
            return super()._generate_and_score_completions(inputs)

    class ChorusOPDTrainer(ChorusGRPOTrainer):
        """The student's rows of a round whose gate opened get the distillation advantages a_t (per
        token) in place of the DAPO group advantage; a teacher whose log-probs on the student's tokens
        are not finite sends the round back to the DAPO loss (integrity), agreed across ranks."""

        def __init__(self, *a, teachers=(), opd_state=None, **kw):
            self.teachers = list(teachers)
            self.opd_state = opd_state
            super().__init__(*a, **kw)

        def _generate_and_score_completions(self, inputs):
            out = super()._generate_and_score_completions(inputs)
            st = self.opd_state
            adv = out['advantages']
            B, T = out['completion_ids'].shape
            adv2 = adv.reshape(B, 1).expand(B, T).clone()
            base = st.rollout.last['base']
            model = self.accelerator.unwrap_model(self.model)
            cfg = st.cfg
            bad: list[tuple] = []
            sums = [0.0, 0.0, 0.0, 0.0]  # r, b, a, tokens
            cache = {}
            for i in range(B):
                unit = st.row_unit.get(base + i)
                if unit is None or unit not in st.routes or st.routes[unit].kind != 'distill':
                    continue
                with torch.no_grad():
                    ids = torch.cat([out['prompt_ids'][i : i + 1], out['completion_ids'][i : i + 1]], 1)
                    att = torch.cat([out['prompt_mask'][i : i + 1], out['completion_mask'][i : i + 1]], 1)
                    ls = model(input_ids=ids, attention_mask=att, logits_to_keep=T + 1, use_cache=False).logits[:, :-1]
                    teacher = self.teachers[st.routes[unit].teacher]
                    lt = teacher(
                        input_ids=ids.to(teacher.device), attention_mask=att.to(teacher.device), logits_to_keep=T + 1, use_cache=False
                    ).logits[:, :-1]
                    r, b, a = O.opd_advantages(ls, lt.to(ls.device), out['completion_ids'][i : i + 1], cfg.top_k, cfg.temperature)
                m = out['completion_mask'][i : i + 1].bool()
                if not bool(torch.isfinite(torch.where(m, r, 0.0)).all() and torch.isfinite(torch.where(m, b, 0.0)).all()):
                    bad.append(unit)
                    continue
                cache[i] = (unit, a[0])
                mf = m.float()
                sums = [
                    sums[0] + float((r * mf).sum()),
                    sums[1] + float((b * mf).sum()),
                    sums[2] + float((a * mf).sum()),
                    sums[3] + float(mf.sum()),
                ]
            bad = set(st.rollout._gather(self, bad)) if self.accelerator.num_processes > 1 else set(bad)
            for unit in bad:
                st.routes[unit] = O.Route('rl', None, 'integrity:non-finite-teacher-logprobs')
            for i, (unit, a) in cache.items():
                if unit not in bad:
                    adv2[i] = a.to(adv2.dtype)
            out['advantages'] = adv2
            if self.accelerator.num_processes > 1:
                t = torch.tensor(sums, dtype=torch.float64, device=self.accelerator.device)
                torch.distributed.all_reduce(t)
                sums = t.tolist()
            st.step_stats = {k: (sums[j] / sums[3] if sums[3] else 0.0) for j, k in enumerate(('mean_r', 'mean_b', 'mean_a'))}
            st.history.append([{**asdict(st.routes[u]), 'round': u[1]} for u in sorted(st.routes)])
            return out

    return ChorusGRPOTrainer, ChorusOPDTrainer


class OPDState:
    """OPD's part of the rollout: teacher samples, routing per task round, re-scoring in the fallback."""

    def __init__(self, cfg, teachers: list, teacher_sample_fn=None):
        self.cfg = cfg
        self.teachers = teachers
        self.teacher_sample_fn = teacher_sample_fn  # (teacher index, prompt ids, n, key) -> completion ids lists
        self.rng = random.Random(cfg.seed)
        self.routes: dict[tuple, O.Route] = {}  # (block, round) -> route
        self.row_unit: dict[int, tuple] = {}
        self.history: list = []
        self.step_stats: dict = {}
        self.rollout: ChorusRollout | None = None
        self.teacher_scores: list = []

    def _teacher_samples(self, t: int, prompt: list[int], key: tuple, tok) -> list[Sample]:
        n = self.cfg.teacher_samples
        if self.teacher_sample_fn is not None:
            comps = self.teacher_sample_fn(t, prompt, n, key)
            got = [Sample(list(prompt), list(c), tok.decode(c, skip_special_tokens=True)) for c in comps]
        else:  # teachers sample with HF generate on their own copies (vLLM servers per teacher: not built)
            from .policy import HFSampler

            s = HFSampler(self.teachers[t], tok, self.cfg.max_new_tokens, self.cfg.temperature, self.cfg.top_p, seed=hash(key) & 0xFFFFFFF)
            got = s.sample([prompt], n)[0]
        for x in got:
            x.meta.update(who='teacher', teacher=t, key=key)
        return got

    def round(self, ro: ChorusRollout, trainer, rnd: int, mine: list[int], samples: dict, local: list, task_of: list, msgs: dict) -> list:
        """After the student's members of round `rnd` are scored on this rank: the teachers' samples (by the
        rank holding a block's first member of the round), the scores gathered, the route decided the same
        on every rank, and in the RL fallback the student's missing scores asked for again."""
        if rnd == 0:
            self.routes, self.row_unit = {}, {}
        G, R = ro.group, ro.rounds
        t_local = []
        for g in mine:
            if g % G == 0:
                b = g // (R * G)
                task = ro.tasks[task_of[g]]
                for t in range(len(self.teachers)):
                    ts = self._teacher_samples(t, samples[g].prompt_ids, (task_of[g], rnd, t), ro.tok)
                    t_local.append((b, t, ts, ro.env.score(task, ts)))
        everyone = ro._gather(trainer, local)
        t_all = ro._gather(trainer, t_local)
        blocks = sorted({g // (R * G) for g, _, _ in everyone})
        fixed = {}
        for b in blocks:
            members = sorted((x for x in everyone if x[0] // (R * G) == b), key=lambda x: x[0])
            scores = [x[2] for x in members]
            n_t = self.n_teachers()
            t_sc = [[s for bb, tt, _, sc in t_all if bb == b and tt == t for s in sc] for t in range(n_t)]
            d = O.route(self.cfg.routing, scores, t_sc, self.rng, G, [self.cfg.teacher_samples] * n_t)
            self.routes[(b, rnd)] = d
            self.teacher_scores.append(t_sc)
            for g, _, _ in members:
                self.row_unit[g] = (b, rnd)
            if d.kind == 'rl':  # the fallback needs the student's rewards: the owners ask again for the missing ones
                task = ro.tasks[task_of[members[0][0]]]
                for g, smp, s in members:
                    if g in samples and (s is None or s.failed):
                        fixed[g] = rescore_failed(ro.env, task, [smp], [s], tries=self.cfg.rescore_tries)[0]
        return [(g, smp, fixed.get(g, s)) for g, smp, s in local]

    def n_teachers(self) -> int:
        return len(self.teachers)


# ---------------------------------------------------------------------------------------------
# metrics and the entry points


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
                    'integrity_failures': sum(d.integrity for d in ds),
                    'reward_student': _mean(f[1] for f in facts),
                    'reward_teachers': _mean(
                        s.reward for ts in opd_state.teacher_scores for t in ts for s in t if s is not None and s.reward is not None
                    ),
                    'loss': logs.get('loss'),
                    'tokens': None,
                    'score_failures': sum(g[3] for g in groups),
                    'seconds': logs.get('step_time'),
                    **opd_state.step_stats,
                }
                opd_state.teacher_scores = []
                log(
                    f'opd step {row["step"]}: distilled {row["distilled"]} gate-closed {row["gate_closed"]} rl {row["rl_fallback"]} mean a {row["mean_a"]:.3f}'
                )
            with open(path, 'a', newline='') as f:
                csv.DictWriter(f, fieldnames=fields).writerow({k: row.get(k) for k in fields})

    return Metrics()


def _dataset(tasks: list[dict]):
    from datasets import Dataset

    # the prompt column is a label: the conversation comes from the environment, inside the rollout
    return Dataset.from_list([{'prompt': f'chorus task {t.get("id", i)}', 'task_idx': i} for i, t in enumerate(tasks)])


def _last_step(out: Path) -> tuple[Path | None, int]:
    from transformers.trainer_utils import get_last_checkpoint

    ck = get_last_checkpoint(str(out)) if out.exists() else None
    if ck is None:
        return None, 0
    st = json.loads((Path(ck) / 'trainer_state.json').read_text())
    return Path(ck), int(st.get('global_step', 0))


def _build(cfg, tasks, env, model, tok, *, group, rounds, prompts, steps, resume, sample_fn, opd_state, teachers, log, use_vllm, args_over):
    from .policy import load_policy

    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    ck, done = _last_step(out) if resume else (None, 0)
    if model is None:
        model, tok = load_policy(str(ck) if ck else (getattr(cfg, 'model', '') or getattr(cfg, 'student', '')), cfg.dtype, cfg.device)
    mini = max(int(getattr(cfg, 'mini_batches', 1)), 1)
    total = cfg.updates if steps is None else min(cfg.updates, done + steps * mini)
    world = int(os.environ.get('WORLD_SIZE', '1'))
    top_k = getattr(cfg, 'top_k', None) if opd_state is None else None  # OPD's top_k is the baseline's K, not sampling
    args = grpo_args(
        cfg,
        group=group,
        rounds=rounds,
        prompts=prompts,
        world=world,
        steps_total=total,
        use_vllm=use_vllm,
        sample_top_k=top_k,
        **(args_over or {}),
    )
    rollout = ChorusRollout(tasks, env, tok, cfg, group, rounds, sample_fn=sample_fn, opd=opd_state)
    if opd_state is not None:
        opd_state.rollout = rollout
    Plain, OPDT = _trainer_classes()
    kw = dict(
        model=model,
        reward_funcs=[chorus_reward],
        args=args,
        train_dataset=_dataset(tasks),
        processing_class=tok,
        rollout_func=rollout,
        chorus_rounds=rounds,
        callbacks=[_metrics_callback(out, rollout, opd_state, log)],
    )
    trainer = OPDT(teachers=teachers, opd_state=opd_state, **kw) if opd_state is not None else Plain(**kw)
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)  # our metrics line per step replaces the raw log dicts
    return trainer, ck, tok


def _finish(trainer, cfg, tok, out: Path, name: str) -> None:
    if trainer.is_world_process_zero():
        (out / name).write_text(json.dumps(asdict(cfg), indent=2) + '\n')
        for ck in out.glob('checkpoint-*'):  # transformers.js and the exporter read the template from tokenizer_config.json
            if (ck / 'config.json').exists():
                save_tokenizer(tok, ck)


def end_distributed() -> None:
    """Leave the process group cleanly once the caller is done with training: every rank waits for the
    others (rank 0 may still be saving), then the group is destroyed. Without it a rank that reaches
    interpreter shutdown first can abort in gloo's destructor ("terminate called without an active
    exception"), which torchrun reports as a failed run although the step finished."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


def train_rl(
    cfg,
    tasks: list[dict],
    env: Env,
    model=None,
    tok=None,
    steps: int | None = None,
    resume: bool = True,
    sample_fn=None,
    log=print,
    args_over: dict | None = None,
) -> dict:
    """DAPO with agentic refinement on TRL. Returns {'trainer', 'model', 'tokenizer', 'rollout', 'rank', 'world'}."""
    if cfg.rollout_engine not in ('hf', 'vllm'):
        raise SystemExit(f"rollout_engine must be 'hf' or 'vllm', got '{cfg.rollout_engine}'")
    trainer, ck, tok = _build(
        cfg,
        tasks,
        env,
        model,
        tok,
        group=cfg.group_size,
        rounds=cfg.agentic_rounds,
        prompts=cfg.prompts_per_step,
        steps=steps,
        resume=resume,
        sample_fn=sample_fn,
        opd_state=None,
        teachers=(),
        log=log,
        use_vllm=cfg.rollout_engine == 'vllm',
        args_over=args_over,
    )
    if ck is not None:
        log(f'resuming from {ck}')
    trainer.train(resume_from_checkpoint=str(ck) if ck else None)
    if cfg.save_every:
        trainer.save_model(str(Path(cfg.out) / f'checkpoint-{trainer.state.global_step}'))
    _finish(trainer, cfg, tok, Path(cfg.out), 'rl_config.json')
    acc = trainer.accelerator
    return {
        'trainer': trainer,
        'model': acc.unwrap_model(trainer.model),
        'tokenizer': tok,
        'rollout': trainer.rollout_func,
        'rank': acc.process_index,
        'world': acc.num_processes,
    }


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


def train_opd(
    cfg,
    tasks: list[dict],
    env: Env,
    student=None,
    tok=None,
    teachers: list | None = None,
    steps: int | None = None,
    resume: bool = True,
    sample_fn=None,
    teacher_sample_fn=None,
    log=print,
    args_over: dict | None = None,
) -> dict:
    """Adaptive multi-teacher OPD on TRL. Returns {'trainer', 'model', 'tokenizer', 'history', 'totals', 'rank', 'world'}."""
    from .policy import load_policy

    if student is None:
        ck = _last_step(Path(cfg.out))[0] if resume else None
        student, tok = load_policy(str(ck) if ck else cfg.student, cfg.dtype, cfg.device)
    if teachers is None:
        teachers = []
        for p in cfg.teachers:
            m, ttok = load_policy(p, cfg.dtype, cfg.device)
            if ttok.get_vocab() != tok.get_vocab():
                raise SystemExit(f"teacher {p}: its tokenizer differs from the student's (OPD needs one vocabulary)")
            teachers.append(m.eval().requires_grad_(False))
    state = OPDState(cfg, teachers, teacher_sample_fn)
    trainer, ck, tok = _build(
        cfg,
        tasks,
        env,
        student,
        tok,
        group=cfg.student_samples,
        rounds=cfg.agentic_rounds,
        prompts=cfg.prompts_per_step,
        steps=steps,
        resume=resume,
        sample_fn=sample_fn,
        opd_state=state,
        teachers=teachers,
        log=log,
        use_vllm=cfg.rollout_engine == 'vllm',
        args_over=args_over,
    )
    if ck is not None:
        log(f'resuming from {ck}')
        rs = ck / ROUTE_RNG
        if rs.exists():  # the routing variants' draws continue where the checkpoint left them
            state.rng.setstate(_rng_state(json.loads(rs.read_text())))
    trainer.add_callback(_route_rng_callback(state))
    trainer.train(resume_from_checkpoint=str(ck) if ck else None)
    if cfg.save_every:
        d = Path(cfg.out) / f'checkpoint-{trainer.state.global_step}'
        trainer.save_model(str(d))
        if trainer.is_world_process_zero():
            (d / ROUTE_RNG).write_text(json.dumps(state.rng.getstate()))
    _finish(trainer, cfg, tok, Path(cfg.out), 'opd_config.json')
    totals = {'distilled': 0, 'gate_closed': 0, 'rl_fallback': 0, 'integrity_failures': 0}
    for h in state.history:
        for d in h:
            r = O.Route(d['kind'], d['teacher'], d['reason'])
            totals['distilled'] += r.kind == 'distill'
            totals['gate_closed'] += r.gate_closed
            totals['rl_fallback'] += r.kind == 'rl' and not r.gate_closed
            totals['integrity_failures'] += r.integrity
    if trainer.is_world_process_zero():
        (Path(cfg.out) / 'opd_summary.json').write_text(json.dumps(totals, indent=2) + '\n')
    acc = trainer.accelerator
    return {
        'trainer': trainer,
        'model': acc.unwrap_model(trainer.model),
        'tokenizer': tok,
        'history': state.history,
        'totals': totals,
        'state': state,
        'rank': acc.process_index,
        'world': acc.num_processes,
    }
