"""The environment on TRL: `ChorusRollout` (TRL's `rollout_func`: generation, the agentic rounds and
the service's scores through the environment) and `chorus_reward` (TRL's reward function, the reward
the rollout carries). The entry points are in trl_engine.py.

Row layout. TRL groups rewards by `num_generations` consecutive rows. Each task of a step is
drawn `agentic_rounds x group` times in a row (`_get_train_sampler`, trainers.py): rows 0..G-1 of
the block are the direct group, rows G..2G-1 the refinement group. TRL splits the generation batch over the
processes in contiguous slices, so a rank may hold a task's direct group and another its
refinement group: the rounds run in lockstep, the scored members gathered after each round, so
every rank carries the same member (as rl.rollout_batch did).

The reward service may fail any call (reward_client retries and fails over first): a member without a
score is re-scored, then masked; a task block whose first turn or feedback turn this rank cannot get
is not sampled on this rank (its rows are empty and masked). Every masked row is counted over all
ranks (`masked_rows`, with the first reasons): a metric and a line in the step log, never a dead rank.

Every prompt fits the recipe's context (`prompt_cap` = max_context - max_new_tokens, rl.fit_prompt): the
oldest assistant / feedback pairs are dropped whole; a block whose prompt still does not fit is not
sampled (its rows masked, counted as `overlong_rows`).
"""

from __future__ import annotations

from .envs import Env, ServiceUnavailable, rescore_failed
from .policy import Sample
from .rl import carry_messages, fit_prompt, pick_carry

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
        self.gen_rows = 0  # sequences this rank asked the engine for, filler rows included (tests)
        self.masked_rows = 0  # the last step's rows over ALL ranks left out because the reward service gave no answer
        self.mask_reasons: list[str] = []  # the first reason on each rank that masked a row
        self.step_rows = 0  # the last step's rows over all ranks
        self.overlong_rows = 0  # the last step's rows over all ranks left out because their prompt passed the cap
        self.max_prompt = 0  # the longest prompt rendered in the last step, all ranks (tokens)

    # ---- helpers that touch the engine
    def _gather(self, trainer, items: list) -> list:
        if trainer.accelerator.num_processes == 1:
            return list(items)
        from accelerate.utils import gather_object

        return gather_object(items)

    @staticmethod
    def lockstep(trainer) -> bool:
        """Whether generation is a collective across ranks, so that every rank must call the engine once per
        round with as many rows as the busiest rank (filler rows, discarded): vLLM server mode (prompts
        gathered to rank 0, results broadcast), colocated vLLM with tensor parallelism (all-gather in
        the TP group), HF generate on a sharded policy (FSDP, DeepSpeed ZeRO-3 gather parameters in every
        forward). Colocated vLLM with TP 1 and HF generate under plain DDP decode per rank: a rank decodes
        its own rows, and one filler row only in a round where it has none (it still takes part in the
        call: `_generate_rows`); the weight sync runs at the start of every step on every rank
        (ChorusRollout.__call__)."""
        if trainer.accelerator.num_processes == 1:
            return False
        args = trainer.args
        if getattr(trainer, 'use_vllm', False):
            return args.vllm_mode == 'server' or int(getattr(args, 'vllm_tensor_parallel_size', 1) or 1) > 1
        if getattr(trainer, 'is_fsdp_enabled', False):
            return True
        ds = getattr(trainer.accelerator.state, 'deepspeed_plugin', None)
        return bool(getattr(trainer, 'is_deepspeed_enabled', False) and ds is not None and ds.zero_stage == 3)

    def _generate(self, trainer, prompt_ids: list[list[int]], keys: list[tuple]) -> tuple[list[list[int]], list | None]:
        """Completions for this rank's rows of one round (filler rows only where generation is collective:
        `lockstep`)."""
        import time

        t0 = time.perf_counter()
        try:
            ids, lps = self._generate_rows(trainer, prompt_ids, keys)
        finally:
            self.gen_seconds += time.perf_counter() - t0
        self.gen_tokens += sum(len(x) for x in ids)
        return ids, lps

    def _generate_rows(self, trainer, prompt_ids: list[list[int]], keys: list[tuple]) -> tuple[list[list[int]], list | None]:
        """Every rank calls the engine in every round where ANY rank has rows (the ranks agree on it by a gather),
        a rank with none of its own on one filler row: a collective inside the engine (vLLM's weight sync when
        it wakes from sleep mode, a tensor-parallel gather, a sharded forward) then finds every rank, where a
        rank without rows that skipped the call would leave the others waiting forever. Where generation is
        itself lockstep (`lockstep`) every rank pads to the busiest rank's rows."""
        if self.sample_fn is not None:
            return (self.sample_fn(prompt_ids, keys) if prompt_ids else []), None
        need = len(prompt_ids)
        if trainer.accelerator.num_processes > 1:
            busiest = max(self._gather(trainer, [need]))
            if busiest == 0:  # no rank has a row this round: no rank calls the engine (agreed)
                return [], None
            need = busiest if self.lockstep(trainer) else max(need, 1)
        if need == 0:
            return [], None
        filler = prompt_ids[0] if prompt_ids else [self.tok.eos_token_id]
        rows = prompt_ids + [filler] * (need - len(prompt_ids))
        self.gen_rows += len(rows)
        ids, logprobs = trainer._generate_single_turn(rows, None, {}, self.group)
        ids = [list(map(int, x)) for x in ids[: len(prompt_ids)]]
        if logprobs is not None:
            logprobs = [[lp[0] if isinstance(lp, (list, tuple)) else lp for lp in seq] for seq in logprobs[: len(prompt_ids)]]
        return ids, logprobs

    def _eos(self, trainer) -> set[int]:
        ids = getattr(trainer, 'eos_token_ids', None) or [self.tok.eos_token_id]
        return {int(x) for x in (ids if isinstance(ids, (list, tuple, set)) else [ids])}

    # ---- the rounds
    def _sync_weights(self, trainer) -> None:
        """vLLM's weight sync once per step on EVERY rank, before the rounds (TRL does it inside the first
        generation call, which a rank without rows in a round would skip: the sync is a collective when
        the policy is sharded)."""
        if getattr(trainer, 'use_vllm', False) and self.sample_fn is None and trainer.state.global_step != trainer._last_loaded_step:
            trainer.vllm_generation.sync_weights()
            trainer._last_loaded_step = trainer.state.global_step

    def __call__(self, prompts: list, trainer) -> dict:
        acc = trainer.accelerator
        self._sync_weights(trainer)
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
        unprompted: dict[int, str] = {}  # block -> why THIS rank has no conversation for it (the service failed a turn)
        overlong: set[tuple[int, int]] = set()  # (block, round) whose prompt passes the cap even cut down
        cap = self.cfg.prompt_cap
        self.max_prompt = 0
        for rnd in range(R):
            mine = [g for g in range(base, base + n) if (g % (R * G)) // G == rnd and g // (R * G) in live]
            for g in mine:
                b = g // (R * G)
                if msgs[b] is None and b not in unprompted:
                    try:
                        msgs[b] = list(self.env.first_turn(self.tasks[task_of[g]]))
                    except ServiceUnavailable as e:  # no prompt: this rank's rows of the block stay empty (masked)
                        unprompted[b] = str(e)
            mine = [g for g in mine if g // (R * G) not in unprompted]
            prompt_of: dict[int, list[int]] = {}  # block -> this round's prompt ids, within the cap
            for b in sorted({g // (R * G) for g in mine}):
                msgs[b], ids = fit_prompt(self.tok, msgs[b], cap)
                if ids is None:
                    overlong.add((b, rnd))
                else:
                    prompt_of[b] = ids
                    self.max_prompt = max(self.max_prompt, len(ids))
            mine = [g for g in mine if g // (R * G) in prompt_of]
            p_ids = [prompt_of[g // (R * G)] for g in mine]
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
                        if later and b not in unprompted:  # only the ranks that sample a later round ask for the feedback turn
                            task = self.tasks[task_of[members[k][0]]]
                            try:
                                if msgs[b] is None:
                                    msgs[b] = list(self.env.first_turn(task))
                                msgs[b] = carry_messages(msgs[b], self.env, task, members[k][1], scores[k])
                            except ServiceUnavailable as e:  # no refinement prompt: the later rows stay empty (masked)
                                unprompted[b] = str(e)
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
        self._count_masked(trainer, out['env_mask'], base, rows, unprompted, overlong, len(task_of))
        return out

    def _count_masked(self, trainer, env_mask: list, base: int, rows: dict, unprompted: dict, overlong: set, total: int) -> None:
        """The step's left-out rows over all ranks (collectives: every rank calls it once per step). A row is
        left out because its prompt passed the cap (`overlong_rows`: its block and round, or an earlier
        round of its block, had no prompt within the cap on some rank), or else because the service gave
        no answer (`masked_rows`): its score failed after the re-score, or its block had no prompt on its
        rank (first turn or feedback turn failed, or no member of the round before was scored to carry)."""
        R, G = self.rounds, self.group
        over = set(self._gather(trainer, sorted(overlong)))
        dropped = [base + i for i, m in enumerate(env_mask) if not m[0]]
        long_rows = [g for g in dropped if any((g // (R * G), r) in over for r in range((g % (R * G)) // G + 1))]
        why = list(unprompted.values()) + [
            str(r['score'].error or r['score'].status) for r in rows.values() if r.get('score') is not None and r['score'].failed
        ]
        got = self._gather(trainer, [(len(dropped) - len(long_rows), len(long_rows), why[0] if why else '', self.max_prompt)])
        self.masked_rows = sum(x[0] for x in got)
        self.overlong_rows = sum(x[1] for x in got)
        self.mask_reasons = [x[2] for x in got if x[2]]
        self.max_prompt = max(x[3] for x in got)  # over all ranks
        self.step_rows = total


def chorus_reward(prompts=None, completions=None, chorus_reward=None, **_):
    """TRL reward function: the service's reward carried by the rollout (None: unscored, excluded from the
    group's mean and std by TRL and given advantage 0)."""
    return list(chorus_reward)
