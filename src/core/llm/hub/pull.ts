// `chorus model pull` and "CHORUS: Download a Model...": a model from a hub repository into the
// model cache. The hub protocol (the repository's revision and file listing, with each large file's
// SHA-256) is @huggingface/hub's; the transfer (ranged, parallel, retried after a dropped
// connection, resumed from the partial file a cancelled or killed pull left) is node-llama-cpp's
// model downloader (ipull). This module decides what to fetch, checks every byte against the
// hub's hashes, and moves a model into the cache only once it is whole: a folder in the cache is
// a checked model, a partial download lives under .partial and is never listed.
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { processAlive } from '../../util/proc.js';
import { dirname, join } from 'node:path';
import { DEFAULT_GGUF_QUANT, DEFAULT_HUB_ENDPOINT, DEFAULT_ONNX_DTYPE } from '../../vocabulary/defaults.js';
import { candidates, pick, type Candidate, type RemoteFile } from './candidates.js';
import {
  dropPartial,
  entryPath,
  modelsDir,
  PULL_PLAN,
  resumable,
  writePullPlan,
  partialDir,
  readCachedModel,
  writeManifest,
  type CachedModel,
} from './cache.js';
import { HubError, hubEndpoint, parseModelRef, type ModelRef } from './spec.js';

export interface HubAccess {
  /** The hub's base URL (default: HF_ENDPOINT, else the public hub). */
  endpoint?: string;
  /** A token for gated or private repositories (default: HF_TOKEN). Sent only to the hub; never
   * written anywhere. */
  token?: string;
  /** Branch, tag or commit (default main); the pull records the commit it resolved to. */
  revision?: string;
  signal?: AbortSignal;
}

export interface PullPlan {
  repo: string;
  revision: string;
  commit: string;
  endpoint: string;
  /** Every model the repository offers (for a picker). */
  candidates: Candidate[];
  chosen: Candidate;
  /** Where the model will be (or already is). */
  dir: string;
  /** The model is already in the cache, whole. */
  cached: boolean;
  /** A cancelled or killed pull of this model left files that this one resumes from. */
  resumes: boolean;
}

export interface PullProgress {
  /** The file being fetched (repository path). */
  file: string;
  /** 1-based index of that file and the number of files. */
  index: number;
  files: number;
  /** Bytes on disk of the whole model so far, and in all. */
  bytes: number;
  total: number;
  /** Bytes per second now (0 before the first measure), seconds left (Infinity when unknown). */
  rate: number;
  secondsLeft: number;
  phase: 'download' | 'verify';
}

export interface PullOptions extends HubAccess {
  modelsDir?: string;
  onProgress?: (p: PullProgress) => void;
  /** Asked once the plan is known and before a byte is fetched (the editor's confirmation); a
   * false answer ends the pull as cancelled. */
  confirm?: (plan: PullPlan) => boolean | Promise<boolean>;
}

export interface PullResult {
  model: CachedModel;
  plan: PullPlan;
  /** Bytes fetched by this pull (0 when it was cached). */
  fetched: number;
}

const access = (o: HubAccess) => {
  const endpoint = (o.endpoint ?? hubEndpoint(process.env, DEFAULT_HUB_ENDPOINT)).replace(/\/+$/, '');
  const token = o.token ?? (process.env.HF_TOKEN?.trim() || undefined);
  // The token goes in a header of our own fetch (the hub client would refuse a mirror's token that
  // lacks the public hub's hf_ prefix), together with the cancel signal.
  const hubFetch: typeof fetch = (input, init) =>
    fetch(input, {
      ...init,
      headers: { ...(init?.headers as Record<string, string> | undefined), ...(token ? { Authorization: `Bearer ${token}` } : {}) },
      signal: o.signal,
    });
  return { endpoint, token, hubFetch };
};

/** A hub failure as the user reads it: what happened to which repository, and what to do. */
function hubFailure(
  e: unknown,
  repo: string,
  revision: string,
  endpoint: string,
  token: string | undefined,
  signal?: AbortSignal,
): HubError {
  if (e instanceof HubError) return e;
  if (signal?.aborted) return new HubError('cancelled', `The download of ${repo} was cancelled.`);
  const status = (e as { statusCode?: number }).statusCode;
  if (status === 401 || status === 403)
    return new HubError(
      'auth',
      token
        ? `${endpoint} refused the token for ${repo} (HTTP ${status}): check that it is valid and that your account has accepted the repository's access conditions`
        : `${repo} is gated or private (HTTP ${status}): set HF_TOKEN to a token with access (in the editor: "CHORUS: Set Hugging Face Token")`,
    );
  if (status === 404)
    return new HubError(
      'not-found',
      `${endpoint} has no model repository ${repo} at revision ${revision} (HTTP 404): check the name and the revision`,
    );
  const msg = (e as Error).message ?? String(e);
  return new HubError(
    'network',
    status
      ? `${endpoint} answered HTTP ${status} for ${repo}: ${msg.split('\n')[0]}`
      : `cannot reach ${endpoint} for ${repo}: ${msg.split('\n')[0]} (check the network, or HF_ENDPOINT)`,
  );
}

/** Resolves what a pull of `ref` would fetch: the revision's commit, the repository's models, the
 * one chosen, and whether it is already cached. Talks to the hub, fetches no model bytes. */
export async function planPull(ref: string | ModelRef, o: PullOptions = {}): Promise<PullPlan> {
  const r = typeof ref === 'string' ? parseModelRef(ref) : ref;
  const revision = o.revision ?? 'main';
  const { endpoint, token, hubFetch } = access(o);
  const hub = await import('@huggingface/hub');
  let commit: string;
  const files: RemoteFile[] = [];
  try {
    const info = await hub.modelInfo({ name: r.repo, revision, hubUrl: endpoint, additionalFields: ['sha'], fetch: hubFetch });
    commit = String((info as { sha?: unknown }).sha ?? '');
    if (!/^[0-9a-f]{40}$/i.test(commit)) throw new HubError('network', `${endpoint} gave no commit for ${r.repo}@${revision}`);
    for await (const f of hub.listFiles({
      repo: { type: 'model', name: r.repo },
      revision: commit,
      recursive: true,
      hubUrl: endpoint,
      fetch: hubFetch,
    }))
      if (f.type === 'file')
        files.push({
          path: f.path,
          size: f.lfs?.size ?? f.size,
          ...(f.lfs?.oid ? { sha256: f.lfs.oid } : {}),
          ...(f.oid ? { gitOid: f.oid } : {}),
        });
  } catch (e) {
    throw hubFailure(e, r.repo, revision, endpoint, token, o.signal);
  }
  // The listing names the paths written below the cache: a hub (or a mirror) that lists a path
  // leaving the model folder is refused, not followed.
  const escaping = files.find((f) => !safeRepoPath(f.path));
  if (escaping)
    throw new HubError(
      'network',
      `${endpoint} lists a file path that leaves the model folder (${JSON.stringify(escaping.path)}) in ${r.repo}; refusing the repository`,
    );
  const all = candidates(files);
  const chosen = pick(r.repo, all, r.selector, { quant: DEFAULT_GGUF_QUANT, onnxDtype: DEFAULT_ONNX_DTYPE });
  const root = o.modelsDir ?? modelsDir();
  const rel = entryPath(r.repo, commit, chosen.selector);
  const dir = join(root, rel);
  const part = partialDir(root, rel);
  const resumes = resumable(part, chosen.files);
  return { repo: r.repo, revision, commit, endpoint, candidates: all, chosen, dir, cached: readCachedModel(dir) !== null, resumes };
}

/** A relative path of plain segments: no `..`, no absolute path, no backslash or control character. */
export function safeRepoPath(p: string): boolean {
  return (
    p.length > 0 &&
    p.length < 1024 &&
    !/[\\\x00-\x1f]/.test(p) &&
    !p.startsWith('/') &&
    p.split('/').every((s) => s !== '' && s !== '.' && s !== '..')
  );
}

/** A file's digest, streamed (models are gigabytes); `prefix` is hashed first (a git blob header). */
export async function digest(path: string, algo: 'sha256' | 'sha1', prefix?: Buffer): Promise<string> {
  const h = createHash(algo);
  if (prefix) h.update(prefix);
  for await (const chunk of createReadStream(path)) h.update(chunk as Buffer);
  return h.digest('hex');
}

/** Bytes a transfer may run past the listed size before it is stopped. */
const OVERRUN_SLACK_BYTES = 64 * 1024;

/** A server sent more than the hub lists for these files: stopped, the partial files removed. */
async function overrun(
  group: Array<{ path: string; size: number }>,
  plan: { repo: string; endpoint: string },
  part: string,
  dl: { cancel(o?: { deleteTempFile?: boolean }): Promise<void> } | undefined,
): Promise<HubError> {
  await dl?.cancel({ deleteTempFile: true }).catch(() => undefined);
  for (const g of group) {
    rmSync(join(part, g.path), { force: true });
    rmSync(join(part, g.path) + '.ipull', { force: true });
  }
  const listed = group.reduce((a, g) => a + g.size, 0);
  return new HubError(
    'hash-mismatch',
    `${group.map((g) => g.path).join(', ')} of ${plan.repo}: the server sent more than the ${listed} bytes the hub lists; the transfer was stopped and the partial file removed. The mirror (${plan.endpoint}) serves a damaged or different file.`,
  );
}

/** Checks a fetched file against the hub's hash (SHA-256 of LFS files, the git blob id of small
 * ones): null where it matches, else what differs. */
async function verify(path: string, f: RemoteFile): Promise<string | null> {
  const size = statSync(path).size;
  if (size !== f.size) return `${size} bytes where the hub lists ${f.size}`;
  if (f.sha256) {
    const got = await digest(path, 'sha256');
    return got === f.sha256.toLowerCase() ? null : `SHA-256 ${got}, the hub's is ${f.sha256}`;
  }
  if (f.gitOid) {
    const got = await digest(path, 'sha1', Buffer.from(`blob ${size}\0`));
    return got === f.gitOid.toLowerCase() ? null : `git blob id ${got}, the hub's is ${f.gitOid}`;
  }
  return null;
}

/**
 * Fetches the model `ref` names into the cache and returns it. Resumes a partial download of the
 * same model (same commit and choice); refuses and removes a file whose hash is not the hub's;
 * on cancel (signal) keeps the partial files for the next pull and lists nothing.
 */
export async function pullModel(ref: string | ModelRef, o: PullOptions = {}): Promise<PullResult> {
  const plan = await planPull(ref, o);
  const existing = readCachedModel(plan.dir);
  if (existing) return { model: existing, plan, fetched: 0 };
  const root = o.modelsDir ?? modelsDir();
  const rel = entryPath(plan.repo, plan.commit, plan.chosen.selector);
  const part = partialDir(root, rel);
  // The downloader keeps whole 5 MB chunks only: a cancel before the first one leaves nothing to resume.
  const cancelled = (): HubError => {
    if (!resumable(part, plan.chosen.files)) {
      dropPartial(part, root);
      return new HubError('cancelled', `The download of ${plan.repo} was cancelled before any part of it was kept.`);
    }
    return new HubError('cancelled', `The download of ${plan.repo} was cancelled; the next download of it resumes where it stopped.`);
  };
  if (o.confirm && !(await o.confirm(plan))) throw cancelled();
  const { token } = access(o);
  const unlock = lockPull(part, `${plan.repo}:${plan.chosen.selector}`);
  try {
    return await fetchPlanned(plan, part, root, token, o, cancelled);
  } catch (e) {
    // A failed pull that kept nothing to resume leaves no partial folder behind.
    if (!resumable(part, plan.chosen.files)) dropPartial(part, root);
    throw e;
  } finally {
    unlock();
  }
}

const LOCK = '.pull.lock';

/** One pull of a model at a time (the CLI and the editor may start the same one): the partial
 * folder's lock file holds the pulling process's id; a dead process's lock is taken over. */
function lockPull(part: string, what: string): () => void {
  mkdirSync(part, { recursive: true });
  const lock = join(part, LOCK);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(lock, String(process.pid), { flag: 'wx' });
      return () => rmSync(lock, { force: true });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const pid = Number(readFileSync(lock, 'utf8').trim());
      if (Number.isInteger(pid) && pid > 0 && processAlive(pid))
        throw new HubError('busy', `another download of ${what} is under way (process ${pid}); wait for it to finish, or stop it first`);
      rmSync(lock, { force: true });
    }
  }
  throw new HubError('busy', `cannot lock the download of ${what} (${lock})`);
}

async function fetchPlanned(
  plan: PullPlan,
  part: string,
  root: string,
  token: string | undefined,
  o: PullOptions,
  cancelled: () => HubError,
): Promise<PullResult> {
  writePullPlan(part, plan.chosen.files);
  const { createModelDownloader } = await import('node-llama-cpp');
  const files = plan.chosen.files;
  const total = plan.chosen.size;
  let done = 0;
  let fetched = 0;
  const jobs = downloadJobs(files);
  for (const [i, { file: f, group }] of jobs.entries()) {
    if (o.signal?.aborted) throw cancelled();
    const groupSize = group.reduce((a, g) => a + g.size, 0);
    mkdirSync(dirname(join(part, f.path)), { recursive: true });
    const step = { file: f, group, groupSize, index: i + 1, files: jobs.length, done, total };
    if (!onDisk(part, group)) fetched += await download(createModelDownloader, step, plan, part, token, o, cancelled);
    await verifyGroup(step, plan, part, o);
    done += groupSize;
  }
  return publish(plan, part, files, fetched);
}

/** One download: a file (a split GGUF's first part) and the files it brings. */
interface DownloadJob {
  file: RemoteFile;
  /** The file, or all the parts of a split GGUF. */
  group: RemoteFile[];
}

/** The downloads for `files`: a split GGUF is fetched by one downloader from its first part
 * (node-llama-cpp fetches the others). */
function downloadJobs(files: RemoteFile[]): DownloadJob[] {
  const split = /-(\d{5})-of-\d{5}\.gguf$/i;
  const partsOf = (f: RemoteFile): RemoteFile[] =>
    split.test(f.path) ? files.filter((g) => g.path.replace(split, '') === f.path.replace(split, '')) : [f];
  return files.filter((f) => (f.path.match(split)?.[1] ?? '00001') === '00001').map((f) => ({ file: f, group: partsOf(f) }));
}

/** Whether every file of the group is already whole in the partial folder (a resumed pull). */
function onDisk(part: string, group: RemoteFile[]): boolean {
  return group.every(
    (g) => existsSync(join(part, g.path)) && !existsSync(join(part, g.path) + '.ipull') && statSync(join(part, g.path)).size === g.size,
  );
}

/** One download job as the pull stands when it starts: its place among the jobs, and the model's
 * bytes on disk before it (`done`) and in all. */
interface PullStep extends DownloadJob {
  groupSize: number;
  index: number;
  files: number;
  done: number;
  total: number;
}

/**
 * Reports the download's progress through `onProgress`, given the bytes of this job so far. The
 * rate is measured here, over the last seconds of this pull's own progress (the downloader's
 * average includes its start-up and the bytes a resume found on disk).
 */
function progressReporter(step: PullStep, onProgress: PullOptions['onProgress']): (bytes: number) => void {
  const samples: [number, number][] = [];
  return (bytes) => {
    const now = Date.now();
    samples.push([now, bytes]);
    while (samples.length > 2 && now - samples[0][0] > 3000) samples.shift();
    const [t0, b0] = samples[0];
    const rate = now - t0 >= 200 ? ((bytes - b0) * 1000) / (now - t0) : 0;
    const rest = step.total - step.done - bytes;
    onProgress?.({
      file: step.file.path,
      index: step.index,
      files: step.files,
      bytes: step.done + bytes,
      total: step.total,
      rate,
      secondsLeft: rate > 0 ? rest / rate : Infinity,
      phase: 'download',
    });
  };
}

type CreateDownloader = typeof import('node-llama-cpp').createModelDownloader;

/** Fetches the job's files into the partial folder; returns the bytes fetched (what a resume
 * found on disk not counted). */
async function download(
  createModelDownloader: CreateDownloader,
  step: PullStep,
  plan: PullPlan,
  part: string,
  token: string | undefined,
  o: PullOptions,
  cancelled: () => HubError,
): Promise<number> {
  const { file: f, group, groupSize } = step;
  const target = join(part, f.path);
  const url = `${plan.endpoint}/${plan.repo.split('/').map(encodeURIComponent).join('/')}/resolve/${plan.commit}/${f.path.split('/').map(encodeURIComponent).join('/')}`;
  const report = progressReporter(step, o.onProgress);
  let before = 0;
  // The hub lists each file's size: a server that streams more (no length, or a wrong one) is
  // stopped there, before the bytes fill the disk and long before the hash check would refuse
  // them (a little slack for the downloader's own record of progress).
  const stop = new AbortController();
  const onCancel = (): void => stop.abort();
  o.signal?.addEventListener('abort', onCancel, { once: true });
  let overran = false;
  let dl: Awaited<ReturnType<CreateDownloader>> | undefined;
  try {
    dl = await createModelDownloader({
      modelUri: url,
      dirPath: dirname(target),
      fileName: f.path.slice(f.path.lastIndexOf('/') + 1),
      headers: token ? { Authorization: `Bearer ${token}` } : {},
      // Only the token given here: node-llama-cpp would otherwise also look in HF_TOKEN files.
      tokens: { huggingFace: (token ?? null) as unknown as string },
      endpoints: { huggingFace: `${plan.endpoint}/` },
      // Kept on cancel: the next pull resumes from it.
      deleteTempFileOnCancel: false,
      skipExisting: true,
      onProgress: (s) => {
        if (s.downloadedSize > groupSize + OVERRUN_SLACK_BYTES && !overran) {
          overran = true;
          // The downloader's own cancel, so that it stops writing and renaming before the
          // partial file is removed.
          void dl?.cancel({ deleteTempFile: true }).catch(() => undefined);
          stop.abort();
        }
        report(Math.min(s.downloadedSize, groupSize));
      },
    });
    before = dl.downloadedSize;
    report(before);
    await dl.download({ signal: stop.signal });
    if (overran) throw await overrun(group, plan, part, dl);
    // A cancel can end the transfer without an error: the partial file stays for a resume.
    if (o.signal?.aborted) throw cancelled();
  } catch (e) {
    if (overran) throw await overrun(group, plan, part, dl);
    if (o.signal?.aborted || (e instanceof HubError && e.kind === 'cancelled')) throw cancelled();
    throw hubFailure(e, plan.repo, plan.revision, plan.endpoint, token, o.signal);
  } finally {
    o.signal?.removeEventListener('abort', onCancel);
  }
  return groupSize - before;
}

/** Checks each file of the job against the hub; a file that does not match is removed and the pull fails. */
async function verifyGroup(step: PullStep, plan: PullPlan, part: string, o: PullOptions): Promise<void> {
  for (const g of step.group) {
    o.onProgress?.({
      file: g.path,
      index: step.index,
      files: step.files,
      bytes: step.done + step.groupSize,
      total: step.total,
      rate: 0,
      secondsLeft: 0,
      phase: 'verify',
    });
    const p = join(part, g.path);
    // The downloader keeps its progress record after a file's bytes until the end, and a save of
    // that record can race the end of a small file's download, leaving it behind the bytes
    // (seen: a 34-byte file delivered as 97). Cut to the listed size; the hash below decides.
    if (existsSync(p) && statSync(p).size > g.size) truncateSync(p, g.size);
    const bad = existsSync(p) ? await verify(p, g) : 'the file is missing after the download';
    if (bad) {
      rmSync(p, { force: true });
      rmSync(p + '.ipull', { force: true });
      throw new HubError(
        'hash-mismatch',
        `${g.path} of ${plan.repo}@${plan.commit.slice(0, 12)} does not match the hub (${bad}); the file was removed. Run the pull again; if it fails again, the mirror (${plan.endpoint}) serves a damaged file.`,
      );
    }
  }
}

/** The checked partial folder made the cached model: its manifest written, then renamed into place. */
function publish(plan: PullPlan, part: string, files: RemoteFile[], fetched: number): PullResult {
  rmSync(join(part, PULL_PLAN), { force: true });
  rmSync(join(part, LOCK), { force: true });
  writeManifest(part, {
    repo: plan.repo,
    revision: plan.revision,
    commit: plan.commit,
    endpoint: plan.endpoint,
    kind: plan.chosen.kind,
    selector: plan.chosen.selector,
    engine: plan.chosen.engine,
    files: files.map((f) => ({
      path: f.path,
      size: f.size,
      ...(f.sha256 ? { sha256: f.sha256 } : {}),
      ...(f.gitOid ? { gitOid: f.gitOid } : {}),
    })),
    pulledAt: new Date().toISOString(),
  });
  // The only step that makes the model visible: one rename of a checked folder.
  mkdirSync(dirname(plan.dir), { recursive: true });
  rmSync(plan.dir, { recursive: true, force: true });
  renameSync(part, plan.dir);
  const model = readCachedModel(plan.dir);
  if (!model) throw new HubError('network', `the model folder ${plan.dir} is incomplete after the pull; run it again`);
  return { model, plan: { ...plan, cached: true }, fetched };
}

export { HubError, parseModelRef } from './spec.js';
