// Where the members of a group meet to do one thing together: each member either brings its input
// (meet) or says it will not come (leave, e.g. its run ended before this step); when every member
// has done one or the other, `together` gets all inputs at once and each member its own answer.
// A member that arrives after that (it was not counted, or came twice) is served `alone`. Meant
// for work that costs less done at once: one process for several requests, one compile of many.
export class Rendezvous<I, O> {
  private readonly inputs = new Map<number, I>();
  private readonly waiting = new Map<number, { resolve: (o: O) => void; reject: (e: unknown) => void }>();
  private readonly gone = new Set<number>();
  private met = false;

  constructor(
    private readonly size: number,
    /** The answers for the members that came, by index: one for each input. */
    private readonly together: (inputs: Map<number, I>) => Promise<Map<number, O>>,
    private readonly alone: (input: I) => Promise<O>,
  ) {}

  meet(index: number, input: I): Promise<O> {
    if (this.met || this.inputs.has(index) || this.gone.has(index)) return this.alone(input);
    const answer = new Promise<O>((resolve, reject) => this.waiting.set(index, { resolve, reject }));
    this.inputs.set(index, input);
    this.maybeMeet();
    return answer;
  }

  /** The member will not bring an input (a no-op once it has). */
  leave(index: number): void {
    if (this.met || this.inputs.has(index) || this.gone.has(index)) return;
    this.gone.add(index);
    this.maybeMeet();
  }

  private maybeMeet(): void {
    if (this.met || this.inputs.size + this.gone.size < this.size) return;
    this.met = true;
    if (this.inputs.size === 0) return;
    // Whatever `together` could not answer (or a failure of its own) is done alone.
    const answers = this.together(new Map(this.inputs)).catch(() => new Map<number, O>());
    void answers.then((got) => {
      for (const [i, w] of this.waiting) {
        if (got.has(i)) w.resolve(got.get(i)!);
        else this.alone(this.inputs.get(i)!).then(w.resolve, w.reject);
      }
    });
  }
}
