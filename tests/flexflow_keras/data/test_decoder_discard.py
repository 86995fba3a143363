"""A closing pipeline's wait for decoder replies is bounded (flexflow_keras/data/decoders.py `discard`)."""

from __future__ import annotations

import threading
import time
from multiprocessing import Pipe

from flexflow_keras.data.decoders import DecoderProcesses


def _pool():
    # the reply side of a decoder without forking one: `theirs` plays the decoder
    mine, theirs = Pipe(duplex=True)
    pool = DecoderProcesses.__new__(DecoderProcesses)
    pool._conns = [mine]
    pool._replies = [{}]
    pool._locks = [threading.Lock()]
    pool.pids = [0]
    return pool, theirs


def test_a_reply_already_taken_does_not_block_a_deadline_discard():
    """A Ctrl-C in the batch's reader took the reply: the closing discard gives up at its deadline."""
    pool, _theirs = _pool()
    t0 = time.monotonic()
    pool.discard(("g", 3), [0], deadline=t0 + 0.3)
    assert 0.25 <= time.monotonic() - t0 < 5.0


def test_a_deadline_discard_takes_the_reply_when_it_comes():
    pool, theirs = _pool()
    theirs.send((("g", 2), 0.1, None))  # another batch's reply first
    threading.Timer(0.1, lambda: theirs.send((("g", 3), 0.2, None))).start()
    t0 = time.monotonic()
    pool.discard(("g", 3), [0], deadline=t0 + 5.0)
    assert time.monotonic() - t0 < 4.0
    assert pool._replies[0] == {("g", 2): (0.1, None)}  # kept for its own reader; ("g", 3) forgotten


def test_an_unbounded_discard_waits_for_the_reply():
    pool, theirs = _pool()
    threading.Timer(0.2, lambda: theirs.send((("g", 1), 0.0, None))).start()
    t0 = time.monotonic()
    pool.discard(("g", 1), [0])
    assert time.monotonic() - t0 >= 0.15 and pool._replies[0] == {}
