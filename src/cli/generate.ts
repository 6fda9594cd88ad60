// `chorus generate`: write a stimulus testbench for a design and print its coverage per round.
// With no model configured it uses the built-in, model-free generator (and says so).
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { loadDesign } from '../core/design/load.js';
import { DesignError } from '../core/design/errors.js';
import { getSimulator } from '../core/sim/registry.js';
import { generateTestbench, type GeneratedRound } from '../core/generate/generator.js';
import { ToolchainError } from '../core/sim/verilator/toolchain.js';
import { DESIGN_HELP } from './designOptions.js';
import { numberOption, parseCommand } from './command.js';
import { formatSimResult } from './format.js';

const HELP = `Usage: chorus generate <design files...> [options]

Writes a stimulus testbench that maximizes the design's coverage, refining it round by round from
the simulator's coverage report, and prints the coverage of each round.

${DESIGN_HELP}Generation:
  --rounds <n>          rounds including the first (default 4); stops early at the target
  --target <pct>        coverage target in percent (default 100)
  --instance <name>     DUT instance name in the testbench (default uut)
  --seed <n>            stimulus seed (default 1)
  --timeout <s>         wall-clock limit per simulation (default 60)
Output:
  --out <file>          where to write the testbench (default: tb_<top>.sv beside the first design
                        file; an existing file is never overwritten: a free name is chosen)
  --force               overwrite --out if it exists
  --json                print the run record as JSON on stdout

No model is configured in this build, so the built-in model-free generator writes the testbench.
`;

const pct = (x: number | null | undefined): string => (x === null || x === undefined ? 'n/a' : `${(100 * x).toFixed(2)}%`);

function freeName(path: string): string {
  if (!existsSync(path)) return path;
  const m = /^(.*?)(\.[^./]+)?$/.exec(path)!;
  for (let i = 1; ; i++) {
    const candidate = `${m[1]}_${i}${m[2] ?? ''}`;
    if (!existsSync(candidate)) return candidate;
  }
}

export async function runGenerate(argv: string[]): Promise<number> {
  const args = parseCommand('generate', argv, {
    rounds: { type: 'string' },
    target: { type: 'string' },
    instance: { type: 'string' },
    seed: { type: 'string' },
    timeout: { type: 'string' },
    out: { type: 'string' },
    force: { type: 'boolean' },
    json: { type: 'boolean' },
  } as const, HELP);
  if (typeof args === 'number') return args;
  const { values: o, fail } = args;
  if (args.positionals.length === 0 && !o.filelist?.length) return fail('name the design files (or -f files.f)');
  let rounds: number, target: number, seed: number, timeoutS: number;
  try {
    rounds = Math.floor(numberOption('rounds', o.rounds, 4, 1));
    target = numberOption('target', o.target, 100) / 100;
    seed = Math.floor(numberOption('seed', o.seed, 1));
    timeoutS = numberOption('timeout', o.timeout, 60, 1);
  } catch (e) {
    return fail((e as Error).message);
  }
  if (o.out && existsSync(resolve(o.out)) && !o.force) {
    return fail(`${resolve(o.out)} exists; choose another --out or pass --force to overwrite it`);
  }

  const controller = new AbortController();
  const onSigint = (): void => controller.abort();
  process.once('SIGINT', onSigint);
  const log = (s: string): void => {
    if (!o.json) process.stdout.write(s);
    else process.stderr.write(s);
  };
  try {
    const { design, info, warnings } = await loadDesign(
      { files: args.positionals, fileLists: o.filelist, includeDirs: o.include, defines: o.define, params: o.param, top: o.top },
      controller.signal,
    );
    for (const w of warnings) process.stderr.write(`warning: ${w}\n`);
    log(`No model configured: using the built-in stimulus generator (model-free, coverage-directed constrained-random).\n`);
    log(`design: ${info.top} (${design.files.length} file${design.files.length === 1 ? '' : 's'}), up to ${rounds} round${rounds === 1 ? '' : 's'}, target ${pct(target)}\n`);
    const onRound = (r: GeneratedRound): void => {
      const c = r.result.coverage?.waived;
      log(
        `round ${r.round + 1}/${rounds}: ${r.result.status}` +
          (c ? `  coverage ${pct(c.overall)} (block ${pct(c.block)}, toggle ${pct(c.toggle)})` : '') +
          `  ${r.result.timings.total.toFixed(2)}s\n`,
      );
    };
    const gen = await generateTestbench(getSimulator('verilator'), design, info, {
      rounds,
      target,
      seed,
      instance: o.instance,
      limits: { timeoutS },
      signal: controller.signal,
      onRound,
    });
    const outPath = o.out ? resolve(o.out) : freeName(join(dirname(design.files[0]), gen.tbName));
    mkdirSync(dirname(outPath), { recursive: true });
    writeFileSync(outPath, gen.best.testbench);
    if (o.json) {
      const record = {
        generator: 'builtin',
        top: info.top,
        out: outPath,
        rounds: gen.rounds.map((r) => ({ round: r.round, parse_status: 'builtin', notes: r.notes, testbench: r.testbench, result: r.result })),
        best: { round: gen.best.round, reward: gen.best.result.reward, coverage: gen.best.result.coverage?.waived.overall ?? null },
      };
      process.stdout.write(JSON.stringify(record, null, 2) + '\n');
    } else {
      log(`best: round ${gen.best.round + 1}, written to ${outPath}\n\n`);
      log(formatSimResult(gen.best.result, { color: process.stdout.isTTY === true }));
    }
    if (controller.signal.aborted) return 130;
    return gen.best.result.status === 'success' ? 0 : 1;
  } catch (e) {
    if (e instanceof DesignError) return fail(`design error (${e.kind}): ${e.message}`);
    if (e instanceof ToolchainError) return fail(e.message);
    throw e;
  } finally {
    process.removeListener('SIGINT', onSigint);
  }
}
