// The run settings on the command line, derived from their one definition
// (src/core/vocabulary/settings.ts): each command's option rows, its help lines and the reading of
// a value (default, range, closed list, the same messages for every command). A command lists no
// setting of its own; test/unit/settingsSurfaces.test.ts checks that every setting a command takes
// is in its option table and its help.
import {
  SETTINGS,
  rangeText,
  settingDefault,
  type Setting,
  type SettingCommand,
  type SettingDef,
  type SettingName,
  type SettingValue,
} from '../core/vocabulary/settings.js';
import { numberOption } from './command.js';

/** The names of the settings `chorus <C>` takes. */
export type CommandSettingName<C extends SettingCommand> = Setting extends infer S
  ? S extends { name: infer N; cli: { commands: readonly (infer X)[] } }
    ? C extends X
      ? N
      : never
    : never
  : never;

type SettingFlag<S> = S extends { cli: { flag: infer F extends string } } ? F : never;
type SettingOption<S> = S extends { type: 'boolean' } ? { readonly type: 'boolean' } : { readonly type: 'string' };

/** The parseArgs rows of `chorus <C>`'s settings, typed by flag. */
export type CommandSettingOptions<C extends SettingCommand> = {
  readonly [S in Setting as S['name'] extends CommandSettingName<C> ? SettingFlag<S> : never]: SettingOption<S>;
};

const ofCommand = (command: SettingCommand): SettingDef[] =>
  (SETTINGS as readonly SettingDef[]).filter((d) => d.cli?.commands.includes(command));

/** The option rows of every setting `chorus <command>` takes. */
export function settingOptions<C extends SettingCommand>(command: C): CommandSettingOptions<C> {
  return Object.fromEntries(
    ofCommand(command).map((d) => [d.cli!.flag, { type: d.type === 'boolean' ? 'boolean' : 'string' }]),
  ) as unknown as CommandSettingOptions<C>;
}

/** The flags of the settings `chorus <command>` takes (the surfaces test). */
export const settingFlags = (command: SettingCommand): string[] => ofCommand(command).map((d) => d.cli!.flag);

function defaultText(d: SettingDef, command: SettingCommand): string {
  const v = d.cli?.defaults?.[command] ?? d.default;
  return typeof v === 'string' && v === '' ? '""' : String(v);
}

/** Text `words` broken into lines of at most `width` characters. */
function wrap(words: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const w of words.split(' ')) {
    if (line && line.length + 1 + w.length > width) {
      lines.push(line);
      line = w;
    } else line = line ? `${line} ${w}` : w;
  }
  return line ? [...lines, line] : lines;
}

/** The help line(s) of one setting: `  --flag <arg>  summary (choices, range)`, wrapped at 100
 * columns with the text starting at column `column`. */
export function settingHelp(command: SettingCommand, name: SettingName, column = 24): string {
  const d: SettingDef = SETTINGS.find((s) => s.name === name)!;
  if (!d.cli?.commands.includes(command)) throw new Error(`chorus ${command} takes no --${d.cli?.flag ?? name}`);
  const head = `  --${d.cli.flag}${d.cli.arg ? ` <${d.cli.arg}>` : ''}`;
  const choices = d.choices ? `${d.choices.join(' | ')}: ` : '';
  const range = d.choices || d.type === 'boolean' || d.type === 'string' ? '' : rangeText(d);
  const text = `${choices}${d.summary.replace('{default}', defaultText(d, command))}${range ? `; ${range}` : ''}`;
  const lines = wrap(text, 100 - column);
  const pad = (s: string, first: boolean): string => (first && head.length < column - 1 ? head.padEnd(column) : ' '.repeat(column)) + s;
  const out = head.length >= column - 1 ? [head, ...lines.map((l) => pad(l, false))] : lines.map((l, i) => pad(l, i === 0));
  return out.join('\n') + '\n';
}

/** The help lines of several settings, in the order given. */
export const settingsHelp = (command: SettingCommand, names: readonly SettingName[], column = 24): string =>
  names.map((n) => settingHelp(command, n, column)).join('');

/**
 * The value of a setting for `chorus <command>`: the option's value when given (checked against
 * the setting's type, range and closed list; a usage error names the option), else `fallback`
 * (a design's chorus.json), else the setting's default for the command.
 */
export function readSetting<N extends SettingName>(
  values: object,
  name: N,
  command?: SettingCommand,
  fallback?: SettingValue<N>,
): SettingValue<N> {
  const d: SettingDef = SETTINGS.find((s) => s.name === name)!;
  const flag = d.cli?.flag ?? name;
  const raw = (values as Record<string, unknown>)[flag];
  const dflt = fallback ?? settingDefault(name, command);
  if (raw === undefined) return dflt;
  if (d.type === 'boolean') return raw as SettingValue<N>;
  if (d.choices) {
    if (!d.choices.includes(raw as string)) throw new Error(`--${flag} must be ${orList(d.choices)}, got '${String(raw)}'`);
    return raw as SettingValue<N>;
  }
  if (d.type === 'string') return raw as SettingValue<N>;
  const above = d.exclusiveMinimum !== undefined;
  const min = d.exclusiveMinimum ?? d.minimum ?? -Infinity;
  return numberOption(flag, raw as string, dflt as number, min, {
    above,
    integer: d.type === 'integer',
    ...(d.maximum !== undefined ? { max: d.maximum } : {}),
  }) as SettingValue<N>;
}

const orList = (xs: readonly string[]): string => (xs.length < 2 ? xs.join('') : `${xs.slice(0, -1).join(', ')} or ${xs.at(-1)}`);
