// The reward service's request bodies, one zod schema per endpoint: the TypeScript types, the
// runtime check (unknown fields refused, file names kept inside the design directory) and the
// OpenAPI document (docs/reward-service.openapi.json, scripts/gen-derived.mjs) come from here.
import * as z from 'zod';
import { SIM_STATUSES } from '../sim/result.js';
import { check, formatIssues, settingSchema, strictObject, type FieldIssue } from '../util/schema.js';
import { settingDefault } from '../vocabulary/settings.js';
import { DEFAULT_INSTANCE } from '../vocabulary/defaults.js';

// ---------------------------------------------------------------------------------------------
// Errors a client gets as HTTP statuses

export class ServiceError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'ServiceError';
  }
}

export const bad = (field: string, what: string): ServiceError =>
  new ServiceError(400, 'bad_request', `${field}: ${what}`, { field, fields: [field] });

function badFields(issues: FieldIssue[]): ServiceError {
  return new ServiceError(400, 'bad_request', formatIssues(issues), {
    field: issues[0]?.field ?? 'body',
    fields: issues.map((i) => i.field),
  });
}

/** The body checked against `schema`, or a 400 listing every bad field. */
export function parseBody<S extends z.ZodType>(schema: S, raw: unknown, root = 'body'): z.output<S> {
  const r = check(schema, raw, root);
  if (!r.ok) throw badFields(r.issues);
  return r.value;
}

// ---------------------------------------------------------------------------------------------
// Pieces

const SEGMENT = /^[A-Za-z0-9_.+-]+$/;
const IDENT = /^[A-Za-z_][A-Za-z0-9_$]*$/;

/** Why `name` is not a relative path of plain segments (absolute, `..`, backslash, odd bytes), or null. */
export function fileNameProblem(name: string, allowDirs: boolean): string | null {
  if (name.startsWith('/') || /^[A-Za-z]:/.test(name)) return `'${name}' is an absolute path; give a relative file name`;
  if (name.includes('\\') || name.includes('\0')) return `'${name}' contains a backslash or NUL byte`;
  const segs = name.split('/');
  for (const s of segs) {
    if (s === '..') return `'${name}' contains '..'; file names must stay inside the design directory`;
    if (s === '' || s === '.') return `'${name}' has an empty or '.' path segment`;
    if (!SEGMENT.test(s)) return `'${name}' may contain only letters, digits and _ . + - in each path segment`;
    if (s.startsWith('-')) return `'${name}' has a segment starting with '-'`;
  }
  if (!allowDirs && segs.length > 1) return `'${name}' must be a plain file name without directories`;
  if (name.length > 255) return 'file name longer than 255 characters';
  return null;
}

const fileName = (allowDirs: boolean) =>
  z
    .string()
    .min(1, { error: 'must not be empty', abort: true })
    .superRefine((name, ctx) => {
      const p = fileNameProblem(name, allowDirs);
      if (p) ctx.addIssue({ code: 'custom', message: p });
    })
    .meta({
      description: allowDirs
        ? 'Relative path of plain segments (letters, digits, _ . + -); no absolute paths, no `..`.'
        : 'Plain file name (letters, digits, _ . + -), no directories.',
      maxLength: 255,
    });

const namedText = (allowDirs: boolean, nonEmpty = false) =>
  strictObject({ name: fileName(allowDirs), content: nonEmpty ? z.string().min(1, 'must not be empty') : z.string() });

const fileList = (min: number) =>
  z
    .array(namedText(true), { error: (iss) => (iss.code === 'invalid_type' ? 'must be an array of {name, content}' : undefined) })
    .min(min, `must hold at least ${min} file${min === 1 ? '' : 's'}`)
    .superRefine((files, ctx) => {
      const seen = new Set<string>();
      files.forEach((f, i) => {
        if (seen.has(f.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `duplicate file name '${f.name}'` });
        seen.add(f.name);
      });
    });

const identifier = (what: string) =>
  z
    .string()
    .min(1, { error: 'must not be empty', abort: true })
    .regex(IDENT, { error: (iss) => `'${String(iss.input)}' is not ${what}` });

const defines = z
  .record(
    z.string().regex(IDENT, 'not a macro name'),
    z.union([z.string(), z.number(), z.null()], { error: 'must be a string, a number or null' }),
  )
  .transform(
    (o) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, v === null ? null : String(v)])) as Record<string, string | null>,
  )
  .meta({ description: '`+define+`: NAME to value, null for a bare define.' });

const params = z
  .record(z.string().regex(IDENT, 'not a parameter name'), z.union([z.string(), z.number()], { error: 'must be a string or a number' }))
  .transform((o) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, String(v)])) as Record<string, string>)
  .meta({ description: 'Top-level parameter overrides (`-G`).' });

/** Include files must not repeat a design file's name (the design directory holds both). */
function noCollisions(o: { design_files: Array<{ name: string }>; include_files: Array<{ name: string }> }, ctx: z.RefinementCtx): void {
  o.include_files.forEach((f, i) => {
    if (o.design_files.some((d) => d.name === f.name))
      ctx.addIssue({ code: 'custom', path: ['include_files', i, 'name'], message: `'${f.name}' is also a design file` });
  });
}

const designShape = {
  design_files: fileList(1).meta({ description: 'RTL, compiled in the order given (packages first automatically).' }),
  include_files: fileList(0)
    .default([])
    .meta({ description: 'Files reachable by `include (the design directory is on the include path), not compiled.' }),
  defines: defines.default({}),
  params: params.default({}),
};

// ---------------------------------------------------------------------------------------------
// Endpoints

/** What a score request says of how to score, the same for every testbench of a group. */
const scoreSettings = {
  coverage_target: settingSchema('coverageTarget', '`passed` is `coverage >= coverage_target / 100`.').default(
    settingDefault('coverageTarget'),
  ),
  timeout_s: settingSchema('timeout', "Clamped to the service's --max-timeout.")
    .nullish()
    .transform((v) => v ?? null),
  seed: settingSchema('seed', "Here: the simulator's random seed.")
    .nullish()
    .transform((v) => v ?? null),
  score: settingSchema(
    'score',
    'Such a failed run has status xrun_failed; in either mode `dutAssertions` lists the assertions that failed.',
  )
    .nullish()
    .transform((v) => v ?? null),
};

const top = identifier('a module name').meta({ description: 'DUT top module.' });

function testbenchNotDesign(
  o: { design_files: Array<{ name: string }>; include_files: Array<{ name: string }> },
  name: string,
  path: Array<string | number>,
  ctx: z.RefinementCtx,
): void {
  if ([...o.design_files, ...o.include_files].some((d) => d.name === name))
    ctx.addIssue({ code: 'custom', path, message: `'${name}' is also a design file name` });
}

/** The design a score request names (one item, or the one design of a group), in two parts: the
 * testbench (or testbenches) come between them, the order the fields have always been listed in. */
const scoreDesign = { design_files: designShape.design_files, top };
const scoreDesignRest = { include_files: designShape.include_files, defines: designShape.defines, params: designShape.params };

export const scoreItemSchema = strictObject({
  ...scoreDesign,
  testbench: namedText(false, true).meta({ description: 'The candidate testbench; `name` is a plain file name.' }),
  ...scoreDesignRest,
  ...scoreSettings,
}).superRefine((o, ctx) => {
  noCollisions(o, ctx);
  testbenchNotDesign(o, o.testbench.name, ['testbench', 'name'], ctx);
});
export type ScoreItem = z.output<typeof scoreItemSchema>;

export const scoreBatchSchema = strictObject({
  items: z
    .array(scoreItemSchema, { error: (iss) => (iss.code === 'invalid_type' ? 'must be an array of score requests' : undefined) })
    .min(1, 'must hold at least one request'),
});

/** The most testbenches one group request may carry (RL's groups are 8 to 64 samples). */
export const MAX_GROUP = 64;

/** `POST /v1/score` for a group: one design, several testbenches (RL's samples of one prompt),
 * scored together; each testbench gets the result it would get alone. */
export const scoreGroupSchema = strictObject({
  ...scoreDesign,
  testbenches: z
    .array(namedText(false, true), {
      error: (iss) => (iss.code === 'invalid_type' ? 'must be an array of {name, content}' : undefined),
    })
    .min(1, 'must hold at least one testbench')
    .max(MAX_GROUP, `must hold at most ${MAX_GROUP} testbenches (send larger groups as several requests)`)
    .meta({ description: `The candidate testbenches, 1 to ${MAX_GROUP}; answered \`{results: [...]}\` in this order.` }),
  ...scoreDesignRest,
  ...scoreSettings,
}).superRefine((o, ctx) => {
  noCollisions(o, ctx);
  o.testbenches.forEach((t, i) => testbenchNotDesign(o, t.name, ['testbenches', i, 'name'], ctx));
});

/** `POST /v1/score`: one item, `{items: [...]}`, or a group `{..., testbenches: [...]}` (both
 * answered `{results: [...]}` in the same order). */
export const scoreRequestSchema = z.union([scoreItemSchema, scoreBatchSchema, scoreGroupSchema]);

/** The request's items, whether the answer is a list of results, and whether they are one group. */
export function validateScoreRequest(raw: unknown): { items: ScoreItem[]; batch: boolean; group: boolean } {
  // Decided by the `items` / `testbenches` key rather than a union, so the errors are the form's own.
  if (typeof raw === 'object' && raw !== null && !Array.isArray(raw) && 'items' in raw) {
    if (Object.keys(raw).length !== 1) throw bad('items', 'a batch request holds only `items`');
    return { items: parseBody(scoreBatchSchema, raw).items, batch: true, group: false };
  }
  if (typeof raw === 'object' && raw !== null && !Array.isArray(raw) && 'testbenches' in raw) {
    const { testbenches, ...rest } = parseBody(scoreGroupSchema, raw);
    return { items: testbenches.map((testbench) => ({ ...rest, testbench })), batch: true, group: true };
  }
  return { items: [parseBody(scoreItemSchema, raw)], batch: false, group: false };
}

export const introspectRequestSchema = strictObject({
  ...designShape,
  top: identifier('a module name')
    .nullish()
    .transform((v) => v ?? null)
    .meta({ description: 'The top to check; omitted: the engine finds the candidates.' }),
}).superRefine(noCollisions);
export type IntrospectItem = z.output<typeof introspectRequestSchema>;

const parseStatus = z.enum(['success', 'unparsable', 'failed'], {
  error: (iss) => `must be 'success' or 'unparsable', got ${JSON.stringify(iss.input)}`,
});

/** A result record as `/v1/score` or `chorus sim --json` gave it: checked where the feedback reads it. */
const resultIn = z
  .looseObject({
    status: z.enum(SIM_STATUSES, { error: `must be one of ${SIM_STATUSES.join(', ')}` }),
    err_msg: z.string().optional(),
    diagnostics: z.array(z.looseObject({ severity: z.string(), message: z.string() })).optional(),
    cov_info: z.looseObject({ detail: z.string().optional() }).nullish(),
  })
  .superRefine((r, ctx) => {
    if (r.status === 'success' && typeof r.cov_info?.detail !== 'string')
      ctx.addIssue({ code: 'custom', path: ['cov_info', 'detail'], message: 'a successful result needs the coverage report text' });
  });

export const refinePromptRequestSchema = strictObject({
  result: resultIn.nullish().meta({ description: 'The result record of the last testbench; required when the reply parsed.' }),
  reply: z.string().optional().meta({ description: "The model's raw reply; parsed by the protocol's own parser." }),
  parse_status: parseStatus.optional().meta({ description: "Instead of `reply`: 'success' or 'unparsable'." }),
  parse_reason: z.string().min(1).optional().meta({ description: "With parse_status 'unparsable': why." }),
}).superRefine((o, ctx) => {
  if (o.reply !== undefined && o.parse_status !== undefined)
    ctx.addIssue({ code: 'custom', path: ['parse_status'], message: 'give either reply or parse_status, not both' });
  if (o.reply === undefined && o.parse_reason !== undefined && (o.parse_status ?? 'success') === 'success')
    ctx.addIssue({ code: 'custom', path: ['parse_reason'], message: "only with parse_status 'unparsable'" });
});
export type RefinePromptRequest = z.output<typeof refinePromptRequestSchema>;

export const parseReplyRequestSchema = strictObject({ reply: z.string().meta({ description: "The model's raw reply." }) });

export const firstTurnRequestSchema = strictObject({
  design_files: fileList(1),
  specs: fileList(0).default([]).meta({ description: 'Specification documents shown with the RTL.' }),
  top: z.string().min(1, 'must not be empty').optional().meta({ description: 'DUT top module; required unless `instruction` is given.' }),
  instance: identifier('an instance name').default(DEFAULT_INSTANCE),
  instruction: z.string().min(1, 'must not be empty').optional().meta({ description: 'Replaces the default instruction.' }),
}).superRefine((o, ctx) => {
  if (o.top === undefined && o.instruction === undefined)
    ctx.addIssue({ code: 'custom', path: ['top'], message: 'must be a string, got undefined (required unless `instruction` is given)' });
});
export type FirstTurnRequest = z.output<typeof firstTurnRequestSchema>;
