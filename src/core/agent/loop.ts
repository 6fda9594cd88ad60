// The agent (docs/protocol.md §3): one direct generation, then up to N refinement rounds fed with the
// simulator's verdict, early stop at the target, memoryless ("markov") or full history, the best
// candidate by the §5 ranking. Every round is kept: the editor shows it, training reuses it.
import { basename, dirname, relative, sep } from 'node:path';
import { readFileSync } from 'node:fs';
import type { DesignSpec } from '../design/types.js';
import type { SimResult } from '../sim/result.js';
import { better, meetsTarget, overallCoverage } from '../sim/ranking.js';
import { Semaphore } from '../util/semaphore.js';
import { ModelError, estimateTokens, type Completion, type ModelBackend } from '../llm/backend.js';
import { type SamplingParams } from '../vocabulary/types.js';
import {
  defaultInstruction,
  feedbackFromLog,
  feedbackTurn,
  firstTurn,
  parseReply,
  replyFor,
  resultForEcho,
  stripThink,
  type ChatMessage,
  type LogKind,
  type NamedText,
  type ParsedReply,
} from './protocol.js';
import type { AgentEvent, AgentOptions, AgentRound, AgentRun, SampleRun, TokenUsage } from './types.js';
import type { HistoryMode } from '../vocabulary/types.js';
import { DEFAULT_INSTANCE, DEFAULT_ROUNDS, DEFAULT_SAMPLING, DEFAULT_COVERAGE_TARGET } from '../vocabulary/defaults.js';

/** Room a reply needs at least; a prompt that leaves less than this does not fit. */
export const MIN_REPLY_TOKENS = 1024;

/** The design does not fit the model's context: says which files, how many tokens, the limit. */
export class ContextBudgetError extends Error {
  constructor(
    readonly promptTokens: number,
    readonly limit: number,
    readonly files: Array<{ name: string; tokens: number }>,
  ) {
    const list = [...files]
      .sort((a, b) => b.tokens - a.tokens)
      .map((f) => `  ${f.name}: ${f.tokens} tokens`)
      .join('\n');
    super(
      `the design does not fit the model's context: the prompt takes ${promptTokens} tokens and the model's context is ${limit} tokens ` +
        `(a reply needs at least ${MIN_REPLY_TOKENS} more). Files:\n${list}\n` +
        `Leave out spec files or unused modules, or serve the model with a longer context (e.g. vLLM --max-model-len).`,
    );
    this.name = 'ContextBudgetError';
  }
}

/** Model failures that no further round can fix: the run stops and the caller is told. */
const FATAL = new Set(['connection', 'auth', 'unknown-model', 'not-found', 'corrupt', 'download-disabled', 'context-overflow', 'protocol']);

/** The RTL files as the model sees them: paths relative to the files' common folder. */
export function designContext(design: DesignSpec, read: (p: string) => string = (p) => readFileSync(p, 'utf8')): NamedText[] {
  const files = design.files;
  if (!files.length) return [];
  let common = dirname(files[0]).split(sep);
  for (const f of files) {
    const d = dirname(f).split(sep);
    let i = 0;
    while (i < common.length && i < d.length && common[i] === d[i]) i++;
    common = common.slice(0, i);
  }
  const root = common.join(sep) || sep;
  return files.map((f) => ({ name: relative(root, f), content: read(f) }));
}

const addTokens = (a: TokenUsage, b: TokenUsage): TokenUsage => ({ prompt: a.prompt + b.prompt, completion: a.completion + b.completion });

/** A safe testbench file name from the model's `filename:` line (basename, .sv/.v). */
export function testbenchName(filename: string | null, top: string): string {
  const name = filename ? basename(filename) : '';
  return /^[A-Za-z_][A-Za-z0-9_.-]*\.s?v$/.test(name) ? name : `tb_${top}.sv`;
}

interface Shared {
  o: AgentOptions;
  first: ChatMessage[];
  top: string;
  instance: string;
  /** Percent. */
  coverageTarget: number;
  rounds: number;
  history: HistoryMode;
  sampling: SamplingParams;
  contextLength: number | null;
  modelSem: Semaphore;
  simSem: Semaphore;
  emit: (e: AgentEvent) => void;
}

async function promptTokens(backend: ModelBackend, messages: ChatMessage[]): Promise<number> {
  return (await backend.countTokens(messages)) ?? estimateTokens(messages.map((m) => m.content).join('\n')) + 8 * messages.length;
}

/** Run one direct generation + up to `rounds` refinements for each sample. */
export async function runAgent(o: AgentOptions): Promise<AgentRun> {
  const top = o.info.top;
  const instance = o.instance ?? DEFAULT_INSTANCE;
  const coverageTarget = o.coverageTarget ?? DEFAULT_COVERAGE_TARGET;
  const rtl = designContext(o.design);
  const first = firstTurn(rtl, o.specs ?? [], o.instruction ?? defaultInstruction(top, instance));
  const info = await o.backend.info();
  const sampling: SamplingParams = { ...DEFAULT_SAMPLING, ...o.sampling };

  // Context budget: say so instead of truncating.
  const firstTokens = await promptTokens(o.backend, first);
  const limit = info.contextLength;
  if (limit !== null && firstTokens + MIN_REPLY_TOKENS > limit) {
    const files = [...rtl, ...(o.specs ?? [])].map((f) => ({ name: f.name, tokens: estimateTokens(f.content) }));
    throw new ContextBudgetError(firstTokens, limit, files);
  }

  const sh: Shared = {
    o,
    first,
    top,
    instance,
    coverageTarget,
    rounds: Math.max(0, Math.floor(o.rounds ?? DEFAULT_ROUNDS)),
    history: o.history ?? 'markov',
    sampling,
    contextLength: limit,
    modelSem: new Semaphore(Math.max(1, o.backend.parallelism)),
    simSem: new Semaphore(Math.max(1, o.simConcurrency ?? 1)),
    emit: (e) => o.onEvent?.(e),
  };
  const n = Math.max(1, Math.floor(o.samples ?? 1));
  const samples = await Promise.all(Array.from({ length: n }, (_, i) => runSample(sh, i)));

  let best: AgentRun['best'] = null;
  let bestResult: SimResult | null | undefined;
  let tokens: TokenUsage = { prompt: 0, completion: 0 };
  for (const s of samples) {
    for (const r of s.rounds) tokens = addTokens(tokens, r.tokens);
    if (s.best === null) continue;
    const r = s.rounds[s.best].result;
    if (better(r, best === null ? undefined : bestResult, coverageTarget)) {
      best = { sample: s.sample, round: s.best };
      bestResult = r;
    }
  }
  return { top, instance, coverageTarget, samples, best, tokens, cancelled: o.signal?.aborted === true };
}

/** Why a sample stops; `null` from a step: go on with the next round. */
type Stop = SampleRun['stop'];

/** One sample's progress: its rounds, the full conversation so far, and the best round (index). */
interface SampleState {
  sample: number;
  rounds: AgentRound[];
  full: ChatMessage[];
  best: number | null;
}

/** The prompt of one model round: its messages, the history mode it ended up with, its sampling. */
interface RoundPrompt {
  messages: ChatMessage[];
  mode: HistoryMode;
  sampling: SamplingParams;
}

async function runSample(sh: Shared, sample: number): Promise<SampleRun> {
  const st: SampleState = { sample, rounds: [], full: [...sh.first], best: null };
  let stop: Stop = 'rounds';
  for (let round = 0; round <= sh.rounds; round++) {
    const step = sh.o.signal?.aborted
      ? 'cancelled'
      : round === 0 && sh.o.warmStart
        ? warmStartStep(sh, st, sh.o.warmStart)
        : await modelRound(sh, st, round);
    if (step !== null) {
      stop = step;
      break;
    }
  }
  const bestCov = st.best === null ? null : overallCoverage(st.rounds[st.best].result);
  return { sample, rounds: st.rounds, best: st.best, passed: meetsTarget(bestCov, sh.coverageTarget), stop };
}

/** Round 0 of a warm start: the given testbench stands as the first (and best) round. */
function warmStartStep(sh: Shared, st: SampleState, w: NonNullable<AgentOptions['warmStart']>): Stop | null {
  const { sample } = st;
  const entry = warmStartRound(w, sample, sh.first, sh.history);
  sh.emit({ type: 'round-start', sample, round: 0, rounds: sh.rounds + 1 });
  st.rounds.push(entry);
  st.best = 0;
  st.full.push({ role: 'assistant', content: entry.reply }, { role: 'user', content: entry.feedback });
  const cov = overallCoverage(entry.result);
  sh.emit({ type: 'round-end', sample, round: 0, entry, bestCoverage: cov });
  return meetsTarget(cov, sh.coverageTarget) ? 'target' : null;
}

/** One round: prompt, model call, parse, simulation, and the round kept. */
async function modelRound(sh: Shared, st: SampleState, round: number): Promise<Stop | null> {
  const { sample } = st;
  const prompt = await roundPrompt(sh, st, round);
  if ('stop' in prompt) return prompt.stop;
  sh.emit({ type: 'round-start', sample, round, rounds: sh.rounds + 1 });
  const t0 = performance.now();
  const call = await callModel(sh, st, round, prompt, t0);
  if ('stop' in call) return call.stop;
  const { completion } = call;
  const modelMs = performance.now() - t0;
  const parsed: ParsedReply = parseReply(completion.text);
  const tokens = { prompt: completion.promptTokens, completion: completion.completionTokens };
  sh.emit({ type: 'reply', sample, round, parsed: parsed.status, tokens });

  const filename = parsed.status === 'success' ? testbenchName(parsed.filename, sh.top) : null;
  const sim =
    parsed.status === 'success' ? await simulateRound(sh, sample, round, parsed.testbench, filename!) : { result: null, simMs: 0 };
  if ('stop' in sim) return sim.stop;
  const { result, simMs } = sim;
  return keepRound(sh, st, {
    sample,
    round,
    messages: prompt.messages,
    reply: completion.text,
    parsed,
    testbench: parsed.status === 'success' ? parsed.testbench : null,
    filename,
    result,
    feedback: feedbackTurn(parsed, result),
    finishReason: completion.finishReason,
    history: prompt.mode,
    tokens,
    modelMs,
    simMs,
    ...(completion.cache ? { cache: completion.cache } : {}),
    ...(completion.drafts ? { drafts: completion.drafts } : {}),
  });
}

/** Memoryless: [system, first user, best reply so far, its feedback]; the snapshot moves only
 * when a new best appears (before any candidate parses: the latest reply). */
function markovMessages(first: ChatMessage[], st: SampleState): ChatMessage[] {
  const anchor = st.best ?? (st.rounds.length ? st.rounds.length - 1 : null);
  return anchor === null
    ? first
    : [
        ...first,
        { role: 'assistant', content: stripThink(st.rounds[anchor].reply) },
        { role: 'user', content: st.rounds[anchor].feedback },
      ];
}

/** This round's prompt, fitted to the context (the full history falls back to the best candidate;
 * the reply gets what room is left), or 'context' when even that does not fit. */
async function roundPrompt(sh: Shared, st: SampleState, round: number): Promise<RoundPrompt | { stop: Stop }> {
  const { o } = sh;
  const { sample } = st;
  let mode: HistoryMode = sh.history;
  let messages = round === 0 ? sh.first : mode === 'full' ? [...st.full] : markovMessages(sh.first, st);
  let sampling = sh.sampling;
  if (sh.contextLength !== null) {
    let need = await promptTokens(o.backend, messages);
    if (need + MIN_REPLY_TOKENS > sh.contextLength && mode === 'full') {
      sh.emit({
        type: 'warning',
        sample,
        round,
        message: `the full history (${need} tokens) no longer fits the ${sh.contextLength}-token context: this round sees the best candidate only`,
      });
      mode = 'markov';
      messages = markovMessages(sh.first, st);
      need = await promptTokens(o.backend, messages);
    }
    if (need + MIN_REPLY_TOKENS > sh.contextLength) {
      sh.emit({
        type: 'warning',
        sample,
        round,
        message: `the refinement prompt (${need} tokens) does not fit the ${sh.contextLength}-token context: stopping this sample`,
      });
      return { stop: 'context' };
    }
    if (need + sampling.maxNewTokens > sh.contextLength) sampling = { ...sampling, maxNewTokens: sh.contextLength - need };
  }
  if (sampling.seed !== undefined) sampling = { ...sampling, seed: sampling.seed + 1000 * sample + round };
  return { messages, mode, sampling };
}

/** The model's reply for this round, or why the sample stops: cancelled, or a failure that is
 * not fatal (kept as a failed round); a fatal failure is thrown. */
async function callModel(
  sh: Shared,
  st: SampleState,
  round: number,
  p: RoundPrompt,
  t0: number,
): Promise<{ completion: Completion } | { stop: Stop }> {
  const { o } = sh;
  const { sample } = st;
  try {
    const completion = await sh.modelSem.run(
      () =>
        o.backend.complete({
          messages: p.messages,
          sampling: p.sampling,
          signal: o.signal,
          onText: (piece) => sh.emit({ type: 'text', sample, round, piece }),
        }),
      o.signal,
    );
    return { completion };
  } catch (e) {
    if (o.signal?.aborted || (e instanceof ModelError && e.kind === 'cancelled')) return { stop: 'cancelled' };
    if (!(e instanceof ModelError) || FATAL.has(e.kind)) throw e;
    // A timeout or a server error that outlived the retries: keep what we have, say why.
    st.rounds.push({
      sample,
      round,
      messages: p.messages,
      reply: '',
      parsed: { status: 'unparsable', reason: `model call failed: ${e.message}` },
      testbench: null,
      filename: null,
      result: null,
      feedback: '',
      finishReason: 'stop',
      error: { kind: e.kind, message: e.message },
      history: p.mode,
      tokens: { prompt: 0, completion: 0 },
      modelMs: performance.now() - t0,
      simMs: 0,
    });
    return { stop: 'model-error' };
  }
}

/** Simulates a parsed candidate; 'cancelled' when the run was cancelled meanwhile. */
async function simulateRound(
  sh: Shared,
  sample: number,
  round: number,
  testbench: string,
  filename: string,
): Promise<{ result: SimResult | null; simMs: number } | { stop: Stop }> {
  const { o } = sh;
  sh.emit({ type: 'sim-start', sample, round });
  const s0 = performance.now();
  let result: SimResult | null;
  try {
    result = await sh.simSem.run(
      () =>
        o.simulator.simulate({
          design: o.design,
          top: sh.top,
          testbench: { name: filename, content: testbench },
          limits: o.limits,
          ...(o.score ? { score: o.score } : {}),
          waivers: o.waivers,
          signal: o.signal,
        }),
      o.signal,
    );
  } catch (e) {
    if (o.signal?.aborted) return { stop: 'cancelled' };
    throw e;
  }
  const simMs = performance.now() - s0;
  // What the simulation printed goes on to the editor and into the next prompt: bounded.
  if (result) result = resultForEcho(result);
  return { result, simMs };
}

/** Keeps a finished round: the best moves if it beats it, the history grows; 'target' when the
 * best now meets the target. */
function keepRound(sh: Shared, st: SampleState, entry: AgentRound): Stop | null {
  const { rounds } = st;
  rounds.push(entry);
  if (entry.parsed.status === 'success' && better(entry.result, st.best === null ? undefined : rounds[st.best].result, sh.coverageTarget))
    st.best = rounds.length - 1;
  st.full.push({ role: 'assistant', content: stripThink(entry.reply) }, { role: 'user', content: entry.feedback });
  const bestCov = st.best === null ? null : overallCoverage(rounds[st.best].result);
  sh.emit({ type: 'round-end', sample: st.sample, round: entry.round, entry, bestCoverage: bestCov });
  return meetsTarget(bestCov, sh.coverageTarget) ? 'target' : null;
}

/** Round 0 of a warm start: the given testbench as if the model had written it (the protocol's reply
 * format), with its result and the feedback turn the next round refines from. */
function warmStartRound(w: NonNullable<AgentOptions['warmStart']>, sample: number, first: ChatMessage[], history: HistoryMode): AgentRound {
  const parsed: ParsedReply = { status: 'success', testbench: w.testbench, filename: w.filename, source: 'fence' };
  return {
    sample,
    round: 0,
    messages: first,
    reply: replyFor(w.testbench, w.filename),
    parsed,
    testbench: w.testbench,
    filename: w.filename,
    result: w.result,
    feedback: feedbackTurn(parsed, w.result),
    finishReason: 'stop',
    history,
    tokens: { prompt: 0, completion: 0 },
    modelMs: 0,
    simMs: 0,
    warmStart: true,
  };
}

// ---- One refinement step on a user's own testbench ----

export interface RefineOptions {
  backend: ModelBackend;
  design: DesignSpec;
  top: string;
  testbench: NamedText;
  /** What the simulator said: our own result record, or a log from the user's simulator run. */
  feedback: { result: SimResult } | { log: string; kind?: LogKind };
  specs?: NamedText[];
  instruction?: string;
  instance?: string;
  sampling?: Partial<SamplingParams>;
  signal?: AbortSignal;
  onText?: (piece: string) => void;
}

export interface RefineOutcome {
  messages: ChatMessage[];
  reply: string;
  parsed: ParsedReply;
  testbench: string | null;
  filename: string | null;
  finishReason: 'stop' | 'length';
  tokens: TokenUsage;
}

/** Messages for one refinement of an existing testbench: the first turn, the testbench as the
 * model's own reply, and the feedback turn built from the result or the log. */
export function refineMessages(o: Omit<RefineOptions, 'backend' | 'signal' | 'onText' | 'sampling'>): ChatMessage[] {
  const instruction = o.instruction ?? defaultInstruction(o.top, o.instance ?? DEFAULT_INSTANCE);
  const feedback =
    'result' in o.feedback
      ? feedbackTurn(
          { status: 'success', testbench: o.testbench.content, filename: o.testbench.name, source: 'fence' },
          resultForEcho(o.feedback.result),
        )
      : feedbackFromLog(o.feedback.log, o.feedback.kind);
  return [
    ...firstTurn(designContext(o.design), o.specs ?? [], instruction),
    { role: 'assistant', content: replyFor(o.testbench.content, basename(o.testbench.name)) },
    { role: 'user', content: feedback },
  ];
}

export async function refineOnce(o: RefineOptions): Promise<RefineOutcome> {
  const messages = refineMessages(o);
  const info = await o.backend.info();
  const sampling: SamplingParams = { ...DEFAULT_SAMPLING, ...o.sampling };
  if (info.contextLength !== null) {
    const need = await promptTokens(o.backend, messages);
    if (need + MIN_REPLY_TOKENS > info.contextLength) {
      const files = [...designContext(o.design), o.testbench, ...(o.specs ?? [])].map((f) => ({
        name: f.name,
        tokens: estimateTokens(f.content),
      }));
      throw new ContextBudgetError(need, info.contextLength, files);
    }
    if (need + sampling.maxNewTokens > info.contextLength) sampling.maxNewTokens = info.contextLength - need;
  }
  const c = await o.backend.complete({ messages, sampling, signal: o.signal, onText: o.onText });
  const parsed = parseReply(c.text);
  return {
    messages,
    reply: c.text,
    parsed,
    testbench: parsed.status === 'success' ? parsed.testbench : null,
    filename: parsed.status === 'success' ? testbenchName(parsed.filename, o.top) : null,
    finishReason: c.finishReason,
    tokens: { prompt: c.promptTokens, completion: c.completionTokens },
  };
}
