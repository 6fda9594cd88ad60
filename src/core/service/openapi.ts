// The reward service as an OpenAPI 3.1 document (docs/reward-service.openapi.json), built from the
// request schemas the server checks with (requests.ts) and zod forms of its answers, so the
// document cannot drift from the code: test/unit/schemas.test.ts fails when the file is stale.
import * as z from 'zod';
import { SIM_STATUSES } from '../sim/result.js';
import {
  firstTurnRequestSchema,
  introspectRequestSchema,
  parseReplyRequestSchema,
  refinePromptRequestSchema,
  scoreRequestSchema,
} from './requests.js';

const errorBody = z
  .looseObject({
    error: z.string().meta({
      description:
        'bad_request, request_timeout, body_too_large, batch_too_large, queue_full, shutting_down, service_failure, idempotency_key_reused, design_error, internal_error, not_found, ...',
    }),
    message: z.string().meta({ description: 'What is wrong; schema errors list each bad field as `path: what`, separated by `; `.' }),
    field: z.string().optional().meta({ description: 'The first bad field (400).' }),
    fields: z.array(z.string()).optional().meta({ description: 'Every bad field (400).' }),
    retry_after_s: z.number().optional().meta({ description: 'With 429 and 503: seconds to wait (also the Retry-After header).' }),
    cause: z.string().optional().meta({
      description:
        "With service_failure: worker_killed, disk_full, disk_unwritable, resources, simulator_exception, disk_low, memory_high. Never the testbench's fault: score it again.",
    }),
  })
  .meta({ description: 'An error answer.' });

const itemError = z.looseObject({
  error: z.enum(['design_error', 'internal_error', 'aborted', 'service_failure']),
  status: z.int(),
  kind: z.string().optional(),
  message: z.string(),
  candidates: z.array(z.string()).optional(),
  diagnostics: z.array(z.unknown()).optional(),
});

const scoreRecord = z
  .looseObject({
    status: z.enum(SIM_STATUSES),
    reward: z.number().meta({ description: 'R = 1 + c when the testbench ran and yielded coverage, else 0 (docs/protocol.md §5).' }),
    coverage: z.number().min(0).max(1).meta({ description: "c: the DUT's overall coverage fraction when the testbench ran, else 0." }),
    passed: z.boolean().meta({ description: 'coverage >= coverage_target / 100.' }),
    coverage_target: z.number().meta({ description: 'The coverage target the request asked for, percent.' }),
    err_msg: z.string(),
    diagnostics: z.array(
      z.looseObject({
        file: z.string(),
        line: z.int(),
        column: z.int(),
        severity: z.enum(['error', 'warning', 'info']),
        message: z.string(),
      }),
    ),
    cov_info: z.looseObject({ detail: z.string() }).nullable(),
    coverage_breakdown: z.looseObject({}).nullable().meta({ description: 'Coverage figures after and before waivers.' }),
    design_cached: z.boolean(),
  })
  .meta({ description: 'The result record as `chorus sim --json` prints it (README, "The result record"), plus the reward fields.' });

const chatMessage = z.strictObject({ role: z.enum(['system', 'user', 'assistant']), content: z.string() });
const parsedReply = z.union([
  z.strictObject({
    status: z.literal('success'),
    testbench: z.string(),
    filename: z.string().nullable(),
    source: z.enum(['fence', 'module']),
  }),
  z.strictObject({ status: z.literal('unparsable'), reason: z.string() }),
]);

const introspectAnswer = z.strictObject({
  top_candidates: z.array(z.string()).meta({ description: 'Modules nobody instantiates; exactly one means the top is unambiguous.' }),
  top: z.string().nullable().meta({ description: 'The top the engine would simulate; null when ambiguous.' }),
  modules: z
    .array(
      z.strictObject({
        name: z.string(),
        ports: z.array(z.strictObject({ name: z.string(), direction: z.string(), width: z.int() })),
        instantiates: z.array(z.string()),
      }),
    )
    .optional(),
  warnings: z.array(z.string()).optional(),
});

const health = z.looseObject({
  status: z.enum(['ok', 'draining']),
  simulator: z.looseObject({ name: z.string(), version: z.string() }),
  workers: z.int(),
  queue_depth: z.int(),
  queue_limit: z.int(),
  in_flight: z.int(),
  uptime_s: z.number(),
  mean_run_s: z.number().nullable(),
  design_cache_entries: z.int(),
  max_timeout_s: z.number(),
});

function schema(s: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const { $schema: _drop, ...rest } = z.toJSONSchema(s, { target: 'draft-2020-12', io }) as Record<string, unknown>;
  return rest;
}

const readiness = z.looseObject({
  status: z.enum(['ready', 'not_ready', 'draining']),
  cause: z.enum(['disk_low', 'memory_high']).optional(),
  message: z.string().optional(),
  checks: z.looseObject({
    workers: z.looseObject({ ok: z.boolean() }),
    disk: z.array(z.looseObject({ path: z.string(), free_bytes: z.number().nullable(), ok: z.boolean() })),
    min_free_disk_bytes: z.number(),
    memory: z.looseObject({ ok: z.boolean(), rss_bytes: z.number(), max_rss_bytes: z.number() }),
  }),
});

const idempotencyKey = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    "The request's id (1 to 200 visible ASCII characters; a UUID fits). A retry with the same key gets the recorded answer (200 or 422) instead of a second run; absent, the service makes one. Either way it comes back in the Idempotency-Key answer header; a replay also carries Idempotent-Replayed: true. The same key with another body is 422 idempotency_key_reused.",
  schema: { type: 'string', pattern: '^[\\x21-\\x7e]{1,200}$' },
};

const json = (s: z.ZodType, io: 'input' | 'output' = 'output') => ({ content: { 'application/json': { schema: schema(s, io) } } });
const errors = (codes: Record<string, string>) =>
  Object.fromEntries(Object.entries(codes).map(([code, description]) => [code, { description, ...json(errorBody) }]));
const common = {
  '400': 'A malformed body or a schema error, naming each bad field.',
  '408':
    'The request (headers and body) was not received within --client-timeout seconds (error request_timeout); the connection is closed.',
  '413':
    'The body is over --body-limit (error body_too_large, with limit_bytes); the body is read to its end first, so the client reads this answer.',
  '503':
    'The server is shutting down, or (score) a service failure: a killed simulation, a full disk, memory over its limit (error service_failure, with cause). Retry, here or on another instance, with the same Idempotency-Key.',
};

function post(summary: string, request: z.ZodType, answer: z.ZodType, more: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    post: {
      summary,
      requestBody: { required: true, ...json(request, 'input') },
      responses: { '200': { description: 'OK', ...json(answer) }, ...errors(common), ...more },
    },
  };
}

function withParameters(path: Record<string, unknown>, parameters: unknown[]): Record<string, unknown> {
  const op = path.post as Record<string, unknown>;
  return { post: { ...op, parameters } };
}

export function rewardServiceOpenApi(): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: {
      title: 'CHORUS reward service (chorus serve)',
      version: '1',
      description:
        'Simulation as a service for RL training: the reward of a candidate testbench, and the protocol prompts. See docs/reward-service.md.',
    },
    servers: [{ url: 'http://127.0.0.1:8080' }],
    paths: {
      '/v1/score': withParameters(
        post(
          'Simulate a testbench, a batch (items), or a group (testbenches: several candidates of one design, scored together, each exactly as alone) and return the result record(s) with the reward.',
          scoreRequestSchema,
          z.union([scoreRecord, z.strictObject({ results: z.array(z.union([scoreRecord, itemError])) })]),
          {
            ...errors({ '429': 'The queue is full; retry after Retry-After seconds.', '500': 'An internal error.' }),
            '422': {
              description:
                'The design does not elaborate (design_error, with kind, candidates, diagnostics), or the Idempotency-Key was used for another body (idempotency_key_reused).',
              ...json(itemError),
            },
          },
        ),
        [idempotencyKey],
      ),
      '/v1/introspect': post(
        "The engine's view of a design: top candidates and the ports of each module.",
        introspectRequestSchema,
        introspectAnswer,
        {
          ...errors({ '429': 'The queue is full.' }),
          '422': { description: 'The design does not parse.', ...json(itemError) },
        },
      ),
      '/v1/refine-prompt': post(
        'The feedback turn for the next refinement, byte for byte what CHORUS sends.',
        refinePromptRequestSchema,
        z.strictObject({ content: z.string(), parsed: parsedReply }),
      ),
      '/v1/first-turn': post(
        'The first-turn messages (system and user) for a design.',
        firstTurnRequestSchema,
        z.strictObject({ messages: z.array(chatMessage) }),
      ),
      '/v1/parse-reply': post(
        "The protocol's parse of a raw model reply.",
        parseReplyRequestSchema,
        z.strictObject({ parsed: parsedReply }),
      ),
      '/v1/health': {
        get: {
          summary: 'Liveness and load.',
          responses: {
            '200': { description: 'Serving.', ...json(health) },
            '503': { description: 'Draining (shutting down).', ...json(health) },
          },
        },
      },
      '/healthz': {
        get: {
          summary: 'Liveness: the process answers (200 also while draining, so an orchestrator lets it finish).',
          responses: {
            '200': {
              description: 'Alive.',
              ...json(z.looseObject({ status: z.enum(['ok', 'draining']), uptime_s: z.number() })),
            },
          },
        },
      },
      '/readyz': {
        get: {
          summary: 'Readiness: accepting work (workers up, free disk of the run-directory file system and service RSS within limits).',
          responses: {
            '200': { description: 'Ready.', ...json(readiness) },
            '503': { description: 'Not ready (draining, disk_low or memory_high): take it out of rotation.', ...json(readiness) },
          },
        },
      },
      '/metrics': {
        get: {
          summary: 'Prometheus text exposition (chorus_* series and process metrics).',
          responses: {
            '200': { description: 'OK', content: { 'text/plain; version=0.0.4; charset=utf-8': { schema: { type: 'string' } } } },
          },
        },
      },
    },
  };
}
