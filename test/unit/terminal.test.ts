// The CLI's terminal conventions as pure functions (the CLI test runs them end to end).
import { describe, expect, it } from 'vitest';
import { EXIT, canRedraw, useColor } from '../../src/cli/terminal.js';

const tty = { isTTY: true };
const pipe = { isTTY: false };

describe('useColor', () => {
  it('a terminal gets colour, a pipe does not', () => {
    expect(useColor(tty, {})).toBe(true);
    expect(useColor(pipe, {})).toBe(false);
  });
  it('NO_COLOR (non-empty) wins over everything; empty NO_COLOR is unset', () => {
    expect(useColor(tty, { NO_COLOR: '1' })).toBe(false);
    expect(useColor(tty, { NO_COLOR: '1', FORCE_COLOR: '1' })).toBe(false);
    expect(useColor(tty, { NO_COLOR: '' })).toBe(true);
  });
  it('FORCE_COLOR turns it on in a pipe, 0/false turn it off on a terminal', () => {
    expect(useColor(pipe, { FORCE_COLOR: '1' })).toBe(true);
    expect(useColor(pipe, { FORCE_COLOR: '' })).toBe(true);
    expect(useColor(tty, { FORCE_COLOR: '0' })).toBe(false);
    expect(useColor(tty, { FORCE_COLOR: 'false' })).toBe(false);
  });
  it('TERM=dumb gets no colour and no redrawn status line', () => {
    expect(useColor(tty, { TERM: 'dumb' })).toBe(false);
    expect(canRedraw(tty, { TERM: 'dumb' })).toBe(false);
    expect(canRedraw(tty, { TERM: 'xterm-256color' })).toBe(true);
    expect(canRedraw(pipe, {})).toBe(false);
  });
});

describe('exit codes', () => {
  it('an internal error has its own code, distinct from usage (2) and failure (1)', () => {
    expect(new Set(Object.values(EXIT)).size).toBe(Object.keys(EXIT).length);
    expect(EXIT.internal).not.toBe(EXIT.usage);
    expect(EXIT.usage).toBe(2);
  });
});
