// The simulators a run can use: the registry (Verilator; Xcelium/IMC where installed), a remote
// reward service as a simulator, and the Verilator backend itself for the benchmarks that measure it.
export { getSimulator, simulatorNames } from '../sim/registry.js';
export { RemoteSimulator, scorerUrls } from '../sim/remote.js';
export { VerilatorSimulator, designArgs } from '../sim/verilator/backend.js';
// How a run is scored, and how the design's broken assertions and a failed run are said.
export { SCORE_MODES, type ScoreMode } from '../vocabulary/types.js';
export { simulateAll, withFormal, withScore } from '../sim/simulator.js';
