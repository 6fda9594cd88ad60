// Types of one agentic run (docs/protocol.md §3): direct generation + refinement rounds, every round's
// candidate and result kept (the editor shows them, training reuses them).
import type { HistoryMode } from '../vocabulary/types.js';
import type { DesignInfo, DesignSpec } from '../design/types.js';
import type { Simulator } from '../sim/simulator.js';
import type { SimLimits } from '../vocabulary/types.js';
import type { SimResult } from '../sim/result.js';
import type { ScoreMode } from '../vocabulary/types.js';
import type { Waiver } from '../coverage/waivers.js';
import type { ModelBackend } from '../llm/backend.js';
import type { SamplingParams } from '../vocabulary/types.js';
import type { ChatMessage, NamedText, ParsedReply } from './protocol.js';

export interface AgentOptions {
  backend: ModelBackend;
  simulator: Simulator;
  design: DesignSpec;
  info: DesignInfo;
  /** Specification files shown to the model after the RTL (docs/protocol.md §1). */
  specs?: NamedText[];
  /** The task's instruction; default: the reference wording naming top and instance. */
  instruction?: string;
  /** DUT instance name the testbench must use (default `uut`). */
  instance?: string;
  /** Refinement rounds after the direct generation (default 3). */
  rounds?: number;
  /** Independent samples (default 1); each is a full agentic run. */
  samples?: number;
  /** The coverage target, percent (default 100): a sample that reaches it passes and stops. */
  coverageTarget?: number;
  /** `markov` (default, the paper's evaluation) or `full` history. */
  history?: HistoryMode;
  sampling?: Partial<SamplingParams>;
  limits?: Partial<SimLimits>;
  /** How each candidate is scored (sim/result.ts ScoreMode; default `paper`). */
  score?: ScoreMode;
  waivers?: Waiver[];
  /** Simulations run at once across samples (default 1). */
  simConcurrency?: number;
  signal?: AbortSignal;
  onEvent?: (e: AgentEvent) => void;
  /** Warm start (not in the paper's protocol): this testbench and its result (the built-in
   * generator's best) are round 0 of every sample, in place of the direct generation; the model's
   * rounds refine it in the protocol's refinement turn. The run never ends below it. */
  warmStart?: { testbench: string; filename: string; result: SimResult };
}

export interface TokenUsage {
  prompt: number;
  completion: number;
}

/** One round of one sample: the model's reply, how it parsed, and the engine's verdict. */
export interface AgentRound {
  sample: number;
  /** 0 = direct generation, 1.. = refinement rounds. */
  round: number;
  /** Messages sent for this round (the editor shows them; training reuses them). */
  messages: ChatMessage[];
  /** Raw reply text (thinking block included). */
  reply: string;
  parsed: ParsedReply;
  /** The extracted testbench (null when the reply was unparsable). */
  testbench: string | null;
  filename: string | null;
  /** Engine result; null when the reply was unparsable (nothing to simulate). */
  result: SimResult | null;
  /** The user message this round produced for the next one (docs/protocol.md §3). */
  feedback: string;
  finishReason: 'stop' | 'length';
  /** Set when the model call failed (timeout, server error after retries): nothing was simulated. */
  error?: { kind: string; message: string };
  /** `markov` or `full`: which conversation this round's messages came from. */
  history: HistoryMode;
  tokens: TokenUsage;
  modelMs: number;
  simMs: number;
  /** In-process engines: prompt tokens evaluated, and reused from an earlier round's KV state. */
  cache?: { evaluatedTokens: number; reusedTokens: number };
  /** Prompt-lookup drafting: draft tokens verified and kept. */
  drafts?: { proposed: number; accepted: number };
  /** This round is the warm start's testbench, not a model reply. */
  warmStart?: boolean;
}

export interface SampleRun {
  sample: number;
  rounds: AgentRound[];
  /** Index into rounds of the best candidate by the §5 ranking; null when no round parsed. */
  best: number | null;
  /** Whether the best candidate meets the target. */
  passed: boolean;
  /** Why the sample stopped. */
  stop: 'target' | 'rounds' | 'cancelled' | 'model-error' | 'context';
}

export interface AgentRun {
  top: string;
  instance: string;
  /** The coverage target, percent. */
  coverageTarget: number;
  samples: SampleRun[];
  /** Best candidate over all samples. */
  best: { sample: number; round: number } | null;
  tokens: TokenUsage;
  cancelled: boolean;
}

export type AgentEvent =
  | { type: 'round-start'; sample: number; round: number; rounds: number }
  | { type: 'text'; sample: number; round: number; piece: string }
  | { type: 'reply'; sample: number; round: number; parsed: ParsedReply['status']; tokens: TokenUsage }
  | { type: 'sim-start'; sample: number; round: number }
  | { type: 'round-end'; sample: number; round: number; entry: AgentRound; bestCoverage: number | null }
  | { type: 'warning'; sample: number; round: number; message: string };
