"""The GPU checks of scripts/gpu_smoke.sh (issue 43): three CPU tests run again as CUDA runs on one GPU, each
printed as a table row (check, result, seconds).

- `lockstep`: tests/test_trl_ddp.py::test_every_rank_takes_part_in_every_generate_call. 2 processes share
  the one GPU (torchrun; a gloo process group, since NCCL refuses two ranks on one device; DDP without
  device_ids): the direct group on rank 0, the refinement group on rank 1, the engine's generation call
  holding an all-reduce; both ranks call it in both rounds ([4, 1] and [1, 4] rows) and the step ends
  (a rank that skipped its empty round would hang the other: the check's timeout).
- `opd_gate`: tests/test_trl_opd.py::test_a_gate_closed_round_is_the_dapo_step_on_trl. A gate-closed
  round under `gate_closed: rl_fallback` gives the weights of TRL's DAPO step on the same (scripted)
  rollouts; under `skip` the weights do not move; an open gate distills (the weights differ from DAPO's).
  Deterministic CUDA kernels (torch.use_deterministic_algorithms) so the two runs can agree.
- `bf16_checkpoint`: tests/test_checkpoints.py::test_checkpoints_hold_bf16_weights_and_resume_exact_fp32_masters.
  dtype bfloat16 (bf16 autocast on the GPU): checkpoint-1 holds bf16 model weights (config dtype
  bfloat16), the fp32 masters' low 16 bits beside them, fp32 AdamW moments, one save per run; the
  resumed run starts from the fp32 masters bit for bit.

    python -m chorus_train.gpu_checks [--out DIR] [--model TINY_CHECKPOINT]

The model is the tiny random Qwen3 of the CPU tests (written to OUT/tiny unless --model names one).
Without a CUDA device (torch.cuda.is_available() false) it prints that the checks were skipped and
exits 0. `--device cpu` runs the same checks on the CPU (tests/test_gpu_smoke.py: the checks' own logic).
Exit status 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path

TRAINING = Path(__file__).resolve().parents[1]
WORKER = TRAINING / 'tests' / 'trl_ddp_worker.py'
CHECKS = ('lockstep', 'opd_gate', 'bf16_checkpoint')
SKIP_MESSAGE = (
    'gpu_checks: no CUDA device (torch.cuda.is_available() is false): the lockstep, OPD-gate and bf16-checkpoint checks are skipped'
)


class CheckFailed(AssertionError):
    pass


def _need(cond, why: str) -> None:
    if not cond:
        raise CheckFailed(why)


def _tiny(out: Path) -> Path:
    from .tiny_model import DEFAULT_TOKENIZER, PRESETS, make_checkpoint

    d = out / 'tiny'
    if not (d / 'config.json').exists():
        make_checkpoint(dict(PRESETS['tiny']), d, seed=1, tokenizer_dir=DEFAULT_TOKENIZER, minify_tokenizer=True)
    return d


# ---------------------------------------------------------------------------------------------
# lockstep: 2 processes on one GPU


def check_lockstep(model: Path, out: Path, device: str, timeout: float = 600) -> str:
    from .evaluate import free_port

    _need(WORKER.exists(), f'{WORKER} is missing (the check runs the tests folder of the checkout)')
    run = out / 'lockstep'
    shutil.rmtree(run, ignore_errors=True)
    run.mkdir(parents=True)
    env = {**os.environ, 'OMP_NUM_THREADS': '1', 'TOKENIZERS_PARALLELISM': 'false', 'HF_HUB_OFFLINE': '1', 'CHORUS_WORKER_DEVICE': device}
    if device == 'cpu':
        env['CUDA_VISIBLE_DEVICES'] = ''
    else:  # both ranks on the same (first visible) GPU
        env['CUDA_VISIBLE_DEVICES'] = os.environ.get('CUDA_VISIBLE_DEVICES', '0').split(',')[0] or '0'
    for k in ('WORLD_SIZE', 'RANK', 'LOCAL_RANK'):
        env.pop(k, None)
    cmd = [
        sys.executable, '-m', 'torch.distributed.run', '--nproc_per_node', '2', '--master_addr', '127.0.0.1',
        '--master_port', str(free_port()), str(WORKER), str(model), str(run), 'lockstep',
    ]  # fmt: skip
    try:
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise CheckFailed(f'the 2 ranks did not finish in {timeout:.0f} s (a rank waiting in a collective the other never calls)') from None
    (run / 'log.txt').write_text(r.stdout + r.stderr)
    _need(r.returncode == 0, f'torchrun exited {r.returncode}: {(r.stdout + r.stderr)[-600:]} (log: {run / "log.txt"})')
    ranks = [json.loads((run / f'rank{k}.json').read_text()) for k in (0, 1)]
    calls = [x['gen_calls'] for x in ranks]
    _need(calls == [[4, 1], [1, 4]], f'rows per generate call by rank {calls}, want [[4, 1], [1, 4]]')
    _need([x['started'] for x in ranks] == [1, 0], f'reward services started by rank: {[x["started"] for x in ranks]}, want [1, 0]')
    devs = [x['device'] for x in ranks]
    _need(all(d.startswith(device) for d in devs), f'policy devices {devs}, want {device}')
    return f'generate calls {calls}, policy on {devs[0]}'


# ---------------------------------------------------------------------------------------------
# the OPD gate: a closed round is the DAPO step


class _GateEnv:
    """Scripted best-of scores: on 'win' the teacher (1.9) beats the student's best (1.8), on 'skip' it does
    not (1.3); the student's first member is its best."""

    TEACHER = {'win': 1.9, 'skip': 1.3}

    def first_turn(self, task):
        return [{'role': 'user', 'content': f'Write a testbench for {task["id"]}.'}]

    def score(self, task, samples):
        from .envs import Score

        out = []
        for s in samples:
            r = self.TEACHER[task['id']] if s.meta['who'] == 'teacher' else 1.8 - 0.1 * s.meta['key'][2]
            out.append(Score(r, r - 1, False, 'success'))
        return out

    def feedback(self, task, sample, score):
        return 'again'


def _scripted(tok):
    words = ['module tb;', 'initial begin end', 'assign y = a;', 'wire w;']
    end = tok.convert_tokens_to_ids('<|im_end|>')

    def fn(prompt_ids, keys):
        return [tok(words[j] + f' // {rnd}', add_special_tokens=False)['input_ids'] + [end] for _, rnd, j in keys]

    return fn


def check_opd_gate(model: Path, out: Path, device: str) -> str:
    import torch

    from . import opd, rl, trl_engine
    from .policy import load_policy

    tok = load_policy(str(model))[1]
    teacher, _ = load_policy(str(model))
    with torch.no_grad():  # a sharper version of the student
        teacher.model.norm.weight.mul_(4)
    teacher = teacher.eval().requires_grad_(False).to(device)
    fn = _scripted(tok)
    tfn = lambda t, prompt, n, key: fn([prompt] * n, [(0, key[1], j) for j in range(n)])  # noqa: E731
    common = dict(lr=2e-3, prompts_per_step=1, agentic_rounds=1, max_new_tokens=6, micro_batch=4, save_every=0, seed=0)
    common |= dict(grad_clip=0.0, device=device, temperature=1.0, top_p=1.0)

    def run_opd(task, name, **kw):
        student, _ = load_policy(str(model))
        c = opd.OPDConfig(out=str(out / 'opd_gate' / name), student_samples=4, teacher_samples=2, **{**common, **kw})
        return trl_engine.train_opd(
            c, [{'id': task}], _GateEnv(), student=student, tok=tok, teachers=[teacher], steps=1, resume=False,
            sample_fn=fn, teacher_sample_fn=tfn, log=lambda *_: None,
        )  # fmt: skip

    def params(res):
        return [p.detach().float().cpu() for p in res['model'].parameters()]

    start = [p.detach().float() for p in load_policy(str(model))[0].parameters()]
    closed = run_opd('skip', 'closed', gate_closed='rl_fallback')
    _need([d['kind'] for d in closed['history'][0]] == ['rl'], f'closed gate routes {closed["history"][0]}, want rl')
    c = rl.RLConfig(out=str(out / 'opd_gate' / 'dapo'), group_size=4, mini_batches=1, **common)
    student, _ = load_policy(str(model))
    dapo = trl_engine.train_rl(
        c, [{'id': 'skip'}], _GateEnv(), model=student, tok=tok, steps=1, resume=False, sample_fn=fn, log=lambda *_: None
    )
    a, b = params(closed), params(dapo)
    gap = max(float((x - y).abs().max()) for x, y in zip(a, b, strict=True))
    _need(gap <= 1e-6, f'gate-closed OPD step and DAPO step differ by {gap:.3g} (want <= 1e-6)')
    _need(any(not torch.equal(x, z) for x, z in zip(a, start, strict=True)), 'the gate-closed (rl_fallback) step did not move the weights')
    skipped = run_opd('skip', 'skipped', gate_closed='skip')
    _need([d['kind'] for d in skipped['history'][0]] == ['skip'], f'skip routes {skipped["history"][0]}')
    _need(all(torch.equal(x, z) for x, z in zip(params(skipped), start, strict=True)), 'a skipped round moved the weights')
    opened = run_opd('win', 'open')
    _need([d['kind'] for d in opened['history'][0]] == ['distill'], f'open gate routes {opened["history"][0]}, want distill')
    diff = max(float((x - y).abs().max()) for x, y in zip(params(opened), b, strict=True))
    _need(diff > 1e-6, 'the distilled step equals the DAPO step')
    dev = str(next(closed['model'].parameters()).device)
    _need(dev.startswith(device), f'the student ran on {dev}, want {device}')
    return f'closed = DAPO (max |diff| {gap:.1e}), skip moves nothing, open distills (max |diff| {diff:.1e}); on {dev}'


# ---------------------------------------------------------------------------------------------
# bf16 checkpoints, exact fp32 masters on resume


def check_bf16_checkpoint(model: Path, out: Path, device: str) -> str:
    import torch
    from safetensors.torch import load_file
    from transformers import Trainer, TrainerCallback

    from . import masters, rl, trl_engine
    from .envs import TokenRewardEnv
    from .policy import load_policy

    tasks = [{'id': i, 'messages': [{'role': 'user', 'content': f'Task {i}: write a testbench for m{i}.'}]} for i in range(2)]
    run = out / 'bf16_checkpoint'
    shutil.rmtree(run, ignore_errors=True)  # the first run starts fresh (a rerun's old checkpoint would be resumed)

    def go(m, tok):
        emb = m.get_input_embeddings().weight.detach().float().cpu()
        good = set(torch.nonzero(emb @ torch.randn(emb.shape[1], generator=torch.Generator().manual_seed(0)) > 0).flatten().tolist())
        words = ['wire w;', 'assign y = a & b;', 'logic [7:0] x;']

        def fn(prompt_ids, keys):
            return [tok(words[(t + r + j) % 3], add_special_tokens=False)['input_ids'] + [tok.eos_token_id] for t, r, j in keys]

        cfg = rl.RLConfig(
            out=str(run), lr=1e-3, updates=10, group_size=2, prompts_per_step=2, agentic_rounds=1, max_new_tokens=8,
            micro_batch=4, save_every=2, seed=0, dtype='bfloat16', grad_clip=0.0, device=device,
        )  # fmt: skip
        return trl_engine.train_rl(cfg, tasks, TokenRewardEnv(good), model=m, tok=tok, steps=1, sample_fn=fn, log=lambda *_: None)

    saves: list[int] = []
    orig_save, orig_cb = Trainer._save_checkpoint, trl_engine._metrics_callback

    def counting(self, model, trial):
        saves.append(self.state.global_step)
        return orig_save(self, model, trial)

    got: dict = {}

    class Snap(TrainerCallback):
        def on_train_begin(self, args, state, control, model=None, **kw):
            got.update({n: p.detach().clone() for n, p in model.named_parameters()})

    Trainer._save_checkpoint = counting
    try:
        m, tok = load_policy(str(model))
        res = go(m, tok)
        _need(saves == [1], f'saves {saves}, want one save of step 1')
        ck = run / 'checkpoint-1'
        sd = load_file(str(ck / 'model.safetensors'))
        dts = {str(v.dtype) for v in sd.values() if v.is_floating_point()}
        _need(dts == {'torch.bfloat16'}, f'checkpoint weights {dts}, want bf16')
        _need(json.loads((ck / 'config.json').read_text())['dtype'] == 'bfloat16', 'config.json dtype is not bfloat16')
        low = load_file(str(ck / masters.RESUME_DIR / masters.RESIDUAL_FILE))
        params = dict(res['model'].named_parameters())
        _need(set(low) == set(params) and {v.dtype for v in low.values()} == {torch.int16}, 'the masters low bits are not all there')
        opt = torch.load(ck / 'optimizer.pt', weights_only=False)
        mom = {str(v.dtype) for st in opt['state'].values() for k, v in st.items() if k != 'step'}
        _need(mom == {'torch.float32'}, f'AdamW moments {mom}, want fp32')
        want = {n: p.detach().clone() for n, p in res['model'].named_parameters()}
        _need(any(not torch.equal(w.to(torch.bfloat16).float(), w) for w in want.values()), 'the masters equal their bf16 rounding')
        dev = str(next(res['model'].parameters()).device)
        del res
        saves.clear()
        trl_engine._metrics_callback = lambda *a, **k: Snap()
        m2, _ = load_policy(str(ck))
        go(m2, tok)
        _need(saves == [2], f'resumed run saves {saves}, want [2]')
        _need(got.keys() == want.keys(), 'the resumed run has other parameters')
        bad = [n for n in want if not torch.equal(got[n].view(torch.int32).cpu(), want[n].view(torch.int32).cpu())]
        _need(not bad, f'{len(bad)} parameters resumed off the fp32 masters (first: {bad[:1]})')
    finally:
        Trainer._save_checkpoint, trl_engine._metrics_callback = orig_save, orig_cb
    _need(dev.startswith(device), f'the policy ran on {dev}, want {device}')
    return f'bf16 weights, fp32 masters resumed bit for bit ({len(want)} tensors), one save per run; on {dev}'


RUN = {'lockstep': check_lockstep, 'opd_gate': check_opd_gate, 'bf16_checkpoint': check_bf16_checkpoint}


def table(rows: list[dict]) -> str:
    head = ('check', 'result', 'seconds', 'detail')
    cells = [head] + [(r['check'], r['result'], f'{r["seconds"]:.1f}', r['detail']) for r in rows]
    w = [max(len(c[i]) for c in cells) for i in range(3)]
    return '\n'.join(f'{c[0]:<{w[0]}}  {c[1]:<{w[1]}}  {c[2]:>{w[2]}}  {c[3]}' for c in cells)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog='python -m chorus_train.gpu_checks')
    ap.add_argument('--out', default='/tmp/chorus-gpu-smoke/checks')
    ap.add_argument('--model', default='', help='a tiny checkpoint (default: written to OUT/tiny)')
    ap.add_argument('--device', default='cuda', choices=['cuda', 'cpu'], help='cpu: the same checks on the CPU (tests)')
    ap.add_argument('--only', default='', help='comma-separated subset of ' + ', '.join(CHECKS))
    a = ap.parse_args(argv)
    os.environ.setdefault('CUBLAS_WORKSPACE_CONFIG', ':4096:8')  # deterministic cuBLAS (before CUDA starts)
    import torch

    if a.device == 'cuda' and not torch.cuda.is_available():
        print(SKIP_MESSAGE, flush=True)
        return 0
    torch.use_deterministic_algorithms(True, warn_only=True)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    model = Path(a.model) if a.model else _tiny(out)
    names = [x for x in a.only.split(',') if x] or list(CHECKS)
    if set(names) - set(CHECKS):
        ap.error(f'unknown check(s) {", ".join(sorted(set(names) - set(CHECKS)))}; one of {", ".join(CHECKS)}')
    where = torch.cuda.get_device_name(0) if a.device == 'cuda' else 'cpu'
    print(f'gpu_checks: {", ".join(names)} on {where} (model {model})', flush=True)
    rows = []
    for name in names:
        t0 = time.time()
        try:
            detail, result = RUN[name](model, out, a.device), 'PASS'
        except CheckFailed as e:
            detail, result = str(e), 'FAIL'
        except Exception as e:  # noqa: BLE001 - a check that breaks is a failed row, the others still run
            detail, result = f'{type(e).__name__}: {e}', 'FAIL'
            (out / f'{name}.traceback.txt').write_text(traceback.format_exc())
        rows.append({'check': name, 'result': result, 'seconds': time.time() - t0, 'detail': detail.replace('\n', ' ')[:400]})
        print(f'gpu_checks: {name} {result} ({rows[-1]["seconds"]:.1f} s)', flush=True)
    (out / 'gpu_checks.json').write_text(json.dumps({'device': where, 'rows': rows}, indent=2) + '\n')
    print(table(rows), flush=True)
    return 0 if all(r['result'] == 'PASS' for r in rows) else 1


if __name__ == '__main__':
    sys.exit(main())
