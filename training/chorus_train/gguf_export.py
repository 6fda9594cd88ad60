"""Hugging Face Qwen3 checkpoint -> GGUF for llama.cpp (for speed comparisons in bench/llm.ts).

    python -m chorus_train.gguf_export CHECKPOINT_DIR OUT_DIR [--type q4_k_m]

Writes an F16 GGUF with the `gguf` package (the tensor names and metadata llama.cpp's
convert_hf_to_gguf.py writes for Qwen3: no q/k permutation, NEOX rope), then quantizes it with
llama.cpp's own `llama_model_quantize` from the libllama shipped in node-llama-cpp's prebuilt
binaries (node_modules/@node-llama-cpp/<platform>/bins), called through ctypes.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from .export_onnx import Checkpoint

REPO = Path(__file__).resolve().parents[2]
FTYPES = {'q4_0': 2, 'q8_0': 7, 'q4_k_m': 15, 'f16': 1}


def _tokenizer_meta(ckpt: Path, vocab_size: int):
    tok = json.loads((ckpt / 'tokenizer.json').read_text(encoding='utf-8'))
    cfg = json.loads((ckpt / 'tokenizer_config.json').read_text(encoding='utf-8'))
    import gguf

    by_id: dict[int, tuple[str, int]] = {i: (t, gguf.TokenType.NORMAL) for t, i in tok['model']['vocab'].items()}
    for a in tok['added_tokens']:
        by_id[a['id']] = (a['content'], gguf.TokenType.CONTROL if a.get('special') else gguf.TokenType.USER_DEFINED)
    tokens, types = [], []
    for i in range(vocab_size):
        t, ty = by_id.get(i, (f'[PAD{i}]', gguf.TokenType.UNUSED))
        tokens.append(t)
        types.append(ty)
    merges = [m if isinstance(m, str) else ' '.join(m) for m in tok['model']['merges']]
    return tokens, types, merges, cfg.get('chat_template')


def write_f16(ckpt: Path, path: Path) -> None:
    import gguf

    c = json.loads((ckpt / 'config.json').read_text())
    ck = Checkpoint(ckpt)
    L = c['num_hidden_layers']
    w = gguf.GGUFWriter(str(path), 'qwen3')
    w.add_name('qwen3-random')
    w.add_context_length(c['max_position_embeddings'])
    w.add_embedding_length(c['hidden_size'])
    w.add_block_count(L)
    w.add_feed_forward_length(c['intermediate_size'])
    w.add_head_count(c['num_attention_heads'])
    w.add_head_count_kv(c['num_key_value_heads'])
    w.add_key_length(c['head_dim'])
    w.add_value_length(c['head_dim'])
    w.add_rope_freq_base(float(c['rope_theta']))
    w.add_layer_norm_rms_eps(float(c['rms_norm_eps']))
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    tokens, types, merges, template = _tokenizer_meta(ckpt, c['vocab_size'])
    w.add_tokenizer_model('gpt2')
    w.add_tokenizer_pre('qwen2')
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(151643)
    w.add_eos_token_id(151645)
    w.add_pad_token_id(151643)
    w.add_add_bos_token(False)
    if template:
        w.add_chat_template(template)

    names = [('model.embed_tokens.weight', 'token_embd.weight')]
    for i in range(L):
        p = f'model.layers.{i}'
        names += [
            (f'{p}.input_layernorm.weight', f'blk.{i}.attn_norm.weight'),
            (f'{p}.self_attn.q_proj.weight', f'blk.{i}.attn_q.weight'),
            (f'{p}.self_attn.k_proj.weight', f'blk.{i}.attn_k.weight'),
            (f'{p}.self_attn.v_proj.weight', f'blk.{i}.attn_v.weight'),
            (f'{p}.self_attn.o_proj.weight', f'blk.{i}.attn_output.weight'),
            (f'{p}.self_attn.q_norm.weight', f'blk.{i}.attn_q_norm.weight'),
            (f'{p}.self_attn.k_norm.weight', f'blk.{i}.attn_k_norm.weight'),
            (f'{p}.post_attention_layernorm.weight', f'blk.{i}.ffn_norm.weight'),
            (f'{p}.mlp.gate_proj.weight', f'blk.{i}.ffn_gate.weight'),
            (f'{p}.mlp.up_proj.weight', f'blk.{i}.ffn_up.weight'),
            (f'{p}.mlp.down_proj.weight', f'blk.{i}.ffn_down.weight'),
        ]
    names.append(('model.norm.weight', 'output_norm.weight'))
    if ck.has('lm_head.weight') and not c.get('tie_word_embeddings'):
        names.append(('lm_head.weight', 'output.weight'))

    def dtype_of(hf: str):
        return np.float32 if hf.endswith('norm.weight') else np.float16

    for hf, gg in names:
        shape = ck.where[hf][1]['shape']
        dt = np.dtype(dtype_of(hf))
        w.add_tensor_info(gg, shape, dt, int(np.prod(shape)) * dt.itemsize)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for hf, _ in names:
        w.write_tensor_data(ck.get(hf).astype(dtype_of(hf)))
    w.close()


def find_libllama() -> Path:
    import platform

    arch = {'x86_64': 'x64', 'AMD64': 'x64', 'aarch64': 'arm64', 'arm64': 'arm64'}.get(platform.machine(), platform.machine())
    plat = {'linux': 'linux', 'darwin': 'mac', 'win32': 'win'}.get(sys.platform, sys.platform)
    base = REPO / 'node_modules' / '@node-llama-cpp' / f'{plat}-{arch}' / 'bins'
    libs = sorted(base.glob('*/libllama*.so')) + sorted(base.glob('*/libllama*.dylib')) + sorted(base.glob('*/llama*.dll'))
    if not libs:
        raise SystemExit(f'no libllama under {base} (node-llama-cpp prebuilt binaries); cannot quantize GGUF')
    return libs[0]


class _QuantParams(ctypes.Structure):
    # llama.h (llama.cpp as bundled by node-llama-cpp 3.21.1), plus slack for newer fields
    _fields_ = [
        ('nthread', ctypes.c_int32),
        ('ftype', ctypes.c_int32),
        ('output_tensor_type', ctypes.c_int32),
        ('token_embedding_type', ctypes.c_int32),
        ('allow_requantize', ctypes.c_bool),
        ('quantize_output_tensor', ctypes.c_bool),
        ('only_copy', ctypes.c_bool),
        ('pure', ctypes.c_bool),
        ('keep_split', ctypes.c_bool),
        ('dry_run', ctypes.c_bool),
        ('imatrix', ctypes.c_void_p),
        ('kv_overrides', ctypes.c_void_p),
        ('tt_overrides', ctypes.c_void_p),
        ('prune_layers', ctypes.c_void_p),
        ('max_buf_size', ctypes.c_size_t),
        ('_slack', ctypes.c_uint8 * 256),
    ]


def quantize(src: Path, dst: Path, qtype: str, threads: int = 0) -> None:
    lib_path = find_libllama()
    os.environ.setdefault('GGML_BACKEND_DIR', str(lib_path.parent))
    lib = ctypes.CDLL(str(lib_path), mode=ctypes.RTLD_GLOBAL)
    lib.llama_model_quantize_default_params.restype = _QuantParams
    lib.llama_model_quantize.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(_QuantParams)]
    lib.llama_model_quantize.restype = ctypes.c_uint32
    if hasattr(lib, 'llama_backend_init'):
        lib.llama_backend_init()
    p = lib.llama_model_quantize_default_params()
    p.ftype = FTYPES[qtype]
    p.nthread = threads or (os.cpu_count() or 1)
    rc = lib.llama_model_quantize(str(src).encode(), str(dst).encode(), ctypes.byref(p))
    if rc != 0:
        raise SystemExit(f'llama_model_quantize failed ({rc}) for {src} -> {dst}')


def export_gguf(ckpt: Path, out_dir: Path, qtype: str = 'q4_k_m') -> Path:
    qtype = qtype.lower()
    if qtype not in FTYPES:
        raise SystemExit(f'unknown GGUF type {qtype}; one of {sorted(FTYPES)}')
    out_dir.mkdir(parents=True, exist_ok=True)
    f16 = out_dir / 'model-f16.gguf'
    t0 = time.time()
    write_f16(ckpt, f16)
    print(f'  wrote {f16} in {time.time() - t0:.1f} s', flush=True)
    if qtype == 'f16':
        return f16
    dst = out_dir / f'model-{qtype}.gguf'
    part = out_dir / f'model-{qtype}.gguf.part'
    try:
        quantize(f16, part, qtype)
        part.rename(dst)
    finally:
        f16.unlink(missing_ok=True)
        part.unlink(missing_ok=True)
    return dst


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('checkpoint', type=Path)
    ap.add_argument('out', type=Path)
    ap.add_argument('--type', default='q4_k_m', choices=sorted(FTYPES))
    a = ap.parse_args(argv)
    print(export_gguf(a.checkpoint, a.out, a.type))


if __name__ == '__main__':
    main(sys.argv[1:])
