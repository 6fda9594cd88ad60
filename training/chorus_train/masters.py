"""fp32 master weights in a checkpoint as a bf16 model plus the masters' low bits.

The trained parameters are fp32 (trl_engine._fp32_master: at lr 1e-6 bf16 parameters would round the
updates away), but what reads a checkpoint's model (the merge, OPD's teachers, the export, evaluation)
wants bf16: half the bytes to read and hold. A checkpoint therefore stores the model in bf16 and, in
`chorus_resume/master_lo16.safetensors` (a folder of its own: nothing that globs a checkpoint's
*.safetensors for weights sees it; only a resume reads it), each parameter's low bits, so that a
resume rebuilds the fp32 masters bit for bit:

    bits(x) = 65536 * hi + lo + 1      (hi: the bf16 weight's bits, lo: int16)

hi is x rounded to the nearest bf16 (an exact tie goes toward the smaller magnitude, where
torch's cast goes to the even neighbour: the only difference, one weight in ~65,536 at most), which
keeps bits(x) - 65536 * hi in [-32767, 32768], i.e. lo in int16's range. The disk per checkpoint is
that of the fp32 model it replaces (2 + 2 bytes per parameter); the model file is half of it. The
low bits are written from the full state dict the model save has (DDP, and FSDP's FULL_STATE_DICT),
never through the optimizer's state (NCCL has no int16 for FSDP's gathers); DeepSpeed keeps its own
fp32 masters.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch


def split(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """An fp32 tensor -> (its nearest bf16, int16 low bits) with combine(*split(x)) == x bit for bit."""
    b = x.detach().contiguous().view(torch.int32)
    hi = torch.div(b + 0x7FFF, 65536, rounding_mode='floor')  # int32 arithmetic: no int64 temporaries
    lo = (b - hi * 65536 - 1).to(torch.int16)
    return hi.to(torch.int16).view(torch.bfloat16), lo


def combine(hi: torch.Tensor, lo: torch.Tensor) -> torch.Tensor:
    """The fp32 tensor `split` took apart (`lo` as int16, or any dtype holding its integer values exactly)."""
    h = hi.contiguous().view(torch.int16).to(torch.int32)
    return (h * 65536 + lo.to(torch.int32) + 1).view(torch.float32)


def mark_bf16_config(output_dir) -> None:
    """config.json of a bf16 checkpoint says so (the model object that wrote it holds fp32 masters)."""
    p = Path(output_dir) / 'config.json'
    if p.exists():
        c = json.loads(p.read_text())
        for k in ('dtype', 'torch_dtype'):
            if k in c:
                c[k] = 'bfloat16'
        c.setdefault('dtype', 'bfloat16')
        p.write_text(json.dumps(c, indent=2, sort_keys=True) + '\n')


RESUME_DIR = 'chorus_resume'
RESIDUAL_FILE = 'master_lo16.safetensors'


def split_state_dict(state_dict: dict) -> tuple[dict, dict]:
    """(the model as a checkpoint stores it: fp32 tensors as their nearest bf16 in split's rounding, the rest
    as they are; the fp32 tensors' low bits, one entry per storage: a tied copy is not written twice)."""
    model, low, seen = {}, {}, set()
    for k, v in state_dict.items():
        if v.dtype != torch.float32:
            model[k] = v
            continue
        hi, lo = split(v)
        model[k] = hi
        ptr = (v.untyped_storage().data_ptr(), v.storage_offset(), tuple(v.shape))
        if ptr not in seen:
            seen.add(ptr)
            low[k] = lo.contiguous()
    return model, low


def write_residual(output_dir, low: dict) -> None:
    from safetensors.torch import save_file

    d = Path(output_dir) / RESUME_DIR
    d.mkdir(parents=True, exist_ok=True)
    save_file({k: v.cpu() for k, v in low.items()}, str(d / RESIDUAL_FILE))


def _clean(name: str) -> str:
    """A parameter's name without the wrappers' prefixes (FSDP, activation checkpointing, torch.compile)."""
    for w in ('_fsdp_wrapped_module.', '_checkpoint_wrapped_module.', '_orig_mod.'):
        name = name.replace(w, '')
    return name


def restore_masters(model, checkpoint, full_params=None) -> int:
    """After a resume loaded a checkpoint's bf16 model into the fp32 parameters: each parameter with stored low
    bits gets its exact fp32 master back. `full_params`: a context in which the parameters are whole
    (FSDP's summon_full_params with writeback), else they already are. Returns how many parameters; 0
    when the checkpoint has no low bits (an fp32 checkpoint: nothing to do)."""
    f = Path(checkpoint) / RESUME_DIR / RESIDUAL_FILE
    if not f.exists():
        return 0
    from contextlib import nullcontext

    from safetensors.torch import load_file

    low = load_file(str(f))
    n = 0
    with full_params or nullcontext(), torch.no_grad():
        for name, p in model.named_parameters():
            lo = low.get(_clean(name))
            if lo is None or p.dtype != torch.float32 or lo.shape != p.shape:
                continue
            p.data.copy_(combine(p.data.to(torch.bfloat16), lo.to(p.device)))
            n += 1
    return n
