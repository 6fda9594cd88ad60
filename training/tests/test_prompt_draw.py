"""Experts that differ (issue 43): each RL stage draws its own prompts (its own seed), the draw the plans
print is the trainer's own sampler order, and a run records its seed and draw in its manifest."""

from __future__ import annotations

import json

import pytest
import torch

from chorus_train import rl, trl_engine
from chorus_train.envs import TokenRewardEnv
from chorus_train.policy import load_policy
from chorus_train.trainers import prompt_draw

pytest.importorskip('trl')


@pytest.mark.parametrize('offset', [0, 7])
def test_prompt_draw_is_the_samplers_order(offset):
    """prompt_draw (what the dry run and the manifest use) against the trainer's sampler over two epochs
    (23 records, 4 per step: 5 whole steps per epoch, the rest dropped, the second epoch a new order),
    with and without OPD's offset."""
    from chorus_train.trainers import _trainer_classes

    Sampler = _trainer_classes()[0].Sampler
    s = Sampler(data_source=list(range(23)), mini_repeat_count=8, batch_size=4, repeat_count=1, shuffle=True, seed=5, offset=offset)
    got = [x for i, x in enumerate(list(s) + list(s)) if i % 8 == 0]  # one entry per task (8 rows each)
    assert len(got) == 40
    assert prompt_draw(23, 5, 4, 10, offset) == got
    assert prompt_draw(23, 6, 4, 10, offset) != got  # the seed decides the draw


def test_a_run_records_its_seed_and_draw(tiny_ckpts, tmp_path):
    """train_rl writes chorus_manifest.json before the first step: the seed and the planned draw in task
    ids; the first step's tasks are the draw's first, and another seed draws other prompts."""
    model, tok = load_policy(str(tiny_ckpts[0]))
    tasks = [{'id': f'task{i}', 'messages': [{'role': 'user', 'content': f'Task {i}.'}]} for i in range(9)]
    emb = model.get_input_embeddings().weight.detach().float()
    good = set(torch.nonzero(emb @ torch.randn(emb.shape[1], generator=torch.Generator().manual_seed(0)) > 0).flatten().tolist())

    def fn(prompt_ids, keys):
        return [tok('wire w;', add_special_tokens=False)['input_ids'] + [tok.eos_token_id] for _ in keys]

    cfg = rl.RLConfig(
        out=str(tmp_path / 'run'),
        updates=4,
        group_size=2,
        prompts_per_step=2,
        agentic_rounds=1,
        max_new_tokens=4,
        micro_batch=4,
        save_every=0,
        seed=11,
    )
    res = trl_engine.train_rl(
        cfg, tasks, TokenRewardEnv(good), model=model, tok=tok, steps=1, resume=False, sample_fn=fn, log=lambda *_: None
    )
    m = json.loads((tmp_path / 'run' / trl_engine.MANIFEST).read_text())
    assert (m['seed'], m['rollout_steps'], m['prompts_per_step'], len(m['prompt_draw'])) == (11, 4, 2, 8)
    task_of = res['trainer'].rollout_func.last['task_of']
    seen = [tasks[task_of[g]]['id'] for g in range(0, len(task_of), 2)]  # one per block (group 2, 1 round)
    assert seen == m['prompt_draw'][:2]
    assert m['prompt_draw'] == [tasks[i]['id'] for i in prompt_draw(9, 11, 2, 4)]
    assert [tasks[i]['id'] for i in prompt_draw(9, 12, 2, 4)] != m['prompt_draw']
