// Writes the stimulus testbench: readable SystemVerilog, one commented phase per strategy, no
// checks on outputs (stimulus only, as the protocol asks), ends with $finish. Portable: runs under
// Verilator (--timing) and commercial simulators (only IEEE 1800-2017 constructs: no classes,
// no constraints, no clocking blocks).
import type { PortInfo } from '../design/types.js';
import type { Roles } from './roles.js';
import { cornerValues, literal, randomExpr, withNeighbours } from './values.js';
import type { ScaledParam } from './params.js';
import type { ProtocolPlan } from './protocols/detect.js';
import { emitProtocols } from './protocols/emit.js';
import type { LegalityRule } from './legality.js';
import type { PointWitness } from '../coverage/formal.js';

export interface StimulusPlan {
  top: string;
  /** The testbench module's name (default `tb_<top>`). */
  tbModule?: string;
  instance: string;
  params: Record<string, string>;
  roles: Roles;
  seed: number;
  /** Random-phase length in cycles (or vectors for combinational designs). */
  randomCycles: number;
  /** Cycles each held combination of control inputs lasts (counters reach terminal counts). */
  holdCycles: number;
  /** How many held combinations of the 1-bit control inputs to visit. */
  holdCombos: number;
  /** Asynchronous/synchronous resets applied in the middle of the run. */
  midRunResets: number;
  /** Values the design compares each input against (and round feedback adds). */
  constants: Record<string, bigint[]>;
  /** Gate push/pop-like inputs with the DUT's full/empty flags (after an assertion fired). */
  respectFlags: boolean;
  /** Enumerate every input combination when the inputs have at most this many bits. */
  exhaustiveBits: number;
  round: number;
  /** Why this round differs from the last, for the header comment. */
  notes: string[];
  /** Parameters instantiated smaller than their defaults (already in `params`), and why. */
  scaled?: ScaledParam[];
  /** Recognised bus, handshake and serial interfaces: they get bus-functional tasks. */
  protocols?: ProtocolPlan;
  /** What was recognised, in words, for the header comment. */
  protocolNotes?: string[];
  /** Grows with the rounds: more transfers, operations and frames. */
  protocolScale?: number;
  /** Cycles of the constant walk: inputs jump between the constants the design compares them with. */
  walkCycles?: number;
  /** Random segments of earlier rounds that raised coverage, replayed before the new one. */
  elite?: Array<{ round: number; seed: number; cycles: number }>;
  /** Input conditions the design's assertions forbid, learned from failures: applied in every step. */
  legality?: LegalityRule[];
  /** Data inputs rest at zero while a reset is asserted and on the edge after its release. Set for
   * a design with checks (`$past(reset) |-> !valid` is how AXI and Wishbone checkers say it);
   * left off otherwise, since a design may act only on that first edge. */
  idleAroundReset?: boolean;
  /** Input sequences the formal engine found to reach points no round covered (coverage/formal.ts):
   * replayed cycle by cycle, each from reset, before the other directed phases. */
  witnesses?: PointWitness[];
}

/** The seed a round's random segment starts from (round 1 on), so that it can be replayed. */
export function segmentSeed(plan: StimulusPlan): number {
  return (plan.seed * 31 + plan.round) % 2147483647;
}

const ind = (n: number): string => '  '.repeat(n);
/** Design text for a `//` comment: one line, bounded. */
const oneLine = (s: string): string => s.replace(/\s+/g, ' ').slice(0, 120);

function packedDecl(p: PortInfo): string {
  if (p.kind === 'enum') return p.typeName;
  const sign = p.signed && p.kind === 'basic' ? ' signed' : '';
  return p.width === 1 && p.packedDims.length === 0 ? `logic${sign}` : `logic${sign} [${p.width - 1}:0]`;
}

function unpackedSuffix(p: PortInfo): string {
  return p.unpackedDims.map(([l, r]) => `[${l}:${r}]`).join('');
}

/**
 * Verilator 5.006 does not propagate writes made from an `initial` block (a timing coroutine) to
 * an unpacked-array input port after time 0. Such ports are driven through a shadow array that an
 * edge-triggered process copies into the port (a one-step lag, harmless for stimulus).
 */
function driveName(p: PortInfo): string {
  return p.unpackedDims.length ? `${p.name}_drv` : p.name;
}

/** Every element of a (possibly unpacked) port, as assignable expressions. */
function elements(p: PortInfo): string[] {
  let out = [driveName(p)];
  for (const [l, r] of p.unpackedDims) {
    const lo = Math.min(l, r);
    const hi = Math.max(l, r);
    const next: string[] = [];
    for (const e of out) for (let i = lo; i <= hi && next.length < 4096; i++) next.push(`${e}[${i}]`);
    out = next;
  }
  return out;
}

/** `value` as the input's type can take it (an enum needs a cast). */
function typed(p: PortInfo, value: string): string {
  return p.kind === 'enum' ? `${p.typeName}'(${value})` : value;
}

function assignValue(p: PortInfo, target: string, value: string): string {
  return `${target} = ${typed(p, value)};`;
}

/** Every data input (each element of an array) set to zero, at `depth`. */
function zeroInputs(roles: Roles, depth: number): string[] {
  return roles.data.flatMap((p) => elements(p).map((e) => `${ind(depth)}${assignValue(p, e, "'0")}`));
}

/** A random value; enums draw only their legal values. */
function randomAssign(p: PortInfo, target: string): string {
  if (p.kind === 'enum' && p.enumValues?.length) {
    const vals = p.enumValues.map((e) => e.value).join(', ');
    return `begin ${packedLogic(p)} legal[${p.enumValues.length}] = '{${vals}}; ${assignValue(p, target, `legal[$urandom_range(0, ${p.enumValues.length - 1})]`)} end`;
  }
  return assignValue(p, target, randomExpr(p.width));
}

function packedLogic(p: PortInfo): string {
  return p.width === 1 ? 'logic' : `logic [${p.width - 1}:0]`;
}

const FULL = /^(full|o_full|full_o|wr_full|wfull|almost_full|afull)$/i;
const EMPTY = /^(empty|o_empty|empty_o|rd_empty|rempty|almost_empty|aempty)$/i;
const PUSH = /^(push|wr_en|wren|we|write|wr|i_wr|wr_i|put|enq|enqueue|in_valid|s_valid|w_en|winc)$/i;
const POP = /^(pop|rd_en|rden|re|read|rd|i_rd|rd_i|get|deq|dequeue|out_ready|m_ready|r_en|rinc)$/i;
const VALID_IN = /(^|_)(valid|vld|req|start)(_i|_in)?$/i;
const READY_OUT = /(^|_)(ready|rdy|ack|grant|gnt)(_o|_out)?$/i;

type Reset = Roles['resets'][number];
const assertReset = (r: Reset): string => `${r.port.name} = 1'b${r.activeLow ? 0 : 1};`;
const releaseReset = (r: Reset): string => `${r.port.name} = 1'b${r.activeLow ? 1 : 0};`;

/** What the testbench's sections read of the plan: the primary clock, the inputs and outputs
 * some phase treats specially, and the text shared between sections. */
interface Bench {
  plan: StimulusPlan;
  roles: Roles;
  /** The primary clock; undefined for a combinational design. */
  clk: Roles['clocks'][number] | undefined;
  /** 1-bit plain control inputs, held still in phase 5. */
  ctrl: PortInfo[];
  /** Bits of every data input, elements of unpacked arrays included. */
  dataBits: number;
  /** Few enough input bits, and no clock: every combination is enumerated. */
  exhaustive: boolean;
  full?: PortInfo;
  empty?: PortInfo;
  push?: PortInfo;
  pop?: PortInfo;
  validIn?: PortInfo;
  readyOut?: PortInfo;
  /** The edge a step waits for: the one away from the clock's sampling edge ('' without a clock). */
  stepEdge: string;
  /** Unpacked-array inputs, driven through shadow arrays (driveName). */
  shadowed: PortInfo[];
  /** Inputs of the constant walk: a table of their compared constants each (clocked designs only). */
  walk: PortInfo[];
  /** The protocols' bus-functional tasks and phases. */
  proto: { tasks: string[]; phases: string[] };
}

function benchOf(plan: StimulusPlan): Bench {
  const { roles } = plan;
  const clk = roles.clocks[0];
  const dataBits = roles.data.reduce((a, p) => a + p.width * elements(p).length, 0);
  return {
    plan,
    roles,
    clk,
    ctrl: roles.data.filter((p) => p.width === 1 && p.unpackedDims.length === 0 && p.kind !== 'enum'),
    dataBits,
    exhaustive: !clk && dataBits > 0 && dataBits <= plan.exhaustiveBits,
    full: roles.outputs.find((o) => FULL.test(o.name) && o.width === 1),
    empty: roles.outputs.find((o) => EMPTY.test(o.name) && o.width === 1),
    push: roles.data.find((p) => PUSH.test(p.name) && p.width === 1),
    pop: roles.data.find((p) => POP.test(p.name) && p.width === 1),
    validIn: roles.data.find((p) => VALID_IN.test(p.name) && p.width === 1),
    readyOut: roles.outputs.find((o) => READY_OUT.test(o.name) && o.width === 1),
    stepEdge: clk ? (clk.activeEdge === 'pos' ? 'negedge' : 'posedge') : '',
    shadowed: roles.data.filter((p) => p.unpackedDims.length),
    walk: clk
      ? roles.data.filter((p) => p.kind !== 'enum' && p.unpackedDims.length === 0 && (plan.constants[p.name]?.length ?? 0) > 0)
      : [],
    proto:
      plan.protocols && clk
        ? emitProtocols(plan.protocols, plan.constants, plan.protocolScale ?? 1, roles.resets.length > 0)
        : { tasks: [], phases: [] },
  };
}

export function emitTestbench(plan: StimulusPlan): string {
  const b = benchOf(plan);
  const L: string[] = [
    ...headerComment(plan),
    ...declarations(b),
    ...clockGenerators(b),
    ...shadowCopies(b),
    ...legalityState(b),
    ...stepTask(b),
    ...resetTask(b),
    ...b.proto.tasks,
    ...walkTables(b),
    ...driveRandomTask(b),
    ...startPhases(b),
    ...(b.exhaustive ? exhaustivePhase(b) : directedPhases(b)),
    ...finishPhase(b),
  ];
  return L.join('\n') + '\n';
}

/** What wrote the testbench, for which round and seed, and why this round differs. */
function headerComment(plan: StimulusPlan): string[] {
  const L: string[] = [];
  L.push(`// Stimulus testbench for '${plan.top}', written by the CHORUS built-in generator`);
  L.push(`// (model-free, coverage-directed constrained-random). Round ${plan.round + 1}, seed ${plan.seed}.`);
  L.push('// It drives every input and has no checks on outputs: it exists to exercise the design.');
  for (const n of plan.notes) L.push(`// - ${n}`);
  for (const p of plan.scaled ?? []) L.push(`// Parameter ${p.name} scaled from ${p.was} to ${p.value}: ${p.why}.`);
  for (const n of plan.protocolNotes ?? []) L.push(`// Recognised: ${n}.`);
  return L;
}

/** The module header, a variable for every port (and shadow array), and the design's instance. */
function declarations({ plan, roles, shadowed }: Bench): string[] {
  const L: string[] = [];
  L.push('`timescale 1ns/1ps');
  L.push(`module ${plan.tbModule ?? `tb_${plan.top}`};`);
  // Inputs hold their first value from time 0, before any initial block runs: a design's
  // `initial assert (i_reset)` or `initial assume (!i_cyc)` (formal-style checks of the starting
  // state) would otherwise race the testbench's first assignments.
  const at0 = new Map<string, string>([
    ...roles.clocks.map((c): [string, string] => [c.port.name, "1'b0"]),
    ...roles.resets.map((r): [string, string] => [r.port.name, `1'b${r.activeLow ? 0 : 1}`]),
  ]);
  for (const p of [...roles.clocks.map((c) => c.port), ...roles.resets.map((r) => r.port), ...roles.data]) {
    const init = p.unpackedDims.length ? '' : ` = ${at0.get(p.name) ?? typed(p, "'0")}`;
    L.push(`${ind(1)}${packedDecl(p)} ${p.name}${unpackedSuffix(p)}${init};`);
  }
  for (const p of roles.outputs) L.push(`${ind(1)}${packedDecl(p)} ${p.name}${unpackedSuffix(p)};`);
  for (const p of shadowed) L.push(`${ind(1)}${packedDecl(p)} ${driveName(p)}${unpackedSuffix(p)}; // drives ${p.name} (see below)`);
  L.push(`${ind(1)}int unsigned cycle = 0;`);
  L.push('');
  const params = Object.entries(plan.params);
  const paramText = params.length ? ` #(${params.map(([k, v]) => `.${k}(${v})`).join(', ')})` : '';
  const conns = [...roles.clocks.map((c) => c.port), ...roles.resets.map((r) => r.port), ...roles.data, ...roles.outputs];
  L.push(`${ind(1)}${plan.top}${paramText} ${plan.instance} (`);
  L.push(conns.map((p) => `${ind(2)}.${p.name}(${p.name})`).join(',\n'));
  L.push(`${ind(1)});`);
  L.push('');
  return L;
}

function clockGenerators({ roles }: Bench): string[] {
  const L: string[] = [];
  for (const c of roles.clocks) {
    L.push(
      `${ind(1)}// Clock ${c.port.name}: ${2 * c.halfPeriodNs} ns period${roles.clocks.length > 1 ? ` (the clocks run at ${roles.clocks.map((k) => 2 * k.halfPeriodNs).join('/')} ns)` : ''}.`,
    );
    L.push(`${ind(1)}initial ${c.port.name} = 1'b0;`);
    L.push(`${ind(1)}always #${c.halfPeriodNs} ${c.port.name} = ~${c.port.name};`);
  }
  if (roles.clocks.length) L.push('');
  return L;
}

/** The processes copying shadow arrays into unpacked-array inputs (see driveName). */
function shadowCopies({ clk, stepEdge, shadowed }: Bench): string[] {
  const L: string[] = [];
  if (!shadowed.length) return L;
  L.push(`${ind(1)}// Unpacked-array inputs are copied from their shadow arrays on an edge: some simulators`);
  L.push(`${ind(1)}// (Verilator 5.006) miss element writes from an initial block on such ports.`);
  let edge = `${stepEdge} ${clk?.port.name}`;
  if (!clk) {
    L.push(`${ind(1)}logic copy_tick = 1'b0;`);
    L.push(`${ind(1)}always #1 copy_tick = ~copy_tick;`);
    edge = 'posedge copy_tick';
  }
  for (const p of shadowed) L.push(`${ind(1)}always @(${edge}) ${p.name} <= ${driveName(p)};`);
  L.push('');
  return L;
}

/** What the legality rules remember between steps (an antecedent that matched, a past value),
 * sampled at the property's own clock. */
function legalityState({ plan }: Bench): string[] {
  const L: string[] = [];
  const decls = [...new Set((plan.legality ?? []).flatMap((r) => r.declarations ?? []))];
  if (decls.length) {
    L.push(`${ind(1)}// State of the design's properties that the legal stimulus follows:`);
    for (const d of decls) L.push(`${ind(1)}${d}`);
    L.push('');
  }
  return L;
}

/** Step: one cycle of the primary clock, inputs change away from the sampling edge. */
function stepTask({ plan, clk, stepEdge, push, full, pop, empty }: Bench): string[] {
  const L: string[] = [];
  L.push(
    `${ind(1)}// One stimulus step: ${clk ? `wait for the ${stepEdge} of ${clk.port.name} (inputs change away from the sampling edge)` : 'let the combinational logic settle'}.`,
  );
  L.push(`${ind(1)}task automatic step();`);
  if (plan.respectFlags && ((push && full) || (pop && empty))) {
    // Whatever the phase assigned, never push into a full or pop from an empty design.
    if (push && full) L.push(`${ind(2)}if (${full.name}) ${push.name} = 1'b0;`);
    if (pop && empty) L.push(`${ind(2)}if (${empty.name}) ${pop.name} = 1'b0;`);
  }
  const rules = plan.legality ?? [];
  if (rules.length) {
    // Whatever the phase assigned, never the input conditions the design's assertions forbid:
    // once before the design sees the new inputs, and again once outputs that follow the inputs
    // combinationally have settled (still before the sampling edge).
    const gate = (): void => {
      for (const r of rules) for (const s of r.statements) L.push(`${ind(2)}${s}`);
    };
    L.push(`${ind(2)}// Legal stimulus only (from the design's assertions):`);
    for (const r of rules) L.push(`${ind(2)}// - ${r.why}`);
    gate();
    if (clk) {
      L.push(`${ind(2)}#1;`);
      gate();
    }
  }
  L.push(clk ? `${ind(2)}@(${stepEdge} ${clk.port.name});` : `${ind(2)}#5;`);
  L.push(`${ind(2)}cycle++;`);
  L.push(`${ind(1)}endtask`);
  L.push('');
  return L;
}

/** The reset task: every reset asserted for some steps, then released; with `idleAroundReset`,
 * every data input at zero throughout and for one more step (a design may check that nothing
 * starts during a reset or on the edge after it). */
function resetTask({ plan, roles }: Bench): string[] {
  const L: string[] = [];
  if (!roles.resets.length) return L;
  L.push(
    `${ind(1)}// Reset: ${roles.resets.map((r) => `${r.port.name} (active-${r.activeLow ? 'low' : 'high'}, ${r.async ? 'asynchronous' : 'synchronous'}${r.evidence ? `: ${oneLine(r.evidence)}` : ''})`).join(', ')}.`,
  );
  L.push(`${ind(1)}task automatic apply_reset(int unsigned cycles);`);
  for (const r of roles.resets) L.push(`${ind(2)}${assertReset(r)}`);
  if (plan.idleAroundReset) L.push(...zeroInputs(roles, 2));
  L.push(`${ind(2)}repeat (cycles) step();`);
  if (roles.resets.some((r) => r.async)) L.push(`${ind(2)}#1;`);
  for (const r of roles.resets) L.push(`${ind(2)}${releaseReset(r)}`);
  if (plan.idleAroundReset) L.push(`${ind(2)}step();`);
  L.push(`${ind(1)}endtask`);
  L.push('');
  return L;
}

/** The constants an input is compared against, and their neighbours: 64 at most. */
function comparedValues(plan: StimulusPlan, p: PortInfo): bigint[] {
  return [...new Set(plan.constants[p.name].flatMap((v) => withNeighbours(p.width, v)))].slice(0, 64);
}

/** Constant walk: module-level tables of the constants each input is compared against. */
function walkTables({ plan, walk }: Bench): string[] {
  const L: string[] = [];
  for (const p of walk) {
    const vals = comparedValues(plan, p);
    L.push(`${ind(1)}${packedLogic(p)} walk_${p.name} [${vals.length}] = '{${vals.map((v) => literal(p.width, v)).join(', ')}};`);
  }
  if (walk.length) L.push('');
  return L;
}

/** Random drive of all data inputs, with handshake/flag awareness. */
function driveRandomTask({ plan, roles, validIn, readyOut, push, full, pop, empty }: Bench): string[] {
  const L: string[] = [];
  L.push(`${ind(1)}// Uniform random values on every data input${plan.respectFlags ? ", respecting the DUT's full/empty flags" : ''}.`);
  L.push(`${ind(1)}task automatic drive_random();`);
  for (const p of roles.data) {
    for (const e of elements(p)) {
      if (validIn && readyOut && p !== validIn && p.width > 1) {
        // Hold data stable while a transfer is offered and not yet accepted.
        L.push(`${ind(2)}if (!(${validIn.name} && !${readyOut.name})) ${randomAssign(p, e)}`);
      } else if (plan.respectFlags && p === push && full) {
        L.push(`${ind(2)}${e} = !${full.name} && ($urandom_range(0, 3) != 0);`);
      } else if (plan.respectFlags && p === pop && empty) {
        L.push(`${ind(2)}${e} = !${empty.name} && ($urandom_range(0, 3) != 0);`);
      } else if (validIn && readyOut && p === validIn) {
        L.push(`${ind(2)}if (!(${validIn.name} && !${readyOut.name})) ${validIn.name} = $urandom_range(0, 2) != 0;`);
      } else {
        L.push(`${ind(2)}${randomAssign(p, e)}`);
      }
    }
  }
  L.push(`${ind(1)}endtask`);
  L.push('');
  return L;
}

/** The initial block's start: the seed, phase 0 (all inputs zero) and phase 1 (reset). */
function startPhases({ plan, roles }: Bench): string[] {
  const L: string[] = [];
  L.push(`${ind(1)}initial begin`);
  L.push(`${ind(2)}void'($urandom(${plan.seed})); // seed the stimulus`);
  L.push(`${ind(2)}// Phase 0: every input at zero${roles.resets.length ? ', reset asserted' : ''}.`);
  L.push(...zeroInputs(roles, 2));
  for (const r of roles.resets) L.push(`${ind(2)}${assertReset(r)}`);
  if (roles.resets.length) {
    L.push(`${ind(2)}// Phase 1: reset for a few cycles, then release.`);
    L.push(`${ind(2)}apply_reset(3);`);
  } else {
    L.push(`${ind(2)}step();`);
  }
  return L;
}

/** Phase 2 of a small combinational design: every input combination, up and then down. */
function exhaustivePhase({ roles, dataBits }: Bench): string[] {
  const L: string[] = [];
  const flat = roles.data.flatMap((p) => elements(p).map((e) => ({ p, e })));
  const concat = flat.map((x) => x.e).join(', ');
  L.push(`${ind(2)}// Phase 2: exhaustive: every one of the 2^${dataBits} input combinations, then back to zero.`);
  L.push(`${ind(2)}for (longint unsigned v = 0; v < ${2n ** BigInt(dataBits)}; v++) begin`);
  if (flat.some((x) => x.p.kind === 'enum')) {
    L.push(`${ind(3)}automatic logic [${dataBits - 1}:0] bits = ${dataBits}'(v);`);
    let hi = dataBits - 1;
    for (const { p, e } of flat) {
      L.push(`${ind(3)}${assignValue(p, e, `bits[${hi}:${hi - p.width + 1}]`)}`);
      hi -= p.width;
    }
  } else {
    L.push(`${ind(3)}{${concat}} = ${dataBits}'(v);`);
  }
  L.push(`${ind(3)}step();`);
  L.push(`${ind(2)}end`);
  L.push(`${ind(2)}{${concat}} = '0;`);
  L.push(`${ind(2)}step();`);
  // A second, descending sweep gives every bit a second pair of transitions.
  L.push(`${ind(2)}for (longint unsigned v = ${2n ** BigInt(dataBits)}; v > 0; v--) begin`);
  L.push(`${ind(3)}{${concat}} = ${dataBits}'(v - 1);`);
  L.push(`${ind(3)}step();`);
  L.push(`${ind(2)}end`);
  return L;
}

/**
 * The formal engine's witnesses, each a sequence of input values per clock cycle from the design's
 * initial state: replayed from reset (the first right after the opening reset), the clocks left
 * to their generators. Only the design's own input ports are driven (by name), each value cast to
 * the port's width; a port the witness does not name keeps its value.
 */
function witnessPhase({ plan, roles }: Bench): string[] {
  const L: string[] = [];
  const ws = plan.witnesses ?? [];
  if (!ws.length) return L;
  const ports = new Map(
    [...roles.data, ...roles.resets.map((r) => r.port)].filter((p) => p.unpackedDims.length === 0).map((p) => [p.name, p]),
  );
  L.push(`${ind(2)}// Phase W: input sequences the formal engine found to reach points no round covered, each from reset.`);
  ws.forEach((w, k) => {
    L.push(
      `${ind(2)}// - ${oneLine(`${w.file.replace(/^.*\//, '')}:${w.line} (${w.label})`)}: ${w.witness.frames.length} cycle${w.witness.frames.length === 1 ? '' : 's'}`,
    );
    if (k > 0 && roles.resets.length) L.push(`${ind(2)}apply_reset(1);`);
    for (const frame of w.witness.frames) {
      const sets: string[] = [];
      for (const [name, hex] of Object.entries(frame)) {
        const p = ports.get(name);
        if (!p || !/^[0-9a-f]+$/.test(hex)) continue;
        sets.push(assignValue(p, p.name, `${p.width}'h${hex}`));
      }
      L.push(`${ind(2)}${[...sets, 'step();'].join(' ')}`);
    }
  });
  return L;
}

/** Phases 2 to 6 of any other design: directed values, then random stimulus, held controls and
 * resets in the middle of activity. */
function directedPhases(b: Bench): string[] {
  return [
    ...witnessPhase(b),
    ...cornerPhase(b),
    ...equalOperandsPhase(b),
    ...arrayArrangementsPhase(b),
    ...comparedConstantsPhase(b),
    ...constantWalkPhase(b),
    ...b.proto.phases,
    ...randomPhases(b),
    ...heldControlsPhase(b),
    ...midRunResetPhase(b),
    `${ind(2)}repeat (${Math.max(16, Math.floor(b.plan.randomCycles / 4))}) begin drive_random(); step(); end`,
  ];
}

/** Corners per input, one at a time, the others random. */
function cornerPhase({ roles }: Bench): string[] {
  const L: string[] = [];
  L.push(`${ind(2)}// Phase 2: corner values on each data input (zero, all ones, MSB only, LSB, alternating, walking ones).`);
  for (const p of roles.data) {
    if (p.kind === 'enum') {
      for (const ev of p.enumValues ?? [])
        for (const e of elements(p).slice(0, 8)) L.push(`${ind(2)}${assignValue(p, e, ev.value)} step();`);
      continue;
    }
    const corners = cornerValues(p.width);
    for (const e of elements(p).slice(0, 16)) {
      L.push(`${ind(2)}drive_random();`);
      for (const v of corners) L.push(`${ind(2)}${e} = ${literal(p.width, v)}; step();`);
      if (p.width > 2 && p.width <= 256) {
        L.push(`${ind(2)}for (int i = 0; i < ${p.width}; i++) begin ${e} = ${p.width}'(1) << i; step(); end`);
      }
      L.push(`${ind(2)}${e} = '0; step();`);
    }
  }
  return L;
}

/** Equal operands: inputs of the same width take the same value (comparators, `a == b` arms,
 * subtraction to zero), at every corner and at random. */
function equalOperandsPhase({ roles }: Bench): string[] {
  const L: string[] = [];
  const byWidth = new Map<number, PortInfo[]>();
  for (const p of roles.data)
    if (p.kind !== 'enum' && p.width >= 2 && p.unpackedDims.length === 0) byWidth.set(p.width, [...(byWidth.get(p.width) ?? []), p]);
  const equal = [...byWidth.entries()].filter(([, ps]) => ps.length >= 2);
  if (!equal.length) return L;
  L.push(`${ind(2)}// Phase 2b: equal operands: inputs of the same width take the same value (corners, then random).`);
  for (const [w, ps] of equal) {
    for (const v of cornerValues(w)) L.push(`${ind(2)}drive_random(); ${ps.map((p) => `${p.name} = ${literal(w, v)};`).join(' ')} step();`);
    L.push(
      `${ind(2)}repeat (8) begin logic [${w - 1}:0] v; v = ${randomExpr(w)}; drive_random(); ${ps.map((p) => `${p.name} = v;`).join(' ')} step(); end`,
    );
  }
  return L;
}

/** Unpacked-array inputs: arrangements of the elements (all equal, ascending, descending). */
function arrayArrangementsPhase({ roles }: Bench): string[] {
  const L: string[] = [];
  const arrays = roles.data.filter(
    (p) => p.kind !== 'enum' && p.unpackedDims.length && elements(p).length > 1 && elements(p).length <= 256,
  );
  if (!arrays.length) return L;
  L.push(`${ind(2)}// Phase 2c: array inputs arranged: all elements equal, ascending, descending (sorters, max/min, search).`);
  for (const p of arrays) {
    const els = elements(p);
    const w = p.width;
    const at = (k: number, e: string): string => `${w}'(${e} + ${k})`;
    for (const v of [0n, (1n << BigInt(w)) - 1n, 1n])
      L.push(`${ind(2)}drive_random(); ${els.map((e) => `${e} = ${literal(w, v)};`).join(' ')} step(); step();`);
    L.push(
      `${ind(2)}repeat (4) begin logic [${w - 1}:0] v; v = ${randomExpr(w)}; drive_random(); ${els.map((e) => `${e} = v;`).join(' ')} step(); step(); end`,
    );
    L.push(`${ind(2)}drive_random(); ${els.map((e, k) => `${e} = ${w}'(${k});`).join(' ')} step(); step();`);
    L.push(`${ind(2)}drive_random(); ${els.map((e, k) => `${e} = ${w}'(${els.length - 1 - k});`).join(' ')} step(); step();`);
    L.push(
      `${ind(2)}repeat (4) begin logic [${w - 1}:0] v; v = ${randomExpr(w)}; drive_random(); ${els.map((e, k) => `${e} = ${at(k, 'v')};`).join(' ')} step(); step(); end`,
    );
    L.push(
      `${ind(2)}repeat (4) begin logic [${w - 1}:0] v; v = ${randomExpr(w)}; drive_random(); ${els.map((e, k) => `${e} = ${at(els.length - 1 - k, 'v')};`).join(' ')} step(); step(); end`,
    );
  }
  return L;
}

/** Constants the design compares inputs against. */
function comparedConstantsPhase({ plan, roles }: Bench): string[] {
  const L: string[] = [];
  const withConst = roles.data.filter((p) => (plan.constants[p.name]?.length ?? 0) > 0 && p.kind !== 'enum');
  if (!withConst.length) return L;
  L.push(`${ind(2)}// Phase 3: values the design compares its inputs against, and their neighbours.`);
  for (const p of withConst) {
    const vals = comparedValues(plan, p);
    for (const e of elements(p).slice(0, 8)) {
      for (const v of vals) L.push(`${ind(2)}drive_random(); ${e} = ${literal(p.width, v)}; step(); step();`);
    }
  }
  return L;
}

/** The constant walk over the tables of walkTables. */
function constantWalkPhase({ plan, walk }: Bench): string[] {
  const L: string[] = [];
  if (!walk.length || (plan.walkCycles ?? 0) <= 0) return L;
  L.push(
    `${ind(2)}// Phase 3b: constant walk, ${plan.walkCycles} cycles: each of ${walk.map((p) => p.name).join(', ')} takes one of its compared`,
  );
  L.push(`${ind(2)}// constants (or a neighbour) three times in four, so sequences of them (codes, commands) occur.`);
  L.push(`${ind(2)}repeat (${plan.walkCycles}) begin`);
  L.push(`${ind(3)}drive_random();`);
  for (const p of walk)
    L.push(`${ind(3)}if ($urandom_range(0, 3) != 0) ${p.name} = walk_${p.name}[$urandom_range(0, $size(walk_${p.name}) - 1)];`);
  L.push(`${ind(3)}step();`);
  L.push(`${ind(2)}end`);
  return L;
}

/** `cycles` of random stimulus, with an occasional reset when the design has one. */
function randomBody(roles: Roles, cycles: number): string[] {
  const L: string[] = [];
  L.push(`${ind(2)}repeat (${cycles}) begin`);
  L.push(`${ind(3)}drive_random();`);
  if (roles.resets.length) {
    // Through the reset task (with idleAroundReset, the data inputs rest during it and after).
    L.push(`${ind(3)}if ($urandom_range(0, 199) == 0) apply_reset(1);`);
  }
  L.push(`${ind(3)}step();`);
  L.push(`${ind(2)}end`);
  return L;
}

/** Random phase. From round 1 on the segment is seeded at its start, so a later round can replay
 * it exactly (the search keeps segments that raised coverage and adds new ones). */
function randomPhases({ plan, roles }: Bench): string[] {
  const L: string[] = [];
  for (const e of plan.elite ?? []) {
    L.push(
      `${ind(2)}// Phase 4e: replay of round ${e.round + 1}'s random segment (seed ${e.seed}, ${e.cycles} cycles): it raised coverage.`,
    );
    L.push(`${ind(2)}void'($urandom(${e.seed}));`);
    L.push(...randomBody(roles, e.cycles));
  }
  L.push(
    `${ind(2)}// Phase 4: ${plan.randomCycles} cycles of uniform random stimulus${roles.resets.length ? ', with an occasional reset' : ''}.`,
  );
  if (plan.round > 0) L.push(`${ind(2)}void'($urandom(${segmentSeed(plan)}));`);
  L.push(...randomBody(roles, plan.randomCycles));
  return L;
}

/** Held control inputs: long runs with each combination of 1-bit controls held still (one long
 * run without reset when there are no such controls). */
function heldControlsPhase({ plan, clk, ctrl }: Bench): string[] {
  const L: string[] = [];
  if (clk && !ctrl.length && plan.holdCycles > 0) {
    L.push(
      `${ind(2)}// Phase 5: one long run of ${plan.holdCycles} cycles with no reset, so counters and timers reach their terminal values.`,
    );
    L.push(`${ind(2)}repeat (${plan.holdCycles}) begin drive_random(); step(); end`);
  }
  if (clk && ctrl.length && plan.holdCombos > 0 && plan.holdCycles > 0) {
    const combos = Math.min(plan.holdCombos, 2 ** Math.min(ctrl.length, 16));
    L.push(
      `${ind(2)}// Phase 5: ${combos} combinations of the 1-bit controls (${ctrl.map((c) => c.name).join(', ')}) each held for ${plan.holdCycles} cycles,`,
    );
    L.push(`${ind(2)}// so counters and timers reach their terminal values; wide data stays random.`);
    L.push(`${ind(2)}for (int unsigned combo = 0; combo < ${combos}; combo++) begin`);
    L.push(
      // automatic: a block variable of a static initial is static, and a static variable's
      // initializer may not read the loop's automatic counter (IEEE 1800-2017 6.21).
      `${ind(3)}automatic logic [${ctrl.length - 1}:0] held = ${combos >= 2 ** ctrl.length ? `${ctrl.length}'(combo)` : randomExpr(ctrl.length)};`,
    );
    L.push(`${ind(3)}repeat (${plan.holdCycles}) begin`);
    L.push(`${ind(4)}drive_random();`);
    L.push(`${ind(4)}{${ctrl.map((c) => c.name).join(', ')}} = held;`);
    L.push(`${ind(4)}step();`);
    L.push(`${ind(3)}end`);
    L.push(`${ind(2)}end`);
  }
  return L;
}

/** Mid-run resets: an asynchronous one also between clock edges. */
function midRunResetPhase({ plan, roles, clk }: Bench): string[] {
  const L: string[] = [];
  if (!roles.resets.length || plan.midRunResets <= 0) return L;
  L.push(`${ind(2)}// Phase 6: reset in the middle of activity, ${plan.midRunResets} time(s), then more random stimulus.`);
  L.push(`${ind(2)}repeat (${plan.midRunResets}) begin`);
  L.push(`${ind(3)}repeat (${Math.max(8, Math.floor(plan.randomCycles / 8))}) begin drive_random(); step(); end`);
  const asyncReset = roles.resets.find((r) => r.async);
  if (asyncReset && clk) {
    L.push(`${ind(3)}#${Math.max(1, Math.floor(clk.halfPeriodNs / 2))} ${assertReset(asyncReset)} // asynchronous: between clock edges`);
    L.push(`${ind(3)}#2 ${releaseReset(asyncReset)}`);
  }
  L.push(`${ind(3)}apply_reset(2);`);
  L.push(`${ind(2)}end`);
  return L;
}

/** Finish: all inputs back to zero so every bit has moved both ways. */
function finishPhase({ roles }: Bench): string[] {
  const L: string[] = [];
  L.push(`${ind(2)}// Finish: all inputs back to zero so every bit has moved both ways.`);
  L.push(...zeroInputs(roles, 2));
  L.push(`${ind(2)}step();`);
  L.push(`${ind(2)}step();`);
  L.push(`${ind(2)}$finish;`);
  L.push(`${ind(1)}end`);
  L.push('endmodule');
  return L;
}
