// The design as Verilator's front end elaborates it, read from its netlist (--json-only where the
// installed version has it, --xml-only where not): modules, ports (direction, width, packed/unpacked
// dims, structs, enums), parameters and the top candidates. Pure readers: running the front end is
// the simulator layer's job (sim/verilator/introspect.ts). Errors here are DUT errors (DesignError),
// never testbench errors.
import { existsSync, statSync } from 'node:fs';
import { XMLParser } from 'fast-xml-parser';
import type { DesignInfo, DesignSpec, ModuleInfo, ParamInfo, PortInfo } from './types.js';
import { DesignError } from './errors.js';
import { svLiteralValue } from './svLiteral.js';

type X = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const ARRAYS = new Set([
  'file',
  'cells',
  'cell',
  'module',
  'var',
  'instance',
  'basicdtype',
  'refdtype',
  'enumdtype',
  'enumitem',
  'structdtype',
  'uniondtype',
  'memberdtype',
  'packarraydtype',
  'unpackarraydtype',
  'paramtypedtype',
  'ifacerefdtype',
  'voiddtype',
  'const',
  'range',
  'typedef',
  'package',
  'iface',
]);

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '',
  isArray: (name) => ARRAYS.has(name),
  parseAttributeValue: false,
});

interface TypeShape {
  width: number;
  packedDims: Array<[number, number]>;
  unpackedDims: Array<[number, number]>;
  signed: boolean;
  kind: PortInfo['kind'];
  typeName: string;
  enumValues?: Array<{ name: string; value: string }>;
  members?: Array<{ name: string; width: number }>;
}

function rangeOf(node: X): [number, number] {
  const consts: X[] = node.range?.[0]?.const ?? [];
  const l = svLiteralValue(consts[0]?.name ?? '0') ?? 0n;
  const r = svLiteralValue(consts[1]?.name ?? '0') ?? 0n;
  return [Number(l), Number(r)];
}

class TypeTable {
  private byId = new Map<string, { tag: string; node: X }>();
  constructor(table: X | undefined) {
    if (!table) return;
    for (const [tag, list] of Object.entries(table)) {
      if (!Array.isArray(list)) continue;
      for (const node of list as X[]) if (node.id) this.byId.set(String(node.id), { tag, node });
    }
  }
  /** An enum type by its declared name (`op_t` or `pkg::op_t`): port vars reference the base
   * type by id and the enum only by name (`vartype`). */
  enumNamed(name: string): TypeShape | undefined {
    for (const [id, e] of this.byId) {
      if (e.tag !== 'enumdtype') continue;
      const n = String(e.node.name ?? '');
      if (n === name || n.endsWith('::' + name)) return this.shape(id);
    }
    return undefined;
  }

  shape(id: string | undefined, depth = 0): TypeShape {
    const unknown: TypeShape = { width: 1, packedDims: [], unpackedDims: [], signed: false, kind: 'other', typeName: 'unknown' };
    if (!id || depth > 32) return unknown;
    const e = this.byId.get(String(id));
    if (!e) return unknown;
    const { tag, node } = e;
    switch (tag) {
      case 'basicdtype': {
        const hasRange = node.left !== undefined;
        const l = Number(node.left ?? 0);
        const r = Number(node.right ?? 0);
        const builtinWidths: Record<string, number> = {
          int: 32,
          integer: 32,
          shortint: 16,
          longint: 64,
          byte: 8,
          bit: 1,
          logic: 1,
          reg: 1,
          time: 64,
        };
        const width = hasRange ? Math.abs(l - r) + 1 : (builtinWidths[node.name] ?? 1);
        return {
          width,
          packedDims: hasRange && !['int', 'integer', 'shortint', 'longint', 'byte', 'time'].includes(node.name) ? [[l, r]] : [],
          unpackedDims: [],
          signed: node.signed === 'true',
          kind: 'basic',
          typeName: node.name ?? 'logic',
        };
      }
      case 'refdtype':
      case 'paramtypedtype': {
        const s = this.shape(node.sub_dtype_id, depth + 1);
        return { ...s, typeName: s.kind === 'basic' ? s.typeName : (node.name ?? s.typeName) };
      }
      case 'enumdtype': {
        const s = this.shape(node.sub_dtype_id, depth + 1);
        const items: X[] = node.enumitem ?? [];
        return {
          ...s,
          kind: 'enum',
          typeName: node.name ?? 'enum',
          enumValues: items.map((it) => ({ name: it.name, value: it.const?.[0]?.name ?? '' })),
        };
      }
      case 'structdtype':
      case 'uniondtype': {
        const members = (node.memberdtype ?? []).map((m: X) => ({
          name: m.name as string,
          width: this.shape(m.sub_dtype_id, depth + 1).width,
        }));
        const width =
          tag === 'structdtype'
            ? members.reduce((a: number, m: { width: number }) => a + m.width, 0)
            : Math.max(0, ...members.map((m: { width: number }) => m.width));
        return {
          width,
          packedDims: [[width - 1, 0]],
          unpackedDims: [],
          signed: false,
          kind: tag === 'structdtype' ? 'struct' : 'union',
          typeName: node.name ?? tag,
          members,
        };
      }
      case 'packarraydtype': {
        const s = this.shape(node.sub_dtype_id, depth + 1);
        const [l, r] = rangeOf(node);
        const n = Math.abs(l - r) + 1;
        return { ...s, width: s.width * n, packedDims: [[l, r], ...s.packedDims] };
      }
      case 'unpackarraydtype': {
        const s = this.shape(node.sub_dtype_id, depth + 1);
        return { ...s, unpackedDims: [rangeOf(node), ...s.unpackedDims] };
      }
      default:
        return { ...unknown, typeName: tag.replace(/dtype$/, '') };
    }
  }
}

function locLine(loc: string | undefined): number {
  return Number((loc ?? '').split(',')[1] ?? 0);
}

/** Parses Verilator's XML netlist (--xml-only, Verilator < 5.036 or so); exported for tests. */
export function parseXmlNetlist(xml: string): Omit<DesignInfo, 'top' | 'warnings'> {
  return readNetlist((parser.parse(xml) as X).verilator_xml ?? {});
}

/**
 * Parses Verilator's JSON netlist (--json-only, 5.020 on; the only form once --xml-only was
 * removed) by recasting it into the tree the XML parser yields, so one reader serves both:
 * a node's lists become children grouped by lower-cased node type (`VAR` -> `var`), `addr`
 * becomes `id`, `dtypep`/`refDTypep` become `dtype_id`/`sub_dtype_id`, `loc` "f,3:8,3:20"
 * becomes "f,3,8,3,20", a CELL becomes an `instance` with its module's name, and the
 * level-1 modules are the top cells. `meta` is the .tree.meta.json (the file table).
 */
export function parseJsonNetlist(json: string, meta: string): Omit<DesignInfo, 'top' | 'warnings'> {
  const tree = JSON.parse(json) as X;
  const metaFiles = ((JSON.parse(meta) as X).files ?? {}) as Record<string, { filename?: string }>;
  const moduleNames = new Map<string, string>();
  const dtypes: Record<string, X[]> = {};
  const index = (n: unknown): void => {
    if (Array.isArray(n)) return n.forEach(index);
    if (!n || typeof n !== 'object') return;
    const o = n as X;
    if (['MODULE', 'IFACE', 'PACKAGE', 'CLASS'].includes(o.type)) moduleNames.set(String(o.addr), String(o.origName ?? o.name));
    for (const v of Object.values(o)) if (typeof v === 'object') index(v);
  };
  index(tree);
  const convert = (o: X): X => {
    const out: X = {};
    for (const [k, v] of Object.entries(o)) {
      if (Array.isArray(v)) {
        for (const c of v as X[]) {
          if (!c || typeof c !== 'object' || typeof c.type !== 'string') continue;
          const child = convert(c);
          const tag = c.type === 'CELL' ? 'instance' : c.type.toLowerCase();
          (out[tag] ??= []).push(child);
          if (tag.endsWith('dtype')) (dtypes[tag] ??= []).push(child);
        }
        continue;
      }
      if (k === 'type') continue;
      const text = typeof v === 'boolean' ? String(v) : v;
      if (k === 'addr') out.id = text;
      else if (k === 'loc') out.loc = String(v).replace(/:/g, ',');
      else if (k === 'dtypep') out.dtype_id = text;
      else if (k === 'refDTypep') out.sub_dtype_id = text;
      else if (k === 'direction') {
        if (v !== 'NONE') out.dir = String(v).toLowerCase();
      } else if (k === 'dtypeName') out.vartype = text;
      else if (k === 'varType') {
        if (v === 'GPARAM') out.param = 'true';
        if (v === 'LPARAM') out.localparam = 'true';
      } else if (k === 'range' && o.type === 'BASICDTYPE') {
        const m = /^(-?\d+):(-?\d+)$/.exec(String(v));
        if (m) [out.left, out.right] = [m[1], m[2]];
      } else out[k] = text;
    }
    // A parameter type's dtypep is its default type; a REFDTYPE already has refDTypep.
    if (o.type === 'PARAMTYPEDTYPE' && out.sub_dtype_id === undefined) out.sub_dtype_id = out.dtype_id;
    if (o.type === 'CELL') out.defName = moduleNames.get(String(o.modp)) ?? o.origName;
    // XML resolves a typedef reference to the type itself (`bus_pkg::req_t`); JSON keeps the
    // REFDTYPE by its local name (`req_t`): let the referenced type's own name show through.
    if (o.type === 'REFDTYPE' && o.dtypep && o.dtypep !== o.addr) delete out.name;
    return out;
  };
  const modules: X[] = [];
  const packages: X[] = [];
  for (const m of (tree.modulesp ?? []) as X[]) (m.type === 'MODULE' ? modules : packages).push(convert(m));
  for (const t of (tree.miscsp ?? []) as X[]) if (t.type === 'TYPETABLE') convert(t);
  const files = Object.entries(metaFiles).map(([id, f]) => ({ id, filename: f.filename ?? '' }));
  const tops = ((tree.modulesp ?? []) as X[]).filter((m) => m.type === 'MODULE' && m.level === 1);
  return readNetlist({
    files: [{ file: files }],
    netlist: { module: modules, package: packages, typetable: dtypes },
    cells: [{ cell: tops.map((m) => ({ submodname: String(m.origName ?? m.name) })) }],
  });
}

function readNetlist(root: X): Omit<DesignInfo, 'top' | 'warnings'> {
  const files = new Map<string, string>();
  for (const f of root.files?.[0]?.file ?? root.files?.file ?? []) files.set(String(f.id), String(f.filename));
  const netlist: X = root.netlist ?? {};
  const types = new TypeTable(netlist.typetable);
  const modules: ModuleInfo[] = [];
  for (const m of (netlist.module ?? []) as X[]) {
    const ports: PortInfo[] = [];
    const params: ParamInfo[] = [];
    for (const v of (m.var ?? []) as X[]) {
      if (v.dir) {
        let s = types.shape(v.dtype_id);
        if (s.kind === 'basic' && v.vartype && s.unpackedDims.length === 0) s = types.enumNamed(String(v.vartype)) ?? s;
        // Prefer the package-qualified name (`bus_pkg::op_t`) so a testbench can name the type.
        const declared = s.typeName.includes('::')
          ? s.typeName
          : v.vartype && !['logic', 'port', 'wire', 'reg', 'bit'].includes(v.vartype)
            ? String(v.vartype)
            : s.typeName;
        ports.push({
          name: v.origName ?? v.name,
          direction: v.dir as PortInfo['direction'],
          width: s.width,
          packedDims: s.packedDims,
          unpackedDims: s.unpackedDims,
          signed: s.signed,
          typeName: declared,
          kind: s.kind,
          enumValues: s.enumValues,
          members: s.members,
          line: locLine(v.loc),
        });
      } else if (v.param === 'true' || v.localparam === 'true') {
        params.push({ name: v.origName ?? v.name, value: v.const?.[0]?.name ?? null, isType: false, local: v.localparam === 'true' });
      }
    }
    for (const t of (m.typedef ?? []) as X[]) {
      // Type parameters appear as typedefs of paramtypedtype in the module.
      if (t.dtype_id && String(t.name ?? '').length) {
        const e = (types as unknown as { byId: Map<string, { tag: string }> }).byId.get(String(t.dtype_id));
        if (e?.tag === 'paramtypedtype') params.push({ name: t.name, value: null, isType: true, local: false });
      }
    }
    const instantiates = [...new Set(collectInstances(m))];
    const { edges, comparisons } = collectBehaviour(m);
    const fileId = String(m.loc ?? '').split(',')[0];
    modules.push({
      name: m.origName ?? m.name,
      file: files.get(fileId) ?? '',
      line: locLine(m.loc),
      ports: ports.sort((a, b) => a.line - b.line),
      params,
      instantiates,
      edges,
      comparisons,
    });
  }
  const topCandidates: string[] = [];
  for (const c of (root.cells ?? []) as X[])
    for (const cell of (c.cell ?? []) as X[]) if (cell.submodname) topCandidates.push(String(cell.submodname));
  const realFiles = [...files.values()].filter((f) => !f.startsWith('<'));
  return { topCandidates: [...new Set(topCandidates)], modules, files: realFiles };
}

const COMPARE = new Set(['eq', 'neq', 'eqcase', 'neqcase', 'eqwild', 'neqwild', 'lt', 'lte', 'gt', 'gte', 'lts', 'ltes', 'gts', 'gtes']);

/** Sensitivity edges and compared constants, from the module's netlist body. */
function collectBehaviour(module: X): { edges: ModuleInfo['edges']; comparisons: ModuleInfo['comparisons'] } {
  const edges: ModuleInfo['edges'] = {};
  const comparisons: Record<string, Set<string>> = {};
  const addCmp = (name: string, value: string | undefined): void => {
    if (!value || svLiteralValue(value) === null) return;
    (comparisons[name] ??= new Set()).add(value);
  };
  const asList = (v: unknown): X[] => (Array.isArray(v) ? (v as X[]) : v && typeof v === 'object' ? [v as X] : []);
  // A signal compared through a width extension (an 8-bit address against 32-bit case items):
  // the front end wraps it in extend/extends.
  const refsOf = (n: X): X[] => [
    ...asList(n.varref),
    ...asList(n.extend).flatMap((e) => asList(e.varref)),
    ...asList(n.extends).flatMap((e) => asList(e.varref)),
  ];
  const walk = (n: unknown): void => {
    if (!n || typeof n !== 'object') return;
    if (Array.isArray(n)) return n.forEach(walk);
    const o = n as X;
    for (const [k, v] of Object.entries(o)) {
      if (k === 'senitem') {
        for (const it of asList(v)) {
          const edge = it.edgeType === 'POS' ? 'pos' : it.edgeType === 'NEG' ? 'neg' : undefined;
          const ref = asList(it.varref)[0];
          if (edge && ref?.name) {
            const list = (edges[ref.name] ??= []);
            if (!list.includes(edge)) list.push(edge);
          }
        }
      } else if (COMPARE.has(k)) {
        for (const c of asList(v)) {
          const refs = refsOf(c);
          const consts = asList(c.const);
          if (refs.length === 1 && consts.length === 1) addCmp(refs[0].name, consts[0].name);
        }
      } else if (k === 'case') {
        for (const c of asList(v)) {
          const sel = refsOf(c)[0];
          if (sel?.name) for (const item of asList(c.caseitem)) for (const k2 of asList(item.const)) addCmp(sel.name, k2.name);
        }
      }
      if (typeof v === 'object') walk(v);
    }
  };
  walk(module);
  return { edges, comparisons: Object.fromEntries(Object.entries(comparisons).map(([k, v]) => [k, [...v]])) };
}

function collectInstances(node: X): string[] {
  const out: string[] = [];
  const walk = (n: unknown): void => {
    if (!n || typeof n !== 'object') return;
    if (Array.isArray(n)) return n.forEach(walk);
    const o = n as X;
    for (const [k, v] of Object.entries(o)) {
      if (k === 'instance') for (const i of v as X[]) if (i.defName) out.push(String(i.defName));
      if (typeof v === 'object') walk(v);
    }
  };
  walk(node);
  return out;
}

export function checkFilesExist(design: DesignSpec): void {
  for (const f of [...design.files, ...design.libraryFiles]) {
    if (!existsSync(f))
      throw new DesignError('missing-file', `design file not found: ${f} (check the path, or the file list that names it)`);
    if (statSync(f).isDirectory())
      throw new DesignError('missing-file', `${f} is a directory; pass the design files in it (or a -f file list)`);
  }
  for (const d of design.includeDirs) {
    if (!existsSync(d)) throw new DesignError('missing-file', `include directory not found: ${d}`);
  }
  if (design.files.length === 0)
    throw new DesignError('missing-file', 'no design files were given: name the RTL files (or a -f file list)');
}
