"""Peak memory of this process (or a child) sampled from /proc: RSS and anonymous RSS."""

from __future__ import annotations

import threading
from pathlib import Path


def mem(pid: int | str = 'self') -> tuple[int, int]:
    """(VmRSS, RssAnon) in bytes."""
    rss = anon = 0
    try:
        for line in Path(f'/proc/{pid}/status').read_text().splitlines():
            if line.startswith('VmRSS:'):
                rss = int(line.split()[1]) * 1024
            elif line.startswith('RssAnon:'):
                anon = int(line.split()[1]) * 1024
    except (FileNotFoundError, ProcessLookupError):
        pass
    return rss, anon


def tree_mem(pid: int) -> tuple[int, int]:
    """Summed over a process and its descendants."""
    pids = [pid]
    try:
        import psutil

        pids += [c.pid for c in psutil.Process(pid).children(recursive=True)]
    except Exception:
        pass
    r = a = 0
    for p in pids:
        x, y = mem(p)
        r += x
        a += y
    return r, a


class PeakWatcher:
    """Samples every `interval` s; `rss_peak`, `anon_peak`, and growth over the start values."""

    def __init__(self, pid: int | None = None, interval: float = 0.01):
        self.pid, self.interval = pid, interval
        self._stop = threading.Event()

    def _read(self) -> tuple[int, int]:
        return tree_mem(self.pid) if self.pid else mem()

    def __enter__(self) -> PeakWatcher:
        self.rss0, self.anon0 = self._read()
        self.rss_peak, self.anon_peak = self.rss0, self.anon0
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            r, a = self._read()
            self.rss_peak = max(self.rss_peak, r)
            self.anon_peak = max(self.anon_peak, a)
            self._stop.wait(self.interval)

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._t.join()
        r, a = self._read()
        self.rss_peak = max(self.rss_peak, r)
        self.anon_peak = max(self.anon_peak, a)

    @property
    def rss_growth(self) -> int:
        return self.rss_peak - self.rss0

    @property
    def anon_growth(self) -> int:
        return self.anon_peak - self.anon0
