// One schema library (zod): the generated JSON documents are current, the project file refuses
// unknown keys, and a request with several bad fields names each of them in one message.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generatedSchemaFiles } from '../../src/core/service/schemaFiles.js';
import { validateProject } from '../../src/core/design/project.js';
import { validateScoreRequest } from '../../src/core/service/requests.js';

const root = join(import.meta.dirname, '..', '..');

describe('generated schema files', () => {
  for (const [path, doc] of Object.entries(generatedSchemaFiles())) {
    it(`${path} is what the zod schemas say (else run: npm run gen)`, () => {
      // Compared as JSON, not bytes: the formatter may re-indent the committed file.
      expect(JSON.parse(readFileSync(join(root, path), 'utf8'))).toEqual(JSON.parse(JSON.stringify(doc)));
    });
  }

  it('package.json points the editor at the generated chorus.json schema', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    expect(pkg.contributes.jsonValidation).toContainEqual({ fileMatch: 'chorus.json', url: './media/chorus.schema.json' });
  });
});

describe('chorus.json check', () => {
  it('refuses unknown keys (a typo must not pass silently) and names each bad field', () => {
    expect(() => validateProject({ files: ['a.sv'], includeDir: ['inc'] }, 'x/chorus.json')).toThrow(
      /^x\/chorus\.json: "includeDir" unknown field \(allowed: files, /,
    );
    expect(() => validateProject({ files: ['a.sv'], params: ['W=1', 'D'], top: 3 })).toThrow(
      /"params\[1\]" must be NAME=VALUE, got parameter "D"; "top" must be a module name/,
    );
    expect(validateProject({ files: ['a.sv'], top: '' })).toEqual({ files: ['a.sv'] });
    expect(validateProject({ files: ['a.sv'], score: 'legal' })).toEqual({ files: ['a.sv'], score: 'legal' });
    expect(() => validateProject({ files: ['a.sv'], score: 'strict' })).toThrow(/"score" must be 'paper' or 'legal'/);
    expect(validateProject({ manifest: 'Bender.yml', target: 'sim' })).toEqual({ files: [], manifest: 'Bender.yml', target: 'sim' });
  });
});

describe('reward service requests', () => {
  const item = {
    design_files: [{ name: 'a.sv', content: 'module a; endmodule' }],
    top: 'a',
    testbench: { name: 'tb.sv', content: 'module tb; endmodule' },
  };

  it('one 400 lists every bad field, unknown ones first', () => {
    let err: any;
    try {
      validateScoreRequest({ ...item, top: 5, coverage_target: 150, timeout: 3, seed: 1.5, defines: { '1x': 1 } });
    } catch (e) {
      err = e;
    }
    expect(err.status).toBe(400);
    expect(err.message).toBe(
      'timeout: unknown field (allowed: design_files, top, testbench, include_files, defines, params, coverage_target, timeout_s, seed, score); top: must be a string, got 5; ' +
        'defines.1x: not a macro name; coverage_target: must be between 0 and 100, got 150; seed: must be a whole number, got 1.5',
    );
    expect(err.extra.fields).toEqual(['timeout', 'top', 'defines.1x', 'coverage_target', 'seed']);
    expect(err.extra.field).toBe('timeout');
  });

  it("score: 'paper' or 'legal', null when not given", () => {
    expect(validateScoreRequest({ ...item, score: 'legal' }).items[0].score).toBe('legal');
    expect(validateScoreRequest({ ...item }).items[0].score).toBeNull();
    expect(() => validateScoreRequest({ ...item, score: 'strict' })).toThrow(/score/);
  });

  it('defaults and conversions match the documented request', () => {
    const { items, batch } = validateScoreRequest({
      items: [{ ...item, defines: { SIM: null, D: 16 }, params: { W: 8 }, timeout_s: null }],
    });
    expect(batch).toBe(true);
    expect(items[0]).toMatchObject({
      coverage_target: 100,
      timeout_s: null,
      seed: null,
      include_files: [],
      defines: { SIM: null, D: '16' },
      params: { W: '8' },
    });
    expect(() => validateScoreRequest({ ...item, include_files: [{ name: 'a.sv', content: '' }] })).toThrow(
      /^include_files\[0\]\.name: 'a\.sv' is also a design file$/,
    );
  });
});
