// The worker process (bundled as dist/extension-worker.mjs): runs the engine off the extension
// host's thread. Started by WorkerClient (../client.ts, host side) with child_process.fork (IPC
// channel); each request goes to its handler (handlers.ts), with one AbortController per request,
// cancelled by message.
import { DesignError } from '../../../core/run/sources.js';
import { HubError, ModelError } from '../../../core/run/models.js';
import { releaseModel } from './heldModel.js';
import { handlers, type Progress } from './handlers.js';
import type { FromWorker, ToWorker, WorkerErrorInfo, WorkerProtocol, WorkerRequestKind } from '../protocol.js';

const controllers = new Map<number, AbortController>();

function send(m: FromWorker): void {
  process.send?.(m);
}

function errorInfo(e: unknown, signal?: AbortSignal): WorkerErrorInfo {
  // A cancelled download says whether anything was kept for the next one to resume.
  if (e instanceof HubError && e.kind === 'cancelled') return { message: e.message, kind: 'cancelled' };
  if (signal?.aborted) return { message: 'cancelled', kind: 'cancelled' };
  if (e instanceof DesignError) return { message: e.message, kind: e.kind, candidates: e.candidates, diagnostics: e.diagnostics };
  if (e instanceof ModelError) return { message: e.message, kind: e.kind === 'cancelled' ? 'cancelled' : `model-${e.kind}` };
  // A hub's messages are user-ready; `ambiguous` carries the selectors to choose from.
  if (e instanceof HubError)
    return {
      message: e.message,
      kind: e.kind === 'cancelled' ? 'cancelled' : `hub-${e.kind}`,
      ...(e.choices.length ? { candidates: e.choices } : {}),
    };
  return { message: e instanceof Error ? e.message : String(e) };
}

async function handle(req: ToWorker): Promise<void> {
  if (req.kind === 'cancel') {
    controllers.get(req.id)?.abort();
    return;
  }
  const ctl = new AbortController();
  controllers.set(req.id, ctl);
  const progress: Progress = (event) => send({ id: req.id, type: 'progress', event });
  try {
    // The union of (kind, payload) pairs cannot be narrowed through a generic index: the map
    // (handlers.ts) is what keeps each payload with its handler.
    const handler = handlers[req.kind] as (
      p: unknown,
      signal: AbortSignal,
      progress: Progress,
    ) => Promise<WorkerProtocol[WorkerRequestKind][1]>;
    send({ id: req.id, type: 'result', result: await handler(req.payload, ctl.signal, progress) });
  } catch (e) {
    send({ id: req.id, type: 'error', error: errorInfo(e, ctl.signal) });
  } finally {
    controllers.delete(req.id);
  }
}

if (process.send) {
  process.on('message', (m: ToWorker) => void handle(m));
  process.on('disconnect', () => {
    for (const c of controllers.values()) c.abort();
    void releaseModel();
    setTimeout(() => process.exit(0), 2000).unref();
  });
}
