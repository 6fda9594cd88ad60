// The in-process engines' defaults that depend on the machine and the model: threads (the physical
// cores, from /proc/cpuinfo) and llama.cpp's KV cache type under `auto` (f16, the fastest, unless
// memory is short; then q8_0 where the model's head size allows it and it runs). The engine itself is checked on real GGUFs in
// test/integration/llamaEngine.test.ts.
import { describe, expect, it } from 'vitest';
import { availableParallelism } from 'node:os';
import { coresInCpuinfo, physicalCores, threadsFrom } from '../../src/core/llm/cpu.js';
import { kvBytesPerToken, kvCacheFits, kvMemoryShort, resolveKvCache } from '../../src/core/llm/llama.js';

/** A /proc/cpuinfo text (x86 layout) for logical CPUs given as [physical id, core id]. */
const cpuinfo = (cpus: Array<[number, number]>): string =>
  cpus
    .map(([phys, core], i) =>
      [
        `processor\t: ${i}`,
        'vendor_id\t: GenuineIntel',
        'model name\t: Intel(R) Xeon(R) CPU @ 2.20GHz',
        `physical id\t: ${phys}`,
        `siblings\t: ${cpus.filter(([p]) => p === phys).length}`,
        `core id\t\t: ${core}`,
        `cpu cores\t: ${new Set(cpus.filter(([p]) => p === phys).map(([, c]) => c)).size}`,
        'flags\t\t: fpu vme de pse avx2',
      ].join('\n'),
    )
    .join('\n\n') + '\n\n';

describe('threads: the physical cores', () => {
  it('counts distinct (physical id, core id) pairs: hyperthreads are not cores', () => {
    // 4 cores with 2 hyperthreads each: Linux numbers the siblings after all first threads
    const ht = cpuinfo([...[0, 1, 2, 3].map((c) => [0, c] as [number, number]), ...[0, 1, 2, 3].map((c) => [0, c] as [number, number])]);
    expect(coresInCpuinfo(ht)).toBe(4);
    expect(threadsFrom(ht, 8)).toBe(4);
    // no hyperthreads: one logical CPU per core
    const plain = cpuinfo([
      [0, 0],
      [0, 1],
    ]);
    expect(coresInCpuinfo(plain)).toBe(2);
    expect(threadsFrom(plain, 2)).toBe(2);
    // two sockets whose core ids repeat: 2 x 2 cores, 2 threads each
    const sockets = cpuinfo([
      [0, 0],
      [0, 1],
      [1, 0],
      [1, 1],
      [0, 0],
      [0, 1],
      [1, 0],
      [1, 1],
    ]);
    expect(coresInCpuinfo(sockets)).toBe(4);
  });

  it('falls back to the usable CPUs where cpuinfo does not say, and never exceeds them', () => {
    // ARM kernels list processors without core ids
    const arm = 'processor\t: 0\nBogoMIPS\t: 50.00\nCPU part\t: 0xd0c\n\nprocessor\t: 1\nBogoMIPS\t: 50.00\n';
    expect(coresInCpuinfo(arm)).toBeNull();
    expect(threadsFrom(arm, 2)).toBe(2);
    expect(threadsFrom(null, 3)).toBe(3);
    expect(threadsFrom('', 1)).toBe(1);
    // a container pinned to 2 CPUs of a 16-core host
    const host = cpuinfo(Array.from({ length: 16 }, (_, c) => [0, c] as [number, number]));
    expect(threadsFrom(host, 2)).toBe(2);
  });

  it('on this machine: at least 1, at most the usable CPUs', () => {
    const n = physicalCores();
    expect(n).toBeGreaterThanOrEqual(1);
    expect(n).toBeLessThanOrEqual(availableParallelism());
    expect(physicalCores()).toBe(n);
  });
});

/** GGUF metadata as node-llama-cpp parses it (model.fileInfo.metadata). */
const meta = (attention: Record<string, unknown>, embedding_length?: number, block_count?: number): unknown => ({
  general: { architecture: 'qwen3' },
  qwen3: { embedding_length, attention, block_count },
});

describe('KV cache: auto', () => {
  it('q8_0 fits where both head sizes are multiples of 32', () => {
    // Qwen3-4B: heads of 128 (key_length/value_length given; 2560 / 32 = 80 would not fit)
    expect(kvCacheFits(meta({ head_count: 32, head_count_kv: 8, key_length: 128, value_length: 128 }, 2560))).toBe(true);
    // the tiny test model: heads of 16
    expect(kvCacheFits(meta({ head_count: 4, head_count_kv: 2, key_length: 16, value_length: 16 }, 16))).toBe(false);
    // no key_length: embedding_length / head_count, as llama.cpp computes it
    expect(kvCacheFits(meta({ head_count: 32 }, 4096))).toBe(true);
    expect(kvCacheFits(meta({ head_count: 32 }, 2560))).toBe(false);
    // K fits, V does not
    expect(kvCacheFits(meta({ head_count: 8, key_length: 64, value_length: 48 }, 512))).toBe(false);
    // per-layer head counts: every layer must fit
    expect(kvCacheFits(meta({ head_count: [32, 32], key_length: 96 }, 3072))).toBe(true);
    // nothing to tell (auto takes f16; an explicit q8_0 is left to llama.cpp)
    expect(kvCacheFits(meta({}))).toBeNull();
    expect(kvCacheFits(meta({ head_count: 3 }, 100))).toBeNull(); // 33.3...: not a head size
    expect(kvCacheFits({})).toBeNull();
    expect(kvCacheFits(undefined)).toBeNull();
  });

  it('sizes the f16 cache per token from the metadata', () => {
    // Qwen3-4B: 36 layers x 8 KV heads x (128 + 128) x 2 bytes
    const q4b = meta({ head_count: 32, head_count_kv: 8, key_length: 128, value_length: 128 }, 2560, 36);
    expect(kvBytesPerToken(q4b)).toBe(147_456);
    // no head_count_kv: every head has its own K and V; no key_length: embedding_length / head_count
    expect(kvBytesPerToken(meta({ head_count: 4 }, 16, 2))).toBe(2 * 4 * (4 + 4) * 2);
    // per-layer KV head counts
    expect(kvBytesPerToken(meta({ head_count: 8, head_count_kv: [2, 4], key_length: 64, value_length: 64 }, 512, 2))).toBe(
      (2 + 4) * 128 * 2,
    );
    expect(kvBytesPerToken(meta({ head_count: 8 }, 512))).toBeNull(); // no block_count
    expect(kvBytesPerToken(meta({ head_count: 8, head_count_kv: [2, 4] }, 512, 3))).toBeNull(); // 2 layers given for 3
    expect(kvBytesPerToken(undefined)).toBeNull();
  });

  it('memory is short when the weights, the f16 cache at the context limit and a margin do not fit', () => {
    const GB = 1024 ** 3;
    // 4B q4 (2.3 GB) with 8,192 tokens of f16 cache (1.1 GB): short below about 4.5 GB available
    expect(kvMemoryShort(2.3 * GB, 147_456 * 8192, 16 * GB)).toBe(false);
    expect(kvMemoryShort(2.3 * GB, 147_456 * 8192, 4 * GB)).toBe(true);
    expect(kvMemoryShort(2.3 * GB, null, 1 * GB)).toBe(false); // unknown cache size: f16
  });

  it('resolves auto to f16 unless memory is short; then to q8_0 when it fits and runs, told; to f16 with a message when it fails', async () => {
    const messages: string[] = [];
    const say = (m: string): void => void messages.push(m);
    let tried = 0;
    const runs = async (): Promise<void> => void tried++;
    const fails = async (): Promise<void> => {
      tried++;
      throw new Error('V cache quantization requires flash_attn\nmore detail');
    };
    // plenty of memory: f16, nothing tried, nothing said
    expect(await resolveKvCache('auto', true, false, runs, say, 'm.gguf')).toBe('f16');
    expect(tried).toBe(0);
    expect(messages).toEqual([]);
    // short
    expect(await resolveKvCache('auto', true, true, runs, say, 'm.gguf')).toBe('q8_0');
    expect(tried).toBe(1);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatch(/memory is short for m\.gguf .*using q8_0.*--kv-cache f16/);
    expect(await resolveKvCache('auto', false, true, runs, say, 'm.gguf')).toBe('f16');
    expect(await resolveKvCache('auto', null, true, runs, say, 'm.gguf')).toBe('f16');
    expect(tried).toBe(1); // a head size that does not fit, or is unknown, is not tried
    expect(await resolveKvCache('auto', true, true, null, say, 'm.gguf')).toBe('q8_0'); // the CPU: nothing to try
    expect(messages).toHaveLength(2);
    expect(await resolveKvCache('auto', true, true, fails, say, 'm.gguf')).toBe('f16');
    expect(messages).toHaveLength(3);
    expect(messages[2]).toMatch(/q8_0 KV cache does not run for m\.gguf here \(V cache quantization requires flash_attn\); using f16/);
    // the named types are taken as asked (llama.ts refuses an explicit q8_0 on heads that do not fit)
    expect(await resolveKvCache('q8_0', false, false, fails, say, 'm.gguf')).toBe('q8_0');
    expect(await resolveKvCache('f16', true, true, runs, say, 'm.gguf')).toBe('f16');
    expect(tried).toBe(2);
  });
});
