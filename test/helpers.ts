// Paths and small helpers shared by the test suites.
import { afterAll } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadDesign } from '../src/core/run/design.js';
import { VerilatorSimulator } from '../src/core/sim/verilator/backend.js';
import type { SimRequest } from '../src/core/sim/simulator.js';
import type { RunResult } from '../src/core/util/proc.js';
import type { PortInfo } from '../src/core/design/types.js';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const examples = join(repoRoot, 'examples');
export const fixtures = join(repoRoot, 'test', 'fixtures');
/** Benchmark data committed with the repository (provenance and licences: bench/data/README.md). */
export const benchData = join(repoRoot, 'bench', 'data');

export const sim = new VerilatorSimulator();

export async function simulateFiles(dutFiles: string[], tbName: string, tbContent: string, extra: Partial<SimRequest> = {}, top?: string) {
  const { design, info } = await loadDesign({ files: dutFiles, top });
  return sim.simulate({ design, top: info.top, testbench: { name: tbName, content: tbContent }, ...extra });
}

export function read(path: string): string {
  return readFileSync(path, 'utf8');
}

const scratchDirs: string[] = [];
// Test files are isolated: this module is evaluated once per file, so the hook runs per file.
afterAll(() => {
  for (const d of scratchDirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A temporary directory removed when the test worker exits: tests leave nothing behind. */
export function scratchDir(prefix = 'chorus-test-'): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  scratchDirs.push(d);
  return d;
}

/**
 * A testbench of examples/counter: its signals and `counter uut (.*)`, then `body`, in module
 * `name` (what `pre` holds comes before `timescale).
 */
export function counterTb(body: string, opts: { name?: string; pre?: string } = {}): string {
  return `${opts.pre ?? ''}\`timescale 1ns/1ps
module ${opts.name ?? 'tb'};
  logic clk = 0, rst_n = 0, en = 0, load = 0, up = 1;
  logic [7:0] din = 0;
  logic [7:0] count;
  logic wrap;
  counter uut (.*);
${body}
endmodule
`;
}

/** A process result for the classifiers' tests: a clean exit unless `fields` say otherwise. */
export function runResult(fields: Partial<RunResult> = {}): RunResult {
  return {
    exitCode: 0,
    signal: null,
    stdout: '',
    stderr: '',
    all: '',
    timedOut: false,
    cancelled: false,
    outputOverflow: false,
    durationS: 0.1,
    ...fields,
  };
}

/** A testbench of examples/counter that never finishes: only the wall-clock limit stops it. */
export const foreverCounterTb = `\`timescale 1ns/1ps
module tb_forever;
  logic clk = 0, rst_n = 0, en = 1, load = 0, up = 1;
  logic [7:0] din = 0;
  logic [7:0] count;
  logic wrap;
  counter uut (.*);
  initial begin
    #3 rst_n = 1;
    forever #1 clk = ~clk;
  end
endmodule
`;

/** `chorus generate` of one design with a cached model by name, on llama.cpp's CPU build, one
 * thread, two tokens, no refinement: the tiny random model only has to load and answer. */
export const generateWithCachedModelArgs = (model: string, design: string): string[] => [
  'generate',
  '--json',
  '--model',
  model,
  '--threads',
  '1',
  '--gpu',
  'cpu',
  '--rounds',
  '0',
  '--max-tokens',
  '2',
  design,
];

/** A plain port of the given direction and packed width (unit tests of roles, rules, protocols). */
export const portInfo = (name: string, direction: PortInfo['direction'] = 'input', width = 1): PortInfo => ({
  name,
  direction,
  width,
  packedDims: width > 1 ? [[width - 1, 0]] : [],
  unpackedDims: [],
  signed: false,
  typeName: 'logic',
  kind: 'basic',
  line: 1,
});
