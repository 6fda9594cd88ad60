// Reading a run's coverage as a front end shows it: whether a point is covered, the one meaning of
// "passed" (the target reached, ranking.ts), the overall figure, lcov export and waiver files.
// Light: the extension host bundles it for its decorations and test results.
export { isCovered } from '../coverage/model.js';
export { toLcov } from '../coverage/lcov.js';
export { WaiverError, loadWaivers } from '../coverage/waivers.js';
export { meetsTarget, overallCoverage } from '../sim/ranking.js';
export { safeResult } from '../sim/result.js';
