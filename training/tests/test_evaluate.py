"""`chorus-train eval` end to end on the committed fixture model (in-process ONNX path): the
TypeScript `chorus eval` runs, and the metrics land next to the checkpoint."""

from __future__ import annotations

import json
import shutil

import pytest

from chorus_train import evaluate
from chorus_train.reward_client import REPO

FIXTURE = REPO / 'test' / 'fixtures' / 'models' / 'tiny-qwen3'
SUITE = REPO / 'test' / 'fixtures' / 'eval' / 'llm4cov_small.jsonl'


@pytest.fixture(autouse=True)
def _cli_built():
    # the reward service / chorus eval run from the built CLI; not built is a setup error, not a skip
    assert (evaluate.CLI).exists(), 'dist/cli.js is not built: run `node scripts/build.mjs --cli-only` in the repository root'


def test_eval_records_metrics_next_to_the_checkpoint(tmp_path, capsys):
    ck = tmp_path / 'ckpt'
    shutil.copytree(FIXTURE, ck)
    code = evaluate.main(
        [
            str(ck),
            '--suite',
            str(SUITE),
            '--backend',
            'local',
            '--dtype',
            'fp32',
            '--tasks',
            'and2_ok',
            '--samples',
            '1',
            '--rounds',
            '1',
            '--max-tokens',
            '8',
            '--workers',
            '1',
        ]
    )
    assert code == 0
    lines = (ck / 'chorus_eval.jsonl').read_text().splitlines()
    assert len(lines) == 1
    rec = json.loads(lines[0])
    assert rec['suite'] == 'llm4cov_small.jsonl'
    assert rec['row']['kind'] == 'model'
    # a random-weight model writes no testbench: real machinery, zero metrics, two rounds told so
    assert rec['aggregate']['pass_at_1'] == 0 and rec['aggregate']['sim_pass'] == 0
    assert rec['config']['settings']['maxNewTokens'] == 8
    rep = json.loads((ck / 'chorus_eval' / 'llm4cov_small' / 'report.json').read_text())
    assert [r['status'] for r in rep['tasks'][0]['samples'][0]['rounds']] == ['unparsable', 'unparsable']
    assert 'recorded in' in capsys.readouterr().out


def test_hf_checkpoint_is_exported_once_then_reused(tiny_ckpts, tmp_path):
    ck = tmp_path / 'hf'
    shutil.copytree(tiny_ckpts[0], ck)
    out = evaluate.ensure_export(ck, 'fp32', log=lambda *_: None)
    assert out == ck / 'onnx-export' and (out / 'onnx' / 'model.onnx').exists()
    stamp = (out / 'onnx' / 'model.onnx').stat().st_mtime_ns
    assert evaluate.ensure_export(ck, 'fp32', log=lambda *_: None) == out
    assert (out / 'onnx' / 'model.onnx').stat().st_mtime_ns == stamp
    with pytest.raises(SystemExit, match='neither an ONNX export'):
        evaluate.ensure_export(tmp_path, 'fp32')


def test_dry_run_prints_the_command(tmp_path, capsys):
    ck = tmp_path / 'ckpt'
    shutil.copytree(FIXTURE, ck)
    assert evaluate.main([str(ck), '--suite', str(SUITE), '--backend', 'local', '--dry-run', '--limit', '3']) == 0
    out = capsys.readouterr().out
    assert 'eval --suite' in out and '--limit 3' in out and f'--model {ck}' in out


def test_several_checkpoints_are_evaluated_then_compared(tmp_path, capsys):
    cks = []
    for name in ('expert_a', 'expert_b'):
        ck = tmp_path / name
        shutil.copytree(FIXTURE, ck)
        cks.append(ck)
    out_dir = tmp_path / 'cmp'
    assert evaluate.main([*map(str, cks), '--suite', str(SUITE), '--backend', 'local', '--dry-run', '--compare-out', str(out_dir)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    evals = [ln for ln in lines if ' eval --suite ' in ln]
    assert len(evals) == 2 and f'--model {cks[0]}' in evals[0] and f'--model {cks[1]}' in evals[1]
    compare = [ln for ln in lines if ' eval compare ' in ln]
    assert len(compare) == 1
    assert str(cks[0] / 'chorus_eval') in compare[0] and str(cks[1] / 'chorus_eval') in compare[0] and f'--out {out_dir}' in compare[0]
