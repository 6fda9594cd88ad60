"""Shared fixtures: tiny random Qwen3 checkpoints (real tokenizer) made once per session."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

TRAINING = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TRAINING))
os.environ.setdefault('TOKENIZERS_PARALLELISM', 'false')
os.environ.setdefault('HF_HUB_OFFLINE', '1')
os.environ.setdefault('TRANSFORMERS_OFFLINE', '1')

from chorus_train.tiny_model import DEFAULT_TOKENIZER, PRESETS, make_checkpoint  # noqa: E402


def tiny_cfg(**over) -> dict:
    return {**PRESETS['tiny'], **over}


@pytest.fixture(scope='session')
def tiny_ckpts(tmp_path_factory) -> list[Path]:
    """Three tiny random-weight Qwen3 checkpoints (bf16, seeds 1..3)."""
    root = tmp_path_factory.mktemp('tiny')
    out = []
    for i in range(3):
        d = root / f'expert{i}'
        make_checkpoint(tiny_cfg(), d, seed=i + 1, tokenizer_dir=DEFAULT_TOKENIZER, minify_tokenizer=True)
        out.append(d)
    return out


def pytest_configure(config):
    import torch

    # one intra-op thread: on 2 shared cores, OpenMP spinning with 2 threads is 10x slower
    torch.set_num_threads(1)
    torch.set_flush_denormal(True)
