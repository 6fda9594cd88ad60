// Output floods folded while a program runs: a design whose assertions fire on every cycle prints
// the same message hundreds of thousands of times (with only its `[time]` prefix changing), and
// kept whole it would hit the output limit and end the run before the generator could learn from
// it. A line is kept the first `keep` times it appears (its `[time]` prefix set apart); later
// repeats are counted, not kept, and count towards the output limit at 1/FOLDED_WEIGHT of their
// size (so a program that prints one line forever still meets the limit, a little later). What was folded comes
// back beside the output (the caller adds the counts to its diagnostics), and one closing line in
// the output says how many repeats were not kept. Distinct lines are tracked up to a bound; past
// it new lines are never folded (they still count towards the limit).

export interface FoldedLine {
  /** The last repeat that was not kept, as printed (its time is the message's last time). */
  last: string;
  /** How many repeats were not kept. */
  count: number;
}

/** Folded bytes weigh this much less than kept ones against the output limit. */
export const FOLDED_WEIGHT = 64;

const TIME_PREFIX = /^\s*\[[^\]\n]{0,40}\]\s*/;

export class LineFolder {
  private partial = '';
  private readonly seen = new Map<string, number>();
  private readonly dropped = new Map<string, FoldedLine>();
  /** Bytes of the repeats not kept (the caller bounds them too: endless output still ends). */
  droppedBytes = 0;

  constructor(
    private readonly keep: number,
    private readonly maxDistinct = 10000,
  ) {}

  /** The bytes of `chunk` to keep (whole lines; a partial line waits for its end). */
  push(chunk: Buffer): Buffer {
    const text = this.partial + chunk.toString('utf8');
    const end = text.lastIndexOf('\n');
    if (end < 0) {
      // A line longer than any message is passed on as it is rather than held.
      if (text.length > 65536) {
        this.partial = '';
        return Buffer.from(text);
      }
      this.partial = text;
      return Buffer.alloc(0);
    }
    this.partial = text.slice(end + 1);
    const kept: string[] = [];
    for (const line of text.slice(0, end).split('\n')) if (this.keepLine(line)) kept.push(line);
    return kept.length ? Buffer.from(kept.join('\n') + '\n') : Buffer.alloc(0);
  }

  /** The rest of the output: the last partial line and the closing note on what was folded. */
  flush(): Buffer {
    const rest = this.partial;
    this.partial = '';
    const total = [...this.dropped.values()].reduce((n, f) => n + f.count, 0);
    const note = total
      ? `chorus: ${total} repeat${total === 1 ? '' : 's'} of ${this.dropped.size} message${this.dropped.size === 1 ? '' : 's'} shown above ${total === 1 ? 'was' : 'were'} not kept (each message is kept ${this.keep} times)\n`
      : '';
    return Buffer.from((rest && !rest.endsWith('\n') ? rest + '\n' : rest) + note);
  }

  /** What was folded, per message. */
  folded(): FoldedLine[] {
    return [...this.dropped.values()];
  }

  private keepLine(line: string): boolean {
    const key = line.replace(TIME_PREFIX, '');
    const n = this.seen.get(key);
    if (n === undefined) {
      if (this.seen.size < this.maxDistinct) this.seen.set(key, 1);
      return true;
    }
    if (n < this.keep) {
      this.seen.set(key, n + 1);
      return true;
    }
    this.droppedBytes += line.length + 1;
    const d = this.dropped.get(key);
    if (d) {
      d.count++;
      d.last = line;
    } else this.dropped.set(key, { last: line, count: 1 });
    return false;
  }
}
