"""Tests of src/core/sim/formal/formal_reach.py's instrumentation: where each coverage point's
`assert (1'b0)` lands in the design text.

The check must sit inside exactly the arm the point stands for, so that it fails exactly when the
arm runs; a check one `begin`/`end` off proves the wrong thing. Each case instruments a small
design written from the language reference, reparses the result with slang (it must still be
valid SystemVerilog) and asks, for every label, which statement arm encloses it.
Run: python -m pytest -p no:cacheprovider test/python
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyslang
import pytest
from pyslang import parsing, syntax

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / 'src' / 'core' / 'sim' / 'formal' / 'formal_reach.py'

spec = importlib.util.spec_from_file_location('formal_reach', SCRIPT)
assert spec is not None and spec.loader is not None
formal_reach = importlib.util.module_from_spec(spec)
sys.modules['formal_reach'] = formal_reach  # dataclasses look their module up there
spec.loader.exec_module(formal_reach)

SK = syntax.SyntaxKind


def instrumented(tmp_path: Path, text: str, points: list[tuple[int, str]]) -> tuple[str, dict[str, list[str]]]:
    src = tmp_path / 'dut.sv'
    src.write_text(text)
    opts = pyslang.Bag([parsing.PreprocessorOptions()])
    pts = [{'id': f'{line}:{label}', 'line': line, 'label': label} for line, label in points]
    new, labels, placed = formal_reach.instrument(str(src), pts, opts)
    assert new is not None
    assert placed == len(labels)
    return new, labels


def engine(tmp_path: Path, files: list[str], top: str, points: list[dict], budget: tuple[int, int]) -> dict:
    """The engine's response to a request for `points` of the design `files`. ABC comes from PATH:
    scripts/setup.sh installs it (Debian berkeley-abc), so its absence fails the test, never skips it."""
    abc = shutil.which('berkeley-abc') or shutil.which('yosys-abc')
    assert abc, 'ABC is not installed: run scripts/setup.sh (apt-get install berkeley-abc)'
    req = {
        'files': files,
        'includeDirs': [],
        'defines': [],
        'params': [],
        'top': top,
        'designBudgetS': budget[0],
        'pointBudgetS': budget[1],
        'abc': abc,
        'points': points,
    }
    (tmp_path / 'req.json').write_text(json.dumps(req))
    out = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / 'req.json')], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def enclosing_arms(text: str) -> dict[str, list[str]]:
    """For each `chorus_reach_N` check: the chain of arms around it, innermost first, each as
    `if@LINE`, `else@LINE` (the line of the `if` keyword) or `case@LINE` (the item's line)."""
    tree = syntax.SyntaxTree.fromText(text)
    assert not [d for d in tree.diagnostics if d.isError()], 'instrumented text does not parse'
    sm = tree.sourceManager
    found: dict[str, list[str]] = {}

    def line(loc: Any) -> int:
        return sm.getLineNumber(loc)

    def on(node: Any) -> Any:
        if not isinstance(node, syntax.SyntaxNode):
            return True
        if node.kind == SK.ImmediateAssertStatement and node.label is not None:
            name = node.label.name.valueText
            chain: list[str] = []
            child, p = node, node.parent
            while p is not None:
                if p.kind == SK.ConditionalStatement:
                    if p.elseClause is not None and contains(p.elseClause, child):
                        chain.append(f'else@{line(p.ifKeyword.location)}')
                    else:
                        chain.append(f'if@{line(p.ifKeyword.location)}')
                elif p.kind in (SK.StandardCaseItem, SK.DefaultCaseItem):
                    chain.append(f'case@{line(p.sourceRange.start)}')
                child, p = p, p.parent
            found[name] = chain
        return True

    tree.root.visit(on)
    return found


def contains(outer: Any, inner: Any) -> bool:
    a, b = outer.sourceRange, inner.sourceRange
    return a.start.offset <= b.start.offset and b.end.offset <= a.end.offset


def where(text: str, labels: dict[str, list[str]]) -> dict[str, str]:
    """Point id -> the innermost arm enclosing its (one) check."""
    arms = enclosing_arms(text)
    assert all(len(ls) == 1 for ls in labels.values())
    return {pid: arms[ls[0]][0] for pid, ls in labels.items()}


IF_NO_ELSE = """module dut(input logic clk, input logic a, input logic b, output logic [1:0] q);
  always_ff @(posedge clk)
    if (a)
      if (b) q <= 2'd1;
      else q <= 2'd2;
endmodule
"""


def test_if_without_else_gets_an_else_arm_and_its_then_arm_keeps_its_own_check(tmp_path: Path) -> None:
    # line 3: `if (a)` has no else; its then arm (lines 4-5) is itself an if/else with points.
    points = [(3, 'if'), (3, 'else'), (4, 'if'), (4, 'else')]
    new, labels = instrumented(tmp_path, IF_NO_ELSE, points)
    assert where(new, labels) == {'3:if': 'if@3', '3:else': 'else@3', '4:if': 'if@4', '4:else': 'else@4'}
    # the inner checks are inside the outer then arm, not beside it
    arms = enclosing_arms(new)
    assert arms[labels['4:if'][0]] == ['if@4', 'if@3']
    assert arms[labels['4:else'][0]] == ['else@4', 'if@3']


ELSE_IF = """module dut(input logic clk, input logic [1:0] s, output logic [1:0] q);
  always_ff @(posedge clk) begin
    if (s == 2'd0) q <= 2'd0;
    else if (s == 2'd1) q <= 2'd1;
    else q <= 2'd3;
  end
endmodule
"""


def test_else_if_chain_labels_each_condition_on_its_own_line(tmp_path: Path) -> None:
    # Verilator names the second condition's point `elsif` on line 4 and the final else `else`.
    points = [(3, 'if'), (4, 'elsif'), (4, 'else')]
    new, labels = instrumented(tmp_path, ELSE_IF, points)
    assert where(new, labels) == {'3:if': 'if@3', '4:elsif': 'if@4', '4:else': 'else@4'}
    assert enclosing_arms(new)[labels['4:else'][0]] == ['else@4', 'else@3']


CASE = """module dut(input logic [1:0] s, output logic [1:0] q);
  always_comb begin
    q = 2'd0;
    case (s)
      2'd0: q = 2'd1;
      2'd1: begin
        if (s[0]) q = 2'd2;
      end
      default: q = 2'd3;
    endcase
  end
endmodule
"""


def test_case_items_and_default_and_an_if_inside_an_item(tmp_path: Path) -> None:
    points = [(5, 'case'), (6, 'case'), (7, 'if'), (7, 'else'), (9, 'case')]
    new, labels = instrumented(tmp_path, CASE, points)
    assert where(new, labels) == {'5:case': 'case@5', '6:case': 'case@6', '7:if': 'if@7', '7:else': 'else@7', '9:case': 'case@9'}
    assert enclosing_arms(new)[labels['7:else'][0]] == ['else@7', 'case@6']


NOT_JUDGED = """module dut(input logic clk, input logic [3:0] a, output logic [3:0] q);
  function automatic logic [3:0] f(input logic [3:0] x);
    if (x[0]) return x;
    else return ~x;
  endfunction
  always_comb begin
    q = 4'd0;
    for (int i = 0; i < 4; i++)
      if (a[i]) q = f(a);
  end
  initial if (a == 4'd0) $display("zero");
endmodule
"""


@pytest.mark.parametrize('point', [(3, 'if'), (4, 'else'), (9, 'if'), (11, 'if')])
def test_arms_in_functions_loops_and_initial_blocks_are_not_judged(tmp_path: Path, point: tuple[int, str]) -> None:
    # A function arm is inlined per call, a loop arm per iteration, an initial arm runs once at
    # time 0: one assertion there does not stand for Verilator's one point, so none is placed.
    src = tmp_path / 'dut.sv'
    src.write_text(NOT_JUDGED)
    opts = pyslang.Bag([parsing.PreprocessorOptions()])
    new, labels, placed = formal_reach.instrument(str(src), [{'id': 'p', 'line': point[0], 'label': point[1]}], opts)
    assert (new, labels, placed) == (None, {}, 0)


TOGGLES = """module sub(input logic clk, input logic [3:0] d, output logic [3:0] q);
  logic [3:0] held;
  always_ff @(posedge clk) held <= d;
  assign q = held;
endmodule
module top(input logic clk, input logic [3:0] a, output logic [3:0] o);
  typedef struct packed { logic [1:0] f; logic g; } s_t;
  s_t s;
  logic [7:4] v;
  always_ff @(posedge clk) begin
    s <= a[2:0];
    v <= a;
  end
  generate if (1) begin : g
    logic z;
  end endgenerate
  sub u0(.clk, .d(a), .q(o));
endmodule
"""


def toggle(line: int, signal: str) -> dict:
    return {'id': f'{line}:{signal}', 'line': line, 'label': 'toggle', 'signal': signal}


def test_toggle_bits_get_a_pair_of_checks_at_the_end_of_their_own_module(tmp_path: Path) -> None:
    src = tmp_path / 'dut.sv'
    src.write_text(TOGGLES)
    opts = pyslang.Bag([parsing.PreprocessorOptions()])
    owner: dict[str, str] = {}
    pts = [toggle(9, 'v[4]'), toggle(8, 's.f[1]'), toggle(2, 'held[3]'), toggle(1, 'q[0]')]
    new, labels, placed = formal_reach.instrument(str(src), pts, opts, 'top', 'chorus_reach_0_', owner)
    assert new is not None and placed == 4
    tree = syntax.SyntaxTree.fromText(new)
    assert not [d for d in tree.diagnostics if d.isError()]
    # each bit: "never 1", "never 0" and (all four are registers or a copy of one) "never moves
    # twice", in the module that declares it
    assert {pid: [owner[x] for x in ls] for pid, ls in labels.items()} == {
        '9:v[4]': ['top', 'top', 'top'],
        '8:s.f[1]': ['top', 'top', 'top'],
        '2:held[3]': ['sub', 'sub', 'sub'],
        '1:q[0]': ['sub', 'sub', 'sub'],
    }
    never1, never0, twice = labels['8:s.f[1]']
    assert f'always_ff @(posedge clk) begin {twice}_prev <= (s.f[1]);' in new
    assert f"{never1}: assert ((s.f[1]) == '0);" in new and f"{never0}: assert ((s.f[1]) == '1);" in new
    sub_end, top_end = new.index('endmodule'), new.rindex('endmodule')
    held = new.index("((held[3]) == '0)")
    assert held < sub_end and new.index("((v[4]) == '0)") > sub_end and new.index("((v[4]) == '0)") < top_end


@pytest.mark.parametrize('signal', ['a[1]', 'g.z', 'z', 'nosuch[0]', '\\esc[0]', 'v[4]+1'])
def test_toggle_bits_not_judged(tmp_path: Path, signal: str) -> None:
    # The top's inputs (free: always reachable), names of generate scopes, undeclared names and
    # text that is not a bit name get no check.
    src = tmp_path / 'dut.sv'
    src.write_text(TOGGLES)
    opts = pyslang.Bag([parsing.PreprocessorOptions()])
    new, labels, placed = formal_reach.instrument(str(src), [toggle(15 if 'z' in signal else 6, signal)], opts, 'top')
    assert (new, labels, placed) == (None, {}, 0)


def test_a_witness_names_every_input_first_then_only_what_changes() -> None:
    # ABC's trace: one line of input bits per frame; the map says which bit is which input's.
    ywa = {
        'inputs': [
            {'path': ['\\rst_n'], 'offset': 0, 'input': 0},
            {'path': ['\\key'], 'offset': 0, 'input': 1},
            {'path': ['\\key'], 'offset': 1, 'input': 2},
        ]
    }
    w = formal_reach.witness(['000', '110', '110', '111'], ywa)
    assert w == {
        'inputs': [['rst_n', 1], ['key', 2]],
        'frames': [{'rst_n': '0', 'key': '0'}, {'rst_n': '1', 'key': '1'}, {}, {'key': '3'}],
    }
    assert formal_reach.witness(['0'] * (formal_reach.MAX_FRAMES + 1), ywa) is None


REGISTERS = """module r(input logic clk, input logic rst_n, input logic set, input logic [3:0] d,
         output logic flag, output logic busy, output logic [3:0] q, output logic [3:0] c);
  parameter int W = 4;
  integer i;
  logic sticky, twice_w, comb, init = 1'b0, port, tasked, both, fn, neg;
  logic [3:0] cnt;
  always_ff @(posedge clk or negedge rst_n) begin if (!rst_n) flag <= 0; else if (set) flag <= 1; end
  always @(posedge clk) begin for (i = 0; i < W; i++) q[i] <= d[i]; if (set) sticky <= 1'b1; end
  always @(negedge clk) neg <= set;
  always_ff @(posedge clk) begin cnt <= cnt + 1; twice_w <= set; init <= set; port <= set; $display("%d", cnt); end
  always_ff @(posedge clk) tasked <= set;
  always_ff @(posedge clk) both <= set;
  always_ff @(posedge clk or posedge set) both <= d[0];
  always_comb comb = set;
  assign busy = flag;
  assign c = cnt ^ d;
  sub u(.x(port));
  always_ff @(posedge clk) fill(tasked);
  function automatic void f(); fn = 1'b1; endfunction
  always_ff @(posedge clk) fn <= set;
endmodule
"""


def test_registers_are_names_written_only_by_one_edge_triggered_process(tmp_path: Path) -> None:
    # A register changes only at its clock's edges (or its asynchronous reset), so the formal
    # model's steps show every value a simulation does: only registers get the "never moves twice"
    # check. Anything also written elsewhere, given an initial value, connected to an instance,
    # passed to a task, or computed from an input is not one.
    tree = syntax.SyntaxTree.fromText(REGISTERS)
    mod = formal_reach.modules_of(tree, tree.sourceManager)[0]
    regs = formal_reach.registers_of(mod.node)
    assert regs == {
        'flag': ('posedge', 'clk'),  # the clock is the edge the first `if` does not test
        'i': ('posedge', 'clk'),
        'q': ('posedge', 'clk'),
        'sticky': ('posedge', 'clk'),
        'neg': ('negedge', 'clk'),
        'cnt': ('posedge', 'clk'),  # read by $display, which does not write it
        'twice_w': ('posedge', 'clk'),
        'busy': ('posedge', 'clk'),  # a copy of a register
    }


STICKY = """module m(input logic clk, input logic rst_n, input logic set, input logic clr, input logic [3:0] d,
         output logic [3:0] q, output logic seen_o, output logic flag, output logic live, output logic [1:0] o2);
  integer i;
  logic seen;
  logic [1:0] spare;
  assign o2 = spare ^ d[1:0];
  always_ff @(posedge clk) begin
    if (set) seen <= 1'b1;
    for (i = 0; i < 4; i++) q[i] <= d[i];
  end
  always_ff @(posedge clk or negedge rst_n) begin if (!rst_n) flag <= 0; else if (set) flag <= 1; end
  always_ff @(posedge clk) if (clr) live <= 1'b0; else if (set) live <= 1'b1;
  assign seen_o = seen;
endmodule
"""


def test_a_register_that_moves_at_most_once_is_proven_never_to_toggle(tmp_path: Path) -> None:
    # Verilator counts a toggle point once the bit has moved both ways. A flag set and never
    # cleared, its copy, and a loop index left at its bound (i = 4: bit 2 moves 0 -> 1 once) move
    # at most once: proven. A flag a reset clears, or one cleared by an input, moves twice: a
    # witness, never a claim. A variable nothing writes stays 0 (slang's reading gives it x).
    src = tmp_path / 'm.sv'
    src.write_text(STICKY)
    signals = {'seen': 5, 'seen_o': 2, 'i[2]': 4, 'i[0]': 4, 'flag': 2, 'live': 2, 'q[1]': 2, 'spare[1]': 6}
    pts = [{'id': s, 'file': str(src), 'line': line, 'label': 'toggle', 'signal': s} for s, line in signals.items()]
    resp = engine(tmp_path, [str(src)], 'm', pts, (30, 10))
    points = resp['points']
    verdicts = {k: v['verdict'] for k, v in points.items()}
    assert verdicts == {
        'seen': 'unreachable',
        'seen_o': 'unreachable',
        'i[2]': 'unreachable',
        'i[0]': 'unreachable',
        'flag': 'witness',
        'live': 'witness',
        'q[1]': 'witness',
        'spare[1]': 'unreachable',  # nothing writes it: Verilator holds it at 0
    }
    assert 'moves at most once' in points['seen']['why'] and 'stays 0' in points['i[0]']['why']
    assert 'both ways' in points['flag']['why']


UNWRITTEN = """module u(input logic clk, input logic [3:0] d, output logic [3:0] o, output logic done_o, output wire w_o);
  typedef enum logic [1:0] {A, B} e_t;
  logic [3:0] spare;
  int count;
  e_t state;
  wire [3:0] w;
  logic [3:0] mem [0:3];
  logic [3:0] init = 4'h5;
  logic [3:0] tasked, filled, read_only;
  always_ff @(posedge clk) begin fill(tasked); $readmemh("f.hex", filled); $display("%d", read_only); end
  assign o = spare ^ w ^ mem[0] ^ init ^ d ^ count[3:0] ^ read_only;
endmodule
"""


def test_variables_nothing_writes_are_the_ones_given_zero(tmp_path: Path) -> None:
    # Integral variables of the module's own scope that no statement, instance, task or system
    # task writes; not an enum (`'0` would need a cast), not a net, not an unpacked array, not one
    # with an initial value.
    tree = syntax.SyntaxTree.fromText(UNWRITTEN)
    mod = formal_reach.modules_of(tree, tree.sourceManager)[0]
    assert formal_reach.unwritten_of(mod.node) == ['done_o', 'spare', 'count', 'read_only']
    src = tmp_path / 'u.sv'
    src.write_text(UNWRITTEN)
    opts = pyslang.Bag([parsing.PreprocessorOptions()])
    new, _, _ = formal_reach.instrument(str(src), [toggle(3, 'spare[0]')], opts, 'u')
    assert new is not None and "initial begin done_o = '0; spare = '0; count = '0; read_only = '0; end" in new
    # Without extras (the retry when the front end rejects them): the checks alone.
    new, _, _ = formal_reach.instrument(str(src), [toggle(3, 'spare[0]')], opts, 'u', extras=False)
    assert new is not None and 'initial' not in new.split('always_comb begin')[1]


HINTS = """module h #(parameter P = 0, parameter int M = 1) (input logic clk, input logic a, output logic [1:0] y);
  localparam int L = 2;
  always_comb begin
    y = '0;
    if (P) y = 2'd1;
    if (!P) y = 2'd2; else y = 2'd3;
    if (M == 2) y = 2'd0;
    if (L == 2) y = 2'd1;
    if (a && P) y = 2'd2;
    case (M)
      0: y = 2'd1;
      3: y = 2'd2;
      default: y = 2'd0;
    endcase
  end
endmodule
"""


def test_an_arm_that_tests_one_top_parameter_names_the_g_that_runs_it(tmp_path: Path) -> None:
    # The hint a parameter-dead arm carries: `if (P)` runs with P=1, the else of `if (!P)` too,
    # `if (M == 2)` with M=2, the item `3:` of `case (M)` with M=3. A localparam cannot be set, a
    # condition over more than the parameter names nothing, a default has no one value.
    src = tmp_path / 'h.sv'
    src.write_text(HINTS)
    opts = pyslang.Bag([parsing.PreprocessorOptions()])
    pts = [
        {'id': 'if5', 'line': 5, 'label': 'if'},
        {'id': 'else6', 'line': 6, 'label': 'else'},
        {'id': 'if6', 'line': 6, 'label': 'if'},
        {'id': 'if7', 'line': 7, 'label': 'if'},
        {'id': 'if8', 'line': 8, 'label': 'if'},
        {'id': 'if9', 'line': 9, 'label': 'if'},
        {'id': 'case12', 'line': 12, 'label': 'case'},
        {'id': 'case13', 'line': 13, 'label': 'case'},
    ]
    hints: dict[str, str] = {}
    formal_reach.instrument(str(src), pts, opts, 'h', hints=hints)
    assert hints == {'if5': '-G P=1', 'else6': '-G P=1', 'if6': '-G P=0', 'if7': '-G M=2', 'case12': '-G M=3'}
    # Not the top: no -G reaches it.
    hints.clear()
    formal_reach.instrument(str(src), pts, opts, 'other', hints=hints)
    assert hints == {}


def test_a_toggle_check_the_front_end_rejects_costs_only_its_own_file(tmp_path: Path) -> None:
    # `v.f[0]` names a member a plain vector does not have (as a parameterized type may in one
    # instance and not another): slang rejects the check, in sub.sv. The top's own toggle checks,
    # in top.sv, still get their proofs; the rejected one is "not proven" with the reason.
    sub = tmp_path / 'sub.sv'
    sub.write_text(
        'module sub(input logic clk, input logic a, output logic [3:0] v);\n  always_ff @(posedge clk) v <= {4{a}};\nendmodule\n'
    )
    top = tmp_path / 'top.sv'
    top.write_text(
        'module top(input logic clk, input logic a, output logic [3:0] v, output logic z);\n'
        "  assign z = 1'b0;\n  sub u(.clk, .a, .v);\nendmodule\n"
    )
    resp = engine(
        tmp_path,
        [str(sub), str(top)],
        'top',
        [
            {'id': 'bad', 'file': str(sub), 'line': 1, 'label': 'toggle', 'signal': 'v.f[0]'},
            {'id': 'z', 'file': str(top), 'line': 1, 'label': 'toggle', 'signal': 'z'},
        ],
        (20, 5),
    )
    points = resp['points']
    assert points['z']['verdict'] == 'unreachable'
    assert points['bad']['verdict'] == 'not-proven' and 'could not read its check' in points['bad']['why']


DIVIDED = """module dv(input logic clk, output logic [1:0] q, output logic hit);
  logic cd, started;
  always_ff @(posedge clk) cd <= ~cd;
  logic [1:0] slow, seen;
  always_ff @(posedge cd) slow <= slow + 1;
  always_ff @(posedge clk) begin
    seen <= slow;
    started <= 1'b1;
    if (started && seen == slow) hit <= 1'b1;
    else hit <= 1'b0;
  end
  assign q = slow;
endmodule
"""


def test_a_clock_divided_inside_the_design_is_a_second_clock(tmp_path: Path) -> None:
    # `slow` ticks on a flip-flop's output, every other edge of clk: in simulation `seen == slow`
    # holds half the time. One model step per edge of clk for every flip-flop (the single-clock
    # model) would tick `slow` on every edge and prove the arm unreachable: a wrong claim. The
    # model counts the flip-flops' clock nets, not only the top's clock inputs, and takes one step
    # per clock event.
    src = tmp_path / 'dv.sv'
    src.write_text(DIVIDED)
    resp = engine(
        tmp_path,
        [str(src)],
        'dv',
        [
            {'id': 'if9', 'file': str(src), 'line': 9, 'label': 'if'},
            {'id': 'hit', 'file': str(src), 'line': 1, 'label': 'toggle', 'signal': 'hit'},
        ],
        (20, 5),
    )
    assert resp['multiClock'] is True
    assert resp['points']['if9']['verdict'] != 'unreachable'
    assert resp['points']['hit']['verdict'] != 'unreachable'
