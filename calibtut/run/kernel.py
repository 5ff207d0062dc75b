"""The kernel manager of the runner: a kernel is shut down only once its running cell has answered.

papermill (through nbclient) shuts the kernel down when a run ends, and also
when the runner itself is stopped in the middle of a cell (Ctrl-C, SIGTERM).
jupyter_client's shutdown interrupts the kernel and at once asks it to shut
down; the interrupted cell then ends while the kernel is closing its sockets,
and ipykernel prints a ``zmq.error.ZMQError`` traceback to the terminal when
it tries to send that cell's reply. :class:`SettlingKernelManager` interrupts
the kernel first and waits until the kernel has answered its running cell
(the interrupted cell's ``finally`` blocks run: a sweep closes its Dask
cluster), and only then asks it to shut down. A kernel that does not answer
within ``settle_s`` seconds (10 by default), or a second Ctrl-C or SIGTERM
while the runner waits, kills it at once.

The runner names it to papermill by its import string,
``"calibtut.run.kernel.SettlingKernelManager"``, so that importing
:mod:`calibtut.run` does not need ``jupyter_client`` (the ``run`` extra).
"""

from __future__ import annotations

import asyncio
import os
import queue
import signal
import threading
import time
from contextlib import contextmanager

from jupyter_client import AsyncKernelManager
from traitlets import Float

__all__ = ["SettlingKernelManager"]


class SettlingKernelManager(AsyncKernelManager):
    """An ``AsyncKernelManager`` that lets an interrupted cell finish answering before shutting down.

    Examples
    --------
    >>> manager = SettlingKernelManager(kernel_name="python3", settle_s=5)
    >>> manager.settle_s, manager.has_kernel
    (5.0, False)
    """

    settle_s = Float(
        10.0, config=True,
        help="Seconds to wait for an interrupted cell to answer before the kernel is killed.",
    )

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._own_handlers = {signum: signal.getsignal(signum) for signum in _STOP_SIGNALS}

    async def start_kernel(self, **kw):
        """Start the kernel; from then on SIGINT and SIGTERM raise ``KeyboardInterrupt`` through the event loop.

        papermill waits for a cell inside an event loop that may block in its
        selector with no timer to wake it. A signal that the operating system
        hands to another thread of the process (jupyter_client's and zmq's)
        then stays pending, and Ctrl-C does nothing until the cell ends. The
        loop's own signal handling wakes it through a file descriptor whichever
        thread gets the signal; the handler raises ``KeyboardInterrupt`` in the
        main thread, and the kernel is shut down by :meth:`shutdown_kernel`.
        """
        await super().start_kernel(**kw)
        if threading.current_thread() is threading.main_thread():
            loop = asyncio.get_running_loop()
            for signum in _STOP_SIGNALS:
                loop.add_signal_handler(signum, _raise_interrupt, signum)

    async def interrupt_kernel(self):
        """Interrupt the kernel process alone, not its process group.

        jupyter_client signals the kernel's whole process group, which holds
        the workers of a local Dask cluster that a sweep started: they are not
        the running cell, log tracebacks when interrupted, and close with the
        kernel. A kernel interrupted by message (its kernelspec says so) or on
        a system without signals is interrupted the usual way.
        """
        process = getattr(self.provisioner, "process", None)
        if os.name == "posix" and process is not None and self.kernel_spec.interrupt_mode == "signal":
            process.send_signal(signal.SIGINT)
        else:
            await super().interrupt_kernel()

    async def shutdown_kernel(self, now=False, restart=False):
        """Interrupt the running cell, wait for the kernel to answer it, then shut the kernel down.

        Parameters
        ----------
        now : bool, default False
            Kill the kernel at once (jupyter_client's meaning); also what
            happens when the kernel does not answer within ``settle_s``
            seconds, or on a second Ctrl-C or SIGTERM while waiting.
        restart : bool, default False
            Passed on to ``AsyncKernelManager.shutdown_kernel``.
        """
        self._restore_own_handlers()
        await _cancel_stale_cells()
        if not now and self.has_kernel and await self.is_alive():
            await self.interrupt_kernel()
            now = not await self._answered()
        await super().shutdown_kernel(now=now, restart=restart)

    def _restore_own_handlers(self):
        """Give SIGINT and SIGTERM back to the handlers the process had before :meth:`start_kernel`."""
        if threading.current_thread() is not threading.main_thread():
            return
        loop = asyncio.get_running_loop()
        for signum, handler in self._own_handlers.items():
            loop.remove_signal_handler(signum)
            if handler is not None:
                signal.signal(signum, handler)

    async def _answered(self):
        """True once the kernel replies to an empty cell queued behind the one it was running."""
        hurry = asyncio.Event()
        with _signals_set(hurry):
            client = self.client()
            client.start_channels(iopub=False, stdin=False, hb=False, control=False)
            try:
                msg_id = client.execute("", silent=True, store_history=False)
                deadline = time.monotonic() + self.settle_s
                while not hurry.is_set() and time.monotonic() < deadline and await self.is_alive():
                    try:
                        reply = await client.get_shell_msg(timeout=0.2)
                    except queue.Empty:
                        continue
                    if reply["parent_header"].get("msg_id") == msg_id:
                        return True
                return False
            finally:
                client.stop_channels()


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _raise_interrupt(signum):
    raise KeyboardInterrupt(f"signal {signum}")


async def _cancel_stale_cells():
    """Cancel and collect nbclient's wait for a cell that a ``KeyboardInterrupt`` left pending.

    Left pending, that wait runs again while the kernel shuts down, sees the
    kernel gone and logs "Kernel died" with a traceback.
    """
    current = asyncio.current_task()
    stale = [task for task in asyncio.all_tasks() if task is not current and not task.done()
             and task.get_coro().__qualname__.startswith("NotebookClient.")]
    for task in stale:
        task.cancel()
    await asyncio.gather(*stale, return_exceptions=True)


@contextmanager
def _signals_set(event):
    """While open, SIGINT and SIGTERM set ``event`` instead of calling their handlers (in the main thread)."""
    if threading.current_thread() is not threading.main_thread():  # only the main thread gets signals
        yield
        return
    loop = asyncio.get_running_loop()
    previous = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    for signum in previous:
        loop.add_signal_handler(signum, event.set)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            loop.remove_signal_handler(signum)
            signal.signal(signum, handler)  # remove_signal_handler leaves SIG_DFL for SIGTERM
