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

from . import opd as O

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
