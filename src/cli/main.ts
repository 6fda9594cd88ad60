// `chorus`: the command line over the core engine.
import { runSim } from './sim.js';
import { runGenerate } from './generate.js';
import { runRefine } from './refine.js';
import { runServe } from './serve.js';
import { runEval } from './eval.js';
import { runModel } from './model.js';
import { EXIT, chorusVersion } from './terminal.js';
import { closest, safeText } from '../core/run/frontEnd.js';

const HELP = `chorus: coverage-driven SystemVerilog testbench tooling

Usage:
  chorus generate <design files...> [--model dir | --endpoint url --model-name n] [options]
      Write a coverage-maximizing stimulus testbench for the design: a model's first generation
      refined round by round from the simulator's feedback (the built-in generator when no model
      is configured), and print its coverage per round.
  chorus refine --tb <testbench.sv> [--log sim.log] <design files...> --model dir | --endpoint url
      One refinement step on an existing testbench, from your simulator's log or a run here.
  chorus eval --suite <dir|file.jsonl> [--model dir | --endpoint url --model-name n |
              --generator builtin | --reference] [--samples 5] [--rounds 3] [--workers N]
      Pass@1/Pass@5/Cov@1/Cov@5 on a benchmark suite (VerilogEval, CVDP, LLM4Cov records), with
      report.json/.md/.html (docs/eval.md).
  chorus eval compare <report dir> <report dir> [...] [--out dir] [--intersect] [--force]
      Rows side by side: figures, the oracle union, tasks one row solves and another does not.
  chorus model pull <owner/name>[:Q4_K_M] | list | rm <model>
      Models from a Hugging Face Hub repository in the local model cache: download with progress,
      resume and SHA-256 checks; then --model owner/name runs one.
  chorus serve [--port P] [--workers N] [--queue-limit Q]
      The reward service: simulation, reward and the protocol's prompts over HTTP JSON, for
      training and for remote scoring (docs/reward-service.md).
  chorus sim --top <module> --tb <testbench.sv> <design files...> [options]
      Compile and run a testbench against the design, print coverage (or --json the result record).
  chorus help [command] | --version

Run 'chorus <command> --help' (or 'chorus help <command>') for a command's options.

Exit codes: 0 success; 1 the testbench (or a task) failed; 2 usage, design or toolchain error
(the message says what to fix); 70 internal error (a bug: please report it); 130 interrupted.
Colour: on a terminal, unless NO_COLOR is set or TERM=dumb; FORCE_COLOR=1 forces it.
`;

const COMMANDS = ['generate', 'refine', 'eval', 'model', 'serve', 'sim'];

export async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  // `chorus help <command>` is `chorus <command> --help`: one help text per command.
  if (cmd === 'help' && rest.length) return main([rest[0], '--help']);
  switch (cmd) {
    case 'sim':
      return runSim(rest);
    case 'generate':
      return runGenerate(rest);
    case 'refine':
      return runRefine(rest);
    case 'serve':
      return runServe(rest);
    case 'eval':
      return runEval(rest);
    case 'model':
      return runModel(rest);
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      if (cmd === undefined) {
        process.stderr.write(HELP);
        return EXIT.usage;
      }
      process.stdout.write(HELP);
      return EXIT.ok;
    case '--version':
    case '-V':
    case 'version':
      process.stdout.write(`chorus ${await chorusVersion()}\n`);
      return EXIT.ok;
    default: {
      const guess = closest(cmd, COMMANDS);
      process.stderr.write(
        `chorus: unknown command '${safeText(cmd)}'${guess ? `; did you mean ${guess}?` : ''} (commands: ${COMMANDS.join(', ')}; chorus help lists them)\n`,
      );
      return EXIT.usage;
    }
  }
}

// `chorus ... | head` closes stdout early: that is the reader's choice, not an error.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(0);
  throw e;
});

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    // Exit 2 means "the user must fix something"; an unexpected exception is ours.
    process.stderr.write(
      `chorus: internal error (a bug in chorus; please report it with this message):\n${safeText(err instanceof Error ? (err.stack ?? err.message) : String(err))}\n`,
    );
    process.exitCode = EXIT.internal;
  },
);
