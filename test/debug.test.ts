import { test } from 'vitest';
import { readFileSync } from 'node:fs';
import { loadDesign } from '../src/core/design/load.js';
import { sim } from './helpers.js';
test('dbg', async () => {
  const { design, info } = await loadDesign({ files: ['test/fixtures/designs/pkg/bus_pkg.sv', 'test/fixtures/designs/pkg/arb.sv'] });
  for (const build of ['auto', 'flat'] as const) {
    const r = await sim.simulate({ design, top: info.top, testbench: { name: 'tb_arb.sv', content: readFileSync('out/tb_arb.sv', 'utf8') }, build });
    console.log('OUT', build, r.build, r.status, JSON.stringify(r.coverage?.waived.tallies));
  }
}, 600000);
