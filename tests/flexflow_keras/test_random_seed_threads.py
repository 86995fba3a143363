"""`keras.random.SeedGenerator.next` and the global generator behind unseeded draws are safe to call from
several threads (a PyDataset's ``workers`` run ``__getitem__`` in a thread pool; an augmentation there draws
unseeded): every call takes a seed of its own. Before, ``next`` incremented its count and then read it back
in two steps, so two threads could both read the same count and draw identical numbers."""

import sys
import threading

from flexflow_keras import random as ff_random
from flexflow_keras import utils

_THREADS, _CALLS = 8, 20_000


def _hammer(fn) -> list[int]:
    out: list[list[int]] = [[] for _ in range(_THREADS)]

    def work(k):
        for _ in range(_CALLS):
            out[k].append(fn())

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible, so a race shows within the run
    try:
        threads = [threading.Thread(target=work, args=(k,)) for k in range(_THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    return [v for seeds in out for v in seeds]


def test_seed_generator_gives_each_thread_its_own_seeds():
    gen = ff_random.SeedGenerator(3)
    seeds = _hammer(gen.next)
    assert len(set(seeds)) == len(seeds) == _THREADS * _CALLS
    assert gen._count == _THREADS * _CALLS


def test_global_generator_gives_each_thread_its_own_seeds():
    utils.set_random_seed(11)  # the global generator is made anew by the first thread to draw
    seeds = _hammer(lambda: ff_random._op_seed(None)[0])
    assert len(set(seeds)) == len(seeds) == _THREADS * _CALLS
    utils.set_random_seed(11)
    again = _hammer(lambda: ff_random._op_seed(None)[0])
    assert sorted(again) == sorted(seeds)  # one generator after the re-seed, whichever thread made it
