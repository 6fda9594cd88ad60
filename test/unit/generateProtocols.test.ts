// Protocol recognition and parameter scaling of the built-in generator, on port lists and
// introspection facts written by hand (the integration tests run the same on real designs).
import { describe, expect, it } from 'vitest';
import { portInfo } from '../helpers.js';
import type { DesignInfo, ModuleInfo, ParamInfo, PortInfo } from '../../src/core/design/types.js';
import { assignRoles } from '../../src/core/generate/roles.js';
import { describeProtocols, detectProtocols, stem } from '../../src/core/generate/protocols/detect.js';
import { emitProtocols } from '../../src/core/generate/protocols/emit.js';
import { scaleCandidates, scaleParams } from '../../src/core/generate/params.js';

const port = portInfo;
const param = (name: string, value: string, local = false): ParamInfo => ({ name, value, isType: false, local });
const mod = (ports: PortInfo[], o: Partial<ModuleInfo> = {}): ModuleInfo => ({
  name: 'dut',
  file: 'dut.sv',
  line: 1,
  ports,
  params: [],
  instantiates: [],
  edges: { clk: ['pos'] },
  comparisons: {},
  ...o,
});
const info = (m: ModuleInfo, extra: ModuleInfo[] = []): DesignInfo => ({
  top: m.name,
  topCandidates: [m.name],
  modules: [m, ...extra],
  files: [],
  warnings: [],
});
const detect = (m: ModuleInfo) => detectProtocols(info(m), assignRoles(m));

describe('protocol recognition', () => {
  it('stems drop direction prefixes and suffixes', () => {
    expect(stem('i_paddr')).toBe('paddr');
    expect(stem('wb_cyc_i')).toBe('wb_cyc');
    expect(stem('data_in')).toBe('data');
  });

  it('APB slave: decoded addresses from the compared constants, unmapped ones past the last register', () => {
    const m = mod(
      [
        port('PCLK'),
        port('PRESETn'),
        port('PSEL'),
        port('PENABLE'),
        port('PWRITE'),
        port('PADDR', 'input', 12),
        port('PWDATA', 'input', 32),
        port('PRDATA', 'output', 32),
        port('PREADY', 'output'),
        port('PSLVERR', 'output'),
      ],
      {
        edges: { PCLK: ['pos'], PRESETn: ['neg'] },
        comparisons: { PADDR: ["12'h0", "12'h4", "12'h8", "12'hc"], PWDATA: ["32'hc0de0001"] },
      },
    );
    const p = detect(m);
    expect(p.buses).toHaveLength(1);
    const b = p.buses[0];
    expect(b.bus.kind).toBe('apb');
    expect(b.mapped).toEqual([0n, 4n, 8n, 12n]);
    expect(b.unmapped).toContain(16n);
    expect(b.unmapped).toContain(0xfffn);
    expect(b.dataConstants).toEqual([0xc0de0001n]);
    expect(p.handshakes).toEqual([]);
    const e = emitProtocols(p, {}, 1);
    expect(e.tasks.join('\n')).toMatch(/task automatic bus0_write\(input logic \[11:0\] a, input logic \[31:0\] d\);/);
    expect(e.tasks.join('\n')).toMatch(/while \(!\(PREADY\) && n < 16\) begin step\(\); #1; n\+\+; end step\(\);/);
    expect(e.phases.join('\n')).toMatch(/foreach \(bus0_addrs\[k\]\)/);
    expect(describeProtocols(p)[0]).toMatch(/^apb slave on PADDR: 4 decoded address/);
  });

  it('AHB-Lite, AXI4-Lite and Wishbone slaves by their signal names', () => {
    const ahb = detect(
      mod([
        port('clk'),
        port('HSEL'),
        port('HTRANS', 'input', 2),
        port('HWRITE'),
        port('HADDR', 'input', 32),
        port('HWDATA', 'input', 32),
        port('HSIZE', 'input', 3),
        port('HREADY'),
        port('HREADYOUT', 'output'),
        port('HRDATA', 'output', 32),
      ]),
    );
    expect(ahb.buses[0].bus).toMatchObject({ kind: 'ahb-lite', readyOut: { name: 'HREADYOUT' }, readyIn: { name: 'HREADY' } });
    const axi = detect(
      mod([
        port('clk'),
        port('s_axi_awaddr', 'input', 8),
        port('s_axi_awvalid'),
        port('s_axi_awready', 'output'),
        port('s_axi_wdata', 'input', 32),
        port('s_axi_wvalid'),
        port('s_axi_wready', 'output'),
        port('s_axi_bvalid', 'output'),
        port('s_axi_bready'),
        port('s_axi_araddr', 'input', 8),
        port('s_axi_arvalid'),
        port('s_axi_arready', 'output'),
        port('s_axi_rvalid', 'output'),
        port('s_axi_rready'),
      ]),
    );
    expect(axi.buses[0].bus.kind).toBe('axi4-lite');
    expect(axi.buses[0].sweep).toHaveLength(256);
    const wb = detect(
      mod(
        [
          port('clk_i'),
          port('wb_cyc_i'),
          port('wb_stb_i'),
          port('wb_we_i'),
          port('wb_adr_i', 'input', 4),
          port('wb_dat_i', 'input', 16),
          port('wb_ack_o', 'output'),
        ],
        { edges: { clk_i: ['pos'] } },
      ),
    );
    expect(wb.buses[0].bus).toMatchObject({ kind: 'wishbone', ack: { name: 'wb_ack_o' }, wdata: { name: 'wb_dat_i' } });
  });

  it('register-file ports: a read/write select whose name says 1 = read writes on 0', () => {
    const p = detect(
      mod(
        [
          port('clk'),
          port('i_addr', 'input', 8),
          port('i_data_in', 'input', 8),
          port('i_read_write_enable'),
          port('o_data_out', 'output', 8),
        ],
        { comparisons: { i_addr: ["8'h0", "8'h1"], i_data_in: ["8'hab", "8'hcd"] } },
      ),
    );
    expect(p.buses[0].bus).toMatchObject({ kind: 'regfile', write: { port: { name: 'i_read_write_enable' }, active: 0 } });
    expect(p.buses[0].dataConstants).toEqual([0xabn, 0xcdn]);
    // Ordered pairs of code writes to the decoded addresses (unlock sequences).
    expect(emitProtocols(p, {}, 1).phases.join('\n')).toMatch(/every ordered pair of writes/);
    const we = detect(mod([port('clk'), port('addr', 'input', 4), port('wdata', 'input', 8), port('we'), port('rdata', 'output', 8)]));
    expect(we.buses[0].bus).toMatchObject({ kind: 'regfile', write: { active: 1 } });
  });

  it('an ALU with operands a/b and no write control is not a register file', () => {
    expect(
      detect(mod([port('clk'), port('a', 'input', 8), port('b', 'input', 8), port('op', 'input', 2), port('y', 'output', 8)])).buses,
    ).toEqual([]);
  });

  it('start/done units: operands at the corners, waits bounded by the operand range', () => {
    const p = detect(
      mod([
        port('clk'),
        port('rst'),
        port('start'),
        port('a', 'input', 8),
        port('b', 'input', 8),
        port('result', 'output', 8),
        port('done', 'output'),
        port('busy', 'output'),
      ]),
    );
    expect(p.handshakes).toHaveLength(1);
    expect(p.handshakes[0]).toMatchObject({
      style: 'start-done',
      start: { name: 'start' },
      done: { port: { name: 'done' }, active: 1 },
      idleBefore: false,
      timeout: 272,
    });
    expect(p.handshakes[0].operands.map((o) => o.name)).toEqual(['a', 'b']);
    const e = emitProtocols(p, {}, 1);
    expect(e.tasks.join('\n')).toMatch(/while \(!\(done == 1'b1\) && n < 272\)/);
    // zero, one, maximum and equal operands
    for (const call of ["hs0_run(8'h0, 8'h0", "hs0_run(8'h1, 8'hff", "hs0_run(8'hff, 8'hff"]) expect(e.phases.join('\n')).toContain(call);
    const ra = detect(mod([port('clk'), port('req'), port('x', 'input', 4), port('ack', 'output')]));
    expect(ra.handshakes[0].style).toBe('req-ack');
    const busy = detect(mod([port('clk'), port('go'), port('n', 'input', 16), port('busy', 'output')]));
    expect(busy.handshakes[0]).toMatchObject({ done: { active: 0 }, idleBefore: true, timeout: 1024 });
  });

  it('AXI-Stream and valid/ready slaves: beats held until accepted, packets with last, backpressure', () => {
    const p = detect(
      mod([
        port('clk'),
        port('s_axis_tvalid'),
        port('s_axis_tready', 'output'),
        port('s_axis_tdata', 'input', 32),
        port('s_axis_tlast'),
        port('m_axis_tready'),
        port('m_axis_tvalid', 'output'),
        port('cfg', 'input', 4),
      ]),
    );
    expect(p.streams[0]).toMatchObject({
      valid: { name: 's_axis_tvalid' },
      ready: { name: 's_axis_tready' },
      last: { name: 's_axis_tlast' },
      outReady: { name: 'm_axis_tready' },
    });
    expect(p.streams[0].data.map((d) => d.name)).toEqual(['s_axis_tdata']);
    expect(p.handshakes).toEqual([]);
    const e = emitProtocols(p, {}, 1);
    expect(e.tasks.join('\n')).toMatch(/task automatic st0_beat\(input logic is_last\);/);
    expect(e.phases.join('\n')).toMatch(/st0_beat\(b == len - 1\)/);
    const vr = detect(
      mod([
        port('clk'),
        port('in_valid'),
        port('in_ready', 'output'),
        port('in_data', 'input', 8),
        port('out_valid', 'output'),
        port('out_ready'),
      ]),
    );
    expect(vr.streams[0]).toMatchObject({ valid: { name: 'in_valid' }, ready: { name: 'in_ready' }, outReady: { name: 'out_ready' } });
  });

  it('serial receivers: a prescale input gets small values, a parameter sets the bit period', () => {
    const pre = detect(mod([port('clk'), port('rst'), port('rxd'), port('prescale', 'input', 16), port('m_axis_tdata', 'output', 8)]));
    expect(pre.serial[0]).toMatchObject({
      line: { name: 'rxd' },
      rate: { name: 'prescale' },
      rateValues: [2, 4],
      bitCycles: [
        [2, 16, 32],
        [4, 32, 64],
      ],
      dataBits: 8,
    });
    const par = detect(
      mod([port('clk'), port('rx'), port('data', 'output', 8)], { params: [param('CLK_FREQ', "32'sh2710"), param('BAUD', "32'sh271")] }),
    );
    expect(par.serial[0].bitCycles).toEqual([[16]]);
    const e = emitProtocols(par, {}, 1).phases.join('\n');
    expect(e).toMatch(/ser0_frame\(16, 8'h55, 1\)/);
    expect(e).toMatch(/ser0_frame\(16, 8'\(\$urandom\), 4\)/); // break
    // sdi alone is an ordinary data input; next to a divider it is a serial line
    expect(detect(mod([port('clk'), port('sdi'), port('q', 'output', 8)])).serial).toEqual([]);
    expect(detect(mod([port('clk'), port('sdi'), port('clk_div', 'input', 8)])).serial[0].line.name).toBe('sdi');
  });
});

describe('roles', () => {
  it('reset polarity comes from the submodule that uses the port; `_in` is not active-low', () => {
    const sub = mod([port('clk_in'), port('reset_in')], { name: 'sub', edges: { clk_in: ['pos'], reset_in: ['pos'] } });
    const top = mod([port('clk_in'), port('reset_in'), port('d', 'input', 8)], { edges: {}, instantiates: ['sub'] });
    const r = assignRoles(top, [top, sub]);
    expect(r.clocks.map((c) => c.port.name)).toEqual(['clk_in']);
    expect(r.resets[0]).toMatchObject({ port: { name: 'reset_in' }, activeLow: false, async: true });
    expect(assignRoles(mod([port('clk'), port('rst_in')])).resets[0].activeLow).toBe(false);
  });

  it('AMBA resets (PRESETn, HRESETn) are resets, not clocks', () => {
    const r = assignRoles(mod([port('PCLK'), port('PRESETn')], { edges: { PCLK: ['pos'], PRESETn: ['neg'] } }));
    expect(r.clocks.map((c) => c.port.name)).toEqual(['PCLK']);
    expect(r.resets[0]).toMatchObject({ port: { name: 'PRESETn' }, activeLow: true });
  });
});

describe('parameter scaling', () => {
  const timer = mod([port('clk')], {
    params: [
      param('CLK_FREQ', "32'sh2faf080"),
      param('WIDTH', "32'sh10"),
      param('COUNTER_MAX', "32'h2faf07f", true),
      param('DEPTH', "32'sh1000"),
    ],
    comparisons: { counter: ["27'h2faf07f"], seconds: ["6'h3b"] },
  });

  it('timing parameters are candidates; widths, depths and local parameters are not', () => {
    expect(scaleCandidates(timer, {}).map((c) => c.name)).toEqual(['CLK_FREQ']);
    expect(scaleCandidates(timer, { CLK_FREQ: '100' })).toEqual([]);
  });

  it('aims the compared count at about 16, checked by elaborating again; keepParams and -G win', async () => {
    const asked: Array<Record<string, string>> = [];
    const elaborate = async (params: Record<string, string>): Promise<DesignInfo> => {
      asked.push(params);
      const f = BigInt(params.CLK_FREQ ?? '50000000');
      return info({ ...timer, comparisons: { counter: [`27'h${(f - 1n).toString(16)}`], seconds: ["6'h3b"] } });
    };
    const spec = { files: [], libraryFiles: [], includeDirs: [], defines: {}, params: {} };
    const r = await scaleParams(spec, info(timer), elaborate);
    expect(r.scaled).toEqual([expect.objectContaining({ name: 'CLK_FREQ', was: '50000000', value: '16' })]);
    expect(r.scaled[0].why).toMatch(/compares a count against 49999999/);
    expect(asked).toEqual([{ CLK_FREQ: '16' }]);
    expect((await scaleParams(spec, info(timer), elaborate, { keepParams: true })).scaled).toEqual([]);
    expect((await scaleParams({ ...spec, params: { CLK_FREQ: '50000000' } }, info(timer), elaborate)).scaled).toEqual([]);
  });

  it('a scaling that collapses the count (a division becoming 0) is refused', async () => {
    const uart = mod([port('clk')], {
      params: [param('CLK_FREQ', "32'sh5f5e100"), param('BAUD', "32'sh2580")],
      comparisons: { cnt: ["14'h28b0"] },
    });
    const elaborate = async (params: Record<string, string>): Promise<DesignInfo> => {
      const q = BigInt(params.CLK_FREQ) / 9600n;
      return info({ ...uart, comparisons: { cnt: [`14'h${(q > 0n ? q - 1n : 0n).toString(16)}`] } });
    };
    const spec = { files: [], libraryFiles: [], includeDirs: [], defines: {}, params: {} };
    const r = await scaleParams(spec, info(uart), elaborate);
    // CLK_FREQ * 16 / 10416 = 153,609: the bit period becomes 15 cycles, not 0.
    expect(r.scaled[0]).toMatchObject({ name: 'CLK_FREQ', value: '153609' });
    // A design whose count falls to 0 whatever the smaller value is left as it is.
    const zero = async (): Promise<DesignInfo> => info({ ...uart, comparisons: { cnt: ["14'h0"] } });
    expect((await scaleParams(spec, info(uart), zero)).scaled).toEqual([]);
  });
});
