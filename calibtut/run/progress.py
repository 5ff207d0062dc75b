"""One progress report per sweep: a bar in a notebook, text lines in the runner's log."""

from __future__ import annotations

import os
import time
from pathlib import Path

from calibtut._validation import check_int

__all__ = ["LOG_EVERY_S", "PROGRESS_LOG_ENV", "SweepProgress"]

#: Environment variable through which the runner names the file it echoes to its terminal.
PROGRESS_LOG_ENV = "CALIBTUT_PROGRESS_LOG"
#: Seconds between two lines written to the runner's log (the last line is always written).
LOG_EVERY_S = 10.0


class SweepProgress:
    """Counts finished, failed and running tasks; shows a bar and/or writes log lines.

    Parameters
    ----------
    total : int
        Tasks in the sweep, >= 0.
    done : int
        Tasks already finished before this run (read back from the store), in [0, total].
    desc : str
        Label.
    bar : bool
        Show a tqdm bar (in a notebook or terminal).
    slots : int
        Tasks that can run at once (1 when serial), for the "running" count; >= 1.

    Examples
    --------
    >>> p = SweepProgress(4, 1, "demo", bar=False, slots=2)
    >>> p.finished(ok=True); p.finished(ok=False)
    >>> p.line()[:38]
    'demo: 3/4 done (1 failed), 1 running |'
    >>> p.close()
    """

    def __init__(self, total, done, desc, *, bar, slots):
        total = check_int(total, "total", minimum=0)
        done = check_int(done, "done", minimum=0, maximum=total)
        slots = check_int(slots, "slots", minimum=1)
        self.total, self.done, self.failed, self.desc, self.slots = total, done, 0, desc, slots
        self.start_done = done
        self.started = time.monotonic()
        self.last_log = -float("inf")
        log = os.environ.get(PROGRESS_LOG_ENV)
        self.log = Path(log) if log else None
        self.bar = None
        if bar:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, initial=done, desc=desc)
            self._postfix()
        self._log(force=True)

    @property
    def running(self):
        return min(self.slots, self.total - self.done)

    def _postfix(self):
        self.bar.set_postfix(failed=self.failed, running=self.running, refresh=False)

    def line(self):
        """The current state as one line of text, with elapsed time, rate and ETA."""
        from tqdm import tqdm

        failed = f" ({self.failed} failed)" if self.failed else ""
        meter = tqdm.format_meter(self.done - self.start_done, self.total - self.start_done,
                                  time.monotonic() - self.started, ncols=0, unit="task")
        return f"{self.desc}: {self.done}/{self.total} done{failed}, {self.running} running | {meter}"

    def _log(self, force=False):
        if self.log is None or (not force and time.monotonic() - self.last_log < LOG_EVERY_S):
            return
        self.last_log = time.monotonic()
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "a", encoding="utf-8") as handle:
            handle.write(self.line() + "\n")

    def finished(self, *, ok):
        """Count one task that finished (``ok``) or failed."""
        self.done += 1
        self.failed += not ok
        if self.bar is not None:
            self._postfix()
            self.bar.update(1)
        self._log(force=self.done == self.total)

    def close(self):
        """Close the bar and write the final line."""
        if self.bar is not None:
            self.bar.close()
        self._log(force=True)
