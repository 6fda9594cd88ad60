"""The reward-service client against a small fake HTTP server: batching, 429 + Retry-After,
round-robin over URLs, error bodies."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from chorus_train.envs import ServiceEnv
from chorus_train.policy import Sample
from chorus_train.reward_client import MAX_GROUP, RewardClient, ServiceError


def fake_server(state):
    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def _send(self, code, body, headers=None):
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header('Content-Type', 'application/json')
            self.send_header('Content-Length', str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            state['hits'].append((self.server.server_port, self.path))
            self._send(200, {'status': 'ok'})

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers['Content-Length'])))
            state['hits'].append((self.server.server_port, self.path))
            if self.path == '/v1/score':
                if state['busy'] > 0:
                    state['busy'] -= 1
                    return self._send(429, {'error': 'queue_full', 'message': 'full', 'retry_after_s': 0.05}, {'Retry-After': '0'})
                state['bodies'].append(body)
                tbs = [it['testbench'] for it in body['items']] if 'items' in body else body.get('testbenches', [body.get('testbench')])
                res = [{'status': 'success', 'reward': 1.5, 'coverage': 0.5, 'passed': False, 'tb': tb['content']} for tb in tbs]
                return self._send(200, {'results': res} if 'items' in body or 'testbenches' in body else res[0])
            if self.path == '/v1/refine-prompt':
                reply = body.get('reply', '')
                ok = '```' in reply
                return self._send(
                    200,
                    {
                        'content': 'Improve coverage' if ok else 'unparsable',
                        'parsed': {'status': 'success', 'testbench': reply.strip('`'), 'filename': 'tb.sv'}
                        if ok
                        else {'status': 'unparsable'},
                    },
                )
            if self.path == '/v1/parse-reply':
                reply = body['reply']
                ok = '```' in reply
                return self._send(
                    200,
                    {
                        'parsed': {'status': 'success', 'testbench': reply.strip('`'), 'filename': 'tb.sv'}
                        if ok
                        else {'status': 'unparsable', 'reason': 'no code'}
                    },
                )
            if self.path == '/v1/first-turn':
                return self._send(200, {'messages': [{'role': 'system', 'content': 's'}, {'role': 'user', 'content': body['top']}]})
            self._send(404, {'error': 'not_found', 'message': 'no route'})

    srv = ThreadingHTTPServer(('127.0.0.1', 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


@pytest.fixture
def servers():
    state = {'hits': [], 'busy': 0, 'bodies': []}
    a, b = fake_server(state), fake_server(state)
    yield state, [f'http://127.0.0.1:{a.server_port}', f'http://127.0.0.1:{b.server_port}']
    a.shutdown()
    b.shutdown()


def test_round_robin_batch_and_retry(servers):
    state, urls = servers
    c = RewardClient(urls, retries=3)
    c.health()
    c.health()
    assert {p for p, _ in state['hits']} == {int(u.rsplit(':', 1)[1]) for u in urls}
    state['busy'] = 2
    items = [{'design_files': [], 'top': 't', 'testbench': {'name': 'tb.sv', 'content': f'tb{i}'}} for i in range(3)]
    res = c.score(items)
    assert [r['tb'] for r in res] == ['tb0', 'tb1', 'tb2']
    assert c.stats['retries_429'] == 2
    assert c.first_turn([{'name': 'a.sv', 'content': 'module t; endmodule'}], 't')[1]['content'] == 't'
    with pytest.raises(ServiceError) as e:
        c.request('POST', '/nope', {})
    assert e.value.status == 404


def test_service_env_parses_through_the_service(servers):
    state, urls = servers
    env = ServiceEnv(RewardClient(urls))
    task = {'design_files': [{'name': 'a.sv', 'content': 'x'}], 'top': 't'}
    samples = [
        Sample([1], [2], '```module tb; endmodule```'),
        Sample([1], [2], 'no code here'),
        Sample([1], [2], '```module tb2; endmodule```'),
    ]
    sc = env.score(task, samples)
    assert sc[0].reward == 1.5 and sc[0].status == 'success'
    assert sc[1].reward == 0.0 and sc[1].status == 'unparsable'
    assert sc[2].record['tb'] == 'module tb2; endmodule'
    # The prompt's parsed samples went as ONE group request: one design, its testbenches in order.
    scores = [b for b in state['bodies']]
    assert len(scores) == 1 and 'items' not in scores[0]
    assert scores[0]['top'] == 't' and [t['content'] for t in scores[0]['testbenches']] == ['module tb; endmodule', 'module tb2; endmodule']


def test_score_group_splits_at_the_service_limit(servers):
    state, urls = servers
    c = RewardClient(urls)
    tbs = [{'name': 'tb.sv', 'content': f'tb{i}'} for i in range(MAX_GROUP + 3)]
    res = c.score_group({'design_files': [], 'top': 't'}, tbs)
    assert [r['tb'] for r in res] == [t['content'] for t in tbs]
    assert [len(b['testbenches']) for b in state['bodies']] == [MAX_GROUP, 3]


def test_retry_failover_same_key_and_return_on_readyz():
    """A service that resets the connection, then fails (503 service_failure), then recovers: every
    try carries one Idempotency-Key; a down URL returns only once its /readyz answers 200."""
    seen: list[tuple[int, str]] = []
    script = {'steps': ['reset', '503'], 'ready': False}

    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            code = 200 if script['ready'] else 503
            self.send_response(code)
            self.send_header('Content-Length', '2')
            self.end_headers()
            self.wfile.write(b'{}')

        def do_POST(self):
            self.rfile.read(int(self.headers['Content-Length']))
            seen.append((self.server.server_port, self.headers.get('Idempotency-Key')))
            step = script['steps'].pop(0) if script['steps'] and self.server.server_port == first.server_port else 'ok'
            if step == 'reset':
                self.connection.close()
                return
            data = json.dumps(
                {'error': 'service_failure', 'cause': 'worker_killed', 'message': 'killed'}
                if step == '503'
                else {'status': 'success', 'reward': 1.5}
            ).encode()
            self.send_response(503 if step == '503' else 200)
            self.send_header('Content-Type', 'application/json')
            self.send_header('Content-Length', str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    first = ThreadingHTTPServer(('127.0.0.1', 0), H)
    second = ThreadingHTTPServer(('127.0.0.1', 0), H)
    for s in (first, second):
        threading.Thread(target=s.serve_forever, daemon=True).start()
    try:
        one = RewardClient([f'http://127.0.0.1:{first.server_port}'], retries=5, max_backoff_s=0.05)
        one.down_s = 0.01
        script['ready'] = True
        item = {'design_files': [], 'top': 't', 'testbench': {'name': 'tb.sv', 'content': 'x'}}
        assert one.score([item])[0]['reward'] == 1.5
        keys = [k for _, k in seen]
        assert len(keys) == 3 and len(set(keys)) == 1 and keys[0]
        # Two services: the failing one is skipped until /readyz passes again.
        seen.clear()
        script['steps'] = ['503']
        script['ready'] = False
        two = RewardClient(
            [f'http://127.0.0.1:{first.server_port}', f'http://127.0.0.1:{second.server_port}'], retries=5, max_backoff_s=0.05
        )
        two.down_s = 0.01
        assert two.score([item])[0]['reward'] == 1.5
        assert [p for p, _ in seen] == [first.server_port, second.server_port]
        assert seen[0][1] == seen[1][1]
        for _ in range(3):
            two.score([item])
        assert [p for p, _ in seen].count(first.server_port) == 1
        script['ready'] = True
        time.sleep(0.1)
        for _ in range(3):
            two.score([item])
        assert [p for p, _ in seen].count(first.server_port) > 1
    finally:
        first.shutdown()
        second.shutdown()


def test_a_down_url_is_probed_once_when_many_threads_want_it():
    """Sixteen threads asking for a URL at once while the only service is down and its probe is due:
    one /readyz probe, not sixteen (a trainer's reward workers all hit a recovering service)."""
    probes: list[str] = []

    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            probes.append(self.path)
            time.sleep(0.2)  # a slow probe: every thread arrives while it is out
            self.send_response(503)
            self.send_header('Content-Length', '2')
            self.end_headers()
            self.wfile.write(b'{}')

    srv = ThreadingHTTPServer(('127.0.0.1', 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        url = f'http://127.0.0.1:{srv.server_port}'
        c = RewardClient([url])
        c.down_s = 0.01
        c._mark_down(url)
        time.sleep(0.05)
        start = threading.Barrier(16)

        def ask():
            start.wait()
            assert c._next_url() == url

        threads = [threading.Thread(target=ask) for _ in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert probes == ['/readyz']
        assert c._down[url][1] == 1  # one failed probe counted, the next one backed off
    finally:
        srv.shutdown()
