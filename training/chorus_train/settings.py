"""What the RL and OPD trainers share in their settings: the policy update (lr, clip, batch),
sampling, placement, data and the reward service, and strict loading from a recipe section."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from . import dapo


@dataclass
class TrainerSettings:
    lr: float = 1e-6
    eps_lo: float = dapo.EPS_LO
    eps_hi: float = dapo.EPS_HI
    # Rollouts in training sample the policy itself: temperature 1.0, no top-p (the reference's
    # --rollout-temperature 1.0, slime's top-p 1.0); 0.7 / 0.8 is the EVALUATION sampling (§4).
    # The trainer's log-probs are taken at this temperature (log softmax(z / T)), the distribution
    # the rollouts were drawn from.
    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 16384
    micro_batch: int = 4
    grad_clip: float = 1.0
    # Adam as the reference (slime --adam-beta1 0.9 --adam-beta2 0.95, weight decay 0)
    adam_beta1: float = 0.9
    adam_beta2: float = 0.95
    seed: int = 0
    dtype: str = 'float32'
    device: str = 'cpu'
    data: str = ''
    service: list[str] = field(default_factory=list)
    timeout_s: float = 60.0
    # rollouts on TRL (trl_engine.py): hf (generate) | vllm; vLLM colocated on the training GPUs, or a
    # `trl vllm-serve` server (vllm_mode: server, vllm_server: http://host:8000)
    rollout_engine: str = 'hf'
    vllm_mode: str = 'colocate'
    vllm_server: str = ''

    SECTION = 'trainer'  # the recipe section's name, for error messages

    def optimizer(self, params, weight_decay: float = 0.0):
        """AdamW at the recipe's constant lr and betas (RL and OPD alike)."""
        import torch

        return torch.optim.AdamW(params, lr=self.lr, weight_decay=weight_decay, betas=(self.adam_beta1, self.adam_beta2))

    @classmethod
    def from_dict(cls, d: dict):
        """A recipe section -> settings; a misspelled key stops the run instead of being ignored."""
        unknown = set(d) - {f.name for f in fields(cls)}
        if unknown:
            raise SystemExit(f'unknown {cls.SECTION} settings: {", ".join(sorted(unknown))}')
        return cls(**d)
