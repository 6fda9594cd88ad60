// Bus-functional tasks and their phases for the recognised protocols: legal transfers (single,
// back-to-back, with idle gaps, reads after writes) over every decoded register and some
// unmapped addresses; start/done and req/ack operations with bounded waits and operands at both
// ends of the latency range; framed serial traffic with parity, stop-bit and break errors.
// Plain IEEE 1800-2017: tasks, loops and bounded while-waits, no classes, no output checks.
import type { PortInfo } from '../../design/types.js';
import { literal, randomExpr } from '../values.js';
import { busAddr, type BusPlan, type HandshakePlan, type ProtocolPlan, type SerialPlan, type StreamPlan } from './detect.js';

const ind = (n: number): string => '  '.repeat(n);
const vec = (w: number): string => (w === 1 ? 'logic' : `logic [${w - 1}:0]`);
const ones = (w: number): bigint => (1n << BigInt(w)) - 1n;
function alt(w: number): bigint {
  let v = 0n;
  for (let i = 0; i < w; i += 2) v |= 1n << BigInt(i);
  return v;
}
/** `bound` cycles at most: `while (!(cond) && n < bound) step();` with its own counter. */
function waitFor(cond: string, bound: number, depth: number): string {
  return `${ind(depth)}begin int unsigned n = 0; while (!(${cond}) && n < ${bound}) begin step(); n++; end end`;
}
/**
 * A bus transfer completes at the clock edge where the slave's ready/ack is high: look at it
 * before each edge (after a settle delay, for a ready that follows the request combinationally),
 * step until it is high (bounded), then take that edge.
 */
function completeOn(ready: string, bound: number, depth: number): string {
  return `${ind(depth)}begin int unsigned n = 0; #1; while (!(${ready}) && n < ${bound}) begin step(); #1; n++; end step(); end`;
}
const lvl = (p: PortInfo, v: 0 | 1): string => `${p.name} = 1'b${v};`;
const WAIT = 16;

function busTasks(b: BusPlan, i: number): string[] {
  const L: string[] = [];
  const aw = b.addrWidth;
  const dw = b.dataWidth;
  const pre = `bus${i}`;
  const wr = `task automatic ${pre}_write(input logic [${aw - 1}:0] a, input logic [${dw - 1}:0] d);`;
  const rd = `task automatic ${pre}_read(input logic [${aw - 1}:0] a);`;
  const bus = b.bus;
  const setData = (d: string): string => (bus.wdata ? `${bus.wdata.name} = ${bus.wdata.width}'(${d}); ` : '');
  switch (bus.kind) {
    case 'apb': {
      const strb = bus.strb ? `${bus.strb.name} = ${pre}_strb; ` : '';
      const prot = bus.prot ? `${bus.prot.name} = '0; ` : '';
      const access = (write: 0 | 1, d: string): string[] => [
        `${ind(2)}${bus.sel.name} = 1'b1; ${bus.enable.name} = 1'b0; ${bus.write.name} = 1'b${write}; ${bus.addr.name} = ${bus.addr.width}'(a); ${write ? setData(d) : ''}${strb}${prot}step(); // setup`,
        `${ind(2)}${bus.enable.name} = 1'b1; // access`,
        bus.ready ? completeOn(bus.ready.name, WAIT, 2) + ' // until the slave is ready (its wait states)' : `${ind(2)}step();`,
        `${ind(2)}${bus.sel.name} = 1'b0; ${bus.enable.name} = 1'b0;`,
      ];
      if (bus.strb) L.push(`${ind(1)}logic [${bus.strb.width - 1}:0] ${pre}_strb = '1; // byte strobes for writes (varied below)`);
      L.push(`${ind(1)}// APB: setup phase, access phase, then wait for ${bus.ready ? bus.ready.name : 'the next cycle'} (bounded).`);
      L.push(`${ind(1)}${wr}`, ...access(1, 'd'), `${ind(1)}endtask`);
      L.push(`${ind(1)}${rd}`, ...access(0, '0'), `${ind(1)}endtask`);
      break;
    }
    case 'ahb-lite': {
      const sz = bus.size ? Math.min(Math.max(0, Math.round(Math.log2(Math.max(8, dw) / 8))), 2 ** bus.size.width - 1) : 0;
      if (bus.size)
        L.push(
          `${ind(1)}logic [${bus.size.width - 1}:0] ${pre}_size = ${bus.size.width}'d${sz}; // transfer size (an illegal one is tried below)`,
        );
      const addrPhase = (write: 0 | 1): string =>
        `${ind(2)}${bus.sel ? `${bus.sel.name} = 1'b1; ` : ''}${bus.trans.name} = 2'b10; ${bus.write.name} = 1'b${write}; ${bus.addr.name} = ${bus.addr.width}'(a); ${bus.size ? `${bus.size.name} = ${pre}_size; ` : ''}${bus.burst ? `${bus.burst.name} = '0; ` : ''}${bus.readyIn ? `${bus.readyIn.name} = 1'b1; ` : ''}step(); // address phase (NONSEQ)`;
      const dataPhase = (write: 0 | 1, d: string): string[] => [
        `${ind(2)}${bus.trans.name} = 2'b00; ${write ? setData(d) : ''}// data phase`,
        bus.readyOut ? completeOn(bus.readyOut.name, WAIT, 2) + ' // until the slave is ready (its wait states)' : `${ind(2)}step();`,
        `${ind(2)}${bus.sel ? `${bus.sel.name} = 1'b0; ` : ''}`,
      ];
      L.push(`${ind(1)}// AHB-Lite: address phase then data phase, waiting for ${bus.readyOut?.name ?? 'one cycle'} (bounded).`);
      L.push(`${ind(1)}${wr}`, addrPhase(1), ...dataPhase(1, 'd'), `${ind(1)}endtask`);
      L.push(`${ind(1)}${rd}`, addrPhase(0), ...dataPhase(0, '0'), `${ind(1)}endtask`);
      break;
    }
    case 'axi4-lite': {
      L.push(`${ind(1)}// AXI4-Lite: address and data channels handshake independently; then the response channel.`);
      L.push(`${ind(1)}${wr}`);
      L.push(`${ind(2)}logic aw_ok, w_ok; int unsigned n = 0;`);
      L.push(
        `${ind(2)}${bus.awaddr.name} = ${bus.awaddr.width}'(a); ${bus.awvalid.name} = 1'b1; ${setData('d')}${bus.wstrb ? `${bus.wstrb.name} = '1; ` : ''}${bus.wvalid.name} = 1'b1;${bus.bready ? ` ${bus.bready.name} = 1'b0;` : ''}`,
      );
      L.push(`${ind(2)}while ((${bus.awvalid.name} || ${bus.wvalid.name}) && n < ${WAIT}) begin`);
      L.push(`${ind(3)}#1; aw_ok = ${bus.awready ? bus.awready.name : "1'b1"}; w_ok = ${bus.wready ? bus.wready.name : "1'b1"};`);
      L.push(`${ind(3)}step(); n++;`);
      L.push(`${ind(3)}if (aw_ok) ${bus.awvalid.name} = 1'b0; if (w_ok) ${bus.wvalid.name} = 1'b0;`);
      L.push(`${ind(2)}end`);
      L.push(`${ind(2)}${bus.awvalid.name} = 1'b0; ${bus.wvalid.name} = 1'b0;`);
      if (bus.bready) L.push(`${ind(2)}${bus.bready.name} = 1'b1;`);
      if (bus.bvalid) L.push(waitFor(bus.bvalid.name, WAIT, 2));
      L.push(`${ind(2)}step();${bus.bready ? ` ${bus.bready.name} = 1'b0;` : ''}`);
      L.push(`${ind(1)}endtask`);
      L.push(`${ind(1)}${rd}`);
      if (bus.araddr && bus.arvalid) {
        L.push(`${ind(2)}logic ar_ok; int unsigned n = 0;`);
        L.push(
          `${ind(2)}${bus.araddr.name} = ${bus.araddr.width}'(a); ${bus.arvalid.name} = 1'b1;${bus.rready ? ` ${bus.rready.name} = 1'b0;` : ''}`,
        );
        L.push(
          `${ind(2)}while (${bus.arvalid.name} && n < ${WAIT}) begin #1; ar_ok = ${bus.arready ? bus.arready.name : "1'b1"}; step(); n++; if (ar_ok) ${bus.arvalid.name} = 1'b0; end`,
        );
        L.push(`${ind(2)}${bus.arvalid.name} = 1'b0;`);
        if (bus.rready) L.push(`${ind(2)}${bus.rready.name} = 1'b1;`);
        if (bus.rvalid) L.push(waitFor(bus.rvalid.name, WAIT, 2));
        L.push(`${ind(2)}step();${bus.rready ? ` ${bus.rready.name} = 1'b0;` : ''}`);
      } else {
        L.push(`${ind(2)}step();`);
      }
      L.push(`${ind(1)}endtask`);
      break;
    }
    case 'wishbone': {
      const cyc = (v: 0 | 1): string => (bus.cyc ? `${bus.cyc.name} = 1'b${v}; ` : '');
      const body = (write: 0 | 1, d: string): string[] => [
        `${ind(2)}${cyc(1)}${bus.stb.name} = 1'b1; ${bus.we.name} = 1'b${write}; ${bus.addr.name} = ${bus.addr.width}'(a); ${write ? setData(d) : ''}${bus.sel ? `${bus.sel.name} = '1; ` : ''}`,
        bus.ack ? completeOn(bus.ack.name, WAIT, 2) + ' // until acknowledged' : `${ind(2)}step();`,
        `${ind(2)}${cyc(0)}${bus.stb.name} = 1'b0; ${bus.we.name} = 1'b0;`,
      ];
      L.push(`${ind(1)}// Wishbone classic cycle: CYC/STB until ${bus.ack?.name ?? 'one cycle'} (bounded).`);
      L.push(`${ind(1)}${wr}`, ...body(1, 'd'), `${ind(1)}endtask`);
      L.push(`${ind(1)}${rd}`, ...body(0, '0'), `${ind(1)}endtask`);
      break;
    }
    case 'regfile': {
      const w = bus.write;
      const r = bus.read;
      const idle = `${w ? lvl(w.port, (1 - w.active) as 0 | 1) + ' ' : ''}${r ? lvl(r.port, (1 - r.active) as 0 | 1) : ''}`;
      L.push(
        `${ind(1)}// Register-file port: address, data and ${w ? `${w.port.name} (write when ${w.active})` : ''}${w && r ? ', ' : ''}${r ? `${r.port.name} (read when ${r.active})` : ''}.`,
      );
      L.push(`${ind(1)}${wr}`);
      L.push(
        `${ind(2)}${bus.addr.name} = ${bus.addr.width}'(a); ${setData('d')}${w ? lvl(w.port, w.active) : ''}${r ? ' ' + lvl(r.port, (1 - r.active) as 0 | 1) : ''} step();`,
      );
      L.push(`${ind(2)}${idle}`);
      L.push(`${ind(1)}endtask`);
      L.push(`${ind(1)}${rd}`);
      L.push(
        `${ind(2)}${bus.raddr ? `${bus.raddr.name} = ${bus.raddr.width}'(a); ` : ''}${bus.addr.name} = ${bus.addr.width}'(a); ${w ? lvl(w.port, (1 - w.active) as 0 | 1) : ''}${r ? ' ' + lvl(r.port, r.active) : ''} step();`,
      );
      L.push(`${ind(2)}${idle}`);
      L.push(`${ind(1)}endtask`);
      break;
    }
  }
  return L;
}

function addrList(b: BusPlan): bigint[] {
  return [...new Set([...b.mapped, ...b.unmapped, ...b.sweep])];
}

function busPhase(b: BusPlan, i: number, transfers: number): string[] {
  const L: string[] = [];
  const pre = `bus${i}`;
  const aw = b.addrWidth;
  const dw = b.dataWidth;
  const A = (v: bigint): string => literal(aw, v);
  const D = (v: bigint): string => literal(dw, v);
  const all = addrList(b);
  const patterns = [ones(dw), 0n, alt(dw), ones(dw) ^ alt(dw)];
  L.push(
    `${ind(2)}// Phase P${i}a: ${b.bus.kind} transfers on ${busAddr(b.bus).name}: each address (decoded registers, unmapped ones for the`,
  );
  L.push(
    `${ind(2)}// error response${b.sweep.length ? ', the whole space' : ''}) written with all-ones, zeros and alternating bits, each write read back.`,
  );
  L.push(`${ind(2)}foreach (${pre}_addrs[k]) begin`);
  for (const v of patterns) L.push(`${ind(3)}${pre}_write(${pre}_addrs[k], ${D(v)}); ${pre}_read(${pre}_addrs[k]);`);
  L.push(`${ind(2)}end`);
  // Unlock-style sequences: ordered pairs of writes of the compared data constants to the
  // decoded addresses, each followed by accesses in whatever state the pair left the design.
  const keys = (b.mapped.length ? b.mapped : b.sweep.slice(0, 2)).slice(0, 4);
  const pairs = keys.flatMap((a) => b.dataConstants.map((d) => [a, d] as const));
  if (pairs.length && pairs.length <= 16) {
    const others = all.filter((a) => !keys.includes(a)).slice(0, 3);
    L.push(
      `${ind(2)}// Phase P${i}b: every ordered pair of writes of the compared data constants (${b.dataConstants.map(D).join(', ')}) to the`,
    );
    L.push(`${ind(2)}// decoded addresses (unlock and command sequences), then accesses in the state the pair left.`);
    L.push(`${ind(2)}begin`);
    L.push(`${ind(3)}logic [${aw - 1}:0] pa [${pairs.length}] = '{${pairs.map(([a]) => A(a)).join(', ')}};`);
    L.push(`${ind(3)}logic [${dw - 1}:0] pd [${pairs.length}] = '{${pairs.map(([, d]) => D(d)).join(', ')}};`);
    L.push(`${ind(3)}logic [${aw - 1}:0] pk [${keys.length}] = '{${keys.map(A).join(', ')}};`);
    L.push(`${ind(3)}for (int x = 0; x < ${pairs.length}; x++) for (int y = 0; y < ${pairs.length}; y++) begin`);
    L.push(`${ind(4)}${pre}_write(pa[x], pd[x]); ${pre}_write(pa[y], pd[y]);`);
    // The other registers get every bit pattern while the pair's state holds (not the pair's
    // own addresses: rewriting an unlock register would undo the unlock).
    L.push(`${ind(4)}foreach (pk[k]) if (pk[k] != pa[x] && pk[k] != pa[y]) begin`);
    for (const v of patterns) L.push(`${ind(5)}${pre}_write(pk[k], ${D(v)}); ${pre}_read(pk[k]);`);
    L.push(`${ind(4)}end`);
    for (const a of others)
      L.push(
        `${ind(4)}${pre}_write(${A(a)}, ${D(ones(dw))}); ${pre}_read(${A(a)}); ${pre}_write(${A(a)}, ${randomExpr(dw)}); ${pre}_read(${A(a)}); ${pre}_write(${A(a)}, '0); ${pre}_read(${A(a)});`,
      );
    for (const a of keys) L.push(`${ind(4)}${pre}_read(${A(a)});`);
    L.push(`${ind(4)}${pre}_write(pa[y], ${randomExpr(dw)});`);
    L.push(`${ind(3)}end`);
    L.push(`${ind(2)}end`);
  } else if (b.dataConstants.length) {
    L.push(`${ind(2)}// Phase P${i}b: the data constants the design compares its write data against, at every decoded address.`);
    for (const a of keys) for (const d of b.dataConstants) L.push(`${ind(2)}${pre}_write(${A(a)}, ${D(d)}); ${pre}_read(${A(a)});`);
  }
  // Registers loaded from the write data and compared against constants (modes, commands): the
  // operands first, then each constant into its register, then a wait and reads of the registers.
  const modes = b.regConstants ?? [];
  if (modes.length) {
    const ops = b.operandAddrs ?? [];
    const reads = [...new Set([...b.mapped, ...ops, ...modes.map((r) => r.addr)])].slice(0, 8);
    L.push(
      `${ind(2)}// Phase P${i}d: registers compared against constants (${modes.map((r) => `${r.reg} at ${A(r.addr)}`).join(', ')}): operands`,
    );
    L.push(
      `${ind(2)}// ${ops.length ? `(${ops.map(A).join(', ')}) ` : ''}written first, then each constant, then a wait and the registers read back.`,
    );
    for (const r of modes)
      for (const [k, v] of r.values.entries()) {
        const opVal = k % 2 ? D(ones(dw)) : randomExpr(dw);
        L.push(
          `${ind(2)}${ops.map((o) => `${pre}_write(${A(o)}, ${opVal}); `).join('')}${pre}_write(${A(r.addr)}, ${D(v)}); repeat (16) step(); ${reads.map((a) => `${pre}_read(${A(a)});`).join(' ')}`,
        );
      }
  }
  L.push(`${ind(2)}// Phase P${i}c: ${transfers} back-to-back transfers, random reads and writes over the same addresses (reads after`);
  L.push(`${ind(2)}// writes), some to random addresses, with occasional idle cycles between them.`);
  L.push(`${ind(2)}repeat (${transfers}) begin`);
  // (Declared, then assigned: an initializer in a loop body of a static block runs only once.)
  L.push(
    `${ind(3)}logic [${aw - 1}:0] a; a = ($urandom_range(0, 7) == 0) ? ${randomExpr(aw)} : ${pre}_addrs[$urandom_range(0, ${all.length - 1})];`,
  );
  if (b.bus.kind === 'apb' && b.bus.strb)
    L.push(`${ind(3)}${pre}_strb = ($urandom_range(0, 3) == 0) ? ${b.bus.strb.width}'($urandom) : '1;`);
  if (b.bus.kind === 'ahb-lite' && b.bus.size)
    L.push(`${ind(3)}${pre}_size = ($urandom_range(0, 7) == 0) ? ${b.bus.size.width}'($urandom) : ${pre}_size;`);
  L.push(`${ind(3)}if ($urandom_range(0, 1)) begin ${pre}_write(a, ${randomExpr(dw)}); if ($urandom_range(0, 1)) ${pre}_read(a); end`);
  L.push(`${ind(3)}else ${pre}_read(a);`);
  L.push(`${ind(3)}if ($urandom_range(0, 3) == 0) repeat ($urandom_range(1, 3)) step();`);
  L.push(`${ind(2)}end`);
  if (b.bus.kind === 'ahb-lite' && b.bus.size)
    L.push(
      `${ind(2)}${pre}_size = ${b.bus.size.width}'d${Math.min(Math.max(0, Math.round(Math.log2(Math.max(8, dw) / 8))), 2 ** b.bus.size.width - 1)};`,
    );
  return L;
}

/** Like waitFor, and when the wait runs out the design is reset (a computation that would keep
 * it busy for 2^31 steps must not swallow the rest of the run). */
function waitOrReset(cond: string, bound: number, depth: number, reset: boolean): string {
  if (!reset) return waitFor(cond, bound, depth);
  return `${ind(depth)}begin int unsigned n = 0; while (!(${cond}) && n < ${bound}) begin step(); n++; end if (n >= ${bound}) apply_reset(2); end`;
}

function handshakeTask(h: HandshakePlan, i: number, reset: boolean): string[] {
  const L: string[] = [];
  const pre = `hs${i}`;
  const done = `${h.done.port.name} == 1'b${h.done.active}`;
  const args = h.operands.map((p, k) => `input ${vec(p.width)} x${k}`);
  L.push(
    `${ind(1)}// ${h.style === 'req-ack' ? 'Four-phase req/ack' : 'Start/done'} operation on ${h.start.name}: set the operands, ${h.style === 'req-ack' ? 'raise the request until acknowledged, then drop it' : 'pulse (or hold) the start'},`,
  );
  L.push(
    `${ind(1)}// and wait for ${h.done.active ? '' : '!'}${h.done.port.name} with a bound of ${h.timeout} cycles instead of a fixed number of cycles.`,
  );
  L.push(`${ind(1)}task automatic ${pre}_run(${[...args, 'input int unsigned hold'].join(', ')});`);
  if (h.idleBefore) L.push(waitOrReset(done, h.timeout, 2, reset) + ' // idle before starting');
  for (const [k, p] of h.operands.entries()) L.push(`${ind(2)}${p.name} = x${k};`);
  if (h.style === 'req-ack') {
    L.push(`${ind(2)}${h.start.name} = 1'b1;`);
    L.push(waitOrReset(done, h.timeout, 2, reset));
    L.push(`${ind(2)}step(); ${h.start.name} = 1'b0;`);
    L.push(waitOrReset(`!(${done})`, h.timeout, 2, reset));
  } else {
    L.push(`${ind(2)}${h.start.name} = 1'b1; step();`);
    L.push(`${ind(2)}begin int unsigned n = 0;`);
    L.push(`${ind(3)}if (hold == 0) ${h.start.name} = 1'b0;`);
    if (h.idleBefore) L.push(`${ind(3)}step(); // leave idle first`);
    L.push(`${ind(3)}while (!(${done}) && n < ${h.timeout}) begin step(); n++; if (n >= hold) ${h.start.name} = 1'b0; end`);
    if (reset)
      L.push(
        `${ind(3)}if (n >= ${h.timeout}) begin ${h.start.name} = 1'b0; apply_reset(2); end // timed out: reset before the next operation`,
      );
    L.push(`${ind(2)}end`);
    L.push(`${ind(2)}${h.start.name} = 1'b0; step();`);
  }
  L.push(`${ind(1)}endtask`);
  return L;
}

function handshakePhase(h: HandshakePlan, i: number, constants: Record<string, bigint[]>, randomOps: number): string[] {
  const L: string[] = [];
  const pre = `hs${i}`;
  const ops = h.operands;
  const V = (p: PortInfo, v: bigint): string => literal(p.width, v);
  const corner = (p: PortInfo): bigint[] => [
    0n,
    1n,
    ones(p.width),
    ones(p.width) - 1n,
    1n << BigInt(p.width - 1),
    ...(p.width >= 2 ? [ones(p.width) >> 1n] : []),
    alt(p.width),
    2n,
    ...(constants[p.name] ?? []).slice(0, 6),
  ];
  const calls: string[][] = [];
  if (ops.length === 0) calls.push([]);
  else if (ops.length === 1) for (const v of corner(ops[0])) calls.push([V(ops[0], v)]);
  else {
    // Both ends of the latency range: zero, one, maximum, equal operands, small over large and
    // large over small; further operands at the same corners.
    const [a, b] = ops;
    const pairs: Array<[bigint, bigint]> = [];
    const ca = corner(a);
    const cb = corner(b);
    for (const x of ca.slice(0, 6)) for (const y of cb.slice(0, 6)) pairs.push([x, y]);
    for (const x of ca.slice(6)) pairs.push([x, 1n], [x, x & ones(b.width)]);
    // Equal operands at every corner (sign-safe all-ones included).
    for (const x of ca) if (x <= ones(b.width)) pairs.push([x, x]);
    for (const y of cb.slice(6)) pairs.push([1n, y], [ones(a.width), y]);
    for (const [x, y] of pairs) calls.push([V(a, x), V(b, y), ...ops.slice(2).map((p) => V(p, x & ones(p.width)))]);
  }
  L.push(`${ind(2)}// Phase H${i}: operations at the corners of the operand space, each waited for (bounded), then random`);
  L.push(`${ind(2)}// operands; some with the start held (a second start while busy), some with equal operands.`);
  for (const [k, c] of calls.entries()) L.push(`${ind(2)}${pre}_run(${[...c, String(k % 5 === 4 ? 3 : 0)].join(', ')});`);
  L.push(`${ind(2)}repeat (${randomOps}) begin`);
  if (ops.length >= 2) {
    L.push(`${ind(3)}${vec(ops[0].width)} r0; ${vec(ops[1].width)} r1;`);
    L.push(
      `${ind(3)}r0 = ${randomExpr(ops[0].width)}; r1 = ($urandom_range(0, 3) == 0) ? ${ops[1].width}'(r0) : ($urandom_range(0, 3) == 0) ? ${ops[1].width}'($urandom_range(0, 3)) : ${randomExpr(ops[1].width)};`,
    );
    L.push(
      `${ind(3)}${pre}_run(r0, r1${ops
        .slice(2)
        .map((p) => `, ${randomExpr(p.width)}`)
        .join('')}, $urandom_range(0, 3) == 0 ? 2 : 0);`,
    );
  } else {
    L.push(`${ind(3)}${pre}_run(${ops.map((p) => `${randomExpr(p.width)}, `).join('')}$urandom_range(0, 3) == 0 ? 2 : 0);`);
  }
  L.push(`${ind(2)}end`);
  return L;
}

function serialTask(s: SerialPlan, i: number): string[] {
  const L: string[] = [];
  const nb = s.dataBits;
  const line = s.line.name;
  L.push(
    `${ind(1)}// Serial frame on ${line} at \`bitc\` cycles per bit: start bit, ${nb} data bits LSB first, optional parity, stop bit.`,
  );
  L.push(`${ind(1)}// kind: 0 no parity, 1 even parity, 2 odd parity, 3 bad stop bit, 4 break, 5 glitch shorter than a bit.`);
  L.push(`${ind(1)}task automatic ser${i}_frame(input int unsigned bitc, input logic [${nb - 1}:0] d, input int unsigned kind);`);
  L.push(
    `${ind(2)}if (kind == 4) begin ${line} = 1'b0; repeat (bitc * ${2 * (nb + 4)}) step(); ${line} = 1'b1; repeat (bitc * 2) step(); return; end`,
  );
  L.push(
    `${ind(2)}if (kind == 5) begin ${line} = 1'b0; repeat ((bitc + 3) / 4) step(); ${line} = 1'b1; repeat (bitc * 2) step(); return; end`,
  );
  L.push(`${ind(2)}${line} = 1'b0; repeat (bitc) step();`);
  L.push(`${ind(2)}for (int b = 0; b < ${nb}; b++) begin ${line} = d[b]; repeat (bitc) step(); end`);
  L.push(`${ind(2)}if (kind == 1 || kind == 2) begin ${line} = (kind == 1) ? ^d : ~^d; repeat (bitc) step(); end`);
  L.push(`${ind(2)}${line} = (kind == 3) ? 1'b0 : 1'b1; repeat (bitc) step();`);
  L.push(`${ind(2)}${line} = 1'b1; repeat (bitc) step();`);
  L.push(`${ind(1)}endtask`);
  return L;
}

function serialPhase(s: SerialPlan, i: number, frames: number): string[] {
  const L: string[] = [];
  const nb = s.dataBits;
  const D = (v: bigint): string => literal(nb, v);
  const fixed = [0n, ones(nb), alt(nb), ones(nb) ^ alt(nb)];
  const groups = s.rate ? s.rateValues.map((v, k) => ({ v, bits: s.bitCycles[k] })) : [{ v: -1, bits: s.bitCycles[0] }];
  L.push(
    `${ind(2)}// Phase S${i}: framed traffic on ${s.line.name}${s.rate ? ` with ${s.rate.name} at small legal values` : ''}; every frame kind (no parity, even,`,
  );
  L.push(`${ind(2)}// odd, bad stop bit, break, glitch) at each candidate bit period, the line idle high in between.`);
  for (const g of groups) {
    if (s.rate) L.push(`${ind(2)}${s.rate.name} = ${s.rate.width}'d${g.v};`);
    L.push(`${ind(2)}${s.line.name} = 1'b1; repeat (${Math.max(...g.bits) * 2}) step();`);
    // The other inputs (parity enables, modes) take random values for each frame.
    const others = `drive_random(); ${s.rate ? `${s.rate.name} = ${s.rate.width}'d${g.v}; ` : ''}`;
    for (const bc of g.bits) {
      for (const d of fixed) for (const k of [0, 1, 2]) L.push(`${ind(2)}${others}ser${i}_frame(${bc}, ${D(d)}, ${k});`);
      L.push(`${ind(2)}repeat (${frames}) begin ${others}ser${i}_frame(${bc}, ${nb}'($urandom), $urandom_range(0, 2)); end`);
      for (const k of [3, 4, 5, 0]) L.push(`${ind(2)}${others}ser${i}_frame(${bc}, ${nb}'($urandom), ${k});`);
    }
  }
  return L;
}

function streamTask(st: StreamPlan, i: number): string[] {
  const L: string[] = [];
  const rnd = (p: PortInfo): string => `${p.name} = ${randomExpr(p.width)};`;
  L.push(
    `${ind(1)}// One beat on ${st.valid.name}: data held until ${st.ready?.name ?? 'the next edge'} accepts it (bounded), ${st.outReady ? `${st.outReady.name} varied for backpressure` : 'then valid drops'}.`,
  );
  L.push(`${ind(1)}task automatic st${i}_beat(input logic is_last);`);
  L.push(`${ind(2)}${st.valid.name} = 1'b1; ${st.data.map(rnd).join(' ')}${st.last ? ` ${st.last.name} = is_last;` : ''}`);
  if (st.outReady) L.push(`${ind(2)}${st.outReady.name} = $urandom_range(0, 3) != 0;`);
  L.push(st.ready ? completeOn(st.ready.name, WAIT * 4, 2) : `${ind(2)}step();`);
  L.push(`${ind(2)}${st.valid.name} = 1'b0;${st.last ? ` ${st.last.name} = 1'b0;` : ''}`);
  L.push(`${ind(1)}endtask`);
  return L;
}

function streamPhase(st: StreamPlan, i: number, packets: number): string[] {
  const L: string[] = [];
  L.push(`${ind(2)}// Phase T${i}: ${packets} packets of 1 to 16 beats (single beats and back-to-back bursts), idle gaps between some.`);
  L.push(`${ind(2)}for (int pkt = 0; pkt < ${packets}; pkt++) begin`);
  L.push(`${ind(3)}int unsigned len; len = (pkt % 4 == 0) ? 1 : (pkt % 4 == 1) ? 16 : $urandom_range(1, 8);`);
  L.push(`${ind(3)}for (int unsigned b = 0; b < len; b++) st${i}_beat(b == len - 1);`);
  L.push(`${ind(3)}if ($urandom_range(0, 1)) repeat ($urandom_range(1, 4)) step();`);
  L.push(`${ind(2)}end`);
  if (st.outReady) L.push(`${ind(2)}${st.outReady.name} = 1'b1;`);
  return L;
}

export interface ProtocolEmit {
  /** Module-level declarations and tasks (after `step()`). */
  tasks: string[];
  /** Statements inside the main initial block (after reset and corners). */
  phases: string[];
}

/** `scale` grows with the round: more transfers, operations and frames. */
export function emitProtocols(pp: ProtocolPlan, constants: Record<string, bigint[]>, scale: number, hasReset = false): ProtocolEmit {
  const tasks: string[] = [];
  const phases: string[] = [];
  for (const [i, b] of pp.buses.entries()) {
    const all = addrList(b);
    tasks.push(
      `${ind(1)}logic [${b.addrWidth - 1}:0] bus${i}_addrs [${all.length}] = '{${all.map((a) => literal(b.addrWidth, a)).join(', ')}};`,
    );
    tasks.push(...busTasks(b, i), '');
    phases.push(...busPhase(b, i, 64 * scale));
  }
  for (const [i, h] of pp.handshakes.entries()) {
    tasks.push(...handshakeTask(h, i, hasReset), '');
    phases.push(...handshakePhase(h, i, constants, 16 * scale));
  }
  for (const [i, st] of pp.streams.entries()) {
    tasks.push(...streamTask(st, i), '');
    phases.push(...streamPhase(st, i, 16 * scale));
  }
  for (const [i, s] of pp.serial.entries()) {
    tasks.push(...serialTask(s, i), '');
    phases.push(...serialPhase(s, i, 4 * scale));
  }
  return { tasks, phases };
}
