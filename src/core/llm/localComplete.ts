// The frame of one completion on an in-process engine (llama.ts, local.ts): both engines answer
// complete() the same way, and only the forward passes differ. Kept in one place so the two stay
// interchangeable (the tests hold the engines to the same prompt ids and the same streaming): the
// cancel checks, the wait for the shared load, one completion at a time per model, the context
// check and the cap on new tokens, the reply's bookkeeping (end tokens, the length limit, text
// streamed without half a UTF-8 character, time to the first token) and the Completion record.
// The engine contributes its prompt ids, its detokenizer and its decode loop (generate()), which
// evaluates the prompt, reusing what it can, and hands each sampled token to Reply.take().
import { ModelError, abortable, type ChatMessage, type Completion, type CompletionRequest } from './backend.js';
import type { SharedModel } from './shared.js';

/** The reply under way, as the engine's decode loop sees it. */
export interface Reply {
  readonly request: CompletionRequest;
  /** New tokens allowed: the request's, capped by the context and the engine's replyLimit. */
  readonly maxNew: number;
  /** The reply's tokens so far (end tokens excluded). */
  readonly tokens: readonly number[];
  /** Whether the request's signal has fired: the loop then stops (or throws cancelled()). */
  readonly aborted: boolean;
  cancelled(): ModelError;
  /** Takes one sampled token; false when the reply ends with it (an end token, or maxNew reached). */
  take(token: number): boolean;
}

/** What one engine contributes to complete(). */
export interface LocalEngine<L extends SharedModel> {
  /** The loaded model (acquireShared): the frame waits on it, cancellably. */
  load(): Promise<L>;
  /** The prompt's token ids under the model's chat template. */
  promptIds(l: L, messages: ChatMessage[]): number[];
  /** The context limit, tokens; null where unknown (no check, no cap). */
  contextLength(l: L): number | null;
  /** The context-overflow message: what the prompt takes, the limit, what to change. */
  overflow(promptTokens: number, contextLength: number): string;
  /** A further cap on new tokens (bench/llm's scripted reply). */
  replyLimit?: number;
  isEnd(l: L, token: number): boolean;
  /** The text of `tokens`, which start at index `at` of `reply` (the reply's tokens so far): a
   * piece streamed to onText, or (at 0) the whole reply. */
  detokenize(l: L, tokens: number[], reply: readonly number[], at: number): string;
  /** The decode loop: evaluates `prompt` (reusing the cached prefix), then samples and hands each
   * token to reply.take() until it returns false or reply.aborted. Returns what it evaluated and
   * reused, and its drafting counts. A throw while cancelled reads as the cancel. */
  generate(l: L, prompt: number[], reply: Reply): Promise<Pick<Completion, 'cache' | 'drafts'>>;
}

/** One completion on `engine`: the ModelBackend.complete() of both in-process engines. */
export async function localComplete<L extends SharedModel>(req: CompletionRequest, engine: LocalEngine<L>): Promise<Completion> {
  const t0 = performance.now();
  const cancelled = (): ModelError => new ModelError('cancelled', 'The completion was cancelled.');
  if (req.signal?.aborted) throw cancelled();
  const l = await abortable(engine.load(), req.signal, cancelled);
  const job = async (): Promise<Completion> => {
    if (req.signal?.aborted) throw cancelled();
    const ids = engine.promptIds(l, req.messages);
    let maxNew = req.sampling.maxNewTokens;
    const ctx = engine.contextLength(l);
    if (ctx != null) {
      if (ids.length >= ctx) throw new ModelError('context-overflow', engine.overflow(ids.length, ctx));
      maxNew = Math.min(maxNew, ctx - ids.length);
    }
    if (engine.replyLimit !== undefined) maxNew = Math.min(maxNew, engine.replyLimit);

    const gen: number[] = [];
    let pending: number[] = [];
    let firstTokenMs: number | null = null;
    let stopped = false;
    const flush = (final: boolean): void => {
      if (!pending.length || !req.onText) return;
      const piece = engine.detokenize(l, pending, gen, gen.length - pending.length);
      if (!final && piece.endsWith('\uFFFD')) return; // half a UTF-8 character: wait for the rest
      pending = [];
      if (piece) req.onText(piece);
    };
    const reply: Reply = {
      request: req,
      maxNew,
      tokens: gen,
      get aborted() {
        return req.signal?.aborted ?? false;
      },
      cancelled,
      take(tok) {
        firstTokenMs ??= performance.now() - t0;
        if (engine.isEnd(l, tok)) {
          stopped = true;
          return false;
        }
        gen.push(tok);
        pending.push(tok);
        flush(false);
        return gen.length < maxNew;
      },
    };
    let usage: Pick<Completion, 'cache' | 'drafts'>;
    try {
      usage = await engine.generate(l, ids, reply);
    } catch (e) {
      if (req.signal?.aborted) throw cancelled();
      throw e;
    }
    if (req.signal?.aborted) throw cancelled();
    flush(true);
    return {
      text: engine.detokenize(l, gen, gen, 0),
      promptTokens: ids.length,
      completionTokens: gen.length,
      finishReason: !stopped && gen.length >= maxNew ? 'length' : 'stop',
      firstTokenMs,
      totalMs: performance.now() - t0,
      ...usage,
    };
  };
  const p = l.queue.then(job, job);
  l.queue = p.catch(() => undefined);
  // Cancel answers at once; the native work under way (a forward pass, a prompt batch) finishes
  // in the background.
  return abortable(p, req.signal, cancelled);
}
