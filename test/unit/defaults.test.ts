// The editor's settings declare their defaults in package.json (VS Code shows them there); they must
// be the engine's defaults (src/core/run/defaults.ts), or the editor and `chorus` disagree on a run
// nobody configured.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_GENERATE_SAMPLES,
  DEFAULT_INSTANCE,
  DEFAULT_LIMITS,
  DEFAULT_ROUNDS,
  DEFAULT_SAMPLING,
  DEFAULT_SEED,
  DEFAULT_TARGET,
} from '../../src/core/vocabulary/defaults.js';

const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as {
  contributes: {
    configuration: { properties: Record<string, { default?: unknown }> } | Array<{ properties: Record<string, { default?: unknown }> }>;
  };
};
const conf = pkg.contributes.configuration;
const props = Object.assign({}, ...(Array.isArray(conf) ? conf : [conf]).map((c) => c.properties)) as Record<string, { default?: unknown }>;
const setting = (key: string): unknown => {
  expect(props, `package.json declares ${key}`).toHaveProperty([key]);
  return props[key].default;
};

describe('the editor settings default to the engine defaults', () => {
  it.each([
    ['chorus.generation.rounds', DEFAULT_ROUNDS],
    ['chorus.generation.samples', DEFAULT_GENERATE_SAMPLES],
    ['chorus.generation.coverageTarget', DEFAULT_TARGET * 100],
    ['chorus.generation.dutInstance', DEFAULT_INSTANCE],
    ['chorus.generation.seed', DEFAULT_SEED],
    ['chorus.generation.temperature', DEFAULT_SAMPLING.temperature],
    ['chorus.generation.topP', DEFAULT_SAMPLING.topP],
    ['chorus.generation.maxNewTokens', DEFAULT_SAMPLING.maxNewTokens],
    ['chorus.simulator.timeoutSeconds', DEFAULT_LIMITS.timeoutS],
    ['chorus.simulator.buildTimeoutSeconds', DEFAULT_LIMITS.buildTimeoutS],
  ])('%s', (key, value) => {
    expect(setting(key)).toBe(value);
  });
});
