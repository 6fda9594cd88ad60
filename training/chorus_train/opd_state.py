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
