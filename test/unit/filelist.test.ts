import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readFileList } from '../../src/core/design/filelist.js';
import { DesignError } from '../../src/core/design/errors.js';
import { emptyDesign, type DesignSpec } from '../../src/core/design/types.js';

let T = '';
let WORK = '';
let PROJ = '';

function put(path: string, text = ''): string {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  return path;
}

function read(list: string, relativeToList: boolean, cwd = WORK): { design: DesignSpec; warnings: string[] } {
  const design = emptyDesign();
  const warnings: string[] = [];
  readFileList(list, relativeToList, design, warnings, cwd);
  return { design, warnings };
}

function designError(fn: () => unknown): DesignError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(DesignError);
    return e as DesignError;
  }
  throw new Error('expected a DesignError');
}

beforeAll(() => {
  T = realpathSync(mkdtempSync(join(tmpdir(), 'chorus-flist-')));
  WORK = join(T, 'work');
  PROJ = join(T, 'proj');
  mkdirSync(WORK, { recursive: true });
  put(join(PROJ, 'rtl', 'a.sv'));
  put(join(PROJ, 'src', 'x.sv'));
  put(join(WORK, 'src', 'x.sv'));
});

afterAll(() => {
  rmSync(T, { recursive: true, force: true });
});

const ENV_KEYS = ['CHORUS_FL_RTL', 'CHORUS_FL_UNSET_Q'];
afterEach(() => {
  for (const k of ENV_KEYS) delete process.env[k];
});

describe('readFileList: entries', () => {
  it('reads +incdir+, +define+, -v, source files, quoted names and every comment style (-F: relative to the list)', () => {
    const list = put(
      join(PROJ, 'files.f'),
      [
        '// a line comment',
        '# a hash comment',
        '+incdir+inc+../common',
        '+define+X=1+Y',
        '-v lib/cells.v',
        'rtl/a.sv   // trailing comment',
        'rtl/b.sv # trailing hash comment',
        '/abs/path/c.sv',
        '"rtl/with space.sv"',
        '/* a block',
        '   comment rtl/hidden.sv */ rtl/d.sv',
        'rtl/e#1.sv',
      ].join('\n'),
    );
    const { design, warnings } = read(list, true);
    expect(warnings).toEqual([]);
    expect(design).toEqual<DesignSpec>({
      files: [
        join(PROJ, 'rtl/a.sv'),
        join(PROJ, 'rtl/b.sv'),
        '/abs/path/c.sv',
        join(PROJ, 'rtl/with space.sv'),
        join(PROJ, 'rtl/d.sv'),
        join(PROJ, 'rtl/e#1.sv'),
      ],
      libraryFiles: [join(PROJ, 'lib/cells.v')],
      includeDirs: [join(PROJ, 'inc'), join(T, 'common')],
      defines: { X: '1', Y: null },
      params: {},
    });
  });

  it('reads -I, -D, -G in both spellings and accepts -sv, +libext+, -timescale silently', () => {
    const list = put(
      join(PROJ, 'opts.f'),
      '-Iinc -I other -DA -D B=2 -GDEPTH=8 -G W=4 -sv +libext+.v+.sv -timescale 1ns/1ps +timescale+1ns/1ps rtl/a.sv\r\n',
    );
    const { design, warnings } = read(list, true);
    expect(warnings).toEqual([]);
    expect(design).toEqual<DesignSpec>({
      files: [join(PROJ, 'rtl/a.sv')],
      libraryFiles: [],
      includeDirs: [join(PROJ, 'inc'), join(PROJ, 'other')],
      defines: { A: null, B: '2' },
      params: { DEPTH: '8', W: '4' },
    });
  });

  it('adds to what the design already holds', () => {
    const list = put(join(PROJ, 'add.f'), 'rtl/a.sv\n+define+X=2\n');
    const design: DesignSpec = { ...emptyDesign(), files: ['/first.sv'], defines: { X: '1', K: null } };
    readFileList(list, true, design, [], WORK);
    expect(design.files).toEqual(['/first.sv', join(PROJ, 'rtl/a.sv')]);
    expect(design.defines).toEqual({ X: '2', K: null });
  });

  it('rejects a -G override without a value', () => {
    const list = put(join(PROJ, 'badg.f'), 'rtl/a.sv -GDEPTH');
    const e = designError(() => read(list, true));
    expect(e.kind).toBe('filelist');
    expect(e.message).toBe(`${list} (entry 2): parameter override 'DEPTH' needs NAME=VALUE`);
  });
});

describe('readFileList: relative paths', () => {
  it('-f: paths are relative to the working directory, or to the list when they only exist there', () => {
    const list = put(join(PROJ, 'cwd.f'), 'rtl/a.sv\nsrc/x.sv\nnowhere.sv\n+incdir+rtl\n');
    const { design } = read(list, false);
    expect(design.files).toEqual([
      join(PROJ, 'rtl/a.sv'), // only under the list's folder
      join(WORK, 'src/x.sv'), // in both: the working directory wins
      join(WORK, 'nowhere.sv'), // in neither: the working directory
    ]);
    expect(design.includeDirs).toEqual([join(PROJ, 'rtl')]);
  });

  it('-F: paths are relative to the list even when the working directory has the same path', () => {
    const list = put(join(PROJ, 'rel.f'), 'src/x.sv\nnowhere.sv\n');
    expect(read(list, true).design.files).toEqual([join(PROJ, 'src/x.sv'), join(PROJ, 'nowhere.sv')]);
  });

  it('the list path itself is taken relative to cwd', () => {
    put(join(WORK, 'lists', 'l.f'), 'src/x.sv\n');
    expect(read('lists/l.f', true).design.files).toEqual([join(WORK, 'lists/src/x.sv')]);
  });

  it('nested -F and -f lists follow their own conventions', () => {
    const top = put(join(PROJ, 'top.f'), ['-F sub/sub.f', '-f sub/other.f', 'rtl/a.sv'].join('\n'));
    put(join(PROJ, 'sub', 'sub.f'), ['s1.sv', '-f deep/deep.f'].join('\n'));
    put(join(PROJ, 'sub', 'deep', 'deep.f'), 'd.sv\n');
    put(join(PROJ, 'sub', 'deep', 'd.sv'));
    put(join(PROJ, 'sub', 'other.f'), ['s2.sv', 's3.sv'].join('\n'));
    put(join(PROJ, 'sub', 's2.sv'));
    const { design, warnings } = read(top, false);
    expect(warnings).toEqual([]);
    expect(design.files).toEqual([
      join(PROJ, 'sub/s1.sv'), // -F: relative to sub/
      join(PROJ, 'sub/deep/d.sv'), // -f inside -F: found beside deep.f
      join(PROJ, 'sub/s2.sv'), // -f: only exists beside other.f
      join(WORK, 's3.sv'), // -f: exists nowhere, so relative to cwd
      join(PROJ, 'rtl/a.sv'),
    ]);
  });
});

describe('readFileList: environment variables', () => {
  it('expands $VAR and ${VAR} in paths, +incdir+ and -v', () => {
    process.env.CHORUS_FL_RTL = join(PROJ, 'rtl');
    const list = put(
      join(PROJ, 'env.f'),
      '$CHORUS_FL_RTL/a.sv\n${CHORUS_FL_RTL}/b.sv\n+incdir+$CHORUS_FL_RTL/inc\n-v ${CHORUS_FL_RTL}/lib.v\n',
    );
    const { design } = read(list, false);
    expect(design.files).toEqual([join(PROJ, 'rtl/a.sv'), join(PROJ, 'rtl/b.sv')]);
    expect(design.includeDirs).toEqual([join(PROJ, 'rtl/inc')]);
    expect(design.libraryFiles).toEqual([join(PROJ, 'rtl/lib.v')]);
  });

  it('names the unset variable and the entry', () => {
    const list = put(join(PROJ, 'unset.f'), 'rtl/a.sv\n${CHORUS_FL_UNSET_Q}/b.sv\n');
    const e = designError(() => read(list, true));
    expect(e.kind).toBe('filelist');
    expect(e.message).toBe(`${list} (entry 2): environment variable $CHORUS_FL_UNSET_Q is not set`);
  });
});

describe('readFileList: warnings and errors', () => {
  it('-y library folders: their files with a +libext+ extension become -v library files', () => {
    put(join(PROJ, 'libdir/sub.sv'), 'module sub; endmodule\n');
    put(join(PROJ, 'libdir/old.v'), 'module old; endmodule\n');
    put(join(PROJ, 'libdir/notes.txt'), 'x');
    const list = put(join(PROJ, 'y.f'), 'rtl/a.sv\n-y libdir\n');
    const { design, warnings } = read(list, true);
    expect(warnings).toEqual([]);
    expect(design.files).toEqual([join(PROJ, 'rtl/a.sv')]);
    expect(design.libraryFiles).toEqual([join(PROJ, 'libdir/old.v'), join(PROJ, 'libdir/sub.sv')]);
    const only = put(join(PROJ, 'ysv.f'), '+libext+.sv\n-y libdir\n');
    expect(read(only, true).design.libraryFiles).toEqual([join(PROJ, 'libdir/sub.sv')]);
    const missing = put(join(PROJ, 'ymiss.f'), '-y nowhere\n');
    expect(designError(() => read(missing, true)).message).toMatch(/library folder not found: .*nowhere/);
  });

  it('keeps Verilator options on the allowlist as pass-through options', () => {
    const list = put(join(PROJ, 'wno.f'), '-Wno-WIDTH\n--no-timing\nrtl/a.sv\n--Mdir\n');
    const { design, warnings } = read(list, true);
    expect(design.verilatorArgs).toEqual(['-Wno-WIDTH', '--no-timing']);
    expect(warnings).toEqual([`${list} (entry 4): option '--Mdir' is not understood and was ignored`]);
  });

  it('warns about options it does not understand and ignores them', () => {
    const list = put(join(PROJ, 'unk.f'), '-foo\nrtl/a.sv\n+bar+1\n');
    const { design, warnings } = read(list, true);
    expect(warnings).toEqual([
      `${list} (entry 1): option '-foo' is not understood and was ignored`,
      `${list} (entry 3): option '+bar+1' is not understood and was ignored`,
    ]);
    expect(design.files).toEqual([join(PROJ, 'rtl/a.sv')]);
  });

  it('a missing list is a missing-file error naming the absolute path', () => {
    const e = designError(() => read('no/such.f', false));
    expect(e.kind).toBe('missing-file');
    expect(e.message).toBe(`file list not found: ${join(WORK, 'no/such.f')}`);
  });

  it('a missing nested list is the same error', () => {
    const list = put(join(PROJ, 'nest-missing.f'), '-F gone.f\n');
    const e = designError(() => read(list, true));
    expect(e.kind).toBe('missing-file');
    expect(e.message).toBe(`file list not found: ${join(PROJ, 'gone.f')}`);
  });

  it('stops a -f cycle with a filelist error', () => {
    put(join(PROJ, 'cyc', 'a.f'), 'x.sv\n-f b.f\n');
    put(join(PROJ, 'cyc', 'b.f'), '-f a.f\n');
    const e = designError(() => read(join(PROJ, 'cyc', 'a.f'), false, join(PROJ, 'cyc')));
    expect(e.kind).toBe('filelist');
    expect(e.message).toMatch(/^\/.*\/cyc\/[ab]\.f: file lists nest more than 16 deep \(a -f cycle\?\)$/);
  });

  it('an option missing its argument is a filelist error', () => {
    const list = put(join(PROJ, 'noarg.f'), 'rtl/a.sv -v');
    const e = designError(() => read(list, true));
    expect(e.kind).toBe('filelist');
    expect(e.message).toContain("'-v' needs an argument");
  });

  // Fixed (was a bug): filelist.ts `next()` increments i before building the message, so the error names the
  // entry after the option: for a list holding only `-f`, "(entry 2): '-f' needs an argument"
  // although the list has one entry. Expected "(entry 1)"; actual "(entry 2)".
  it('names the option entry itself when its argument is missing', () => {
    const list = put(join(PROJ, 'noarg2.f'), '-f\n');
    expect(designError(() => read(list, true)).message).toBe(`${list} (entry 1): '-f' needs an argument`);
  });
});
