// Coverage exclusions as verification engineers keep them: a waiver file, one point pattern per
// line, each with a reason. Waived points leave the scored figure; the raw figure is kept beside it.
//
// Format (text, `#` starts a comment):
//   <file>:<line>[:<type>[:<label>]]  <reason...>
//   counter.sv:27:branch:else   default arm, unreachable in 2-state simulation
//   fifo.sv:*:toggle:rdata[7]   MSB tied off in this configuration
// <file> matches the point's file by path suffix; <line> may be `*`; <type> is
// line|branch|toggle|user|* ; <label> matches the point label exactly (a bit name, `if`, `else`...).
import { readFileSync } from 'node:fs';
import type { CoveragePoint, PointType } from './model.js';

export interface Waiver {
  file: string;
  line: number | '*';
  type: PointType | '*';
  label?: string;
  reason: string;
  /** Where the waiver came from, for error messages. */
  origin?: string;
}

const TYPES = new Set(['line', 'branch', 'toggle', 'user', '*']);

export class WaiverError extends Error {}

export function parseWaivers(text: string, origin = 'waivers'): Waiver[] {
  const out: Waiver[] = [];
  text.split(/\r?\n/).forEach((raw, idx) => {
    const line = raw.replace(/(^|\s)#.*$/, '').trim();
    if (!line) return;
    const [pattern, ...rest] = line.split(/\s+/);
    const parts = pattern.split(':');
    const where = `${origin}:${idx + 1}`;
    if (parts.length < 2) throw new WaiverError(`${where}: expected <file>:<line>[:<type>[:<label>]] <reason>, got '${raw.trim()}'`);
    const [file, lineStr, type = '*', ...labelParts] = parts;
    const lineNo = lineStr === '*' ? '*' : Number.parseInt(lineStr, 10);
    if (lineNo !== '*' && !Number.isFinite(lineNo)) throw new WaiverError(`${where}: line must be a number or '*', got '${lineStr}'`);
    if (!TYPES.has(type)) throw new WaiverError(`${where}: type must be line, branch, toggle, user or '*', got '${type}'`);
    const reason = rest.join(' ');
    if (!reason) throw new WaiverError(`${where}: every waiver needs a reason (text after the pattern)`);
    out.push({
      file,
      line: lineNo,
      type: type as Waiver['type'],
      label: labelParts.length ? labelParts.join(':') : undefined,
      reason,
      origin: where,
    });
  });
  return out;
}

export function loadWaivers(path: string): Waiver[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new WaiverError(`cannot read waiver file ${path}: ${(e as Error).message}`);
  }
  return parseWaivers(text, path);
}

function fileMatches(pointFile: string, pattern: string): boolean {
  if (pointFile === pattern) return true;
  return pointFile.endsWith('/' + pattern.replace(/^\.?\//, ''));
}

export function isWaived(p: CoveragePoint, waivers: Waiver[]): Waiver | undefined {
  return waivers.find(
    (w) =>
      fileMatches(p.file, w.file) &&
      (w.line === '*' || w.line === p.line) &&
      (w.type === '*' || w.type === p.type) &&
      (w.label === undefined || w.label === p.label),
  );
}
