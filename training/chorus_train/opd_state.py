"""OPD's part of the rollout on TRL (`OPDState`): the teachers' samples, the route of every task round
(opd.route) and the re-scoring in the RL fallback; `ChorusOPDTrainer` (trainers.py) reads the routes."""

from __future__ import annotations

import random

from . import opd as O
from .envs import rescore_failed
from .policy import Sample
from .rollout import ChorusRollout


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
        self.teacher_calls = 0  # batched HF generate calls the teachers made on this rank (one per teacher and round)

    def _teacher_samples(self, t: int, prompts: list[list[int]], keys: list[tuple], tok) -> list[list[Sample]]:
        """Teacher `t`'s `teacher_samples` replies to each of `prompts` (one list per prompt). HF generate runs
        ONCE for all of them (left-padded, with the attention mask; the sampling settings of the student's
        rollouts: temperature, top-p, max_new_tokens), not once per prompt: a teacher answers every task
        block this rank heads in a round in one batched call (tests/test_trl_opd.py counts the calls)."""
        n = self.cfg.teacher_samples
        if not prompts:
            return []
        if self.teacher_sample_fn is not None:  # tests: scripted replies, per prompt
            got = []
            for prompt, key in zip(prompts, keys, strict=True):
                comps = self.teacher_sample_fn(t, prompt, n, key)
                got.append([Sample(list(prompt), list(c), tok.decode(c, skip_special_tokens=True)) for c in comps])
        else:  # teachers sample with HF generate on their own copies (vLLM servers per teacher: not built)
            from .policy import HFSampler

            # the seed of one call: a single prompt keeps the per-prompt seed of the unbatched sampler
            seed = hash(keys[0] if len(keys) == 1 else tuple(keys)) & 0xFFFFFFF
            s = HFSampler(self.teachers[t], tok, self.cfg.max_new_tokens, self.cfg.temperature, self.cfg.top_p, seed=seed)
            got = s.sample([list(p) for p in prompts], n)
            self.teacher_calls += 1
        for key, group in zip(keys, got, strict=True):
            for x in group:
                x.meta.update(who='teacher', teacher=key[2], key=key)
        return got

    def round(self, ro: ChorusRollout, trainer, rnd: int, mine: list[int], samples: dict, local: list, task_of: list, msgs: dict) -> list:
        """After the student's members of round `rnd` are scored on this rank: the teachers' samples (by the
        rank holding a block's first member of the round), the scores gathered, the route decided the same
        on every rank, and in the RL fallback the student's missing scores asked for again."""
        if rnd == 0:
            self.routes, self.row_unit = {}, {}
        G, R = ro.group, ro.rounds
        t_local = []
        heads = [g for g in mine if g % G == 0]  # this rank answers for the blocks whose first member it holds
        # every teacher answers all of them in ONE batched generate call, then the replies are scored per block
        replies = [
            self._teacher_samples(t, [samples[g].prompt_ids for g in heads], [(task_of[g], rnd, t) for g in heads], ro.tok)
            for t in range(len(self.teachers))
        ]
        for k, g in enumerate(heads):
            b = g // (R * G)
            task = ro.tasks[task_of[g]]
            for t in range(len(self.teachers)):
                ts = replies[t][k]
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
            d = O.route(self.cfg.routing, scores, t_sc, self.rng, G, [self.cfg.teacher_samples] * n_t, self.cfg.gate_closed)
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
