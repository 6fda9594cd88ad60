// Stage "build" for the members of a group (group.ts): their verilated models, each under its own
// class prefix (Vtb_m<i>), compile together in as many translation units as the group has slots,
// and each unit links once; every member of the unit runs a copy of that executable in its own run
// directory, its jail setting CHORUS_MEMBER to pick the member's model. Compiling a unit pays the
// fixed cost of a translation unit once (measured on the counter: ~0.35 s of template
// instantiation from the runtime headers even with the precompiled header, against ~0.3 s of the
// member's own code) instead of once per member.
//
// The executable holds every member's code of its unit but constructs only the model CHORUS_MEMBER
// names (the plain chorus_model_* calls of chorus_main.cpp go to that member's suffixed ones), and
// Verilator registers coverage points when a model is constructed, so a member's coverage is its
// own. A testbench cannot read the variable (no DPI, $system or C code passes the check); each
// member's executable is its own copy (place()), and the group's directory is gone before any run
// starts, so no run can change what another runs. Whatever fails here (a unit that does not compile, a link) is not a verdict: those
// members build alone, through the one-candidate path, which gives exactly their own result.
import { chmodSync, constants, copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { toolchainCommand, toolDirsOf } from '../../jail.js';
import { runBounded } from '../../../util/proc.js';
import { trackScratch, untrackScratch } from '../../../util/scratch.js';
import { assetPath } from '../../../util/assets.js';
import { linkerFlags, type RuntimeBuild, type Toolchain } from '../toolchain.js';
import { secondsSince, type SharedMember } from './candidate.js';
import { candidateCxxFlags, modelSources, shimText, unitText } from './build.js';

/** A member whose generated C++ is larger than this builds alone: it would hold its unit back. */
const SHARE_BYTES = 400 * 1024;
/** A unit holds at most this many members and about this much generated C++ (a unit of 16 small
 * members compiles in a few seconds; a failed unit is built again member by member). */
const UNIT_MEMBERS = 16;
const UNIT_BYTES = 4 * 1024 * 1024;
const MODEL_CALLS = [
  'chorus_model_new',
  'chorus_model_eval',
  'chorus_model_events_pending',
  'chorus_model_next_time_slot',
  'chorus_model_final',
  'chorus_model_delete',
];

/** Built in a shared unit of `unit` members, or to be built alone. */
export type SharedVerdict = { unit: number } | 'alone';

interface Unit {
  members: Array<[number, SharedMember]>;
  /** Each member's generated C++ files (its obj/ folder's, read once when the units are planned). */
  classes: Map<number, string[]>;
  bytes: number;
  /** The DUT library object its members link (members of one unit link the same, or none). */
  libObject: string | undefined;
}

/**
 * Builds the members that came (by index) in shared units; `slots`: how many units at most (the
 * group's parallelism). Every member gets its unit's size (runDir/Vtb built) or 'alone'.
 */
export async function buildShared(
  members: Map<number, SharedMember>,
  tc: Toolchain,
  runtime: RuntimeBuild,
  slots: number,
): Promise<Map<number, SharedVerdict>> {
  const out = new Map<number, SharedVerdict>();
  const units = planUnits(members, slots, out);
  if (units.length === 0) return out;
  const groupDir = mkdtempSync(join(tmpdir(), 'chorus-group-'));
  trackScratch(groupDir);
  try {
    await Promise.all(
      units.map(async (unit, k) => {
        const built = await compileUnit(unit, k, groupDir, tc, runtime);
        const linked = built.ok ? await linkUnit(unit, k, built.object, groupDir, tc, runtime) : null;
        for (const [index, m] of unit.members) {
          const placed = linked !== null && place(linked.exe, join(m.runDir, 'Vtb'));
          if (placed) {
            m.c.timings.build = (built.seconds + linked.seconds) / unit.members.length;
            // The shared executable holds every member of its unit: this picks the member's model.
            m.c.sandbox.runEnv = { CHORUS_MEMBER: String(index) };
          }
          out.set(index, placed ? { unit: unit.members.length } : 'alone');
        }
      }),
    );
  } finally {
    rmSync(groupDir, { recursive: true, force: true });
    untrackScratch(groupDir);
  }
  return out;
}

/** The members in units: by DUT library, balanced by size; too large or lonely ones alone. */
function planUnits(members: Map<number, SharedMember>, slots: number, out: Map<number, SharedVerdict>): Unit[] {
  const byLib = new Map<string, Array<[number, SharedMember, number]>>();
  const classes = new Map<number, string[]>();
  for (const [index, m] of members) {
    const sources = modelSources(join(m.runDir, 'obj'), m.c.prefix);
    const total = sources.total;
    classes.set(index, sources.classes);
    if (total === 0 || total > SHARE_BYTES) {
      out.set(index, 'alone');
      continue;
    }
    const key = m.lib?.object ?? '';
    byLib.set(key, [...(byLib.get(key) ?? []), [index, m, total]]);
  }
  const units: Unit[] = [];
  for (const [lib, list] of byLib) {
    if (list.length < 2) {
      for (const [index] of list) out.set(index, 'alone');
      continue;
    }
    // As many units as slots (each unit's fixed cost once per core), more when the members would
    // make a unit too large to finish well inside one member's build limit.
    const bytes = list.reduce((a, x) => a + x[2], 0);
    const n = Math.max(
      1,
      Math.min(Math.floor(list.length / 2), Math.max(slots, Math.ceil(list.length / UNIT_MEMBERS), Math.ceil(bytes / UNIT_BYTES))),
    );
    const these: Unit[] = Array.from({ length: n }, () => ({ members: [], classes, bytes: 0, libObject: lib || undefined }));
    for (const [index, m, total] of [...list].sort((a, b) => b[2] - a[2])) {
      const u = these.reduce((a, b) => (b.bytes < a.bytes ? b : a));
      u.members.push([index, m]);
      u.bytes += total;
    }
    units.push(...these);
  }
  return units;
}

/** One unit's compile in the jail (it reads the members' generated C++, writes the group dir). */
async function compileUnit(
  unit: Unit,
  k: number,
  groupDir: string,
  tc: Toolchain,
  runtime: RuntimeBuild,
): Promise<{ ok: boolean; object: string; seconds: number }> {
  const ts = performance.now();
  const src = join(groupDir, `unit${k}.cpp`);
  const object = join(groupDir, `unit${k}.o`);
  writeFileSync(
    src,
    unit.members
      .map(([index, m]) => {
        const obj = join(m.runDir, 'obj');
        const classes = unit.classes.get(index) ?? [];
        // Current Verilators' <prefix>__pch.h refuses a second model's (VL_PCH_INCLUDED): each
        // member's files are a model of their own here.
        return (
          '#undef VL_PCH_INCLUDED\n' +
          unitText(classes.map((f) => join(obj, f))) +
          shimText(m.c.prefix, `__m${index}`, join(obj, `${m.c.prefix}.h`))
        );
      })
      .join('') + dispatcher(unit.members.map(([index]) => index)),
  );
  const ok = await unitStep(
    unit,
    groupDir,
    tc,
    [...candidateCxxFlags(tc, runtime, []), '-c', '-o', object, src],
    [
      runtime.dir,
      dirname(assetPath('chorus_model.cpp', 'sim/verilator')),
      ...unit.members[0][1].c.view.paths,
      ...unit.members.map(([, m]) => join(m.runDir, 'obj')),
    ],
  );
  return { ok, object, seconds: secondsSince(ts) };
}

/**
 * One compile step of a unit in the jail: it writes the group folder only, reads `readOnly`, the
 * toolchain and the members' DUT libraries, under the tightest of the members' limits, in a slot;
 * cancelled when the members' common signal is. Whether it succeeded.
 */
async function unitStep(unit: Unit, groupDir: string, tc: Toolchain, args: string[], readOnly: string[]): Promise<boolean> {
  const first = unit.members[0][1].c;
  const limits = unit.members.map(([, m]) => m.c.limits);
  const libs = unit.members.flatMap(([, m]) => (m.lib ? [m.lib.dir] : []));
  const cmd = toolchainCommand(
    first.jail,
    tc.cxx,
    args,
    {
      writable: [groupDir],
      readOnly: [...new Set([...readOnly, ...libs])],
      hidden: first.view.hidden,
      cwd: groupDir,
      toolDirs: [...toolDirsOf(tc.verilator, tc.root), ...toolDirsOf(tc.cxx)],
    },
    { memoryLimitMb: Math.min(...limits.map((l) => l.buildMemoryLimitMb ?? Infinity)) },
  );
  const signal = sharedSignal(unit.members.map(([, m]) => m.c.req.signal));
  const r = await first.share!.slot(() =>
    runBounded(cmd.file, cmd.args, {
      cwd: groupDir,
      env: cmd.env,
      timeoutS: Math.min(...limits.map((l) => l.buildTimeoutS)),
      outputLimitBytes: 1024 * 1024,
      ...(signal ? { signal } : {}),
    }),
  );
  if (first.jail.kind !== 'none') for (const [, m] of unit.members) m.c.sandbox.steps.add('c++');
  return r.exitCode === 0 && !r.timedOut && !r.cancelled;
}

/** The unit's executable (every member's model; CHORUS_MEMBER picks one), in the jail. */
async function linkUnit(
  unit: Unit,
  k: number,
  object: string,
  groupDir: string,
  tc: Toolchain,
  runtime: RuntimeBuild,
): Promise<{ exe: string; seconds: number } | null> {
  const ts = performance.now();
  const exe = join(groupDir, `unit${k}`);
  const args = [
    ...(await linkerFlags(tc)),
    '-o',
    exe,
    object,
    ...(unit.libObject ? [unit.libObject] : []),
    ...runtime.objects,
    '-pthread',
    '-latomic',
  ];
  return (await unitStep(unit, groupDir, tc, args, [runtime.dir])) ? { exe, seconds: secondsSince(ts) } : null;
}

/** The shared executable as the member's own runDir/Vtb: a COPY, never a hard link. A run may
 * write in its run directory, and a link would let one member's testbench rewrite the executable
 * another member is about to run (a running executable cannot be written, one that waits can). A
 * reflink where the file system has them (copy on write), else bytes. */
function place(exe: string, at: string): boolean {
  try {
    copyFileSync(exe, at, constants.COPYFILE_FICLONE);
    chmodSync(at, 0o755);
    return true;
  } catch {
    return false;
  }
}

/** The plain chorus_model_* calls (chorus_main.cpp) for a unit: the model of the member that
 * CHORUS_MEMBER names, picked once when the model is made; any other value stops the run. */
function dispatcher(indexes: number[]): string {
  const row = (i: number): string => `  {"${i}", ${MODEL_CALLS.map((f) => `&${f}__m${i}`).join(', ')}},`;
  return [
    '#include <cstdio>',
    '#include <cstdlib>',
    '#include <cstring>',
    'namespace {',
    'struct ChorusMember {',
    '  const char* id;',
    '  void* (*make)(VerilatedContext*);',
    '  void (*eval)(void*);',
    '  bool (*pending)(void*);',
    '  uint64_t (*next)(void*);',
    '  void (*fin)(void*);',
    '  void (*del)(void*);',
    '};',
    'const ChorusMember chorus_members[] = {',
    ...indexes.map(row),
    '};',
    'const ChorusMember* chorus_member = nullptr;',
    '}  // namespace',
    'extern "C" {',
    'void* chorus_model_new(VerilatedContext* c) {',
    '  const char* id = std::getenv("CHORUS_MEMBER");',
    '  for (const ChorusMember& m : chorus_members)',
    '    if (id && std::strcmp(id, m.id) == 0) return (chorus_member = &m)->make(c);',
    '  std::fprintf(stderr, "%%Error: CHORUS_MEMBER does not name a model of this group build\\n");',
    '  std::abort();',
    '}',
    'void chorus_model_eval(void* p) { chorus_member->eval(p); }',
    'bool chorus_model_events_pending(void* p) { return chorus_member->pending(p); }',
    'uint64_t chorus_model_next_time_slot(void* p) { return chorus_member->next(p); }',
    'void chorus_model_final(void* p) { chorus_member->fin(p); }',
    'void chorus_model_delete(void* p) { chorus_member->del(p); }',
    '}',
    '',
  ].join('\n');
}

/** The members' common signal when they all have the same one (a caller cancelling the group). */
function sharedSignal(signals: Array<AbortSignal | undefined>): AbortSignal | undefined {
  return signals.every((s) => s && s === signals[0]) ? signals[0] : undefined;
}
