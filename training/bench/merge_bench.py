"""Merge benchmark: ours vs mergekit's CLI on three random-weight checkpoints with Qwen3-4B's shapes.

    training/.venv/bin/python training/bench/merge_bench.py [--layers 36] [--methods soup,dare_ties]

Generates (once, into ~/.cache/chorus/merge-bench) three bf16 checkpoints with Qwen3-4B's tensor
shapes (vocab 151,936 x hidden 2,560, 36 layers by default; --layers N keeps fewer layers when the
disk is short), then for each method runs `python -m chorus_train merge` and `mergekit-yaml` on
the same files, one after the other, as child processes: wall time and peak RSS / anonymous RSS
of the process tree, sampled from /proc. Inputs are read once beforehand so both start with a
warm page cache. Results: a table on stdout and bench/results/merge_bench.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from chorus_train.memwatch import PeakWatcher  # noqa: E402
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


def run(cmd: list[str], log: Path) -> dict:
    t = time.time()
    with open(log, 'w') as f:
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT)
        with PeakWatcher(p.pid, interval=0.05) as w:
            rc = p.wait()
    return {
        'rc': rc,
        'seconds': round(time.time() - t, 1),
        'peak_rss_gib': round(w.rss_peak / 2**30, 2),
        'peak_anon_gib': round(w.anon_peak / 2**30, 2),
    }


def mergekit_yaml(method: str, ck: list[Path]) -> str:
    if method == 'soup':
        models = '\n'.join(f'  - model: {p}\n    parameters: {{weight: 1.0}}' for p in ck)
        return f'merge_method: linear\nmodels:\n{models}\ndtype: float32\nout_dtype: bfloat16\n'
    models = '\n'.join(f'  - model: {p}\n    parameters: {{weight: 1.0, density: 0.5}}' for p in ck[1:])
    return f'merge_method: {method}\nbase_model: {ck[0]}\nmodels:\n{models}\nparameters: {{normalize: true}}\ndtype: float32\nout_dtype: bfloat16\n'


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--layers', type=int, default=36)
    ap.add_argument('--methods', default='soup,dare_ties')
    ap.add_argument('--root', type=Path, default=Path.home() / '.cache' / 'chorus' / 'merge-bench')
    ap.add_argument('--keep-outputs', action='store_true')
    a = ap.parse_args()
    a.root.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(a.root).free
    per = (151936 * 2560 + a.layers * 101_187_840 + a.layers * 2560 * 2) * 2
    need = per * 5  # 3 inputs + 2 outputs at a time
    print(f'disk free {free / 2**30:.0f} GiB; each checkpoint {per / 2**30:.1f} GiB; need ~{need / 2**30:.0f} GiB', flush=True)
    if need > free:
        raise SystemExit(f'not enough disk for {a.layers} layers: pass --layers N')
    ck = ensure_inputs(a.root, a.layers)
    for d in ck:  # warm the page cache for both tools
        for f in sorted(d.glob('*.safetensors')):
            with open(f, 'rb') as fh:
                while fh.read(1 << 26):
                    pass
    py = sys.executable
    mk = Path(py).parent / 'mergekit-yaml'
    results = []
    largest = 151936 * 2560 * 2
    for method in a.methods.split(','):
        for tool in ('chorus', 'mergekit'):
            out = a.root / f'out-{tool}-{method}'
            shutil.rmtree(out, ignore_errors=True)
            if tool == 'chorus':
                cmd = [
                    py,
                    '-m',
                    'chorus_train',
                    'merge',
                    '--method',
                    method,
                    *[f'e{i}={p}' for i, p in enumerate(ck)],
                    '--base',
                    'e0',
                    '--out',
                    str(out),
                ]
            else:
                if not mk.exists():
                    print('mergekit is not installed: skipped')
                    continue
                y = a.root / f'{method}.yml'
                y.write_text(mergekit_yaml(method, ck))
                cmd = [str(mk), str(y), str(out), '--lazy-unpickle', '--allow-crimes']
            r = run(cmd, a.root / f'{tool}-{method}.log')
            r.update({'tool': tool, 'method': method})
            results.append(r)
            print(json.dumps(r), flush=True)
            if not a.keep_outputs:
                shutil.rmtree(out, ignore_errors=True)
    print(f'\nQwen3-4B shapes, {a.layers} layers, 3 x {per / 2**30:.1f} GiB bf16 inputs; largest tensor {largest / 2**30:.2f} GiB\n')
    print('| method | tool | wall s | peak RSS GiB | peak anon GiB |\n|---|---|---|---|---|')
    for r in results:
        print(f'| {r["method"]} | {r["tool"]} | {r["seconds"]} | {r["peak_rss_gib"]} | {r["peak_anon_gib"]} |')
    (HERE / 'results').mkdir(exist_ok=True)
    (HERE / 'results' / 'merge_bench.json').write_text(
        json.dumps({'layers': a.layers, 'checkpoint_gib': per / 2**30, 'largest_tensor_gib': largest / 2**30, 'results': results}, indent=2)
        + '\n'
    )


if __name__ == '__main__':
    main()
