// `chorus model pull | list | rm`: models from a hub repository into the per-machine model cache,
// as LM Studio and Ollama users expect: pick, download with a progress bar, resume after a drop,
// verify, run (`chorus generate --model owner/name`). Nothing leaves the machine except on `pull`.
import { createInterface } from 'node:readline/promises';
import { DEFAULT_GGUF_QUANT, DEFAULT_ONNX_DTYPE } from '../core/vocabulary/defaults.js';
import {
  ggufType,
  HubError,
  convertCheckpoint,
  describeCandidate,
  findTrainingCli,
  parseModelRef,
  editorModel,
  findModels,
  listModels,
  listPartials,
  modelsDir,
  pullModel,
  removeModel,
  removePartials,
  type CachedModel,
  type PullProgress,
} from '../core/run/models.js';
import { formatBytes, formatDuration, kindLabel, safeJson, safeLine, safeText } from '../core/run/frontEnd.js';
import { bar } from './progress.js';
import { flags, strings, runCommand, type CommandRun } from './command.js';
import { EXIT, canRedraw } from './terminal.js';

/** Everything `chorus model` prints passes here: repository, file and folder names come from the
 * hub (or a cache a hub filled), so bidirectional, C1 and other control characters are escaped. */
function say(stream: NodeJS.WriteStream, text: string): boolean {
  return stream.write(safeText(text));
}

const HELP = `Usage: chorus model pull <owner/name>[:<quantization | file | dtype>] [--revision REV]
       chorus model list [--json]
       chorus model rm <owner/name[:selector] | model folder> [--yes] | --partials

pull   Downloads a model from a Hugging Face Hub repository into the model cache: a GGUF for
       llama.cpp (the ${DEFAULT_GGUF_QUANT} quantization when the repository has several and you name none;
       owner/name:Q8_0 or owner/name:<file>.gguf picks another), with tokenizer_config.json
       (the chat template) beside it; or an ONNX export (owner/name:${DEFAULT_ONNX_DTYPE} or :fp32 picks the
       dtype). Shows bytes, rate and time left; Ctrl-C stops it and the same command resumes
       it; every file is checked against the hub's SHA-256 and a damaged one is removed. The
       revision (default main) is pinned to its commit and recorded. A safetensors checkpoint
       (the form training checkpoints are published in) is named as such with the command
       that converts it; --convert q4_k_m fetches it and converts it to a GGUF with the training
       package (chorus-train export), which then runs like any pulled GGUF.
list   The models in the cache: repository, choice, engine, size, commit, folder; the one the
       editor uses is marked *. Partial downloads are listed apart.
rm     Removes a model of the cache (asks first unless --yes); --partials removes partial downloads.

Then: chorus generate --model <owner/name[:selector]> ... (or the folder that pull prints).

Options:
  --revision <rev>  branch, tag or commit to pull (default main)
  --convert <type>  pull a safetensors checkpoint and convert it to a GGUF: q4_k_m | q4_0 | q8_0 | f16
                    (needs chorus-train: on PATH, CHORUS_TRAIN, or this checkout's training/.venv)
  --json            machine-readable output (pull: the model record; list: every model)
  --yes             rm without asking
  --partials        rm: remove partial downloads

Environment:
  HF_TOKEN           token for gated or private repositories (sent to the hub only; never stored)
  HF_ENDPOINT        the hub's address (a mirror; default https://huggingface.co)
  CHORUS_TRAIN       the training package's chorus-train executable (for --convert)
  CHORUS_MODELS_DIR  the model cache (default: <cache>/models, <cache> being CHORUS_CACHE_DIR,
                     else $XDG_CACHE_HOME/chorus, else ~/.cache/chorus)

Exit code: 0 done; 2 usage, a repository without a usable model, access refused, a damaged
download; 130 interrupted (the partial download stays and resumes).
`;

const OPTIONS = { ...strings('revision', 'convert'), ...flags('json', 'yes', 'partials') };

export function runModel(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined || sub === '--help' || sub === '-h' || sub === 'help') {
    (sub === undefined ? process.stderr : process.stdout).write(HELP);
    return Promise.resolve(sub === undefined ? EXIT.usage : EXIT.ok);
  }
  const body = sub === 'pull' ? pull : sub === 'list' || sub === 'ls' ? list : sub === 'rm' || sub === 'remove' ? rm : null;
  if (!body) {
    say(process.stderr, `chorus model: unknown subcommand '${sub.replace(/[^\x20-\x7e]/g, '?')}' (pull, list, rm; chorus model --help)\n`);
    return Promise.resolve(EXIT.usage);
  }
  return runCommand(
    rest,
    {
      name: `model ${sub}`,
      options: OPTIONS,
      help: HELP,
      takesDesign: false,
      errors: [(e) => (e instanceof HubError ? safeText(e.message) : undefined)],
    },
    body,
  );
}

function progressLine(p: PullProgress): string {
  const what = p.files > 1 ? ` ${p.index}/${p.files} ${p.file}` : ` ${p.file}`;
  if (p.phase === 'verify') return `checking${what} (SHA-256)`;
  const rate = p.rate > 0 ? `${formatBytes(p.rate)}/s` : '…';
  return `${bar(p.bytes, p.total)} ${formatBytes(p.bytes)} / ${formatBytes(p.total)}  ${rate}  ${Number.isFinite(p.secondsLeft) ? `${formatDuration(p.secondsLeft)} left` : ''}${what}`;
}

async function pull({ values: o, positionals, fail, signal, status }: CommandRun<typeof OPTIONS>): Promise<number> {
  if (positionals.length !== 1) return fail('name one repository: chorus model pull owner/name[:Q4_K_M]');
  let ref = positionals[0];
  let trainingCli: string | null = null;
  if (o.convert !== undefined) {
    try {
      ggufType(o.convert);
    } catch (e) {
      return fail((e as Error).message);
    }
    trainingCli = findTrainingCli();
    if (!trainingCli)
      return fail(
        'converting a checkpoint needs the training package: put chorus-train on PATH or name it in CHORUS_TRAIN (training/README.md installs it), or pull owner/name:checkpoint here and run chorus-train export <folder> <out> --gguf q4_k_m where it is installed',
      );
    const r = parseModelRef(ref);
    ref = `${r.repo}:${r.selector ?? 'checkpoint'}`;
  }
  const tty = canRedraw(process.stderr);
  let lastLine = 0;
  let lastFile = '';
  const r = await pullModel(ref, {
    revision: o.revision,
    signal,
    confirm: (plan) => {
      say(
        process.stderr,
        `${plan.repo}@${plan.revision} (commit ${plan.commit.slice(0, 12)}): ${describeCandidate(plan.chosen)}${plan.resumes ? ', resuming a partial download' : ''}\n`,
      );
      return true;
    },
    onProgress: (p) => {
      if (tty) {
        const now = Date.now();
        if (now - lastLine > 100 || p.phase === 'verify') status.set(safeLine(progressLine(p)));
        lastLine = now;
      } else if (p.file !== lastFile) {
        // Logs get one line per file, not a redrawn bar.
        lastFile = p.file;
        say(process.stderr, `fetching ${p.file} (${p.index}/${p.files}, ${formatBytes(p.total)} in all)\n`);
      }
    },
  });
  status.clear();
  let m = r.model;
  if (trainingCli && o.convert) {
    if (m.kind !== 'checkpoint') return fail(`${m.repo}:${m.selector} is not a checkpoint: it runs as it is, without --convert`);
    say(process.stderr, `converting ${m.repo} to a ${o.convert.toLowerCase()} GGUF with ${trainingCli} (chorus-train export) ...\n`);
    m = await convertCheckpoint(m, o.convert, { cli: trainingCli, signal });
  }
  if (o.json) {
    say(process.stdout, safeJson(m) + '\n');
    return EXIT.ok;
  }
  say(
    process.stdout,
    (m.convertedFrom ? `converted ` : r.fetched === 0 && r.plan.cached ? `already in the cache: ` : `pulled `) +
      `${m.repo}:${m.selector} (${kindLabel(m.kind)}, ${formatBytes(m.size)}, commit ${m.commit.slice(0, 12)}, ${m.convertedFrom ? `from the checkpoint ${m.convertedFrom}` : 'every file checked'})\n` +
      `  ${m.dir}\n` +
      (m.engine === 'none'
        ? `convert it: chorus model pull ${m.repo} --convert q4_k_m (or chorus-train export ${m.dir} <out folder> --gguf q4_k_m and --model <out folder>)\n`
        : `use it: chorus generate --model ${m.repo}${findModels(m.repo).length > 1 ? `:${m.selector}` : ''} <design files>  (in the editor: CHORUS: Select Model, the folder above)\n`),
  );
  return EXIT.ok;
}

function list({ values: o }: CommandRun<typeof OPTIONS>): Promise<number> {
  const root = modelsDir();
  const models = listModels(root);
  const editor = editorModel(root);
  const partials = listPartials(root);
  if (o.json) {
    say(process.stdout, safeJson({ dir: root, editor, models, partials }) + '\n');
    return Promise.resolve(EXIT.ok);
  }
  if (!models.length) say(process.stdout, `no models in ${root} (chorus model pull owner/name fetches one)\n`);
  else {
    const rows = models.map((m: CachedModel) => [
      m.dir === editor ? '*' : ' ',
      `${m.repo}:${m.selector}`,
      m.engine === 'none' ? 'checkpoint (convert first)' : m.engine === 'llama' ? 'llama.cpp' : 'onnx',
      formatBytes(m.size),
      m.commit.slice(0, 12),
      m.dir,
    ]);
    const head = [' ', 'MODEL', 'ENGINE', 'SIZE', 'COMMIT', 'FOLDER'];
    const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
    for (const r of [head, ...rows]) say(process.stdout, r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(w[i]))).join('  ') + '\n');
    if (editor && models.some((m) => m.dir === editor)) say(process.stdout, '* the model the editor uses\n');
  }
  for (const p of partials)
    say(
      process.stdout,
      `partial download: ${p.name} (${formatBytes(p.bytes)} on disk; ${p.resumable ? 'the same pull resumes it' : 'nothing kept yet'}; chorus model rm --partials removes it)\n`,
    );
  return Promise.resolve(EXIT.ok);
}

async function rm({ values: o, positionals, fail }: CommandRun<typeof OPTIONS>): Promise<number> {
  if (o.partials) {
    if (positionals.length) return fail('--partials takes no model name');
    const n = removePartials();
    say(process.stdout, `removed ${n} partial download(s)\n`);
    return EXIT.ok;
  }
  if (positionals.length !== 1) return fail('name one model: chorus model rm owner/name[:selector] (chorus model list shows them)');
  const hits = findModels(positionals[0]);
  if (!hits.length) return fail(`no model '${positionals[0]}' in ${modelsDir()} (chorus model list shows them)`);
  if (hits.length > 1)
    return fail(`'${positionals[0]}' names ${hits.length} models: ${hits.map((m) => `${m.repo}:${m.selector}`).join(', ')}; name one`);
  const m = hits[0];
  if (!o.yes) {
    if (!process.stdin.isTTY) return fail(`removing ${m.dir} needs --yes when not asked on a terminal`);
    const rl = createInterface({ input: process.stdin, output: process.stderr });
    const a = await rl.question(`remove ${m.repo}:${m.selector} (${formatBytes(m.size)}) at ${m.dir}? [y/N] `);
    rl.close();
    if (!/^y(es)?$/i.test(a.trim())) {
      say(process.stdout, 'kept\n');
      return EXIT.ok;
    }
  }
  removeModel(m);
  say(
    process.stdout,
    `removed ${m.repo}:${m.selector} (${formatBytes(m.size)})${m.dir === editorModel() ? '; the editor still points at it: pick another with CHORUS: Select Model' : ''}\n`,
  );
  return EXIT.ok;
}
