// bench/ip's data: the corpus of public IP blocks (bench/ip/corpus.json) and where their sources
// live on this machine. The corpus is bench data only: nothing in src/ knows these designs.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** One public repository, pinned by commit (bench/ip/fetch-corpus.sh checks it out). */
export interface CorpusRepo {
  /** owner/name on GitHub. */
  repo: string;
  /** Full commit SHA. */
  commit: string;
  /** Sparse-checkout patterns: only these paths are checked out (all when absent). */
  sparse?: string[];
  note?: string;
}

/** One IP block: a top module and what it takes to elaborate it, paths relative to its repository. */
export interface CorpusBlock {
  id: string;
  repo: string;
  top: string;
  /** Compile order, packages first. */
  files: string[];
  includeDirs: string[];
  defines: string[];
  /** NAME=VALUE top parameter overrides needed to elaborate. */
  params: string[];
  /** Extra defines for the -UVERILATOR rebuild, where `ifdef VERILATOR` set something the sources
   * cannot do without (the rebuild with VERILATOR undefined must still parse). */
  noVerilatorDefines?: string[];
  /** Assertion statements and macros in the block's files (a static count, for orientation). */
  assertions?: number;
  /** `verilator --lint-only -Wno-fatal --timing` as recorded when the corpus was made: ok or the first error. */
  lint?: Record<string, string>;
}

export interface DroppedBlock extends Partial<CorpusBlock> {
  repo: string;
  reason: string;
}

export interface Corpus {
  repos: CorpusRepo[];
  blocks: CorpusBlock[];
  dropped: DroppedBlock[];
}

export function loadCorpus(path: string): Corpus {
  return JSON.parse(readFileSync(path, 'utf8')) as Corpus;
}

/** The checkout of a repository under the corpus cache (fetch-corpus.sh's layout). */
export function repoDir(cache: string, repo: string): string {
  return join(cache, repo.replace('/', '+'));
}

/** The block's files that are missing here (the corpus was not fetched, or not at its commit). */
export function missingFiles(cache: string, block: CorpusBlock): string[] {
  const dir = repoDir(cache, block.repo);
  return block.files.filter((f) => !existsSync(join(dir, f)));
}

/** Verilator/CLI arguments for a block's include dirs, defines (plus `extraDefines`) and parameters. */
export function designFlags(b: Partial<Pick<CorpusBlock, 'includeDirs' | 'defines' | 'params'>>, extraDefines: string[] = []): string[] {
  return [
    ...(b.includeDirs ?? []).map((d) => `-I${d}`),
    ...[...(b.defines ?? []), ...extraDefines].map((d) => `-D${d}`),
    ...(b.params ?? []).map((p) => `-G${p}`),
  ];
}
