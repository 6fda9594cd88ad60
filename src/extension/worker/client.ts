// The extension host's side of the worker: forks dist/extension-worker.mjs once, sends typed
// requests, routes progress to the caller and turns an AbortSignal into a cancel message.
import { fork, type ChildProcess } from 'node:child_process';
import type { FromWorker, ProgressEvent, ToWorker, WorkerErrorInfo, WorkerProtocol, WorkerRequestKind } from './protocol.js';

export class WorkerError extends Error {
  constructor(readonly info: WorkerErrorInfo) {
    super(info.message);
    this.name = 'WorkerError';
  }
  get kind(): string | undefined {
    return this.info.kind;
  }
}

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  onProgress?: (e: ProgressEvent) => void;
}

export class WorkerClient {
  private child: ChildProcess | null = null;
  private nextId = 1;
  private pending = new Map<number, Pending>();

  constructor(
    private readonly script: string,
    private readonly env: () => NodeJS.ProcessEnv = () => ({}),
    private readonly log: (s: string) => void = () => undefined,
  ) {}

  private start(): ChildProcess {
    if (this.child && this.child.connected) return this.child;
    // Electron's VS Code runs the fork as plain Node with ELECTRON_RUN_AS_NODE; code-server is Node.
    const child = fork(this.script, [], {
      env: { ...process.env, ...this.env(), ELECTRON_RUN_AS_NODE: '1' },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      serialization: 'advanced',
    });
    child.stdout?.on('data', (d: Buffer) => this.log(d.toString()));
    child.stderr?.on('data', (d: Buffer) => this.log(d.toString()));
    child.on('message', (m: FromWorker) => this.onMessage(m));
    child.on('exit', (code, signal) => {
      if (this.child === child) this.child = null;
      for (const [id, p] of this.pending) {
        p.reject(new WorkerError({ message: `the CHORUS worker stopped (${signal ?? `exit code ${code}`})` }));
        this.pending.delete(id);
      }
    });
    this.child = child;
    return child;
  }

  private onMessage(m: FromWorker): void {
    const p = this.pending.get(m.id);
    if (!p) return;
    if (m.type === 'progress') p.onProgress?.(m.event);
    else if (m.type === 'result') {
      this.pending.delete(m.id);
      p.resolve(m.result);
    } else {
      this.pending.delete(m.id);
      p.reject(new WorkerError(m.error));
    }
  }

  request<K extends WorkerRequestKind>(
    kind: K,
    payload: WorkerProtocol[K][0],
    opts: { signal?: AbortSignal; onProgress?: (e: ProgressEvent) => void } = {},
  ): Promise<WorkerProtocol[K][1]> {
    if (opts.signal?.aborted) return Promise.reject(new WorkerError({ message: 'cancelled', kind: 'cancelled' }));
    const child = this.start();
    const id = this.nextId++;
    return new Promise<WorkerProtocol[K][1]>((resolve, reject) => {
      const onAbort = (): void => {
        if (this.pending.has(id)) child.send({ id, kind: 'cancel' } satisfies ToWorker);
      };
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      this.pending.set(id, {
        resolve: (v) => {
          opts.signal?.removeEventListener('abort', onAbort);
          resolve(v as WorkerProtocol[K][1]);
        },
        reject: (e) => {
          opts.signal?.removeEventListener('abort', onAbort);
          reject(e);
        },
        onProgress: opts.onProgress,
      });
      // The map's K-th entry: TypeScript cannot narrow the union from a generic K, hence the cast.
      child.send({ id, kind, payload } as ToWorker);
    });
  }

  dispose(): void {
    const c = this.child;
    this.child = null;
    if (c && c.exitCode === null) {
      c.disconnect?.();
      setTimeout(() => c.exitCode === null && c.kill('SIGKILL'), 3000).unref();
    }
  }
}
