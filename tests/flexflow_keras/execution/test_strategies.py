"""Every legal strategy computes the single-processor numbers: random strategies (sample, attribute and
parameter splits, partial sums, random placements over 2-4 CPU processors) on an MLP, a CNN with
BatchNorm, pooling and Dropout, an Embedding model and a two-branch model with Concatenate; losses and
weights after 3 training steps equal the one-processor run within 1e-5 relative, on both executors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategy_cases import MODELS, graph_of, random_strategy, train

_REFERENCE: dict = {}


def reference(name):
    if name not in _REFERENCE:
        _REFERENCE[name] = train(name, None, "sequential", cpus=1)
    return _REFERENCE[name]


def assert_same(name, got, want):
    (l1, w1), (l0, w0) = got, want
    np.testing.assert_allclose(l1, l0, rtol=1e-5, atol=1e-6, err_msg=f"{name}: losses")
    for a, b in zip(w1, w0, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=2e-6, err_msg=f"{name}: weights")


@pytest.mark.parametrize("name", sorted(MODELS))
@settings(max_examples=5, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31 - 1), devices=st.integers(2, 4),
       executor=st.sampled_from(["threaded", "sequential"]))
def test_random_strategies_match_one_processor(name, seed, devices, executor):
    strategy = random_strategy(graph_of(name), np.random.default_rng(seed), devices)
    assert_same(name, train(name, strategy, executor, cpus=devices), reference(name))
