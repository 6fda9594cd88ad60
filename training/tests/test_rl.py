"""The RL recipe's CHORUS parts that do not need a run (carry selection, the reference's step and
optimizer settings), and two properties of the DAPO step as TRL takes it: log-probs at the rollout
temperature, and micro-batches that add up to the step's token-level mean. The runs themselves
(learning, refinement rows, failures, resume) are in test_trl_rl.py."""

from __future__ import annotations

import torch

from chorus_train import dapo, rl, trl_engine
from chorus_train.envs import Score, TokenRewardEnv, strip_think
from chorus_train.policy import load_policy, make_batch, render, response_logits


def test_carry_worst_and_best():
    sc = [
        Score(1.5, 0.5, False, 'success'),
        Score(0.0, 0.0, False, 'xrun_failed'),
        Score(1.9, 0.9, False, 'success'),
        Score(0.0, 0.0, False, 'timeout'),
    ]
    assert rl.pick_carry(sc, 'worst') == 1  # lowest coverage, first on ties
    assert rl.pick_carry(sc, 'best') == 2
    failed = Score(None, None, False, 'service_error', error='down')
    assert rl.pick_carry([failed, sc[2]], 'worst') == 1  # an unscored member is never carried
    assert rl.pick_carry([failed, failed], 'worst') is None


def test_carried_reply_loses_its_reasoning_even_when_cut():
    """A reply the length limit cut inside <think> carries nothing of its reasoning into the next
    prompt (carried, it would add the whole reply budget to every later round)."""
    assert strip_think('<think>plan</think>\n```sv\nmodule tb; endmodule\n```') == '```sv\nmodule tb; endmodule\n```'
    assert strip_think('<think>' + 'reasoning ' * 5000) == ''
    assert strip_think('ok <think>cut') == 'ok'
    assert strip_think('<think>a</think>b<think>c') == 'b'


def test_default_step_is_4_prompts_by_group_4():
    # "global batch 16, group 4": 16 sequences per round = 4 prompts x 4 samples (reference: rollout
    # batch 16 / n_samples 4 = 4 prompts), 2 rounds -> 32 sequences trained per update
    c = rl.RLConfig()
    assert (c.prompts_per_step, c.group_size, c.agentic_rounds, c.mini_batches) == (4, 4, 2, 1)
    assert c.prompts_per_step * c.group_size == 16


def test_adam_betas_and_sampling_are_the_reference():
    c = rl.RLConfig()
    assert (c.temperature, c.top_p, c.adam_beta1, c.adam_beta2, c.lr, c.eps_lo, c.eps_hi) == (1.0, 1.0, 0.9, 0.95, 1e-6, 0.2, 0.28)


def test_trl_takes_log_probs_at_the_rollout_temperature(tiny_ckpts):
    """TRL's per-token log-probs (its fused LM head, at GRPOConfig.temperature, which grpo_args sets from
    the recipe) are log softmax(z / T)[y]: the distribution the rollouts were drawn from."""
    from trl.trainer.utils import add_fused_lm_head

    model, tok = load_policy(str(tiny_ckpts[0]))
    eos = tok.convert_tokens_to_ids('<|im_end|>')
    p = render(tok, [{'role': 'user', 'content': 'Write a testbench.'}])
    from chorus_train.policy import Sample

    s = Sample(p, tok('module tb; endmodule', add_special_tokens=False)['input_ids'] + [eos], '')
    b = make_batch([s], tok.pad_token_id)
    T = 0.5
    with torch.no_grad():
        want = dapo.token_logprobs(response_logits(model, b), b.tokens, T)
        add_fused_lm_head(model, temperature=T)
        ids = torch.tensor([p + s.response_ids])
        labels = ids.clone()
        labels[:, : len(p)] = -100
        got = model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=labels, fused_lm_head=True).log_probs[
            :, -len(s.response_ids) :
        ]
        at_one = dapo.token_logprobs(response_logits(model, b), b.tokens, 1.0)
    assert torch.allclose(got, want, atol=1e-5), (got, want)
    assert not torch.allclose(got, at_one, atol=1e-3)


def test_micro_batches_give_the_same_step_as_one_batch(tiny_ckpts, tmp_path):
    """TRL's token-level normalizer (loss_type dapo): micro-batches of 1 row give the step of one batch of 8."""
    words = ['module tb; endmodule', 'wire w;', 'initial begin $finish; end', 'assign y = a;']

    def fn(prompt_ids, keys):
        return [tok(words[(j + 2 * r) % 4] * (1 + j % 2), add_special_tokens=False)['input_ids'] + [tok.eos_token_id] for _, r, j in keys]

    finals = []
    for mb in (8, 1):
        model, tok = load_policy(str(tiny_ckpts[0]))
        env = TokenRewardEnv(set(range(0, 151936, 3)))
        c = rl.RLConfig(
            out=str(tmp_path / f'mb{mb}'),
            lr=1e-3,
            group_size=4,
            prompts_per_step=1,
            agentic_rounds=2,
            max_new_tokens=8,
            micro_batch=mb,
            mini_batches=1,
            save_every=0,
            seed=0,
            grad_clip=0.0,
        )
        # plain SGD: the update is the gradient itself (Adam's first step is about sign(g), blind to the scale)
        res = trl_engine.train_rl(
            c,
            [{'id': 0}],
            env,
            model=model,
            tok=tok,
            steps=1,
            resume=False,
            sample_fn=fn,
            log=lambda *_: None,
            args_over={'optim': 'sgd', 'learning_rate': 1.0},
        )
        assert res['trainer'].args.per_device_train_batch_size == mb
        finals.append({k: v.detach().clone() for k, v in res['model'].state_dict().items()})
    start, _ = load_policy(str(tiny_ckpts[0]))
    assert any(not torch.equal(finals[0][k], v) for k, v in start.state_dict().items())
    for k, v in start.state_dict().items():
        d0, d1 = finals[0][k] - v, finals[1][k] - v  # the two updates
        assert torch.allclose(d0, d1, atol=1e-7, rtol=1e-4), (k, float((d0 - d1).abs().max()), float(d0.abs().max()))
