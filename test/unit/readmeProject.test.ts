// The README's example chorus.json is what a newcomer copies first: it must be a valid project file.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { validateProject } from '../../src/core/run/sources.js';

describe("the README's chorus.json example", () => {
  it('validates against the project file schema', () => {
    const readme = readFileSync('README.md', 'utf8');
    const block = /`chorus\.json` beside it[\s\S]*?```json\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block, 'the README shows an example chorus.json').toBeDefined();
    const p = validateProject(JSON.parse(block!), 'README.md');
    expect(p.top).toBe('top');
    expect(p.files.length).toBeGreaterThan(0);
  });
});
