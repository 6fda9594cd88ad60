"""`chorus-train eval`: the paper's metrics for a checkpoint, recorded next to it.

The evaluation itself is `chorus eval` (the TypeScript engine: suites, agent loop, simulation,
Pass@k/Cov@k); this module only decides how the checkpoint is served and files the result:

- `--endpoint URL --model-name N`: a server that already serves it (vLLM, SGLang, llama.cpp...).
- `--backend vllm`: start `vllm serve CHECKPOINT` on a free loopback port, evaluate through it, stop
  it (needs vLLM and a GPU; `auto` picks it when `vllm` is importable and CUDA is visible).
- `--backend local` (the fallback): the extension's in-process ONNX backend. An HF checkpoint
  (`*.safetensors`, no `onnx/`) is exported first into `CHECKPOINT/onnx-export` (once).

Results: the full reports in `CHECKPOINT/chorus_eval/<suite>/` and one summary line per run
appended to `CHECKPOINT/chorus_eval.jsonl` ({suite, row, aggregate, per_round, when}), so the
metrics of every evaluation travel with the checkpoint.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import socket
import subprocess
import sys
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

from .reward_client import REPO, _kill_group

CLI = REPO / 'dist' / 'cli.js'


def is_onnx_export(d: Path) -> bool:
    return (d / 'onnx').is_dir() and any((d / 'onnx').glob('model*.onnx'))


def is_hf_checkpoint(d: Path) -> bool:
    return (d / 'config.json').exists() and any(d.glob('*.safetensors'))


def vllm_available() -> bool:
    if importlib.util.find_spec('vllm') is None:
        return False
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def vllm_server(checkpoint: Path, name: str, max_model_len: int, log=print):
    """`vllm serve` on a free loopback port until the block ends (the whole process group is killed)."""
    port = free_port()
    cmd = [
        sys.executable,
        '-m',
        'vllm.entrypoints.openai.api_server',
        '--model',
        str(checkpoint),
        '--served-model-name',
        name,
        '--host',
        '127.0.0.1',
        '--port',
        str(port),
        '--max-model-len',
        str(max_model_len),
    ]
    log(' '.join(cmd))
    proc = subprocess.Popen(cmd, start_new_session=True)
    url = f'http://127.0.0.1:{port}/v1'
    try:
        deadline = time.time() + 900
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f'vllm serve exited with {proc.returncode} before it answered; see its log above')
            try:
                with urllib.request.urlopen(f'{url}/models', timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.time() > deadline:
                raise RuntimeError('vllm serve did not answer within 15 minutes')
            time.sleep(2)
        yield url
    finally:
        _kill_group(proc)


def ensure_export(checkpoint: Path, dtype: str, log=print) -> Path:
    """The ONNX export to load in-process: the checkpoint itself, or CHECKPOINT/onnx-export made once."""
    if is_onnx_export(checkpoint):
        return checkpoint
    if not is_hf_checkpoint(checkpoint):
        raise SystemExit(f'{checkpoint} is neither an ONNX export (onnx/model*.onnx) nor an HF checkpoint (config.json + *.safetensors)')
    out = checkpoint / 'onnx-export'
    want = {'fp32': 'model.onnx', 'q4': 'model_q4.onnx'}.get(dtype)
    if want is None:
        raise SystemExit(f'--dtype {dtype}: the exporter writes fp32 and q4')
    if not (out / 'onnx' / want).exists():
        from .export_onnx import export

        log(f'exporting {checkpoint} -> {out} ({dtype})')
        export(checkpoint, out, [dtype], log=log)
    return out


def record(checkpoint: Path, report_path: Path, suite: str) -> dict:
    rep = json.loads(report_path.read_text())
    line = {
        'suite': suite,
        'row': rep.get('row'),
        'config': rep.get('config'),
        'aggregate': rep['aggregate'],
        'per_round': rep.get('per_round'),
        'report': str(report_path),
        'when': datetime.now(timezone.utc).isoformat(timespec='seconds'),
    }
    with open(checkpoint / 'chorus_eval.jsonl', 'a') as f:
        f.write(json.dumps(line) + '\n')
    return line


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog='chorus-train eval', description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        'checkpoint',
        type=Path,
        nargs='+',
        help='HF checkpoints or transformers.js ONNX exports; with several (the experts, the merges, the OPD student), '
        'their reports are compared at the end (`chorus eval compare`: each row, the oracle union, complementarity)',
    )
    ap.add_argument('--suite', required=True, help='a `chorus eval` suite (VerilogEval folder, CVDP or LLM4Cov JSONL)')
    ap.add_argument('--backend', choices=['auto', 'vllm', 'local'], default='auto')
    ap.add_argument('--endpoint', default=None, help='a server already serving the checkpoint, with --model-name')
    ap.add_argument('--model-name', default=None)
    ap.add_argument('--dtype', default='q4', help='local backend: fp32 | q4 (default q4)')
    ap.add_argument('--max-model-len', type=int, default=32768, help='vLLM context length')
    ap.add_argument(
        '--compare-out',
        type=Path,
        default=None,
        help='where the comparison goes (default: beside the first checkpoint, chorus_compare/<suite>)',
    )
    ap.add_argument('--dry-run', action='store_true', help='print the chorus eval command(s) and exit')
    a, rest = ap.parse_known_args(argv)  # the rest goes to chorus eval: --samples, --rounds, --limit, --max-tokens ...
    if len(a.checkpoint) > 1 and a.endpoint:
        raise SystemExit('--endpoint serves one checkpoint: evaluate several with --backend vllm or local')
    if not CLI.exists():
        raise SystemExit(f'{CLI} is missing: build it with `node scripts/build.mjs --cli-only` in {REPO}')
    suite = Path(a.suite).resolve()
    outs: list[Path] = []
    code = 0
    for ck in a.checkpoint:
        code, out = evaluate_one(ck.resolve(), suite, a, rest)
        if code != 0:
            return code  # a failure, or 130: interrupted, the reports so far are recorded
        outs.append(out)
    if len(outs) < 2:
        return code
    # The paper's table (experts, oracle union, merged, distilled) from one command: the rows side
    # by side, the best row per task, and which tasks only one row solves (chorus eval compare).
    dest = (a.compare_out or a.checkpoint[0].resolve().parent / 'chorus_compare' / suite.name.removesuffix('.jsonl')).resolve()
    cmd = ['node', str(CLI), 'eval', 'compare', *map(str, outs), '--out', str(dest)]
    print(' '.join(cmd), flush=True)
    if a.dry_run:
        return 0
    return subprocess.run(cmd).returncode


def evaluate_one(ck: Path, suite: Path, a: argparse.Namespace, rest: list[str]) -> tuple[int, Path]:
    """One checkpoint through `chorus eval`; its report recorded next to it. Returns (exit code, report folder)."""
    if not ck.is_dir():
        raise SystemExit(f'{ck}: no such checkpoint directory')
    out = ck / 'chorus_eval' / suite.name.removesuffix('.jsonl')
    base = ['node', str(CLI), 'eval', '--suite', str(suite), '--out', str(out), *rest]
    backend = 'endpoint' if a.endpoint else ('vllm' if a.backend == 'vllm' or (a.backend == 'auto' and vllm_available()) else 'local')
    if backend == 'vllm' and not vllm_available():
        raise SystemExit('--backend vllm: vllm is not installed or no GPU is visible; use --backend local')
    if a.dry_run:
        where = (
            ['--endpoint', a.endpoint or '<vllm url>', '--model-name', a.model_name or ck.name]
            if backend != 'local'
            else ['--model', str(ck if is_onnx_export(ck) else ck / 'onnx-export'), '--dtype', a.dtype]
        )
        print(' '.join(base + where))
        return 0, out
    with contextlib.ExitStack() as stack:
        if backend == 'endpoint':
            if not a.model_name:
                raise SystemExit('--endpoint needs --model-name (the name the server serves the checkpoint under)')
            where = ['--endpoint', a.endpoint, '--model-name', a.model_name]
        elif backend == 'vllm':
            name = a.model_name or ck.name
            url = stack.enter_context(vllm_server(ck, name, a.max_model_len))
            where = ['--endpoint', url, '--model-name', name]
        else:
            where = ['--model', str(ensure_export(ck, a.dtype)), '--dtype', a.dtype]
        cmd = base + where
        print(' '.join(cmd), flush=True)
        code = subprocess.run(cmd).returncode
    report = out / 'report.json'
    if code not in (0, 130) or not report.exists():
        print(f'chorus eval failed (exit {code}); nothing recorded', file=sys.stderr)
        return code or 1, out
    line = record(ck, report, suite.name)
    agg = line['aggregate']
    print(
        f'recorded in {ck / "chorus_eval.jsonl"}: Pass@1 {agg["pass_at_1"]:.3f} Pass@5 {agg["pass_at_5"]:.3f} '
        f'Cov@1 {agg["cov_at_1"]:.3f} Cov@5 {agg["cov_at_5"]:.3f} sim pass {agg["sim_pass"]:.3f}'
    )
    return code, out


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
