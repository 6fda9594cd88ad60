"""Export a Hugging Face Qwen3 checkpoint directory to the transformers.js ONNX layout.

    python -m chorus_train.export_onnx CHECKPOINT_DIR OUT_DIR [--dtypes fp32,q4] [--block-size 32]

OUT_DIR receives config.json (with a `transformers.js_config` block), generation_config.json,
the tokenizer files and onnx/model.onnx (fp32) and/or onnx/model_q4.onnx (4-bit MatMulNBits),
with their weights in external data files (`onnx/<name>.onnx_data`).

The graph is written directly with the `onnx` helper API from the safetensors weights (no torch):
it uses onnxruntime's contrib ops (GroupQueryAttention with rotary embedding inside,
SimplifiedLayerNormalization / SkipSimplifiedLayerNormalization, MatMulNBits,
GatherBlockQuantized), the same operator set onnxruntime-genai's model builder emits for Qwen3.

Graph interface (what transformers.js 4.x feeds a `qwen3` decoder):
    inputs   input_ids [batch, seq] int64, attention_mask [batch, total] int64,
             past_key_values.N.key / .value [batch_size, kv_heads, past_sequence_length, head_dim],
             num_logits_to_keep (int64 scalar; 0 = all positions, k = the last k)
    outputs  logits [batch, k, vocab], present.N.key / .value
Positions are derived from the attention mask (batch 1 or right-aligned batches without left
padding), so there is no position_ids input; transformers.js only feeds inputs a graph declares.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
MS = 'com.microsoft'
ALIGN = 4096  # external data offsets page-aligned so onnxruntime can memory-map them
INLINE_LIMIT = 2048  # bytes; smaller tensors live inside the .onnx file

TOKENIZER_FILES = ('tokenizer.json', 'tokenizer_config.json', 'vocab.json', 'merges.txt', 'special_tokens_map.json', 'added_tokens.json')


# ---------------------------------------------------------------------------------------------
# safetensors without torch (bf16 / fp16 / fp32)


def _st_header(path: Path) -> tuple[dict, int]:
    with open(path, 'rb') as f:
        n = int.from_bytes(f.read(8), 'little')
        header = json.loads(f.read(n))
    return header, 8 + n


class Checkpoint:
    """Reads tensors of a (possibly sharded) safetensors checkpoint as float32 numpy arrays."""

    def __init__(self, ckpt_dir: Path):
        self.dir = ckpt_dir
        index = ckpt_dir / 'model.safetensors.index.json'
        files = sorted({*json.loads(index.read_text())['weight_map'].values()}) if index.exists() else ['model.safetensors']
        self.where: dict[str, tuple[Path, dict, int]] = {}
        for name in files:
            p = ckpt_dir / name
            if not p.exists():
                raise SystemExit(f'missing weight file {p}')
            header, start = _st_header(p)
            for k, v in header.items():
                if k != '__metadata__':
                    self.where[k] = (p, v, start)

    def has(self, name: str) -> bool:
        return name in self.where

    def get(self, name: str) -> np.ndarray:
        p, meta, start = self.where[name]
        b, e = meta['data_offsets']
        shape = tuple(meta['shape'])
        dt = meta['dtype']
        raw = np.memmap(p, dtype=np.uint8, mode='r', offset=start + b, shape=(e - b,))
        if dt == 'BF16':
            u = raw.view(np.uint16).astype(np.uint32) << 16
            return u.view(np.float32).reshape(shape)
        if dt == 'F16':
            return raw.view(np.float16).astype(np.float32).reshape(shape)
        if dt == 'F32':
            return np.array(raw.view(np.float32)).reshape(shape)
        raise SystemExit(f'{name}: unsupported dtype {dt}')


def write_safetensors(path: Path, tensors: dict[str, np.ndarray], dtype: str = 'BF16') -> None:
    """float32 arrays -> a safetensors file in BF16 (round to nearest even), F16 or F32."""
    header: dict = {'__metadata__': {'format': 'pt'}}
    off = 0
    blobs = []
    for k, a in tensors.items():
        a = np.ascontiguousarray(a, dtype=np.float32)
        if dtype == 'BF16':
            u = a.view(np.uint32)
            data = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
        elif dtype == 'F16':
            data = a.astype(np.float16)
        else:
            data = a
        n = data.nbytes
        header[k] = {'dtype': dtype, 'shape': list(a.shape), 'data_offsets': [off, off + n]}
        blobs.append(data)
        off += n
    h = json.dumps(header, separators=(',', ':')).encode()
    h += b' ' * ((8 - len(h) % 8) % 8)
    with open(path, 'wb') as f:
        f.write(len(h).to_bytes(8, 'little'))
        f.write(h)
        for d in blobs:
            f.write(d.tobytes())


# ---------------------------------------------------------------------------------------------
# 4-bit block quantization (onnxruntime's own C++ kernel, the layout MatMulNBits reads)


def quantize_4bit(w_kn: np.ndarray, block: int, symmetric: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """W [K, N] -> packed [N, K/block, block/2] uint8, scales [N, K/block] f32, zero points [N, ceil(kb/2)] uint8."""
    from onnxruntime.capi._pybind_state import quantize_matmul_4bits

    k, n = w_kn.shape
    kb = (k + block - 1) // block
    w = np.ascontiguousarray(w_kn, dtype=np.float32)
    if kb * block != k:
        w = np.pad(w, ((0, kb * block - k), (0, 0)))
    packed = np.zeros((n, kb, block // 2), dtype=np.uint8)
    scales = np.zeros((n, kb), dtype=np.float32)
    zp = np.zeros((n, (kb + 1) // 2), dtype=np.uint8)
    quantize_matmul_4bits(packed, w, scales, zp, block, n, k, symmetric)
    return packed, scales, (None if symmetric else zp)


# ---------------------------------------------------------------------------------------------
# graph building


class ExternalData:
    """Appends tensors to one external data file, page-aligned; the same key is written once."""

    def __init__(self, onnx_dir: Path, name: str):
        self.name = name
        self.path = onnx_dir / name
        self.f = open(self.path, 'wb')
        self.off = 0
        self.seen: dict[str, tuple[int, int]] = {}
        self.meta: dict[str, tuple[np.dtype, tuple[int, ...]]] = {}
        self.small: dict[str, np.ndarray] = {}  # initializers kept inline, for a sibling graph
        self.linear_kn: dict[str, tuple[int, int]] = {}  # MatMulNBits K, N per quantized linear

    def put(self, data: bytes, key: str | None) -> tuple[int, int]:
        if key is not None and key in self.seen:
            return self.seen[key]
        pad = (-self.off) % ALIGN
        if pad:
            self.f.write(b'\0' * pad)
            self.off += pad
        where = (self.off, len(data))
        self.f.write(data)
        self.off += len(data)
        if key is not None:
            self.seen[key] = where
        return where

    def close(self) -> None:
        self.f.close()


class Graph:
    def __init__(self, data: ExternalData, shared: ExternalData | None):
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[TensorProto] = []
        self.data = data
        self.shared = shared
        self.count = 0
        self.small = data.small

    def init(self, name: str, arr: np.ndarray, shared_key: str | None = None) -> str:
        arr = np.ascontiguousarray(arr)
        if arr.nbytes <= INLINE_LIMIT:
            self.inits.append(numpy_helper.from_array(arr, name))
            self.small[name] = arr
            return name
        store = self.shared if (shared_key and self.shared) else self.data
        # keyed by name too: the in-place graph is built into the same data file as its sibling and
        # must point at the same bytes instead of writing the weights twice
        off, length = store.put(arr.tobytes(), shared_key or name)
        store.meta[shared_key or name] = (arr.dtype, arr.shape)
        return self._external(name, store, arr.dtype, arr.shape, off, length)

    def stored(self, name: str) -> bool:
        """Whether a sibling graph already wrote this initializer (so it need not be computed again)."""
        return name in self.data.meta or name in self.small

    def reuse(self, name: str) -> str:
        if name in self.small:
            return self.init(name, self.small[name])
        dtype, shape = self.data.meta[name]
        off, length = self.data.seen[name]
        return self._external(name, self.data, dtype, shape, off, length)

    def _external(self, name: str, store: ExternalData, dtype, shape, off: int, length: int) -> str:
        t = TensorProto()
        t.name = name
        t.data_type = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
        t.dims.extend(shape)
        t.data_location = TensorProto.EXTERNAL
        for k, v in (('location', store.name), ('offset', str(off)), ('length', str(length))):
            e = t.external_data.add()
            e.key, e.value = k, v
        self.inits.append(t)
        return name

    def const(self, name: str, value, dtype=np.int64) -> str:
        return self.init(name, np.array(value, dtype=dtype))

    def scalar(self, name: str, value, dtype=np.int64) -> str:
        """A rank-0 constant (const() gives shape [1]: np.ascontiguousarray promotes rank 0)."""
        self.inits.append(numpy_helper.from_array(np.array(value, dtype=dtype), name))
        return name

    def op(self, op_type: str, inputs: list[str], n_out: int = 1, domain: str = '', outputs: list[str] | None = None, **attrs):
        self.count += 1
        name = f'{op_type}_{self.count}'
        outs = outputs or [f'{name}/out{i}' for i in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=name, domain=domain or None, **attrs))
        return outs[0] if len(outs) == 1 else outs


class Exporter:
    def __init__(
        self, ckpt: Checkpoint, cfg: dict, quant: str, block: int, accuracy_level: int, embed_q4: bool = False, inplace: bool = False
    ):
        self.ck = ckpt
        self.cfg = cfg
        self.quant = quant  # 'fp32' | 'q4'
        self.inplace = inplace  # the in-place KV cache interface (module docstring)
        self.block = block
        self.acc = accuracy_level
        # the token embedding (and a tied lm_head) in 4 bits: always for q4; for fp32 on request
        # (the test fixture, whose 151,936-row table would otherwise dominate its size)
        self.embed_q4 = quant == 'q4' or embed_q4
        self._emb_q: tuple[np.ndarray, np.ndarray] | None = None

    def embed_quantized(self, emb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self._emb_q is None:
            packed, scales, _ = quantize_4bit(emb.T, self.block, symmetric=True)  # [V, H/block, block/2]
            self._emb_q = (packed, scales)
        return self._emb_q

    def linear(self, g: Graph, x: str, names: list[str], key: str) -> str:
        """y = x @ concat(W_i)^T for the HF weights named (each [out, in])."""
        if self.quant == 'fp32' and g.stored(key + '.weight_t'):  # written by the sibling graph
            return g.op('MatMul', [x, g.reuse(key + '.weight_t')])
        if self.quant == 'q4' and g.stored(key + '.qweight'):
            k, n_out = g.data.linear_kn[key]
            ins = [x, g.reuse(key + '.qweight'), g.reuse(key + '.scales')]
            if g.stored(key + '.zero_points'):
                ins.append(g.reuse(key + '.zero_points'))
            return g.op('MatMulNBits', ins, domain=MS, K=k, N=n_out, bits=4, block_size=self.block, accuracy_level=self.acc)
        w = np.concatenate([self.ck.get(n) for n in names], axis=0)  # [N, K]
        n_out, k = w.shape
        if self.quant == 'fp32':
            return g.op('MatMul', [x, g.init(key + '.weight_t', w.T.astype(np.float32))])
        packed, scales, zp = quantize_4bit(w.T, self.block, symmetric=False)
        g.data.linear_kn[key] = (k, n_out)
        ins = [x, g.init(key + '.qweight', packed), g.init(key + '.scales', scales)]
        if zp is not None:
            ins.append(g.init(key + '.zero_points', zp))
        return g.op('MatMulNBits', ins, domain=MS, K=k, N=n_out, bits=4, block_size=self.block, accuracy_level=self.acc)

    def interface(self, L: int, nkv: int, hd: int, V: int) -> tuple[list, list]:
        """Graph inputs and outputs: transformers.js's (past/present) or the in-place cache's."""
        vi = helper.make_tensor_value_info
        inputs = [vi('input_ids', TensorProto.INT64, ['batch_size', 'sequence_length'])]
        if self.inplace:
            inputs.append(vi('past_length', TensorProto.INT64, []))
        else:
            inputs.append(vi('attention_mask', TensorProto.INT64, ['batch_size', 'total_sequence_length']))
        for i in range(L):
            for kv in ('key', 'value'):
                if self.inplace:
                    inputs.append(vi(f'cache.{i}.{kv}', TensorProto.FLOAT, [1, nkv, 'capacity', hd]))
                else:
                    inputs.append(vi(f'past_key_values.{i}.{kv}', TensorProto.FLOAT, ['batch_size', nkv, 'past_sequence_length', hd]))
        inputs.append(vi('num_logits_to_keep', TensorProto.INT64, []))
        outputs = [vi('logits', TensorProto.FLOAT, ['batch_size', 'logits_length', V])]
        for i in range(L):
            for kv in ('key', 'value'):
                if self.inplace:
                    outputs.append(vi(f'new.{i}.{kv}', TensorProto.FLOAT, [1, nkv, 'sequence_length', hd]))
                else:
                    outputs.append(vi(f'present.{i}.{kv}', TensorProto.FLOAT, ['batch_size', nkv, 'total_sequence_length', hd]))
        return inputs, outputs

    def gqa_bookkeeping(self, g: Graph, one: str, inv_freq: np.ndarray) -> dict:
        """seqlens_k = tokens - 1, the total length and the rotary tables, from the attention mask."""
        mask_sum = g.op('ReduceSum', ['attention_mask', one], keepdims=0)
        seqlens_k = g.op('Cast', [g.op('Sub', [mask_sum, g.const('one_scalar_i64', 1)])], to=TensorProto.INT32)
        total = g.op('Gather', [g.op('Shape', ['attention_mask']), g.const('one_scalar_i64_b', 1)], axis=0)
        total_i32 = g.op('Cast', [total], to=TensorProto.INT32)
        pos = g.op(
            'Range', [g.const('zero_f', 0.0, np.float32), g.op('Cast', [total], to=TensorProto.FLOAT), g.const('one_f', 1.0, np.float32)]
        )
        freqs = g.op('Mul', [g.op('Unsqueeze', [pos, one]), g.init('rotary.inv_freq', inv_freq)])  # [T, hd/2]
        return {'seqlens_k': seqlens_k, 'total': total_i32, 'cos': g.op('Cos', [freqs]), 'sin': g.op('Sin', [freqs])}

    def gqa_attention(
        self, g: Graph, i: int, qn: str, kn: str, v: str, book: dict, nh: int, nkv: int, hd: int, flat_q: str, flat_k: str
    ) -> str:
        p = f'model.layers.{i}'
        attn, _, _ = g.op(
            'GroupQueryAttention',
            [
                g.op('Reshape', [qn, flat_q]),
                g.op('Reshape', [kn, flat_k]),
                v,
                f'past_key_values.{i}.key',
                f'past_key_values.{i}.value',
                book['seqlens_k'],
                book['total'],
                book['cos'],
                book['sin'],
            ],
            outputs=[f'{p}/attn', f'present.{i}.key', f'present.{i}.value'],
            domain=MS,
            num_heads=nh,
            kv_num_heads=nkv,
            do_rotary=1,
            rotary_interleaved=0,
            scale=float(hd**-0.5),
        )
        return attn

    def inplace_bookkeeping(self, g: Graph, nh: int, nkv: int, hd: int, inv_freq: np.ndarray) -> dict:
        """The in-place cache's per-call tensors. The caller owns one [1, kv_heads, capacity, head_dim]
        buffer per layer and key/value, of which the first `past_length` slots hold the prefix; the
        graph attends to those slots (the rest are masked) and to the new tokens, and returns only the
        new tokens' keys and values, which the caller writes into the next slots. Nothing the size of
        the cache is copied per call: onnxruntime reads the caller's buffers where they are, and the
        outputs are a few kilobytes per token. (GroupQueryAttention's present output is the whole
        cache, concatenated and copied out on every token.)"""
        zero = g.scalar('ip_zero', 0)
        one_s = g.scalar('ip_one', 1)
        seq = g.op('Gather', [g.op('Shape', ['input_ids']), one_s], axis=0)  # scalar
        cap = g.op('Gather', [g.op('Shape', ['cache.0.key']), g.scalar('ip_two', 2)], axis=0)
        pos = g.op('Range', ['past_length', g.op('Add', ['past_length', seq]), one_s])  # [S] absolute positions
        freqs = g.op(
            'Mul',
            [g.op('Unsqueeze', [g.op('Cast', [pos], to=TensorProto.FLOAT), g.const('ip_ax1', [1])]), g.init('rotary.inv_freq', inv_freq)],
        )
        cos = g.op('Unsqueeze', [g.op('Cos', [freqs]), g.const('ip_ax1b', [1])])  # [S, 1, hd/2]: broadcasts over heads
        sin = g.op('Unsqueeze', [g.op('Sin', [freqs]), g.const('ip_ax1c', [1])])
        neg = g.scalar('ip_neg', -1e9, np.float32)
        zf = g.scalar('ip_zf', 0.0, np.float32)
        # slots at or past past_length are not part of the prefix
        past_bias = g.op('Where', [g.op('Less', [g.op('Range', [zero, cap, one_s]), 'past_length']), zf, neg])  # [C]
        # query rows are (group member, position) pairs: row r is position r mod S; it sees new
        # tokens up to its own position
        rep = nh // nkv
        rows = g.op('Mod', [g.op('Range', [zero, g.op('Mul', [seq, g.scalar('ip_rep', rep)]), one_s]), seq])
        cols = g.op('Range', [zero, seq, one_s])
        later = g.op('Less', [g.op('Unsqueeze', [rows, g.const('ip_ax1d', [1])]), g.op('Unsqueeze', [cols, g.const('ip_ax0', [0])])])
        new_bias = g.op('Where', [later, neg, zf])  # [rep*S, S]
        split_sizes = g.op(
            'Concat', [g.op('Unsqueeze', [cap, g.const('ip_ax0b', [0])]), g.op('Unsqueeze', [seq, g.const('ip_ax0c', [0])])], axis=0
        )
        return {
            'cos': cos,
            'sin': sin,
            'past_bias': past_bias,
            'new_bias': new_bias,
            'split': split_sizes,
            'half': g.const('ip_half', [hd // 2, hd // 2]),
            'bnsh': [0, 2, 1, 3],
            'grouped': g.const('ip_grouped', [0, nkv, -1, hd]),
            'ungrouped': g.const('ip_ungrouped', [0, nh, -1, hd]),
            'heads_kv': g.const('ip_heads_kv', [0, 0, nkv, hd]),
            'flat': g.const('ip_flat', [0, 0, nh * hd]),
        }

    def inplace_attention(self, g: Graph, i: int, qn: str, kn: str, v: str, b: dict, nh: int, nkv: int, hd: int) -> str:
        """Attention over the cached slots and the new tokens, with one softmax over both: the scores
        against the cache and against the new keys are computed apart and concatenated (a few
        kilobytes per query row), so the cache itself is never concatenated."""

        def rope(x: str) -> str:  # rotate_half, as Hugging Face Qwen3
            x1, x2 = g.op('Split', [x, b['half']], n_out=2, axis=-1)
            r1 = g.op('Sub', [g.op('Mul', [x1, b['cos']]), g.op('Mul', [x2, b['sin']])])
            r2 = g.op('Add', [g.op('Mul', [x2, b['cos']]), g.op('Mul', [x1, b['sin']])])
            return g.op('Concat', [r1, r2], axis=-1)

        scale = float(hd**-0.5)
        # [1, S, nh, hd] -> [1, nh, S, hd] -> [1, nkv, rep*S, hd]: query head h uses kv head h // rep
        q = g.op('Reshape', [g.op('Transpose', [rope(qn)], perm=b['bnsh']), b['grouped']])
        k_new = g.op('Transpose', [rope(kn)], perm=b['bnsh'], outputs=[f'new.{i}.key'])
        v_new = g.op('Transpose', [g.op('Reshape', [v, b['heads_kv']])], perm=b['bnsh'], outputs=[f'new.{i}.value'])
        s_past = g.op('Add', [g.op('FusedMatMul', [q, f'cache.{i}.key'], domain=MS, transB=1, alpha=scale), b['past_bias']])
        s_new = g.op('Add', [g.op('FusedMatMul', [q, k_new], domain=MS, transB=1, alpha=scale), b['new_bias']])
        probs = g.op('Softmax', [g.op('Concat', [s_past, s_new], axis=-1)], axis=-1)
        p_past, p_new = g.op('Split', [probs, b['split']], n_out=2, axis=-1)
        out = g.op('Add', [g.op('MatMul', [p_past, f'cache.{i}.value']), g.op('MatMul', [p_new, v_new])])  # [1, nkv, rep*S, hd]
        return g.op('Reshape', [g.op('Transpose', [g.op('Reshape', [out, b['ungrouped']])], perm=b['bnsh']), b['flat']])

    def build(self, g: Graph) -> onnx.ModelProto:
        c = self.cfg
        H, L = c['hidden_size'], c['num_hidden_layers']
        nh, nkv = c['num_attention_heads'], c['num_key_value_heads']
        hd = c.get('head_dim') or H // nh
        eps = float(c['rms_norm_eps'])
        V = c['vocab_size']
        theta = float(c.get('rope_theta', 1e6))
        rs = c.get('rope_scaling')
        if rs and rs.get('rope_type', rs.get('type')) not in (None, 'default'):
            raise SystemExit(f'rope_scaling {rs} is not supported by this exporter')
        tied = bool(c.get('tie_word_embeddings', False)) or not self.ck.has('lm_head.weight')

        inputs, outputs = self.interface(L, nkv, hd, V)

        # --- embedding (and the tied lm_head)
        emb = self.ck.get('model.embed_tokens.weight')  # [V, H]
        if not self.embed_q4:
            table = g.init('model.embed_tokens.weight', emb)
            x = g.op('Gather', [table, 'input_ids'], axis=0)
        else:
            packed, scales = self.embed_quantized(emb)
            q = g.init('model.embed_tokens.qweight', packed.reshape(V, -1), shared_key='embed.q')
            s = g.init('model.embed_tokens.scales', scales, shared_key='embed.s')
            x = g.op('GatherBlockQuantized', [q, 'input_ids', s], domain=MS, bits=4, block_size=self.block, gather_axis=0, quantize_axis=1)

        one = g.const('one_i64', [1])
        inv_freq = (1.0 / theta ** (np.arange(0, hd, 2, dtype=np.float64) / hd)).astype(np.float32)
        book = self.inplace_bookkeeping(g, nh, nkv, hd, inv_freq) if self.inplace else self.gqa_bookkeeping(g, one, inv_freq)
        head_shape_q = g.const('shape_q_heads', [0, 0, nh, hd])
        head_shape_k = g.const('shape_k_heads', [0, 0, nkv, hd])
        if not self.inplace:
            flat_q = g.const('shape_q_flat', [0, 0, nh * hd])
            flat_k = g.const('shape_k_flat', [0, 0, nkv * hd])
        split_qkv = g.const('split_qkv', [nh * hd, nkv * hd, nkv * hd])
        I = c['intermediate_size']  # noqa: E741 - the paper's symbol
        split_mlp = g.const('split_mlp', [I, I])

        residual = x
        normed = g.op(
            'SimplifiedLayerNormalization',
            [x, g.init('model.layers.0.input_layernorm.weight', self.ck.get('model.layers.0.input_layernorm.weight'))],
            axis=-1,
            epsilon=eps,
        )
        for i in range(L):
            p = f'model.layers.{i}'
            qkv = self.linear(g, normed, [f'{p}.self_attn.{n}_proj.weight' for n in 'qkv'], f'{p}.self_attn.qkv_proj')
            q, k, v = g.op('Split', [qkv, split_qkv], n_out=3, axis=-1)
            qn = g.op(
                'SimplifiedLayerNormalization',
                [g.op('Reshape', [q, head_shape_q]), g.init(f'{p}.self_attn.q_norm.weight', self.ck.get(f'{p}.self_attn.q_norm.weight'))],
                axis=-1,
                epsilon=eps,
            )
            kn = g.op(
                'SimplifiedLayerNormalization',
                [g.op('Reshape', [k, head_shape_k]), g.init(f'{p}.self_attn.k_norm.weight', self.ck.get(f'{p}.self_attn.k_norm.weight'))],
                axis=-1,
                epsilon=eps,
            )
            if self.inplace:
                attn = self.inplace_attention(g, i, qn, kn, v, book, nh, nkv, hd)
            else:
                attn = self.gqa_attention(g, i, qn, kn, v, book, nh, nkv, hd, flat_q, flat_k)
            o = self.linear(g, attn, [f'{p}.self_attn.o_proj.weight'], f'{p}.self_attn.o_proj')
            normed2, _, _, residual = g.op(
                'SkipSimplifiedLayerNormalization',
                [o, residual, g.init(f'{p}.post_attention_layernorm.weight', self.ck.get(f'{p}.post_attention_layernorm.weight'))],
                outputs=[f'{p}/mlp_in', '', '', f'{p}/resid_attn'],
                domain=MS,
                epsilon=eps,
            )
            gu = self.linear(g, normed2, [f'{p}.mlp.gate_proj.weight', f'{p}.mlp.up_proj.weight'], f'{p}.mlp.gate_up_proj')
            gate, up = g.op('Split', [gu, split_mlp], n_out=2, axis=-1)
            act = g.op('Mul', [g.op('Mul', [gate, g.op('Sigmoid', [gate])]), up])
            down = self.linear(g, act, [f'{p}.mlp.down_proj.weight'], f'{p}.mlp.down_proj')
            if i + 1 < L:
                nw = f'model.layers.{i + 1}.input_layernorm.weight'
                normed, _, _, residual = g.op(
                    'SkipSimplifiedLayerNormalization',
                    [down, residual, g.init(nw, self.ck.get(nw))],
                    outputs=[f'{p}/next_in', '', '', f'{p}/resid_mlp'],
                    domain=MS,
                    epsilon=eps,
                )
            else:
                residual = g.op('Add', [down, residual])

        # --- last k positions only (k = num_logits_to_keep; 0 keeps all), final norm, lm_head
        start = g.op('Neg', [g.op('Unsqueeze', ['num_logits_to_keep', g.const('zero_i64', [0])])])
        last = g.op('Slice', [residual, start, g.const('big_i64', [2**62]), one])
        hfin = g.op(
            'SimplifiedLayerNormalization', [last, g.init('model.norm.weight', self.ck.get('model.norm.weight'))], axis=-1, epsilon=eps
        )
        if not tied and self.quant == 'fp32':
            g.op('MatMul', [hfin, g.init('lm_head.weight_t', self.ck.get('lm_head.weight').T)], outputs=['logits'])
        elif tied and not self.embed_q4:
            g.op('MatMul', [hfin, g.op('Transpose', ['model.embed_tokens.weight'], perm=[1, 0])], outputs=['logits'])
        else:
            if tied:
                packed, scales = 'model.embed_tokens.qweight_nbits', 'model.embed_tokens.scales'
                g.init(packed, self.embed_quantized(emb)[0], shared_key='embed.q')
                ins = [hfin, packed, scales]
            else:
                pk, sc, zp = quantize_4bit(self.ck.get('lm_head.weight').T, self.block, symmetric=False)
                ins = [hfin, g.init('lm_head.qweight', pk), g.init('lm_head.scales', sc)] + (
                    [g.init('lm_head.zero_points', zp)] if zp is not None else []
                )
            g.op('MatMulNBits', ins, outputs=['logits'], domain=MS, K=H, N=V, bits=4, block_size=self.block, accuracy_level=self.acc)

        graph = helper.make_graph(g.nodes, 'qwen3', inputs, outputs, initializer=g.inits)
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid('', OPSET), helper.make_opsetid(MS, 1)], producer_name='chorus_train.export_onnx'
        )
        model.ir_version = 9
        return model


def inplace_name(fname: str) -> str:
    """model_q4.onnx -> model_q4.inplace.onnx: the in-place KV cache graph of a variant."""
    return fname[: -len('.onnx')] + '.inplace.onnx'


def export(
    ckpt_dir: Path,
    out_dir: Path,
    dtypes: list[str],
    block: int = 32,
    accuracy_level: int = 4,
    embed_q4: bool = False,
    tokenizer_dir: Path | None = None,
    log=print,
) -> None:
    import time

    cfg = json.loads((ckpt_dir / 'config.json').read_text())
    if cfg.get('model_type') != 'qwen3':
        raise SystemExit(f'{ckpt_dir}/config.json: model_type {cfg.get("model_type")!r}; this exporter handles qwen3')
    ck = Checkpoint(ckpt_dir)
    onnx_dir = out_dir / 'onnx'
    onnx_dir.mkdir(parents=True, exist_ok=True)
    shared = ExternalData(onnx_dir, 'embed_tokens_q4.onnx_data') if ('q4' in dtypes or embed_q4) else None
    ext_config = {}
    try:
        for dt in dtypes:
            t0 = time.time()
            fname = {'fp32': 'model.onnx', 'q4': 'model_q4.onnx'}[dt]
            data = ExternalData(onnx_dir, fname + '_data')
            model = Exporter(ck, cfg, dt, block, accuracy_level, embed_q4).build(Graph(data, shared))
            # the in-place KV cache graph beside it, on the same weight bytes (same data file)
            inplace = Exporter(ck, cfg, dt, block, accuracy_level, embed_q4, inplace=True).build(Graph(data, shared))
            data.close()
            onnx.save_model(model, str(onnx_dir / fname))
            onnx.save_model(inplace, str(onnx_dir / inplace_name(fname)))
            if data.off == 0:
                (onnx_dir / data.name).unlink()
            else:
                ext_config[fname] = 1
            log(f'  wrote {onnx_dir / fname} and {inplace_name(fname)} ({dt}) in {time.time() - t0:.1f} s')
    finally:
        if shared:
            shared.close()

    # config.json (plus transformers.js hints), generation_config.json, tokenizer files
    cfg = dict(cfg)
    cfg['transformers.js_config'] = {'use_external_data_format': ext_config}
    if out_dir.resolve() != ckpt_dir.resolve():
        (out_dir / 'config.json').write_text(json.dumps(cfg, indent=2) + '\n')
        src_gen = ckpt_dir / 'generation_config.json'
        if src_gen.exists():
            shutil.copyfile(src_gen, out_dir / 'generation_config.json')
        for name in TOKENIZER_FILES:
            src = (tokenizer_dir or ckpt_dir) / name
            if src.exists():
                shutil.copyfile(src, out_dir / name)
        inline_chat_template(tokenizer_dir or ckpt_dir, out_dir)


def inline_chat_template(src_dir: Path, out_dir: Path) -> None:
    """transformers >= 4.5x saves the chat template only as chat_template.jinja; transformers.js
    (and the extension's local backend) read it from tokenizer_config.json. Put it there, and keep
    the .jinja file too, so both loaders see the template the checkpoint was trained with."""
    jinja = src_dir / 'chat_template.jinja'
    cfg_path = out_dir / 'tokenizer_config.json'
    if not jinja.exists():
        return
    shutil.copyfile(jinja, out_dir / 'chat_template.jinja')
    if cfg_path.exists():
        cfg = json.loads(cfg_path.read_text())
        if not cfg.get('chat_template'):
            cfg['chat_template'] = jinja.read_text()
            cfg_path.write_text(json.dumps(cfg, indent=2, ensure_ascii=False) + '\n')


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('checkpoint', type=Path, help='Hugging Face checkpoint directory (config.json, *.safetensors, tokenizer files)')
    ap.add_argument('out', type=Path, help='output directory (transformers.js layout)')
    ap.add_argument('--dtypes', default='fp32,q4', help='comma list of fp32, q4 (default both)')
    ap.add_argument('--block-size', type=int, default=32, help='4-bit block size along K (16, 32, 64, 128)')
    ap.add_argument('--accuracy-level', type=int, default=4, help='MatMulNBits accuracy_level (4 = int8 compute, fastest on CPU; 0 = fp32)')
    ap.add_argument(
        '--fp32-embedding-q4',
        action='store_true',
        help='fp32 variant: keep the token embedding (and tied lm_head) in 4 bits, shared with model_q4 (small test fixtures)',
    )
    a = ap.parse_args(argv)
    dtypes = [d.strip() for d in a.dtypes.split(',') if d.strip()]
    bad = [d for d in dtypes if d not in ('fp32', 'q4')]
    if bad:
        ap.error(f'unknown dtype(s) {bad}')
    export(a.checkpoint, a.out, dtypes, a.block_size, a.accuracy_level, a.fp32_embedding_q4)


if __name__ == '__main__':
    main(sys.argv[1:])
