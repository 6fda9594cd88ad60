// The documents derived from the run settings (settings.ts): the editor's settings
// (package.json `contributes.configuration`), the training side's copy
// (training/chorus_train/run_settings.json) and the README's table. Pure functions of the table;
// scripts/gen-derived.mjs writes them and test/unit/settingsSurfaces.test.ts compares them with
// the committed files.
import { SETTINGS, rangeText, snakeName, type SettingDef } from './settings.js';

const defs = SETTINGS as readonly SettingDef[];

/** A setting's JSON-Schema keywords (type, default, range, closed list). */
function jsonSchemaOf(d: SettingDef): Record<string, unknown> {
  return {
    type: d.type,
    ...(d.choices ? { enum: [...d.choices] } : {}),
    ...(d.choiceHelp ? { enumDescriptions: [...d.choiceHelp] } : {}),
    default: d.default,
    ...(d.minimum !== undefined ? { minimum: d.minimum } : {}),
    ...(d.exclusiveMinimum !== undefined ? { exclusiveMinimum: d.exclusiveMinimum } : {}),
    ...(d.maximum !== undefined ? { maximum: d.maximum } : {}),
  };
}

/** package.json's `contributes.configuration`: every setting the editor has, in the table's order. */
export function editorConfiguration(): { title: string; properties: Record<string, Record<string, unknown>> } {
  const properties: Record<string, Record<string, unknown>> = {};
  for (const d of defs) {
    if (!d.editor) continue;
    const text = d.description ?? d.summary;
    properties[d.editor] = {
      ...jsonSchemaOf(d),
      [d.markdown ? 'markdownDescription' : 'description']: text,
      ...(d.editorScope ? { scope: d.editorScope } : {}),
    };
  }
  return { title: 'CHORUS', properties };
}

/** The training side's copy: each run setting the reward service or eval takes, by its Python
 * (snake_case) name, with its unit, default and range. */
export function trainingSettings(): Record<string, unknown> {
  const settings: Record<string, Record<string, unknown>> = {};
  for (const d of defs) {
    if (!d.service && !d.eval) continue;
    settings[snakeName(d.name)] = {
      ...jsonSchemaOf(d),
      ...(d.unit ? { unit: d.unit } : {}),
      ...(d.service ? { service_field: d.service } : {}),
      description: d.summary.replace('{default}', String(d.default)),
    };
  }
  return {
    $comment: 'Generated from src/core/vocabulary/settings.ts by `npm run gen`; do not edit.',
    settings,
  };
}

const code = (s: string): string => `\`${s}\``;
const cell = (s: string): string => s.replaceAll('|', '\\|');

/** The README's table: one row per setting, where each surface spells it. */
export function readmeSettingsTable(): string {
  const rows = [
    '| setting | type (unit) | default | range / choices | `chorus` option | editor setting | chorus.json | service field |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const d of defs) {
    if (!d.cli && !d.service && !d.project && !d.eval) continue;
    const range = d.choices ? d.choices.join(', ') : d.type === 'boolean' || d.type === 'string' ? '' : rangeText(d);
    const dflt = d.cli?.defaults ? `${d.default} (${Object.entries(d.cli.defaults).map(([c, v]) => `${c}: ${v}`)})` : String(d.default);
    rows.push(
      `| ${code(d.name)} | ${d.type}${d.unit ? ` (${d.unit})` : ''} | ${cell(dflt)} | ${cell(range)} | ${
        d.cli ? `${code(`--${d.cli.flag}`)} (${d.cli.commands.join(', ')})` : ''
      } | ${d.editor ? code(d.editor) : ''} | ${d.project ? code(d.name) : ''} | ${d.service ? code(d.service) : ''} |`,
    );
  }
  return rows.join('\n') + '\n';
}

/** The markers the README's table stands between. */
export const README_TABLE_MARKERS = ['<!-- run-settings:begin (npm run gen) -->', '<!-- run-settings:end -->'] as const;
