// JUnit XML of a run (junit.xml in the run folder): one testcase per round, a failed round as a
// failure whose message is its one-line reason (assertions.ts failureReason). CI dashboards read
// it. Every text is escaped for XML (the log is the testbench's output).

export interface JunitCase {
  name: string;
  timeS: number;
  /** The one-line reason of a failed round; undefined when it passed. */
  failure?: string;
  /** The round's log, as system-out. */
  output?: string;
}

/** Text fit for an XML attribute or element: markup characters escaped, characters XML 1.0
 * cannot hold replaced by U+FFFD. */
export function escapeXml(s: string): string {
  return s
    .replace(/[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/gu, '\ufffd')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

export function junitXml(suite: string, cases: JunitCase[]): string {
  const e = escapeXml;
  const failures = cases.filter((c) => c.failure !== undefined).length;
  const time = cases.reduce((t, c) => t + c.timeS, 0);
  const out = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites tests="${cases.length}" failures="${failures}" time="${time.toFixed(3)}">`,
    `  <testsuite name="${e(suite)}" tests="${cases.length}" failures="${failures}" errors="0" time="${time.toFixed(3)}">`,
  ];
  for (const c of cases) {
    out.push(`    <testcase classname="${e(suite)}" name="${e(c.name)}" time="${c.timeS.toFixed(3)}">`);
    if (c.failure !== undefined) {
      const line = c.failure.split('\n')[0];
      out.push(`      <failure message="${e(line)}">${e(c.failure)}</failure>`);
    }
    if (c.output) out.push(`      <system-out>${e(c.output)}</system-out>`);
    out.push('    </testcase>');
  }
  out.push('  </testsuite>', '</testsuites>', '');
  return out.join('\n');
}
