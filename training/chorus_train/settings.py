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
    # The context every sequence must fit: prompt + reply. 40,960 is the reference's "40k total context"
    # (run-qwen3-4B-2xH100.sh) and Qwen3-4B's max_position_embeddings; with 16,384 new tokens a prompt
    # may hold 24,576 (`prompt_cap`). vLLM's max_model_len is set to it (an SFT checkpoint of a
    # long-context base would otherwise make vLLM size its KV cache for 262,144).
    max_context: int = 40960
    micro_batch: int = 4
    grad_clip: float = 1.0
    # Adam as the reference (slime --adam-beta1 0.9 --adam-beta2 0.95, weight decay 0)
    adam_beta1: float = 0.9
    adam_beta2: float = 0.95
    seed: int = 0
    # The COMPUTE dtype: 'bfloat16' runs the forward/backward under bf16 autocast (TRL/accelerate mixed
    # precision). The trained parameters and AdamW's states are always fp32 (trl_engine._fp32_master):
    # at lr 1e-6 an update is ~1e-6 per weight, far below half a bf16 ulp of a typical weight (~1e-4 at
    # |w| ~ 0.02), so pure-bf16 parameters round ~all updates away (tests/test_trl_rl.py measures it).
    dtype: str = 'float32'
    device: str = 'cpu'
    # TRL's advantage is (R - mean) / (std + 1e-4); the reference (slime) divides by std + 1e-6: the
    # trainer rescales TRL's advantages to this epsilon (trainers.reference_advantages).
    adv_eps: float = 1e-6
    # vLLM rollouts: TRL 1.16 turns on an importance-sampling correction (sequence mask at 3.0) by
    # default; the reference's DAPO had none (docs/protocol.md §8), so it is off unless asked for.
    is_correction: bool = False
    # The collective timeout (torch.distributed / TRL's ddp_timeout; HF's default 1,800 s): a rank that waits
    # longer for the others in one collective (a round's gather while another rank still decodes or its
    # teachers sample) stops the job. The dry run refuses a recipe whose estimated step passes it.
    ddp_timeout_s: int = 1800
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

    @property
    def prompt_cap(self) -> int:
        """The most prompt tokens a row may have: the context less the reply's budget."""
        return self.max_context - self.max_new_tokens

    @classmethod
    def from_dict(cls, d: dict):
        """A recipe section -> settings; a misspelled key stops the run instead of being ignored."""
        unknown = set(d) - {f.name for f in fields(cls)}
        if unknown:
            raise SystemExit(f'unknown {cls.SECTION} settings: {", ".join(sorted(unknown))}')
        out = cls(**d)
        if out.prompt_cap <= 0:
            raise SystemExit(
                f'{cls.SECTION}: max_context {out.max_context} leaves no room for a prompt beside max_new_tokens '
                f'{out.max_new_tokens}: raise max_context or lower max_new_tokens'
            )
        return out
