// bench/sim's designs: the DUT files, the testbench every candidate is made from (a distinct copy
// per candidate), and the tops. Paths are the repository's (npm runs benches from its root).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export interface BenchDesign {
  key: string;
  /** DUT files, relative to the repository root (or absolute). */
  files: string[];
  /** Testbench file. */
  tb: string;
  /** The testbench's top module (the naive build needs it; the candidate marker goes in it). */
  tbTop: string;
  /** DUT top module. */
  top: string;
  note?: string;
  /** Fewer naive runs for designs whose cold build takes half a minute. */
  naiveIterations?: number;
  /** Also time the engine with the flat build forced (DUT recompiled for every candidate). */
  flatIterations?: number;
}

// Benchmark data lives beside the checkout (npm runs scripts from the repository root).
export const VEREVAL_DIR = resolve(process.cwd(), 'bench', 'data', 'verilog-eval-v2');
export const VEREVAL_PROB = 'Prob109_fsm1';

export function designTable(root: string, scratch: string): Record<string, () => BenchDesign> {
  return {
    counter: () => ({
      key: 'counter',
      files: [join(root, 'examples/counter/counter.sv')],
      tb: join(root, 'examples/counter/tb_counter.sv'),
      tbTop: 'tb_counter',
      top: 'counter',
    }),
    fsm: () => ({
      key: 'fsm',
      files: [join(root, 'examples/fsm/seq_detector.sv')],
      tb: join(root, 'examples/fsm/tb_seq_detector.sv'),
      tbTop: 'tb_seq_detector',
      top: 'seq_detector',
    }),
    fifo: () => ({
      key: 'fifo',
      files: [join(root, 'examples/fifo/sync_fifo.sv')],
      tb: join(root, 'examples/fifo/tb_sync_fifo.sv'),
      tbTop: 'tb_sync_fifo',
      top: 'sync_fifo',
    }),
    // A DUT that is expensive to compile (16 processing elements): where reusing the compiled DUT
    // (the engine's library build) matters; also measured with the flat build forced.
    mesh: () => ({
      key: 'mesh',
      files: [join(root, 'bench/designs/mesh/pe.sv'), join(root, 'bench/designs/mesh/mesh.sv')],
      tb: join(root, 'bench/designs/mesh/tb_mesh.sv'),
      tbTop: 'tb_mesh',
      top: 'mesh',
      note: '4x4 mesh of PEs',
      naiveIterations: 2,
      flatIterations: 2,
    }),
    // A CVDP dev design over 150 lines (bench/data/cvdp-cid012-dev), with a bench stimulus.
    cvdp: () => ({
      key: 'cvdp',
      files: [join(root, 'bench/data/cvdp-cid012-dev/cvdp_copilot_vending_machine_0006/vending_machine.sv')],
      tb: join(root, 'bench/designs/cvdp/tb_vending_machine.sv'),
      tbTop: 'tb_vending_machine',
      top: 'vending_machine',
      note: 'CVDP vending_machine_0006, 223 lines',
    }),
    // Opt-in: a VerilogEval v2 problem. Its test bench instantiates RefModule and TopModule; the
    // reference solution plays both (a renamed copy is the TopModule), RefModule is the DUT.
    vereval: () => {
      const ref = join(VEREVAL_DIR, `${VEREVAL_PROB}_ref.sv`);
      const test = join(VEREVAL_DIR, `${VEREVAL_PROB}_test.sv`);
      if (!existsSync(ref) || !existsSync(test)) throw new Error(`VerilogEval problem ${VEREVAL_PROB} not found under ${VEREVAL_DIR}`);
      const topCopy = join(scratch, `${VEREVAL_PROB}_top.sv`);
      writeFileSync(topCopy, readFileSync(ref, 'utf8').replace(/\bmodule\s+RefModule\b/, 'module TopModule'));
      return { key: 'vereval', files: [ref, topCopy], tb: test, tbTop: 'tb', top: 'RefModule', note: `VerilogEval ${VEREVAL_PROB}` };
    },
  };
}
