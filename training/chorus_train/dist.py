"""Data parallelism for the trainers, on accelerate (DDP, FSDP or DeepSpeed as `accelerate config`
chooses); one process without it. No home-made distributed layer: this only names the few calls
the trainers make so that the single-process path stays plain PyTorch.

Launch with `accelerate launch -m chorus_train rl ...` (or `torchrun --nproc_per_node N -m
chorus_train rl ...`): every rank draws the same prompt order, rolls out its own share of the
step's prompts, and the loss is normalized by the token count of the WHOLE step (all ranks), so a
step on N ranks is the same update as the step on one (tested on CPU with 2 processes).
"""

from __future__ import annotations

import os

import torch


class Dist:
    def __init__(self) -> None:
        self.acc = None
        self.rank = 0
        self.world = 1
        if int(os.environ.get('WORLD_SIZE', '1')) > 1:
            from accelerate import Accelerator

            self.acc = Accelerator(cpu=not torch.cuda.is_available())
            self.rank = self.acc.process_index
            self.world = self.acc.num_processes

    @property
    def main(self) -> bool:
        return self.rank == 0

    def prepare(self, model, optimizer):
        if self.acc is None:
            return model, optimizer
        return self.acc.prepare(model, optimizer)

    def unwrap(self, model):
        return model if self.acc is None else self.acc.unwrap_model(model)

    def backward(self, loss: torch.Tensor) -> None:
        # DDP/FSDP average gradients over ranks; the loss is already divided by the global token
        # count, so scale by the world size to get the sum the single-process step would take.
        if self.acc is None:
            loss.backward()
        else:
            self.acc.backward(loss * self.world)

    def clip_grad_norm(self, model, max_norm: float) -> None:
        if self.acc is None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        else:
            self.acc.clip_grad_norm_(model.parameters(), max_norm)

    def all_sum(self, values: list[float]) -> list[float]:
        if self.acc is None:
            return list(values)
        t = torch.tensor(values, dtype=torch.float64, device=self.acc.device)
        torch.distributed.all_reduce(t)
        return t.tolist()

    def all_max(self, values: list[float]) -> list[float]:
        if self.acc is None:
            return list(values)
        t = torch.tensor(values, dtype=torch.float64, device=self.acc.device)
        torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MAX)
        return t.tolist()

    def gather(self, items: list) -> list:
        """Every rank's list, concatenated in rank order (on every rank)."""
        if self.acc is None:
            return list(items)
        from accelerate.utils import gather_object

        return gather_object(items)

    def state_dict(self, model) -> dict | None:
        """The full model state (gathered under FSDP); None on ranks other than the main one."""
        if self.acc is None:
            return None
        sd = self.acc.get_state_dict(model)
        return sd if self.main else None

    def barrier(self) -> None:
        if self.acc is not None:
            self.acc.wait_for_everyone()

    def device(self, model) -> torch.device:
        return self.acc.device if self.acc is not None else next(model.parameters()).device

    def shard(self, items: list, what: str) -> list:
        if len(items) % self.world:
            raise SystemExit(f'{what}: {len(items)} is not divisible by the {self.world} processes; choose a multiple')
        return items[self.rank :: self.world]
