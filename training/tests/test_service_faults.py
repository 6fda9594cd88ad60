"""A reward-service hiccup never kills a rank (issue 43): every call the environment makes goes through
the client's retries and failover (refused connections, resets, 5xx, timeouts, answers cut off), and
what still has no answer is a masked, counted sample, never an exception out of the environment."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from chorus_train.envs import Score, ServiceEnv, ServiceUnavailable
from chorus_train.evaluate import free_port
from chorus_train.policy import Sample
from chorus_train.reward_client import RewardClient

TASK = {'id': 't', 'top': 'm', 'design_files': [{'name': 'm.sv', 'content': 'module m; endmodule'}]}


class Broken:
    """A client whose every endpoint raises what RewardClient raises once its retries are spent."""

    def __init__(self, exc: Exception):
        self.exc = exc

    def __getattr__(self, name):
        def fail(*a, **kw):
            raise self.exc

        return fail


@pytest.mark.parametrize(
    'exc', [ConnectionRefusedError(111, 'refused'), TimeoutError('timed out'), RuntimeError('reward service: gave up after 9 attempts')]
)
def test_service_env_turns_every_client_failure_into_a_mask(exc):
    """First turn and feedback turn: ServiceUnavailable (the rollout masks the rows that need them);
    score: a failed Score per member (re-scored, then masked), never the client's exception."""
    env = ServiceEnv(Broken(exc))
    with pytest.raises(ServiceUnavailable, match='first turn of task t'):
        env.first_turn(TASK)
    sc = env.score(TASK, [Sample([1], [2], '```x```'), Sample([1], [2], 'y')])
    assert [s.failed for s in sc] == [True, True] and all(str(exc) in s.error for s in sc)
    with pytest.raises(ServiceUnavailable, match='feedback turn of task t'):
        env.feedback(TASK, Sample([1], [2], 'x'), Score(1.0, 0.0, False, 'success', {'status': 'success'}))


def _server(handler) -> ThreadingHTTPServer:
    srv = ThreadingHTTPServer(('127.0.0.1', 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def test_client_retries_a_500_and_a_body_cut_off_on_any_endpoint():
    """/v1/first-turn answers 500, then a body cut off mid-way (IncompleteRead, which is not an OSError),
    then correctly: the client tries again each time instead of raising."""
    script = ['500', 'cut', 'ok']

    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            self.send_response(200)
            self.send_header('Content-Length', '2')
            self.end_headers()
            self.wfile.write(b'{}')

        def do_POST(self):
            self.rfile.read(int(self.headers['Content-Length']))
            step = script.pop(0)
            data = json.dumps({'messages': [{'role': 'user', 'content': 'hi'}]} if step == 'ok' else {'error': 'internal'}).encode()
            self.send_response(500 if step == '500' else 200)
            self.send_header('Content-Length', str(len(data) + (100 if step == 'cut' else 0)))
            self.end_headers()
            self.wfile.write(data)
            if step == 'cut':
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)

    srv = _server(H)
    try:
        c = RewardClient(f'http://127.0.0.1:{srv.server_port}', retries=4, max_backoff_s=0.01)
        c.down_s = 0.01
        assert c.first_turn([], 'm') == [{'role': 'user', 'content': 'hi'}]
        assert c.stats['retries_5xx'] == 1 and c.stats['retries_conn'] == 1 and script == []
    finally:
        srv.shutdown()


def test_a_service_that_starts_late_is_waited_for():
    """Connection refused at start-up (the service is still starting): the first turn arrives once it
    listens, within the client's retries."""
    port = free_port()

    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers['Content-Length']))
            data = json.dumps({'messages': [{'role': 'user', 'content': 'late'}]}).encode()
            self.send_response(200)
            self.send_header('Content-Length', str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST

    holder = {}

    def start_later():
        time.sleep(1.0)
        srv = ThreadingHTTPServer(('127.0.0.1', port), H)
        holder['srv'] = srv
        srv.serve_forever()

    threading.Thread(target=start_later, daemon=True).start()
    try:
        c = RewardClient(f'http://127.0.0.1:{port}', retries=30, max_backoff_s=0.2)
        c.down_s = 0.05
        env = ServiceEnv(c)
        assert env.first_turn(TASK)[0]['content'] == 'late'
        assert c.stats['retries_conn'] >= 1  # it was refused first
    finally:
        for _ in range(50):
            if 'srv' in holder:
                break
            time.sleep(0.1)
        holder['srv'].shutdown()


def test_a_faulty_service_masks_and_counts_on_two_ranks(tiny_ckpts, tmp_path):
    """One RL step on 2 gloo processes (torchrun) through ServiceEnv and RewardClient, pointed at a URL that
    refuses every connection and at a fake service that resets, answers 500 and (scores) answers too
    late on each endpoint in turn before answering, and fails some requests for good (no first turn
    for task 0, no parse for one reply, no score for one group, no feedback turn for task 2). The step
    finishes on both ranks; exactly the rows without an answer are masked, counted over both ranks
    (metric and step log); every fault was served."""
    import csv

    from fake_reward_service import EXPECTED_MASKED, TRANSIENT, FakeService
    from test_trl_ddp import run

    svc = FakeService()
    dead = f'http://127.0.0.1:{free_port()}'  # nothing listens there: connection refused
    try:
        run([str(tiny_ckpts[0]), str(tmp_path), 'service', svc.url, dead], 2)
    finally:
        svc.close()
    ranks = [json.loads((tmp_path / f'rank{r}.json').read_text()) for r in (0, 1)]
    assert (tmp_path / 'world.txt').read_text() == '2' and (tmp_path / 'final.pt').exists()
    assert [r['masked_rows'] for r in ranks] == [EXPECTED_MASKED] * 2 and ranks[0]['step_rows'] == 24
    assert any(f'{EXPECTED_MASKED} of 24 rows masked' in line for line in ranks[0]['log']), ranks[0]['log']
    rows = list(csv.DictReader(open(tmp_path / 'run' / 'metrics.csv')))
    assert [int(r['masked_rows']) for r in rows] == [EXPECTED_MASKED]
    assert svc.served == {(p, f) for p, fs in TRANSIENT.items() for f in fs}
    assert sum(r['client']['retries_conn'] for r in ranks) > 0 and sum(r['client']['retries_5xx'] for r in ranks) > 0
