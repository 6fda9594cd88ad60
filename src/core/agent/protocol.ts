// The conversation format the LLM4Cov / CHORUS checkpoints were trained on (docs/protocol.md §1-§3),
// byte for byte: first-turn messages, reply parsing, and the feedback turn after a simulation.
// test/unit/protocol.test.ts compares these strings with fixtures recorded from the reference
// implementation (test/fixtures/protocol/README.md).
import type { SimResult } from '../sim/result.js';
import { formatDiagnostic } from '../util/format.js';
import { safeText } from '../util/untrusted.js';
import { safeResult } from '../sim/result.js';
import { assertionSummary } from '../sim/assertions.js';

// The message type belongs to the model interface (llm/backend.ts); the protocol builds on it.
import type { ChatMessage } from '../llm/backend.js';
import { DEFAULT_INSTANCE } from '../vocabulary/defaults.js';
export type { ChatMessage };

export interface NamedText {
  name: string;
  content: string;
}

/** The output-format block both the system prompt and every feedback turn carry (one source). */
const FORMAT_RULES = `OUTPUT REQUIREMENTS:

1. You MUST explicitly state the filename for the testbench in plain text using format:
     filename: tb_xxxx.sv
2. After stating the filename, you MUST output the complete testbench
    inside a fenced SystemVerilog code block:
\`\`\`systemverilog
module tb_example;
  ...
endmodule
\`\`\`
`;

/** Verbatim, leading and trailing newline included (a Python triple-quoted string). */
export const SYSTEM_PROMPT = `
You are a testbench expert.

Your job is to write a SystemVerilog testbench that maximizes coverage of the given RTL project.

${FORMAT_RULES}3. The SystemVerilog code MUST NOT include any checks or assertions on outputs.
Only generate stimulus to exercise as many RTL paths as possible.
4. Use the provided RTL context and instructions to produce the highest possible coverage.
5. Put NOTHING except the code inside the fenced code block.
6. Do NOT wrap the filename inside a code block.

OVERALL OUTPUT ORDER:
1. Plain-text filename line
2. SystemVerilog fenced code block
`;

/** Appended directly after the feedback instruction (it starts with its own newline). */
export const OUTPUT_FORMAT_REQ = `\n${FORMAT_RULES}`;

/** The last block of a feedback turn. The reference strips the instruction + OUTPUT_FORMAT_REQ
 * text, so the turn ends at the closing fence, without the newline after it. */
export function instructionBlock(instruction: string): string {
  return 'Instruction for next round:\n' + (instruction + OUTPUT_FORMAT_REQ).trim();
}

export function userPrompt(context: string, instructions: string): string {
  return `
<context>
${context}
</context>
<instructions>
${instructions}
</instructions>
Write a SystemVerilog testbench that maximizes coverage of the given RTL project.
`;
}

/** The reference instruction for designs that come without one (training data, a user's file). */
export function defaultInstruction(top: string, instance = DEFAULT_INSTANCE): string {
  return (
    `Generate a SystemVerilog testbench for the given RTL design. The top module is '${top}', and its instance name in the testbench should be '${instance}'. ` +
    `Target coverage only in your testbench: Try to achieve as high coverage as possible, including line, toggle, FSM, branch, etc. ` +
    `Also, don't include assertion statements in the testbench; they'll be handled separately.`
  );
}

/** `// File: name\ncontent` per file, joined by a blank line; spec files concatenated directly. */
export function contextText(rtl: NamedText[], specs: NamedText[] = []): string {
  const files = (xs: NamedText[]): string => xs.map((f) => `// File: ${f.name}\n${f.content}`).join('\n\n');
  return files(rtl) + (specs.length ? files(specs) : '// No specification files provided.');
}

export function firstTurn(rtl: NamedText[], specs: NamedText[], instructions: string): ChatMessage[] {
  return [
    { role: 'system', content: SYSTEM_PROMPT },
    { role: 'user', content: userPrompt(contextText(rtl, specs), instructions) },
  ];
}

// ---- Parsing a reply (§2) ----

// An unclosed block (a reply the length limit cut inside its reasoning) is dropped to the end: what
// follows `<think>` there is reasoning, never the answer.
const THINK = /<think>[\s\S]*?(?:<\/think>\s*|$)/gi;

/** Qwen3 replies may open with a reasoning block: drop it before parsing or carrying the reply on. */
export function stripThink(reply: string): string {
  return reply.replace(THINK, '').trim();
}

export type ParsedReply =
  { status: 'success'; testbench: string; filename: string | null; source: 'fence' | 'module' } | { status: 'unparsable'; reason: string };

const FENCE = /```([A-Za-z0-9_+-]*)[^\S\n]*\n?([\s\S]*?)```/g;
const FENCE_TAGS = new Set(['', 'verilog', 'systemverilog', 'sv']);

export function extractTestbench(reply: string): { code: string; source: 'fence' | 'module' } | null {
  for (const m of reply.matchAll(FENCE)) {
    if (FENCE_TAGS.has(m[1].toLowerCase())) return { code: m[2].trim(), source: 'fence' };
  }
  const mod = /(module\s+[\s\S]*?endmodule)/i.exec(reply);
  return mod ? { code: mod[1].trim(), source: 'module' } : null;
}

const NAME = String.raw`([A-Za-z0-9_\-./\\]+\.s?v)`;
const FILENAME_PATTERNS = [
  new RegExp(String.raw`filename\s*[:=]\s*${NAME}`, 'i'),
  new RegExp(String.raw`file\s*name\s*[:=]\s*${NAME}`, 'i'),
  new RegExp(String.raw`output\s*file\s*(?:is|=)\s*["']?${NAME}`, 'i'),
  /\b([A-Za-z0-9_-]+\.s?v)\b/i,
];

export function extractFilename(reply: string): string | null {
  for (const p of FILENAME_PATTERNS) {
    const m = p.exec(reply);
    if (m) return m[1].split(/[\\/]/).pop() ?? null;
  }
  return null;
}

export function parseReply(raw: string): ParsedReply {
  const reply = stripThink(raw);
  const tb = extractTestbench(reply);
  if (!tb) return { status: 'unparsable', reason: 'no fenced SystemVerilog block and no module ... endmodule in the reply' };
  return { status: 'success', testbench: tb.code, filename: extractFilename(reply), source: tb.source };
}

// ---- Feedback turn (§3) ----

export const INSTRUCTIONS = {
  success: 'Improve coverage toward 100% by editing the testbench.',
  xrun: 'Fix the xrun failure by editing the testbench.',
  imc: 'Fix the coverage run failure (imc stage) by editing the testbench.',
} as const;

const block = (heading: string, fields: Array<[string, string]>): string => [heading, ...fields.map(([k, v]) => `- ${k}: ${v}`)].join('\n');

/** Lines that say what went wrong, across Verilator (`%Error`), Xcelium (`*E,` / `*F,`) and
 * generic tools (`Error:`, `fatal`). */
const ERROR_LINE = /%Error|%Fatal|\*[EF],|\b(?:error|fatal)\b\s*[:(-]|\$fatal|assertion failed|segmentation fault|core dumped|timed? ?out/i;

/** Bounded text, error lines first (what the model must fix), then the rest in order. */
export function prioritizeErrors(lines: string[], maxChars = 4000): string {
  const uniq = [...new Set(lines.map((l) => l.replace(/\s+$/, '')).filter(Boolean))];
  const text = [...uniq.filter((l) => ERROR_LINE.test(l)), ...uniq.filter((l) => !ERROR_LINE.test(l))].join('\n');
  return text.length > maxChars ? text.slice(0, maxChars) + `\n... [${text.length - maxChars} more characters]` : text;
}

/** Bounded error text of an engine result: diagnostics first, then the raw message. */
export function errorLog(result: SimResult, maxChars = 4000): string {
  const errs = result.diagnostics
    .filter((d) => d.severity === 'error')
    .map((d) => `${formatDiagnostic(d)}${d.suggestion ? ` (suggestion: ${d.suggestion})` : ''}`);
  const text = [...new Set([...errs, ...result.err_msg.split('\n').filter(Boolean)])].join('\n');
  return text.length > maxChars ? text.slice(0, maxChars) + `\n... [${text.length - maxChars} more characters]` : text;
}

/** How much simulator output the reward service and the agent loop pass on: a run must not pour
 * a large file into a response or a prompt, whatever it printed. */
export const ECHO_CAPS = { errorLines: 20, lineChars: 400, tailChars: 4096, diagnostics: 50 };

function clipLine(l: string, max: number): string {
  return l.length > max ? `${l.slice(0, max)} ... [${l.length - max} characters cut]` : l;
}

/** Simulator output as echoed: whole when short; else its first error lines and a bounded tail,
 * every line clipped. */
export function echoBounded(text: string, caps = ECHO_CAPS): string {
  const lines = text.split('\n').map((l) => clipLine(l, caps.lineChars));
  const whole = lines.join('\n');
  if (whole.length <= caps.tailChars) return whole;
  const tail: string[] = [];
  let size = 0;
  for (let i = lines.length - 1; i >= 0 && size + lines[i].length + 1 <= caps.tailChars; i--) {
    tail.unshift(lines[i]);
    size += lines[i].length + 1;
  }
  const head = lines.slice(0, lines.length - tail.length);
  const errors = head.filter((l) => ERROR_LINE.test(l)).slice(0, caps.errorLines);
  const cut = head.join('\n').length - errors.join('\n').length;
  return [...errors, `... [${cut} characters of output cut] ...`, ...tail].join('\n');
}

/** A result record as the reward service answers it and the agent loop keeps it: log and error
 * message bounded (echoBounded), at most ECHO_CAPS.diagnostics diagnostics (errors first), each clipped. */
export function resultForEcho(result: SimResult, caps = ECHO_CAPS): SimResult {
  const clip = (d: SimResult['diagnostics'][number]): SimResult['diagnostics'][number] => ({
    ...d,
    message: clipLine(d.message, caps.lineChars),
    ...(d.suggestion !== undefined ? { suggestion: clipLine(d.suggestion, caps.lineChars) } : {}),
  });
  let diagnostics = result.diagnostics;
  if (diagnostics.length > caps.diagnostics) {
    const keep = new Set([...new Set([...diagnostics.filter((d) => d.severity === 'error'), ...diagnostics])].slice(0, caps.diagnostics));
    diagnostics = diagnostics.filter((d) => keep.has(d));
  }
  // Also the echo boundary for records from elsewhere (a trainer's /v1/refine-prompt request):
  // what a simulation printed is text, never a control sequence (util/untrusted.ts).
  return safeResult({
    ...result,
    log: echoBounded(result.log ?? '', caps),
    err_msg: echoBounded(result.err_msg ?? '', caps),
    diagnostics: diagnostics.map(clip),
  });
}

export type LogKind = 'coverage' | 'xrun' | 'imc';

/** What a log a user brings from their own simulator run says: a coverage report (IMC or ours),
 * a compile/run failure, or a coverage-tool failure. */
export function classifyLog(log: string): LogKind {
  const errors = log.split('\n').some((l) => ERROR_LINE.test(l));
  const coverage = /Overall Average|Overall\s+Covered|\bBlock\b.*\bToggle\b|coverage\s*[:=]?\s*\d+(?:\.\d+)?\s*%/i.test(log);
  if (errors && /\bimc\b|IMC-|report -metrics|merge/i.test(log) && coverage === false) return 'imc';
  if (errors) return 'xrun';
  return 'coverage';
}

/** The feedback turn for a log from the user's own simulator run (Verilator, Xcelium/IMC, plain
 * text): the same blocks as feedbackTurn, so the model sees what it was trained on. */
export function feedbackFromLog(log: string, kind: LogKind = classifyLog(log), maxChars = 8000): string {
  // The user's simulator printed what the testbench printed: text, never a control sequence.
  log = safeText(log);
  const parse = block('Response parse result:', [
    ['status', 'success'],
    ['type', 'file'],
  ]);
  let eda: string;
  let instruction: string;
  if (kind === 'coverage') {
    const text = log.trim();
    eda = block('EDA result:', [
      ['status', 'success'],
      ['stage', 'success'],
      ['coverage', text.length > maxChars ? text.slice(0, maxChars) : text],
    ]);
    instruction = INSTRUCTIONS.success;
  } else {
    eda = block('EDA result:', [
      ['status', kind === 'imc' ? 'imc_report_summary_failed' : 'xrun_failed'],
      ['stage', kind],
      ['log', prioritizeErrors(log.split('\n'), maxChars)],
    ]);
    instruction = kind === 'imc' ? INSTRUCTIONS.imc : INSTRUCTIONS.xrun;
  }
  return [parse, eda, instructionBlock(instruction)].join('\n\n');
}

/** Witnesses the hint shows: the first few (code arms before toggle bits), short ones only. */
const HINT_WITNESSES = 3;
const HINT_CYCLES = 12;

/**
 * The formal engine's witnesses as one line for the model: for each uncovered point it reached,
 * the input values per clock cycle from reset that reach it (clocks left out; after the first
 * cycle only the inputs that change). Null when there is none short enough to be read.
 */
export function witnessHint(result: SimResult): string | null {
  const f = result.formal;
  const clocks = new Set(f?.clocks ?? []);
  const shown = (f?.witnesses ?? []).filter((w) => w.witness.frames.length <= HINT_CYCLES).slice(0, HINT_WITNESSES);
  if (!shown.length) return null;
  const parts = shown.map((w) => {
    const width = new Map(w.witness.inputs);
    let prev: Record<string, string> = {};
    const cycles = w.witness.frames.map((frame, i) => {
      const sets = Object.entries(frame)
        .filter(([name, hex]) => !clocks.has(name) && (i === 0 || prev[name] !== hex))
        .map(([name, hex]) => `${name}=${width.get(name) ?? ''}'h${hex}`);
      prev = frame;
      return `cycle ${i}: ${sets.join(' ') || '(same)'}`;
    });
    return `${w.file.replace(/^.*\//, '')}:${w.line} (${w.label}) is reached by ${cycles.join(', ')}`;
  });
  return `a model checker found input sequences, one value per clock cycle from reset, that reach code no round covered: ${parts.join('; ')}`;
}

/** A testbench written back as a reply in the checkpoints' format (for a user's own testbench). */
export function replyFor(testbench: string, filename: string): string {
  return `filename: ${filename}\n\`\`\`systemverilog\n${testbench.trim()}\n\`\`\``;
}

/**
 * The one user message after a simulated candidate: parse result, EDA result, instruction +
 * OUTPUT_FORMAT_REQ, joined by blank lines. An unparsable reply is not simulated; it gets the
 * reference's wording for it (with the format reminder).
 */
export function feedbackTurn(parsed: ParsedReply, result: SimResult | null): string {
  if (parsed.status !== 'success' || !result) {
    return [
      // The turn the checkpoints were trained on for a reply with no testbench (the reference's RL
      // rollouts, docs/protocol.md §3): parse block as for a file, an EDA block saying nothing could
      // be extracted, and the reference's instruction for a non-xrun failure.
      block('Response parse result:', [
        ['status', 'success'],
        ['type', 'file'],
      ]),
      block('EDA result:', [['status', 'failed (could not extract a valid testbench from the response)']]),
      instructionBlock(INSTRUCTIONS.imc),
    ].join('\n\n');
  }
  const parse = block('Response parse result:', [
    ['status', 'success'],
    ['type', 'file'],
  ]);
  // The design's own assertions the stimulus broke (from the harness's record; docs/protocol.md
  // §3): one more field of the EDA block, only when some fired, so every other turn is unchanged.
  const broke = assertionSummary(result.dutAssertions);
  const asserted: Array<[string, string]> = broke
    ? [['dut_assertions', safeText(`${broke}. Drive the design only as its assertions allow.`)]]
    : [];
  // The formal engine's witnesses of code no round covered (docs/protocol.md §3): one more field,
  // only when it found some, so every other turn is unchanged.
  const hint = witnessHint(result);
  const witnessed: Array<[string, string]> = hint ? [['formal_witnesses', safeText(hint)]] : [];
  let eda: string;
  let instruction: string;
  if (result.status === 'success') {
    eda = block('EDA result:', [
      ['status', 'success'],
      ['stage', 'success'],
      ['coverage', safeText(result.cov_info?.detail ?? '')],
      ...asserted,
      ...witnessed,
    ]);
    instruction = INSTRUCTIONS.success;
  } else if (result.status === 'imc_merge_failed' || result.status === 'imc_report_summary_failed') {
    eda = block('EDA result:', [
      ['status', result.status],
      ['stage', 'imc'],
      ['log', safeText(errorLog(result))],
    ]);
    instruction = INSTRUCTIONS.imc;
  } else {
    // Compile, elaboration, run failures, timeouts and rejections are all the xrun stage to the model.
    eda = block('EDA result:', [
      ['status', 'xrun_failed'],
      ['stage', 'xrun'],
      ['log', safeText(errorLog(result))],
      // (A legal-scoring failure's log already opens with them.)
      ...(result.err_msg.startsWith(broke) ? [] : asserted),
    ]);
    instruction = INSTRUCTIONS.xrun;
  }
  return [parse, eda, instructionBlock(instruction)].join('\n\n');
}
