// The VSIX carries src/extension/README.md as its page; vsce refuses relative links there (no
// repository URL to resolve them against), which breaks packaging only at package time.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

describe('extension README (the VSIX page)', () => {
  const text = readFileSync('src/extension/README.md', 'utf8');
  it('has no relative links or images', () => {
    const links = [...text.matchAll(/!?\[[^\]]*\]\(([^)]+)\)/g)].map((m) => m[1]);
    expect(links.filter((l) => !/^(https?:|mailto:|#)/.test(l))).toEqual([]);
  });
  it('names every command the extension contributes', () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { contributes: { commands: Array<{ title: string }> } };
    for (const c of pkg.contributes.commands) expect(text).toContain(`CHORUS: ${c.title}`);
  });
  it('is the page the packager ships', () => {
    expect(readFileSync('scripts/build-extension.mjs', 'utf8')).toContain("copyFileSync('src/extension/README.md'");
  });
});
