"""DAPO reinforcement learning with agentic refinement (docs/protocol.md §8).

Each step takes `prompts_per_step` tasks (the global batch, 16) and, per task:
  1. direct group: `group_size` (4) samples from the first turn;
  2. refinement group(s): the WORST-coverage member of the previous group (`carry: best` is the
     paper's ablation) is carried into the conversation with the service's feedback turn, and
     `group_size` new samples are drawn; `agentic_rounds` (2) counts the direct round too.
Every group gets group-relative advantages (equal rewards -> zero advantage); the clip-higher
surrogate (eps 0.2 / 0.28) is averaged over all response tokens of the step; no KL, no dynamic
sampling; AdamW at a constant 1e-6. `mini_batches` optimizer updates per rollout batch (1: on
policy). Checkpoints every `save_every` updates (model + optimizer + RNG + data cursor), resumable;
metrics per step in metrics.csv (and TensorBoard when installed).
"""

from __future__ import annotations

import csv
import json
import math
import random
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from . import dapo
from .dist import Dist
from .envs import Env, Score, rescore_failed, strip_think
from .policy import HFSampler, Sample, Sampler, make_batch, render, response_logits, save_tokenizer
from .settings import TrainerSettings

METRICS = [
    'step',
    'updates',
    'reward',
    'coverage',
    'pass_rate',
    'reward_direct',
    'reward_refine',
    'coverage_direct',
    'coverage_refine',
    'clip_frac',
    'clip_lo_frac',
    'clip_hi_frac',
    'entropy',
    'response_len',
    'truncated_frac',
    'loss',
    'zero_adv_groups',
    'score_failures',
    'seconds',
]


@dataclass
class RLConfig(TrainerSettings):
    model: str = ''
    out: str = 'runs/rl'
    updates: int = 1000
    group_size: int = 4
    # prompts per step: 4 prompts x group 4 = the global batch of 16 sequences per round (the
    # reference: rollout batch 16 / group 4); with 2 rounds a step trains on 32 sequences
    prompts_per_step: int = 4
    agentic_rounds: int = 2
    carry: str = 'worst'  # worst | best
    top_k: int | None = None
    mini_batches: int = 1
    weight_decay: float = 0.0
    save_every: int = 100
    keep_checkpoints: int = 3
    threshold: float | None = None
    rollout_engine: str = 'hf'  # hf | vllm
    rescore_tries: int = 1  # a member the reward service failed to score is asked for again this often

    SECTION = 'rl'


def pick_carry(scores: list[Score], carry: str) -> int | None:
    """Index of the member carried into refinement: worst coverage (ties: lowest reward, first), or
    best. Members the reward service failed to score are never carried (None when all failed)."""
    ok = [i for i, s in enumerate(scores) if s is not None and not s.failed]
    if not ok:
        return None
    key = {i: ((scores[i].coverage if scores[i].coverage is not None else -1.0), scores[i].reward) for i in ok}
    if carry == 'worst':
        return min(ok, key=lambda i: (key[i], i))
    if carry == 'best':
        return max(ok, key=lambda i: (key[i], -i))
    raise ValueError(f'carry must be worst or best, got {carry}')


def scored_advantages(scores: list[Score]) -> tuple[torch.Tensor, list[int]]:
    """Group-relative advantages over the members that HAVE a score, and their indices. A member the
    reward service failed to score is no evidence of a bad reply: it is left out of the mean and std
    and out of the training batch (a reward of 0 would become a negative advantage)."""
    keep = [i for i, s in enumerate(scores) if s is not None and not s.failed]
    adv = dapo.group_advantages(torch.tensor([float(scores[i].reward) for i in keep], dtype=torch.float32))
    return adv, keep


def carry_messages(msgs: list[dict], env: Env, task: dict, sample: Sample, score: Score) -> list[dict]:
    """The next round's conversation: the carried reply (its <think> block stripped, PROTOCOL §2)
    and the service's feedback turn for it."""
    fb = env.feedback(task, sample, score)
    return msgs + [{'role': 'assistant', 'content': strip_think(sample.text)}, {'role': 'user', 'content': fb}]


@dataclass
class Group:
    task: dict
    round: int
    samples: list[Sample]  # the members that train (failed scores left out)
    scores: list[Score]
    advantages: torch.Tensor
    messages: list[dict] = field(default_factory=list)  # the conversation the group was sampled from
    failed: int = 0  # members the reward service could not score (after one re-score)


def rollout_batch(
    tasks: list[dict], env: Env, sampler: Sampler, tok, cfg: RLConfig, dist: Dist | None = None
) -> tuple[list[Group], list[tuple]]:
    """The agentic rounds of a step's prompts, the sampling spread over the data-parallel ranks.

    A round has prompts x group_size units (16 at the reference's 4 x 4); rank r samples and scores
    a contiguous share of them (whole prompts when the ranks are fewer than the prompts, parts of a
    group when they are more: 8 or 16 GPUs and 4 prompts). The scores are gathered, so every rank
    computes the same group advantages and carries the same member into the next round. Returns
    this rank's groups (only its own members, with their advantages) and, identical on every rank,
    one fact per scored member of the step: (round, reward, coverage, passed, tokens, truncated),
    plus per group (round, zero-advantage, failed) as ('group', ...) entries."""
    dist = dist or Dist()
    n_units = len(tasks) * cfg.group_size
    share = math.ceil(n_units / dist.world)
    my_units = set(range(dist.rank * share, min((dist.rank + 1) * share, n_units)))
    msgs = [list(env.first_turn(t)) for t in tasks]
    live = list(range(len(tasks)))
    groups: list[Group] = []
    facts: list[tuple] = []
    for rnd in range(cfg.agentic_rounds):
        local = []  # (prompt, member, sample, score)
        for i in live:
            js = [j for j in range(cfg.group_size) if i * cfg.group_size + j in my_units]
            if not js:
                continue
            samples = sampler.sample([render(tok, msgs[i])], len(js))[0]
            scores = rescore_failed(env, tasks[i], samples, env.score(tasks[i], samples), tries=cfg.rescore_tries)
            local += [(i, j, x, sc) for j, x, sc in zip(js, samples, scores, strict=True)]
        everyone = dist.gather(local) if dist.world > 1 else local
        carried = []
        for i in live:
            members = sorted((x for x in everyone if x[0] == i), key=lambda x: x[1])
            scores = [x[3] for x in members]
            adv, keep = scored_advantages(scores)
            a_of = {members[k][1]: adv[n] for n, k in enumerate(keep)}
            mine = [x for x in local if x[0] == i and x[1] in a_of]
            groups.append(
                Group(
                    tasks[i],
                    rnd,
                    [x[2] for x in mine],
                    [x[3] for x in mine],
                    torch.stack([a_of[x[1]] for x in mine]) if mine else torch.zeros(0),
                    msgs[i],
                    len(members) - len(keep),
                )
            )
            facts += [
                (
                    rnd,
                    members[k][3].reward,
                    members[k][3].coverage,
                    float(members[k][3].passed),
                    len(members[k][2].response_ids),
                    float(members[k][2].truncated),
                )
                for k in keep
            ]
            facts.append(('group', rnd, float(adv.abs().sum()) == 0.0, len(members) - len(keep)))
            if rnd + 1 < cfg.agentic_rounds:
                k = pick_carry(scores, cfg.carry)
                if k is not None:  # nothing scored: no evidence to refine from
                    msgs[i] = carry_messages(msgs[i], env, tasks[i], members[k][2], scores[k])
                    carried.append(i)
        live = carried
    return groups, facts


def rollout(task: dict, env: Env, sampler: Sampler, tok, cfg: RLConfig) -> list[Group]:
    """One prompt's groups in one process (rollout_batch of a single task)."""
    return rollout_batch([task], env, sampler, tok, cfg)[0]


def policy_update(
    model, optimizer, samples: list[Sample], advantages: torch.Tensor, cfg: RLConfig, pad_id: int, dist: Dist | None = None
) -> dict:
    """One rollout batch -> `mini_batches` optimizer steps of the DAPO loss. Returns averaged stats.

    Under data parallelism `samples` are this rank's share; the token-level mean is over the
    response tokens of every rank's share of the mini-batch, and the stats are global."""
    dist = dist or Dist()
    dev = dist.device(model)
    n = len(samples)
    # rollout-time log-probs (the ratio's denominator), same forward as training
    old = []
    model.eval()
    with torch.no_grad():
        for i in range(0, n, cfg.micro_batch):
            b = make_batch(samples[i : i + cfg.micro_batch], pad_id)
            old.append(dapo.token_logprobs(response_logits(model, b), b.tokens.to(dev), cfg.temperature).cpu())
    model.train()
    order = list(range(n))
    per = math.ceil(n / cfg.mini_batches)  # this rank's samples per mini-batch
    acc = {'loss': 0.0, 'clip_frac': 0.0, 'clip_lo_frac': 0.0, 'clip_hi_frac': 0.0, 'entropy': 0.0}
    tok_total = 0
    for mb in range(cfg.mini_batches):
        idx = order[mb * per : (mb + 1) * per] if per else []
        n_tok = dist.all_sum([sum(max(len(samples[i].response_ids), 0) for i in idx)])[0]
        optimizer.zero_grad(set_to_none=True)
        # every rank takes part in every gradient all-reduce: ranks with fewer micro-batches (members
        # left out for a failed score, a prompt with fewer units) run zero-loss passes
        mine = math.ceil(len(idx) / cfg.micro_batch)
        for j in range(int(dist.all_max([mine])[0])):
            if j >= mine:
                dummy = make_batch([Sample([pad_id], [pad_id], '')], pad_id)
                dist.backward(response_logits(model, dummy).float().sum() * 0.0)
                continue
            sub = idx[j * cfg.micro_batch : (j + 1) * cfg.micro_batch]
            b = make_batch([samples[i] for i in sub], pad_id)
            logits = response_logits(model, b)
            lp = dapo.token_logprobs(logits, b.tokens.to(dev), cfg.temperature)
            # old log-probs of these rows (micro-batches of the rollout pass may differ in width)
            o = torch.zeros_like(lp)
            for r, i in enumerate(sub):
                src = old[i // cfg.micro_batch][i % cfg.micro_batch]
                L = len(samples[i].response_ids)
                o[r, :L] = src[:L].to(o.device)
            loss, st = dapo.dapo_loss(lp, o, advantages[sub].to(lp.device), b.mask.to(lp.device), cfg.eps_lo, cfg.eps_hi, n_tokens=n_tok)
            dist.backward(loss)
            with torch.no_grad():
                ent = dapo.token_entropy(logits.detach(), cfg.temperature)
                m = b.mask.to(ent.device)
                acc['entropy'] += float((ent * m).sum())
            acc['loss'] += st.loss
            for k in ('clip_frac', 'clip_lo_frac', 'clip_hi_frac'):
                acc[k] += getattr(st, k) * st.tokens
            tok_total += st.tokens
        if cfg.grad_clip:
            dist.clip_grad_norm(model, cfg.grad_clip)
        optimizer.step()
    keys = ['loss', 'clip_frac', 'clip_lo_frac', 'clip_hi_frac', 'entropy']
    summed = dist.all_sum([acc[k] for k in keys] + [tok_total])
    acc = dict(zip(keys, summed[:-1], strict=True))
    tok_total = summed[-1]
    t = max(tok_total, 1)
    return {
        'loss': acc['loss'] / max(cfg.mini_batches, 1),
        'clip_frac': acc['clip_frac'] / t,
        'clip_lo_frac': acc['clip_lo_frac'] / t,
        'clip_hi_frac': acc['clip_hi_frac'] / t,
        'entropy': acc['entropy'] / t,
    }


def _mean(xs) -> float:
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else float('nan')


class Logger:
    def __init__(self, out: Path, resume_step: int):
        self.path = out / 'metrics.csv'
        rows = []
        if self.path.exists() and resume_step > 0:
            with open(self.path) as f:
                rows = [r for r in csv.DictReader(f) if int(r['step']) <= resume_step]
        with open(self.path, 'w', newline='') as f:
            w = csv.DictWriter(f, fieldnames=METRICS)
            w.writeheader()
            w.writerows(rows)
        self.tb = None
        try:
            from torch.utils.tensorboard import SummaryWriter

            self.tb = SummaryWriter(str(out / 'tb'))
        except Exception:
            self.tb = None

    def log(self, row: dict) -> None:
        with open(self.path, 'a', newline='') as f:
            csv.DictWriter(f, fieldnames=METRICS).writerow({k: row.get(k) for k in METRICS})
        if self.tb:
            for k, v in row.items():
                if k != 'step' and isinstance(v, (int, float)):
                    self.tb.add_scalar(k, v, row['step'])


def latest_checkpoint(out: Path) -> Path | None:
    cks = [p for p in out.glob('checkpoint-*') if (p / 'trainer_state.pt').exists()]
    return max(cks, key=lambda p: int(p.name.split('-')[1])) if cks else None


def save_checkpoint(out: Path, model, tok, optimizer, state: dict, keep: int, state_dict: dict | None = None) -> Path:
    d = out / f'checkpoint-{state["updates"]}'
    tmp = out / f'.tmp-{d.name}'
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True, **({'state_dict': state_dict} if state_dict is not None else {}))
    save_tokenizer(tok, tmp)
    torch.save(
        {**state, 'optimizer': optimizer.state_dict(), 'torch_rng': torch.get_rng_state(), 'py_rng': random.getstate()},
        tmp / 'trainer_state.pt',
    )
    shutil.rmtree(d, ignore_errors=True)
    tmp.rename(d)
    cks = sorted((p for p in out.glob('checkpoint-*') if p.is_dir()), key=lambda p: int(p.name.split('-')[1]))
    for p in cks[:-keep] if keep > 0 else []:
        shutil.rmtree(p, ignore_errors=True)
    return d


def train(
    cfg: RLConfig,
    tasks: list[dict],
    env: Env,
    model=None,
    tok=None,
    sampler: Sampler | None = None,
    steps: int | None = None,
    resume: bool = True,
    log=print,
) -> dict:
    """Run DAPO until `cfg.updates` optimizer updates (or `steps` rollout steps). Returns the final state."""
    from .policy import load_policy

    if cfg.rollout_engine not in ('hf', 'vllm'):
        raise SystemExit(f"rollout_engine must be 'hf' or 'vllm', got '{cfg.rollout_engine}'")
    dist = Dist()
    if cfg.rollout_engine == 'vllm' and sampler is None and dist.world > 1:
        # one colocated engine per process would need the rollouts split by engine, not by rank
        raise SystemExit(
            "rollout_engine 'vllm' runs in one process (colocated, weights pushed after every update); "
            "under accelerate/torchrun use 'hf', or the RL engine (README)"
        )
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    ck = latest_checkpoint(out) if resume else None
    state = {'step': 0, 'updates': 0, 'cursor': 0, 'epoch': 0}
    if ck is not None:
        model, tok = load_policy(str(ck), cfg.dtype, cfg.device)
        log(f'resuming from {ck}')
    elif model is None:
        model, tok = load_policy(cfg.model, cfg.dtype, cfg.device)
    torch.manual_seed(cfg.seed)
    random.seed(cfg.seed)
    optimizer = cfg.optimizer(model.parameters(), cfg.weight_decay)
    if ck is not None:
        st = torch.load(ck / 'trainer_state.pt', weights_only=False)
        optimizer.load_state_dict(st.pop('optimizer'))
        torch.set_rng_state(st.pop('torch_rng'))
        random.setstate(st.pop('py_rng'))
        state.update(st)
    if sampler is None and cfg.rollout_engine == 'vllm':
        from .policy import vllm_sampler

        sampler = vllm_sampler(str(ck or cfg.model), tok, cfg.max_new_tokens, cfg.temperature, cfg.top_p, seed=cfg.seed + state['step'])
        if ck is not None or model is not None:
            sampler.sync(model)
    if sampler is None:
        # each rank samples with its own stream (same prompts on two ranks must not draw the same)
        sampler = HFSampler(
            model, tok, cfg.max_new_tokens, cfg.temperature, cfg.top_p, cfg.top_k, seed=cfg.seed + state['step'] + 7919 * dist.rank
        )
    elif hasattr(sampler, 'model'):
        sampler.model = model
    model, optimizer = dist.prepare(model, optimizer)
    if hasattr(sampler, 'model'):
        sampler.model = dist.unwrap(model)
    if dist.main:
        (out / 'rl_config.json').write_text(json.dumps(asdict(cfg), indent=2) + '\n')
    logger = Logger(out, state['step']) if dist.main else None
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    order = list(range(len(tasks)))
    random.Random(cfg.seed + state['epoch']).shuffle(order)
    target_steps = None if steps is None else state['step'] + steps
    while state['updates'] < cfg.updates and (target_steps is None or state['step'] < target_steps):
        t0 = time.time()
        batch_tasks = []
        for _ in range(cfg.prompts_per_step):
            if state['cursor'] >= len(order):
                state['epoch'] += 1
                state['cursor'] = 0
                order = list(range(len(tasks)))
                random.Random(cfg.seed + state['epoch']).shuffle(order)
            batch_tasks.append(tasks[order[state['cursor']]])
            state['cursor'] += 1
        groups, facts = rollout_batch(batch_tasks, env, sampler, tok, cfg, dist)
        samples = [s for g in groups for s in g.samples]
        adv = torch.cat([g.advantages for g in groups]) if groups else torch.zeros(0)
        stats = policy_update(model, optimizer, samples, adv, cfg, pad, dist)
        if hasattr(sampler, 'sync'):
            sampler.sync(dist.unwrap(model))  # the next rollouts sample the updated policy
        state['step'] += 1
        state['updates'] += cfg.mini_batches
        # the step's metrics from the gathered facts (the same on every rank)
        zero_adv = sum(1 for f in facts if f[0] == 'group' and f[2])
        failures = sum(f[3] for f in facts if f[0] == 'group')
        facts = [f for f in facts if f[0] != 'group']
        direct = [f for f in facts if f[0] == 0]
        refine = [f for f in facts if f[0] > 0]
        row = {
            'step': state['step'],
            'updates': state['updates'],
            'reward': _mean(f[1] for f in facts),
            'coverage': _mean(f[2] for f in facts),
            'pass_rate': _mean(f[3] for f in facts),
            'reward_direct': _mean(f[1] for f in direct),
            'reward_refine': _mean(f[1] for f in refine),
            'coverage_direct': _mean(f[2] for f in direct),
            'coverage_refine': _mean(f[2] for f in refine),
            'response_len': _mean(f[4] for f in facts),
            'truncated_frac': _mean(f[5] for f in facts),
            'zero_adv_groups': zero_adv,
            'score_failures': failures,
            'seconds': round(time.time() - t0, 3),
            **stats,
        }
        if dist.main:
            logger.log(row)
            log(
                f'step {row["step"]} updates {row["updates"]}: reward {row["reward"]:.3f} coverage {row["coverage"]:.3f} '
                f'pass {row["pass_rate"]:.2f} clip {row["clip_frac"]:.3f} entropy {row["entropy"]:.2f} len {row["response_len"]:.0f}'
            )
        if cfg.save_every and state['updates'] % cfg.save_every < cfg.mini_batches or state['updates'] >= cfg.updates:
            sd = dist.state_dict(model)  # collective under FSDP: every rank takes part
            if dist.main:
                save_checkpoint(out, dist.unwrap(model), tok, optimizer, dict(state), cfg.keep_checkpoints, state_dict=sd)
            dist.barrier()
    return {'state': state, 'model': dist.unwrap(model), 'tokenizer': tok, 'rank': dist.rank, 'world': dist.world}


def load_tasks(path: str) -> list[dict]:
    p = Path(path)
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]
