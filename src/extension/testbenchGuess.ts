// Whether an HDL file is a testbench, from what engineers name them and what they contain: used
// only to show or hide commands, so a wrong guess costs a menu entry, never a result.

const TB_NAME = /^(tb_|test_|tb\.)|(_tb|_test|_tests|_bench)\.(sv|v|svh)$/i;
/** A module with no port list (`module tb;` or `module tb #(...)` followed by `;`). */
const PORTLESS_MODULE = /\bmodule\s+(?:automatic\s+|static\s+)?[A-Za-z_][\w$]*\s*(?:#\s*\([^;]*?\)\s*)?;/;
const DRIVES_TIME = /\binitial\b|\$finish\b|#\s*\d/;

export function looksLikeTestbench(fileName: string, text: string): boolean {
  if (TB_NAME.test(fileName)) return true;
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
  return PORTLESS_MODULE.test(code) && DRIVES_TIME.test(code);
}
