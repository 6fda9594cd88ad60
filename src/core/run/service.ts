// The reward service (chorus serve): the HTTP server and the reader of its Prometheus exposition
// (the load benchmark checks the counters it reports).
export { startScoreServer, type ScoreServer, type ScoreServerOptions } from '../service/http.js';
export { parseExposition } from '../service/metrics.js';
export { descendants, processesNaming, type ProcessInfo } from '../util/proc.js';
export { claimStateDir, type ClaimedStateDir } from '../service/stateDir.js';
