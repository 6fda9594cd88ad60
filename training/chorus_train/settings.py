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
    temperature: float = 0.7
    top_p: float = 0.8
    max_new_tokens: int = 16384
    micro_batch: int = 4
    grad_clip: float = 1.0
    seed: int = 0
    dtype: str = 'float32'
    device: str = 'cpu'
    data: str = ''
    service: list[str] = field(default_factory=list)
    timeout_s: float = 60.0

    SECTION = 'trainer'  # the recipe section's name, for error messages

    @classmethod
    def from_dict(cls, d: dict):
        """A recipe section -> settings; a misspelled key stops the run instead of being ignored."""
        unknown = set(d) - {f.name for f in fields(cls)}
        if unknown:
            raise SystemExit(f'unknown {cls.SECTION} settings: {", ".join(sorted(unknown))}')
        return cls(**d)
