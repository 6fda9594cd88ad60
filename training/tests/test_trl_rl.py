"""DAPO with agentic refinement on TRL's GRPOTrainer (trl_engine.py): real learning on the tiny random
Qwen3 with TRL's own generation, the refinement rows built from the worst scored member (think
stripped, the environment's feedback), a reward-service failure left out of the loss, and the
GRPOConfig taken from the reference recipe."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import torch

from chorus_train import rl, rollout, trainers, trl_engine
from chorus_train.envs import Score, TokenRewardEnv
from chorus_train.policy import load_policy
from chorus_train.recipes import load_recipe, rl_config

pytest.importorskip('trl')

TASKS = [{'id': i, 'messages': [{'role': 'user', 'content': f'Task {i}: write a testbench for module m{i}.'}]} for i in range(4)]
RECIPES = Path(__file__).resolve().parents[1] / 'recipes'


def good_set(model) -> set[int]:
    """Tokens whose embedding lies on one side of a fixed random hyperplane (half the vocabulary)."""
    emb = model.get_input_embeddings().weight.detach().float()
    u = torch.randn(emb.shape[1], generator=torch.Generator().manual_seed(0))
    return set(torch.nonzero(emb @ u > 0).flatten().tolist())


def mean_reward(model, tok, env, n=32, seed=123) -> float:
    from chorus_train.policy import HFSampler, render

    s = HFSampler(model, tok, max_new_tokens=8, temperature=1.0, top_p=1.0, top_k=32, seed=seed)
    rs = []
    for t in TASKS:
        rs += [x.reward for x in env.score(t, s.sample([render(tok, t['messages'])], n)[0])]
    return sum(rs) / len(rs)


def cfg(out, **kw) -> rl.RLConfig:
    base = dict(
        out=str(out),
        lr=3e-3,
        updates=1000,
        group_size=4,
        prompts_per_step=2,
        agentic_rounds=2,
        max_new_tokens=8,
        temperature=1.0,
        top_p=1.0,
        top_k=32,
        mini_batches=2,
        micro_batch=16,
        save_every=0,
        seed=0,
    )
    base.update(kw)
    return rl.RLConfig(**base)


def test_dapo_on_trl_raises_the_mean_reward(tiny_ckpts, tmp_path):
    model, tok = load_policy(str(tiny_ckpts[0]))
    env = TokenRewardEnv(good_set(model))
    before = mean_reward(model, tok, env)
    res = trl_engine.train_rl(cfg(tmp_path / 'run'), TASKS, env, model=model, tok=tok, steps=4, resume=False, log=lambda *_: None)
    after = mean_reward(res['model'], tok, env)
    rows = list(csv.DictReader(open(tmp_path / 'run' / 'metrics.csv')))
    assert len(rows) == 8 and int(rows[-1]['updates']) == 8 and int(rows[-1]['step']) == 4  # 2 updates per rollout
    for k in ('reward', 'coverage', 'reward_direct', 'reward_refine', 'entropy', 'response_len', 'loss', 'clip_frac'):
        assert rows[-1][k] != '', k
    print(f'mean reward {before:.3f} -> {after:.3f}; per update', [round(float(r['reward']), 3) for r in rows])
    assert after > before + 0.15, (before, after)


TEXTS = {
    'good': '<think>plan</think>module tb; good good; endmodule',
    'weak': '<think>hmm, weak</think>module tb; weak; endmodule',
    'lost': 'module tb; lost; endmodule',
    'bad': 'module tb; bad; endmodule',
}


class ScriptedEnv:
    """Scores by the reply's word: good 1.9, weak 1.2, bad 0 (did not run), lost: the service failed (no score)."""

    def __init__(self):
        self.calls = 0
        self.seen: list[list[dict]] = []

    def first_turn(self, task):
        return [{'role': 'user', 'content': f'Write a testbench for m{task["id"]}.'}]

    def score(self, task, samples):
        self.calls += 1
        out = []
        for s in samples:
            if 'lost' in s.text:
                out.append(Score(None, None, False, 'service_error', error='scorer down'))
            elif 'bad' in s.text:
                out.append(Score(0.0, 0.0, False, 'failed'))
            else:
                c = 0.9 if 'good' in s.text else 0.2
                out.append(Score(1.0 + c, c, False, 'success'))
        return out

    def feedback(self, task, sample, score):
        return f'Coverage is {score.coverage:.2f}; add stimulus.'


def scripted_sample_fn(tok, plan):
    """Completions by (task, round, member) -> word: the same in any process layout."""

    def fn(prompt_ids, keys):
        return [tok(TEXTS[plan(*k)], add_special_tokens=False)['input_ids'] + [tok.convert_tokens_to_ids('<|im_end|>')] for k in keys]

    return fn


def test_refinement_rows_carry_the_worst_member_and_failures_leave_the_loss(tiny_ckpts, tmp_path):
    model, tok = load_policy(str(tiny_ckpts[0]))
    env = ScriptedEnv()
    # round 0: good, weak, lost, good -> the worst SCORED member is 'weak' (the unscored one is never carried)
    plan = lambda task, rnd, j: ['good', 'weak', 'lost', 'good'][j] if rnd == 0 else ['good', 'bad', 'weak', 'good'][j]  # noqa: E731
    c = cfg(tmp_path / 'run', prompts_per_step=1, mini_batches=1, micro_batch=4, rescore_tries=1)
    res = trl_engine.train_rl(
        c, TASKS[:1], env, model=model, tok=tok, steps=1, resume=False, sample_fn=scripted_sample_fn(tok, plan), log=lambda *_: None
    )
    ro = res['rollout']
    rows = ro.last['rows']
    assert sorted(rows) == list(range(8))
    refine = tok.decode(rows[4]['sample'].prompt_ids)
    assert 'module tb; weak; endmodule' in refine and 'hmm' not in refine  # the carried reply, its think block stripped
    assert 'Coverage is 0.20; add stimulus.' in refine
    assert 'good good' not in refine
    # the lost member was scored twice (re-score) and stays unscored: reward None, no loss tokens
    lost = rows[2]
    assert lost['score'].failed
    facts = [f for f in ro.facts if f[0] == 'group']
    assert facts == [('group', 0, False, 1), ('group', 1, False, 0)]
    # what TRL trained on: the generation batch's rewards (NaN = unscored) and the loss mask
    logs = res['trainer'].state.log_history
    assert any('reward' in x for x in logs)


def test_unscored_member_gets_no_reward_and_no_loss_tokens(tiny_ckpts):
    """The rollout output TRL receives: an unscored member has reward None (TRL leaves it out of its
    group's mean and std and gives it advantage 0) and an all-zero env_mask (no loss tokens, not in the
    token-level normalizer): a failure is not a reward of 0."""
    _, tok = load_policy(str(tiny_ckpts[0]))
    env = ScriptedEnv()
    plan = lambda task, rnd, j: ['good', 'lost', 'weak', 'bad'][j]  # noqa: E731
    ro = rollout.ChorusRollout(
        TASKS[:1], env, tok, cfg('/nonexistent', rescore_tries=1), group=4, rounds=2, sample_fn=scripted_sample_fn(tok, plan)
    )

    class Acc:
        num_processes, process_index = 1, 0

    class T:
        accelerator = Acc()
        eos_token_ids = [tok.convert_tokens_to_ids('<|im_end|>')]
        _chorus_inputs = [{'task_idx': 0}] * 8

    out = ro(['p'] * 8, T())
    assert out['chorus_reward'][:4] == [pytest.approx(1.9), None, pytest.approx(1.2), 0.0]
    assert set(out['env_mask'][1]) == {0} and set(out['env_mask'][0]) == {1}
    assert out['logprobs'] is None and len(out['completion_ids']) == 8
    # round 1 was sampled from the refinement prompt of the worst scored member: 'bad' (reward 0), not 'lost'
    assert 'module tb; bad; endmodule' in tok.decode(out['prompt_ids'][4])


def test_grpo_config_is_the_reference_recipe():
    recipe = load_recipe(RECIPES / 'rl.yaml')
    c = rl_config(recipe, 'stage0', {})
    for world in (1, 8):  # (16 ranks: TRL validates 2 rows per rank against the 16 processes it runs in)
        a = trainers.grpo_args(
            c, group=c.group_size, rounds=c.agentic_rounds, prompts=c.prompts_per_step, world=world, steps_total=c.updates
        )
        assert a.loss_type == 'dapo' and a.beta == 0.0
        assert (a.epsilon, a.epsilon_high) == (0.2, 0.28)
        # 4 prompts x 2 rounds x group 4 = 32 rows per generation (TRL multiplies by the processes it runs in: 1 here)
        assert a.num_generations == 4 and a.generation_batch_size * world == 32
        assert (a.adam_beta1, a.adam_beta2, a.weight_decay) == (0.9, 0.95, 0.0)
        assert a.learning_rate == 1e-6 and getattr(a.lr_scheduler_type, 'value', a.lr_scheduler_type) == 'constant'
        assert a.temperature == 1.0 and a.top_p == 1.0 and a.max_completion_length == 16384
        assert a.max_steps == 1000 and a.num_iterations == 1
        # one optimizer update per rollout batch: the micro-batches of a generation are one accumulation window
        assert a.steps_per_generation == a.gradient_accumulation_steps
        assert a.per_device_train_batch_size * a.steps_per_generation * world == 32
        assert not a.mask_truncated_completions and a.scale_rewards == 'group'


def test_checkpoints_resume_on_trl(tiny_ckpts, tmp_path):
    """TRL's checkpoints hold the optimizer (AdamW betas 0.9 / 0.95, the reference), RNG and data position;
    a rerun resumes from the latest one, and the metrics continue."""
    model, tok = load_policy(str(tiny_ckpts[0]))
    env = TokenRewardEnv(good_set(model))
    c = cfg(tmp_path / 'run', mini_batches=1, micro_batch=8, save_every=1, keep_checkpoints=2, top_k=32)
    res = trl_engine.train_rl(c, TASKS, env, model=model, tok=tok, steps=2, resume=False, log=lambda *_: None)
    assert res['trainer'].state.global_step == 2
    assert [g['betas'] for g in res['trainer'].optimizer.param_groups] == [(0.9, 0.95)] * len(res['trainer'].optimizer.param_groups)
    ck = tmp_path / 'run' / 'checkpoint-2'
    for f in ('model.safetensors', 'optimizer.pt', 'trainer_state.json', 'tokenizer_config.json'):
        assert (ck / f).exists(), f
    assert 'chat_template' in (ck / 'tokenizer_config.json').read_text()  # for the exporter and transformers.js
    logs = []
    res2 = trl_engine.train_rl(c, TASKS, env, steps=1, log=logs.append)  # loads checkpoint-2 from disk
    assert any('resuming from' in x and 'checkpoint-2' in x for x in logs)
    assert res2['trainer'].state.global_step == 3
    rows = list(csv.DictReader(open(tmp_path / 'run' / 'metrics.csv')))
    assert [int(r['updates']) for r in rows] == [1, 2, 3]
