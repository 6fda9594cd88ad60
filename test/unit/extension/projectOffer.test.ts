import { describe, expect, it } from 'vitest';
import { worthAProjectFile } from '../../../src/extension/projectOffer.js';

describe('worthAProjectFile (the "save as chorus.json?" prompt)', () => {
  it('a single-file design with nothing else is never asked', () => {
    expect(worthAProjectFile({ files: ['counter.sv'] })).toBe(false);
    expect(worthAProjectFile({ files: ['counter.sv'], top: 'counter' })).toBe(false);
  });
  it('settings beyond the file are worth saving', () => {
    expect(worthAProjectFile({ files: ['a.sv', 'b.sv'] })).toBe(true);
    expect(worthAProjectFile({ files: ['a.sv'], includeDirs: ['include'] })).toBe(true);
    expect(worthAProjectFile({ files: ['a.sv'], defines: ['SIM'] })).toBe(true);
    expect(worthAProjectFile({ files: ['a.sv'], params: ['W=4'] })).toBe(true);
    expect(worthAProjectFile({ files: [], fileLists: ['rtl.f'] })).toBe(true);
    expect(worthAProjectFile({ files: [], manifest: 'Bender.yml' })).toBe(true);
    expect(worthAProjectFile({ files: ['a.sv'] }, true)).toBe(true);
  });
});
