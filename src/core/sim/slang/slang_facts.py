#!/usr/bin/env python3
"""Design facts from slang's elaborated tree: the Python half of CHORUS's slang design front end.

Why this file exists: before the engine writes a testbench it must know what the design MEANS:
which top ports are clocks and which are resets (polarity, synchronous or not), what each module's
ports and parameters are, which assertions the design carries and how they are built (clock,
disable iff, implication, delays, sampled-value functions), and which registers it loads from its
inputs under an input equal to a constant (what a bus writes at which address). Reading that from the source text
breaks on macros, includes, generate blocks, parameters and signals renamed through port
connections. slang (through pyslang) preprocesses, parses and elaborates the design as a compiler
does; this script walks its elaborated tree and prints the facts as JSON. No fact here comes from
matching patterns in the text: source text appears only as the `text` of a syntax node, for people
and prompts to read.

Usage:
  slang_facts.py REQUEST.json   one request, one JSON response on stdout
  slang_facts.py --serve        JSON requests one per line on stdin, one response line for each

Request:  {"files": [paths], "includeDirs": [..], "defines": ["N" | "N=V"], "undefines": ["N"],
           "params": ["P=V"], "top": "name" | null}
Response: version 1, the `Response` TypedDict below.
Exit status: 0 whenever a response was written, even for a design with errors (they are in
`diagnostics`, with ok:false); 2 for a malformed request, with a message on stderr.
It reads the files named and the files they include, and writes no file.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TypedDict

import pyslang
from pyslang import ast, parsing, syntax

SCHEMA_VERSION = 1
MAX_DIAGNOSTICS = 200
REQUEST_KEYS = {'files', 'includeDirs', 'defines', 'undefines', 'params', 'top'}

SK = ast.SymbolKind
EK = ast.ExpressionKind
AK = ast.AssertionExprKind
StK = ast.StatementKind
Skip = ast.VisitAction.Skip
Advance = ast.VisitAction.Advance


# ---------------------------------------------------------------------------------------------
# Response shapes
# ---------------------------------------------------------------------------------------------


class Diagnostic(TypedDict):
    severity: str
    message: str
    file: str | None
    line: int | None
    column: int | None


class EnumMember(TypedDict):
    name: str
    value: int


class PortFact(TypedDict):
    name: str
    direction: str
    width: int
    type: str
    enumMembers: list[EnumMember] | None
    packedStruct: bool


class ParamFact(TypedDict):
    name: str
    value: str | None
    local: bool
    type: bool


class InstanceFact(TypedDict):
    name: str
    module: str


class ModuleFact(TypedDict):
    name: str
    file: str | None
    line: int | None
    ports: list[PortFact]
    params: list[ParamFact]
    instances: list[InstanceFact]


class ClockFact(TypedDict):
    signal: str
    edge: str
    uses: int


ResetFact = TypedDict(
    'ResetFact',
    {
        'signal': str,
        'activeLow': bool,
        'async': bool,
        'uses': int,
        'evidence': str,
    },
)


class ClockRef(TypedDict):
    signal: str
    edge: str


class SignalRef(TypedDict):
    name: str
    top: str | None


class AssertionFact(TypedDict):
    kind: str
    action: str
    file: str | None
    line: int | None
    column: int | None
    module: str
    instance: str
    clock: ClockRef | None
    disableIff: str | None
    antecedent: str | None
    consequent: str
    implication: str | None
    delay: int
    usesPast: bool
    functions: list[str]
    signals: list[SignalRef]
    # The top inputs its signals can depend on (FanIn: through the design's logic, an
    # over-approximation), in port order.
    cone: list[str]
    # In an `initial` block outside any loop: checked once, at the start, not in every cycle.
    initial: bool
    text: str
    fromMacro: bool
    antecedentExpr: dict | None
    consequentExpr: dict | None


class LoadAt(TypedDict):
    port: str
    value: int


class LoadFact(TypedDict):
    """A register loaded from top inputs under a top input equal to a constant: `ADDR: r <= wdata;`
    in a case on an address, `if (addr == ADDR) r <= wdata[7:0];` (what a bus writes where)."""

    register: str
    module: str
    reads: list[str]
    at: list[LoadAt]
    file: str | None
    line: int | None


IncludeFact = TypedDict('IncludeFact', {'file': str, 'from': str | None, 'line': int | None})


class Response(TypedDict):
    version: int
    ok: bool
    slang: str
    diagnostics: list[Diagnostic]
    top: str | None
    topCandidates: list[str]
    modules: list[ModuleFact]
    clocks: list[ClockFact]
    resets: list[ResetFact]
    assertions: list[AssertionFact]
    loads: list[LoadFact]
    includes: list[IncludeFact]


# ---------------------------------------------------------------------------------------------
# Request
# ---------------------------------------------------------------------------------------------


class RequestError(ValueError):
    """The request is not of the documented form (exit status 2)."""


@dataclass(frozen=True)
class Request:
    files: list[str]
    include_dirs: list[str]
    defines: list[str]
    undefines: list[str]
    params: list[str]
    top: str | None


def _string_list(obj: dict, key: str, required: bool = False) -> list[str]:
    value = obj.get(key)
    if value is None:
        if required:
            raise RequestError(f"'{key}' is required")
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise RequestError(f"'{key}' must be a list of non-empty strings")
    return list(value)


def parse_request(obj: Any) -> Request:
    if not isinstance(obj, dict):
        raise RequestError('a request is a JSON object')
    unknown = sorted(set(obj) - REQUEST_KEYS)
    if unknown:
        raise RequestError(f'unknown key(s): {", ".join(unknown)}')
    files = _string_list(obj, 'files', required=True)
    if not files:
        raise RequestError("'files' is empty")
    top = obj.get('top')
    if top is not None and (not isinstance(top, str) or not top):
        raise RequestError("'top' must be a module name or null")
    return Request(
        files,
        _string_list(obj, 'includeDirs'),
        _string_list(obj, 'defines'),
        _string_list(obj, 'undefines'),
        _string_list(obj, 'params'),
        top,
    )


# ---------------------------------------------------------------------------------------------
# Source locations and text
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Where:
    file: str | None = None
    line: int | None = None
    column: int | None = None


class Sources:
    """Turns slang locations into file/line/column, naming request files as the caller did."""

    def __init__(self, sm: pyslang.SourceManager, request_files: Iterable[str]):
        self.sm = sm
        self._given = {os.path.realpath(f): f for f in request_files}
        self._paths: dict[int, str | None] = {}

    def path_of(self, buffer: Any) -> str | None:
        if buffer.id not in self._paths:
            full = str(self.sm.getFullPath(buffer))
            self._paths[buffer.id] = self._given.get(os.path.realpath(full), full) if full else None
        return self._paths[buffer.id]

    def where(self, loc: Any) -> Where:
        """The place a person wrote: for text from a macro, where the macro was used."""
        if loc is None or loc == pyslang.SourceLocation.NoLocation:
            return Where()
        loc = self.sm.getFullyExpandedLoc(loc)
        if not self.sm.isFileLoc(loc):
            return Where()
        return Where(self.path_of(loc.buffer), self.sm.getLineNumber(loc), self.sm.getColumnNumber(loc))

    def from_macro(self, loc: Any) -> bool:
        return loc is not None and self.sm.isMacroLoc(loc)


def syntax_text(node: Any) -> str:
    """A syntax node's tokens, one space wherever the source had whitespace or comments."""
    if node is None:
        return ''
    parts: list[str] = []

    def on(item: Any) -> None:
        if isinstance(item, parsing.Token) and not item.isMissing:
            if parts and item.trivia:
                parts.append(' ')
            parts.append(item.rawText)

    node.visit(on)
    return ''.join(parts)


def _start(node: Any) -> Any:
    return node.sourceRange.start if node is not None else None


# ---------------------------------------------------------------------------------------------
# Compilation and the top
# ---------------------------------------------------------------------------------------------


def _options(req: Request, tops: set[str]) -> pyslang.Bag:
    pp = parsing.PreprocessorOptions()
    pp.predefines = list(req.defines)
    pp.undefines = list(req.undefines)
    pp.additionalIncludePaths = list(req.include_dirs)
    co = ast.CompilationOptions()
    co.topModules = tops
    co.paramOverrides = list(req.params)
    # Each instance gets its own body, so signals trace through its own port connections.
    co.flags = ast.CompilationFlags.DisableInstanceCaching
    return pyslang.Bag([pp, co])


def _compile(tree: syntax.SyntaxTree, req: Request, tops: set[str]) -> ast.Compilation:
    comp = ast.Compilation(_options(req, tops))
    comp.addSyntaxTree(tree)
    return comp


@dataclass
class TopChoice:
    compilation: ast.Compilation
    candidates: list[str]
    instance: ast.InstanceSymbol | None = None
    error: str | None = None


def choose_top(tree: syntax.SyntaxTree, req: Request) -> TopChoice:
    """slang's own top candidates, then the named or the only one; an error names the others."""
    auto = _compile(tree, req, set())
    tops = list(auto.getRoot().topInstances)
    names = [t.name for t in tops]
    if req.top is None:
        if len(tops) == 1:
            return TopChoice(auto, names, tops[0])
        if not tops:
            return TopChoice(auto, names, error='no top module candidate found')
        return TopChoice(auto, names, error=f'several top candidates: {", ".join(names)}; name one with --top')
    if names == [req.top]:
        return TopChoice(auto, names, tops[0])
    named = _compile(tree, req, {req.top})
    found = [t for t in named.getRoot().topInstances if t.name == req.top]
    if found:
        return TopChoice(named, names, found[0])
    listed = ', '.join(names) if names else 'none'
    return TopChoice(auto, names, error=f"top module '{req.top}' not found; candidates: {listed}")


def collect_diagnostics(comp: ast.Compilation, src: Sources) -> list[Diagnostic]:
    engine = pyslang.DiagnosticEngine(src.sm)
    severities = {
        pyslang.DiagnosticSeverity.Error: 'error',
        pyslang.DiagnosticSeverity.Fatal: 'error',
        pyslang.DiagnosticSeverity.Warning: 'warning',
    }
    out: list[Diagnostic] = []
    seen: set[tuple] = set()
    for diag in comp.getAllDiagnostics():
        severity = severities.get(engine.getSeverity(diag.code, diag.location))
        if severity is None:
            continue
        where = src.where(diag.location)
        item = Diagnostic(severity=severity, message=engine.formatMessage(diag), file=where.file, line=where.line, column=where.column)
        key = tuple(item.values())
        if key not in seen and len(out) < MAX_DIAGNOSTICS:
            seen.add(key)
            out.append(item)
    return out


def _error(message: str, where: Where = Where()) -> Diagnostic:
    return Diagnostic(severity='error', message=message, file=where.file, line=where.line, column=where.column)


# ---------------------------------------------------------------------------------------------
# The instance hierarchy
# ---------------------------------------------------------------------------------------------


@dataclass
class Inst:
    """One instance of the elaborated hierarchy and what its body holds (generate blocks too)."""

    symbol: ast.InstanceSymbol
    parent: Inst | None
    procedures: list[Any] = field(default_factory=list)
    subroutines: list[Any] = field(default_factory=list)
    children: list[ast.InstanceSymbol] = field(default_factory=list)
    default_clocking: Any = None
    # A net or variable driven whole by one continuous assignment (or a net's initializer): its
    # driver expression, by the signal's key.
    drivers: dict[str, Any] = field(default_factory=dict)
    # A signal driven in constant parts by several continuous assignments (`assign v[0] = a;
    # assign v[1] = b;`): (lowest bit, width, driver) of each, by the signal's key.
    parts: dict[str, list[tuple[int, int, Any]]] = field(default_factory=dict)
    # Every continuous assignment (and net initializer) as (the signals it drives, its right side):
    # what FanIn follows.
    assigns: list[tuple[list[Any], Any]] = field(default_factory=list)

    @property
    def path(self) -> str:
        return self.symbol.hierarchicalPath

    @property
    def module(self) -> str:
        return self.symbol.definition.name

    @property
    def body(self) -> Any:
        return self.symbol.body


def _is_default_clocking(block: Any) -> bool:
    stx = block.syntax
    return stx is not None and stx.globalOrDefault.kind == parsing.TokenKind.DefaultKeyword


def _scan_scope(scope: Any, inst: Inst) -> None:
    for member in scope:
        kind = member.kind
        if kind == SK.Instance:
            inst.children.append(member)
        elif kind == SK.InstanceArray:
            _scan_array(member, inst)
        elif kind == SK.GenerateBlock:
            if not member.isUninstantiated:
                _scan_scope(member, inst)
        elif kind == SK.GenerateBlockArray:
            _scan_scope(member, inst)
        elif kind == SK.ProceduralBlock:
            inst.procedures.append(member)
        elif kind == SK.Subroutine:
            inst.subroutines.append(member)
        elif kind == SK.ClockingBlock and inst.default_clocking is None:
            if _is_default_clocking(member):
                inst.default_clocking = member
        elif kind == SK.ContinuousAssign and member.assignment.kind == EK.Assignment:
            left = member.assignment.left
            inst.assigns.append((_targets(left), member.assignment.right))
            if left.kind == EK.NamedValue:
                _add_driver(inst, _key(left.symbol), member.assignment.right)
            elif left.kind in (EK.ElementSelect, EK.RangeSelect, EK.MemberAccess):
                piece = flat_bits(left)
                if piece is not None:
                    symbol, lo, width = piece
                    inst.parts.setdefault(_key(symbol), []).append((lo, width, member.assignment.right))
        elif kind == SK.Net and member.initializer is not None:  # wire x = expr;
            _add_driver(inst, _key(member), member.initializer)
            inst.assigns.append(([member], member.initializer))


def _add_driver(inst: Inst, key: str, driver: Any) -> None:
    # Two drivers of one signal (a multiply-driven net): neither is its value.
    inst.drivers[key] = None if key in inst.drivers else driver


def _scan_array(array: Any, inst: Inst) -> None:
    for element in array.elements:
        if element.kind == SK.Instance:
            inst.children.append(element)
        elif element.kind == SK.InstanceArray:
            _scan_array(element, inst)


def walk_hierarchy(top: ast.InstanceSymbol) -> list[Inst]:
    """Every module instance under top, depth first, top first."""
    out: list[Inst] = []

    def visit(symbol: ast.InstanceSymbol, parent: Inst | None) -> None:
        inst = Inst(symbol, parent)
        _scan_scope(symbol.body, inst)
        out.append(inst)
        for child in inst.children:
            if child.isModule:
                visit(child, inst)

    visit(top, None)
    return out


def _key(symbol: Any) -> str:
    return symbol.hierarchicalPath


def strip_conversions(expr: Any) -> Any:
    while expr is not None and expr.kind == EK.Conversion:
        expr = expr.operand
    return expr


def base_symbol(expr: Any) -> Any:
    """The signal an expression names, through selects, member accesses and conversions."""
    while expr is not None:
        kind = expr.kind
        if kind == EK.NamedValue:
            return expr.symbol
        if kind in (EK.ElementSelect, EK.RangeSelect, EK.MemberAccess):
            expr = expr.value
        elif kind == EK.Conversion:
            expr = expr.operand
        elif kind == EK.Assignment:  # an output port's connection: actual = port
            expr = expr.left
        else:
            return None
    return None


class PortTracer:
    """Maps a signal of an instance to the top port it is wired from, when the wiring is direct."""

    def __init__(self, instances: list[Inst]):
        self._ports: dict[str, dict[str, Any]] = {}
        for inst in instances:
            table: dict[str, Any] = {}
            for port in inst.body.portList:
                if port.kind == SK.Port and port.internalSymbol is not None:
                    table[_key(port.internalSymbol)] = port
            self._ports[inst.path] = table

    def top_port(self, symbol: Any, inst: Inst) -> Any:
        while symbol is not None:
            port = self._ports.get(inst.path, {}).get(_key(symbol))
            if port is None:
                return None
            if inst.parent is None:
                return port
            conn = inst.symbol.getPortConnection(port)
            symbol = base_symbol(conn.expression) if conn is not None else None
            inst = inst.parent
        return None

    def top_slice(self, symbol: Any, inst: Inst) -> tuple[Any, int, int] | None:
        """The top port a signal of an instance is, and which of its bits (lowest, width), when
        every connection on the way up is a signal or a constant part of one (`.v(bus[3])`)."""
        typ = symbol.type if symbol.kind in SIGNAL_SYMBOLS else None
        if typ is None or not typ.isIntegral:
            return None
        lo, width = 0, int(typ.bitWidth)
        while True:
            port = self._ports.get(inst.path, {}).get(_key(symbol))
            if port is None:
                return None
            if inst.parent is None:
                return port, lo, width
            conn = inst.symbol.getPortConnection(port)
            piece = flat_bits(conn.expression) if conn is not None else None
            if piece is None or piece[2] != int(port.type.bitWidth):
                return None
            symbol, outer, _ = piece
            lo += outer
            inst = inst.parent

    def top_name(self, symbol: Any, inst: Inst) -> str | None:
        port = self.top_port(symbol, inst)
        return port.name if port is not None else None

    def top_input(self, symbol: Any, inst: Inst) -> str | None:
        port = self.top_port(symbol, inst)
        if port is None or port.direction != ast.ArgumentDirection.In:
            return None
        return port.name


class FanIn:
    """Which top inputs a signal's value can depend on, over the whole hierarchy: through
    continuous assignments, the procedural blocks that write it, and port connections both ways.
    A block's every write is taken to depend on everything the block reads (its conditions
    included): more inputs than the exact cone, which is what a last resort that holds a
    property's inputs needs when the property names none. Not followed: module variables a task
    writes, hierarchical references and interface ports (what they carry is missed)."""

    def __init__(self, instances: list[Inst]):
        self._reads: dict[str, set[str]] = {}
        self._inputs: dict[str, str] = {}
        top = instances[0]
        for port in top.body.portList:
            if port.kind == SK.Port and port.internalSymbol is not None and port.direction == ast.ArgumentDirection.In:
                self._inputs[_key(port.internalSymbol)] = port.name
        for inst in instances:
            for targets, right in inst.assigns:
                self._add(targets, _signals_of(right))
            for proc in inst.procedures:
                written, read = _block_signals(proc.body)
                self._add(written, read)
            for child in inst.children:
                self._connect(child)

    def _add(self, targets: list[Any], sources: list[Any]) -> None:
        keys = {_key(x) for x in sources}
        for t in targets:
            self._reads.setdefault(_key(t), set()).update(keys)

    def _connect(self, child: ast.InstanceSymbol) -> None:
        for port in child.body.portList:
            if port.kind != SK.Port or port.internalSymbol is None:
                continue
            conn = child.getPortConnection(port)
            expr = conn.expression if conn is not None else None
            if expr is None:
                continue
            if port.direction == ast.ArgumentDirection.In:
                self._add([port.internalSymbol], _signals_of(expr))
            elif port.direction == ast.ArgumentDirection.Out:
                outer = base_symbol(expr)
                if outer is not None:
                    self._add([outer], [port.internalSymbol])
            else:
                self._add([port.internalSymbol], _signals_of(expr))
                outer = base_symbol(expr)
                if outer is not None:
                    self._add([outer], [port.internalSymbol])

    def inputs_of(self, symbols: list[Any]) -> list[str]:
        """The top inputs the signals can depend on, in port order."""
        seen: set[str] = set()
        todo = [_key(x) for x in symbols]
        while todo:
            key = todo.pop()
            if key in seen:
                continue
            seen.add(key)
            todo += [k for k in self._reads.get(key, ()) if k not in seen]
        found = {self._inputs[k] for k in seen if k in self._inputs}
        return [name for name in self._inputs.values() if name in found]


def _targets(left: Any) -> list[Any]:
    """The signals an assignment's left side writes: its base signal, or each of a concatenation's."""
    left = strip_conversions(left)
    if left is not None and left.kind == EK.Concatenation:
        return [t for operand in left.operands for t in _targets(operand)]
    target = base_symbol(left)
    return [target] if target is not None and target.kind in SIGNAL_SYMBOLS else []


def _signals_of(expr: Any) -> list[Any]:
    """The signals an expression reads."""
    refs = References()
    expr.visit(refs)
    return list(refs.symbols.values())


def _block_signals(body: Any) -> tuple[list[Any], list[Any]]:
    """What a procedural block writes (the base signal of each assignment's left side) and
    everything it reads."""
    written: dict[str, Any] = {}
    refs = References()

    def on(node: Any) -> Any:
        if isinstance(node, ast.AssignmentExpression):
            for target in _targets(node.left):
                written.setdefault(_key(target), target)
        return refs(node)

    body.visit(on)
    return list(written.values()), list(refs.symbols.values())


# ---------------------------------------------------------------------------------------------
# Modules
# ---------------------------------------------------------------------------------------------

DIRECTIONS = {
    ast.ArgumentDirection.In: 'input',
    ast.ArgumentDirection.Out: 'output',
    ast.ArgumentDirection.InOut: 'inout',
    ast.ArgumentDirection.Ref: 'ref',
}


def _enum_members(canonical: Any) -> list[EnumMember]:
    members: list[EnumMember] = []
    for value in canonical:
        if value.kind != SK.EnumValue:
            continue
        raw = value.value.value
        if isinstance(raw, pyslang.SVInt) and not raw.hasUnknown:
            members.append(EnumMember(name=value.name, value=int(raw)))
    return members


def type_name(typ: Any) -> str:
    """The type as a testbench can write it: a name declared inside the module (a type
    parameter, a local typedef) cannot be named outside it, so it is spelled out."""
    scope = typ.parentScope if typ.isAlias else None
    if scope is not None and scope.containingInstance is not None:
        return str(typ.canonicalType)
    return str(typ)


def value_text(value: Any) -> str | None:
    """A parameter's value: integers in decimal, anything else as slang prints it."""
    if value is None:
        return None
    raw = value.value
    if isinstance(raw, pyslang.SVInt) and not raw.hasUnknown:
        return raw.toString(pyslang.LiteralBase.Decimal, False)
    return str(value)


def port_fact(port: Any) -> PortFact:
    typ = port.type
    canonical = typ.canonicalType
    is_enum = canonical.kind == SK.EnumType
    return PortFact(
        name=port.name,
        direction=DIRECTIONS.get(port.direction, 'inout'),
        width=typ.bitWidth or typ.bitstreamWidth,
        type=type_name(typ),
        enumMembers=_enum_members(canonical) if is_enum else None,
        packedStruct=canonical.kind == SK.PackedStructType,
    )


def param_fact(param: Any) -> ParamFact:
    if param.kind == SK.TypeParameter:
        target = param.targetType
        value = type_name(target.type) if target is not None and target.type is not None else None
        return ParamFact(name=param.name, value=value, local=param.isLocalParam, type=True)
    return ParamFact(name=param.name, value=value_text(param.value), local=param.isLocalParam, type=False)


def module_fact(inst: Inst, src: Sources) -> ModuleFact:
    body = inst.body
    where = src.where(inst.symbol.definition.location)
    prefix = inst.path + '.'
    return ModuleFact(
        name=inst.module,
        file=where.file,
        line=where.line,
        ports=[port_fact(p) for p in body.portList if p.kind == SK.Port],
        params=[param_fact(m) for m in body if m.kind in (SK.Parameter, SK.TypeParameter)],
        instances=[InstanceFact(name=c.hierarchicalPath.removeprefix(prefix), module=c.definition.name) for c in inst.children],
    )


def module_facts(instances: list[Inst], src: Sources) -> list[ModuleFact]:
    seen: set[str] = set()
    out: list[ModuleFact] = []
    for inst in instances:
        if inst.module not in seen:
            seen.add(inst.module)
            out.append(module_fact(inst, src))
    return out


# ---------------------------------------------------------------------------------------------
# Edge-sensitive blocks: clocks and resets
# ---------------------------------------------------------------------------------------------

EDGES = {ast.EdgeKind.PosEdge: 'pos', ast.EdgeKind.NegEdge: 'neg'}
CONSTANT_SYMBOLS = {SK.Parameter, SK.EnumValue, SK.Specparam, SK.Genvar}
SIGNAL_SYMBOLS = {SK.Net, SK.Variable}


@dataclass
class EdgeEvent:
    symbol: Any
    edge: str


@dataclass
class EdgeBlock:
    """An always/always_ff whose statement is timed by posedge/negedge events."""

    inst: Inst
    keyword: str
    timed: Any
    events: list[EdgeEvent]


@dataclass
class ResetUse:
    symbol: Any
    inst: Inst
    active_low: bool
    is_async: bool
    evidence: str
    procedural: bool


def signal_events(timing: Any) -> list[EdgeEvent]:
    if timing is None:
        return []
    if timing.kind == ast.TimingControlKind.EventList:
        return [e for t in timing.events for e in signal_events(t)]
    if timing.kind != ast.TimingControlKind.SignalEvent or timing.edge not in EDGES:
        return []
    symbol = base_symbol(timing.expr)
    return [EdgeEvent(symbol, EDGES[timing.edge])] if symbol is not None else []


def edge_block(proc: Any, inst: Inst) -> EdgeBlock | None:
    kind = proc.procedureKind
    if kind not in (ast.ProceduralBlockKind.Always, ast.ProceduralBlockKind.AlwaysFF):
        return None
    stmt = proc.body
    if stmt is None or stmt.kind != StK.Timed:
        return None
    events = signal_events(stmt.timing)
    if not events:
        return None
    keyword = 'always_ff' if kind == ast.ProceduralBlockKind.AlwaysFF else 'always'
    return EdgeBlock(inst, keyword, stmt, events)


def first_if(stmt: Any) -> Any:
    """The outermost if of a block body: through begin/end, the first real statement."""
    while stmt is not None:
        kind = stmt.kind
        if kind == StK.Conditional:
            return stmt
        if kind == StK.Block:
            stmt = stmt.body
        elif kind == StK.List:
            real = [s for s in stmt.list if s.kind not in (StK.Empty, StK.VariableDeclaration)]
            stmt = real[0] if real else None
        else:
            return None
    return None


def one_bit_signal(expr: Any) -> Any:
    expr = strip_conversions(expr)
    if expr is None or expr.type is None or expr.type.bitWidth != 1:
        return None
    symbol = base_symbol(expr)
    return symbol if symbol is not None and symbol.kind in SIGNAL_SYMBOLS else None


def small_constant(expr: Any) -> int | None:
    """0 or 1 for a constant of that value, folded or not (an assertion's `'0` is not folded)."""
    expr = strip_conversions(expr)
    if expr is None:
        return None
    if expr.kind == EK.UnbasedUnsizedIntegerLiteral:
        bit = str(expr.literalValue)
        return int(bit) if bit in ('0', '1') else None
    value = _constant_value(expr)
    number = _int_value(value) if value is not None else None
    return number if number in (0, 1) else None


def reset_test(expr: Any) -> tuple[Any, bool] | None:
    """(signal, active low) for `x`, `!x`, `~x`, `x == 0/1`, `x != 0/1`; None otherwise."""
    expr = strip_conversions(expr)
    if expr is None:
        return None
    if expr.kind == EK.UnaryOp and expr.op in (ast.UnaryOperator.LogicalNot, ast.UnaryOperator.BitwiseNot):
        symbol = one_bit_signal(expr.operand)
        return (symbol, True) if symbol is not None else None
    if expr.kind == EK.BinaryOp:
        return _compare_test(expr)
    symbol = one_bit_signal(expr)
    return (symbol, False) if symbol is not None else None


def _or_reset_test(expr: Any) -> tuple[Any, bool] | None:
    """The first operand of a top-level `||` that is a reset test, for `if (reset || ...)`."""
    expr = strip_conversions(expr)
    if expr is None or expr.kind != EK.BinaryOp or expr.op != ast.BinaryOperator.LogicalOr:
        return None
    return reset_test(expr.left) or _or_reset_test(expr.left) or reset_test(expr.right)


def _compare_test(expr: Any) -> tuple[Any, bool] | None:
    B = ast.BinaryOperator
    equal = expr.op in (B.Equality, B.CaseEquality)
    if not equal and expr.op not in (B.Inequality, B.CaseInequality):
        return None
    for side, other in ((expr.left, expr.right), (expr.right, expr.left)):
        value = small_constant(other)
        if value is None:
            continue
        # `x == 0`, and a test compared again: OpenTitan's `disable iff ((!rst_ni) !== '0)`.
        symbol = one_bit_signal(side)
        inner = (symbol, False) if symbol is not None else reset_test(side)
        if inner is not None:
            return inner[0], inner[1] != ((value == 0) == equal)
    return None


def assigns_only_constants(stmt: Any) -> bool:
    """Whether every assignment under stmt stores a constant (a reset value, not data)."""
    constant = True

    def on_rhs(node: Any) -> Any:
        nonlocal constant
        if isinstance(node, ast.NamedValueExpression) and node.symbol.kind not in CONSTANT_SYMBOLS:
            constant = False
        elif isinstance(node, ast.HierarchicalValueExpression):
            constant = False
        elif isinstance(node, ast.CallExpression) and not node.isSystemCall:
            constant = False
        return ast.VisitAction.Interrupt if not constant else Advance

    def on(node: Any) -> Any:
        if isinstance(node, ast.ForLoopStatement):
            # The loop's own counter (`i = i + 1`) is not data: only its body's stores count.
            node.body.visit(on)
            return Skip
        if isinstance(node, ast.AssignmentExpression):
            node.right.visit(on_rhs)
            return Skip if constant else ast.VisitAction.Interrupt
        return Advance

    if stmt is not None:
        stmt.visit(on)
    return constant


def last_if(stmt: Any) -> Any:
    """The last statement of a block body when it is an if without else: `if (reset) q <= 0;`
    written after the block's other assignments overrides them, as a synchronous reset does."""
    while stmt is not None and stmt.kind == StK.Block:
        stmt = stmt.body
    if stmt is None or stmt.kind != StK.List:
        return None
    real = [s for s in stmt.list if s.kind not in (StK.Empty, StK.VariableDeclaration)]
    last = real[-1] if len(real) > 1 else None
    if last is None or last.kind != StK.Conditional or last.ifFalse is not None or len(last.conditions) != 1:
        return None
    return last


def reset_use(block: EdgeBlock) -> ResetUse | None:
    use = _reset_use_at(block, first_if(block.timed.stmt), last=False)
    return use or _reset_use_at(block, last_if(block.timed.stmt), last=True)


def _reset_use_at(block: EdgeBlock, cond_stmt: Any, last: bool) -> ResetUse | None:
    if cond_stmt is None or len(cond_stmt.conditions) != 1:
        return None
    condition = cond_stmt.conditions[0]
    test = reset_test(condition.expr) if condition.pattern is None else None
    if test is None and condition.pattern is None:
        test = _or_reset_test(condition.expr)  # `if (reset || wrap) q <= 0;`: a sync reset or'ed in
    if test is None:
        return None
    symbol, active_low = test
    edge = next((e for e in block.events if _key(e.symbol) == _key(symbol)), None)
    if edge is not None and (edge.edge == 'neg') != active_low:
        return None
    # An edge of the block tested first, with the polarity of its edge, is an asynchronous reset
    # whatever its branch does; without an edge, only a branch that stores constants (and has an
    # else) tells a synchronous reset from an enable.
    if edge is None and cond_stmt.ifFalse is None and not last:
        return None  # a lone `if (x)` first in a clocked block is an enable
    if edge is None and not assigns_only_constants(cond_stmt.ifTrue):
        return None
    mode = 'async' if edge is not None else 'sync'
    evidence = (
        f'{block.keyword} {syntax_text(block.timed.timing.syntax)} '
        f'if ({syntax_text(condition.expr.syntax)}) in {block.inst.module} ({mode})'
    )
    return ResetUse(symbol, block.inst, active_low, edge is not None, evidence, True)


def disable_reset_use(condition: Any, inst: Inst, text: str) -> ResetUse | None:
    test = reset_test(condition)
    if test is None:
        return None
    symbol, active_low = test
    return ResetUse(symbol, inst, active_low, False, f'disable iff ({text}) in {inst.module}', False)


def _majority_active_low(group: list[ResetUse]) -> bool:
    low = sum(1 for u in group if u.active_low)
    high = len(group) - low
    return group[0].active_low if low == high else low > high


def reset_facts(uses: list[ResetUse], tracer: PortTracer) -> list[ResetFact]:
    """One fact per top input used as a reset, its uses combined across the hierarchy."""
    grouped: dict[str, list[ResetUse]] = {}
    for use in uses:
        name = tracer.top_input(use.symbol, use.inst)
        if name is not None:
            grouped.setdefault(name, []).append(use)
    out: list[ResetFact] = []
    for name, group in grouped.items():
        first = next((u for u in group if u.procedural), group[0])
        out.append(
            {
                'signal': name,
                'activeLow': _majority_active_low(group),
                'async': any(u.is_async for u in group),
                'uses': len(group),
                'evidence': first.evidence,
            }
        )
    out.sort(key=lambda r: -r['uses'])
    return out


@dataclass
class ClockUse:
    symbol: Any
    inst: Inst
    edge: str


def block_clock_uses(block: EdgeBlock, reset: ResetUse | None) -> list[ClockUse]:
    reset_key = _key(reset.symbol) if reset is not None and reset.is_async else None
    seen: set[str] = set()
    out: list[ClockUse] = []
    for event in block.events:
        key = _key(event.symbol)
        if key != reset_key and key not in seen:
            seen.add(key)
            out.append(ClockUse(event.symbol, block.inst, event.edge))
    return out


def clock_facts(uses: list[ClockUse], resets: set[str], tracer: PortTracer) -> list[ClockFact]:
    counts: dict[str, Counter] = {}
    for use in uses:
        name = tracer.top_input(use.symbol, use.inst)
        if name is not None and name not in resets:
            counts.setdefault(name, Counter())[use.edge] += 1
    out = [ClockFact(signal=name, edge='neg' if c['neg'] > c['pos'] else 'pos', uses=sum(c.values())) for name, c in counts.items()]
    out.sort(key=lambda c: -c['uses'])
    return out


# ---------------------------------------------------------------------------------------------
# Assertions
# ---------------------------------------------------------------------------------------------

ACTIONS = {
    ast.AssertionKind.Assert: 'assert',
    ast.AssertionKind.Assume: 'assume',
    ast.AssertionKind.CoverProperty: 'cover',
    ast.AssertionKind.CoverSequence: 'cover',
}
IMPLICATIONS = {
    ast.BinaryAssertionOperator.OverlappedImplication: ('|->', 0),
    ast.BinaryAssertionOperator.NonOverlappedImplication: ('|=>', 1),
}


@dataclass
class AssertionSite:
    inst: Inst
    stmt: Any
    block: EdgeBlock | None
    block_reset: ResetUse | None
    # The procedural `if` conditions the assertion sits under (condition, taken branch), outermost
    # first: they are its antecedent. `guard_unknown`: it sits under a condition not modelled here
    # (a case item, a loop ...), so no antecedent can be written for it.
    guards: tuple = ()
    guard_unknown: bool = False
    # The values of the procedural loop variables at this unrolled iteration, by symbol key.
    env: tuple = ()
    # In an `initial` block, outside any loop: checked once, at the start.
    once: bool = False


@dataclass(frozen=True)
class CaseGuard:
    """The condition a case item sits under: the selector equals one of `values` (constant
    expressions, in item order, each value once). As a guard taken False: none of them (the
    default item)."""

    selector: Any
    values: tuple


ERROR_TASKS = ('$error', '$fatal')


def is_error_call(stmt: Any) -> bool:
    """`$error(...)` / `$fatal(...)` as a procedural statement: the design says the inputs that
    reach it are illegal (`if (pop && empty) $error(...)`, `default: $fatal(...)`)."""
    expr = stmt.expr
    return expr.kind == EK.Call and expr.isSystemCall and expr.subroutineName in ERROR_TASKS


def is_assignment(stmt: Any) -> bool:
    return stmt.kind == StK.ExpressionStatement and stmt.expr.kind == EK.Assignment


def _port_equals(cond: Any, tracer: PortTracer, inst: Inst) -> list[LoadAt]:
    """`port == K` terms of a condition (through `&&`), `port` a top input."""
    cond = strip_conversions(cond)
    if cond.kind == EK.BinaryOp and cond.op in (ast.BinaryOperator.LogicalAnd, ast.BinaryOperator.BinaryAnd):
        return _port_equals(cond.left, tracer, inst) + _port_equals(cond.right, tracer, inst)
    if cond.kind != EK.BinaryOp or cond.op not in (ast.BinaryOperator.Equality, ast.BinaryOperator.CaseEquality):
        return []
    for a, b in ((cond.left, cond.right), (cond.right, cond.left)):
        a = strip_conversions(a)
        value = _constant_value(b)
        number = _int_value(value) if value is not None else None
        if a.kind == EK.NamedValue and number is not None and (port := tracer.top_input(a.symbol, inst)) is not None:
            return [LoadAt(port=port, value=number)]
    return []


def load_fact(site: AssertionSite, tracer: PortTracer, src: Sources) -> LoadFact | None:
    """The register an assignment loads, when it reads top inputs under a top input equal to a
    constant (a case item on it, or an `if` comparison); None otherwise."""
    left = site.stmt.expr.left
    while left.kind in (EK.ElementSelect, EK.RangeSelect, EK.MemberAccess):
        left = left.value
    if left.kind != EK.NamedValue:
        return None
    reads = sorted({p for sym in _signals_of(site.stmt.expr.right) if (p := tracer.top_input(sym, site.inst)) is not None})
    at: list[LoadAt] = []
    for cond, taken in site.guards:
        if not taken:
            continue
        if isinstance(cond, CaseGuard):
            sel = strip_conversions(cond.selector)
            port = tracer.top_input(sel.symbol, site.inst) if sel.kind == EK.NamedValue else None
            for v in cond.values if port is not None else ():
                number = _int_value(_constant_value(v))
                if number is not None:
                    at.append(LoadAt(port=port, value=number))
        else:
            at += _port_equals(cond, tracer, site.inst)
    if not reads or not at:
        return None
    where = src.where(_start(site.stmt))
    return LoadFact(register=left.symbol.name, module=site.inst.module, reads=reads, at=at, file=where.file, line=where.line)


def case_values(stmt: Any) -> list[tuple] | None:
    """Each item's constant values, a value already taken by an earlier item dropped (the first
    match wins); None for a wildcard or `case inside`, or an item that is not a constant (a reverse
    `case (1'b1)`)."""
    if stmt.condition != ast.CaseStatementCondition.Normal:
        return None
    seen: set[int] = set()
    out: list[tuple] = []
    for item in stmt.items:
        kept = []
        for e in item.expressions:
            value = _constant_value(e)
            number = _int_value(value) if value is not None else None
            if number is None:
                return None
            if number not in seen:
                seen.add(number)
                kept.append(e)
        out.append(tuple(kept))
    return out


@dataclass
class PropertyShape:
    """A concurrent property with its instances resolved and clock / disable iff peeled off."""

    text_node: Any
    clock: Any
    disable: Any
    body: Any


def peel_property(expr: Any) -> PropertyShape:
    text_node, clock, disable = expr.syntax, None, None
    while True:
        if expr.kind == AK.Simple and expr.repetition is None and expr.expr.kind == EK.AssertionInstance:
            expr = expr.expr.body
            text_node = expr.syntax
        elif expr.kind == AK.Clocking:
            clock = clock or expr.clocking
            expr = expr.expr
        elif expr.kind == AK.DisableIff:
            disable = disable or expr.condition
            expr = expr.expr
        else:
            break
    if text_node is not None and text_node.kind == syntax.SyntaxKind.DisableIff:
        text_node = text_node.parent
    return PropertyShape(text_node, clock, disable, expr)


def leading_delay(expr: Any) -> int:
    """Cycles before a sequence starts: the ##N in front of its first element."""
    while expr.kind == AK.Simple and expr.repetition is None and expr.expr.kind == EK.AssertionInstance:
        expr = expr.expr.body
    if expr.kind == AK.SequenceConcat and expr.elements:
        return int(expr.elements[0].delay.min)
    return 0


@dataclass
class References:
    symbols: dict[str, Any] = field(default_factory=dict)
    functions: list[str] = field(default_factory=list)

    def __call__(self, node: Any) -> Any:
        if isinstance(node, ast.NamedValueExpression):
            if node.symbol.kind in SIGNAL_SYMBOLS:
                self.symbols.setdefault(_key(node.symbol), node.symbol)
        elif isinstance(node, ast.CallExpression) and node.isSystemCall:
            if node.subroutineName not in self.functions:
                self.functions.append(node.subroutineName)
        return Advance


def references(stmt: Any) -> References:
    """Signals and system functions of an assertion's expression, not of its action blocks."""
    refs = References()
    if isinstance(stmt, ast.ImmediateAssertionStatement):
        stmt.cond.visit(refs)
        return refs

    def on(node: Any) -> Any:
        if isinstance(node, ast.Statement):
            return Advance if node.kind == StK.ConcurrentAssertion else Skip
        return refs(node)

    stmt.visit(on)
    return refs


def clock_of(timing: Any) -> EdgeEvent | None:
    if timing is None:
        return None
    events = signal_events(timing)
    if events:
        return events[0]
    if timing.kind == ast.TimingControlKind.SignalEvent:  # @(cb): a clocking block's event
        target = timing.expr.symbol if timing.expr.kind == EK.ArbitrarySymbol else None
        if target is not None and target.kind == SK.ClockingBlock:
            return clock_of(target.event)
    return None


def block_clock(site: AssertionSite) -> EdgeEvent | None:
    if site.block is None:
        return None
    uses = block_clock_uses(site.block, site.block_reset)
    return EdgeEvent(uses[0].symbol, uses[0].edge) if uses else None


def _unparenthesized(expr: Any) -> Any:
    while expr.kind == syntax.SyntaxKind.ParenthesizedExpression:
        expr = expr.expression
    return expr


def default_disable(inst: Inst) -> Any:
    """The `default disable iff` declaration of the module, as syntax."""
    stx = inst.body.syntax
    for member in getattr(stx, 'members', None) or []:
        if member.kind == syntax.SyntaxKind.DefaultDisableDeclaration:
            return member
    return None


# ---------------------------------------------------------------------------------------------
# Property expressions as trees (the engine turns them into stimulus rules)
# ---------------------------------------------------------------------------------------------

UNARY_OPS = {ast.UnaryOperator.LogicalNot: 'not', ast.UnaryOperator.BitwiseNot: 'bitnot'}
BINARY_OPS = {
    ast.BinaryOperator.LogicalAnd: 'and',
    ast.BinaryOperator.LogicalOr: 'or',
    ast.BinaryOperator.Equality: 'eq',
    ast.BinaryOperator.CaseEquality: 'eq',
    ast.BinaryOperator.Inequality: 'ne',
    ast.BinaryOperator.CaseInequality: 'ne',
    ast.BinaryOperator.LessThan: 'lt',
    ast.BinaryOperator.LessThanEqual: 'le',
    ast.BinaryOperator.GreaterThan: 'gt',
    ast.BinaryOperator.GreaterThanEqual: 'ge',
    ast.BinaryOperator.BinaryAnd: 'bitand',
    ast.BinaryOperator.BinaryOr: 'bitor',
    ast.BinaryOperator.BinaryXor: 'xor',
    ast.BinaryOperator.Add: 'add',
    ast.BinaryOperator.Subtract: 'sub',
    ast.BinaryOperator.Multiply: 'mul',
    ast.BinaryOperator.LogicalShiftLeft: 'shl',
    ast.BinaryOperator.LogicalShiftRight: 'shr',
}
TREE_CALLS = {'$past', '$stable', '$changed', '$rose', '$fell', '$onehot', '$onehot0', '$countones', '$isunknown'}
PROPERTY_OPS = {ast.BinaryAssertionOperator.And: 'and', ast.BinaryAssertionOperator.Or: 'or'}


def _opaque(node: Any) -> dict:
    return {'op': 'opaque', 'text': syntax_text(node.syntax) if node.syntax is not None else ''}


def _constant_tree(expr: Any) -> dict | None:
    """A constant (literal, parameter, enum member) as a sized literal the testbench can write."""
    if expr.kind == EK.UnbasedUnsizedIntegerLiteral:  # '0, '1: the context gives the width
        bit = str(expr.literalValue)
        return {'op': 'const', 'value': f"'{bit}"} if bit in ('0', '1') else None
    value = _constant_value(expr)
    if value is None:
        return None
    number = _int_value(value)
    if number is None:
        return None
    width = int(expr.type.bitWidth) if expr.type is not None else 0
    if width <= 0:
        return {'op': 'const', 'value': str(number)}
    return {'op': 'const', 'value': f"{width}'d{number}", 'width': width}


def _int_value(value: Any) -> int | None:
    """A constant's value as a non-negative integer; None for X/Z, negatives and non-integers.
    Read from the SVInt, never from its printed form (5'd3 prints as 5'b11)."""
    raw = value.value if isinstance(value, pyslang.ConstantValue) else value
    if not isinstance(raw, pyslang.SVInt) or raw.hasUnknown:
        return None
    number = int(raw)
    return number if number >= 0 else None


def _select_index(expr: Any, env: dict[str, int] | None = None) -> int | None:
    """A select's index, when elaboration made it a constant (a literal, a genvar, a parameter) or
    it is a loop variable of an unrolled iteration (`env`)."""
    expr = strip_conversions(expr)
    if expr is None:
        return None
    if env and expr.kind == EK.NamedValue and _key(expr.symbol) in env:
        return env[_key(expr.symbol)]
    value = _constant_value(expr)
    return _int_value(value) if value is not None else None


def _constant_value(expr: Any) -> Any:
    """The value of a constant expression: folded by slang, a literal it did not fold (1'b0 inside
    a concatenation), or a parameter's or enum member's elaborated value; None for a signal."""
    if expr.kind == EK.NamedValue:
        return expr.symbol.value if expr.symbol.kind in (SK.Parameter, SK.EnumValue) else None
    if expr.constant is not None:
        return expr.constant
    return expr.value if expr.kind == EK.IntegerLiteral else None


def flat_bits(expr: Any, env: dict[str, int] | None = None) -> tuple[Any, int, int] | None:
    """The signal an expression is a constant part of, as (symbol, lowest bit, width) of the
    signal's packed bits: `v[2]`, `sel[i][1:0]` in a generate loop, `s.field`, `d[i+:2]`. None for
    anything else (a variable index, an unpacked array, a width-changing conversion)."""
    if expr is None:
        return None
    kind = expr.kind
    if kind == EK.Conversion:
        same = expr.type is not None and expr.operand.type is not None and expr.type.bitWidth == expr.operand.type.bitWidth
        return flat_bits(expr.operand, env) if same else None
    if kind == EK.Assignment:  # an output port's connection: actual = port
        return flat_bits(expr.left, env)
    if kind == EK.NamedValue:
        typ = expr.symbol.type if expr.symbol.kind in SIGNAL_SYMBOLS else None
        return (expr.symbol, 0, int(typ.bitWidth)) if typ is not None and typ.isIntegral else None
    if kind not in (EK.ElementSelect, EK.RangeSelect, EK.MemberAccess):
        return None
    base = flat_bits(expr.value, env)
    vtype = expr.value.type
    if base is None or vtype is None or not vtype.isIntegral:
        return None
    symbol, lo, _ = base
    width = int(expr.type.bitWidth)
    if kind == EK.MemberAccess:
        offset = getattr(expr.member, 'bitOffset', None)
        return (symbol, lo + int(offset), width) if offset is not None else None
    if not vtype.hasFixedRange:
        return None
    rng = vtype.fixedRange
    left, right, count = int(rng.left), int(rng.right), int(rng.width)
    elem = int(vtype.bitWidth) // count
    if kind == EK.ElementSelect:
        k = _select_index(expr.selector, env)
        if k is None or not min(left, right) <= k <= max(left, right):
            return None
        return symbol, lo + abs(k - right) * elem, width
    a, b = _select_index(expr.left, env), _select_index(expr.right, env)
    if a is None or b is None:
        return None
    sk = expr.selectionKind
    if sk == ast.RangeSelectionKind.IndexedUp:
        ends = (a, a + b - 1)
    elif sk == ast.RangeSelectionKind.IndexedDown:
        ends = (a - b + 1, a)
    else:
        ends = (a, b)
    if any(not min(left, right) <= i <= max(left, right) for i in ends):
        return None
    return symbol, lo + min(abs(i - right) for i in ends) * elem, width


class ExprTrees:
    """Bound expressions of one instance as FactExpr trees (design/facts.ts), their signals traced
    to the top's ports (or constant parts of them) where every connection on the way is a signal or
    a constant part of one. A design-internal net driven by one continuous assignment is replaced
    by its driver, cast to the net's width, so that a property over `decrement` where
    `assign decrement = take & ~give` is a property over the ports. Anything not modelled is
    `opaque`."""

    MAX_INLINE_DEPTH = 4

    def __init__(self, tracer: PortTracer, inst: Inst, env: dict[str, int] | None = None):
        self.tracer, self.inst = tracer, inst
        self.env = env or {}  # loop variables of an unrolled iteration
        self._inlining: list[str] = []

    def signal(self, e: Any) -> dict | None:
        """A signal or a constant part of one, as the top port bits it is wired from."""
        piece = flat_bits(e, self.env)
        if piece is None:
            return None
        symbol, lo, width = piece
        traced = self.tracer.top_slice(symbol, self.inst)
        if traced is None:
            return None
        port, plo, _ = traced
        full = int(port.type.bitWidth)
        base = {'op': 'id', 'name': e.symbol.name if e.kind == EK.NamedValue else symbol.name, 'top': port.name, 'width': full}
        lo += plo
        if lo == 0 and width == full:
            return base
        text = f'[{lo}]' if width == 1 else f'[{lo + width - 1}:{lo}]'
        return {'op': 'select', 'base': base, 'text': text, 'width': width}

    def inlined(self, e: Any) -> dict | None:
        key = _key(e.symbol)
        driver = self.inst.drivers.get(key)
        width = int(e.type.bitWidth)
        parts = None if key in self.inst.drivers else self.whole_parts(key, width)
        if (driver is None and parts is None) or key in self._inlining or len(self._inlining) >= self.MAX_INLINE_DEPTH:
            return None
        self._inlining.append(key)
        try:
            if parts is not None:
                # Highest part first, as a concatenation reads.
                tree = {'op': 'concat', 'args': [{'op': 'cast', 'width': w, 'args': [self.expr(d)]} for _, w, d in reversed(parts)]}
            else:
                tree = self.expr(driver)
        finally:
            self._inlining.pop()
        return {'op': 'cast', 'width': width, 'args': [tree]}

    def whole_parts(self, key: str, width: int) -> list[tuple[int, int, Any]] | None:
        """The parts of a signal its continuous assignments drive, lowest first, when together
        they drive every bit once (no gap, no overlap); None otherwise."""
        parts = sorted(self.inst.parts.get(key, []), key=lambda p: p[0])
        at = 0
        for lo, w, _ in parts:
            if lo != at:
                return None
            at += w
        return parts if parts and at == width else None

    def expr(self, e: Any) -> dict:
        e = strip_conversions(e)
        if e is None:
            return {'op': 'opaque', 'text': ''}
        if e.kind == EK.NamedValue and _key(e.symbol) in self.env:
            return {'op': 'const', 'value': f"32'd{self.env[_key(e.symbol)]}", 'width': 32}
        if e.kind in (EK.NamedValue, EK.ElementSelect, EK.RangeSelect, EK.MemberAccess):
            traced = self.signal(e)
            if traced is not None:
                return traced
        if e.kind == EK.NamedValue and e.symbol.kind in SIGNAL_SYMBOLS:
            inlined = self.inlined(e)
            if inlined is not None:
                return inlined
            width = int(e.type.bitWidth) if e.type is not None else 1
            return {'op': 'id', 'name': e.symbol.name, 'top': None, 'width': width}
        const = _constant_tree(e)
        if const is not None:
            return const
        if e.kind == EK.UnaryOp and e.op in UNARY_OPS:
            return {'op': UNARY_OPS[e.op], 'args': [self.expr(e.operand)]}
        if e.kind == EK.BinaryOp and e.op == ast.BinaryOperator.LogicalImplication:  # a -> b
            return {'op': 'or', 'args': [{'op': 'not', 'args': [self.expr(e.left)]}, self.expr(e.right)]}
        if e.kind == EK.BinaryOp and e.op in BINARY_OPS:
            return {'op': BINARY_OPS[e.op], 'args': [self.expr(e.left), self.expr(e.right)]}
        if e.kind == EK.Inside:  # x inside {A, [B:C]}: one of the values or ranges
            return self.inside(e)
        if e.kind == EK.Concatenation:
            return {'op': 'concat', 'args': [self.expr(a) for a in e.operands]}
        if e.kind == EK.ConditionalOp and len(e.conditions) == 1 and e.conditions[0].pattern is None:
            return {'op': 'cond', 'args': [self.expr(e.conditions[0].expr), self.expr(e.left), self.expr(e.right)]}
        if e.kind == EK.Call and e.isSystemCall and e.subroutineName in TREE_CALLS:
            args = [self.expr(a) for a in e.arguments if a is not None]
            return {'op': 'call', 'name': e.subroutineName, 'args': args}
        if e.kind == EK.AssertionInstance:
            return self.prop(e.body)
        return _opaque(e)

    def inside(self, e: Any) -> dict:
        x = self.expr(e.left)
        parts: list[dict] = []
        for item in e.rangeList:
            item = strip_conversions(item)
            if item.kind == EK.ValueRange:
                text = syntax_text(item.syntax)
                if '+/-' in text or '+%-' in text:
                    return _opaque(e)  # [A +/- B], [A +%- B]: tolerance ranges
                parts.append(
                    {
                        'op': 'and',
                        'args': [{'op': 'ge', 'args': [x, self.expr(item.left)]}, {'op': 'le', 'args': [x, self.expr(item.right)]}],
                    }
                )
            else:
                parts.append({'op': 'eq', 'args': [x, self.expr(item)]})
        if not parts:
            return _opaque(e)
        tree = parts[0]
        for p in parts[1:]:
            tree = {'op': 'or', 'args': [tree, p]}
        return tree

    def prop(self, a: Any) -> dict:
        """A sequence or property: a single boolean step, `##N expr` at its start, `not`,
        `and`/`or` of properties; anything else is opaque."""
        if a.kind == AK.Simple and a.repetition is None:
            return self.expr(a.expr)
        if a.kind == AK.SequenceConcat and len(a.elements) == 1:
            return self.prop(a.elements[0].sequence)
        if a.kind == AK.Unary and a.op == ast.UnaryAssertionOperator.Not:
            return {'op': 'not', 'args': [self.prop(a.expr)]}
        if a.kind == AK.Binary and a.op in PROPERTY_OPS:
            return {'op': PROPERTY_OPS[a.op], 'args': [self.prop(a.left), self.prop(a.right)]}
        return _opaque(a)


def case_text(g: CaseGuard) -> str:
    def value(v: Any) -> str:
        tree = _constant_tree(v)  # an item converted to the selector's type has no syntax of its own
        return tree['value'] if tree is not None else syntax_text(strip_conversions(v).syntax)

    return f'{syntax_text(g.selector.syntax)} inside {{{", ".join(value(v) for v in g.values)}}}'


def case_tree(g: CaseGuard, trees: ExprTrees) -> dict:
    """`selector inside {values}` as a disjunction of equalities (false for no values)."""
    sel = trees.expr(g.selector)
    parts = [{'op': 'eq', 'args': [sel, trees.expr(v)]} for v in g.values]
    if not parts:
        return {'op': 'const', 'value': "1'd0", 'width': 1}
    out = parts[0]
    for p in parts[1:]:
        out = {'op': 'or', 'args': [out, p]}
    return out


@dataclass
class AssertionResult:
    """An assertion's fact, and the clock and reset uses it is evidence of."""

    fact: AssertionFact
    clock: ClockUse | None = None
    reset: ResetUse | None = None


class AssertionReader:
    def __init__(self, src: Sources, tracer: PortTracer, fanin: FanIn):
        self.src = src
        self.tracer = tracer
        self.fanin = fanin

    def read(self, site: AssertionSite) -> AssertionResult | None:
        stmt = site.stmt
        if stmt.kind == StK.Case:
            return self._case(site)
        if stmt.kind == StK.ExpressionStatement:
            return self._error(site)
        action = ACTIONS.get(stmt.assertionKind)
        if action is None:
            return None  # restrict / expect
        if isinstance(stmt, ast.ImmediateAssertionStatement):
            return self._immediate(site, action)
        return self._concurrent(site, action)

    def _base(
        self, site: AssertionSite, kind: str, action: str, clock: EdgeEvent | None, text: str, refs: References | None = None
    ) -> AssertionFact:
        loc = _start(site.stmt)
        where = self.src.where(loc)
        refs = refs if refs is not None else references(site.stmt)
        return AssertionFact(
            kind=kind,
            action=action,
            file=where.file,
            line=where.line,
            column=where.column,
            module=site.inst.module,
            instance=site.inst.path,
            clock=self._clock_ref(clock, site.inst),
            disableIff=None,
            antecedent=None,
            consequent=text,
            implication=None,
            delay=0,
            usesPast='$past' in refs.functions,
            functions=refs.functions,
            signals=[SignalRef(name=s.name, top=self.tracer.top_name(s, site.inst)) for s in refs.symbols.values()],
            cone=self.fanin.inputs_of(list(refs.symbols.values())),
            initial=site.once,
            text=text,
            fromMacro=self.src.from_macro(loc),
            antecedentExpr=None,
            consequentExpr=None,
        )

    def _clock_ref(self, clock: EdgeEvent | None, inst: Inst) -> ClockRef | None:
        if clock is None:
            return None
        name = self.tracer.top_name(clock.symbol, inst) or clock.symbol.name
        return ClockRef(signal=name, edge=clock.edge)

    def _immediate(self, site: AssertionSite, action: str) -> AssertionResult:
        stmt = site.stmt
        kind = 'deferred' if stmt.isDeferred or stmt.isFinal else 'immediate'
        fact = self._base(site, kind, action, block_clock(site), syntax_text(stmt.cond.syntax))
        trees = ExprTrees(self.tracer, site.inst, dict(site.env))
        fact['consequentExpr'] = trees.expr(stmt.cond)
        self._guard(fact, site, trees)
        return AssertionResult(fact)

    def _case(self, site: AssertionSite) -> AssertionResult:
        """A `unique`/`priority` case without a default, as the check it is: the selector is one of
        the items' values (under the conditions the case sits under)."""
        stmt = site.stmt
        values = tuple(v for vals in case_values(stmt) or [] for v in vals)
        guard = CaseGuard(stmt.expr, values)
        refs = References()
        stmt.expr.visit(refs)
        for cond, _ in site.guards:
            (cond.selector if isinstance(cond, CaseGuard) else cond).visit(refs)
        fact = self._base(site, 'case', 'assert', block_clock(site), case_text(guard), refs)
        trees = ExprTrees(self.tracer, site.inst, dict(site.env))
        fact['consequentExpr'] = case_tree(guard, trees)
        self._guard(fact, site, trees)
        return AssertionResult(fact)

    def _error(self, site: AssertionSite) -> AssertionResult:
        """`$error`/`$fatal` reached by the conditions it sits under: an assertion of false under
        them, so the conditions are the violation."""
        refs = References()
        for cond, _ in site.guards:
            (cond.selector if isinstance(cond, CaseGuard) else cond).visit(refs)
        fact = self._base(site, 'error', 'assert', block_clock(site), syntax_text(site.stmt.syntax), refs)
        fact['consequent'] = "1'b0"
        fact['consequentExpr'] = {'op': 'const', 'value': "1'd0", 'width': 1}
        self._guard(fact, site, ExprTrees(self.tracer, site.inst, dict(site.env)))
        return AssertionResult(fact)

    def _concurrent(self, site: AssertionSite, action: str) -> AssertionResult:
        shape = peel_property(site.stmt.propertySpec)
        clock = clock_of(shape.clock) or block_clock(site)
        if clock is None and site.inst.default_clocking is not None:
            clock = clock_of(site.inst.default_clocking.event)
        disable_text, reset = self._disable(shape.disable, site.inst)
        use = ClockUse(clock.symbol, site.inst, clock.edge) if clock is not None else None
        fact = self._base(site, 'concurrent', action, clock, syntax_text(shape.text_node))
        trees = ExprTrees(self.tracer, site.inst, dict(site.env))
        self._shape(fact, shape.body, trees)
        self._guard(fact, site, trees)
        fact['disableIff'] = disable_text
        return AssertionResult(fact, use, reset)

    @staticmethod
    def _guard(fact: AssertionFact, site: AssertionSite, trees: ExprTrees) -> None:
        """The enclosing `if` conditions joined to the antecedent (sampled with it): an assertion
        under a condition not modelled keeps an antecedent text and no expression, so nothing acts
        on its consequent as if it held unconditionally."""
        if not site.guards and not site.guard_unknown:
            return

        def text(c: Any) -> str:
            return case_text(c) if isinstance(c, CaseGuard) else syntax_text(c.syntax)

        def tree(c: Any) -> dict:
            return case_tree(c, trees) if isinstance(c, CaseGuard) else trees.expr(c)

        texts = [text(c) if taken else f'!({text(c)})' for c, taken in site.guards]
        exprs = [tree(c) if taken else {'op': 'not', 'args': [tree(c)]} for c, taken in site.guards]
        known = not site.guard_unknown and (fact['antecedent'] is None or fact['antecedentExpr'] is not None)
        if fact['antecedent'] is not None:
            texts.append(fact['antecedent'])
            if fact['antecedentExpr'] is not None:
                exprs.append(fact['antecedentExpr'])
        if site.guard_unknown:
            texts.insert(0, "(the enclosing statement's condition)")
        fact['antecedent'] = ' && '.join(f'({t})' if len(texts) > 1 else t for t in texts)
        tree = exprs[0] if exprs else None
        for e in exprs[1:]:
            tree = {'op': 'and', 'args': [tree, e]}
        fact['antecedentExpr'] = tree if known else None
        if fact['implication'] is None:
            fact['implication'] = '|->'

    @staticmethod
    def _shape(fact: AssertionFact, body: Any, trees: ExprTrees) -> None:
        implication = IMPLICATIONS.get(body.op) if body.kind == AK.Binary else None
        if implication is None:
            fact['consequent'] = syntax_text(body.syntax)
            fact['delay'] = leading_delay(body)
            fact['consequentExpr'] = trees.prop(body)
            return
        fact['implication'], base = implication
        fact['antecedent'] = syntax_text(body.left.syntax)
        fact['consequent'] = syntax_text(body.right.syntax)
        fact['delay'] = base + leading_delay(body.right)
        fact['antecedentExpr'] = trees.prop(body.left)
        fact['consequentExpr'] = trees.prop(body.right)

    def _disable(self, condition: Any, inst: Inst) -> tuple[str | None, ResetUse | None]:
        """The disable iff condition's text (the property's, else the module's default) and the
        reset use it is evidence of."""
        if condition is not None:
            text = syntax_text(condition.syntax)
            return text, disable_reset_use(condition, inst, text)
        declaration = default_disable(inst)
        if declaration is None:
            return None, None
        expr = _unparenthesized(declaration.expr)
        text = syntax_text(expr)
        return text, self._default_disable_use(expr, inst, text)

    @staticmethod
    def _default_disable_use(expr: Any, inst: Inst, text: str) -> ResetUse | None:
        """`default disable iff (x)` / `(!x)`: slang keeps no bound expression, so look x up."""
        active_low = False
        if expr.kind in (syntax.SyntaxKind.UnaryLogicalNotExpression, syntax.SyntaxKind.UnaryBitwiseNotExpression):
            active_low, expr = True, _unparenthesized(expr.operand)
        if expr.kind != syntax.SyntaxKind.IdentifierName:
            return None
        symbol = inst.body.lookupName(expr.identifier.valueText)
        if symbol is None or symbol.kind not in SIGNAL_SYMBOLS:
            return None
        return ResetUse(symbol, inst, active_low, False, f'default disable iff ({text}) in {inst.module}', False)


MAX_UNROLL = 64


def eval_int(expr: Any, env: dict[str, int]) -> int | None:
    """A loop bound or initializer as an integer: literals, parameters, loop variables of the
    enclosing iterations, + - *; None for anything else."""
    expr = strip_conversions(expr)
    if expr is None:
        return None
    if expr.kind == EK.NamedValue and _key(expr.symbol) in env:
        return env[_key(expr.symbol)]
    if expr.kind == EK.BinaryOp and expr.op in (ast.BinaryOperator.Add, ast.BinaryOperator.Subtract, ast.BinaryOperator.Multiply):
        a, b = eval_int(expr.left, env), eval_int(expr.right, env)
        if a is None or b is None:
            return None
        return a + b if expr.op == ast.BinaryOperator.Add else a - b if expr.op == ast.BinaryOperator.Subtract else a * b
    return _select_index(expr)


STOPS = {
    ast.BinaryOperator.LessThan: lambda v, k: v < k,
    ast.BinaryOperator.LessThanEqual: lambda v, k: v <= k,
    ast.BinaryOperator.GreaterThan: lambda v, k: v > k,
    ast.BinaryOperator.GreaterThanEqual: lambda v, k: v >= k,
    ast.BinaryOperator.Inequality: lambda v, k: v != k,
}
STEPS = {
    ast.UnaryOperator.Postincrement: 1,
    ast.UnaryOperator.Preincrement: 1,
    ast.UnaryOperator.Postdecrement: -1,
    ast.UnaryOperator.Predecrement: -1,
}


def loop_values(loop: Any, env: dict[str, int]) -> tuple[str, list[int]] | None:
    """`for (int i = A; i < B; i++)` with constant A and B (given the enclosing loops' values): the
    loop variable's key and its values; None for any other shape or more than MAX_UNROLL."""
    if len(loop.loopVars) != 1 or loop.initializers or len(loop.steps) != 1 or loop.stopExpr is None:
        return None
    var = loop.loopVars[0]
    key = _key(var)
    start = eval_int(var.initializer, env) if var.initializer is not None else None
    stop, step = strip_conversions(loop.stopExpr), strip_conversions(loop.steps[0])
    if start is None or stop.kind != EK.BinaryOp or stop.op not in STOPS or step.kind != EK.UnaryOp or step.op not in STEPS:
        return None
    left, operand = strip_conversions(stop.left), strip_conversions(step.operand)
    if left.kind != EK.NamedValue or _key(left.symbol) != key or operand.kind != EK.NamedValue or _key(operand.symbol) != key:
        return None
    bound = eval_int(stop.right, env)
    if bound is None:
        return None
    values, v = [], start
    while STOPS[stop.op](v, bound):
        if len(values) == MAX_UNROLL:
            return None
        values.append(v)
        v += STEPS[step.op]
    return key, values


def assertion_sites(inst: Inst, blocks: dict[str, tuple[EdgeBlock, ResetUse | None]]) -> list[AssertionSite]:
    sites: list[AssertionSite] = []

    def collect(
        root: Any, block: EdgeBlock | None, reset: ResetUse | None, guards: tuple = (), unknown: bool = False, env: tuple = ()
    ) -> None:
        def on(node: Any) -> Any:
            sites.append(AssertionSite(inst, node, block, reset, guards, unknown, env))
            return Skip

        root.visit(lookup_table={StK.ConcurrentAssertion: on, StK.ImmediateAssertion: on})

    def walk(stmt: Any, block: EdgeBlock | None, reset: ResetUse | None, guards: tuple, unknown: bool, env: tuple) -> None:
        """The statement tree with the `if` conditions on the way down: `if (g) assert (c)` is
        `g -> c`, never `c` alone (a formal property's `if (!f_past_valid) assert (...)`). A `for`
        loop with constant bounds is unrolled: `for (i...) assert (c(i))` is each c(i)."""
        if stmt is None:
            return
        kind = stmt.kind
        if kind in (StK.ImmediateAssertion, StK.ConcurrentAssertion):
            sites.append(AssertionSite(inst, stmt, block, reset, guards, unknown, env))
        elif kind == StK.Conditional and len(stmt.conditions) == 1 and stmt.conditions[0].pattern is None:
            cond = stmt.conditions[0].expr
            walk(stmt.ifTrue, block, reset, (*guards, (cond, True)), unknown, env)
            walk(stmt.ifFalse, block, reset, (*guards, (cond, False)), unknown, env)
        elif kind == StK.Block:
            walk(stmt.body, block, reset, guards, unknown, env)
        elif kind == StK.List:
            for s in stmt.list:
                walk(s, block, reset, guards, unknown, env)
        elif kind == StK.Timed:
            walk(stmt.stmt, block, reset, guards, unknown, env)
        elif kind == StK.ForLoop and (unrolled := loop_values(stmt, dict(env))) is not None:
            key, values = unrolled
            for v in values:
                walk(stmt.body, block, reset, guards, unknown, (*env, (key, v)))
        elif kind == StK.ExpressionStatement and (is_error_call(stmt) or (is_assignment(stmt) and guards)):
            sites.append(AssertionSite(inst, stmt, block, reset, guards, unknown, env))
        elif kind == StK.Case and (values := case_values(stmt)) is not None:
            # `unique`/`priority` case without a default: a selector value no item names is a
            # violation the simulator reports at the case, so the case is itself a check.
            if stmt.defaultCase is None and stmt.check in (ast.UniquePriorityCheck.Unique, ast.UniquePriorityCheck.Priority):
                sites.append(AssertionSite(inst, stmt, block, reset, guards, unknown, env))
            for item, vals in zip(stmt.items, values, strict=True):
                walk(item.stmt, block, reset, (*guards, (CaseGuard(stmt.expr, vals), True)), unknown, env)
            every = tuple(v for vals in values for v in vals)
            walk(stmt.defaultCase, block, reset, (*guards, (CaseGuard(stmt.expr, every), False)), unknown, env)
        else:  # case items, other loops, waits ...: conditions this reading does not model
            collect(stmt, block, reset, guards, True, env)

    for proc in inst.procedures:
        block, reset = blocks.get(_key(proc), (None, None))
        if proc.body is not None:
            first = len(sites)
            walk(proc.body, block, reset, (), False, ())
            if proc.procedureKind == ast.ProceduralBlockKind.Initial:
                for site in sites[first:]:
                    site.once = not site.guard_unknown
    for routine in inst.subroutines:
        collect(routine, None, None)
    return sites


# ---------------------------------------------------------------------------------------------
# Includes
# ---------------------------------------------------------------------------------------------


def include_facts(tree: syntax.SyntaxTree, src: Sources) -> list[IncludeFact]:
    out: list[IncludeFact] = []
    seen: set[tuple] = set()
    for meta in tree.getIncludeDirectives():
        if not meta.buffer or not meta.buffer.id:
            continue
        where = src.where(_start(meta.syntax))
        item: IncludeFact = {'file': src.path_of(meta.buffer.id) or meta.path, 'from': where.file, 'line': where.line}
        key = tuple(item.values())
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


# ---------------------------------------------------------------------------------------------
# The design's facts
# ---------------------------------------------------------------------------------------------


@dataclass
class DesignFacts:
    modules: list[ModuleFact]
    clocks: list[ClockFact]
    resets: list[ResetFact]
    assertions: list[AssertionFact]
    loads: list[LoadFact]


def _tree_key(fact: AssertionFact) -> str:
    return json.dumps([fact['antecedentExpr'], fact['consequentExpr'], fact['clock'], fact['disableIff']], sort_keys=True)


def design_facts(top: ast.InstanceSymbol, src: Sources) -> DesignFacts:
    instances = walk_hierarchy(top)
    tracer = PortTracer(instances)
    reader = AssertionReader(src, tracer, FanIn(instances))
    reset_uses: list[ResetUse] = []
    clock_uses: list[ClockUse] = []
    assertions: list[AssertionFact] = []
    loads: list[LoadFact] = []
    seen_assertions: set[tuple] = set()
    for inst in instances:
        blocks: dict[str, tuple[EdgeBlock, ResetUse | None]] = {}
        for proc in inst.procedures:
            block = edge_block(proc, inst)
            if block is None:
                continue
            reset = reset_use(block)
            blocks[_key(proc)] = (block, reset)
            reset_uses += [reset] if reset is not None else []
            clock_uses += block_clock_uses(block, reset)
        if inst.default_clocking is not None:
            event = clock_of(inst.default_clocking.event)
            clock_uses += [ClockUse(event.symbol, inst, event.edge)] if event else []
        for site in assertion_sites(inst, blocks):
            loc = _start(site.stmt)
            if is_assignment(site.stmt):
                load = load_fact(site, tracer, src)
                if load is not None and load not in loads:
                    loads.append(load)
                continue
            result = reader.read(site)
            if result is None:
                continue
            clock_uses += [result.clock] if result.clock is not None else []
            reset_uses += [result.reset] if result.reset is not None else []
            # One entry per site of a module, and one more for each instance or generate iteration
            # where it constrains other ports (`valid_i[i] |-> ...` is a rule per i).
            fact = result.fact
            key = (inst.module, loc.buffer.id, loc.offset, _tree_key(fact))
            if key not in seen_assertions:
                seen_assertions.add(key)
                assertions.append(fact)
    resets = reset_facts(reset_uses, tracer)
    clocks = clock_facts(clock_uses, {r['signal'] for r in resets}, tracer)
    return DesignFacts(module_facts(instances, src), clocks, resets, assertions, loads)


def _blank_response(candidates: list[str]) -> Response:
    return Response(
        version=SCHEMA_VERSION,
        ok=False,
        slang=pyslang.__version__,
        diagnostics=[],
        top=None,
        topCandidates=candidates,
        modules=[],
        clocks=[],
        resets=[],
        assertions=[],
        loads=[],
        includes=[],
    )


def _readable(files: list[str]) -> tuple[list[str], list[Diagnostic]]:
    found, problems = [], []
    for path in files:
        if os.path.isfile(path) and os.access(path, os.R_OK):
            found.append(path)
        else:
            problems.append(_error(f"cannot read file '{path}'", Where(file=path)))
    return found, problems


def respond(req: Request) -> Response:
    """Everything slang says about the design named by one request."""
    response = _blank_response([])
    files, problems = _readable(req.files)
    response['diagnostics'] += problems
    if not files:
        return response
    sm = pyslang.SourceManager()
    tree = syntax.SyntaxTree.fromFiles(files, sm, _options(req, set()))
    src = Sources(sm, files)
    choice = choose_top(tree, req)
    response['topCandidates'] = choice.candidates
    response['includes'] = include_facts(tree, src)
    if choice.instance is not None:
        facts = design_facts(choice.instance, src)
        response.update(
            top=choice.instance.name,
            modules=facts.modules,
            clocks=facts.clocks,
            resets=facts.resets,
            assertions=facts.assertions,
            loads=facts.loads,
        )
    response['diagnostics'] += collect_diagnostics(choice.compilation, src)
    if choice.error is not None:
        response['diagnostics'].append(_error(choice.error))
    response['ok'] = choice.instance is not None and not any(d['severity'] == 'error' for d in response['diagnostics'])
    return response


def safe_respond(req: Request) -> Response:
    """respond(), with a failure inside slang or this script reported as a diagnostic."""
    try:
        return respond(req)
    except Exception as exc:  # noqa: BLE001 - the caller gets a response whatever happens
        response = _blank_response([])
        response['diagnostics'].append(_error(f'internal error: {type(exc).__name__}: {exc}'))
        return response


# ---------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------


def _write(response: Response, out: Any) -> None:
    out.write(json.dumps(response) + '\n')
    out.flush()


def _malformed(message: str) -> int:
    print(f'slang_facts: malformed request: {message}', file=sys.stderr)
    return 2


def serve(stdin: Any, stdout: Any) -> int:
    for line in stdin:
        if not line.strip():
            continue
        try:
            req = parse_request(json.loads(line))
        except (json.JSONDecodeError, RequestError) as exc:
            return _malformed(str(exc))
        _write(safe_respond(req), stdout)
    return 0


def one_shot(path: str, stdout: Any) -> int:
    try:
        with open(path, encoding='utf-8') as handle:
            req = parse_request(json.load(handle))
    except (OSError, json.JSONDecodeError, RequestError) as exc:
        return _malformed(str(exc))
    _write(safe_respond(req), stdout)
    return 0


def main(argv: list[str]) -> int:
    if argv == ['--serve']:
        return serve(sys.stdin, sys.stdout)
    if len(argv) == 1 and not argv[0].startswith('-'):
        return one_shot(argv[0], sys.stdout)
    print('usage: slang_facts.py REQUEST.json | slang_facts.py --serve', file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
