"""Tests of src/core/sim/slang/slang_facts.py, the slang design front end's Python half.

Each fixture under test/fixtures/slang is one case written from the language reference; the
script runs on it as the engine runs it (one-shot with a request file, and --serve), with the
interpreter running these tests, which must have pyslang installed.
Run: python -m pytest -p no:cacheprovider test/python
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / 'src' / 'core' / 'sim' / 'slang' / 'slang_facts.py'
FIXTURES = ROOT / 'test' / 'fixtures' / 'slang'
INCLUDE_DIR = FIXTURES / 'inc'

RESPONSE_KEYS = {
    'version',
    'ok',
    'slang',
    'diagnostics',
    'top',
    'topCandidates',
    'modules',
    'clocks',
    'resets',
    'assertions',
    'loads',
    'includes',
}
ASSERTION_KEYS = {
    'kind',
    'action',
    'file',
    'line',
    'column',
    'module',
    'instance',
    'clock',
    'disableIff',
    'antecedent',
    'consequent',
    'implication',
    'delay',
    'usesPast',
    'functions',
    'signals',
    'cone',
    'initial',
    'text',
    'fromMacro',
    'antecedentExpr',
    'consequentExpr',
}


def request(*names: str, top: str | None = None, **extra: Any) -> dict:
    req: dict[str, Any] = {'files': [str(FIXTURES / n) for n in names], 'top': top}
    req.update(extra)
    return req


def facts(req: dict, tmp_path: Path) -> dict:
    path = tmp_path / 'request.json'
    path.write_text(json.dumps(req))
    done = subprocess.run([sys.executable, str(SCRIPT), str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1
    return json.loads(lines[0])


def serve(lines: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), '--serve'], input=''.join(lines), capture_output=True, text=True, timeout=60)


def only(items: list[dict], **match: Any) -> dict:
    found = [i for i in items if all(i.get(k) == v for k, v in match.items())]
    assert len(found) == 1, (match, items)
    return found[0]


def errors(resp: dict) -> list[dict]:
    return [d for d in resp['diagnostics'] if d['severity'] == 'error']


# --- resets and clocks ----------------------------------------------------------------------


def test_active_low_sync_reset(tmp_path: Path) -> None:
    resp = facts(request('sync_reset_low.sv'), tmp_path)
    assert resp['ok'] and resp['top'] == 'sync_reset_low'
    reset = only(resp['resets'], signal='rst_ni')
    assert reset['activeLow'] is True and reset['async'] is False and reset['uses'] == 1
    assert reset['evidence'] == 'always_ff @(posedge clk_i) if (!rst_ni) in sync_reset_low (sync)'
    assert resp['clocks'] == [{'signal': 'clk_i', 'edge': 'pos', 'uses': 1}]


def test_active_low_async_reset(tmp_path: Path) -> None:
    resp = facts(request('async_reset_low.sv'), tmp_path)
    assert resp['resets'] == [
        {
            'signal': 'rst_n',
            'activeLow': True,
            'async': True,
            'uses': 1,
            'evidence': 'always_ff @(posedge clk or negedge rst_n) if (!rst_n) in async_reset_low (async)',
        }
    ]
    # The reset's negedge is no clock.
    assert resp['clocks'] == [{'signal': 'clk', 'edge': 'pos', 'uses': 1}]


def test_active_high_sync_reset_and_an_enable(tmp_path: Path) -> None:
    resp = facts(request('sync_reset_high.sv'), tmp_path)
    reset = only(resp['resets'], signal='reset')
    assert reset['activeLow'] is False and reset['async'] is False
    assert "if (reset == 1'b1)" in reset['evidence']
    assert [r['signal'] for r in resp['resets']] == ['reset']  # `if (load) shadow <= value`
    assert resp['clocks'] == [{'signal': 'clock', 'edge': 'pos', 'uses': 2}]


def test_sync_reset_written_last_overrides_the_block(tmp_path: Path) -> None:
    resp = facts(request('sync_reset_last.sv'), tmp_path)
    reset = only(resp['resets'], signal='reset')
    assert reset['activeLow'] is False and reset['async'] is False
    assert [r['signal'] for r in resp['resets']] == ['reset']  # `in`, the data, is no reset


def test_async_reset_whose_branch_loops_over_an_array(tmp_path: Path) -> None:
    src = tmp_path / 'loop_reset.sv'
    src.write_text(
        'module loop_reset(input logic clk, areset, d, output logic [1:0] q [4]);\n'
        '  always @(posedge clk, posedge areset)\n'
        "    if (areset) begin for (int i = 0; i < 4; i++) q[i] <= 2'd1; end\n"
        "    else q[0] <= {1'b0, d};\n"
        'endmodule\n'
    )
    resp = facts({'files': [str(src)], 'top': None}, tmp_path)
    assert [(r['signal'], r['activeLow'], r['async']) for r in resp['resets']] == [('areset', False, True)]
    assert [c['signal'] for c in resp['clocks']] == ['clk']  # the reset's edge is no clock


def test_two_clocks_through_two_instances_of_one_module(tmp_path: Path) -> None:
    resp = facts(request('two_clocks.sv'), tmp_path)
    assert sorted(c['signal'] for c in resp['clocks']) == ['clk_a', 'clk_b']
    assert all(c['edge'] == 'pos' and c['uses'] == 1 for c in resp['clocks'])
    assert sorted(r['signal'] for r in resp['resets']) == ['rst_a_n', 'rst_b_n']
    assert all(r['activeLow'] and r['async'] for r in resp['resets'])
    top = only(resp['modules'], name='two_clocks')
    assert top['instances'] == [{'name': 'u_a', 'module': 'tc_stage'}, {'name': 'u_b', 'module': 'tc_stage'}]
    assert [m['name'] for m in resp['modules']] == ['two_clocks', 'tc_stage']


def test_submodule_clock_and_reset_trace_to_top_ports(tmp_path: Path) -> None:
    resp = facts(request('sub_wiring.sv'), tmp_path)
    assert resp['ok']
    assert [m['name'] for m in resp['modules']] == ['sub_wiring', 'sw_mid', 'sw_leaf']
    assert resp['clocks'] == [{'signal': 'sys_clk', 'edge': 'pos', 'uses': 2}]
    reset = only(resp['resets'], signal='sys_rst_n')
    assert reset['activeLow'] and reset['async'] and reset['uses'] == 2
    assert 'in sw_leaf' in reset['evidence']
    assertion = only(resp['assertions'], module='sw_leaf')
    assert assertion['instance'] == 'sub_wiring.u_mid.u_leaf'
    assert assertion['clock'] == {'signal': 'sys_clk', 'edge': 'pos'}
    assert assertion['signals'] == [
        {'name': 'clk', 'top': 'sys_clk'},
        {'name': 'rst_n', 'top': 'sys_rst_n'},
        {'name': 'gnt', 'top': 'grants'},
    ]


def test_named_top_below_the_root(tmp_path: Path) -> None:
    resp = facts(request('sub_wiring.sv', top='sw_mid'), tmp_path)
    assert resp['ok'] and resp['top'] == 'sw_mid'
    assert resp['topCandidates'] == ['sub_wiring']
    assert resp['clocks'] == [{'signal': 'ck', 'edge': 'pos', 'uses': 2}]
    assert [r['signal'] for r in resp['resets']] == ['rn']


# --- assertions -----------------------------------------------------------------------------


def test_named_property_with_disable_iff(tmp_path: Path) -> None:
    resp = facts(request('prop_disable_iff.sv'), tmp_path)
    a = only(resp['assertions'], action='assert')
    assert set(a) == ASSERTION_KEYS
    assert a['kind'] == 'concurrent' and a['module'] == 'prop_disable_iff'
    assert a['clock'] == {'signal': 'clk', 'edge': 'pos'}
    assert a['disableIff'] == '!rst_n'
    assert (a['antecedent'], a['implication'], a['consequent'], a['delay']) == ('req', '|=>', 'ack', 1)
    assert a['text'] == '@(posedge clk) disable iff (!rst_n) req |=> ack'
    assert (a['line'], a['column']) == (18, 3)
    assert a['file'] == str(FIXTURES / 'prop_disable_iff.sv')
    assert a['fromMacro'] is False and a['usesPast'] is False
    # The always_ff and the disable iff are both evidence of the same reset.
    reset = only(resp['resets'], signal='rst_n')
    assert reset['activeLow'] and not reset['async'] and reset['uses'] == 2


def test_a_reset_and_clock_used_only_by_an_assertion_compared_again_with_a_constant(tmp_path: Path) -> None:
    # OpenTitan's ASSERT macro writes `disable iff ((!rst_ni) !== '0)`, and a combinational block
    # has no other use of either port: the check still makes them a clock and an active-low reset.
    f = write(
        tmp_path,
        'comb_checked.sv',
        """module comb_checked(input logic clk_i, rst_ni, input logic [3:0] a, output logic [3:0] y);
  assign y = ~a;
  Inv_A: assert property (@(posedge clk_i) disable iff ((!rst_ni) !== '0) y == ~a);
  High_A: assert property (@(posedge clk_i) disable iff (rst_ni == 1'b0) y != 4'hx);
endmodule
""",
    )
    resp = facts({'files': [f], 'top': 'comb_checked'}, tmp_path)
    assert resp['clocks'] == [{'signal': 'clk_i', 'edge': 'pos', 'uses': 2}]
    reset = only(resp['resets'], signal='rst_ni')
    assert reset['activeLow'] is True and reset['async'] is False and reset['uses'] == 2


def test_a_property_over_internal_state_has_the_inputs_its_signals_depend_on(tmp_path: Path) -> None:
    # mode_q is loaded from cfg_i through a submodule's output, and run from start_i through a
    # concatenation's left side; data_i reaches neither. The cone follows assignments, blocks and
    # port connections both ways.
    f = write(
        tmp_path,
        'internal_state.sv',
        """module latch_mode(input logic clk_i, load_i, input logic [1:0] cfg_i, output logic [1:0] mode_o);
  always_ff @(posedge clk_i) if (load_i) mode_o <= cfg_i;
endmodule
module internal_state(input logic clk_i, rst_ni, start_i, input logic [1:0] cfg_i, input logic [7:0] data_i,
                      output logic [7:0] data_o);
  logic [1:0] mode_q;
  logic run, spare;
  latch_mode u_mode(.clk_i, .load_i(start_i), .cfg_i, .mode_o(mode_q));
  assign {run, spare} = {start_i, 1'b0};
  assign data_o = data_i;
  Mode_A: assert property (@(posedge clk_i) disable iff (!rst_ni) run |-> mode_q != 2'd0);
endmodule
""",
    )
    resp = facts({'files': [f], 'top': 'internal_state'}, tmp_path)
    a = only(resp['assertions'], action='assert')
    assert [s['top'] for s in a['signals'] if s['name'] in ('run', 'mode_q')] == [None, None]
    assert a['cone'] == ['clk_i', 'rst_ni', 'start_i', 'cfg_i']


def test_a_check_in_an_initial_block_is_made_once_unless_a_loop_repeats_it(tmp_path: Path) -> None:
    f = write(
        tmp_path,
        'start_checks.sv',
        """module start_checks(input logic clk, reset, cyc);
  initial assert (reset);
  initial begin #1; if (!reset) assert (!cyc); end
  initial forever @(posedge clk) assert (reset || cyc);
  always @(posedge clk) assert (!cyc || !reset);
endmodule
""",
    )
    resp = facts({'files': [f], 'top': 'start_checks'}, tmp_path)
    assert [(a['line'], a['initial']) for a in resp['assertions']] == [(2, True), (3, True), (4, False), (5, False)]


def test_past_and_default_clocking(tmp_path: Path) -> None:
    resp = facts(request('past.sv'), tmp_path)
    a = only(resp['assertions'], action='assert')
    assert a['usesPast'] is True and a['functions'] == ['$past']
    assert a['clock'] == {'signal': 'clk', 'edge': 'pos'}
    assert a['disableIff'] == 'rst'
    assert a['consequent'] == "cnt == $past(cnt) + 8'd1" and a['delay'] == 1
    cover = only(resp['assertions'], action='cover')
    assert cover['implication'] is None and cover['antecedent'] is None
    assert cover['consequent'] == "cnt == 8'hff ##1 cnt == 8'h00" and cover['delay'] == 0
    assert only(resp['resets'], signal='rst')['activeLow'] is False


def test_overlapping_implication_with_two_cycle_delay(tmp_path: Path) -> None:
    resp = facts(request('delay2.sv'), tmp_path)
    a = only(resp['assertions'], action='assert')
    assert (a['antecedent'], a['implication'], a['consequent'], a['delay']) == ('start', '|->', '##2 done', 2)
    assume = only(resp['assertions'], action='assume')
    assert assume['functions'] == ['$isunknown'] and assume['delay'] == 0


LEGAL = ROOT / 'test' / 'fixtures' / 'legal'


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_generate_loop_checks_are_one_fact_per_element_over_flat_port_bits(tmp_path: Path) -> None:
    resp = facts({'files': [str(LEGAL / 'sel_array.sv')], 'top': None}, tmp_path)
    existing = [a for a in resp['assertions'] if a['line'] == 23]
    # One fact per generate iteration: each constrains other bits of the ports.
    assert [a['antecedentExpr'] for a in existing] == [
        {'op': 'select', 'base': {'op': 'id', 'name': 'valid_i', 'top': 'valid_i', 'width': 2}, 'text': f'[{i}]', 'width': 1}
        for i in (0, 1)
    ]
    # sel_i is `logic [1:0][1:0]`: element i is bits [2i+1:2i] of the flat port.
    assert [a['consequentExpr']['args'][0]['text'] for a in existing] == ['[1:0]', '[3:2]']
    assert existing[0]['consequentExpr']['args'][1] == {'op': 'const', 'value': "32'd3", 'width': 32}


def test_internal_net_is_read_through_its_continuous_assignment(tmp_path: Path) -> None:
    resp = facts({'files': [str(LEGAL / 'credit_gate.sv')], 'top': None}, tmp_path)
    a = only(resp['assertions'], line=21)
    take = {'op': 'id', 'name': 'take_i', 'top': 'take_i', 'width': 1}
    give = {'op': 'id', 'name': 'give_i', 'top': 'give_i', 'width': 1}
    dec = {'op': 'cast', 'width': 1, 'args': [{'op': 'bitand', 'args': [take, {'op': 'bitnot', 'args': [give]}]}]}
    assert a['consequentExpr'] == {'op': 'not', 'args': [{'op': 'and', 'args': [
        {'op': 'eq', 'args': [{'op': 'id', 'name': 'credit_o', 'top': 'credit_o', 'width': 2}, {'op': 'const', 'value': "'0"}]},
        dec,
    ]}]}  # fmt: skip


def test_a_net_driven_bit_by_bit_is_read_as_the_concatenation_of_its_drivers(tmp_path: Path) -> None:
    # `assign we[0] = ...; assign we[1] = ...;` (ibex_wb_stage's write enables under $onehot0):
    # the parts cover every bit once, so the check is over the ports. Parts that leave a gap or
    # overlap are no value of the net: it stays an internal name.
    src = write(
        tmp_path,
        'parts.sv',
        """
module parts (input logic clk, input logic a, input logic [1:0] b, output logic [3:0] o);
  logic [2:0] we;
  assign we[0] = a;
  assign we[2:1] = b;
  logic [2:0] gap;
  assign gap[0] = a;
  assign gap[2] = b[0];
  logic [1:0] twice;
  assign twice[0] = a;
  assign twice[1:0] = b;
  w: assert property (@(posedge clk) $onehot0(we));
  g: assert property (@(posedge clk) gap != 3'd7);
  t: assert property (@(posedge clk) twice != 2'd3);
  assign o = {we, gap[1]};
endmodule
""",
    )
    resp = facts({'files': [src], 'top': 'parts'}, tmp_path)
    a = {'op': 'id', 'name': 'a', 'top': 'a', 'width': 1}
    b = {'op': 'id', 'name': 'b', 'top': 'b', 'width': 2}
    we = only(resp['assertions'], line=12)['consequentExpr']
    inlined = {
        'op': 'cast',
        'width': 3,
        'args': [{'op': 'concat', 'args': [{'op': 'cast', 'width': 2, 'args': [b]}, {'op': 'cast', 'width': 1, 'args': [a]}]}],
    }
    assert inlined in we['args']
    for line, name in ((13, 'gap'), (14, 'twice')):
        text = json.dumps(only(resp['assertions'], line=line)['consequentExpr'])
        assert f'"name": "{name}"' in text and '"top": null' in text


def test_constants_keep_their_value_and_selects_follow_connections(tmp_path: Path) -> None:
    src = write(
        tmp_path,
        'wrap.sv',
        """
module leaf (input logic clk, input logic [1:0] v, input logic w, input logic [3:0] n);
  a: assert property (@(posedge clk) v != 2'd3 && n < 5'd3);
  b: assert property (@(posedge clk) w);
  logic multi;
  assign multi = v[0];
  assign multi = v[1];
  c: assert property (@(posedge clk) multi);
endmodule
module wrap (input logic clk, input logic [7:0] bus, input logic [1:0] narrow);
  leaf u (.clk(clk), .v(bus[5:4]), .w(narrow), .n(bus[3:0]));
endmodule
""",
    )
    resp = facts({'files': [src], 'top': 'wrap'}, tmp_path)
    a = only(resp['assertions'], line=3)
    v, n = a['consequentExpr']['args'][0]['args'][0], a['consequentExpr']['args'][1]['args'][0]
    assert (v['base']['top'], v['text'], n['text']) == ('bus', '[5:4]', '[3:0]')
    # 5'd3 is 3 (slang prints it 5'b11).
    assert a['consequentExpr']['args'][1]['args'][1]['value'] == "5'd3"
    # A width-changing connection is not the port: no top name.
    assert only(resp['assertions'], line=4)['consequentExpr']['top'] is None
    # A net with two drivers is not replaced by either.
    assert only(resp['assertions'], line=8)['consequentExpr'] == {'op': 'id', 'name': 'multi', 'top': None, 'width': 1}


def test_procedural_loops_with_constant_bounds_are_unrolled(tmp_path: Path) -> None:
    src = write(
        tmp_path,
        'rules.sv',
        """
module rules #(parameter int N = 3) (input logic [N-1:0][3:0] a, input logic c, input logic [1:0] k);
  always_comb begin
    if (!c) begin
      for (int unsigned i = 0; i < N; i++) begin
        chk: assert (a[i] != 4'd15);
        for (int unsigned j = i + 1; j < N; j++) pair: assert (a[i] != a[j]);
      end
      for (int i = 0; i < k; i++) open_bound: assert (a[i] != 0);
    end
  end
endmodule
""",
    )
    resp = facts({'files': [src], 'top': None}, tmp_path)
    texts = lambda line: [  # noqa: E731
        [x.get('text') for x in a['consequentExpr']['args']] for a in resp['assertions'] if a['line'] == line
    ]
    assert texts(6) == [['[3:0]', None], ['[7:4]', None], ['[11:8]', None]]
    # The inner loop starts at i + 1: the three distinct pairs.
    assert texts(7) == [['[3:0]', '[7:4]'], ['[3:0]', '[11:8]'], ['[7:4]', '[11:8]']]
    assert all(
        a['antecedentExpr'] == {'op': 'not', 'args': [{'op': 'id', 'name': 'c', 'top': 'c', 'width': 1}]}
        for a in resp['assertions']
        if a['line'] in (6, 7)
    )
    # A bound the design sets at run time: not unrolled, and no antecedent is claimed for it.
    bounded = only(resp['assertions'], line=9)
    assert bounded['antecedentExpr'] is None and "(the enclosing statement's condition)" in bounded['antecedent']


def test_inside_is_a_disjunction_of_values_and_ranges(tmp_path: Path) -> None:
    src = write(
        tmp_path,
        'modes.sv',
        """
module modes (input logic clk, input logic [3:0] m, input logic go);
  a: assert property (@(posedge clk) go |-> m inside {4'd1, [4'd8:4'd9]});
  b: assert property (@(posedge clk) go |-> m inside {[4'd4 +/- 4'd1]});
endmodule
""",
    )
    resp = facts({'files': [src], 'top': None}, tmp_path)
    m = {'op': 'id', 'name': 'm', 'top': 'm', 'width': 4}
    k = lambda v: {'op': 'const', 'value': f"4'd{v}", 'width': 4}  # noqa: E731
    assert only(resp['assertions'], line=3)['consequentExpr'] == {
        'op': 'or',
        'args': [
            {'op': 'eq', 'args': [m, k(1)]},
            {'op': 'and', 'args': [{'op': 'ge', 'args': [m, k(8)]}, {'op': 'le', 'args': [m, k(9)]}]},
        ],
    }
    # A tolerance range is not modelled: no rule is read from it.
    assert only(resp['assertions'], line=4)['consequentExpr']['op'] == 'opaque'


def test_immediate_and_deferred_assertions_in_always_comb(tmp_path: Path) -> None:
    resp = facts(request('immediate_comb.sv'), tmp_path)
    immediate = only(resp['assertions'], kind='immediate')
    assert immediate['action'] == 'assert' and immediate['clock'] is None
    assert immediate['consequent'] == immediate['text'] == "y != 4'hf"
    assert immediate['functions'] == []  # the $error of the action block is not the check's
    assert immediate['signals'] == [{'name': 'y', 'top': 'y'}]
    deferred = only(resp['assertions'], kind='deferred')
    assert deferred['functions'] == ['$countones']
    assert resp['clocks'] == [] and resp['resets'] == []


def test_immediate_assertions_under_procedural_ifs_take_the_conditions_as_antecedent(tmp_path: Path) -> None:
    resp = facts(request('guarded_assert.sv'), tmp_path)
    first = only(resp['assertions'], line=18)
    assert (first['antecedent'], first['implication'], first['consequent']) == ('!past_valid', '|->', '!v')
    assert first['antecedentExpr'] == {'op': 'not', 'args': [{'op': 'id', 'name': 'past_valid', 'top': None, 'width': 1}]}
    second = only(resp['assertions'], line=20)
    assert second['antecedent'] == '(!(!past_valid)) && ($past(v && !rdy) && !rst)'
    assert second['consequent'] == 'v && $stable(d)' and second['implication'] == '|->'
    tree = second['antecedentExpr']
    assert tree['op'] == 'and' and tree['args'][0]['op'] == 'not'  # the else branch: the first condition false
    assert tree['args'][1]['op'] == 'and' and tree['args'][1]['args'][1] == {
        'op': 'not',
        'args': [{'op': 'id', 'name': 'rst', 'top': 'rst', 'width': 1}],
    }
    # Under a case item with a constant value: the selector equals it.
    third = only(resp['assertions'], line=24)
    assert third['antecedent'] == "d inside {8'd0}"
    assert third['antecedentExpr'] == {
        'op': 'eq',
        'args': [{'op': 'id', 'name': 'd', 'top': 'd', 'width': 8}, {'op': 'const', 'value': "8'd0", 'width': 8}],
    }
    # Under a wildcard item: an antecedent is said, none is modelled, so nothing treats `!v` as
    # always required.
    fourth = only(resp['assertions'], line=30)
    assert fourth['antecedent'].startswith('(the enclosing statement') and fourth['antecedentExpr'] is None


def test_error_calls_and_unique_priority_cases_are_checks(tmp_path: Path) -> None:
    resp = facts(request('error_case.sv'), tmp_path)
    # `if (c) $error`: an assertion of false under c.
    err = only(resp['assertions'], line=17)
    assert (err['kind'], err['action'], err['antecedent'], err['consequent']) == ('error', 'assert', "rst_n && req && (n == 4'hf)", "1'b0")
    assert err['consequentExpr'] == {'op': 'const', 'value': "1'd0", 'width': 1}
    assert {s['name'] for s in err['signals']} == {'rst_n', 'req', 'n'}
    # `default: $fatal` of a case on an input: no item matched.
    dflt = only(resp['assertions'], line=23)
    assert dflt['kind'] == 'error' and dflt['antecedent'] == "!(cmd inside {3'd1, 3'd4, 3'd5})"
    assert dflt['antecedentExpr']['op'] == 'not' and dflt['antecedentExpr']['args'][0]['op'] == 'or'
    # `unique case` without a default: the selector is one of the items, a value repeated by a
    # later item counted once.
    uniq = only(resp['assertions'], line=27)
    assert (uniq['kind'], uniq['antecedent'], uniq['consequent']) == ('case', None, "op inside {2'd0, 2'd1, 2'd2}")
    priority = only(resp['assertions'], line=35)
    assert priority['consequentExpr'] == {
        'op': 'eq',
        'args': [{'op': 'id', 'name': 'mode', 'top': 'mode', 'width': 2}, {'op': 'const', 'value': "2'd3", 'width': 2}],
    }
    # `unique0` allows no match: no check.
    assert not [a for a in resp['assertions'] if a['line'] == 41]


def test_onehot0_in_a_clocked_block(tmp_path: Path) -> None:
    resp = facts(request('onehot0.sv'), tmp_path)
    a = only(resp['assertions'], kind='concurrent')
    assert a['functions'] == ['$onehot0'] and a['consequent'] == '$onehot0(sel)'
    assert a['clock'] == {'signal': 'clk_i', 'edge': 'pos'}  # inferred from the always_ff
    assert a['signals'] == [{'name': 'sel', 'top': 'sel'}]
    assert only(resp['resets'], signal='rst_ni')['async'] is True


def test_assertion_macro_follows_the_defines(tmp_path: Path) -> None:
    plain = facts(request('macro_assert.sv'), tmp_path)
    a = only(plain['assertions'], action='assert')
    assert a['fromMacro'] is True
    assert (a['line'], a['column']) == (15, 3)  # where the macro is used
    assert (a['antecedent'], a['implication'], a['consequent']) == ('valid && !ready', '|=>', '$stable(data)')
    assert a['functions'] == ['$stable'] and a['clock'] == {'signal': 'clk', 'edge': 'pos'}
    verilator = facts(request('macro_assert.sv', defines=['VERILATOR']), tmp_path)
    assert verilator['ok'] and verilator['assertions'] == []
    undefined = facts(request('macro_assert.sv', defines=['VERILATOR'], undefines=['VERILATOR']), tmp_path)
    assert len(undefined['assertions']) == 1


def test_hierarchy_shapes(tmp_path: Path) -> None:
    resp = facts(request('hierarchy_shapes.sv'), tmp_path)
    assert resp['ok']
    top = only(resp['modules'], name='hierarchy_shapes')
    assert top['instances'] == [{'name': 'u_leaf[0]', 'module': 'hs_leaf'}, {'name': 'u_leaf[1]', 'module': 'hs_leaf'}]
    # Both array elements reset from the same top port; the default disable iff adds evidence.
    reset = only(resp['resets'], signal='rst')
    assert reset['activeLow'] is False and reset['async'] is False and reset['uses'] == 5
    assert reset['evidence'] == 'always_ff @(posedge c) if (r) in hs_leaf (sync)'
    assert [c['signal'] for c in resp['clocks']] == ['clk']
    in_generate = only(resp['assertions'], line=28)
    assert in_generate['signals'] == [{'name': 'clk', 'top': 'clk'}, {'name': 'sel', 'top': 'sel'}, {'name': 'q', 'top': None}]
    assert in_generate['disableIff'] == 'rst'  # the module's default disable iff
    named_sequence = only(resp['assertions'], line=38)
    assert (named_sequence['antecedent'], named_sequence['implication']) == ('s_pair', '|=>')
    assert named_sequence['clock'] == {'signal': 'clk', 'edge': 'pos'}  # default clocking
    by_block = only(resp['assertions'], line=39)
    assert by_block['clock'] == {'signal': 'clk', 'edge': 'pos'}  # @(cb)
    assert by_block['delay'] == 1
    in_function = only(resp['assertions'], line=42)
    assert in_function['kind'] == 'immediate' and in_function['clock'] is None


# --- modules, ports, parameters ---------------------------------------------------------------


def test_enum_and_packed_struct_ports(tmp_path: Path) -> None:
    resp = facts(request('enum_port.sv'), tmp_path)
    module = only(resp['modules'], name='enum_port')
    assert module['file'] == str(FIXTURES / 'enum_port.sv') and module['line'] == 7
    op = only(module['ports'], name='op')
    assert op == {
        'name': 'op',
        'direction': 'input',
        'width': 2,
        'type': 'ep_pkg::op_e',
        'enumMembers': [{'name': 'OP_NOP', 'value': 0}, {'name': 'OP_ADD', 'value': 1}, {'name': 'OP_SUB', 'value': 3}],
        'packedStruct': False,
    }
    pkt = only(module['ports'], name='pkt')
    assert pkt['packedStruct'] is True and pkt['width'] == 8 and pkt['enumMembers'] is None
    assert only(module['ports'], name='x')['type'] == 'logic[7:0]'
    assert only(module['ports'], name='y')['direction'] == 'output'
    assert module['params'] == [
        {'name': 'W', 'value': '8', 'local': False, 'type': False},
        {'name': 'T', 'value': 'logic[7:0]', 'local': False, 'type': True},
        {'name': 'W2', 'value': '16', 'local': True, 'type': False},
    ]


def test_top_parameter_override(tmp_path: Path) -> None:
    resp = facts(request('enum_port.sv', params=['W=4']), tmp_path)
    module = only(resp['modules'], name='enum_port')
    assert only(module['params'], name='W')['value'] == '4'
    assert only(module['ports'], name='y')['width'] == 4


# --- includes, tops, errors -----------------------------------------------------------------


def test_include_contributes_an_always_ff(tmp_path: Path) -> None:
    resp = facts(request('include_top.sv', includeDirs=[str(INCLUDE_DIR)]), tmp_path)
    assert resp['ok']
    assert resp['includes'] == [{'file': str(INCLUDE_DIR / 'flop_body.svh'), 'from': str(FIXTURES / 'include_top.sv'), 'line': 8}]
    assert only(resp['resets'], signal='rst_n')['async'] is True
    assert resp['clocks'] == [{'signal': 'clk', 'edge': 'pos', 'uses': 1}]
    missing = facts(request('include_top.sv'), tmp_path)
    assert not missing['ok'] and errors(missing)


def test_two_tops(tmp_path: Path) -> None:
    resp = facts(request('two_tops.sv'), tmp_path)
    assert resp['ok'] is False and resp['top'] is None
    assert resp['topCandidates'] == ['top_alpha', 'top_beta']
    assert [e['message'] for e in errors(resp)] == ['several top candidates: top_alpha, top_beta; name one with --top']
    named = facts(request('two_tops.sv', top='top_beta'), tmp_path)
    assert named['ok'] and named['top'] == 'top_beta'
    assert [m['name'] for m in named['modules']] == ['top_beta']
    unknown = facts(request('two_tops.sv', top='top_gamma'), tmp_path)
    assert unknown['ok'] is False and unknown['top'] is None
    message = errors(unknown)[0]['message']
    assert 'top_gamma' in message and 'top_alpha, top_beta' in message


def test_syntax_error(tmp_path: Path) -> None:
    resp = facts(request('syntax_error.sv'), tmp_path)
    assert resp['ok'] is False
    error = errors(resp)[0]
    assert error['file'] == str(FIXTURES / 'syntax_error.sv')
    assert error['line'] == 3 and isinstance(error['column'], int)


def test_missing_file_is_a_diagnostic(tmp_path: Path) -> None:
    resp = facts({'files': [str(tmp_path / 'absent.sv')]}, tmp_path)
    assert resp['ok'] is False and 'absent.sv' in errors(resp)[0]['message']


def test_response_keys(tmp_path: Path) -> None:
    resp = facts(request('sub_wiring.sv'), tmp_path)
    assert set(resp) == RESPONSE_KEYS
    assert resp['version'] == 1 and isinstance(resp['slang'], str)


# --- the command line -----------------------------------------------------------------------

FIXTURE_FILES = sorted(p.name for p in FIXTURES.glob('*.sv'))


def test_serve_answers_each_line_as_one_shot_does(tmp_path: Path) -> None:
    requests = [request(n, includeDirs=[str(INCLUDE_DIR)]) for n in FIXTURE_FILES]
    done = serve([json.dumps(r) + '\n' for r in requests] + ['\n'])
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(answers) == len(requests)
    for req, answer in zip(requests, answers, strict=True):
        assert answer == facts(req, tmp_path), req['files']


@pytest.mark.parametrize(
    'line', ['{"files": "a.sv"}\n', 'not json\n', '{"files": []}\n', '{"files": ["a.sv"], "include_dirs": []}\n', '[]\n']
)
def test_malformed_request_exits_2(line: str, tmp_path: Path) -> None:
    done = serve([line])
    assert done.returncode == 2 and 'malformed request' in done.stderr and done.stdout == ''
    path = tmp_path / 'bad.json'
    path.write_text(line)
    one = subprocess.run([sys.executable, str(SCRIPT), str(path)], capture_output=True, text=True, timeout=60)
    assert one.returncode == 2 and 'malformed request' in one.stderr


def test_registers_loaded_under_an_address_condition(tmp_path: Path) -> None:
    resp = facts(request('bus_loads.sv'), tmp_path)
    loads = {x['register']: x for x in resp['loads']}
    assert set(loads) == {'op_a', 'op_b', 'mode', 'ctrl'}  # `plain` has no address condition
    assert loads['op_a']['at'] == [{'port': 'addr', 'value': 0}] and loads['op_a']['reads'] == ['wdata']
    assert loads['op_b']['at'] == [{'port': 'addr', 'value': 1}, {'port': 'addr', 'value': 2}]
    assert loads['mode']['at'] == [{'port': 'addr', 'value': 4}]  # a named constant's value
    assert loads['ctrl']['at'] == [{'port': 'addr', 'value': 8}] and loads['ctrl']['line'] == 22
