"""DAPO RL loop: real learning on a tiny random Qwen3 (real tokenizer) with a synthetic verifiable
reward; carry selection; checkpoints and resume; metrics."""
from __future__ import annotations

import csv

import pytest
import torch

from chorus_train import rl
from chorus_train.envs import Score, TokenRewardEnv
from chorus_train.policy import HFSampler, load_policy, render


def good_set(model) -> set[int]:
    """Tokens whose embedding lies on one side of a fixed random hyperplane (half the vocabulary)."""
    emb = model.get_input_embeddings().weight.detach().float()
    u = torch.randn(emb.shape[1], generator=torch.Generator().manual_seed(0))
    return set(torch.nonzero(emb @ u > 0).flatten().tolist())


TASKS = [{'id': i, 'messages': [{'role': 'user', 'content': f'Task {i}: write a testbench for module m{i}.'}]} for i in range(4)]


def mean_reward(model, tok, env, n=32, seed=123) -> float:
    s = HFSampler(model, tok, max_new_tokens=8, temperature=1.0, top_p=1.0, top_k=32, seed=seed)
    rs = []
    for t in TASKS:
        rs += [x.reward for x in env.score(t, s.sample([render(tok, t['messages'])], n)[0])]
    return sum(rs) / len(rs)


def cfg(out, **kw) -> rl.RLConfig:
    base = dict(out=str(out), lr=3e-3, updates=1000, group_size=4, prompts_per_step=2, agentic_rounds=2, max_new_tokens=8,
                temperature=1.0, top_p=1.0, top_k=32, mini_batches=2, micro_batch=16, save_every=0, seed=0)
    base.update(kw)
    return rl.RLConfig(**base)


def test_dapo_steps_raise_the_mean_reward(tiny_ckpts, tmp_path):
    model, tok = load_policy(str(tiny_ckpts[0]))
    env = TokenRewardEnv(good_set(model))
    before = mean_reward(model, tok, env)
    res = rl.train(cfg(tmp_path / 'run'), TASKS, env, model=model, tok=tok, steps=12, resume=False, log=lambda *_: None)
    after = mean_reward(res['model'], tok, env)
    rows = list(csv.DictReader(open(tmp_path / 'run' / 'metrics.csv')))
    assert len(rows) == 12 and int(rows[-1]['updates']) == 24
    for k in rl.METRICS:
        assert rows[-1][k] != '', k
    assert float(rows[0]['entropy']) > 0 and float(rows[0]['response_len']) > 0
    print(f'mean reward {before:.3f} -> {after:.3f}; per step', [round(float(r['reward']), 3) for r in rows])
    assert after > before + 0.15, (before, after)


def test_carry_worst_and_best():
    sc = [Score(1.5, 0.5, False, 'success'), Score(0.0, 0.0, False, 'xrun_failed'), Score(1.9, 0.9, False, 'success'), Score(0.0, 0.0, False, 'timeout')]
    assert rl.pick_carry(sc, 'worst') == 1  # lowest coverage, first on ties
    assert rl.pick_carry(sc, 'best') == 2


class RecordingEnv(TokenRewardEnv):
    def __init__(self, good):
        super().__init__(good)
        self.feedback_for = []

    def feedback(self, task, sample, score):
        self.feedback_for.append(score.coverage)
        return super().feedback(task, sample, score)


def test_refinement_group_carries_the_worst_member(tiny_ckpts, tmp_path):
    model, tok = load_policy(str(tiny_ckpts[0]))
    env = RecordingEnv(good_set(model))
    sampler = HFSampler(model, tok, max_new_tokens=6, temperature=1.0, top_p=1.0, top_k=32, seed=1)
    for carry, pick in (('worst', min), ('best', max)):
        groups = rl.rollout(TASKS[0], env, sampler, tok, cfg(tmp_path, carry=carry))
        assert [g.round for g in groups] == [0, 1]
        assert env.feedback_for[-1] == pick(s.coverage for s in groups[0].scores)
        # the refinement prompt is the first turn + carried reply + feedback turn
        assert len(groups[1].samples[0].prompt_ids) > len(groups[0].samples[0].prompt_ids)


def test_checkpoint_and_resume(tiny_ckpts, tmp_path):
    model, tok = load_policy(str(tiny_ckpts[1]))
    env = TokenRewardEnv(good_set(model))
    c = cfg(tmp_path / 'run', save_every=2, mini_batches=1, prompts_per_step=1, agentic_rounds=1)
    rl.train(c, TASKS, env, model=model, tok=tok, steps=2, resume=False, log=lambda *_: None)
    assert (tmp_path / 'run' / 'checkpoint-2' / 'trainer_state.pt').exists()
    res = rl.train(c, TASKS, env, steps=1, resume=True, log=lambda *_: None)
    assert res['state']['step'] == 3 and res['state']['updates'] == 3 and res['state']['cursor'] == 3
    rows = list(csv.DictReader(open(tmp_path / 'run' / 'metrics.csv')))
    assert [int(r['step']) for r in rows] == [1, 2, 3]
