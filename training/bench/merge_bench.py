"""Merge benchmark: each method against the time to read its inputs, and against mergekit's CLI,
on three random-weight checkpoints with Qwen3-4B's shapes.

    training/.venv/bin/python training/bench/merge_bench.py [--layers 36] [--methods ties,dare_ties,della]

Generates (once, into ~/.cache/chorus/merge-bench) three bf16 checkpoints with Qwen3-4B's tensor
shapes (vocab 151,936 x hidden 2,560, 36 layers by default; --layers N keeps fewer layers when the
disk is short). Then, per method: the time to read the three inputs (pread, 64 MiB at a time),
`python -m chorus_train merge` on them and `mergekit-yaml` on the same files, one after the other,
as child processes: wall time and peak RSS / anonymous RSS of the process tree, sampled from
/proc. Every measurement starts from a cold page cache (caches dropped; the inputs are larger
than this kind of machine's memory, so a warm start would measure the cache, not the method).
Where caches cannot be dropped (not root), the inputs are read once before each measurement
instead, and the table says so. mergekit is stopped when its process tree passes
--mergekit-max-gib resident (default 70% of memory), so that it cannot push the machine into
swap or the OOM killer; the table then says where it was stopped. mergekit's `della` is its own
rank-based method, not §8's: its time is a reference point, not the same arithmetic.
Results: a table on stdout and bench/results/merge_bench_L<layers>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from chorus_train.memwatch import tree_mem  # noqa: E402
from chorus_train.tiny_model import DEFAULT_TOKENIZER, PRESETS, make_checkpoint  # noqa: E402


def ensure_inputs(root: Path, layers: int) -> list[Path]:
    cfg = {**PRESETS['qwen3-4b'], 'num_hidden_layers': layers, 'max_window_layers': layers}
    out = []
    for i in range(3):
        d = root / f'L{layers}' / f'expert{i}'
        if not (d / 'config.json').exists():
            print(f'generating {d} ...', flush=True)
            t = time.time()
            shutil.rmtree(d, ignore_errors=True)
            make_checkpoint(cfg, d, seed=10 + i, tokenizer_dir=DEFAULT_TOKENIZER, minify_tokenizer=False)
            print(f'  {time.time() - t:.0f} s', flush=True)
        out.append(d)
    return out


def drop_caches() -> bool:
    """Empties the page cache (root only); False where it cannot."""
    try:
        os.sync()
        Path('/proc/sys/vm/drop_caches').write_text('3\n')
        return True
    except OSError:
        return False


def read_all(ck: list[Path]) -> tuple[float, int]:
    """Seconds to read every weight file of the checkpoints once, and the bytes read."""
    buf = memoryview(bytearray(64 << 20))
    t, n = time.time(), 0
    for d in ck:
        for f in sorted(d.glob('*.safetensors')):
            fd = os.open(f, os.O_RDONLY)
            try:
                while (k := os.readv(fd, [buf])) > 0:
                    n += k
            finally:
                os.close(fd)
    return time.time() - t, n


def settle(cold: bool, ck: list[Path]) -> None:
    """The same starting point for every measurement: a cold page cache, else the inputs read once."""
    if not (cold and drop_caches()):
        read_all(ck)


def run(cmd: list[str], log: Path, max_bytes: int) -> dict:
    """Runs cmd; wall time, peak RSS and anonymous RSS of its process tree; stopped past max_bytes."""
    t = time.time()
    rss = anon = 0
    stopped = False
    with open(log, 'w') as f:
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
        while p.poll() is None:
            r, a = tree_mem(p.pid)
            rss, anon = max(rss, r), max(anon, a)
            if r > max_bytes:
                stopped = True
                os.killpg(p.pid, 9)
                p.wait()
                break
            time.sleep(0.05)
    return {
        'rc': p.returncode,
        'seconds': round(time.time() - t, 1),
        'peak_rss_gib': round(rss / 2**30, 2),
        'peak_anon_gib': round(anon / 2**30, 2),
        'stopped_at_gib': round(max_bytes / 2**30, 1) if stopped else None,
    }


def mergekit_yaml(method: str, ck: list[Path]) -> str:
    if method == 'soup':
        models = '\n'.join(f'  - model: {p}\n    parameters: {{weight: 1.0}}' for p in ck)
        return f'merge_method: linear\nmodels:\n{models}\ndtype: float32\nout_dtype: bfloat16\n'
    models = '\n'.join(f'  - model: {p}\n    parameters: {{weight: 1.0, density: 0.5}}' for p in ck[1:])
    return f'merge_method: {method}\nbase_model: {ck[0]}\nmodels:\n{models}\nparameters: {{normalize: true}}\ndtype: float32\nout_dtype: bfloat16\n'


def command(tool: str, method: str, ck: list[Path], out: Path, root: Path) -> list[str] | None:
    py = sys.executable
    if tool == 'chorus':
        models = [f'e{i}={p}' for i, p in enumerate(ck)]
        return [py, '-m', 'chorus_train', 'merge', '--method', method, *models, '--base', 'e0', '--out', str(out)]
    mk = Path(py).parent / 'mergekit-yaml'
    if not mk.exists():
        return None
    y = root / f'{method}.yml'
    y.write_text(mergekit_yaml(method, ck))
    return [str(mk), str(y), str(out), '--lazy-unpickle', '--allow-crimes']


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--layers', type=int, default=36)
    ap.add_argument('--methods', default='ties,dare_ties,della')
    ap.add_argument('--tools', default='chorus,mergekit')
    ap.add_argument('--root', type=Path, default=Path.home() / '.cache' / 'chorus' / 'merge-bench')
    ap.add_argument('--mergekit-max-gib', type=float, default=None, help='stop mergekit past this resident size (default: 70%% of memory)')
    ap.add_argument('--keep-outputs', action='store_true')
    a = ap.parse_args()
    a.root.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(a.root).free
    per = (151936 * 2560 + a.layers * 101_187_840 + a.layers * 2560 * 2) * 2
    need = per * 4  # 3 inputs + 1 output at a time
    print(f'disk free {free / 2**30:.0f} GiB; each checkpoint {per / 2**30:.1f} GiB; need ~{need / 2**30:.0f} GiB', flush=True)
    if need > free:
        raise SystemExit(f'not enough disk for {a.layers} layers: pass --layers N')
    ck = ensure_inputs(a.root, a.layers)
    total_mem = os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES')
    cap = int((a.mergekit_max_gib or 0.7 * total_mem / 2**30) * 2**30)
    cold = drop_caches()
    print(
        f'page cache: {"dropped before every measurement" if cold else "cannot be dropped (not root): inputs read once before each"}',
        flush=True,
    )
    results = []
    for method in a.methods.split(','):
        settle(cold, ck)
        read_s, nbytes = read_all(ck)
        print(json.dumps({'method': method, 'read_s': round(read_s, 1), 'read_gib': round(nbytes / 2**30, 2)}), flush=True)
        for tool in a.tools.split(','):
            out = a.root / f'out-{tool}-{method}'
            shutil.rmtree(out, ignore_errors=True)
            cmd = command(tool, method, ck, out, a.root)
            if cmd is None:
                print(f'{tool} is not installed: skipped')
                continue
            settle(cold, ck)
            r = run(cmd, a.root / f'{tool}-{method}.log', cap if tool == 'mergekit' else total_mem)
            r.update({'tool': tool, 'method': method, 'read_s': round(read_s, 1), 'x_read': round(r['seconds'] / read_s, 2)})
            results.append(r)
            print(json.dumps(r), flush=True)
            if not a.keep_outputs:
                shutil.rmtree(out, ignore_errors=True)
    print(
        f'\nQwen3-4B shapes, {a.layers} layers, 3 x {per / 2**30:.1f} GiB bf16 inputs; {os.cpu_count()} cores, '
        f'{total_mem / 2**30:.0f} GiB memory; {"cold" if cold else "warm"} page cache\n'
    )
    print('| method | tool | wall s | read inputs s | x read | peak RSS GiB | peak anon GiB | note |\n|---|---|---|---|---|---|---|---|')
    for r in results:
        done = r['rc'] == 0
        note = (
            f'stopped after {r["seconds"]} s at {r["stopped_at_gib"]} GiB resident'
            if r['stopped_at_gib']
            else ('' if done else f'exit {r["rc"]}')
        )
        wall, ratio = (r['seconds'], r['x_read']) if done else ('-', '-')
        print(f'| {r["method"]} | {r["tool"]} | {wall} | {r["read_s"]} | {ratio} | {r["peak_rss_gib"]} | {r["peak_anon_gib"]} | {note} |')
    (HERE / 'results').mkdir(exist_ok=True)
    (HERE / 'results' / f'merge_bench_L{a.layers}.json').write_text(
        json.dumps({'layers': a.layers, 'checkpoint_gib': per / 2**30, 'cold_cache': cold, 'results': results}, indent=2) + '\n'
    )


if __name__ == '__main__':
    main()
