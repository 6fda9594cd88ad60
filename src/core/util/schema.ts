// Zod, the one schema library: a schema gives the TypeScript type, the runtime check and the JSON
// Schema (z.toJSONSchema). This module turns zod's issues into the messages CHORUS prints
// everywhere: `field.path: what is wrong`, one per bad field, naming the field and what it takes.
import * as z from 'zod';
import { settingDef, settingProblem, type SettingDef, type SettingName, type SettingValue } from '../vocabulary/settings.js';

/** `items[1].testbench.name` from zod's path; the root is `body` (HTTP) or the caller's word. */
export function fieldPath(path: ReadonlyArray<PropertyKey>, root = 'body'): string {
  let out = '';
  for (const seg of path) out += typeof seg === 'number' ? `[${seg}]` : out ? `.${String(seg)}` : String(seg);
  return out || root;
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...` : v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return typeof v;
}

const ARTICLE: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'true or false',
  object: 'a JSON object',
  array: 'an array',
  record: 'a JSON object',
  null: 'null',
};

/** Messages for the issues a schema did not word itself (schema-level `error`s take precedence). */
export const readableErrors: z.core.$ZodErrorMap = (iss) => {
  switch (iss.code) {
    case 'invalid_type':
      return `must be ${ARTICLE[iss.expected] ?? iss.expected}, got ${describe(iss.input)}`;
    case 'invalid_value':
      return `must be one of ${iss.values.map((v) => JSON.stringify(v)).join(', ')}, got ${describe(iss.input)}`;
    case 'unrecognized_keys':
      return 'unknown field';
    case 'too_small':
      return iss.origin === 'string' && Number(iss.minimum) === 1
        ? 'must not be empty'
        : `must be at least ${String(iss.minimum)}, got ${describe(iss.input)}`;
    case 'too_big':
      return `must be at most ${String(iss.maximum)}, got ${describe(iss.input)}`;
    case 'invalid_union':
      return 'matches none of the accepted forms';
    default:
      return undefined;
  }
};

/** A closed object: unknown keys are refused, the message listing the fields it takes. */
export function strictObject<S extends z.core.$ZodLooseShape>(shape: S) {
  const allowed = Object.keys(shape).join(', ');
  return z.strictObject(shape, { error: (iss) => (iss.code === 'unrecognized_keys' ? `unknown field (allowed: ${allowed})` : undefined) });
}

export interface FieldIssue {
  field: string;
  message: string;
}

/** One entry per bad field (an unknown key is its own field). Unknown keys come first: a typo
 * (`timeout` for `timeout_s`) explains the missing field reported after it. */
export function fieldIssues(error: z.ZodError, root = 'body'): FieldIssue[] {
  const unknown: FieldIssue[] = [];
  const out: FieldIssue[] = [];
  for (const iss of error.issues) {
    if (iss.code === 'unrecognized_keys') {
      for (const k of iss.keys) unknown.push({ field: fieldPath([...iss.path, k], root), message: iss.message });
    } else if (iss.code === 'invalid_key' && iss.issues.length > 0) {
      out.push({ field: fieldPath(iss.path, root), message: iss.issues[0].message });
    } else out.push({ field: fieldPath(iss.path, root), message: iss.message });
  }
  return [...unknown, ...out];
}

/** `a: x; b.c: y`: every bad field in one line. */
export function formatIssues(issues: FieldIssue[]): string {
  return issues.map((i) => `${i.field}: ${i.message}`).join('; ');
}

/** Parses with CHORUS's messages; the issues when it fails. */
export function check<S extends z.ZodType>(
  schema: S,
  data: unknown,
  root = 'body',
): { ok: true; value: z.output<S> } | { ok: false; issues: FieldIssue[] } {
  const r = schema.safeParse(data, { error: readableErrors });
  return r.success ? { ok: true, value: r.data } : { ok: false, issues: fieldIssues(r.error, root) };
}

/**
 * The zod schema of a run setting (src/core/vocabulary/settings.ts): its type, range or closed list
 * and its description, so the reward service's requests, chorus.json and their JSON Schemas take
 * each setting as it is defined, with the same message for a bad value. `extra` adds what the
 * surface does with it.
 */
export function settingSchema<N extends SettingName>(name: N, extra = ''): z.ZodType<SettingValue<N>> {
  const d: SettingDef = settingDef(name);
  const summary = d.summary.replace('{default}', String(d.default));
  const description = `${summary[0].toUpperCase()}${summary.slice(1)}.${extra ? ` ${extra}` : ''}`;
  const bad = (iss: { input?: unknown }): string => settingProblem(d, iss.input) ?? 'invalid';
  let s: z.ZodType;
  if (d.choices) s = z.enum(d.choices as [string, ...string[]], { error: `must be ${d.choices.map((c) => `'${c}'`).join(' or ')}` });
  else if (d.type === 'boolean') s = z.boolean();
  else if (d.type === 'string') s = z.string();
  else {
    let n = d.type === 'integer' ? z.int({ error: bad }) : z.number({ error: bad });
    if (d.minimum !== undefined) n = n.min(d.minimum, { error: bad });
    if (d.exclusiveMinimum !== undefined) n = n.gt(d.exclusiveMinimum, { error: bad });
    if (d.maximum !== undefined) n = n.max(d.maximum, { error: bad });
    s = n;
  }
  return s.meta({ description }) as unknown as z.ZodType<SettingValue<N>>;
}
