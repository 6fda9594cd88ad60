// SystemVerilog expressions for stimulus values of a given width: random, corners, constants.

/** `$urandom` gives 32 bits: wider signals concatenate several calls. */
export function randomExpr(width: number): string {
  if (width <= 32) return width === 32 ? '$urandom' : `${width}'($urandom)`;
  const parts = Math.ceil(width / 32);
  return `${width}'({${Array.from({ length: parts }, () => '$urandom').join(', ')}})`;
}

export function literal(width: number, value: bigint): string {
  const mask = width >= 1 ? (1n << BigInt(width)) - 1n : 0n;
  return `${width}'h${(value & mask).toString(16)}`;
}

/** Corner values: zero, all ones, MSB only, LSB only, sign-safe all ones (`'h7f..f`, the largest
 * positive value of a signed operand), alternating patterns. */
export function cornerValues(width: number): bigint[] {
  const all = (1n << BigInt(width)) - 1n;
  const out = new Set<bigint>([0n, all, 1n << BigInt(width - 1), 1n]);
  if (width >= 2) out.add(all >> 1n);
  if (width >= 2) {
    let alt = 0n;
    for (let i = 0; i < width; i += 2) alt |= 1n << BigInt(i);
    out.add(alt);
    out.add(all ^ alt);
  }
  return [...out];
}

/** A value and its neighbours: `count == 8'hff` wants 8'hfe and 8'hff (and 0 after wrap). */
export function withNeighbours(width: number, v: bigint): bigint[] {
  const mask = (1n << BigInt(width)) - 1n;
  return [...new Set([v & mask, (v + 1n) & mask, (v - 1n) & mask])];
}
