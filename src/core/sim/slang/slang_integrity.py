#!/usr/bin/env python3
"""What a testbench does to the design under test, decided on slang's elaborated tree.

Why this file exists: coverage is the reward, and a testbench can raise it without driving a
single port: write the design's state through a hierarchical name (`uut.state = 5`), `force` a
wire inside it, `defparam` or `bind` into it, or instantiate the design (or one of its submodules)
a second time with other parameters, so that points of a configuration nobody asked for count.
Text matching cannot see through macros, generate blocks, escaped names, output arguments or port
connections; the elaborated tree can, because every name in it is already resolved to the symbol
it denotes. This script compiles the design's files followed by the testbench (as the flat build
reads them: the design's macros are defined when the testbench is read), elaborates from the
testbench's top, and reports every place where testbench code changes something that lives inside
an instance of a design module. Reading the design's internals stays allowed: checkers do that.

Usage:  slang_integrity.py REQUEST.json   (or '-' to read the request from stdin)
Request:  {"files": [design paths], "includeDirs": [..], "defines": [..], "undefines": [..],
           "testbench": path, "tbTop": name, "dutTop": name}
Response: {"version": 1, "ok": bool, "slang": str, "diagnostics": [..], "violations": [..],
           "dutInstances": [{"path", "params": [ParamFact + "overridden"]}]}
`ok` is false when the testbench's top could not be elaborated (nothing could be judged).
Exit status: 0 whenever a response was written; 2 for a malformed request.
It reads the files named and the files they include, and writes no file.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import Any, TypedDict

# Run as `python -I script`: the script's own directory is not on the path, its sibling is.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pyslang  # noqa: E402
from pyslang import ast, syntax  # noqa: E402
from slang_facts import (  # noqa: E402
    SK,
    Diagnostic,
    ParamFact,
    Request,
    RequestError,
    Sources,
    _error,
    _options,
    _string_list,
    collect_diagnostics,
    param_fact,
)

SCHEMA_VERSION = 1
EK = ast.ExpressionKind
StK = ast.StatementKind
Skip = ast.VisitAction.Skip
Advance = ast.VisitAction.Advance
REQUEST_KEYS = {'files', 'includeDirs', 'defines', 'undefines', 'testbench', 'tbTop', 'dutTop'}
MAX_VIOLATIONS = 50
# Increments and decrements write their operand.
STEP_OPS = {
    ast.UnaryOperator.Preincrement,
    ast.UnaryOperator.Predecrement,
    ast.UnaryOperator.Postincrement,
    ast.UnaryOperator.Postdecrement,
}
# System functions whose first argument is an inout seed.
SEED_CALLS = {
    '$random',
    '$urandom',
    '$dist_uniform',
    '$dist_normal',
    '$dist_exponential',
    '$dist_poisson',
    '$dist_chi_square',
    '$dist_t',
    '$dist_erlang',
}
# Port directions through which a connection writes the connected expression.
WRITING_DIRECTIONS = {'Out', 'InOut', 'Ref'}


class Violation(TypedDict):
    kind: str
    target: str
    file: str | None
    line: int | None
    column: int | None


class DutInstance(TypedDict):
    path: str
    params: list[dict]
    file: str | None
    line: int | None
    column: int | None


@dataclass(frozen=True)
class IntegrityRequest:
    design: Request
    testbench: str
    tb_top: str
    dut_top: str


def parse_request(obj: Any) -> IntegrityRequest:
    if not isinstance(obj, dict):
        raise RequestError('a request is a JSON object')
    unknown = sorted(set(obj) - REQUEST_KEYS)
    if unknown:
        raise RequestError(f'unknown key(s): {", ".join(unknown)}')
    names = {}
    for key in ('testbench', 'tbTop', 'dutTop'):
        value = obj.get(key)
        if not isinstance(value, str) or not value:
            raise RequestError(f"'{key}' must be a non-empty string")
        names[key] = value
    design = Request(
        _string_list(obj, 'files'),
        _string_list(obj, 'includeDirs'),
        _string_list(obj, 'defines'),
        _string_list(obj, 'undefines'),
        [],
        names['tbTop'],
    )
    return IntegrityRequest(design, names['testbench'], names['tbTop'], names['dutTop'])


class Ownership:
    """Which code is the testbench's: text whose file is the testbench or one it included."""

    def __init__(self, sm: pyslang.SourceManager, tb_buffer: Any):
        self.sm = sm
        self.tb = tb_buffer.id.id
        self._root: dict[int, int] = {}

    def _root_of(self, buffer: Any) -> int:
        """The buffer's outermost includer (slang BufferIDs; an unincluded file is its own root)."""
        key = buffer.id
        if key not in self._root:
            self._root[key] = key
            inc = self.sm.getIncludedFrom(buffer)
            if inc != pyslang.SourceLocation.NoLocation and inc.buffer.id not in (0, key):
                self._root[key] = self._root_of(inc.buffer)
        return self._root[key]

    def is_testbench(self, loc: Any) -> bool:
        if loc is None or loc == pyslang.SourceLocation.NoLocation:
            return False
        loc = self.sm.getFullyExpandedLoc(loc)
        return self.sm.isFileLoc(loc) and self._root_of(loc.buffer) == self.tb


def lvalue_bases(expr: Any) -> list[Any]:
    """The value expressions an lvalue writes: selects and member accesses written through to their
    base, concatenations to their parts. An index (`mem[uut.ptr] = 1`) is read, not written."""
    kind = expr.kind
    if kind in (EK.NamedValue, EK.HierarchicalValue, EK.ArbitrarySymbol):
        return [expr]
    if kind in (EK.ElementSelect, EK.RangeSelect, EK.MemberAccess):
        return lvalue_bases(expr.value)
    if kind == EK.Conversion:
        return lvalue_bases(expr.operand)
    if kind in (EK.Concatenation, EK.Streaming):
        parts = expr.operands if kind == EK.Concatenation else [s.operand for s in expr.streams]
        return [b for p in parts for b in lvalue_bases(p)]
    # Anything else (an assignment pattern, a replication...): every name in it, to be safe.
    found: list[Any] = []

    def on(node: Any) -> Any:
        if isinstance(node, ast.Expression) and node.kind in (EK.NamedValue, EK.HierarchicalValue):
            found.append(node)
        return Advance

    expr.visit(on)
    return found


class Judge:
    def __init__(self, compilation: ast.Compilation, src: Sources, owner: Ownership, dut_top: str):
        self.compilation = compilation
        self.src = src
        self.owner = owner
        self.dut_top = dut_top
        self.design_instances: list[Any] = []
        self.testbench_instances: list[Any] = []
        self.violations: list[Violation] = []
        self._seen: set[tuple] = set()

    # -- what is the design's ------------------------------------------------------------------
    def is_design_definition(self, definition: Any) -> bool:
        return not self.owner.is_testbench(definition.location)

    def inside_design(self, symbol: Any) -> bool:
        """True for a symbol declared inside an instance of a design module, or in a design package."""
        scope = symbol.parentScope
        body = scope.containingInstance if scope is not None else None
        if body is None:
            # Not in any instance: a package's (or the compilation unit's) member.
            package, sep, _ = symbol.hierarchicalPath.partition('::')
            found = self.compilation.getPackage(package) if sep else None
            return found is not None and not self.owner.is_testbench(found.location)
        while body is not None:
            inst = body.parentInstance
            if inst is not None and inst.isModule and self.is_design_definition(body.definition):
                return True
            outer = inst.parentScope if inst is not None else None
            body = outer.containingInstance if outer is not None else None
        return False

    def add(self, kind: str, target: str, loc: Any) -> None:
        where = self.src.where(loc)
        key = (kind, target, where.file, where.line, where.column)
        if key in self._seen or len(self.violations) >= MAX_VIOLATIONS:
            return
        self._seen.add(key)
        self.violations.append(Violation(kind=kind, target=target, file=where.file, line=where.line, column=where.column))

    # -- the hierarchy ---------------------------------------------------------------------------
    def walk(self, top: Any) -> None:
        """Every instance of the testbench's side of the hierarchy; design instances are leaves."""
        pending = [top]
        while pending:
            inst = pending.pop(0)
            if inst.isModule and self.is_design_definition(inst.definition):
                self.design_instances.append(inst)
                continue
            self.testbench_instances.append(inst)
            for child in _instances_in(inst.body):
                pending.append(child)

    def judge_instances(self) -> None:
        duts = [i for i in self.design_instances if i.definition.name == self.dut_top]
        others = [i for i in self.design_instances if i.definition.name != self.dut_top]
        for inst in duts[1:]:
            self.add('instance', f'{inst.hierarchicalPath} ({inst.definition.name})', inst.location)
        for inst in others:
            self.add('instance', f'{inst.hierarchicalPath} ({inst.definition.name})', inst.location)

    def judge_connections(self, inst: Any) -> None:
        for conn in inst.portConnections:
            port = conn.port
            direction = getattr(port, 'direction', None)
            expr = conn.expression
            if expr is None or direction is None or direction.name not in WRITING_DIRECTIONS:
                continue
            # An output connection is bound as an assignment to the connected expression.
            target = expr.left if expr.kind == EK.Assignment else expr
            self.judge_lvalue(target, 'port')

    def judge_call(self, call: Any) -> None:
        """A call of the design's own task or function; a ref argument bound to a design signal (an
        output one is an assignment already); a seed argument ($random(seed) writes it)."""
        args = list(call.arguments)
        if call.isSystemCall:
            if call.subroutineName in SEED_CALLS and args:
                self.judge_lvalue(args[0], 'write')
            return
        sub = call.subroutine
        if sub is None:
            return
        if self.inside_design(sub):
            self.add('call', sub.hierarchicalPath, call.sourceRange.start)
        for formal, actual in zip(getattr(sub, 'arguments', []) or [], args, strict=False):
            if formal.direction == ast.ArgumentDirection.Ref and not _is_const_ref(formal):
                self.judge_lvalue(actual, 'write')

    def judge_lvalue(self, expr: Any, kind: str) -> None:
        for base in lvalue_bases(expr):
            symbol = base.symbol
            if symbol is not None and self.inside_design(symbol):
                self.add(kind, symbol.hierarchicalPath, base.sourceRange.start)

    # -- the testbench's code ----------------------------------------------------------------------
    def judge_body(self, inst: Any) -> None:
        def on(node: Any) -> Any:
            if isinstance(node, ast.Symbol):
                if node.kind in (SK.Instance, SK.InstanceArray) and node is not inst:
                    return Skip  # judged as an instance of its own, or a design leaf
                if node.kind == SK.DefParam:
                    target = node.target
                    if target is not None and self.inside_design(target):
                        self.add('defparam', target.hierarchicalPath, node.location)
                return Advance
            if isinstance(node, ast.Expression):
                if node.kind == EK.Assignment:
                    self.judge_lvalue(node.left, 'write')
                elif node.kind == EK.UnaryOp and node.op in STEP_OPS:
                    self.judge_lvalue(node.operand, 'write')
                elif node.kind == EK.Call:
                    self.judge_call(node)
                return Advance
            if isinstance(node, ast.Statement):
                if node.kind == StK.ProceduralAssign:
                    self.judge_lvalue(node.assignment.left, 'force' if node.isForce else 'assign')
                    return Skip
                if node.kind == StK.ProceduralDeassign:
                    self.judge_lvalue(node.lvalue, 'release' if node.isRelease else 'deassign')
                    return Skip
                if node.kind == StK.EventTrigger:
                    self.judge_lvalue(node.target, 'trigger')
                elif node.kind == StK.Disable:
                    self.judge_lvalue(node.target, 'disable')
            return Advance

        inst.body.visit(on)
        for child in _instances_in(inst.body):
            self.judge_connections(child)

    def judge_binds(self, tree: syntax.SyntaxTree) -> None:
        def on(node: Any) -> Any:
            if isinstance(node, syntax.SyntaxNode) and node.kind == syntax.SyntaxKind.BindDirective:
                if self.owner.is_testbench(node.sourceRange.start):
                    self.add('bind', str(node.target).strip(), node.sourceRange.start)

        tree.root.visit(on)


def _is_const_ref(formal: Any) -> bool:
    return 'Const' in str(formal.flags)


def _instances_in(scope: Any) -> list[Any]:
    """The instances a scope holds, through generate blocks and instance arrays."""
    out: list[Any] = []
    for member in scope:
        kind = member.kind
        if kind == SK.Instance:
            out.append(member)
        elif kind == SK.InstanceArray:
            out += [e for e in _flatten_array(member)]
        elif kind == SK.GenerateBlock:
            if not member.isUninstantiated:
                out += _instances_in(member)
        elif kind == SK.GenerateBlockArray:
            out += _instances_in(member)
    return out


def _flatten_array(array: Any) -> list[Any]:
    out: list[Any] = []
    for element in array.elements:
        if element.kind == SK.Instance:
            out.append(element)
        elif element.kind == SK.InstanceArray:
            out += _flatten_array(element)
    return out


def dut_params(inst: Any) -> list[dict]:
    out = []
    for param in inst.body.parameters:
        fact: ParamFact = param_fact(param)
        out.append({**fact, 'overridden': bool(getattr(param, 'isOverridden', False))})
    return out


# Statements that hold no other statement: an error inside one drops at most that statement.
SIMPLE_STATEMENTS = {
    syntax.SyntaxKind.ExpressionStatement,
    syntax.SyntaxKind.VoidCastedCallStatement,
    syntax.SyntaxKind.ProceduralAssignStatement,
    syntax.SyntaxKind.ProceduralForceStatement,
    syntax.SyntaxKind.ProceduralDeassignStatement,
    syntax.SyntaxKind.ProceduralReleaseStatement,
    syntax.SyntaxKind.BlockingEventTriggerStatement,
    syntax.SyntaxKind.NonblockingEventTriggerStatement,
    syntax.SyntaxKind.DisableStatement,
    syntax.SyntaxKind.ReturnStatement,
    syntax.SyntaxKind.DataDeclaration,
    syntax.SyntaxKind.ContinuousAssign,
    syntax.SyntaxKind.NetDeclaration,
}


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    simple: bool
    dotted: bool


def _expanded_offset(sm: Any, loc: Any, tb: int) -> int | None:
    loc = sm.getFullyExpandedLoc(loc)
    return loc.offset if sm.isFileLoc(loc) and loc.buffer.id == tb else None


def _has_dotted_name(node: Any) -> bool:
    found = False

    def on(item: Any) -> Any:
        nonlocal found
        if isinstance(item, syntax.SyntaxNode) and item.kind == syntax.SyntaxKind.ScopedName and str(item.separator).strip() == '.':
            found = True
        return None

    node.visit(on)
    return found


def unjudged_errors(tree: syntax.SyntaxTree, comp: ast.Compilation, sm: Any, tb: int, src: Sources) -> list[Diagnostic]:
    """The testbench's errors that may hide what it does to the design. slang drops code it cannot
    parse or bind, and Verilator may still build it: a parse error in the testbench always counts; a
    binding error counts when the statement it sits in names something through a dot (`uut.x`,
    `$root...`, a struct member: the check cannot tell them apart there)."""
    spans: list[Span] = []

    def on(node: Any) -> Any:
        if isinstance(node, syntax.SyntaxNode):
            kind = node.kind
            if kind in SIMPLE_STATEMENTS or kind.name.endswith('Statement'):
                start = _expanded_offset(sm, node.sourceRange.start, tb)
                end = _expanded_offset(sm, node.sourceRange.end, tb)
                if start is not None and end is not None:
                    spans.append(Span(start, end, kind in SIMPLE_STATEMENTS, _has_dotted_name(node)))
        return None

    tree.root.visit(on)
    parse = {(str(d.code), d.location.offset) for d in tree.diagnostics if d.isError()}
    out: list[Diagnostic] = []
    for d in comp.getAllDiagnostics():
        if not d.isError():
            continue
        at = _expanded_offset(sm, d.location, tb)
        if at is None:
            continue
        inside = [x for x in spans if x.start <= at <= x.end]
        simple = [x for x in inside if x.simple]
        nearest = min(simple or inside, key=lambda x: x.end - x.start, default=None)
        if (str(d.code), d.location.offset) in parse or nearest is None or nearest.dotted:
            where = src.where(d.location)
            message = pyslang.DiagnosticEngine(sm).formatMessage(d)
            out.append(Diagnostic(severity='error', message=message, file=where.file, line=where.line, column=where.column))
    return out[:5]


def dut_instance(inst: Any, src: Sources) -> DutInstance:
    where = src.where(inst.location)
    return DutInstance(path=inst.hierarchicalPath, params=dut_params(inst), file=where.file, line=where.line, column=where.column)


def respond(req: IntegrityRequest) -> dict:
    response: dict = {
        'version': SCHEMA_VERSION,
        'ok': False,
        'slang': pyslang.__version__,
        'diagnostics': [],
        'violations': [],
        'unjudged': [],
        'dutInstances': [],
    }
    missing = [f for f in [*req.design.files, req.testbench] if not os.path.isfile(f)]
    if missing:
        response['diagnostics'] = [_error(f"cannot read file '{f}'") for f in missing]
        return response
    sm = pyslang.SourceManager()
    options = _options(req.design, {req.tb_top})
    buffers = [sm.readSource(f) for f in req.design.files]
    tb_buffer = sm.readSource(req.testbench)
    tree = syntax.SyntaxTree.fromBuffers([*buffers, tb_buffer], sm, options)
    comp = ast.Compilation(options)
    comp.addSyntaxTree(tree)
    src = Sources(sm, [*req.design.files, req.testbench])
    tops = [t for t in comp.getRoot().topInstances if t.name == req.tb_top]
    errors = [d for d in collect_diagnostics(comp, src) if d['severity'] == 'error']
    response['diagnostics'] = errors[:20]
    if not tops:
        response['diagnostics'].append(_error(f"the testbench's top '{req.tb_top}' was not found"))
        return response
    judge = Judge(comp, src, Ownership(sm, tb_buffer), req.dut_top)
    judge.walk(tops[0])
    judge.judge_instances()
    for inst in judge.testbench_instances:
        judge.judge_body(inst)
    judge.judge_binds(tree)
    response['violations'] = judge.violations
    response['unjudged'] = unjudged_errors(tree, comp, sm, tb_buffer.id.id, src)
    response['dutInstances'] = [dut_instance(i, src) for i in judge.design_instances if i.definition.name == req.dut_top]
    response['ok'] = True
    return response


def answer(text: str) -> dict | None:
    """The response to one request's JSON text, or None (and a line on stderr) when it is malformed."""
    try:
        req = parse_request(json.loads(text))
    except (json.JSONDecodeError, RequestError) as exc:
        print(f'slang_integrity: malformed request: {exc}', file=sys.stderr)
        return None
    try:
        return respond(req)
    except Exception as exc:  # noqa: BLE001 - the caller gets a response whatever happens
        response = {'version': SCHEMA_VERSION, 'ok': False, 'slang': pyslang.__version__, 'violations': [], 'dutInstances': []}
        response['diagnostics'] = [_error(f'internal error: {type(exc).__name__}: {exc}')]
        return response


def main(argv: list[str]) -> int:
    """One request from a file, or from stdin one request per line (a group's testbenches in one
    process: the interpreter and pyslang load once), each answered by one line, in order."""
    if len(argv) != 1:
        print('usage: slang_integrity.py REQUEST.json | -', file=sys.stderr)
        return 2
    try:
        texts = [line for line in sys.stdin] if argv[0] == '-' else [open(argv[0], encoding='utf-8').read()]
    except OSError as exc:
        print(f'slang_integrity: malformed request: {exc}', file=sys.stderr)
        return 2
    texts = [t for t in texts if t.strip()]
    for text in texts:
        response = answer(text)
        if response is None:
            return 2
        sys.stdout.write(json.dumps(response) + '\n')
        sys.stdout.flush()
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
