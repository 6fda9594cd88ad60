// A group of testbenches for one design, scored together (RL scores G samples of one prompt at a
// time; `chorus sim --tb a --tb b`; `POST /v1/score` with `testbenches`). Each member runs the
// one-candidate pipeline (backend.ts attempt) with its own run directory, jail, limits and result;
// what the members share is work that costs less done at once:
//   - the processes of all members take turns in `parallel` slots (a member's time limits start
//     when its process starts, so the others' work does not eat into them);
//   - slang reads every member's testbench in one process (integrity.ts readIntegrityBatch);
//   - the members' models compile together in shared translation units (stages/sharedBuild.ts).
// A member that cannot share (another design, a design that needed a workaround) is scored alone.
// Nothing shared carries one member's text, coverage or verdict to another; anything that fails
// while shared is redone by the member alone, so a bad member costs the others time, never their
// result. The equivalence test (test/integration/group.test.ts) holds this to account.
import type { SimRequest } from '../simulator.js';
import type { SimResult } from '../result.js';
import { Semaphore } from '../../util/semaphore.js';
import { Rendezvous } from '../../util/rendezvous.js';
import { readIntegrity, readIntegrityBatch, type IntegrityInput, type IntegrityResult } from '../slang/integrity.js';
import { settleKey } from './settleRetry.js';
import type { MemberShare, SharedMember } from './stages/candidate.js';
import type { SharedVerdict } from './stages/sharedBuild.js';

export interface GroupOps {
  parallel: number;
  /** The one-candidate path, retries included. */
  alone(req: SimRequest): Promise<SimResult>;
  /** One attempt as a member (no crash retry). */
  attempt(req: SimRequest, share: MemberShare): Promise<SimResult>;
  /** What follows a member's first attempt alone (the tool-crash retry). */
  again(req: SimRequest, first: SimResult): Promise<SimResult>;
  /** Whether the request may share (false: its design needs a workaround, scored alone). */
  sharable(req: SimRequest): boolean;
  build(members: Map<number, SharedMember>, slots: number): Promise<Map<number, SharedVerdict>>;
}

/** The results of `reqs`, in order. */
export async function scoreGroup(reqs: SimRequest[], ops: GroupOps): Promise<SimResult[]> {
  if (reqs.length < 2) return Promise.all(reqs.map((r) => ops.alone(r)));
  const design = settleKey(reqs[0]);
  const shares = reqs.map((r) => settleKey(r) === design && ops.sharable(r));
  const n = reqs.length;
  const slots = new Semaphore(Math.max(1, ops.parallel));
  const integrity = new Rendezvous<IntegrityInput, IntegrityResult>(n, integrityTogether, readIntegrity);
  const compile = new Rendezvous<SharedMember, SharedVerdict>(
    n,
    (members) => ops.build(members, Math.max(1, ops.parallel)),
    async () => 'alone',
  );
  const leave = (index: number): void => {
    integrity.leave(index);
    compile.leave(index);
  };
  return Promise.all(
    reqs.map(async (req, index) => {
      if (!shares[index]) {
        leave(index);
        return ops.alone(req);
      }
      const share: MemberShare = {
        index,
        slot: (task) => slots.run(task),
        integrity: (input) => integrity.meet(index, input),
        compile: (member) => compile.meet(index, member),
      };
      let first: SimResult;
      try {
        first = await ops.attempt(req, share);
      } finally {
        leave(index);
      }
      return ops.again(req, first);
    }),
  );
}

async function integrityTogether(inputs: Map<number, IntegrityInput>): Promise<Map<number, IntegrityResult>> {
  const list = [...inputs];
  const read = await readIntegrityBatch(list.map(([, input]) => input));
  return new Map(list.map(([index], k) => [index, read[k]]));
}
