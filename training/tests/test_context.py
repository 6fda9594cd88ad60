"""Long prompts, bounded (issue 43): every prompt fits the recipe's context less the reply budget; the
oldest assistant / feedback pairs go first, whole; a prompt that cannot fit is left out and counted;
vLLM's max_model_len is the recipe's context."""

from __future__ import annotations

from pathlib import Path

import pytest
from transformers import AutoTokenizer

from chorus_train import rl, rollout
from chorus_train.envs import Score
from chorus_train.policy import render
from chorus_train.tiny_model import DEFAULT_TOKENIZER

RECIPES = Path(__file__).resolve().parents[1] / 'recipes'


@pytest.fixture(scope='module')
def tok():
    t = AutoTokenizer.from_pretrained(str(DEFAULT_TOKENIZER))
    if t.pad_token_id is None:
        t.pad_token = t.eos_token
    return t


def turn(role: str, tag: str, words: int) -> dict:
    return {'role': role, 'content': f'{tag} ' + ' '.join(f'{tag}w{i}' for i in range(words))}


def test_fit_prompt_drops_the_oldest_pairs_whole(tok):
    head = [turn('system', 'SYS', 5), turn('user', 'TASK', 20)]
    pairs = [[turn('assistant', f'A{k}', 60), turn('user', f'F{k}', 40)] for k in range(3)]
    msgs = head + [m for p in pairs for m in p]
    full = len(render(tok, msgs))
    assert rl.fit_prompt(tok, msgs, full) == (msgs, render(tok, msgs))  # fits: untouched
    last_two = head + pairs[1] + pairs[2]
    got, ids = rl.fit_prompt(tok, msgs, len(render(tok, last_two)))
    assert got == last_two and ids == render(tok, last_two) and len(ids) < full
    got, ids = rl.fit_prompt(tok, msgs, len(render(tok, last_two)) - 1)
    assert got == head + pairs[2] and len(ids) <= len(render(tok, last_two)) - 1  # the first turn and the latest pair
    got, ids = rl.fit_prompt(tok, msgs, len(render(tok, head + pairs[2])) - 1)
    assert ids is None and got == head + pairs[2]  # cannot fit: the caller leaves the rows out


class FakeTrainer:
    class accelerator:  # noqa: N801 - the attribute name TRL's trainer has
        num_processes, process_index = 1, 0

    use_vllm = False

    def __init__(self, tok, n):
        self.eos_token_ids = [tok.eos_token_id]
        self._chorus_inputs = [{'task_idx': 0}] * n


class LongFeedback:
    """A first turn of ~30 tokens; feedback turns of `words` words each."""

    def __init__(self, words):
        self.words = words

    def first_turn(self, task):
        return [turn('system', 'SYS', 5), turn('user', 'TASK', 20)]

    def score(self, task, samples):
        return [Score(1.0 + 0.1 * s.meta['key'][2], 0.1 * s.meta['key'][2], False, 'success') for s in samples]

    def feedback(self, task, sample, score):
        return turn('user', f'F{sample.meta["key"][1]}', self.words)['content']


def run_rollout(tok, env, rounds, cap, group=2):
    cfg = rl.RLConfig(max_new_tokens=4, max_context=cap + 4, rescore_tries=0)
    seen = []

    def fn(prompt_ids, keys):
        seen.extend(prompt_ids)
        return [tok(f'reply{r}{j}', add_special_tokens=False)['input_ids'] + [tok.eos_token_id] for _, r, j in keys]

    ro = rollout.ChorusRollout([{'id': 0}], env, tok, cfg, group=group, rounds=rounds, sample_fn=fn)
    out = ro(['p'] * (group * rounds), FakeTrainer(tok, group * rounds))
    return ro, out, seen


def test_a_refinement_prompt_is_cut_to_the_cap(tok):
    """Three rounds: the third round's conversation [first turn, A0, F0, A1, F1] passes the cap; A0 and F0
    are dropped, so the rows are sampled from [first turn, A1, F1] within the cap."""
    env = LongFeedback(80)
    first = env.first_turn({})
    cap = len(render(tok, first + [{'role': 'assistant', 'content': 'reply00'}, turn('user', 'F0', 80)])) + 2
    ro, out, seen = run_rollout(tok, env, rounds=3, cap=cap)
    assert all(len(p) <= cap for p in seen) and ro.max_prompt <= cap
    third = tok.decode(ro.last['rows'][4]['sample'].prompt_ids)
    assert 'F1w0' in third and 'F0w0' not in third and 'TASKw0' in third  # the oldest pair went, the first turn stayed
    assert ro.overlong_rows == 0 and ro.masked_rows == 0 and all(m[0] == 1 for m in out['env_mask'])


def test_a_prompt_that_cannot_fit_is_left_out_and_counted(tok):
    """Two rounds, a feedback turn so long that [first turn, A0, F0] passes the cap: the refinement rows are
    not sampled (no tokens, no reward), counted as overlong, not as reward-service failures."""
    env = LongFeedback(400)
    cap = len(render(tok, env.first_turn({}))) + 50
    ro, out, seen = run_rollout(tok, env, rounds=2, cap=cap)
    assert len(seen) == 2 and all(len(p) <= cap for p in seen)  # only the direct group was sampled
    assert out['env_mask'][2:] == [[0], [0]] and out['chorus_reward'][2:] == [None, None]
    assert (ro.overlong_rows, ro.masked_rows) == (2, 0)


def test_vllm_max_model_len_is_the_recipes_context():
    from chorus_train import trainers
    from chorus_train.recipes import load_recipe, opd_config, rl_config

    for cfg, g in ((rl_config(load_recipe(RECIPES / 'rl.yaml'), 'stage0', {}), 4), (opd_config(load_recipe(RECIPES / 'opd.yaml'), {}), 4)):
        assert (cfg.max_context, cfg.prompt_cap) == (40960, 24576)
        a = trainers.grpo_args(cfg, group=g, rounds=2, prompts=4, world=8, steps_total=10, use_vllm=True)
        assert a.vllm_max_model_length == 40960
        assert trainers.grpo_args(cfg, group=g, rounds=2, prompts=4, world=8, steps_total=10).vllm_max_model_length is None
    with pytest.raises(SystemExit, match='max_context'):
        rl.RLConfig.from_dict({'max_context': 16384, 'max_new_tokens': 16384})
