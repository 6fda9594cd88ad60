// The host's end of the dashboard protocol (webview/protocol.ts): every message from the webview is
// checked here against a zod schema before anything acts on it, then handed to the typed handler of
// its type; a request (one with an `id`) gets its response. A malformed message is dropped with the
// reason logged: the webview runs untrusted HTML, and a bad message is a bug worth seeing, not
// something to act on half-way. Pure: no vscode import (unit-tested in test/unit/extension).
import * as z from 'zod';
import { projectFileSchema } from '../../core/run/sources.js';
import { check, formatIssues, strictObject } from '../../core/run/frontEnd.js';
import { DASHBOARD_COMMANDS, RUN_FILES, type FromWebview, type WebviewResponse } from '../../../webview/protocol.js';

const location = strictObject({ file: z.string().min(1), line: z.number().int().min(0) });
const round = strictObject({ runId: z.string().min(1), index: z.number().int().min(0) });

/** One payload schema per FromWebview type; `satisfies` keeps them in step with the type map. */
export const fromWebviewSchemas = {
  ready: z.undefined().optional(),
  openLocation: location,
  openRound: round,
  diffRound: round,
  openRunFile: strictObject({ runId: z.string().min(1), file: z.enum(RUN_FILES) }),
  saveProject: strictObject({ path: z.string().min(1).nullable(), project: projectFileSchema }),
  command: strictObject({ command: z.enum(DASHBOARD_COMMANDS) }),
} satisfies { [K in keyof FromWebview]: z.ZodType<FromWebview[K][0]> };

/** `id`: set on a request, echoed in its response. */
const requestId = z.number().int().min(0).optional();
/** First the envelope, so that a bad `type` is named as such before its payload is read. */
const envelope = strictObject({ type: z.string().min(1), id: requestId, data: z.unknown().optional() });

/** A checked message: its payload has the type its `type` names. */
export type ParsedWebviewMessage = {
  [K in keyof FromWebview]: { type: K; id?: number; data: FromWebview[K][0] };
}[keyof FromWebview];

export type ParseResult = { ok: true; message: ParsedWebviewMessage } | { ok: false; reason: string; id?: number };

const TYPES = Object.keys(fromWebviewSchemas) as Array<keyof FromWebview>;
const isType = (t: string): t is keyof FromWebview => (TYPES as string[]).includes(t);
const messageSchemas: Record<string, z.ZodType> = Object.fromEntries(
  TYPES.map((t) => [t, strictObject({ type: z.literal(t), id: requestId, data: fromWebviewSchemas[t] })]),
);

/** The message if it is one the host takes, else why not (the request `id` kept, to answer it). */
export function parseWebviewMessage(raw: unknown): ParseResult {
  const env = check(envelope, raw, 'message');
  if (!env.ok) return { ok: false, reason: formatIssues(env.issues) };
  const { type, id } = env.value;
  if (!isType(type)) return { ok: false, id, reason: `unknown message type '${type}' (known: ${TYPES.join(', ')})` };
  const full = check(messageSchemas[type], raw, 'message');
  if (!full.ok) return { ok: false, id, reason: `'${type}' message: ${formatIssues(full.issues)}` };
  return { ok: true, message: full.value as ParsedWebviewMessage };
}

/** The host's handlers, one per FromWebview type. */
export type WebviewHandlers = {
  [K in keyof FromWebview]: (data: FromWebview[K][0]) => FromWebview[K][1] | Promise<FromWebview[K][1]>;
};

/**
 * Checks `raw`, runs its handler and answers a request through `reply`. A message that fails the
 * check is dropped with `log`ged reason (a request is answered with it too, so the webview does not
 * wait forever); a handler that throws answers the request with its message.
 */
export async function dispatchWebviewMessage(
  raw: unknown,
  handlers: WebviewHandlers,
  reply: (r: WebviewResponse) => void,
  log: (line: string) => void,
): Promise<void> {
  const parsed = parseWebviewMessage(raw);
  if (!parsed.ok) {
    log(`[CHORUS] dashboard message dropped: ${parsed.reason}`);
    if (parsed.id !== undefined) reply({ type: 'response', id: parsed.id, ok: false, error: parsed.reason });
    return;
  }
  const { type, id, data } = parsed.message;
  try {
    const handler = handlers[type] as (d: unknown) => unknown;
    const result = await handler(data);
    if (id !== undefined) reply({ type: 'response', id, ok: true, data: result });
  } catch (e) {
    const error = e instanceof Error ? e.message : String(e);
    if (id !== undefined) reply({ type: 'response', id, ok: false, error });
    else log(`[CHORUS] dashboard ${type} failed: ${error}`);
  }
}
