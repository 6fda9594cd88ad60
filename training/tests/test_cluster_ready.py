"""What would go wrong on the first GPU cluster (issue 26), checked on CPU: fp32 master weights (one
optimizer step at the recipe's lr 1e-6 moves the weights; pure bf16 does not), every TRL default that
changes the reference's math set explicitly, the reference's advantage epsilon, and a run stopped
between save boundaries resuming."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from chorus_train import rl, trainers, trl_engine
from chorus_train.envs import TokenRewardEnv
from chorus_train.policy import load_policy
from chorus_train.recipes import load_recipe, opd_config, rl_config

pytest.importorskip('trl')

RECIPES = Path(__file__).resolve().parents[1] / 'recipes'
TASKS = [{'id': i, 'messages': [{'role': 'user', 'content': f'Task {i}: write a testbench for m{i}.'}]} for i in range(2)]
WORDS = ['module tb; endmodule', 'initial begin $finish; end', 'always @(posedge clk) q <= d;', 'assign y = a & b;', 'wire w;']


def sample_fn(tok):
    def fn(prompt_ids, keys):
        return [
            tok(WORDS[(3 * t + 2 * r + j) % len(WORDS)], add_special_tokens=False)['input_ids'] + [tok.eos_token_id] for t, r, j in keys
        ]

    return fn


def good_set(model) -> set[int]:
    emb = model.get_input_embeddings().weight.detach().float()
    return set(torch.nonzero(emb @ torch.randn(emb.shape[1], generator=torch.Generator().manual_seed(0)) > 0).flatten().tolist())


def rcfg(out, **kw) -> rl.RLConfig:
    base = dict(
        out=str(out),
        lr=1e-6,  # the recipe's lr
        updates=100,
        group_size=4,
        prompts_per_step=2,
        agentic_rounds=2,
        max_new_tokens=8,
        micro_batch=8,
        mini_batches=1,
        save_every=0,
        seed=0,
    )
    base.update(kw)
    return rl.RLConfig(**base)


def build_trainer(cfg: rl.RLConfig, env, model, tok, args_over=None):
    """The real TRL trainer on TASKS: groups of 4, 2 rounds, 2 prompts, one step, no vLLM."""
    trainer, _, _ = trl_engine._build(
        cfg,
        TASKS,
        env,
        model,
        tok,
        group=4,
        rounds=2,
        prompts=2,
        steps=1,
        resume=False,
        sample_fn=sample_fn(tok),
        opd_state=None,
        teachers=(),
        log=lambda *_: None,
        use_vllm=False,
        args_over=args_over,
    )
    return trainer


def _moved_fraction(model, tok, out, bf16_autocast: bool) -> tuple[float, int]:
    """One optimizer step through the real trainer; the fraction of parameter ELEMENTS with a non-zero
    gradient that the step changed."""
    from transformers import TrainerCallback

    seen = {}

    class Snap(TrainerCallback):
        def on_pre_optimizer_step(self, args, state, control, model=None, **kw):
            for n, p in model.named_parameters():
                if p.grad is not None:
                    seen[n] = (p.detach().clone(), p.grad.detach() != 0)

    env = TokenRewardEnv(good_set(model))
    over = {'bf16': True} if bf16_autocast else {}
    trainer = build_trainer(rcfg(out), env, model, tok, args_over=over)
    trainer.add_callback(Snap())
    trainer.train()
    assert trainer.state.global_step == 1 and seen
    moved = total = 0
    params = dict(trainer.accelerator.unwrap_model(trainer.model).named_parameters())
    for n, (before, nz) in seen.items():
        total += int(nz.sum())
        moved += int(((params[n].detach() != before) & nz).sum())
    return moved / max(total, 1), total


def test_one_step_at_the_recipe_lr_moves_the_weights(tiny_ckpts, tmp_path):
    """The recipe (dtype bfloat16) on the engine: fp32 master weights under bf16 autocast; one AdamW step
    at lr 1e-6 changes >= 99% of the parameters that have a gradient. The same step on pure bf16
    parameters (the fp32 upcast switched off) changes almost none: the check can fail."""
    model, tok = load_policy(str(tiny_ckpts[0]), dtype='bfloat16')  # what a bf16 checkpoint loaded as-is gives
    frac32, n = _moved_fraction(model, tok, tmp_path / 'fp32', bf16_autocast=True)
    assert next(model.parameters()).dtype == torch.float32  # _build upcast the bf16 policy
    model16, _ = load_policy(str(tiny_ckpts[0]), dtype='bfloat16')
    orig = trl_engine._fp32_master
    trl_engine._fp32_master = lambda m, log=print: m  # pure bf16: what the engine did before
    try:
        frac16, _ = _moved_fraction(model16, tok, tmp_path / 'bf16', bf16_autocast=False)
    finally:
        trl_engine._fp32_master = orig
    print(
        f'fraction of parameters with a gradient changed by one step at lr 1e-6: fp32 master {frac32:.4f}, pure bf16 {frac16:.4f} ({n} elements)'
    )
    assert frac32 >= 0.99, frac32
    assert frac16 < 0.5, frac16  # the check fails on pure bf16


def test_recipe_policy_loads_fp32_master_weights():
    c = rl_config(load_recipe(RECIPES / 'rl.yaml'), 'stage0', {})
    assert c.dtype == 'bfloat16'  # the compute dtype ...
    a = trainers.grpo_args(c, group=4, rounds=2, prompts=4, world=8, steps_total=10)
    # ... autocast on a GPU (bf16=True only when CUDA is there); never fp16
    assert not a.fp16


# the reference's value of every GRPOConfig field whose TRL default could change the math (docs/protocol.md §8)
REFERENCE = {
    'loss_type': 'dapo',
    'beta': 0.0,
    'epsilon': 0.2,
    'epsilon_high': 0.28,
    'scale_rewards': 'group',
    'multi_objective_aggregation': 'sum_then_normalize',
    'reward_weights': None,
    'importance_sampling_level': 'token',
    'delta': None,
    'num_iterations': 1,
    'mask_truncated_completions': False,
    'top_entropy_quantile': 1.0,
    'entropy_coef': 0.0,
    'use_adaptive_entropy': False,
    'off_policy_mask_threshold': None,
    'sync_ref_model': False,
    'vllm_importance_sampling_correction': False,
    'repetition_penalty': 1.0,
    'min_p': None,
    'top_k': 0,
    'temperature': 1.0,
    'top_p': 1.0,
    'disable_dropout': True,
    'cast_lm_head_to_fp32': False,
    'weight_decay': 0.0,
    'adam_beta1': 0.9,
    'adam_beta2': 0.95,
    'learning_rate': 1e-6,
    'warmup_steps': 0,
}


@pytest.mark.parametrize('recipe', ['rl', 'opd'])
def test_grpo_config_sets_every_math_default_explicitly(recipe):
    r = load_recipe(RECIPES / f'{recipe}.yaml')
    c = rl_config(r, 'stage0', {}) if recipe == 'rl' else opd_config(r, {})
    g = c.group_size if recipe == 'rl' else c.student_samples
    a = trainers.grpo_args(c, group=g, rounds=c.agentic_rounds, prompts=c.prompts_per_step, world=8, steps_total=c.updates, use_vllm=True)
    got = {k: getattr(a, k) for k in REFERENCE}
    got = {k: getattr(v, 'value', v) for k, v in got.items()}
    assert got == REFERENCE
    assert str(getattr(a.lr_scheduler_type, 'value', a.lr_scheduler_type)) == 'constant'
    assert c.adv_eps == 1e-6 and not c.is_correction
    # every field REFERENCE_MATH names is one of this TRL's GRPOConfig fields (a rename would fail here)
    from dataclasses import fields

    from trl import GRPOConfig

    names = {f.name for f in fields(GRPOConfig)}
    assert set(trainers.REFERENCE_MATH) <= names and 'vllm_importance_sampling_correction' in names
    # the option that turns the correction on
    c.is_correction = True
    a = trainers.grpo_args(c, group=g, rounds=c.agentic_rounds, prompts=c.prompts_per_step, world=8, steps_total=1, use_vllm=True)
    assert a.vllm_importance_sampling_correction


def test_reference_advantage_epsilon():
    """TRL's (R - mean) / (std + 1e-4) rescaled to the reference's (R - mean) / (std + 1e-6); unscored
    rows (NaN) stay out of the group's std; equal-reward groups stay at 0."""
    from trl.trainer.utils import nanstd

    r = torch.tensor([1.0, 1.001, 1.0, 1.002, 1.5, 1.5, 1.5, 1.5, 0.0, float('nan'), 2.0, 1.0])
    G = 4
    grp = r.view(-1, G)
    mean = torch.nanmean(grp, 1).repeat_interleave(G)
    std = nanstd(grp, dim=1).repeat_interleave(G)
    trl_adv = torch.nan_to_num((r - mean) / (std + 1e-4), nan=0.0)
    want = torch.nan_to_num((r - mean) / (std + 1e-6), nan=0.0)
    for start, n in ((0, 12), (4, 4), (8, 4)):  # whole batch, and one rank's slice
        got = trainers.reference_advantages(trl_adv[start : start + n], r, G, start, 1e-6)
        assert torch.allclose(got, want[start : start + n], rtol=1e-5, atol=1e-6), (start, got, want)
    assert abs(float(want[1]) - float(trl_adv[1])) > 0.01  # the small-std group: the epsilon matters


def test_trainer_uses_the_reference_advantage_epsilon(tiny_ckpts, tmp_path):
    """Through the real trainer: the advantages TRL hands the loss are (R - mean) / (std + adv_eps)."""
    model, tok = load_policy(str(tiny_ckpts[0]))
    env = TokenRewardEnv(good_set(model))
    got = {}
    trainer = build_trainer(rcfg(tmp_path / 'run', adv_eps=1e-6), env, model, tok)
    orig = trainer._generate_and_score_completions

    def spy(inputs):
        out = orig(inputs)
        got['adv'] = out['advantages'].clone()
        got['r'] = trainer._chorus_rewards[:, 0].clone()
        return out

    trainer._generate_and_score_completions = spy
    trainer.train()
    r = got['r']
    grp = r.view(-1, 4)
    from trl.trainer.utils import nanstd

    want = (r - torch.nanmean(grp, 1).repeat_interleave(4)) / (nanstd(grp, dim=1).repeat_interleave(4) + 1e-6)
    assert torch.allclose(got['adv'], torch.nan_to_num(want), atol=1e-5)


def test_a_run_stopped_between_save_boundaries_resumes(tiny_ckpts, tmp_path):
    """save_every 2, `--steps 1`: the run ends mid-interval and still leaves a COMPLETE checkpoint-1
    (trainer_state.json, optimizer); the next run resumes from it; a model-only checkpoint (what the
    engine wrote before) is passed over, not read."""
    model, tok = load_policy(str(tiny_ckpts[0]))
    env = TokenRewardEnv(good_set(model))
    c = rcfg(tmp_path / 'run', save_every=2, keep_checkpoints=3)
    quiet = lambda *_: None  # noqa: E731
    trl_engine.train_rl(c, TASKS, env, model=model, tok=tok, steps=1, resume=False, sample_fn=sample_fn(tok), log=quiet)
    ck = tmp_path / 'run' / 'checkpoint-1'
    for f in ('model.safetensors', 'optimizer.pt', 'trainer_state.json', 'config.json'):
        assert (ck / f).exists(), f
    # an incomplete checkpoint with a higher step (model only, no trainer_state.json) must not be picked
    broken = tmp_path / 'run' / 'checkpoint-7'
    broken.mkdir()
    (broken / 'config.json').write_text((ck / 'config.json').read_text())
    assert trl_engine._last_step(tmp_path / 'run') == (ck, 1)
    logs = []
    res = trl_engine.train_rl(c, TASKS, env, steps=1, sample_fn=sample_fn(tok), log=logs.append)
    assert any('resuming from' in x and 'checkpoint-1' in x for x in logs), logs
    assert res['trainer'].state.global_step == 2
    st = json.loads((tmp_path / 'run' / 'checkpoint-2' / 'trainer_state.json').read_text())
    assert st['global_step'] == 2


def test_rl_rescores_a_failed_member_once_then_masks_it():
    """The reward-service failure rule (docs/protocol.md §8): a member the service fails to score is
    asked for again (rescore_tries, 1); scored then, it trains with its real reward; still failing,
    it is masked (reward None, env_mask 0: out of its group's mean/std, the loss and the token count),
    where the reference scored it 0."""
    from transformers import AutoTokenizer

    from chorus_train import rollout
    from chorus_train.envs import Score
    from chorus_train.tiny_model import DEFAULT_TOKENIZER

    tok = AutoTokenizer.from_pretrained(str(DEFAULT_TOKENIZER))
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token

    class Flaky:
        def __init__(self):
            self.asked: dict[int, int] = {}

        def first_turn(self, task):
            return task['messages']

        def score(self, task, samples):
            out = []
            for s in samples:
                j = s.meta['key'][2] + 10 * s.meta['key'][1]
                self.asked[j] = self.asked.get(j, 0) + 1
                if (j == 1 and self.asked[j] == 1) or j == 2:  # member 1 fails once, member 2 always
                    out.append(Score(None, None, False, 'service_error', error='scorer down'))
                else:
                    out.append(Score(1.5 - 0.1 * j, 0.5 - 0.1 * j, False, 'success'))
            return out

        def feedback(self, task, sample, score):
            return 'again'

    env = Flaky()
    ro = rollout.ChorusRollout(TASKS[:1], env, tok, rcfg('/nonexistent', rescore_tries=1), group=4, rounds=1, sample_fn=sample_fn(tok))

    class Acc:
        num_processes, process_index = 1, 0

    class T:
        accelerator = Acc()
        eos_token_ids = [tok.eos_token_id]
        _chorus_inputs = [{'task_idx': 0}] * 4
        use_vllm = False

    out = ro(['p'] * 4, T())
    assert env.asked == {0: 1, 1: 2, 2: 2, 3: 1}  # one more request for each failed member
    assert out['chorus_reward'] == [pytest.approx(1.5), pytest.approx(1.4), None, pytest.approx(1.2)]
    assert set(out['env_mask'][1]) == {1} and set(out['env_mask'][2]) == {0}
