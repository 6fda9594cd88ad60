// The dashboard protocol: the host checks every webview message before acting on it (a good one
// reaches its typed handler, a malformed one is dropped with a logged reason), and the webview's
// typed post/request helpers talk to the host's dispatcher through a JSON round trip, as
// postMessage carries them.
import { describe, expect, it } from 'vitest';
import { dispatchWebviewMessage, parseWebviewMessage, type WebviewHandlers } from '../../../src/extension/views/webviewHost.js';
import { webviewMessenger, type HostMessage, type WebviewResponse } from '../../../webview/protocol.js';

/** Handlers that record what they were called with; saveProject answers or throws. */
function recorder() {
  const calls: Array<[string, unknown]> = [];
  const handlers: WebviewHandlers = {
    ready: () => void calls.push(['ready', undefined]),
    openLocation: (d) => void calls.push(['openLocation', d]),
    openRound: (d) => void calls.push(['openRound', d]),
    diffRound: (d) => void calls.push(['diffRound', d]),
    openRunFile: (d) => void calls.push(['openRunFile', d]),
    saveProject: (d) => {
      calls.push(['saveProject', d]);
      if (d.path === '/ro/chorus.json') throw new Error('EACCES: /ro/chorus.json is read-only');
      return `saved ${d.path}`;
    },
    command: (d) => void calls.push(['command', d]),
  };
  return { calls, handlers };
}

async function dispatch(raw: unknown) {
  const { calls, handlers } = recorder();
  const replies: WebviewResponse[] = [];
  const logs: string[] = [];
  await dispatchWebviewMessage(
    raw,
    handlers,
    (r) => replies.push(r),
    (l) => logs.push(l),
  );
  return { calls, replies, logs };
}

describe('webview messages at the host boundary', () => {
  it('accepts every message the dashboard sends and hands the typed payload to its handler', async () => {
    const good = [
      { type: 'ready' },
      { type: 'openLocation', data: { file: '/d/counter.sv', line: 12 } },
      { type: 'openRound', data: { runId: 'r1', index: 0 } },
      { type: 'diffRound', data: { runId: 'r1', index: 2 } },
      { type: 'openRunFile', data: { runId: 'r1', file: 'report' } },
      { type: 'saveProject', id: 7, data: { path: '/d/chorus.json', project: { files: ['counter.sv'], top: 'counter' } } },
      { type: 'command', data: { command: 'runCoverage' } },
    ];
    for (const m of good) {
      const { calls, replies, logs } = await dispatch(m);
      expect(logs, JSON.stringify(m)).toEqual([]);
      expect(calls).toEqual([[m.type, m.data]]);
      if (m.id !== undefined) expect(replies).toEqual([{ type: 'response', id: 7, ok: true, data: 'saved /d/chorus.json' }]);
      else expect(replies).toEqual([]);
    }
  });

  it('drops a malformed message without calling any handler, and logs why', async () => {
    const bad: Array<[unknown, RegExp]> = [
      [null, /message: must be a JSON object/],
      ['ready', /message: must be a JSON object/],
      [{ type: 'rm -rf', data: {} }, /unknown message type 'rm -rf' \(known: ready, openLocation/],
      // Prototype keys are not message types.
      [{ type: 'toString' }, /unknown message type 'toString'/],
      [{ type: '__proto__' }, /unknown message type '__proto__'/],
      [{ type: 'openLocation', data: { file: '/a', line: '3' } }, /'openLocation' message: data\.line: must be a number, got "3"/],
      [{ type: 'openLocation', data: { file: '/a', line: 1.5 } }, /'openLocation' message: data\.line: must be an integer/],
      [{ type: 'openLocation' }, /'openLocation' message: data: must be a JSON object/],
      [{ type: 'openRound', data: { runId: 'r1', index: -1 } }, /'openRound' message: data\.index: must be at least 0/],
      [
        { type: 'diffRound', data: { runId: 'r1', index: 1, extra: true } },
        /'diffRound' message: data\.extra: unknown field \(allowed: runId, index\)/,
      ],
      [
        { type: 'command', data: { command: 'workbench.action.terminal.new' } },
        /'command' message: data\.command: must be one of "generate"/,
      ],
      // The webview names one of the run's files, never a path.
      [{ type: 'openRunFile', data: { runId: 'r1', file: '/etc/passwd' } }, /'openRunFile' message: data\.file: must be one of "log"/],
      [{ type: 'ready', data: { now: 1 } }, /'ready' message: data: /],
      [{ type: 'ready', verb: 'x' }, /verb: unknown field/],
    ];
    for (const [m, why] of bad) {
      const { calls, replies, logs } = await dispatch(m);
      expect(calls, JSON.stringify(m)).toEqual([]);
      expect(replies).toEqual([]);
      expect(logs).toHaveLength(1);
      expect(logs[0]).toMatch(/^\[CHORUS\] dashboard message dropped: /);
      expect(logs[0]).toMatch(why);
    }
  });

  it('answers a malformed request with the reason, so the webview does not wait forever', async () => {
    const { calls, replies, logs } = await dispatch({
      type: 'saveProject',
      id: 3,
      data: { path: '/d/chorus.json', project: { files: [] } },
    });
    expect(calls).toEqual([]);
    expect(logs[0]).toMatch(
      /'saveProject' message: data\.project: "files" \(or "fileLists", or "manifest"\) must name at least one design file/,
    );
    expect(replies).toEqual([{ type: 'response', id: 3, ok: false, error: expect.stringMatching(/must name at least one design file/) }]);
  });

  it('reports a parse result with the type narrowed', () => {
    const r = parseWebviewMessage({ type: 'command', data: { command: 'cancel' } });
    expect(r).toEqual({ ok: true, message: { type: 'command', id: undefined, data: { command: 'cancel' } } });
    expect(parseWebviewMessage({ type: 'command', id: -2, data: { command: 'cancel' } })).toMatchObject({ ok: false });
  });
});

describe('the webview messenger against the host dispatcher', () => {
  /** The webview's messenger wired to the host's dispatcher through JSON, as postMessage does. */
  function wire() {
    const { calls, handlers } = recorder();
    const logs: string[] = [];
    const toHost: Promise<void>[] = [];
    const m = webviewMessenger((msg) => {
      toHost.push(
        dispatchWebviewMessage(
          JSON.parse(JSON.stringify(msg)),
          handlers,
          (r) => m.settle(JSON.parse(JSON.stringify(r)) as HostMessage),
          (l) => logs.push(l),
        ),
      );
    });
    return { m, calls, logs, settled: () => Promise.all(toHost) };
  }

  it('posts fire-and-forget messages and resolves a request with its response', async () => {
    const { m, calls, logs, settled } = wire();
    m.post('ready');
    m.post('openRound', { runId: 'r9', index: 1 });
    await expect(m.request('saveProject', { path: '/d/chorus.json', project: { files: ['a.sv'] } })).resolves.toBe('saved /d/chorus.json');
    await settled();
    expect(logs).toEqual([]);
    expect(calls.map((c) => c[0])).toEqual(['ready', 'openRound', 'saveProject']);
  });

  it('rejects a request with the handler error or the validation reason', async () => {
    const { m, settled } = wire();
    await expect(m.request('saveProject', { path: '/ro/chorus.json', project: { files: ['a.sv'] } })).rejects.toThrow(/read-only/);
    await expect(m.request('saveProject', { path: '/d/chorus.json', project: { files: ['a.sv'], params: ['W'] } })).rejects.toThrow(
      /params\[0\]: must be NAME=VALUE/,
    );
    await settled();
  });

  it('tells a response from a pushed message', () => {
    const m = webviewMessenger(() => undefined);
    expect(m.settle({ type: 'state', data: { runs: [], project: { path: null, project: null } } })).toBe(false);
    expect(m.settle({ type: 'response', id: 99, ok: true })).toBe(true);
  });
});
