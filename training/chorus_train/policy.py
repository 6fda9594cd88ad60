"""Policy plumbing: loading a Hugging Face causal LM, rendering chat prompts with the model's own
template (Qwen3, thinking disabled), HF generate sampling (OPD's teachers, tests, the smoke run's
baseline; the policy's rollouts are TRL's: rollout.py), and batched forward passes that return
logits at the response positions only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

SAMPLING = {'temperature': 0.7, 'top_p': 0.8}  # docs/protocol.md §4


@dataclass
class Sample:
    prompt_ids: list[int]
    response_ids: list[int]
    text: str
    truncated: bool = False  # hit max_new_tokens without an end-of-sequence token
    meta: dict = field(default_factory=dict)


def load_policy(path: str, dtype: str = 'float32', device: str = 'cpu', trust_remote_code: bool = False):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype), trust_remote_code=trust_remote_code)
    model.to(device)
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return model, tok


def eos_ids(model, tok) -> set[int]:
    ids: set[int] = set()
    e = getattr(model, 'generation_config', None)
    e = getattr(e, 'eos_token_id', None)
    if isinstance(e, int):
        ids.add(e)
    elif e:
        ids.update(int(x) for x in e)
    if tok.eos_token_id is not None:
        ids.add(int(tok.eos_token_id))
    return ids


def render(tok, messages: list[dict]) -> list[int]:
    """Prompt token ids: the model's chat template with the generation prompt, thinking disabled."""
    out = tok.apply_chat_template(messages, add_generation_prompt=True, enable_thinking=False, tokenize=True)
    if isinstance(out, dict) or hasattr(out, 'input_ids'):
        out = out['input_ids']
    return [int(x) for x in out]


class Sampler(Protocol):
    def sample(self, prompts: list[list[int]], n: int) -> list[list[Sample]]: ...


class HFSampler:
    """`model.generate` with left-padded prompts (temperature 0.7, top-p 0.8 by default)."""

    def __init__(
        self,
        model,
        tok,
        max_new_tokens: int = 512,
        temperature: float = SAMPLING['temperature'],
        top_p: float = SAMPLING['top_p'],
        top_k: int | None = None,
        seed: int = 0,
    ):
        self.model, self.tok = model, tok
        self.max_new_tokens = max_new_tokens
        self.temperature, self.top_p, self.top_k = temperature, top_p, top_k
        self.gen = torch.Generator().manual_seed(seed)
        self.eos = eos_ids(model, tok)

    @torch.no_grad()
    def sample(self, prompts: list[list[int]], n: int) -> list[list[Sample]]:
        pad = self.tok.pad_token_id
        P = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), P), pad, dtype=torch.long)
        att = torch.zeros((len(prompts), P), dtype=torch.long)
        for i, p in enumerate(prompts):
            ids[i, P - len(p) :] = torch.tensor(p)
            att[i, P - len(p) :] = 1
        was_training = self.model.training
        self.model.eval()
        # HF generate draws from the global RNG: seed it from our own generator for reproducibility
        torch.manual_seed(int(torch.randint(0, 2**62, (1,), generator=self.gen)))
        kw: dict[str, Any] = dict(
            do_sample=True,
            temperature=self.temperature,
            top_p=self.top_p,
            top_k=self.top_k or 0,
            max_new_tokens=self.max_new_tokens,
            num_return_sequences=n,
            pad_token_id=pad,
            eos_token_id=sorted(self.eos),
        )
        out = self.model.generate(input_ids=ids.to(self.model.device), attention_mask=att.to(self.model.device), **kw)
        if was_training:
            self.model.train()
        res: list[list[Sample]] = []
        for i, p in enumerate(prompts):
            group = []
            for j in range(n):
                seq = out[i * n + j, P:].tolist()
                cut = next((k for k, t in enumerate(seq) if t in self.eos), None)
                resp = seq if cut is None else seq[: cut + 1]
                text = self.tok.decode(resp, skip_special_tokens=True)
                group.append(Sample(list(p), resp, text, truncated=cut is None))
            res.append(group)
        return res


class ScriptedSampler:
    """Returns given completions (texts) instead of sampling: for plumbing tests with real content."""

    def __init__(self, tok, texts: list[str], eos_id: int | None = None):
        self.tok, self.texts, self.i = tok, texts, 0
        self.eos_id = eos_id if eos_id is not None else tok.convert_tokens_to_ids('<|im_end|>')

    def sample(self, prompts: list[list[int]], n: int) -> list[list[Sample]]:
        res = []
        for p in prompts:
            group = []
            for _ in range(n):
                t = self.texts[self.i % len(self.texts)]
                self.i += 1
                ids = self.tok(t, add_special_tokens=False)['input_ids'] + [self.eos_id]
                group.append(Sample(list(p), ids, t))
            res.append(group)
        return res


@dataclass
class Batch:
    ids: torch.Tensor  # [B, P + R] left-padded prompt, then right-padded response
    attention: torch.Tensor
    positions: torch.Tensor
    tokens: torch.Tensor  # [B, R] response tokens (padded)
    mask: torch.Tensor  # [B, R] 1 on response tokens
    P: int
    R: int


def make_batch(samples: list[Sample], pad_id: int) -> Batch:
    P = max(len(s.prompt_ids) for s in samples)
    R = max(max(len(s.response_ids) for s in samples), 1)
    B = len(samples)
    ids = torch.full((B, P + R), pad_id, dtype=torch.long)
    att = torch.zeros((B, P + R), dtype=torch.long)
    tokens = torch.full((B, R), pad_id, dtype=torch.long)
    mask = torch.zeros((B, R), dtype=torch.float32)
    for i, s in enumerate(samples):
        p, r = s.prompt_ids, s.response_ids
        ids[i, P - len(p) : P] = torch.tensor(p, dtype=torch.long)
        att[i, P - len(p) : P] = 1
        if r:
            ids[i, P : P + len(r)] = torch.tensor(r, dtype=torch.long)
            att[i, P : P + len(r)] = 1
            tokens[i, : len(r)] = torch.tensor(r, dtype=torch.long)
            mask[i, : len(r)] = 1
    pos = (att.cumsum(-1) - 1).clamp(min=0)
    return Batch(ids, att, pos, tokens, mask, P, R)


def response_logits(model, b: Batch) -> torch.Tensor:
    """Logits predicting each response token: [B, R, V] (the LM head runs on those positions only)."""
    dev = model.device
    out = model(
        input_ids=b.ids.to(dev),
        attention_mask=b.attention.to(dev),
        position_ids=b.positions.to(dev),
        logits_to_keep=b.R + 1,
        use_cache=False,
    )
    return out.logits[:, : b.R, :]


def save_tokenizer(tok, dst) -> None:
    """`tok.save_pretrained`, keeping the chat template inside tokenizer_config.json as well
    (transformers 5 writes it to chat_template.jinja only; transformers.js and the ONNX exporter
    read tokenizer_config.json)."""
    import json
    from pathlib import Path

    dst = Path(dst)
    tok.save_pretrained(dst)
    cfg_p, jinja = dst / 'tokenizer_config.json', dst / 'chat_template.jinja'
    if cfg_p.exists() and jinja.exists():
        cfg = json.loads(cfg_p.read_text())
        if not cfg.get('chat_template'):
            cfg['chat_template'] = jinja.read_text()
            cfg_p.write_text(json.dumps(cfg, indent=2, ensure_ascii=False) + '\n')
