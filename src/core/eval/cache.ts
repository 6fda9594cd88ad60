// Per-sample result cache for `chorus eval --resume`: one JSON file per (task, sample), keyed by a
// content hash of everything the result depends on (design and spec file contents, the reference
// testbench text, coverage target/targets/instance/instruction, the row's configuration, the sample's
// seed, the simulator and its version, limits). A changed design, model or flag is a different
// key, so a stale result is never reused. Writes are atomic (temp file + rename), so an
// interrupted run leaves either a whole entry or none.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { EvalTask, SampleRecord } from './task.js';
import type { BackendInfo } from '../llm/backend.js';
import type { ModelConfig } from '../llm/factory.js';
import { safeName } from './suites/materialize.js';

/** 2: the task's coverage target in percent (it was a fraction named threshold) and the run settings
 * eval takes, by their names (src/core/vocabulary/settings.ts). */
export const CACHE_VERSION = 2;

const fileCache = new Map<string, string>();
function fileDigest(path: string): string {
  if (!existsSync(path)) return 'missing';
  const st = statSync(path);
  const memo = `${path}\0${st.size}\0${st.mtimeMs}`;
  const hit = fileCache.get(memo);
  if (hit) return hit;
  const d = createHash('sha256').update(readFileSync(path)).digest('hex');
  fileCache.set(memo, d);
  return d;
}

export function taskFingerprint(t: EvalTask): unknown {
  return {
    design: t.designFiles.map((f) => [basename(f), fileDigest(f)]),
    specs: t.specFiles.map((f) => [basename(f), fileDigest(f)]),
    top: t.top,
    instance: t.instance,
    coverage_target: t.coverageTarget,
    targets: t.targets ?? null,
    instruction: t.instruction ?? null,
  };
}

/**
 * What identifies a model row's results, in the cache key and in the report (row.model): the model
 * as loaded, and for an in-process model the engine and the weights it read (the GGUF and the KV
 * cache type it ran, or the ONNX folder and dtype), so the llama.cpp and ONNX engines' results on
 * one model folder never merge, nor a q8_0 KV cache's with an f16 one's.
 */
export function modelIdentity(config: ModelConfig, info: BackendInfo): Record<string, unknown> {
  if (config.kind !== 'local') return { kind: 'openai', model: info.model, endpoint: info.location };
  const engine = info.engine ?? 'onnx';
  return {
    kind: 'local',
    engine,
    model: info.model,
    weights: info.location,
    // llama.cpp: the KV cache type that ran (`auto` resolved), not the one asked for
    ...(engine === 'onnx' ? { dtype: config.dtype ?? 'q4' } : { kvCache: info.kvCache ?? config.kvCache ?? 'f16' }),
  };
}

export function sampleKey(parts: {
  task: EvalTask;
  row: unknown;
  sample: number;
  seed: number;
  simulator: { name: string; version: string };
  limits: unknown;
  testbench?: string | null;
  /** The run settings that change what a sample does, by name (`eval: 'key'`). */
  settings: Record<string, unknown>;
}): string {
  const h = createHash('sha256');
  h.update(
    JSON.stringify({
      v: CACHE_VERSION,
      task: taskFingerprint(parts.task),
      row: parts.row,
      sample: parts.sample,
      seed: parts.seed,
      settings: parts.settings,
      simulator: parts.simulator,
      limits: parts.limits,
      testbench: parts.testbench ?? null,
    }),
  );
  return h.digest('hex');
}

export class ResultCache {
  constructor(readonly dir: string) {}

  private path(taskId: string, sample: number, key: string): string {
    return join(this.dir, safeName(taskId), `s${sample}-${key.slice(0, 24)}.json`);
  }

  get(taskId: string, sample: number, key: string): { record: SampleRecord; top: string } | null {
    const p = this.path(taskId, sample, key);
    if (!existsSync(p)) return null;
    try {
      const e = JSON.parse(readFileSync(p, 'utf8')) as { key: string; top: string; record: SampleRecord };
      return e.key === key ? { record: e.record, top: e.top } : null;
    } catch {
      return null; // a torn or foreign file: recompute
    }
  }

  put(taskId: string, sample: number, key: string, record: SampleRecord, top: string): void {
    const p = this.path(taskId, sample, key);
    mkdirSync(join(this.dir, safeName(taskId)), { recursive: true });
    const tmp = `${p}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    writeFileSync(tmp, JSON.stringify({ key, top, record }));
    renameSync(tmp, p);
  }
}
