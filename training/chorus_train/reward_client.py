"""Client of the TypeScript reward service (`chorus serve`, docs/reward-service.md).

The Python side never simulates, builds prompts or feedback turns itself: it asks the service for
the first turn (`/v1/first-turn`), the parse of a reply and the feedback turn
(`/v1/refine-prompt`), and the score (`/v1/score`, batched as `{items: [...]}`, or one design's
candidates as a group, `{..., testbenches: [...]}`).

    with RewardClient.start() as rc:          # starts `node dist/cli.js serve --port 0`
        msgs = rc.first_turn(design_files, top)
    rc = RewardClient(['http://10.0.0.5:8080', 'http://10.0.0.6:8080'])   # round-robin

429 answers are retried after their Retry-After (or `retry_after_s`), with jitter. Connection
errors (refused, reset), timeouts, answers cut off mid-body and 502/503/504 (draining, or a service
failure such as a killed simulation or a full disk: never the testbench's fault) take that URL out
of the rotation until its `/readyz` answers 200 again, and the request goes to the next URL after a
backoff with full jitter; any other 5xx (an internal error) is tried again, on the next URL, after
a backoff. This holds for every endpoint, not only `/v1/score`. Every try of one request carries
the same `Idempotency-Key`, so a service that already answered it replays that answer instead of
scoring twice. What still has no answer after `retries` is raised; the training environment
(envs.ServiceEnv) turns that into a masked sample, never a dead rank.
"""

from __future__ import annotations

import http.client
import itertools
import json
import os
import random
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
LISTEN_RE = re.compile(r'listening on (http://\S+)')


class ServiceError(RuntimeError):
    def __init__(self, status: int, body: Any, url: str):
        msg = body.get('message') if isinstance(body, dict) else str(body)
        super().__init__(f'{url}: HTTP {status}: {msg}')
        self.status = status
        self.body = body


class RewardClient:
    def __init__(self, urls: str | list[str], timeout_s: float = 600.0, retries: int = 8, max_backoff_s: float = 30.0):
        self.urls = [u.rstrip('/') for u in ([urls] if isinstance(urls, str) else urls)]
        if not self.urls:
            raise ValueError('no reward service URL')
        self._rr = itertools.cycle(range(len(self.urls)))
        self._lock = threading.Lock()
        self.timeout_s = timeout_s
        self.retries = retries
        self.max_backoff_s = max_backoff_s
        self.proc: subprocess.Popen | None = None
        self.stats = {'requests': 0, 'retries_429': 0, 'retries_conn': 0, 'retries_5xx': 0}
        # URL -> (time of the next /readyz probe, failed probes): out of the rotation until a probe passes.
        self._down: dict[str, tuple[float, int]] = {}
        self.down_s = 1.0

    # -- lifecycle -----------------------------------------------------------------------------
    @classmethod
    def start(
        cls,
        cli: str | Path | None = None,
        workers: int | None = None,
        extra_args: list[str] | None = None,
        startup_timeout_s: float = 60.0,
        node: str = 'node',
        **kw,
    ) -> RewardClient:
        """Start `node dist/cli.js serve --port 0 --host 127.0.0.1` in its own process group and
        connect to the URL it prints. `close()` (or the context manager) kills the group."""
        cli = Path(cli) if cli else REPO / 'dist' / 'cli.js'
        if not cli.exists():
            raise FileNotFoundError(f'{cli} is missing: build the CLI first (node scripts/build.mjs --cli-only)')
        args = [node, str(cli), 'serve', '--port', '0', '--host', '127.0.0.1']
        if workers:
            args += ['--workers', str(workers)]
        args += extra_args or []
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, cwd=str(REPO))
        url = None
        lines: list[str] = []
        deadline = time.time() + startup_timeout_s

        def read() -> None:
            nonlocal url
            assert proc.stdout
            for line in proc.stdout:
                lines.append(line)
                m = LISTEN_RE.search(line)
                if m:
                    url = m.group(1)
                    return

        t = threading.Thread(target=read, daemon=True)
        t.start()
        t.join(max(0.0, deadline - time.time()))
        if url is None:
            _kill_group(proc)
            err = proc.stderr.read() if proc.stderr else ''
            raise RuntimeError(f'chorus serve did not start: {"".join(lines)}{err}'.strip())
        # drain the pipes so the server never blocks on a full pipe
        for stream in (proc.stdout, proc.stderr):
            threading.Thread(target=lambda s=stream: [None for _ in s], daemon=True).start()
        c = cls(url, **kw)
        c.proc = proc
        return c

    def close(self) -> None:
        if self.proc is not None:
            _kill_group(self.proc)
            self.proc = None

    def __enter__(self) -> RewardClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:  # best effort
        try:
            self.close()
        except Exception:
            pass

    # -- HTTP ----------------------------------------------------------------------------------
    def _next_url(self) -> str:
        """The next URL in the rotation that is not down; a down one whose probe time has come is
        probed (GET /readyz, or /v1/health on an older service) and comes back on 200. All down: the
        next in turn anyway (the caller has backed off)."""
        with self._lock:
            i = next(self._rr)
        # Round robin from the next URL in turn; the others only when it is down.
        candidates = [self.urls[(i + k) % len(self.urls)] for k in range(len(self.urls))]
        now = time.time()
        for url in candidates:
            with self._lock:
                down = self._down.get(url)
                if down is None:
                    return url
                at, fails = down
                due = at <= now
                if due:
                    # Claimed before the probe: the next probe time moves on now, so the other
                    # threads pass this URL by instead of probing it at the same moment.
                    self._down[url] = (now + min(30.0, self.down_s * 2 ** (fails + 1)), fails + 1)
            if due and self._probe(url):
                with self._lock:
                    self._down.pop(url, None)
                return url
        return candidates[0]

    def _probe(self, url: str) -> bool:
        for path in ('/readyz', '/v1/health'):
            try:
                with urllib.request.urlopen(url + path, timeout=5) as r:
                    return 200 <= r.status < 300
            except urllib.error.HTTPError as e:
                if e.code != 404:
                    return False
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                return False
        return False

    def _mark_down(self, url: str) -> None:
        with self._lock:
            if url not in self._down:
                self._down[url] = (time.time() + self.down_s, 0)

    def _backoff(self, failures: int) -> float:
        """Full jitter: uniform below 0.25 s * 2^failures, capped at max_backoff_s."""
        return random.uniform(0, min(self.max_backoff_s, 0.25 * 2 ** min(failures, 16)))

    def request(self, method: str, path: str, body: Any = None, idempotency_key: str | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        headers = {'Content-Type': 'application/json'} if data else {}
        # One key for every try of this request: the service replays an answer it already gave.
        if method == 'POST' and path == '/v1/score':
            headers['Idempotency-Key'] = idempotency_key or str(uuid.uuid4())
        failures = 0
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            base = self._next_url()
            url = base + path
            req = urllib.request.Request(url, data=data, method=method, headers=headers)
            self.stats['requests'] += 1
            try:
                with urllib.request.urlopen(req, timeout=self.timeout_s) as r:
                    return json.loads(r.read().decode())
            except urllib.error.HTTPError as e:
                raw = e.read().decode(errors='replace')
                try:
                    payload = json.loads(raw)
                except ValueError:
                    payload = raw
                if e.code == 429 and attempt < self.retries:
                    self.stats['retries_429'] += 1
                    wait = _retry_after(e.headers.get('Retry-After'), payload, self._backoff(attempt))
                    # Jitter: clients told the same Retry-After must not return in the same instant.
                    time.sleep(min(wait * random.uniform(0.5, 1.5), self.max_backoff_s))
                    last = ServiceError(e.code, payload, url)
                    continue
                if e.code in (502, 503, 504) and attempt < self.retries:
                    # Draining or a service failure (killed simulation, full disk): not the testbench's fault.
                    self.stats['retries_conn'] += 1
                    self._mark_down(base)
                    failures += 1
                    last = ServiceError(e.code, payload, url)
                    if all(u in self._down for u in self.urls):
                        time.sleep(self._backoff(failures))
                    continue
                if e.code >= 500 and attempt < self.retries:
                    # An internal error (500): the service is up (no reason to take it out of the rotation)
                    # but this try failed; every endpoint is a pure function of its body (and /v1/score
                    # replays by its Idempotency-Key), so trying again is safe.
                    self.stats['retries_5xx'] += 1
                    failures += 1
                    last = ServiceError(e.code, payload, url)
                    time.sleep(self._backoff(failures))
                    continue
                raise ServiceError(e.code, payload, url) from None
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError, ValueError, http.client.HTTPException) as e:
                # Unreachable (refused), reset, timed out, or an answer cut off mid-body (IncompleteRead,
                # or not JSON): try again.
                if attempt >= self.retries:
                    raise
                self.stats['retries_conn'] += 1
                self._mark_down(base)
                failures += 1
                last = e
                if all(u in self._down for u in self.urls):
                    time.sleep(self._backoff(failures))
        raise RuntimeError(f'reward service: gave up after {self.retries + 1} attempts: {last}')

    # -- endpoints -----------------------------------------------------------------------------
    def health(self) -> dict:
        return self.request('GET', '/v1/health')

    def first_turn(
        self,
        design_files: list[dict],
        top: str | None = None,
        instance: str | None = None,
        instruction: str | None = None,
        specs: list[dict] | None = None,
    ) -> list[dict]:
        body: dict[str, Any] = {'design_files': design_files}
        for k, v in (('top', top), ('instance', instance), ('instruction', instruction), ('specs', specs)):
            if v is not None:
                body[k] = v
        return self.request('POST', '/v1/first-turn', body)['messages']

    def refine_prompt(
        self, result: dict | None, reply: str | None = None, parse_status: str | None = None, parse_reason: str | None = None
    ) -> dict:
        """{content, parsed}: the feedback user turn for a reply and its score record."""
        body: dict[str, Any] = {}
        if reply is not None:
            body['reply'] = reply
        if parse_status is not None:
            body['parse_status'] = parse_status
        if parse_reason is not None:
            body['parse_reason'] = parse_reason
        if result is not None:
            body['result'] = result
        return self.request('POST', '/v1/refine-prompt', body)

    def parse_reply(self, reply: str) -> dict:
        """The service's parse of a raw model reply (`POST /v1/parse-reply`): {status, testbench,
        filename, source} or {status: 'unparsable', reason}."""
        return self.request('POST', '/v1/parse-reply', {'reply': reply})['parsed']

    def introspect(self, design_files: list[dict], top: str | None = None) -> dict:
        """The engine's reading of a design (`POST /v1/introspect`): {top_candidates, top, modules?}.
        A design that does not elaborate raises ServiceError (HTTP 422, with the engine's reason)."""
        body: dict[str, Any] = {'design_files': design_files}
        if top is not None:
            body['top'] = top
        return self.request('POST', '/v1/introspect', body)

    def score(self, items: list[dict]) -> list[dict]:
        """Score requests (each {design_files, top, testbench, coverage_target?, timeout_s?, ...}); one
        result per item, in order: a score record, or an {error, status, message} object."""
        if not items:
            return []
        if len(items) == 1:
            try:
                return [self.request('POST', '/v1/score', items[0])]
            except ServiceError as e:
                if isinstance(e.body, dict) and e.status in (422, 400):
                    return [{**e.body, 'status': e.status}]
                raise
        return self.request('POST', '/v1/score', {'items': items})['results']

    def score_group(self, design: dict, testbenches: list[dict]) -> list[dict]:
        """Several testbenches ({name, content}) of ONE design ({design_files, top, include_files?,
        defines?, params?, coverage_target?, timeout_s?, seed?, score?}) as group requests
        (`POST /v1/score` with `testbenches`, at most MAX_GROUP each): the service scores them
        together, each exactly as alone. One result per testbench, in order: a score record, or an
        {error, status, message} object (a design the service refuses answers so for every one)."""
        out: list[dict] = []
        for k in range(0, len(testbenches), MAX_GROUP):
            chunk = testbenches[k : k + MAX_GROUP]
            try:
                out += self.request('POST', '/v1/score', {**design, 'testbenches': chunk})['results']
            except ServiceError as e:
                if isinstance(e.body, dict) and e.status in (422, 400):
                    out += [{**e.body, 'status': e.status} for _ in chunk]
                else:
                    raise
        return out


#: The most testbenches one group request carries (src/core/service/requests.ts MAX_GROUP).
MAX_GROUP = 64


def _retry_after(header: str | None, payload: Any, default: float) -> float:
    for v in (header, payload.get('retry_after_s') if isinstance(payload, dict) else None):
        try:
            if v is not None:
                return max(0.0, float(v))
        except (TypeError, ValueError):
            pass
    return default


def _kill_group(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)


def connect(urls: list[str] | str | None, **kw) -> RewardClient:
    """A client for the given URL(s), or a freshly started local service when none is given."""
    if urls:
        return RewardClient(urls, **kw)
    return RewardClient.start(**kw)


def connect_for_job(urls: list[str] | str | None, start=None, timeout_s: float = 1800, **kw) -> RewardClient:
    """The reward service of a distributed run: the given URL(s) for every rank (one address for the job), or
    else ONE service per node, started by the node's first rank (LOCAL_RANK 0), its URL handed to the
    node's other ranks through the process group (accelerate's PartialState, which the trainer then
    reuses): not one `chorus serve` per rank, each with its own simulation workers on the same cores.
    Only the node's first rank owns (and on close stops) the service: close it after a barrier
    (trl_engine.end_distributed) so that no rank still asks it. `timeout_s`: the process group's collective
    timeout, the recipe's ddp_timeout_s (the group made here is the one the trainer keeps). `start`
    replaces RewardClient.start (tests)."""
    start = start or RewardClient.start
    world = int(os.environ.get('WORLD_SIZE', '1'))
    if urls or world == 1:
        return RewardClient(urls, **kw) if urls else start(**kw)
    from datetime import timedelta

    import torch.distributed as dist
    from accelerate import PartialState

    # the process group (gloo on CPU, NCCL on GPUs) as the trainer would create it, its timeout included:
    # TrainingArguments re-creates PartialState later but keeps an initialized process group as it is
    PartialState(timeout=timedelta(seconds=timeout_s))
    local_world = int(os.environ.get('LOCAL_WORLD_SIZE', world))
    node = int(os.environ.get('RANK', '0')) // local_world
    own, err = None, ''
    if int(os.environ.get('LOCAL_RANK', '0')) == 0:
        try:
            own = start(**kw)
        except Exception as e:  # noqa: BLE001 - every rank must reach the gather below, then all stop
            err = f'{type(e).__name__}: {e}'
    got: list = [None] * dist.get_world_size()
    dist.all_gather_object(got, (node, own.urls[0] if own else None, err))
    mine = [(u, e) for n, u, e in got if n == node and (u or e)]
    if not mine or not mine[0][0]:
        if own is not None:
            own.close()
        why = mine[0][1] if mine else 'no rank with LOCAL_RANK 0 on this node'
        raise SystemExit(
            f'node {node}: the reward service did not start ({why}); build it (node scripts/build.mjs --cli-only) or pass --service URL'
        )
    return own if own is not None else RewardClient(mine[0][0], **kw)
