// Protocol recognition from port names, directions and widths, and from the design's compared
// constants: bus slaves (APB, AHB-Lite, AXI4-Lite, Wishbone, plain register-file ports), serial
// receivers (a line next to a baud/prescale control or parameter), start/done and req/ack
// handshakes with data-dependent latency. Nothing here knows a design by name: only the names
// designers give ports. What is recognised decides which bus-functional tasks the testbench gets.
import type { DesignInfo, ModuleInfo, PortInfo } from '../../design/types.js';
import { svLiteralValue } from '../../design/svLiteral.js';
import type { Roles } from '../roles.js';

export interface Level {
  port: PortInfo;
  /** The value that means "write" / "start" / "done". */
  active: 0 | 1;
}

export interface ApbBus {
  kind: 'apb';
  sel: PortInfo;
  enable: PortInfo;
  write: PortInfo;
  addr: PortInfo;
  wdata?: PortInfo;
  strb?: PortInfo;
  prot?: PortInfo;
  ready?: PortInfo;
  slverr?: PortInfo;
}

export interface AhbBus {
  kind: 'ahb-lite';
  sel?: PortInfo;
  trans: PortInfo;
  write: PortInfo;
  addr: PortInfo;
  wdata?: PortInfo;
  size?: PortInfo;
  burst?: PortInfo;
  readyIn?: PortInfo;
  readyOut?: PortInfo;
}

export interface AxiLiteBus {
  kind: 'axi4-lite';
  awaddr: PortInfo;
  awvalid: PortInfo;
  awready?: PortInfo;
  wdata?: PortInfo;
  wstrb?: PortInfo;
  wvalid: PortInfo;
  wready?: PortInfo;
  bvalid?: PortInfo;
  bready?: PortInfo;
  araddr?: PortInfo;
  arvalid?: PortInfo;
  arready?: PortInfo;
  rvalid?: PortInfo;
  rready?: PortInfo;
}

export interface WishboneBus {
  kind: 'wishbone';
  cyc?: PortInfo;
  stb: PortInfo;
  we: PortInfo;
  addr: PortInfo;
  wdata?: PortInfo;
  sel?: PortInfo;
  ack?: PortInfo;
}

export interface RegFileBus {
  kind: 'regfile';
  addr: PortInfo;
  raddr?: PortInfo;
  wdata?: PortInfo;
  write?: Level;
  read?: Level;
}

export type Bus = ApbBus | AhbBus | AxiLiteBus | WishboneBus | RegFileBus;

export interface BusPlan {
  bus: Bus;
  /** Address width and the addresses to visit: compared constants, unmapped ones, a sweep. */
  addrWidth: number;
  dataWidth: number;
  /** Addresses the design compares the address bus against (its registers). */
  mapped: bigint[];
  /** Addresses it does not decode (error responses). */
  unmapped: bigint[];
  /** Every address, when the space is small enough to write and read each one. */
  sweep: bigint[];
  /** Data values the design compares the write data against (unlock codes, commands). */
  dataConstants: bigint[];
  /** Registers loaded from the write data at a decoded address whose value the design compares
   * against constants (modes, commands), and those constants. */
  regConstants?: Array<{ reg: string; addr: bigint; values: bigint[] }>;
  /** Addresses of registers loaded from the write data with no compared constant (operands). */
  operandAddrs?: bigint[];
}

export interface HandshakePlan {
  kind: 'handshake';
  style: 'start-done' | 'req-ack';
  start: PortInfo;
  /** Completion: `done`/`valid` (active 1) or `busy` (active 0, i.e. done when low). */
  done: Level;
  /** Whether `done` is an idle indicator (`ready`, `!busy`) that must be high before a start. */
  idleBefore: boolean;
  operands: PortInfo[];
  /** Longest wait for completion, cycles. */
  timeout: number;
}

export interface SerialPlan {
  kind: 'serial-rx';
  line: PortInfo;
  /** A rate input (prescale/baud/divider) and the values to set it to. */
  rate?: PortInfo;
  rateValues: number[];
  /** Candidate clock cycles per bit for each rate value (or the parameter-set rate). */
  bitCycles: number[][];
  dataBits: number;
}

/** A streaming slave (AXI-Stream, valid/ready): beats held until accepted, packets with `last`. */
export interface StreamPlan {
  kind: 'stream';
  valid: PortInfo;
  ready?: PortInfo;
  data: PortInfo[];
  last?: PortInfo;
  /** The downstream ready the design's output side waits for (backpressure). */
  outReady?: PortInfo;
}

export interface ProtocolPlan {
  buses: BusPlan[];
  handshakes: HandshakePlan[];
  serial: SerialPlan[];
  streams: StreamPlan[];
}

/** `i_paddr` / `paddr_i` / `s_apb_paddr` -> `paddr`-ish stem for matching, lower case. */
export function stem(name: string): string {
  return name
    .toLowerCase()
    .replace(/^(i|o|in|out|io)_/, '')
    .replace(/_(i|o|in|out|io|reg)$/, '');
}

type Dir = 'in' | 'out';
function pick(ports: PortInfo[], re: RegExp, dir: Dir, width?: (w: number) => boolean, taken?: Set<PortInfo>): PortInfo | undefined {
  return ports.find(
    (p) =>
      (dir === 'in' ? p.direction === 'input' || p.direction === 'inout' : p.direction === 'output') &&
      p.unpackedDims.length === 0 &&
      (!width || width(p.width)) &&
      !taken?.has(p) &&
      re.test(stem(p.name)),
  );
}

const one = (w: number): boolean => w === 1;
const multi = (w: number): boolean => w > 1;

/** How a port is found (pick): its name pattern (on the stem), its direction, maybe its width. */
type PortSpec = [re: RegExp, dir: Dir, width?: (w: number) => boolean];

/** A bus of `kind` when the ports it cannot do without (`required`, each found by its spec) are
 * all there, with its optional ports (undefined where absent); undefined otherwise. */
function detectBus<B extends { kind: string }, K extends keyof B & string>(
  ports: PortInfo[],
  kind: B['kind'],
  required: Record<K, PortSpec>,
  optional: () => Omit<B, 'kind' | K>,
): B | undefined {
  const found = {} as Record<K, PortInfo>;
  for (const k of Object.keys(required) as K[]) {
    const [re, dir, width]: PortSpec = required[k];
    const p = pick(ports, re, dir, width);
    if (!p) return undefined;
    found[k] = p;
  }
  return { kind, ...found, ...optional() } as unknown as B;
}

function detectApb(ports: PortInfo[]): ApbBus | undefined {
  return detectBus<ApbBus, 'sel' | 'enable' | 'write' | 'addr'>(
    ports,
    'apb',
    {
      sel: [/(^|_)psel(x|\d*)$/, 'in', one],
      enable: [/(^|_)penable$/, 'in', one],
      write: [/(^|_)pwrite$/, 'in', one],
      addr: [/(^|_)paddr$/, 'in'],
    },
    () => ({
      wdata: pick(ports, /(^|_)pwdata$/, 'in'),
      strb: pick(ports, /(^|_)pstrb$/, 'in'),
      prot: pick(ports, /(^|_)pprot$/, 'in'),
      ready: pick(ports, /(^|_)pready$/, 'out', one),
      slverr: pick(ports, /(^|_)pslverr$/, 'out', one),
    }),
  );
}

function detectAhb(ports: PortInfo[]): AhbBus | undefined {
  return detectBus<AhbBus, 'trans' | 'write' | 'addr'>(
    ports,
    'ahb-lite',
    {
      trans: [/(^|_)htrans$/, 'in', (w) => w === 2],
      write: [/(^|_)hwrite$/, 'in', one],
      addr: [/(^|_)haddr$/, 'in'],
    },
    () => ({
      sel: pick(ports, /(^|_)hsel(x|\d*)?$/, 'in', one),
      wdata: pick(ports, /(^|_)hwdata$/, 'in'),
      size: pick(ports, /(^|_)hsize$/, 'in'),
      burst: pick(ports, /(^|_)hburst$/, 'in'),
      readyIn: pick(ports, /(^|_)hready$/, 'in', one),
      readyOut: pick(ports, /(^|_)hready_?out$/, 'out', one) ?? pick(ports, /(^|_)hready$/, 'out', one),
    }),
  );
}

function detectAxiLite(ports: PortInfo[]): AxiLiteBus | undefined {
  return detectBus<AxiLiteBus, 'awaddr' | 'awvalid' | 'wvalid'>(
    ports,
    'axi4-lite',
    {
      awaddr: [/(^|_)awaddr$/, 'in'],
      awvalid: [/(^|_)awvalid$/, 'in', one],
      wvalid: [/(^|_)wvalid$/, 'in', one],
    },
    () => ({
      awready: pick(ports, /(^|_)awready$/, 'out', one),
      wdata: pick(ports, /(^|_)wdata$/, 'in'),
      wstrb: pick(ports, /(^|_)wstrb$/, 'in'),
      wready: pick(ports, /(^|_)wready$/, 'out', one),
      bvalid: pick(ports, /(^|_)bvalid$/, 'out', one),
      bready: pick(ports, /(^|_)bready$/, 'in', one),
      araddr: pick(ports, /(^|_)araddr$/, 'in'),
      arvalid: pick(ports, /(^|_)arvalid$/, 'in', one),
      arready: pick(ports, /(^|_)arready$/, 'out', one),
      rvalid: pick(ports, /(^|_)rvalid$/, 'out', one),
      rready: pick(ports, /(^|_)rready$/, 'in', one),
    }),
  );
}

function detectWishbone(ports: PortInfo[]): WishboneBus | undefined {
  return detectBus<WishboneBus, 'cyc' | 'stb' | 'we' | 'addr'>(
    ports,
    'wishbone',
    {
      cyc: [/(^|_)(wb_)?cyc$/, 'in', one],
      stb: [/(^|_)(wb_)?stb$/, 'in', one],
      we: [/(^|_)(wb_)?we$/, 'in', one],
      addr: [/(^|_)(wb_)?(adr|addr)$/, 'in'],
    },
    () => ({
      wdata: ports.find((p) => p.direction === 'input' && /(^|_)(wb_)?dat(a)?(_i|_in)?$/i.test(p.name.toLowerCase().replace(/^i_/, ''))),
      sel: pick(ports, /(^|_)(wb_)?sel$/, 'in'),
      ack: pick(ports, /(^|_)(wb_)?ack$/, 'out', one),
    }),
  );
}

/** Does a write-control name mean "1 = read" (`read_write`, `rnw`, `rd_wr`)? */
function readHigh(s: string): boolean {
  return /r(ead)?_?n?_?w(rite|r)?(_|$)|rd_?wr|rnw|read_?write/.test(s) && !/^(we|wen|wr|wr_en|write|write_en)$/.test(s);
}

function detectRegFile(ports: PortInfo[], taken: Set<PortInfo>): RegFileBus | undefined {
  const addr = pick(ports, /(^|_)(addr|adr|address|waddr|wr_addr|wraddr|write_addr|reg_addr)$/, 'in', multi, taken);
  if (!addr) return undefined;
  const t = new Set([...taken, addr]);
  const raddr = pick(ports, /(^|_)(raddr|rd_addr|rdaddr|read_addr)$/, 'in', multi, t);
  if (raddr) t.add(raddr);
  const wrPort = pick(
    ports,
    /(^|_)(we|wen|we_n|wr|wr_n|wr_en|wren|write|write_en|write_enable|wr_enable|rw|r_w|rnw|rd_wr|read_write|read_write_enable|rw_en|wr_rd|cmd_write)$/,
    'in',
    one,
    t,
  );
  const rdPort = pick(ports, /(^|_)(re|ren|re_n|rd|rd_en|rden|read|read_en|read_enable|rd_enable)$/, 'in', one, t);
  if (!wrPort && !rdPort) return undefined;
  const wdata = pick(ports, /(^|_)(wdata|wr_data|write_data|data_in|din|wdat|data|d|wd|dat)$/, 'in', multi, t);
  const ws = wrPort ? stem(wrPort.name) : '';
  const lowActive = (s: string): boolean => /(_n|_b)$/.test(s);
  return {
    kind: 'regfile',
    addr,
    raddr,
    wdata,
    write: wrPort ? { port: wrPort, active: readHigh(ws) || lowActive(ws) ? 0 : 1 } : undefined,
    read: rdPort ? { port: rdPort, active: lowActive(stem(rdPort.name)) ? 0 : 1 } : undefined,
  };
}

function comparedOn(info: DesignInfo, m: ModuleInfo, port: PortInfo): bigint[] {
  const vals = new Set<bigint>();
  for (const v of m.comparisons[port.name] ?? []) {
    const n = svLiteralValue(v);
    if (n !== null) vals.add(n);
  }
  void info;
  return [...vals].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

function busPorts(b: Bus): PortInfo[] {
  return Object.values(b).flatMap((v) =>
    v && typeof v === 'object' && 'port' in v ? [(v as Level).port] : v && typeof v === 'object' && 'name' in v ? [v as PortInfo] : [],
  );
}

export function busAddr(b: Bus): PortInfo {
  return b.kind === 'axi4-lite' ? b.awaddr : b.addr;
}

export function busWdata(b: Bus): PortInfo | undefined {
  return b.wdata;
}

/**
 * Registers the design loads from the bus write data, and the address each is loaded at
 * (`ADDR: reg <= wdata;` in a case on the address, `if (addr == ADDR) reg <= wdata[..];`): the
 * front end's load facts (slang elaborated the assignments with the conditions they sit under).
 */
export function writeRegisters(info: DesignInfo, addrNames: string[], wdataName: string): Map<string, bigint> {
  const out = new Map<string, bigint>();
  const addrs = new Set(addrNames);
  for (const l of info.facts?.loads ?? []) {
    if (!l.reads.includes(wdataName) || l.register === wdataName || addrs.has(l.register)) continue;
    const at = l.at.find((x) => addrs.has(x.port));
    if (at && !out.has(l.register)) out.set(l.register, BigInt(at.value));
  }
  return out;
}

function planBus(info: DesignInfo, m: ModuleInfo, bus: Bus): BusPlan {
  const addr = busAddr(bus);
  const aw = addr.width;
  const mask = (1n << BigInt(aw)) - 1n;
  let mapped = comparedOn(info, m, addr);
  if (bus.kind === 'axi4-lite' && bus.araddr)
    mapped = [...new Set([...mapped, ...comparedOn(info, m, bus.araddr)])].sort((a, b) => (a < b ? -1 : 1));
  if (bus.kind === 'regfile' && bus.raddr)
    mapped = [...new Set([...mapped, ...comparedOn(info, m, bus.raddr)])].sort((a, b) => (a < b ? -1 : 1));
  mapped = mapped.slice(0, 48);
  const wd = busWdata(bus);
  const dataWidth = wd?.width ?? 8;
  // Unmapped: past the last register by the smallest register stride, and the top of the space.
  const unmapped = new Set<bigint>();
  if (mapped.length) {
    let stride = 0n;
    for (let i = 1; i < mapped.length; i++) {
      const d = mapped[i] - mapped[i - 1];
      if (d > 0n && (stride === 0n || d < stride)) stride = d;
    }
    if (stride === 0n) stride = BigInt(Math.max(1, dataWidth / 8));
    const last = mapped[mapped.length - 1];
    for (const a of [(last + stride) & mask, mask, (mapped[0] + 1n) & mask]) if (!mapped.includes(a)) unmapped.add(a);
    if (mapped[0] > 0n) unmapped.add(0n);
  } else {
    unmapped.add(mask);
  }
  // A small address space is swept whole (every register of a memory-backed bank); a large one
  // without decoded constants gets the first registers at byte and word strides.
  const sweep: bigint[] = [];
  if (aw <= 8) for (let a = 0n; a <= mask; a++) sweep.push(a);
  else if (!mapped.length) {
    for (let a = 0n; a < 16n; a++) sweep.push(a);
    for (let a = 16n; a < 64n; a += 4n) sweep.push(a);
  }
  const dataConstants = wd
    ? comparedOn(info, m, wd)
        .filter((v) => v < 1n << BigInt(wd.width))
        .slice(0, 8)
    : [];
  // Registers loaded from the write data: the constants the design compares each against go to
  // its address (modes, commands), the others are operands.
  const regConstants: NonNullable<BusPlan['regConstants']> = [];
  const operandAddrs: bigint[] = [];
  if (wd) {
    const addrNames = [addr.name, ...(bus.kind === 'regfile' && bus.raddr ? [bus.raddr.name] : [])];
    for (const [reg, a] of writeRegisters(info, addrNames, wd.name)) {
      if (a > mask) continue;
      const vals = new Set<bigint>();
      for (const mod of info.modules)
        for (const v of mod.comparisons[reg] ?? []) {
          const n = svLiteralValue(v);
          if (n !== null && n < 1n << BigInt(wd.width)) vals.add(n);
        }
      if (vals.size) regConstants.push({ reg, addr: a, values: [...vals].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)).slice(0, 16) });
      else if (!operandAddrs.includes(a)) operandAddrs.push(a);
    }
  }
  return {
    bus,
    addrWidth: aw,
    dataWidth,
    mapped,
    unmapped: [...unmapped].slice(0, 4),
    sweep,
    dataConstants,
    regConstants: regConstants.slice(0, 8),
    operandAddrs: operandAddrs.slice(0, 8),
  };
}

function detectStream(roles: Roles, taken: Set<PortInfo>): StreamPlan[] {
  const ins = roles.data.filter((p) => !taken.has(p) && p.unpackedDims.length === 0);
  const outs = roles.outputs.filter((p) => p.unpackedDims.length === 0);
  // AXI-Stream by its t-prefixed names; plain valid/ready when the design answers with a ready.
  const valid =
    ins.find((p) => p.width === 1 && /(^|_)(s_axis_)?tvalid$|^s_axis_valid$/.test(stem(p.name))) ??
    ins.find((p) => p.width === 1 && /(^|_)(in_valid|valid_in|s_valid|valid|vld)$/.test(stem(p.name)));
  if (!valid) return [];
  const axis = /tvalid$/.test(stem(valid.name));
  const ready = axis
    ? outs.find((p) => p.width === 1 && /(^|_)(s_axis_)?tready$/.test(stem(p.name)))
    : outs.find((p) => p.width === 1 && /(^|_)(in_ready|ready_out|s_ready|ready|rdy)$/.test(stem(p.name)));
  if (!ready) return [];
  const last = ins.find((p) => p.width === 1 && /(^|_)t?last$/.test(stem(p.name)) && (!axis || /tlast$/.test(stem(p.name))));
  const outReady = ins.find(
    (p) =>
      p.width === 1 &&
      p !== valid &&
      (axis
        ? /(^|_)m_axis_tready$|^m_tready$/.test(stem(p.name))
        : /(^|_)(out_ready|ready_in|m_ready|ds_ready|downstream_ready|ready)$/.test(stem(p.name))),
  );
  const data = ins.filter(
    (p) =>
      p !== valid &&
      p !== last &&
      p !== outReady &&
      p.width > 1 &&
      p.kind !== 'enum' &&
      (!axis || /t(data|keep|strb|user|id|dest)$/.test(stem(p.name))),
  );
  return [{ kind: 'stream', valid, ready, data, last, outReady }];
}

const START =
  /(^|_)(start|go|req|request|trigger|kick|launch|begin|valid|vld|in_valid|valid_in|s_valid|start_conv|start_div|calc|compute|run)$/;
const DONE =
  /(^|_)(done|finish|finished|complete|completed|ready|rdy|valid|vld|out_valid|valid_out|o_valid|m_valid|ack|busy|result_valid|data_valid|dv)$/;
const SERIAL = /(^|_)(rx|rxd|uart_rx|rx_in|serial_in|serial_rx|sin|rx_serial|rx_line|rx_data_in|rxd_in|rx_bit|rx_pin|uart_rxd)$/;
const SERIAL_IF_RATE = /(^|_)(sdi|miso|sdin|serial|din_serial|data_serial|s_in)$/;
const RATE =
  /(prescale|prescaler|baud|baud_div|baudrate|divisor|divider|clk_div|clkdiv|clks_per_bit|cpb|bit_period|bit_time|cycles_per_bit|tick_div|sample_rate|oversample)/;
const RATE_PARAM =
  /clks?_per_bit|cycles_per_bit|bit_period|bit_time|prescale|divisor|divider|baud_div|clk_div|ticks_per_bit|counts_per_bit|bit_cnt_max/i;
const DATA_BITS_PARAM = /^(data_bits|data_width|dbit|nbits|n_bits|num_bits|word_len|word_size|data_len|bits|dwidth|frame_bits)$/i;

function paramValue(m: ModuleInfo, re: RegExp): number[] {
  const out: number[] = [];
  for (const p of m.params) {
    if (!re.test(p.name) || p.value === null) continue;
    const v = svLiteralValue(p.value);
    if (v !== null && v > 0n && v < 1_000_000n) out.push(Number(v));
  }
  return out;
}

function detectSerial(m: ModuleInfo, roles: Roles, taken: Set<PortInfo>): SerialPlan[] {
  const ins = roles.data.filter((p) => !taken.has(p));
  const rate = ins.find((p) => p.width > 1 && RATE.test(stem(p.name)));
  const lines = ins.filter(
    (p) => p.width === 1 && p.unpackedDims.length === 0 && (SERIAL.test(stem(p.name)) || (rate && SERIAL_IF_RATE.test(stem(p.name)))),
  );
  if (!lines.length) return [];
  const dataBits = paramValue(m, DATA_BITS_PARAM).find((v) => v >= 5 && v <= 16) ?? 8;
  const out: SerialPlan[] = [];
  for (const line of lines.slice(0, 2)) {
    if (rate) {
      // A prescale of P means P, 8P or 16P cycles per bit in the designs seen: send each.
      const values = [2, 4].filter((v) => v < 2 ** rate.width);
      out.push({
        kind: 'serial-rx',
        line,
        rate,
        rateValues: values,
        bitCycles: values.map((v) => [...new Set([v, 8 * v, 16 * v])]),
        dataBits,
      });
    } else {
      // The rate is a parameter: clocks per bit directly, or the clock over the baud rate.
      const cands = new Set<number>(paramValue(m, RATE_PARAM).filter((v) => v >= 1 && v <= 8192));
      const freq = paramValue(m, /freq|clk_hz|clock_hz|sys_clk|clk_rate/i)[0];
      const baud = paramValue(m, /baud/i)[0];
      if (freq && baud && freq / baud >= 1) {
        cands.add(Math.floor(freq / baud));
        const over = paramValue(m, /oversampl/i)[0];
        if (over && freq / (baud * over) >= 1) cands.add(Math.floor(freq / (baud * over)) * over);
      }
      if (!cands.size) for (const v of [16, 8, 1]) cands.add(v);
      out.push({ kind: 'serial-rx', line, rateValues: [], bitCycles: [[...cands].slice(0, 4)], dataBits });
    }
  }
  return out;
}

function detectHandshakes(roles: Roles, taken: Set<PortInfo>, hasClock: boolean): HandshakePlan[] {
  if (!hasClock) return [];
  const ins = roles.data.filter((p) => !taken.has(p) && p.unpackedDims.length === 0);
  const start = ins.find((p) => p.width === 1 && START.test(stem(p.name)));
  if (!start) return [];
  const reqAck = /(^|_)(req|request)$/.test(stem(start.name));
  const outs = roles.outputs.filter((p) => p.width === 1 && p.unpackedDims.length === 0 && DONE.test(stem(p.name)));
  // Prefer a completion flag (done/valid/ack) over an idle indicator (ready/busy).
  const doneP = outs.find((p) => /(done|finish|complete|valid|vld|dv|ack)/.test(stem(p.name))) ?? outs[0];
  if (!doneP) return [];
  const s = stem(doneP.name);
  const busy = /busy/.test(s);
  const idle = busy || /(^|_)(ready|rdy)$/.test(s);
  const operands = ins.filter((p) => p !== start && p.width > 1 && p.kind !== 'enum').slice(0, 4);
  const maxW = Math.max(1, ...operands.map((p) => p.width));
  return [
    {
      kind: 'handshake',
      style: reqAck ? 'req-ack' : 'start-done',
      start,
      done: { port: doneP, active: busy ? 0 : 1 },
      idleBefore: idle,
      operands,
      timeout: Math.min(1024, Math.max(64, 2 ** Math.min(maxW, 12) + 16)),
    },
  ];
}

export function detectProtocols(info: DesignInfo, roles: Roles): ProtocolPlan {
  const m = info.modules.find((x) => x.name === info.top);
  const empty: ProtocolPlan = { buses: [], handshakes: [], serial: [], streams: [] };
  if (!m || !roles.clocks.length) return empty;
  const ports = [...roles.data, ...roles.outputs];
  const taken = new Set<PortInfo>();
  const buses: BusPlan[] = [];
  for (const detect of [detectApb, detectAhb, detectAxiLite, detectWishbone]) {
    const b = detect(ports.filter((p) => !taken.has(p)));
    if (b) {
      buses.push(planBus(info, m, b));
      for (const p of busPorts(b)) taken.add(p);
    }
  }
  if (!buses.length) {
    const rf = detectRegFile(ports, taken);
    if (rf) {
      buses.push(planBus(info, m, rf));
      for (const p of busPorts(rf)) taken.add(p);
    }
  }
  const serial = detectSerial(m, roles, taken);
  for (const s of serial) taken.add(s.line);
  const streams = buses.length ? [] : detectStream(roles, taken);
  for (const st of streams) for (const p of [st.valid, st.last, st.outReady, ...st.data]) if (p) taken.add(p);
  const handshakes = buses.length ? [] : detectHandshakes(roles, taken, roles.clocks.length > 0);
  return { buses, handshakes, serial, streams };
}

export function describeProtocols(p: ProtocolPlan): string[] {
  const out: string[] = [];
  for (const b of p.buses) {
    const a = busAddr(b.bus).name;
    out.push(
      `${b.bus.kind} slave on ${a}: ${b.mapped.length} decoded address(es)${
        b.mapped.length
          ? ` (${b.mapped
              .slice(0, 6)
              .map((x) => `'h${x.toString(16)}`)
              .join(', ')}${b.mapped.length > 6 ? ', ...' : ''})`
          : ''
      }, ${b.unmapped.length} unmapped${b.sweep.length ? `, all ${b.sweep.length} addresses swept` : ''}`,
    );
  }
  for (const h of p.handshakes)
    out.push(
      `${h.style} handshake: ${h.start.name} -> ${h.done.active ? '' : '!'}${h.done.port.name}, operands ${h.operands.map((o) => o.name).join(', ') || 'none'}, waits of at most ${h.timeout} cycles`,
    );
  for (const st of p.streams)
    out.push(
      `stream slave: ${st.valid.name}/${st.ready?.name} carrying ${st.data.map((d) => d.name).join(', ') || 'no data'}${st.last ? `, packets ended by ${st.last.name}` : ''}${st.outReady ? `, backpressure on ${st.outReady.name}` : ''}`,
    );
  for (const s of p.serial)
    out.push(
      `serial receiver on ${s.line.name}${s.rate ? ` (rate input ${s.rate.name} = ${s.rateValues.join(' or ')})` : ''}: ${s.dataBits}-bit frames at ${[...new Set(s.bitCycles.flat())].join('/')} cycles per bit`,
    );
  return out;
}
