// Stage "build" for the members of a group (group.ts): their verilated models, each under its own
// class prefix (Vtb_m<i>), compile together in as many translation units as the group has slots,
// then each member links its own executable from its unit's object. Compiling a unit pays the
// fixed cost of a translation unit once (measured on the counter: ~0.35 s of template
// instantiation from the runtime headers even with the precompiled header, against ~0.3 s of the
// member's own code) instead of once per member.
//
// Each member's executable holds the other members' code of its unit but constructs only its own
// model: its link maps the plain chorus_model_* names (chorus_main.cpp) to its own suffixed ones,
// and Verilator registers coverage points when a model is constructed, so a member's coverage is
// its own. Whatever fails here (a unit that does not compile, a link) is not a verdict: those
// members build alone, through the one-candidate path, which gives exactly their own result.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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
        await Promise.all(
          unit.members.map(async ([index, m]) => {
            const linked = built.ok && (await linkMember(index, m, built.object, unit, groupDir, tc, runtime));
            if (linked) m.c.timings.build = built.seconds / unit.members.length + linked;
            out.set(index, linked ? { unit: unit.members.length } : 'alone');
          }),
        );
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
  for (const [index, m] of members) {
    const { total } = modelSources(join(m.prep.runDir, 'obj'), m.c.prefix);
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
    const n = Math.max(1, Math.min(slots, Math.floor(list.length / 2)));
    const these: Unit[] = Array.from({ length: n }, () => ({ members: [], bytes: 0, libObject: lib || undefined }));
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
        const obj = join(m.prep.runDir, 'obj');
        const { classes } = modelSources(obj, m.c.prefix);
        return unitText(classes.map((f) => join(obj, f))) + shimText(m.c.prefix, `__m${index}`, join(obj, `${m.c.prefix}.h`));
      })
      .join(''),
  );
  const first = unit.members[0][1].c;
  const limits = unit.members.map(([, m]) => m.c.limits);
  const readOnly = [
    runtime.dir,
    dirname(assetPath('chorus_model.cpp', 'sim/verilator')),
    ...first.view.paths,
    ...unit.members.map(([, m]) => join(m.prep.runDir, 'obj')),
    ...unit.members.flatMap(([, m]) => (m.lib ? [m.lib.dir] : [])),
  ];
  const cmd = toolchainCommand(
    first.jail,
    tc.cxx,
    [...candidateCxxFlags(tc, runtime, []), '-c', '-o', object, src],
    { writable: [groupDir], readOnly: [...new Set(readOnly)], hidden: first.view.hidden, cwd: groupDir, toolDirs: toolDirsOf(tc.cxx) },
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
  return { ok: r.exitCode === 0 && !r.timedOut && !r.cancelled, object, seconds: secondsSince(ts) };
}

/** The member's own executable from its unit's object; the seconds it took, or 0 when it failed. */
async function linkMember(
  index: number,
  m: SharedMember,
  object: string,
  unit: Unit,
  groupDir: string,
  tc: Toolchain,
  runtime: RuntimeBuild,
): Promise<number> {
  const ts = performance.now();
  const r = await m.prep.tool(
    'c++',
    tc.cxx,
    [
      ...(await linkerFlags(tc)),
      ...MODEL_CALLS.map((f) => `-Wl,--defsym=${f}=${f}__m${index}`),
      '-o',
      join(m.prep.runDir, 'Vtb'),
      object,
      ...(unit.libObject ? [unit.libObject] : []),
      ...runtime.objects,
      '-pthread',
      '-latomic',
    ],
    { cwd: join(m.prep.runDir, 'obj'), timeoutS: m.c.limits.buildTimeoutS, outputLimitBytes: 1024 * 1024 },
    [runtime.dir, groupDir, ...(m.lib ? [m.lib.dir] : [])],
  );
  return r.exitCode === 0 && !r.timedOut && !r.cancelled ? Math.max(secondsSince(ts), 1e-6) : 0;
}

/** The members' common signal when they all have the same one (a caller cancelling the group). */
function sharedSignal(signals: Array<AbortSignal | undefined>): AbortSignal | undefined {
  return signals.every((s) => s && s === signals[0]) ? signals[0] : undefined;
}
