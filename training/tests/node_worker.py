"""One rank of a simulated 2-node job (test_one_per_job.py): the reward service through
reward_client.connect_for_job with a fake start (tests/fake_reward_service.py), OUT/rank{R}.json says
which node, whether this rank started a service, its URL and the service's health answer."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_reward_service import FakeService  # noqa: E402

from chorus_train.reward_client import RewardClient, connect_for_job  # noqa: E402

started = []


def fake_start(**kw):
    svc = FakeService()
    started.append(svc)
    return RewardClient(svc.url, **kw)


def main() -> None:
    import torch.distributed as dist

    out = Path(sys.argv[1])
    client = connect_for_job(None, start=fake_start)
    rank = int(os.environ['RANK'])
    rec = {
        'node': rank // int(os.environ['LOCAL_WORLD_SIZE']),
        'started': bool(started),
        'url': client.urls[0],
        'health': client.health().get('status'),
    }
    (out / f'rank{rank}.json').write_text(json.dumps(rec))
    dist.barrier()  # nobody stops its node's service while another rank may still ask it
    for s in started:
        s.close()
    dist.destroy_process_group()


if __name__ == '__main__':
    main()
