"""Tests of src/core/sim/slang/slang_integrity.py: what a testbench does to the design under test.

Each case is a design and a testbench written here from the language reference; the script runs
as the engine runs it (a request on stdin, `python -I`), with the interpreter running these tests.
Run: python -m pytest -p no:cacheprovider test/python
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / 'src' / 'core' / 'sim' / 'slang' / 'slang_integrity.py'

DESIGN = """
module sub(input logic clk, output logic [3:0] q);
  always_ff @(posedge clk) q <= q + 1;
endmodule
module dut #(parameter int W = 8) (input logic clk, input logic [W-1:0] d, output logic [W-1:0] q);
  logic [2:0] state;
  sub u_sub(.clk(clk), .q());
  always_ff @(posedge clk) begin q <= d; state <= state + 1; end
endmodule
"""


def judge(tmp_path: Path, body: str, *, after: str = '', inst: str = 'dut uut(.clk, .d, .q);') -> dict[str, Any]:
    design = tmp_path / 'dut.sv'
    design.write_text(DESIGN)
    tb = tmp_path / 'tb.sv'
    tb.write_text(f'module tb;\n  logic clk = 0; logic [7:0] d, q;\n  {inst}\n{body}\nendmodule\n{after}')
    request = {'files': [str(design)], 'defines': ['VERILATOR=1'], 'testbench': str(tb), 'tbTop': 'tb', 'dutTop': 'dut'}
    out = subprocess.run(
        [sys.executable, '-I', str(SCRIPT), '-'], input=json.dumps(request), capture_output=True, text=True, check=True, timeout=120
    )
    response = json.loads(out.stdout)
    assert response['ok'], response['diagnostics']
    return response


def kinds(response: dict[str, Any]) -> list[tuple[str, str]]:
    return [(v['kind'], v['target']) for v in response['violations']]


def test_reads_of_internals_are_allowed(tmp_path: Path) -> None:
    r = judge(tmp_path, '  logic [2:0] seen [8];\n  always @(posedge clk) seen[uut.state] <= uut.state;')
    assert r['violations'] == []
    assert r['unjudged'] == []
    assert [i['path'] for i in r['dutInstances']] == ['tb.uut']


def test_writes_through_every_form(tmp_path: Path) -> None:
    body = """
  `define S uut.state
  task automatic put(output logic [2:0] o); o = 1; endtask
  task automatic bump(ref logic [2:0] r); r++; endtask
  initial begin
    uut.state = 1;
    `S <= 2;
    uut.state++;
    put(uut.state);
    bump(uut.state);
    force uut.u_sub.q = 4'd3;
    release uut.u_sub.q;
  end
"""
    r = judge(tmp_path, body)
    found = kinds(r)
    assert found.count(('write', 'tb.uut.state')) == 5
    assert ('force', 'tb.uut.u_sub.q') in found
    assert ('release', 'tb.uut.u_sub.q') in found
    # Each at the testbench line that wrote it (a macro: where it was used).
    assert sorted({v['line'] for v in r['violations']}) == [9, 10, 11, 12, 13, 14, 15]


def test_other_instances_defparam_bind_and_parameters(tmp_path: Path) -> None:
    body = '  sub lone(.clk, .q());\n  dut #(.W(4)) u2(.clk, .d(d[3:0]), .q());\n  defparam u2.W = 3;'
    r = judge(tmp_path, body, after='bind dut sub extra(.clk(clk), .q());\n')
    found = kinds(r)
    assert ('instance', 'tb.lone (sub)') in found
    assert ('instance', 'tb.u2 (dut)') in found
    assert ('defparam', 'tb.u2.W') in found
    assert ('bind', 'dut') in found
    # The instance under test is the first in source order, with its parameters as elaborated.
    uut = r['dutInstances'][0]
    assert uut['path'] == 'tb.uut'
    assert [(p['name'], p['value'], p['overridden']) for p in uut['params']] == [('W', '8', False)]


def test_an_error_that_may_hide_a_write_is_unjudged_and_one_that_cannot_is_not(tmp_path: Path) -> None:
    # slang drops the whole assignment (P is a constant), and with it the write into the design.
    hidden = judge(tmp_path, '  localparam int P = 1;\n  initial {uut.state, P} = 9;')
    assert hidden['violations'] == []
    assert [u['line'] for u in hidden['unjudged']] == [5]
    # A static initializer reading an automatic loop counter: an error, but nothing named through a dot.
    harmless = judge(tmp_path, "  initial for (int i = 0; i < 2; i++) begin logic [2:0] h = 3'(i); end")
    assert harmless['unjudged'] == []
