// Every surface of a run setting agrees with its one definition (src/core/vocabulary/settings.ts):
// the CLI's option tables and help, the editor's settings (package.json) and how the editor reads
// them, chorus.json's schema, the reward service's request schema, the training side's copy and
// the README's table. A surface that drifts (a hand-edited package.json, a command that declares
// its own --seed, a service field with another range) fails here; `npm run gen` rewrites the
// generated ones.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { SETTINGS, snakeName, type SettingCommand, type SettingDef } from '../../src/core/vocabulary/settings.js';
import { editorConfiguration, readmeSettingsTable, README_TABLE_MARKERS, trainingSettings } from '../../src/core/vocabulary/surfaces.js';
import {
  DEFAULT_EVAL_SAMPLES,
  DEFAULT_GENERATE_SAMPLES,
  DEFAULT_INSTANCE,
  DEFAULT_LIMITS,
  DEFAULT_ROUNDS,
  DEFAULT_SAMPLING,
  DEFAULT_SEED,
  DEFAULT_COVERAGE_TARGET,
} from '../../src/core/vocabulary/defaults.js';
import { HISTORY_MODES, SCORE_MODES } from '../../src/core/vocabulary/types.js';
import { settingFlags, readSetting, settingsHelp } from '../../src/cli/settingOptions.js';
import * as generate from '../../src/cli/generate.js';
import * as refine from '../../src/cli/refine.js';
import * as sim from '../../src/cli/sim.js';
import * as evalCli from '../../src/cli/eval.js';
import * as serve from '../../src/cli/serve.js';
import { scoreItemSchema } from '../../src/core/service/requests.js';
import { projectJsonSchema } from '../../src/core/design/projectSchema.js';
import { simulatorNames } from '../../src/core/run/simulators.js';

const root = join(import.meta.dirname, '..', '..');
const defs = SETTINGS as readonly SettingDef[];
const COMMANDS: Record<SettingCommand, { OPTIONS: object; HELP: string }> = {
  generate,
  refine,
  sim,
  eval: evalCli,
  serve: { OPTIONS: serve.OPTIONS, HELP: serve.serveHelp() },
};

describe('the settings table', () => {
  it('names each setting once, and each surface spells a setting once', () => {
    const unique = (xs: Array<string | undefined>): void => {
      const present = xs.filter((x): x is string => x !== undefined);
      expect(new Set(present).size).toBe(present.length);
    };
    unique(defs.map((d) => d.name));
    unique(defs.map((d) => d.editor));
    unique(defs.map((d) => d.service));
    unique(defs.map((d) => d.cli?.flag));
  });

  it('every default is a value of its own setting, and is the engine default it stands for', () => {
    for (const d of defs) {
      expect(SETTINGS.find((s) => s.name === d.name)).toBeDefined();
      const v = d.default;
      if (d.choices) expect(d.choices).toContain(v);
      else if (d.type === 'boolean') expect(typeof v).toBe('boolean');
      else if (d.type === 'string') expect(typeof v).toBe('string');
      else {
        expect(typeof v).toBe('number');
        if (d.minimum !== undefined) expect(v).toBeGreaterThanOrEqual(d.minimum);
        if (d.exclusiveMinimum !== undefined) expect(v).toBeGreaterThan(d.exclusiveMinimum);
        if (d.maximum !== undefined) expect(v).toBeLessThanOrEqual(d.maximum);
      }
      if (d.choiceHelp) expect(d.choiceHelp).toHaveLength(d.choices!.length);
    }
    const dflt = (n: string): unknown => defs.find((d) => d.name === n)!.default;
    expect([dflt('coverageTarget'), dflt('rounds'), dflt('samples'), dflt('seed'), dflt('instance')]).toEqual([
      DEFAULT_COVERAGE_TARGET,
      DEFAULT_ROUNDS,
      DEFAULT_GENERATE_SAMPLES,
      DEFAULT_SEED,
      DEFAULT_INSTANCE,
    ]);
    expect([dflt('timeout'), dflt('buildTimeout')]).toEqual([DEFAULT_LIMITS.timeoutS, DEFAULT_LIMITS.buildTimeoutS]);
    expect([dflt('temperature'), dflt('topP'), dflt('maxNewTokens')]).toEqual([
      DEFAULT_SAMPLING.temperature,
      DEFAULT_SAMPLING.topP,
      DEFAULT_SAMPLING.maxNewTokens,
    ]);
    expect(defs.find((d) => d.name === 'samples')!.cli!.defaults).toEqual({ eval: DEFAULT_EVAL_SAMPLES });
  });

  it("the closed lists are the engine's: score modes, history modes, registered simulators", () => {
    expect(defs.find((d) => d.name === 'score')!.choices).toEqual(SCORE_MODES);
    expect(defs.find((d) => d.name === 'history')!.choices).toEqual(HISTORY_MODES);
    expect([...defs.find((d) => d.name === 'simulator')!.choices!].sort()).toEqual([...simulatorNames()].sort());
  });
});

describe('the command line', () => {
  for (const [command, { OPTIONS, HELP }] of Object.entries(COMMANDS) as Array<[SettingCommand, { OPTIONS: object; HELP: string }]>) {
    it(`chorus ${command}: its option table holds every setting it takes, and its help shows each`, () => {
      const flags = settingFlags(command);
      expect(flags.length).toBeGreaterThan(0);
      for (const f of flags) {
        expect(OPTIONS, `--${f}`).toHaveProperty([f]);
        expect(HELP).toMatch(new RegExp(`^  --${f}\\b`, 'm'));
      }
      // A setting's flag belongs to the settings table alone: no command declares one of its own.
      const settingsFlags = new Set(defs.flatMap((d) => (d.cli ? [d.cli.flag] : [])));
      const own = Object.keys(OPTIONS).filter((k) => settingsFlags.has(k));
      expect(own.sort()).toEqual([...flags].sort());
    });
  }

  it('reads a value by its definition: default, range, closed list, one message form', () => {
    expect(readSetting({}, 'rounds', 'generate')).toBe(DEFAULT_ROUNDS);
    expect(readSetting({}, 'samples', 'eval')).toBe(DEFAULT_EVAL_SAMPLES);
    expect(readSetting({ target: '90' }, 'coverageTarget')).toBe(90);
    expect(() => readSetting({ target: '150' }, 'coverageTarget')).toThrow("--target must be a number from 0 to 100, got '150'");
    expect(() => readSetting({ timeout: '0' }, 'timeout')).toThrow("--timeout must be a number > 0, got '0'");
    expect(() => readSetting({ score: 'strict' }, 'score')).toThrow("--score must be paper or legal, got 'strict'");
    expect(readSetting({}, 'score', 'sim', 'legal')).toBe('legal');
    expect(readSetting({ score: 'paper' }, 'score', 'sim', 'legal')).toBe('paper');
  });

  it('the help line says the default, the choices and the range', () => {
    expect(settingsHelp('eval', ['samples'], 26)).toContain('(default 5)');
    expect(settingsHelp('generate', ['history'])).toMatch(/^ {2}--history <mode> +markov \| full: /);
    expect(settingsHelp('generate', ['topP'])).toContain('above 0 and at most 1');
  });
});

describe('the editor', () => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

  it('package.json declares exactly the derived settings (else run: npm run gen)', () => {
    expect(pkg.contributes.configuration).toEqual(editorConfiguration());
  });

  it('reads every setting it declares through the one reader (src/extension/config.ts `setting`)', () => {
    const files = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
      );
    const src = files(join(root, 'src', 'extension'))
      .map((f) => readFileSync(f, 'utf8'))
      .join('\n');
    for (const d of defs.filter((x) => x.editor)) {
      // Written by the commands that set it (Select Model, Download a Model) is fine; read by hand is not.
      expect(src, d.editor).not.toMatch(new RegExp(`\\.get<[^>]*>\\('${d.editor!.replace(/^chorus\./, '').replace('.', '\\.')}'`));
    }
    for (const n of ['rounds', 'samples', 'coverageTarget', 'seed', 'score', 'timeout', 'buildTimeout', 'modelSource'])
      expect(src).toContain(`setting('${n}'`);
  });
});

describe('chorus.json, the reward service and the training side', () => {
  it("chorus.json's score is the setting", () => {
    const score = (projectJsonSchema() as { properties: Record<string, { enum?: string[] }> }).properties.score;
    expect(score.enum).toEqual([...SCORE_MODES]);
  });

  it("each service field takes the setting's type, range and default", () => {
    const shape = z.toJSONSchema(scoreItemSchema, { io: 'input' }) as { properties: Record<string, Record<string, unknown>> };
    for (const d of defs.filter((x) => x.service)) {
      const field = shape.properties[d.service!];
      expect(field, d.service).toBeDefined();
      const plain = (field.anyOf as Array<Record<string, unknown>> | undefined)?.find((a) => a.type !== 'null') ?? field;
      expect(plain.type).toBe(d.type);
      if (d.choices) expect(plain.enum).toEqual([...d.choices]);
      for (const k of ['minimum', 'exclusiveMinimum', 'maximum'] as const) expect(plain[k], `${d.service}.${k}`).toBe(d[k]);
    }
    expect(
      scoreItemSchema.parse({ design_files: [{ name: 'a.sv', content: 'x' }], top: 'a', testbench: { name: 't.sv', content: 'y' } }),
    ).toMatchObject({
      coverage_target: DEFAULT_COVERAGE_TARGET,
      seed: null,
      timeout_s: null,
      score: null,
    });
  });

  it('the training copy holds every setting the service or eval takes, by its Python name', () => {
    const copy = JSON.parse(readFileSync(join(root, 'training', 'chorus_train', 'run_settings.json'), 'utf8'));
    expect(copy).toEqual(JSON.parse(JSON.stringify(trainingSettings())));
    expect(copy.settings.coverage_target).toMatchObject({ default: 100, unit: 'percent', service_field: 'coverage_target' });
    expect(Object.keys(copy.settings)).toEqual(defs.filter((d) => d.service || d.eval).map((d) => snakeName(d.name)));
  });

  it("the README's table is the derived one (else run: npm run gen)", () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const [begin, end] = README_TABLE_MARKERS;
    const table = readme.slice(readme.indexOf(begin) + begin.length, readme.indexOf(end)).trim();
    expect(table).toBe(readmeSettingsTable().trim());
  });
});
