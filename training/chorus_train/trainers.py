"""TRL's configuration and trainers for CHORUS: `grpo_args` (the GRPOConfig of a recipe section) and
the GRPOTrainer subclasses `ChorusGRPOTrainer` (whole tasks per generation batch) and
`ChorusOPDTrainer` (per-token distillation advantages). The entry points are in trl_engine.py.

DAPO on TRL: loss_type "dapo" (token-level mean over the whole generation batch, all ranks),
epsilon 0.2 / epsilon_high 0.28, beta 0 (no KL, no reference model), group-scaled advantages
(R - mean) / (std + 1e-4) (TRL's epsilon; ours was 1e-6), log-probs at the rollout temperature,
AdamW (0.9, 0.95) at a constant lr, one optimizer update per rollout batch (mini_batches > 1:
several). On-policy (one update per generation) TRL's ratio is 1, so the surrogate's gradient on a
row with per-token advantages a_t is exactly the distillation gradient -a_t grad log pi_S.
"""

from __future__ import annotations

import os
from dataclasses import asdict

import torch

from . import masters
from . import opd as O

os.environ.setdefault('TRL_EXPERIMENTAL_SILENCE', '1')


# ---------------------------------------------------------------------------------------------
# configuration

# Every GRPOConfig field whose TRL 1.16 default (or possible future default) changes the reference's
# math, set explicitly to the reference's value (docs/protocol.md §8 lists them; test_trl_rl.py reads
# the resulting GRPOConfig). epsilon / epsilon_high, the lr/Adam settings, the sampling and
# vllm_importance_sampling_correction (off: `is_correction`) are set from the recipe in grpo_args.
REFERENCE_MATH = dict(
    loss_type='dapo',  # token-level mean over the whole generation batch, all ranks (the reference's per-token loss)
    beta=0.0,  # no KL term, no reference model
    scale_rewards='group',  # (R - mean_group) / (std_group + eps); the epsilon is fixed in ChorusGRPOTrainer
    multi_objective_aggregation='sum_then_normalize',  # one reward function: the service's R
    reward_weights=None,
    importance_sampling_level='token',  # per-token ratios (not GSPO's sequence level)
    delta=None,  # no two-sided (INTELLECT-2) upper clip
    num_iterations=1,  # one pass over each rollout batch
    mask_truncated_completions=False,  # truncated replies stay in the loss (reward 0 from the service)
    top_entropy_quantile=1.0,  # every token in the loss
    entropy_coef=0.0,  # no entropy bonus
    use_adaptive_entropy=False,
    off_policy_mask_threshold=None,  # no DeepSeek-V3.2 off-policy masking
    sync_ref_model=False,
    repetition_penalty=1.0,  # sampling: the policy itself (temperature 1.0, top-p 1.0)
    min_p=None,
    disable_dropout=True,  # on-policy ratio exactly 1 (Qwen3 has no dropout; a fine-tuned config might)
    cast_lm_head_to_fp32=False,
)
TRL_ADV_EPS = 1e-4  # hard-coded in TRL 1.16's GRPOTrainer._generate_and_score_completions


def reference_advantages(adv_local: torch.Tensor, rewards: torch.Tensor, group: int, start: int, eps: float) -> torch.Tensor:
    """TRL's group advantages (R - mean) / (std + 1e-4) -> the reference's (R - mean) / (std + eps).

    `rewards`: the generation batch's rewards over ALL ranks ([N]; NaN = unscored, left out of the
    group's mean and std as TRL does); `adv_local`: this rank's slice of TRL's advantages, starting
    at global row `start`. Same std as TRL (Bessel-corrected, like torch.std in slime)."""
    from trl.trainer.utils import nanstd

    std = nanstd(rewards.view(-1, group).float(), dim=1).repeat_interleave(group)
    std = torch.nan_to_num(std, nan=0.0)
    f = (std + TRL_ADV_EPS) / (std + eps)
    return adv_local * f[start : start + adv_local.shape[0]].to(adv_local.device, adv_local.dtype)


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
        num_generations=group,
        max_completion_length=cfg.max_new_tokens,
        temperature=cfg.temperature,
        top_p=cfg.top_p,
        top_k=int(sample_top_k or 0),
        epsilon=cfg.eps_lo,
        epsilon_high=cfg.eps_hi,
        **REFERENCE_MATH,
        vllm_importance_sampling_correction=bool(getattr(cfg, 'is_correction', False)),
        max_steps=steps_total,
        save_strategy='steps' if cfg.save_every else 'no',
        save_steps=max(int(cfg.save_every or 1), 1),
        save_total_limit=max(int(getattr(cfg, 'keep_checkpoints', 3) or 0), 1),
        logging_steps=1,
        report_to=[],
        seed=cfg.seed,
        data_seed=cfg.seed,
        use_cpu=cpu,
        # bf16 AUTOCAST over the fp32 parameters the engine loads (trl_engine._fp32_master): mixed
        # precision, never bf16 master weights
        bf16=cfg.dtype == 'bfloat16' and not cpu,
        fp16=False,
        remove_unused_columns=False,
        shuffle_dataset=True,
        disable_tqdm=True,
        log_completions=False,
        use_vllm=use_vllm,
        vllm_mode=getattr(cfg, 'vllm_mode', 'colocate'),
        # colocated vLLM's max_model_len: the recipe's context, not the checkpoint's max_position_embeddings
        # (a server takes it at launch: `trl vllm-serve --max_model_len`, printed by the dry run)
        vllm_max_model_length=int(cfg.max_context) if use_vllm else None,
        **({'vllm_server_base_url': cfg.vllm_server} if getattr(cfg, 'vllm_server', '') else {}),
        save_only_model=False,
        dataloader_num_workers=0,
        ddp_timeout=int(getattr(cfg, 'ddp_timeout_s', 1800)),
    )
    kw.update(over)
    return GRPOConfig(**kw)


def prompt_draw(records: int, seed: int, prompts_per_step: int, steps: int, offset: int = 0) -> list[int]:
    """The task indices a run draws, step after step: the order of the trainer's sampler
    (OffsetRepeatSampler over TRL's RepeatSampler, seeded with the run's seed): a seeded
    permutation of the records, the first one rotated `offset` tasks in (OPD), cut into whole steps
    (a last partial step of an epoch is dropped), then the next permutation of the same generator.
    tests/test_recipes.py checks it against the sampler itself."""
    if records < prompts_per_step:
        raise SystemExit(f'{records} records cannot fill a step of {prompts_per_step} prompts')
    g = torch.Generator()
    g.manual_seed(int(seed))
    want, out, first = steps * prompts_per_step, [], True
    while len(out) < want:
        idx = torch.randperm(records, generator=g).tolist()
        if first and offset:
            o = offset % records
            idx = idx[o:] + idx[:o]
        first = False
        out += idx[: len(idx) // prompts_per_step * prompts_per_step]
    return out[:want]


# ---------------------------------------------------------------------------------------------
# the trainers


def _trainer_classes():
    from trl import GRPOTrainer
    from trl.trainer.utils import RepeatSampler

    class OffsetRepeatSampler(RepeatSampler):
        """TRL's RepeatSampler whose seeded order starts `offset` tasks in (OPD's data offset: the prompts
        after the ones the RL run's steps drew from the same seeded order)."""

        def __init__(self, *a, offset: int = 0, **kw):
            super().__init__(*a, **kw)
            self.offset = offset
            self._first = True

        def __iter__(self):
            if not self.offset or not self._first:
                yield from super().__iter__()
                return
            self._first = False
            n = self.num_samples
            idx = torch.randperm(n, generator=self.generator).tolist() if self.shuffle else list(range(n))
            o = self.offset % n
            idx = idx[o:] + idx[:o]
            chunks = [idx[i : i + self.batch_size] for i in range(0, n, self.batch_size)]
            for chunk in (c for c in chunks if len(c) == self.batch_size):
                for _ in range(self.repeat_count):
                    for index in chunk:
                        for _ in range(self.mini_repeat_count):
                            yield index

    class ChorusGRPOTrainer(GRPOTrainer):
        """GRPOTrainer whose generation batch holds whole tasks (rounds x group rows per task), with the
        reference's advantage epsilon (`adv_eps`) in place of TRL's 1e-4."""

        Sampler = OffsetRepeatSampler

        def __init__(self, *a, chorus_rounds: int = 2, adv_eps: float | None = None, data_offset: int = 0, save_bf16: bool = False, **kw):
            self.chorus_rounds = chorus_rounds
            self.chorus_adv_eps = adv_eps
            self.chorus_save_bf16 = save_bf16  # checkpoints: a bf16 model + the masters' low bits in the optimizer state (masters.py)
            self.chorus_data_offset = data_offset  # tasks to skip in the seeded order (OPD: data_offset_steps x prompts)
            self._chorus_inputs = None
            self._chorus_rewards = None
            super().__init__(*a, **kw)

        def _get_train_sampler(self, dataset=None):
            ds = dataset if dataset is not None else self.train_dataset
            block = self.num_generations * self.chorus_rounds
            return self.Sampler(
                data_source=ds,
                mini_repeat_count=block,
                batch_size=self.args.generation_batch_size // block,
                repeat_count=self.num_iterations * self.args.steps_per_generation,
                shuffle=self.shuffle_dataset,
                seed=self.args.seed,
                offset=self.chorus_data_offset,
            )

        # ---- checkpoints: bf16 model weights for what reads them, exact fp32 masters for a resume (masters.py)
        def _save(self, output_dir=None, state_dict=None):
            if not self.chorus_save_bf16 or not self.args.should_save:
                return super()._save(output_dir, state_dict)
            out = output_dir if output_dir is not None else self.args.output_dir
            if state_dict is None:
                state_dict = self.accelerator.unwrap_model(self.model).state_dict()
            model, low = masters.split_state_dict(state_dict)
            super()._save(output_dir, model)
            if not self.is_deepspeed_enabled:  # DeepSpeed's checkpoint holds its own fp32 masters
                masters.write_residual(out, low)
            masters.mark_bf16_config(out)

        def _load_from_checkpoint(self, resume_from_checkpoint, model=None):
            super()._load_from_checkpoint(resume_from_checkpoint, model)
            if self.is_deepspeed_enabled:
                return
            full = None
            if self.is_fsdp_enabled:  # whole parameters on every rank while the low bits go in (not run here: no GPU)
                from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

                full = FSDP.summon_full_params(self.model_wrapped, writeback=True)
            masters.restore_masters(self.accelerator.unwrap_model(self.model), resume_from_checkpoint, full)

        def _calculate_rewards(self, *a, **kw):
            r = super()._calculate_rewards(*a, **kw)  # gathered over every rank: [N, reward functions]
            self._chorus_rewards = r
            return r

        def _generate_and_score_completions(self, inputs):
            self._chorus_inputs = inputs  # the rollout reads each row's task index
            out = super()._generate_and_score_completions(inputs)
            if self.chorus_adv_eps is not None and self.args.scale_rewards == 'group' and self._chorus_rewards is not None:
                r = self._chorus_rewards
                rew = torch.where(torch.isnan(r).all(1), torch.full_like(r[:, 0], float('nan')), torch.nansum(r, 1))
                n = out['advantages'].shape[0]
                out['advantages'] = reference_advantages(
                    out['advantages'], rew, self.num_generations, self.accelerator.process_index * n, self.chorus_adv_eps
                )
            return out

    class ChorusOPDTrainer(ChorusGRPOTrainer):
        """The student's rows of a round whose gate opened get opd_lambda x the distillation advantages a_t
        (per token) in place of the DAPO group advantage. A closed gate: `gate_closed: skip` (the paper,
        Eq. 3) takes the round's rows out of the loss (no gradient, not in the token normalizer);
        `rl_fallback` (the reference code) keeps their DAPO advantages. A teacher whose log-probs on the
        student's tokens are not finite sends the round back to the DAPO loss (integrity), agreed across
        ranks.

        Scaling: teachers live on this rank's device (moved here, once the accelerator exists); every
        rank runs the same number of student forwards per step (a rank with fewer distilled rows runs
        padding rows, discarded), so a sharded student (FSDP, ZeRO-3) sees every rank in its
        collectives; the log-softmax runs in chunks of `opd.LOGIT_CHUNK` positions (opd.opd_advantages_chunked)."""

        def __init__(self, *a, teachers=(), opd_state=None, **kw):
            self.teachers = list(teachers)
            self.opd_state = opd_state
            self.chorus_step_tokens = 0.0  # loss tokens this rank fed the optimizer step being accumulated
            self.chorus_skipped_steps = 0
            super().__init__(*a, **kw)
            dev = self.accelerator.device
            for t in self.teachers:  # `cuda` at load time is GPU 0 on every rank: place each rank's copy on its own device
                if next(t.parameters()).device != dev:
                    t.to(dev)
            self.chorus_forwards = 0  # student forwards run by this rank for OPD (tests: equal on every rank)

        def compute_loss(self, model, inputs, *a, **kw):
            tm = inputs.get('tool_mask')
            m = inputs['completion_mask'] if tm is None else inputs['completion_mask'] * tm  # TRL's loss mask
            self.chorus_step_tokens += float(m.sum())
            return super().compute_loss(model, inputs, *a, **kw)

        def _step_has_rows(self) -> bool:
            """Whether any rank fed the step a loss token; every rank asks at the same point of the
            step, so the answer (and the collective) is the same everywhere."""
            t = torch.tensor([self.chorus_step_tokens], dtype=torch.float64, device=self.accelerator.device)
            if self.accelerator.num_processes > 1:
                torch.distributed.all_reduce(t)
            self.chorus_step_tokens = 0.0
            return float(t[0]) > 0

        def create_optimizer(self, *a, **kw):
            """A step whose rows were all skipped (gate closed, `gate_closed: skip`) has no gradient,
            but AdamW would still move the weights by its momentum: such a step is not taken, and
            accelerate is told so (`step_was_skipped`), so the Trainer skips its scheduler step too."""
            opt = super().create_optimizer(*a, **kw)
            step = opt.step

            def gated_step(*sa, **skw):
                skip = not self._step_has_rows()
                wrapper = self.optimizer  # accelerate's AcceleratedOptimizer once prepared
                if wrapper is not opt and hasattr(wrapper, '_is_overflow'):
                    wrapper._is_overflow = skip
                if skip:
                    self.chorus_skipped_steps += 1
                    return None
                return step(*sa, **skw)

            opt.step = gated_step
            return opt

        def _student_logits(self, ids, att, T):
            with torch.no_grad(), self.accelerator.autocast():
                self.chorus_forwards += 1
                # the WRAPPED model (DDP / FSDP / DeepSpeed engine), so sharded parameters are gathered
                return self.model(input_ids=ids, attention_mask=att, logits_to_keep=T + 1, use_cache=False).logits[:, :-1]

        def _generate_and_score_completions(self, inputs):
            out = super()._generate_and_score_completions(inputs)
            st = self.opd_state
            cfg = st.cfg
            lam = float(getattr(cfg, 'opd_lambda', 1.0))
            adv = out['advantages']
            B, T = out['completion_ids'].shape
            adv2 = adv.reshape(B, 1).expand(B, T).clone()
            base = st.rollout.last['base']
            multi = self.accelerator.num_processes > 1
            bad: list[tuple] = []
            sums = [0.0, 0.0, 0.0, 0.0]  # r, b, a, tokens
            cache = {}
            rows = [
                i for i in range(B) if (u := st.row_unit.get(base + i)) is not None and u in st.routes and st.routes[u].kind == 'distill'
            ]
            skip_rows = [
                i for i in range(B) if (u := st.row_unit.get(base + i)) is not None and u in st.routes and st.routes[u].kind == 'skip'
            ]
            n_max = max(st.rollout._gather(self, [len(rows)])) if multi else len(rows)
            for i in rows:
                unit = st.row_unit[base + i]
                ids = torch.cat([out['prompt_ids'][i : i + 1], out['completion_ids'][i : i + 1]], 1)
                att = torch.cat([out['prompt_mask'][i : i + 1], out['completion_mask'][i : i + 1]], 1)
                ls = self._student_logits(ids, att, T)
                teacher = self.teachers[st.routes[unit].teacher]
                r, b, a = O.opd_advantages_chunked(ls, teacher, ids, att, out['completion_ids'][i : i + 1], cfg.top_k, cfg.temperature)
                del ls
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
            for _ in range(n_max - len(rows)):  # padding forwards: the same collectives on every rank
                ids = torch.cat([out['prompt_ids'][:1], out['completion_ids'][:1]], 1)
                att = torch.cat([out['prompt_mask'][:1], out['completion_mask'][:1]], 1)
                self._student_logits(ids, att, T)
            bad = set(st.rollout._gather(self, bad)) if multi else set(bad)
            for unit in bad:
                st.routes[unit] = O.Route('rl', None, 'integrity:non-finite-teacher-logprobs')
            for i, (unit, a) in cache.items():
                if unit not in bad:
                    adv2[i] = lam * a.to(adv2.dtype)
            out['advantages'] = adv2
            # skip: the round's rows leave the loss and the token normalizer (no gradient); every rank
            # recomputes the step's token count (a collective on every rank, rows or not)
            tm = out.get('tool_mask')
            lm = out['completion_mask'] if tm is None else out['completion_mask'] * tm  # TRL's loss mask
            keep = torch.ones_like(lm)
            for i in skip_rows:
                adv2[i] = 0.0
                keep[i] = 0
            if tm is not None:
                out['tool_mask'] = tm * keep
            else:
                out['completion_mask'] = out['completion_mask'] * keep
            out['num_items_in_batch'] = self.accelerator.gather((lm * keep).sum()).sum()
            t = torch.tensor(sums, dtype=torch.float64, device=self.accelerator.device)
            if multi:
                torch.distributed.all_reduce(t)
            sums = t.tolist()
            st.step_stats = {k: (sums[j] / sums[3] if sums[3] else 0.0) for j, k in enumerate(('mean_r', 'mean_b', 'mean_a'))}
            st.history.append([{**asdict(st.routes[u]), 'round': u[1]} for u in sorted(st.routes)])
            return out

    return ChorusGRPOTrainer, ChorusOPDTrainer
