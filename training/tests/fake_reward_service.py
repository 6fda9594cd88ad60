"""A fake reward service that misbehaves on every endpoint (test_service_faults.py): each distinct request
(endpoint + body) is first answered by its endpoint's faults in turn (the connection reset with no
answer, HTTP 500, for /v1/score also an answer slower than the client's timeout), then correctly; some
requests fail for good (`PERMANENT`), so the samples that need them stay without an answer.

Replies carry their (task, round, member) as `tb_T_R_J` (trl_ddp_worker.py `service` mode), so whether a
request fails for good depends on what it asks, never on which rank asks or in what order.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TRANSIENT = {
    '/v1/first-turn': ['reset', '500'],
    '/v1/parse-reply': ['reset', '500'],
    '/v1/score': ['reset', '500', 'slow'],
    '/v1/refine-prompt': ['reset', '500'],
}
SLOW_S = 3.0  # longer than the client's timeout in the test (2 s)
MARK = re.compile(r'tb_(\d+)_(\d+)_(\d+)')


def permanent(path: str, body: dict) -> str | None:
    """The fault a request gets every time, or None. Task 0 (top `ma`): no first turn. Task 1: round 0
    member 1's reply has no parse; round 1's group has no score. Task 2: no feedback turn."""
    if path == '/v1/first-turn' and body.get('top') == 'ma':
        return '500'
    if path == '/v1/parse-reply' and 'tb_1_0_1;' in body.get('reply', ''):
        return 'reset'
    if path == '/v1/score' and any('tb_1_1_' in t['content'] for t in body.get('testbenches', [])):
        return '500'
    if path == '/v1/refine-prompt' and 'tb_2_' in body.get('reply', ''):
        return '500'
    return None


#: the rows those faults leave without an answer in one step of tasks 0..2 x 2 rounds x group 4: task 0's
#: 8 (no prompt), task 1's round-0 member 1 and its 4 round-1 members, task 2's 4 round-1 members
EXPECTED_MASKED = 8 + 1 + 4 + 4


class FakeService:
    def __init__(self):
        self.lock = threading.Lock()
        self.tries: dict[tuple[str, str], int] = {}
        self.served: set[tuple[str, str]] = set()  # (endpoint, fault) that happened
        svc = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, code: int, body) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):  # /readyz, /v1/health
                self._send(200, {'status': 'ok'})

            def do_POST(self):
                raw = self.rfile.read(int(self.headers['Content-Length']))
                body = json.loads(raw)
                fault = svc.fault(self.path, raw.decode(), body)
                if fault == 'reset':
                    self.connection.close()
                    return
                if fault == '500':
                    return self._send(500, {'error': 'internal', 'message': 'injected'})
                if fault == 'slow':
                    time.sleep(SLOW_S)
                self._send(200, svc.answer(self.path, body))

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):  # a client that timed out and left: not an error here
                pass

        self.srv = Server(('127.0.0.1', 0), H)
        self.url = f'http://127.0.0.1:{self.srv.server_port}'
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def fault(self, path: str, key: str, body: dict) -> str | None:
        with self.lock:
            f = permanent(path, body)
            if f is None:
                n = self.tries.get((path, key), 0)
                self.tries[(path, key)] = n + 1
                seq = TRANSIENT.get(path, [])
                f = seq[n] if n < len(seq) else None
            if f:
                self.served.add((path, f))
            return f

    def answer(self, path: str, body: dict):
        if path == '/v1/first-turn':
            return {'messages': [{'role': 'system', 'content': 's'}, {'role': 'user', 'content': f'Write a testbench for {body["top"]}.'}]}
        if path == '/v1/parse-reply':
            m = re.search(r'```(?:systemverilog)?\n(.*?)```', body['reply'], re.S)
            return {'parsed': {'status': 'success', 'testbench': m.group(1), 'filename': 'tb.sv'} if m else {'status': 'unparsable'}}
        if path == '/v1/score':
            res = []
            for t in body['testbenches']:
                m = MARK.search(t['content'])
                c = 0.1 * (int(m.group(3)) + 1) if m else 0.0
                res.append({'status': 'success', 'reward': 1.0 + c, 'coverage': c, 'passed': False, 'top': body['top']})
            return {'results': res}
        if path == '/v1/refine-prompt':
            return {'content': 'Coverage is low: improve it.', 'parsed': {}}
        return {'error': 'not_found'}

    def close(self) -> None:
        self.srv.shutdown()
        self.srv.server_close()
