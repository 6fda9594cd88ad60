// The last pass of the static check: Verilator's own parse of the exact build (--xml-only on
// 5.006, --json-only on current releases; same flags, same sources as the front end), searched for
// what the text passes (safety.ts) look for. Whatever the lexer tricks, this is what the C++ will
// be generated from. Node names, found on Verilator 5.006 (XML) and 5.048 (JSON):
//
//   inline C++   $c/$cNN: ucfunc, ucstmt (XML) / CEXPRUSER, CSTMTUSER (JSON, $cpure too);
//                `systemc_*: schdr, scint, scimp, scimphdr, scctor, scdtor / SYSTEMCSECTION
//   shell        $system: systemf, systemt / SYSTEMF, SYSTEMT
//   DPI          JSON: FUNC/TASK with dpiImport or dpiExport. The XML marks neither: an import is
//                a func/task outside a class whose children are only its ports (var) — with
//                --coverage every other function gets a coverinc — and an export is a func/task
//                with a scopename child of its own.
//   file names   fopen [fd, name, mode], fopenmcd [fd, name], readmem/writemem [name, ...],
//                dumpctl [expr] (XML, by position) / FOPEN filenamep+modep, FOPENMCD filenamep,
//                READMEM/WRITEMEM filenamep, DUMPCTL exprp (JSON). A literal name is a const:
//                "48'h2f6574632f78" (XML, the bytes) or "\"/etc/x\"" (JSON, C escapes).
//   units        module, iface, package, primitive / MODULE, IFACE, PACKAGE, PRIMITIVE (origName)
//
// Only what lies in the testbench's files (the testbench and what it included) is judged: the
// design's own files may use all of this. A file call the text passes already judged (its name a
// literal, or computed at run time, which the jail confines) is not judged again: a name such as
// {"/et", "c/x"} is computed to them, a literal to Verilator's constant folding.
import type { Diagnostic } from '../result.js';
import { REFUSALS, computedPathProblem, filePathProblem, type Refusal } from '../safety.js';
import { parseSvLiteral } from '../../design/svLiteral.js';
import { decodeSvString } from '../../design/svTokens.js';

export interface NetlistCheckOptions {
  /** The testbench's file name, as diagnostics show it. */
  file: string;
  /** True for a file name of Verilator's file table that is the testbench's or one it included. */
  owned: (filename: string) => boolean;
  jailed: boolean;
  designNames?: string[];
  /** `file:line` (base name) of the file-naming calls the text passes judged (safety.ts
   * fileCallSites): their names were read there, a literal one or one computed at run time (which
   * the jail confines), and are not judged again. A call the text passes did not see is. */
  judgedCalls?: string[];
  /** Report native code ($c, `systemc_*, DPI, $system) in the design's own files too, as
   * `origin: 'dut'` diagnostics (warnings, or errors when `designNative` is 'refuse'). */
  designNative?: 'allow' | 'refuse';
}

/** One node of either tree, reduced to what the check reads. */
interface Node {
  tag: string;
  file: string;
  line: number;
  column: number;
  name?: string;
  attrs: Record<string, string>;
  children: Node[];
  /** JSON: children by field name. */
  fields?: Record<string, Node[]>;
}

const CCODE_TAGS = new Set([
  'ucfunc',
  'ucstmt',
  'cexpruser',
  'cstmtuser',
  'schdr',
  'scint',
  'scimp',
  'scimphdr',
  'scctor',
  'scdtor',
  'systemcsection',
]);
const SYSTEM_TAGS = new Set(['systemf', 'systemt']);
const UNIT_TAGS = new Set(['module', 'iface', 'package', 'primitive']);
const FILE_TAGS = new Set(['fopen', 'fopenmcd', 'readmem', 'writemem', 'dumpctl']);

const PARSE_NOTE = " (found in Verilator's parse of the build)";

/** A literal string const's value, or null for anything else (computed at run time). */
export function constString(node: Node | undefined): string | null {
  if (!node || node.tag !== 'const') return null;
  const v = node.name ?? '';
  // 5.006 writes a string const as a sized hex number of its bytes, first character highest.
  const hex = parseSvLiteral(v);
  if (hex?.form === 'based' && hex.base === 16 && hex.width !== undefined && hex.value !== undefined) {
    const h = hex.value.toString(16);
    const digits = h.length % 2 ? `0${h}` : h;
    let s = '';
    for (let k = 0; k < digits.length; k += 2) s += String.fromCharCode(parseInt(digits.slice(k, k + 2), 16));
    return s.replace(/^\0+/, '');
  }
  const json = /^\\"(.*)\\"$/s.exec(v);
  if (json) return decodeSvString(json[1]);
  const xml = /^"(.*)"$/s.exec(v);
  return xml ? xml[1] : null;
}

function walk(node: Node, visit: (n: Node, inClass: boolean) => void, inClass = false): void {
  visit(node, inClass);
  const below = inClass || node.tag === 'class';
  for (const c of node.children) walk(c, visit, below);
}

function check(roots: Node[], opts: NetlistCheckOptions): Diagnostic[] {
  const out: Diagnostic[] = [];
  const design = new Set(opts.designNames ?? []);
  const add = (n: Node, r: Refusal, note = PARSE_NOTE): void => {
    out.push({
      file: n.file === opts.file || !n.file ? opts.file : (n.file.split('/').pop() ?? opts.file),
      origin: 'testbench',
      line: n.line || 1,
      column: n.column || 1,
      severity: 'error',
      code: r.code,
      message: `${r.message}${note}`,
      suggestion: r.suggestion,
      stage: 'check',
    });
  };
  // Calls per line the text passes judged; a line where the parse holds more is judged here.
  const judged = new Map<string, number>();
  for (const k of opts.judgedCalls ?? []) judged.set(k, (judged.get(k) ?? 0) + 1);
  const calls = new Map<string, number>();
  const key = (n: Node): string => `${n.file.split('/').pop()}:${n.line}`;
  const isFileCall = (n: Node): boolean =>
    FILE_TAGS.has(n.tag) &&
    (n.tag !== 'dumpctl' || /^[\x20-\x7e]+$/.test(constString(n.fields ? n.fields.exprp?.[0] : n.children[0]) ?? '.'));
  for (const root of roots)
    walk(root, (n) => {
      if (isFileCall(n) && opts.owned(n.file)) calls.set(key(n), (calls.get(key(n)) ?? 0) + 1);
    });
  const path = (n: Node, task: string, name: Node | undefined, mode: Node | undefined): void => {
    if ((calls.get(key(n)) ?? 0) <= (judged.get(key(n)) ?? 0)) return;
    const literal = constString(name);
    if (literal !== null) {
      const problem = filePathProblem(task, literal, mode ? constString(mode) : null);
      if (problem) add(n, problem);
    } else if (!opts.jailed) add(n, computedPathProblem(task));
  };
  if (opts.designNative) designNativeCode(roots, opts, out);
  for (const root of roots)
    walk(root, (n, inClass) => {
      if (!opts.owned(n.file)) return;
      const t = n.tag;
      if (CCODE_TAGS.has(t)) add(n, REFUSALS.ccode);
      else if (SYSTEM_TAGS.has(t)) add(n, REFUSALS.system);
      else if (t === 'func' || t === 'task') {
        if (n.fields) {
          if (n.attrs.dpiImport === 'true' || n.attrs.dpiExport === 'true') add(n, REFUSALS.dpi);
        } else if (n.children.some((c) => c.tag === 'scopename')) add(n, REFUSALS.dpi);
        else if (!inClass && n.children.every((c) => c.tag === 'var'))
          add(
            n,
            REFUSALS.dpi,
            ` (found in Verilator's parse of the build: '${n.name ?? ''}' has no body, which is a DPI import; an empty function under \`verilator coverage_off looks the same there, so give it a statement)`,
          );
      } else if (t === 'fopen' || t === 'fopenmcd') {
        const [name, mode] = n.fields
          ? [n.fields.filenamep?.[0], n.fields.modep?.[0]]
          : t === 'fopen'
            ? [n.children[1], n.children[2]]
            : [n.children[1], undefined];
        path(n, 'fopen', name, t === 'fopen' ? mode : undefined);
      } else if (t === 'readmem' || t === 'writemem') {
        // The node does not say h or b: the message names the family.
        path(n, t === 'readmem' ? 'readmemh' : 'writememh', n.fields ? n.fields.filenamep?.[0] : n.children[0], undefined);
      } else if (t === 'dumpctl') {
        // $dumpfile's name; $dumpvars(level) and the like hold numbers, which read as no path.
        const e = n.fields ? n.fields.exprp?.[0] : n.children[0];
        const literal = constString(e);
        if (literal !== null && /^[\x20-\x7e]+$/.test(literal)) path(n, 'dumpfile', e, undefined);
      } else if (UNIT_TAGS.has(t) && design.has(n.attrs.origName ?? n.name ?? '')) {
        add(n, REFUSALS.redefine(n.attrs.origName ?? n.name ?? ''));
      }
    });
  return out;
}

/** Native code in the design's own files: one diagnostic per kind and file (a design may have many). */
function designNativeCode(roots: Node[], opts: NetlistCheckOptions, out: Diagnostic[]): void {
  const seen = new Set<string>();
  const refuse = opts.designNative === 'refuse';
  for (const root of roots)
    walk(root, (n, inClass) => {
      if (!n.file || opts.owned(n.file)) return;
      let what: string | undefined;
      if (CCODE_TAGS.has(n.tag)) what = "Verilator's inline C++ ($c or `systemc_*)";
      else if (SYSTEM_TAGS.has(n.tag)) what = '$system';
      else if ((n.tag === 'func' || n.tag === 'task') && n.fields && (n.attrs.dpiImport === 'true' || n.attrs.dpiExport === 'true'))
        what = 'a DPI import or export';
      else if ((n.tag === 'func' || n.tag === 'task') && !n.fields && !inClass && n.children.some((c) => c.tag === 'scopename'))
        what = 'a DPI export';
      if (!what) return;
      const file = n.file.split('/').pop() ?? n.file;
      const key = `${what}\0${file}`;
      if (seen.has(key)) return;
      seen.add(key);
      out.push({
        file: n.file,
        origin: 'dut',
        line: n.line || 1,
        column: n.column || 1,
        severity: refuse ? 'error' : 'warning',
        code: 'CHORUS-NATIVE',
        message: refuse
          ? `the design uses ${what}: native code from a request would run on the service's host; this service does not accept it`
          : `the design uses ${what}: it becomes native code of the simulation (it is your design, so it runs)`,
        suggestion: refuse
          ? 'Send the design without native code, or run a service started with --allow-native-design for designs you trust.'
          : 'Nothing to do for your own design; the reward service refuses such designs unless started with --allow-native-design.',
        stage: 'check',
      });
    });
}

const XML_ENTITIES: Record<string, string> = { quot: '"', apos: "'", amp: '&', lt: '<', gt: '>' };
function unescapeXml(s: string): string {
  return s.replace(/&(#x?[0-9a-fA-F]+|\w+);/g, (m, e: string) =>
    e[0] === '#' ? String.fromCharCode(e[1] === 'x' ? parseInt(e.slice(2), 16) : Number(e.slice(1))) : (XML_ENTITIES[e] ?? m),
  );
}

/** Reads Verilator's --xml-only output (a regular, text-free XML) into nodes. */
export function readXmlNetlist(xml: string): Node[] {
  const files = new Map<string, string>();
  const roots: Node[] = [];
  const stack: Node[] = [];
  for (const m of xml.matchAll(/<(\/?)([A-Za-z_][\w.-]*)((?:\s+[\w:.-]+="[^"]*")*)\s*(\/?)>/g)) {
    const [, close, tag, attrText, selfClose] = m;
    if (close) {
      stack.pop();
      continue;
    }
    const attrs: Record<string, string> = {};
    for (const a of attrText.matchAll(/([\w:.-]+)="([^"]*)"/g)) attrs[a[1]] = unescapeXml(a[2]);
    if (tag === 'file' && attrs.id && attrs.filename) files.set(attrs.id, attrs.filename);
    const loc = (attrs.loc ?? '').split(',');
    const node: Node = {
      tag,
      file: loc[0] ?? '',
      line: Number(loc[1] ?? 0),
      column: Number(loc[2] ?? 0),
      name: attrs.name,
      attrs,
      children: [],
    };
    (stack.length ? stack[stack.length - 1].children : roots).push(node);
    if (!selfClose) stack.push(node);
  }
  const named = (n: Node): void => {
    n.file = files.get(n.file) ?? n.file;
    n.children.forEach(named);
  };
  roots.forEach(named);
  return roots;
}

/** Reads Verilator's --json-only tree and its meta file (the file table) into nodes. */
export function readJsonNetlist(json: string, meta: string): Node[] {
  const files = new Map<string, string>();
  try {
    const table = (JSON.parse(meta) as { files?: Record<string, { filename?: string }> }).files ?? {};
    for (const [id, f] of Object.entries(table)) if (f.filename) files.set(id, f.filename);
  } catch {
    /* no file table: names stay letters, and nothing is owned; the caller refuses that */
  }
  type J = Record<string, unknown>;
  const read = (j: J): Node => {
    const loc = String(j.loc ?? '').split(/[,:]/);
    const attrs: Record<string, string> = {};
    const fields: Record<string, Node[]> = {};
    const children: Node[] = [];
    for (const [k, v] of Object.entries(j)) {
      if (Array.isArray(v)) {
        const nodes = v.filter((x): x is J => typeof x === 'object' && x !== null && 'type' in x).map(read);
        fields[k] = nodes;
        children.push(...nodes);
      } else if (v !== null && typeof v !== 'object') attrs[k] = String(v);
    }
    return {
      tag: String(j.type ?? '').toLowerCase(),
      file: files.get(loc[0] ?? '') ?? loc[0] ?? '',
      line: Number(loc[1] ?? 0),
      column: Number(loc[2] ?? 0),
      name: typeof j.name === 'string' ? j.name : undefined,
      attrs,
      children,
      fields,
    };
  };
  return [read(JSON.parse(json) as J)];
}

export function checkXmlNetlist(xml: string, opts: NetlistCheckOptions): Diagnostic[] {
  return check(readXmlNetlist(xml), opts);
}

export function checkJsonNetlist(json: string, meta: string, opts: NetlistCheckOptions): Diagnostic[] {
  return check(readJsonNetlist(json, meta), opts);
}
