// What every front end (CLI, editor, webview, benchmarks) needs to show the engine's output and to
// check what it is sent: untrusted text made safe for a terminal or a view (a testbench and a model
// write what they like), the percentage, byte, duration and diagnostic-line formats, a model
// reference's parser, and the zod checks with
// readable messages. Light modules only (the extension host and the webview bundle them).
export { safeDeep, safeJson, safeLine, safeText } from '../util/untrusted.js';
export { formatBytes, formatDiagnostic, formatDuration, pct } from '../util/format.js';
export { HubError, kindLabel, parseModelRef, type ModelRef } from '../llm/hub/spec.js';
export { check, formatIssues, strictObject } from '../util/schema.js';
export { humanStatus } from '../sim/status.js';
export { closest, editDistance } from '../util/closest.js';
