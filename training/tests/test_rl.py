"""DAPO RL loop: real learning on a tiny random Qwen3 (real tokenizer) with a synthetic verifiable
reward; carry selection; checkpoints and resume; metrics."""

from __future__ import annotations

import csv

import torch

from chorus_train import dapo, rl
from chorus_train.envs import Score, TokenRewardEnv
from chorus_train.policy import HFSampler, Sample, ScriptedSampler, load_policy, make_batch, render, response_logits


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
    sc = [
        Score(1.5, 0.5, False, 'success'),
        Score(0.0, 0.0, False, 'xrun_failed'),
        Score(1.9, 0.9, False, 'success'),
        Score(0.0, 0.0, False, 'timeout'),
    ]
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


# ---------------------------------------------------------------------------------------------
# the reference recipe (HejiaZ2023/slime examples/agentic_cov, docs/protocol.md §8)


def test_default_step_is_4_prompts_by_group_4():
    # "global batch 16, group 4": 16 sequences per round = 4 prompts x 4 samples (reference: rollout
    # batch 16 / n_samples 4 = 4 prompts), 2 rounds -> 32 sequences trained per update
    c = rl.RLConfig()
    assert (c.prompts_per_step, c.group_size, c.agentic_rounds, c.mini_batches) == (4, 4, 2, 1)
    assert c.prompts_per_step * c.group_size == 16


def test_adam_betas_and_sampling_are_the_reference(tiny_ckpts, tmp_path):
    c = rl.RLConfig()
    assert (c.temperature, c.top_p, c.adam_beta1, c.adam_beta2, c.lr, c.eps_lo, c.eps_hi) == (1.0, 1.0, 0.9, 0.95, 1e-6, 0.2, 0.28)
    model, tok = load_policy(str(tiny_ckpts[1]))
    env = TokenRewardEnv(good_set(model))
    run = cfg(tmp_path / 'run', save_every=1, mini_batches=1, prompts_per_step=1, agentic_rounds=1)
    rl.train(run, TASKS, env, model=model, tok=tok, steps=1, resume=False, log=lambda *_: None)
    st = torch.load(tmp_path / 'run' / 'checkpoint-1' / 'trainer_state.pt', weights_only=False)
    assert tuple(st['optimizer']['param_groups'][0]['betas']) == (0.9, 0.95)


def fixed_samples(tok, prompt_text, texts):
    p = render(tok, [{'role': 'user', 'content': prompt_text}])
    eos = tok.convert_tokens_to_ids('<|im_end|>')
    return [Sample(list(p), tok(t, add_special_tokens=False)['input_ids'] + [eos], t) for t in texts]


def test_policy_update_takes_log_probs_at_the_rollout_temperature(tiny_ckpts):
    """On policy the DAPO gradient is that of -sum A log softmax(z / T)[y] / N: with T = 0.5 the
    trainer's gradient must be the temperature-0.5 one (rollouts were drawn from it)."""
    import copy

    model, tok = load_policy(str(tiny_ckpts[0]))
    samples = fixed_samples(tok, 'Write a testbench.', ['module tb; endmodule', 'initial begin $finish; end'])
    adv = torch.tensor([1.0, -1.0])
    T = 0.5
    c = cfg('/unused', temperature=T, lr=0.0, grad_clip=0.0, mini_batches=1, micro_batch=1)
    ref = copy.deepcopy(model)
    rl.policy_update(model, torch.optim.SGD(model.parameters(), lr=0.0), samples, adv, c, tok.pad_token_id)
    b = make_batch(samples, tok.pad_token_id)
    lp = dapo.token_logprobs(response_logits(ref, b), b.tokens, T)
    (-(adv[:, None] * lp * b.mask).sum() / b.mask.sum()).backward()
    n = 0
    for (name, p), q in zip(model.named_parameters(), ref.parameters(), strict=True):
        if p.grad is not None:
            assert torch.allclose(p.grad, q.grad, atol=1e-6, rtol=1e-4), name
            n += 1
    assert n > 0


def test_micro_batches_give_the_same_step_as_one_batch(tiny_ckpts):
    """The trainer's token-level normalizer: micro-batches of 1 give the gradient of one batch."""
    import copy

    model, tok = load_policy(str(tiny_ckpts[0]))
    samples = fixed_samples(tok, 'Write a testbench.', ['module tb; endmodule', 'wire w;', 'initial begin $finish; end', 'assign y = a;'])
    adv = torch.tensor([1.0, -0.5, 0.25, -0.75])
    grads = []
    for mb in (4, 1):
        m = copy.deepcopy(model)
        rl.policy_update(
            m,
            torch.optim.SGD(m.parameters(), lr=0.0),
            samples,
            adv,
            cfg('/unused', lr=0.0, grad_clip=0.0, mini_batches=1, micro_batch=mb),
            tok.pad_token_id,
        )
        grads.append({k: p.grad.clone() for k, p in m.named_parameters() if p.grad is not None})
    assert grads[0].keys() == grads[1].keys() and grads[0]
    for k in grads[0]:
        assert torch.allclose(grads[0][k], grads[1][k], atol=1e-7, rtol=1e-4), k


class ScriptEnv(TokenRewardEnv):
    """Token reward, except that replies named in `fail` get no score from the 'service' (the
    first `fail[text]` requests for them fail), and feedback calls are recorded."""

    def __init__(self, good, fail: dict[str, int]):
        super().__init__(good)
        self.fail = dict(fail)
        self.fed = []
        self.requests = 0

    def score(self, task, samples):
        self.requests += 1
        out = super().score(task, samples)
        for i, s in enumerate(samples):
            if self.fail.get(s.text, 0) > 0:
                self.fail[s.text] -= 1
                out[i] = Score(None, None, False, 'service_error', error='HTTP 500: internal_error')
        return out

    def feedback(self, task, sample, score):
        self.fed.append(sample.text)
        return super().feedback(task, sample, score)


def test_a_reward_service_failure_is_no_reward_and_never_the_worst(tiny_ckpts):
    model, tok = load_policy(str(tiny_ckpts[0]))
    texts = ['module tb; endmodule', 'BROKEN', 'initial begin $finish; end', 'assign y = a & b;']
    sampler = ScriptedSampler(tok, texts)
    env = ScriptEnv(good_set(model), {'BROKEN': 99})
    groups = rl.rollout(TASKS[0], env, sampler, tok, cfg('/unused', group_size=4, agentic_rounds=2))
    g = groups[0]
    assert g.failed == 1 and [s.text for s in g.samples] == [texts[0], texts[2], texts[3]]
    want = dapo.group_advantages(torch.tensor([s.reward for s in g.scores]))
    assert torch.equal(g.advantages, want)
    # the carried member is the worst SCORED one, not the unscored one
    assert env.fed[0] != 'BROKEN'
    assert env.fed[0] == texts[[0, 2, 3][min(range(3), key=lambda i: (g.scores[i].coverage, g.scores[i].reward, i))]]
    # a transient failure is scored again and keeps its real reward
    env2 = ScriptEnv(good_set(model), {'BROKEN': 1})
    g2 = rl.rollout(TASKS[0], env2, ScriptedSampler(tok, texts), tok, cfg('/unused', group_size=4, agentic_rounds=1))[0]
    assert g2.failed == 0 and len(g2.samples) == 4 and g2.scores[1].reward is not None and g2.scores[1].reward > 1.0


def test_think_is_stripped_from_the_carried_reply(tiny_ckpts):
    model, tok = load_policy(str(tiny_ckpts[0]))
    reply = '<think>\nprivate reasoning here\n</think>\n\nfilename: tb.sv\nmodule tb; endmodule'
    env = RecordingEnv(good_set(model))
    groups = rl.rollout(TASKS[0], env, ScriptedSampler(tok, [reply]), tok, cfg('/unused', group_size=2, agentic_rounds=2))
    carried = groups[1].messages[-2]
    assert carried == {'role': 'assistant', 'content': 'filename: tb.sv\nmodule tb; endmodule'}
    assert 'private reasoning' not in tok.decode(groups[1].samples[0].prompt_ids)
    # the sampled tokens keep the think block: the reasoning is still trained
    assert '<think>' in groups[0].samples[0].text
