// Every VerilogEval v2 reference design lints and introspects with the engine's front end.
import { describe, expect, it } from 'vitest';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { loadDesign } from '../../src/core/run/design.js';
import { benchData } from '../helpers.js';

const dir = join(benchData, 'verilog-eval-v2');

async function pool<T, R>(items: T[], n: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]);
      }
    }),
  );
  return out;
}

describe('VerilogEval v2 reference designs', () => {
  it('are present beside the checkout', () => {
    expect(existsSync(dir), `${dir} is missing: bench/data/ is part of the repository`).toBe(true);
  });

  it('all 156 introspect with RefModule as the single top', async () => {
    const refs = readdirSync(dir)
      .filter((f) => f.endsWith('_ref.sv'))
      .sort();
    expect(refs.length).toBe(156);
    const results = await pool(refs, 2, async (f) => {
      try {
        const { info, warnings } = await loadDesign({ files: [join(dir, f)] });
        const m = info.modules.find((x) => x.name === 'RefModule');
        return { f, top: info.top, ports: m?.ports.length ?? 0, warnings: warnings.length, error: '' };
      } catch (e) {
        return { f, top: '', ports: 0, warnings: 0, error: (e as Error).message };
      }
    });
    const failed = results.filter((r) => r.error || r.top !== 'RefModule');
    expect(failed, JSON.stringify(failed, null, 2)).toEqual([]);
    // Every reference design has at least one port, and the port lists were read.
    expect(results.every((r) => r.ports > 0)).toBe(true);
    // Measured: 154 lint without warnings; Prob118 and Prob153 give WIDTH warnings only.
    const warned = results.filter((r) => r.warnings > 0).map((r) => r.f.split('_')[0]);
    expect(warned.length).toBeLessThanOrEqual(4);
  });
});
