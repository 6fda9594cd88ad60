// The 2-state reader reads the design's source again after the run, so it may meet text the
// simulator never saw (the file edited since): an unfinished construct ends the scan of it, never
// the engine (before, an `assign` with no `;` sent the scan back to the first token for ever).
import { describe, expect, it } from 'vitest';
import { moduleFacts } from '../../src/core/coverage/moduleFacts.js';
import { tokenize } from '../../src/core/coverage/svStatements.js';

describe('module facts on unfinished source', () => {
  it.each([
    ['an assign with no semicolon', 'logic a; assign a = 1'],
    ['an enum type with no brace', 'typedef enum logic [1:0]'],
    ['an enum variable with no brace', 'logic b; enum logic [1:0]'],
  ])('%s ends', (_what, body) => {
    const m = moduleFacts('m', tokenize(body));
    expect(m.name).toBe('m');
  });
});
