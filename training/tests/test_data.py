"""CodeV-R1 filtering on fixture records (tests/fixtures/codev_r1_sample.jsonl): token length,
exactly one top (the detector stands in for the engine's introspection endpoint), dedup,
contamination against an evaluation suite."""

from __future__ import annotations

import re
from pathlib import Path

from chorus_train import data

FX = Path(__file__).parent / 'fixtures'


def fake_tops(files):
    """Stand-in for the service's /v1/introspect: declared modules nobody instantiates."""
    src = '\n'.join(f['content'] for f in files)
    mods = re.findall(r'^\s*module\s+(\w+)', src, re.M)
    return [m for m in mods if not re.search(rf'^\s*{m}\s+\w+\s*\(', src, re.M)]


def test_filter_fixture_records():
    recs = data.load_records(FX / 'codev_r1_sample.jsonl')
    tasks, rep, dropped = data.filter_records(recs, data.qwen3_token_counter(), fake_tops, data.read_eval_dirs([FX / 'eval_suite']))
    assert [t['problem_id'] for t in tasks] == ['p1']
    t = tasks[0]
    assert t['top'] == 'alu_core' and t['design_files'][0]['name'] == 'alu_core.sv' and t['rtl_tokens'] > 1000
    reasons = {d['problem_id']: d['reason'] for d in dropped}
    assert reasons == {'p2': 'top_count', 'p3': 'short', 'p4': 'duplicate', 'p5': 'contaminated', 'p6': 'no_rtl'}
    assert rep.total == 6 and rep.kept == 1


def test_threshold_is_strictly_more_than_1000_tokens():
    rec = [{'problem_id': 'x', 'ground_truth': 'module m; endmodule'}]
    keep, _, _ = data.filter_records(rec, lambda s: 1001, lambda f: ['m'])
    drop, _, _ = data.filter_records(rec, lambda s: 1000, lambda f: ['m'])
    assert len(keep) == 1 and len(drop) == 0


def test_near_duplicate_measure():
    a = 'module a(input x, output y); assign y = x & 1; endmodule'
    assert data.jaccard(data.shingles(a), data.shingles('// c\n' + a)) == 1.0
    assert data.jaccard(data.shingles(a), data.shingles('module q(input [3:0] d, output reg z); always @* z = |d; endmodule')) < 0.2
