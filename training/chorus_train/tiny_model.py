"""Create a Qwen3-architecture model with random weights and the real Qwen3 tokenizer, and export it
to the transformers.js ONNX layout (optionally also to GGUF for llama.cpp).

    python -m chorus_train.tiny_model --preset tiny --out test/fixtures/models/tiny-qwen3
    python -m chorus_train.tiny_model --preset qwen3-4b --out ~/.cache/chorus/models/qwen3-4b-random --dtypes q4 --gguf q4_k_m

Presets: `tiny` (the committed test fixture: 2 layers, hidden 16) and `qwen3-4b` (Qwen3-4B's exact
shapes, for speed measurements: speed depends on shapes, not on weight values). Weights are
N(0, 0.02) from a fixed seed (norm weights 1), so a rerun gives the same files. No torch needed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from .export_onnx import Checkpoint, export, write_safetensors

REPO = Path(__file__).resolve().parents[2]
# The real Qwen3 tokenizer (tokenizer.json + tokenizer_config.json with the chat template),
# committed with the tiny fixture model (Apache-2.0, from the Qwen3 release).
DEFAULT_TOKENIZER = REPO / 'test' / 'fixtures' / 'models' / 'tiny-qwen3'

_BASE = {
    'architectures': ['Qwen3ForCausalLM'],
    'attention_bias': False,
    'attention_dropout': 0.0,
    'bos_token_id': 151643,
    'eos_token_id': 151645,
    'hidden_act': 'silu',
    'initializer_range': 0.02,
    'max_position_embeddings': 40960,
    'model_type': 'qwen3',
    'rms_norm_eps': 1e-06,
    'rope_scaling': None,
    'rope_theta': 1000000,
    'sliding_window': None,
    'tie_word_embeddings': True,
    'torch_dtype': 'bfloat16',
    'transformers_version': '4.51.0',
    'use_cache': True,
    'use_sliding_window': False,
    'vocab_size': 151936,
}

PRESETS = {
    # the committed fixture: the 151,936 x 16 embedding (4-bit) dominates its size
    'tiny': {
        **_BASE,
        'hidden_size': 16,
        'num_hidden_layers': 2,
        'num_attention_heads': 4,
        'num_key_value_heads': 2,
        'head_dim': 16,
        'intermediate_size': 64,
        'max_window_layers': 2,
    },
    # Qwen3-0.6B (config.json of Qwen/Qwen3-0.6B): the accelerator smoke run (scripts/gpu_smoke.sh)
    'qwen3-0.6b': {
        **_BASE,
        'hidden_size': 1024,
        'num_hidden_layers': 28,
        'num_attention_heads': 16,
        'num_key_value_heads': 8,
        'head_dim': 128,
        'intermediate_size': 3072,
        'max_window_layers': 28,
    },
    # Qwen3-4B (config.json of Qwen/Qwen3-4B)
    'qwen3-4b': {
        **_BASE,
        'hidden_size': 2560,
        'num_hidden_layers': 36,
        'num_attention_heads': 32,
        'num_key_value_heads': 8,
        'head_dim': 128,
        'intermediate_size': 9728,
        'max_window_layers': 36,
    },
}

GENERATION_CONFIG = {
    'bos_token_id': 151643,
    'do_sample': True,
    'eos_token_id': [151645, 151643],
    'pad_token_id': 151643,
    'temperature': 0.6,
    'top_k': 20,
    'top_p': 0.95,
    'transformers_version': '4.51.0',
}


def weight_shapes(c: dict) -> list[tuple[str, tuple[int, ...], bool]]:
    """(name, shape, is_norm) of every tensor of a Qwen3ForCausalLM checkpoint, in file order."""
    H, I, hd = c['hidden_size'], c['intermediate_size'], c['head_dim']  # noqa: E741
    nh, nkv = c['num_attention_heads'], c['num_key_value_heads']
    out = [('model.embed_tokens.weight', (c['vocab_size'], H), False)]
    for i in range(c['num_hidden_layers']):
        p = f'model.layers.{i}'
        out += [
            (f'{p}.input_layernorm.weight', (H,), True),
            (f'{p}.self_attn.q_proj.weight', (nh * hd, H), False),
            (f'{p}.self_attn.k_proj.weight', (nkv * hd, H), False),
            (f'{p}.self_attn.v_proj.weight', (nkv * hd, H), False),
            (f'{p}.self_attn.o_proj.weight', (H, nh * hd), False),
            (f'{p}.self_attn.q_norm.weight', (hd,), True),
            (f'{p}.self_attn.k_norm.weight', (hd,), True),
            (f'{p}.post_attention_layernorm.weight', (H,), True),
            (f'{p}.mlp.gate_proj.weight', (I, H), False),
            (f'{p}.mlp.up_proj.weight', (I, H), False),
            (f'{p}.mlp.down_proj.weight', (H, I), False),
        ]
    out.append(('model.norm.weight', (H,), True))
    if not c['tie_word_embeddings']:
        out.append(('lm_head.weight', (c['vocab_size'], H), False))
    return out


def copy_tokenizer(src: Path, dst: Path, minify: bool) -> None:
    for name in ('tokenizer.json', 'tokenizer_config.json'):
        if not (src / name).exists():
            raise SystemExit(
                f'tokenizer file {src / name} is missing (it is committed under test/fixtures/models/tiny-qwen3; or pass --tokenizer-dir)'
            )
    if src.resolve() == dst.resolve():  # regenerating the fixture in place: the files are already there
        return
    if minify:  # same JSON, no indentation: 11.4 MB -> 5.4 MB
        data = json.loads((src / 'tokenizer.json').read_text(encoding='utf-8'))
        (dst / 'tokenizer.json').write_text(json.dumps(data, ensure_ascii=False, separators=(',', ':')), encoding='utf-8')
    else:
        shutil.copyfile(src / 'tokenizer.json', dst / 'tokenizer.json')
    shutil.copyfile(src / 'tokenizer_config.json', dst / 'tokenizer_config.json')


def make_checkpoint(
    cfg: dict, out: Path, seed: int, tokenizer_dir: Path, minify_tokenizer: bool, shard_bytes: int = 2 << 30, fast_fill: bool = False
) -> None:
    """A Hugging Face checkpoint directory (config, generation config, tokenizer, bf16 safetensors)."""
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    std = np.float32(cfg['initializer_range'])
    shard_keys: list[list[str]] = []
    cur: dict[str, np.ndarray] = {}
    size = 0

    def flush() -> None:
        nonlocal cur, size
        write_safetensors(out / f'.shard{len(shard_keys)}.safetensors', cur, 'BF16')
        shard_keys.append(list(cur))
        cur, size = {}, 0

    # Large presets (speed measurements only) tile a 1M-value random pool from a random offset per
    # tensor instead of drawing every value: same shapes and value distribution, minutes faster.
    pool = rng.standard_normal(1 << 20, dtype=np.float32) * std if fast_fill else None
    for name, shape, is_norm in weight_shapes(cfg):
        n = int(np.prod(shape))
        if is_norm:
            a = np.ones(shape, np.float32)
        elif pool is not None and n > pool.size:
            start = int(rng.integers(pool.size))
            a = np.resize(np.roll(pool, -start), n).reshape(shape)
        else:
            a = rng.standard_normal(shape, dtype=np.float32) * std
        if cur and size + a.size * 2 > shard_bytes:
            flush()
        cur[name] = a
        size += a.size * 2
    flush()
    n = len(shard_keys)
    weight_map = {}
    for i, keys in enumerate(shard_keys):
        fname = 'model.safetensors' if n == 1 else f'model-{i + 1:05d}-of-{n:05d}.safetensors'
        (out / f'.shard{i}.safetensors').rename(out / fname)
        weight_map.update({k: fname for k in keys})
    if n > 1:
        (out / 'model.safetensors.index.json').write_text(json.dumps({'metadata': {}, 'weight_map': weight_map}, indent=2))
    (out / 'config.json').write_text(json.dumps(cfg, indent=2) + '\n')
    (out / 'generation_config.json').write_text(json.dumps(GENERATION_CONFIG, indent=2) + '\n')
    copy_tokenizer(tokenizer_dir, out, minify_tokenizer)


# ---------------------------------------------------------------------------------------------
# numpy reference forward pass (Hugging Face Qwen3 semantics), used by --verify


def reference_logits(ckpt_dir: Path, ids: list[int]) -> np.ndarray:
    c = json.loads((ckpt_dir / 'config.json').read_text())
    ck = Checkpoint(ckpt_dir)
    nh, nkv, hd, eps = c['num_attention_heads'], c['num_key_value_heads'], c['head_dim'], c['rms_norm_eps']
    S = len(ids)

    def rms(x, w):
        return w * (x / np.sqrt((x * x).mean(-1, keepdims=True) + eps))

    inv = 1.0 / c['rope_theta'] ** (np.arange(0, hd, 2) / hd)
    ang = np.arange(S)[:, None] * inv[None, :]
    cos = np.concatenate([np.cos(ang)] * 2, -1)
    sin = np.concatenate([np.sin(ang)] * 2, -1)

    def rope(x):  # [heads, S, hd], rotate_half
        x1, x2 = x[..., : hd // 2], x[..., hd // 2 :]
        return x * cos + np.concatenate([-x2, x1], -1) * sin

    emb = ck.get('model.embed_tokens.weight').astype(np.float64)
    x = emb[ids]
    mask = np.triu(np.full((S, S), -np.inf), 1)
    for i in range(c['num_hidden_layers']):
        p = f'model.layers.{i}'
        W = lambda n, p=p: ck.get(f'{p}.{n}').astype(np.float64)  # noqa: E731
        h = rms(x, W('input_layernorm.weight'))
        q = (h @ W('self_attn.q_proj.weight').T).reshape(S, nh, hd)
        k = (h @ W('self_attn.k_proj.weight').T).reshape(S, nkv, hd)
        v = (h @ W('self_attn.v_proj.weight').T).reshape(S, nkv, hd)
        q = rope(rms(q, W('self_attn.q_norm.weight')).transpose(1, 0, 2))
        k = rope(rms(k, W('self_attn.k_norm.weight')).transpose(1, 0, 2))
        v = v.transpose(1, 0, 2)
        rep = nh // nkv
        k, v = np.repeat(k, rep, 0), np.repeat(v, rep, 0)
        s = q @ k.transpose(0, 2, 1) / np.sqrt(hd) + mask
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        a = (s @ v).transpose(1, 0, 2).reshape(S, nh * hd)
        x = x + a @ W('self_attn.o_proj.weight').T
        h = rms(x, W('post_attention_layernorm.weight'))
        g = h @ W('mlp.gate_proj.weight').T
        x = x + ((g / (1 + np.exp(-g))) * (h @ W('mlp.up_proj.weight').T)) @ W('mlp.down_proj.weight').T
    x = rms(x, ck.get('model.norm.weight').astype(np.float64))
    head = emb if c['tie_word_embeddings'] else ck.get('lm_head.weight').astype(np.float64)
    return x @ head.T


def run_onnx(path: Path, cfg: dict, ids: list[int], split: int) -> np.ndarray:
    """Logits of every position: the first `split` tokens in one call, the rest one by one with the cache."""
    import onnxruntime as ort

    sess = ort.InferenceSession(str(path), providers=['CPUExecutionProvider'])
    L, nkv, hd = cfg['num_hidden_layers'], cfg['num_key_value_heads'], cfg['head_dim']
    past = {f'past_key_values.{i}.{kv}': np.zeros((1, nkv, 0, hd), np.float32) for i in range(L) for kv in ('key', 'value')}
    out = []
    chunks = [ids[:split]] + [[t] for t in ids[split:]]
    done = 0
    for ch in chunks:
        done += len(ch)
        feed = {
            'input_ids': np.array([ch], np.int64),
            'attention_mask': np.ones((1, done), np.int64),
            'num_logits_to_keep': np.array(0, np.int64),
            **past,
        }
        res = sess.run(None, feed)
        names = [o.name for o in sess.get_outputs()]
        r = dict(zip(names, res, strict=True))
        out.append(r['logits'][0])
        past = {k.replace('present', 'past_key_values'): v for k, v in r.items() if k.startswith('present')}
    return np.concatenate(out, 0)


def run_onnx_inplace(path: Path, cfg: dict, ids: list[int], split: int, capacity: int = 64) -> np.ndarray:
    """The same through the in-place cache graph, as src/core/llm/local.ts drives it: one
    [1, kv_heads, capacity, head_dim] buffer per layer and key/value, larger than what is used (the
    unused slots hold garbage, which the graph must ignore), the new keys/values written into the
    next slots after each call."""
    import onnxruntime as ort

    sess = ort.InferenceSession(str(path), providers=['CPUExecutionProvider'])
    L, nkv, hd = cfg['num_hidden_layers'], cfg['num_key_value_heads'], cfg['head_dim']
    rng = np.random.default_rng(0)
    cache = {
        f'cache.{i}.{kv}': rng.normal(size=(1, nkv, capacity, hd)).astype(np.float32) * 100 for i in range(L) for kv in ('key', 'value')
    }
    names = [o.name for o in sess.get_outputs()]
    out = []
    done = 0
    for ch in [ids[:split]] + [[t] for t in ids[split:]]:
        feed = {
            'input_ids': np.array([ch], np.int64),
            'past_length': np.array(done, np.int64),
            'num_logits_to_keep': np.array(0, np.int64),
            **cache,
        }
        r = dict(zip(names, sess.run(None, feed), strict=True))
        out.append(r['logits'][0])
        for k, v in r.items():
            if k.startswith('new.'):
                cache[k.replace('new.', 'cache.')][:, :, done : done + len(ch)] = v
        done += len(ch)
    return np.concatenate(out, 0)


def verify(ckpt: Path, cfg: dict, log=print) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        export(ckpt, Path(tmp), ['fp32', 'q4'], block=_VERIFY_BLOCK, log=lambda *_: None)
        ids = [151644, 8948, 198, 2610, 525, 264, 1273, 13, 151645, 198, 151644, 77091, 198]
        ref = reference_logits(ckpt, ids)
        checks = [
            ('fp32', 'model.onnx', run_onnx, 2e-3),
            ('q4', 'model_q4.onnx', run_onnx, None),
            ('fp32 in-place cache', 'model.inplace.onnx', run_onnx_inplace, 2e-3),
            ('q4 in-place cache', 'model_q4.inplace.onnx', run_onnx_inplace, None),
        ]
        for dt, fname, run, tol in checks:
            got = run(Path(tmp) / 'onnx' / fname, cfg, ids, split=8)
            err = np.abs(got - ref).max() / (np.abs(ref).max() + 1e-12)
            corr = np.corrcoef(got.ravel(), ref.ravel())[0, 1]
            log(f'  verify {dt}: max relative error {err:.2e}, correlation {corr:.5f}')
            if tol is not None and err > tol:
                raise SystemExit(f'verify failed: {dt} logits differ from the numpy reference ({err:.2e} > {tol})')
            if tol is None and corr < 0.9:
                raise SystemExit(f'verify failed: {dt} logits correlate {corr:.3f} with the reference')


_VERIFY_BLOCK = 32


def main(argv: list[str] | None = None) -> None:
    global _VERIFY_BLOCK
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--preset', choices=sorted(PRESETS), default='tiny')
    ap.add_argument('--out', type=Path, required=True, help='output directory (transformers.js layout)')
    ap.add_argument('--seed', type=int, default=1234)
    ap.add_argument('--dtypes', default='fp32,q4', help='ONNX variants: comma list of fp32, q4')
    ap.add_argument('--block-size', type=int, default=None, help='4-bit block size (default 16 for tiny, 32 otherwise)')
    ap.add_argument('--tokenizer-dir', type=Path, default=DEFAULT_TOKENIZER)
    ap.add_argument(
        '--hf-out', type=Path, default=None, help='keep the Hugging Face checkpoint here (default: a temporary directory, removed)'
    )
    ap.add_argument('--gguf', default=None, help='also write <out>/model-<type>.gguf for llama.cpp: q4_k_m, q4_0, q8_0 or f16')
    ap.add_argument(
        '--verify', action='store_true', help='check the ONNX logits against a numpy reference forward pass (small presets only)'
    )
    a = ap.parse_args(argv)
    cfg = dict(PRESETS[a.preset])
    block = a.block_size or (16 if a.preset == 'tiny' else 32)
    _VERIFY_BLOCK = block
    dtypes = [d.strip() for d in a.dtypes.split(',') if d.strip()]
    t0 = time.time()
    tmp = None
    hf = a.hf_out
    if hf is None:
        tmp = tempfile.mkdtemp(prefix='chorus-hf-', dir=str(a.out.parent) if a.out.parent.exists() else None)
        hf = Path(tmp)
    try:
        print(f'[{a.preset}] random checkpoint -> {hf}', flush=True)
        make_checkpoint(cfg, hf, a.seed, a.tokenizer_dir, minify_tokenizer=a.preset == 'tiny', fast_fill=a.preset != 'tiny')
        print(f'  checkpoint written in {time.time() - t0:.1f} s', flush=True)
        if a.verify:
            verify(hf, cfg)
        a.out.mkdir(parents=True, exist_ok=True)
        export(hf, a.out, dtypes, block=block, embed_q4=a.preset == 'tiny')
        if a.gguf:
            from .gguf_export import export_gguf

            t1 = time.time()
            path = export_gguf(hf, a.out, a.gguf)
            print(f'  wrote {path} in {time.time() - t1:.1f} s', flush=True)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f'done in {time.time() - t0:.1f} s: {a.out}', flush=True)


if __name__ == '__main__':
    main(sys.argv[1:])
