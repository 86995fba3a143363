"""kernels/shuffle_buffer.py against the buffer loop written in plain Python (TensorFlow's shuffle buffer)."""

import numpy as np
import pytest

from kernels.shuffle_buffer import buffer_order


def _reference(draws, size: int) -> list:
    n = len(draws)
    out, buffer, waiting = [], list(range(size)), size
    for t in range(n):
        j = int(draws[t] * len(buffer))
        out.append(buffer[j])
        if waiting < n:
            buffer[j], waiting = waiting, waiting + 1
        else:
            buffer[j] = buffer[-1]
            buffer.pop()
    return out


@pytest.mark.parametrize("n,size", [(2, 1), (10, 1), (10, 9), (100, 7), (1000, 64)])
def test_matches_the_python_loop(n, size):
    for seed in range(5):
        draws = np.random.default_rng(seed).random(n)
        got = buffer_order(draws, size)
        assert got.dtype == np.int64
        assert got.tolist() == _reference(draws.tolist(), size)
        assert sorted(got.tolist()) == list(range(n))


def test_a_buffer_of_one_keeps_the_order():
    assert buffer_order(np.random.default_rng(0).random(6), 1).tolist() == list(range(6))


def test_refuses_a_size_outside_the_data():
    with pytest.raises(ValueError, match="1 <= size < len"):
        buffer_order(np.zeros(4), 4)
    with pytest.raises(ValueError, match="1 <= size < len"):
        buffer_order(np.zeros(4), 0)
