"""Decoder processes: the image decoding of the loader pipeline, free of the GIL.

Why processes. Pillow parses a JPEG's markers and drives its decoder in Python, holding the GIL for
about 40% of an image's decode; loader threads therefore scaled 1.5x from one to two cores (3.0k images/s
at 224x224 here) where processes scale 2x (4.7k-5.0k), and tf.data's C++ threads sit in between.

A dataset's `map` (augmentation) runs in the decoders too, right after a batch is decoded, when it keeps
the shapes of the images and labels (`LoaderPipeline` probes it on one sample first, and then hands each
decoder whole batches in turn); each decoder draws its own random numbers (`utils.rng.set_process_stream`).

How. `DecoderProcesses` forks one process per loader (the -ll:cpu processors the pipeline splits a batch
over) after the ring of batch buffers exists in memory shared with them (`Runtime.allocate(...,
shared=True)`). A `load_batch` task, on its CPU processor, hands its share of a batch to its decoder
(`submit`: the slot, the first row in the slot, the sample rows) and returns at once, so the processor
stays free for the step's tasks while the decoder works on another core; the task's ordering after the
step that last read the slot is what keeps a refill from overwriting a batch still being read. The
program thread collects the decoders' replies in `wait(tag, decoders)` when it takes the batch, which is
the data wait that the stall report measures. A reply carries the decode seconds, or the error: a
`DataError` (an undecodable file) is raised again in the program with its message, and a decoder that
died is named with its exit status.

Lifetime. Decoders ignore SIGINT (Ctrl-C stops the program, which then closes them), end on `close()`,
and end by themselves when the program dies (their command pipe reads EOF). Forking is used only on
Linux, where the child runs nothing but this module's loop, Pillow and the dataset's map (no lock another
thread may hold; a map must not use the runtime, and our layers called on arrays do not), and only for
memory the children can share; elsewhere the pipeline decodes in its loader threads.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
import warnings
import weakref
from multiprocessing.connection import Connection, Pipe

import numpy as np

from flexflow_keras.errors import DataError
from flexflow_keras.utils import rng

log = logging.getLogger("flexflow_keras")


def processes_supported() -> bool:
    """Whether decoders can be forked here (Linux; not in a forked decoder itself)."""
    return sys.platform.startswith("linux") and hasattr(os, "fork") and not _IN_CHILD


_IN_CHILD = False


def _serve(conn: Connection, reader, out: list, transform) -> None:
    """A decoder's loop: (tag, slot, lo, rows, labels or None) -> (tag, seconds, None) or (tag, 0, (kind,
    message)). With labels, the dataset's map runs on the decoded share and both are written back."""
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        tag, slot, lo, rows, labels = msg
        t0, stage = time.perf_counter(), "decode"
        try:
            xs, ys = out[slot]
            x = xs[lo:lo + len(rows)]
            reader.read_x(rows, x)
            if labels is not None:
                stage = "map"
                new_x, new_y = transform([x], list(labels))
                x[...] = new_x[0]
                for dst, a in zip(ys, new_y, strict=True):
                    dst[lo:lo + len(rows)] = a
            reply = (tag, time.perf_counter() - t0, None)
        except DataError as e:
            reply = (tag, 0.0, ("DataError", str(e)))
        except Exception as e:  # noqa: BLE001 - any failure of a decode or a map is reported to the program
            reply = (tag, 0.0, (type(e).__name__ + (" in the dataset's map" if stage == "map" else ""), str(e)))
        conn.send(reply)


def _child_main(k: int, conn: Connection, others: list[Connection], reader, out, transform) -> None:
    global _IN_CHILD
    _IN_CHILD = True
    status = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        for c in others:  # the program's ends of every pipe: EOF must reach each decoder when it dies
            c.close()
        rng.set_process_stream(k + 1)  # random maps draw apart from the sibling decoders
        _serve(conn, reader, out, transform)
    except BaseException:  # noqa: BLE001 - a forked child must never return into the program's stack
        status = 1
    finally:
        os._exit(status)


class DecoderProcesses:
    """`count` forked decoders writing into the shared arrays `out` (one per ring slot).

    Args:
        reader: the source, with ``read_x(rows, out)`` (an `ImageFolderSource`).
        out: per ring slot, (the shared (batch, H, W, C) inputs, [the shared label arrays]).
        count: decoders to start (one per loader point).
        transform: the dataset's map, ``fn(xs, ys) -> (xs, ys)`` keeping shapes, run by a decoder on its
            share when `submit` passes the share's labels.
    """

    def __init__(self, reader, out: list, count: int, transform=None):
        from PIL import Image

        Image.init()  # register every plugin now: the children must not import
        self.count = int(count)
        self._conns: list[Connection] = []
        self._locks = [threading.Lock() for _ in range(self.count)]
        self._replies: list[dict] = [{} for _ in range(self.count)]
        self.pids: list[int] = []
        ends = [Pipe(duplex=True) for _ in range(self.count)]
        mine = [a for a, _ in ends]
        for k, (_, theirs) in enumerate(ends):
            with warnings.catch_warnings():  # 3.12+ warns of forking with threads: the child runs _serve only
                warnings.simplefilter("ignore", DeprecationWarning)
                pid = os.fork()
            if pid == 0:
                _child_main(k, theirs, mine + [t for j, (_, t) in enumerate(ends) if j != k], reader, out,
                            transform)
            self.pids.append(pid)
            theirs.close()
        self._conns = mine
        self._finalizer = weakref.finalize(self, _shutdown, list(self._conns), list(self.pids))

    def submit(self, k: int, tag, slot: int, lo: int, rows: np.ndarray, labels=None) -> None:
        """Hand rows `rows` of the source to decoder k, into slot `slot` from row `lo` (any thread); with
        `labels` (the share's label arrays), the decoder also runs the map and writes the labels."""
        with self._locks[k]:
            try:
                self._conns[k].send((tag, slot, lo, rows, labels))
            except (OSError, ValueError) as e:
                raise DataError(self._died(k, f"could not take its share of a batch ({e})")) from None

    def wait(self, tag, decoders) -> float:
        """Wait for the decoders numbered in `decoders` to finish `tag`; the longest decode's seconds.

        Raises:
            DataError: a decoder's error, or a decoder that died.
        """
        longest = 0.0
        for k in decoders:
            seconds, err = self._reply(k, tag)
            if err is not None:
                kind, message = err
                raise DataError(message if kind == "DataError" else
                                f"The image decoder process {k} failed: {kind}: {message}") from None
            longest = max(longest, seconds)
        return longest

    def ready(self, tag, decoders) -> bool:
        """Whether the decoders numbered in `decoders` have replied for `tag` (never blocks)."""
        for k in decoders:
            while tag not in self._replies[k] and self._conns[k].poll(0):
                self._read(k)
            if tag not in self._replies[k]:
                return False
        return True

    def discard(self, tag, decoders, deadline: float | None = None) -> None:
        """Wait for `tag`'s decodes and forget them (a batch left unread: its slot is written no more).

        With `deadline` (a `time.monotonic()` value; the pipeline's close passes one), stop waiting then:
        a Ctrl-C that interrupted the reader of `tag` may have taken a reply (or lost it between the pipe
        and `_replies`), and a reply that never comes must not keep the run from ending; the decoders
        are ended right after."""
        for k in decoders:
            if deadline is None:
                self._reply(k, tag)
                continue
            replies, conn = self._replies[k], self._conns[k]
            while tag not in replies:
                left = deadline - time.monotonic()
                if left <= 0 or not conn.poll(left):
                    log.debug("decoder %d: no reply for %r by the close's deadline; not waiting longer", k, tag)
                    break
                self._read(k)
            replies.pop(tag, None)

    def _reply(self, k: int, tag):
        while tag not in self._replies[k]:
            self._read(k)
        return self._replies[k].pop(tag)

    def _read(self, k: int) -> None:
        try:
            got, seconds, err = self._conns[k].recv()
        except (EOFError, OSError):
            raise DataError(self._died(k, "ended while decoding a batch")) from None
        self._replies[k][got] = (seconds, err)

    def _died(self, k: int, what: str) -> str:
        pid = self.pids[k]
        done, status, deadline = 0, 0, time.monotonic() + 2.0
        while True:  # its pipe closes a moment before the kernel reports its exit
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done, status = pid, 0
            if done == pid or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        how = (f"exit status {os.waitstatus_to_exitcode(status)}" if done == pid else "still running")
        return (f"The image decoder process {k} (pid {pid}) {what}: {how}. The loader pipeline cannot go on; "
                f"if memory ran out, lower -b/--batch-size or -ll:cpu.")

    def close(self) -> None:
        """End the decoders and reap them."""
        self._finalizer()


def _shutdown(conns: list[Connection], pids: list[int]) -> None:
    for c in conns:
        try:
            c.send(None)
        except (OSError, ValueError):
            pass
        c.close()
    deadline = time.monotonic() + 5.0
    for pid in pids:
        while True:
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                break
            if done == pid:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                break
            time.sleep(0.002)
