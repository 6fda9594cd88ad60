// Reading a run's coverage as a front end shows it: whether a point is covered, the one meaning of
// "passed" (the target reached, ranking.ts), the overall figure, lcov export and waiver files.
// Light: the extension host bundles it for its decorations and test results.
export { displayLine, isCovered } from '../coverage/model.js';
export { formalLine, uncoveredByReason } from '../coverage/report.js';
export { toLcov } from '../coverage/lcov.js';
export { WaiverError, loadWaivers } from '../coverage/waivers.js';
export { cancelledRun, meetsTarget, overallCoverage } from '../sim/ranking.js';
export { safeResult } from '../sim/result.js';
// What a run's stimulus broke (the design's own assertions) and why a run failed, in one line each.
export { assertionCount, assertionSummary, failureReason, firedAssertions, runFailure, thousands, withVerdict } from '../sim/assertions.js';
