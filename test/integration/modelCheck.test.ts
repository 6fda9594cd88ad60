// The one model check (core/run/modelCheck.ts), as the editor's worker runs it: every form of an
// endpoint URL a user types reaches the server's /v1/models, where the engine's backend looks.
import { afterEach, describe, expect, it } from 'vitest';
import { checkModel, modelsUrl } from '../../src/core/run/modelCheck.js';
import { startScriptedServer, type ScriptedServer } from '../support/scriptedServer.js';

let server: ScriptedServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

const FORMS = ['', '/v1', '/v1/', '/v1/chat/completions'];

describe('model check', () => {
  it('normalizes the endpoint as the engine does', () => {
    for (const f of FORMS) expect(modelsUrl(`http://h:8000${f}`)).toBe('http://h:8000/v1/models');
  });

  it.each(FORMS)('probes <origin>%s at /v1/models', async (form) => {
    server = await startScriptedServer([], { models: ['chorus-4b'] });
    const origin = new URL(server.url).origin;
    const r = await checkModel({ kind: 'openai', baseUrl: `${origin}${form}`, model: 'chorus-4b' });
    expect(server.paths).toEqual(['GET /v1/models']);
    expect(r).toEqual({ ok: true, models: ['chorus-4b'], message: 'the server answers; models: chorus-4b' });
  });

  it('lists the models with an empty name and refuses a name the server does not serve', async () => {
    server = await startScriptedServer([], { models: ['a', 'b'] });
    const base = `${new URL(server.url).origin}/v1/chat/completions`;
    expect(await checkModel({ kind: 'openai', baseUrl: base, model: '' })).toMatchObject({ ok: true, models: ['a', 'b'] });
    expect(await checkModel({ kind: 'openai', baseUrl: base, model: 'c' })).toMatchObject({ ok: false, message: /does not serve 'c'/ });
  });

  it('says what is wrong with a URL that is not http(s) and with a server that is down', async () => {
    expect(await checkModel({ kind: 'openai', baseUrl: 'ftp://h/v1', model: 'm' })).toMatchObject({
      ok: false,
      message: /only http and https/,
    });
    expect(await checkModel({ kind: 'openai', baseUrl: 'http://127.0.0.1:9/v1', model: 'm' })).toMatchObject({
      ok: false,
      message: /http:\/\/127\.0\.0\.1:9\/v1\/models did not answer/,
    });
    expect(await checkModel(null)).toEqual({ ok: true, message: 'model-free generator: nothing to check' });
  });
});
