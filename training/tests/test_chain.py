"""The whole chain once: 2 RL steps against the REAL reward service (scripted completions),
merge three tiny checkpoints, 2 OPD steps, export to ONNX; PyTorch's greedy tokens are written
to out/training-export/expected.json for test/integration/trainingExport.test.ts (the TypeScript
local backend must decode the same)."""

from __future__ import annotations

import csv
import json
import shutil

import pytest
import torch

from chorus_train import merge as M
from chorus_train import opd, rl, trl_engine
from chorus_train.envs import ServiceEnv, TokenRewardEnv
from chorus_train.export_onnx import export
from chorus_train.policy import ScriptedSampler, load_policy, render
from chorus_train.reward_client import REPO, RewardClient

FSM = REPO / 'examples' / 'fsm'
GOOD_TB = (FSM / 'tb_seq_detector.sv').read_text()
WEAK_TB = """`timescale 1ns/1ps
module tb_seq_detector;
  reg clk = 0, reset = 1, bit_in = 0, valid = 0;
  wire detected; wire [3:0] hits;
  seq_detector uut (.clk(clk), .reset(reset), .bit_in(bit_in), .valid(valid), .detected(detected), .hits(hits));
  always #5 clk = ~clk;
  initial begin repeat (3) @(negedge clk); reset = 0; repeat (3) @(negedge clk); $finish; end
endmodule
"""
GOOD = f'filename: tb_seq_detector.sv\n```systemverilog\n{GOOD_TB}```\n'
SYNTAX = 'filename: tb_seq_detector.sv\n```systemverilog\nmodule tb_seq_detector; initial begin $finish end endmodule\n```\n'
WEAK_THINK = f'<think>\nshort one\n</think>\nfilename: tb_seq_detector.sv\n```systemverilog\n{WEAK_TB}```\n'
UNPARSABLE = 'I cannot write this testbench.'
REPLIES = [GOOD, SYNTAX, WEAK_THINK, UNPARSABLE]
# group 2, 2 rounds, 2 steps: step 1 direct [GOOD, WEAK_THINK] (worst: the weak one, carried with its
# think block stripped), refine [SYNTAX, GOOD]; step 2 direct [UNPARSABLE, SYNTAX] (both reward 0:
# the first, the unparsable one, is carried), refine [GOOD, WEAK_THINK]
SCRIPT = [GOOD, WEAK_THINK, SYNTAX, GOOD, UNPARSABLE, SYNTAX, GOOD, WEAK_THINK]


class RecordingSampler(ScriptedSampler):
    """Scripted replies; remembers every prompt it was asked to continue."""

    def __init__(self, tok, texts):
        super().__init__(tok, texts)
        self.prompts = []

    def sample(self, prompts, n):
        self.prompts += [list(p) for p in prompts]
        return super().sample(prompts, n)

    def sample_fn(self, prompt_ids, keys):
        """The rollout's generation hook (rollout.ChorusRollout): one row per member, the group's rows sharing one prompt."""
        out = []
        for i in range(0, len(prompt_ids), 2):  # group 2
            out += [s.response_ids for s in self.sample([prompt_ids[i]], len(prompt_ids[i : i + 2]))[0]]
        return out


EXPORT_DIR = REPO / 'out' / 'training-export'


@pytest.fixture(autouse=True)
def _cli_built():
    # the reward service / chorus eval run from the built CLI; not built is a setup error, not a skip
    assert (REPO / 'dist' / 'cli.js').exists(), 'dist/cli.js is not built: run `node scripts/build.mjs --cli-only` in the repository root'


def test_whole_chain(tiny_ckpts, tmp_path):
    task = {
        'id': 'fsm',
        'design_files': [{'name': 'seq_detector.sv', 'content': (FSM / 'seq_detector.sv').read_text()}],
        'top': 'seq_detector',
        'coverage_target': 90,
    }
    # 1. RL: two steps, direct + refinement groups, real simulations
    with RewardClient.start(workers=2) as client:
        assert client.health()['status'] == 'ok'
        env = ServiceEnv(client, timeout_s=60)
        model, tok = load_policy(str(tiny_ckpts[0]))
        cfg = rl.RLConfig(
            out=str(tmp_path / 'rl'), lr=1e-4, group_size=2, prompts_per_step=1, agentic_rounds=2, save_every=2, micro_batch=2, seed=0
        )
        sampler = RecordingSampler(tok, SCRIPT)
        # on TRL's GRPOTrainer (trl_engine): the scripted replies replace the engine's generation
        trl_engine.train_rl(cfg, [task], env, model=model, tok=tok, sample_fn=sampler.sample_fn, steps=2, resume=False, log=print)
        rows = list(csv.DictReader(open(tmp_path / 'rl' / 'metrics.csv')))
        assert len(rows) == 2
        # step 1 direct group: the good testbench (reward 1 + c > 1) and the syntax error (0)
        assert float(rows[0]['reward_direct']) > 0.5 and float(rows[0]['coverage_direct']) > 0.3
        rewards = [float(r['reward']) for r in rows]
        print('RL rewards per step', rewards)
        # the refinement prompts the policy saw: the WORST member of the direct group, its think block
        # stripped, then the service's feedback turn for it
        assert len(sampler.prompts) == 4
        first = tok.decode(sampler.prompts[0])
        refine1, refine2 = (tok.decode(p) for p in (sampler.prompts[1], sampler.prompts[3]))
        assert refine1.startswith(first[: -len('<|im_start|>assistant\n<think>\n\n</think>\n\n')])
        assert WEAK_TB.strip() in refine1 and GOOD_TB.strip() not in refine1 and 'short one' not in refine1
        assert 'Improve coverage toward 100% by editing the testbench.' in refine1  # the weak one ran
        assert '- stage: success\n- coverage: ' in refine1
        # step 2: both direct members scored 0; the first (the unparsable reply) is carried, with the
        # reference's wording for a reply that holds no testbench
        assert UNPARSABLE in refine2 and 'initial begin $finish end' not in refine2
        assert (
            'Response parse result:\n- status: success\n- type: file\n\nEDA result:\n- status: failed (could not extract a valid '
            'testbench from the response)\n\nInstruction for next round:\nFix the coverage run failure (imc stage)'
        ) in refine2
        fb = client.refine_prompt({'status': 'xrun_failed', 'err_msg': 'x'}, reply=SYNTAX)['content']
        assert 'Fix the xrun failure' in fb
        # the data filter's top detection and the reply parse come from the same engine
        from chorus_train.data import service_top_detector

        detect = service_top_detector(client)
        assert detect(task['design_files']) == ['seq_detector']
        two = 'module a(input x, output y); assign y = x; endmodule\nmodule b(input x, output y); assign y = x; endmodule\n'
        assert sorted(detect([{'name': 'two.sv', 'content': two}])) == ['a', 'b']
        assert client.parse_reply(UNPARSABLE)['status'] == 'unparsable'
        assert client.parse_reply(WEAK_THINK)['testbench'].strip() == WEAK_TB.strip()
    rl_ck = tmp_path / 'rl' / 'checkpoint-2'
    assert (rl_ck / 'model.safetensors').exists()
    # 2. merge three tiny checkpoints (the RL output + two experts)
    merged = tmp_path / 'merged'
    M.merge(M.MergeSpec('dare_ties', [('rl', rl_ck), ('e1', tiny_ckpts[1]), ('e2', tiny_ckpts[2])], base='rl'), merged)
    # 3. two OPD steps: student = the merge, teacher = expert 1 (synthetic reward: fast)
    student, tok = load_policy(str(merged))
    teacher, _ = load_policy(str(tiny_ckpts[1]))
    teacher.requires_grad_(False)
    good = set(range(0, 151936, 2))
    ocfg = opd.OPDConfig(
        out=str(tmp_path / 'opd'),
        prompts_per_step=1,
        student_samples=4,
        teacher_samples=2,
        lr=1e-4,
        max_new_tokens=6,
        routing='always_best',
        save_every=2,
        seed=0,
    )
    ores = trl_engine.train_opd(ocfg, [{'id': 't'}], TokenRewardEnv(good), student=student, tok=tok, teachers=[teacher], steps=2, log=print)
    assert ores['totals']['distilled'] == 4  # 2 steps x 2 agentic rounds, each gated (always_best: open)
    final = tmp_path / 'opd' / 'checkpoint-2'
    assert (final / 'model.safetensors').exists()
    # 4. export to the transformers.js layout; PyTorch greedy tokens for the TypeScript check
    shutil.rmtree(EXPORT_DIR, ignore_errors=True)
    model_dir = EXPORT_DIR / 'model'
    export(final, model_dir, ['fp32'], block=16)
    for f in ('tokenizer.json', 'tokenizer_config.json', 'config.json', 'onnx/model.onnx'):
        assert (model_dir / f).exists(), f
    m, tok = load_policy(str(final))
    messages = [
        {'role': 'system', 'content': 'You are a testbench expert.'},
        {'role': 'user', 'content': 'Write a testbench for module counter.'},
    ]
    ids = render(tok, messages)
    with torch.no_grad():
        out = m.generate(
            input_ids=torch.tensor([ids]),
            attention_mask=torch.ones(1, len(ids), dtype=torch.long),
            do_sample=False,
            max_new_tokens=8,
            pad_token_id=tok.pad_token_id,
        )
    gen = out[0, len(ids) :].tolist()
    (EXPORT_DIR / 'expected.json').write_text(
        json.dumps(
            {
                'model_dir': str(model_dir),
                'messages': messages,
                'max_new_tokens': 8,
                'prompt_tokens': len(ids),
                'ids': gen,
                'text': tok.decode(gen, skip_special_tokens=True),
            },
            indent=2,
        )
        + '\n'
    )
