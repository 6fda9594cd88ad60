// The meeting point of a group's members (src/core/util/rendezvous.ts): the shared step runs once,
// when every member has brought its input or left; whatever it does not answer is done alone.
import { describe, expect, it } from 'vitest';
import { Rendezvous } from '../../src/core/util/rendezvous.js';

describe('Rendezvous', () => {
  it('runs the shared step once, when every member came or left, and answers each its own', async () => {
    const calls: number[][] = [];
    const r = new Rendezvous<number, string>(
      4,
      async (inputs) => {
        calls.push([...inputs.keys()]);
        return new Map([...inputs].map(([i, x]) => [i, `together ${x}`]));
      },
      async (x) => `alone ${x}`,
    );
    const a = r.meet(0, 10);
    const c = r.meet(2, 12);
    r.leave(1);
    expect(calls).toEqual([]); // member 3 has neither come nor left
    const d = r.meet(3, 13);
    expect(await Promise.all([a, c, d])).toEqual(['together 10', 'together 12', 'together 13']);
    expect(calls).toEqual([[0, 2, 3]]);
    // After the meeting, a late member (or one that comes twice) is served alone.
    expect(await r.meet(1, 11)).toBe('alone 11');
    expect(await r.meet(0, 20)).toBe('alone 20');
  });

  it('a member the shared step did not answer, or a shared step that failed, is done alone', async () => {
    const partial = new Rendezvous<number, string>(
      2,
      async (inputs) => new Map([[0, `together ${inputs.get(0)}`]]),
      async (x) => `alone ${x}`,
    );
    expect(await Promise.all([partial.meet(0, 1), partial.meet(1, 2)])).toEqual(['together 1', 'alone 2']);
    const failing = new Rendezvous<number, string>(
      2,
      async () => {
        throw new Error('the shared step broke');
      },
      async (x) => `alone ${x}`,
    );
    expect(await Promise.all([failing.meet(0, 1), failing.meet(1, 2)])).toEqual(['alone 1', 'alone 2']);
  });

  it('leaving is a no-op once a member came, and nobody waits when everyone left', async () => {
    let ran = 0;
    const r = new Rendezvous<number, number>(
      2,
      async (inputs) => {
        ran++;
        return new Map([...inputs].map(([i, x]) => [i, x * 2]));
      },
      async (x) => x,
    );
    const a = r.meet(0, 5);
    r.leave(0);
    r.leave(1);
    expect(await a).toBe(10);
    expect(ran).toBe(1);
    const empty = new Rendezvous<number, number>(
      2,
      async () => ((ran += 100), new Map()),
      async (x) => x,
    );
    empty.leave(0);
    empty.leave(1);
    expect(ran).toBe(1);
  });
});
