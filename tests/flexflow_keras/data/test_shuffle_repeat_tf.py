"""`shuffle` with `repeat`, `batch` and a small buffer in the tf.data stand-in, checked for the same properties
on TensorFlow 2.21's tf.data: the elements of each repetition, that repetitions (and iterations) differ
unless ``reshuffle_each_iteration=False``, the buffer's locality, determinism with a seed, and what fit
reads across epochs with steps_per_epoch."""

import numpy as np
import pytest

from flexflow_keras.data.slices import SliceDataset

N = 8


@pytest.fixture(scope="module")
def tf():
    return pytest.importorskip("tensorflow")


def _ours():
    return SliceDataset.range(N)


def _theirs(tf):
    return tf.data.Dataset.range(N)


def _values(ds) -> list:
    return [np.asarray(v).tolist() for v in ds]


def _blocks(values: list, size: int) -> list:
    return [values[i:i + size] for i in range(0, len(values), size)]


def _both(tf):
    return [("ours", _ours()), ("tensorflow", _theirs(tf))]


def test_shuffle_then_repeat_draws_a_new_order_each_repetition(tf):
    for who, base in _both(tf):
        blocks = _blocks(_values(base.shuffle(N, seed=1).repeat(3)), N)
        assert all(sorted(b) == list(range(N)) for b in blocks), who
        assert len({tuple(b) for b in blocks}) > 1, who


def test_same_order_each_repetition_without_reshuffle(tf):
    for who, base in _both(tf):
        ds = base.shuffle(N, seed=1, reshuffle_each_iteration=False).repeat(3)
        first, second = _values(ds), _values(ds)
        assert first == second, who
        assert len({tuple(b) for b in _blocks(first, N)}) == 1 and sorted(first[:N]) == list(range(N)), who


def test_shuffle_batch_repeat_reshuffles_each_repetition(tf):
    for who, base in _both(tf):
        batches = _values(base.shuffle(N, seed=2).batch(4).repeat(3))
        reps = [sum(batches[i:i + 2], []) for i in range(0, 6, 2)]
        assert all(sorted(r) == list(range(N)) for r in reps), who
        assert len({tuple(r) for r in reps}) > 1, who


def test_endless_repeat_after_shuffle_with_take(tf):
    for who, base in _both(tf):
        values = sum(_values(base.shuffle(N, seed=3).repeat().batch(4).take(6)), [])
        blocks = _blocks(values, N)
        assert len(blocks) == 3 and all(sorted(b) == list(range(N)) for b in blocks), who
        assert len({tuple(b) for b in blocks}) > 1, who


def test_shuffle_after_repeat_mixes_across_the_boundary(tf):
    """The buffer runs across repetitions: some first block holds an element twice, and no element leaves
    before it entered the buffer (the input position at most t + buffer - 1)."""
    for who, base in _both(tf):
        crossed = False
        for seed in range(20):
            values = _values(base.repeat(3).shuffle(N, seed=seed))
            assert sorted(values) == sorted(list(range(N)) * 3), who
            crossed = crossed or len(set(values[:N])) < N
            seen = [0] * N  # which copy of each value: its input position is copy * N + value
            for t, v in enumerate(values):
                assert seen[v] * N + v <= t + N - 1, (who, seed, values)
                seen[v] += 1
        assert crossed, who


def test_a_small_buffer_only_shuffles_locally(tf):
    n, buffer = 200, 4
    for who, ds in (("ours", SliceDataset.range(n)), ("tensorflow", tf.data.Dataset.range(n))):
        values = _values(ds.shuffle(buffer, seed=5))
        assert sorted(values) == list(range(n)) and values != list(range(n)), who
        assert all(v <= t + buffer - 1 for t, v in enumerate(values)), who
        assert np.mean(np.abs(np.arange(n) - np.asarray(values))) < 3 * buffer, who


def test_a_seed_repeats_the_orders_and_iterations_differ():
    def orders():
        ds = SliceDataset.range(N).shuffle(N, seed=7).repeat(2)
        return _values(ds), _values(ds)

    (a1, a2), (b1, b2) = orders(), orders()
    assert a1 == b1 and a2 == b2 and a1 != a2


def test_a_global_seed_repeats_the_orders():
    from flexflow_keras.utils import set_random_seed

    def orders():
        set_random_seed(11)
        return _values(SliceDataset.range(N).shuffle(N).repeat(3))

    first, second = orders(), orders()
    assert first == second and len({tuple(b) for b in _blocks(first, N)}) > 1


def test_fit_with_steps_per_epoch_continues_one_shuffled_stream():
    """fit(steps_per_epoch) reads one iterator over ``shuffle(n).repeat().batch(b)``, as Keras 3 does with
    tf.data: each epoch's two batches are the next repetition, a new order of all elements."""
    import flexflow_keras as keras

    seen = []

    def record(x, y):
        seen.extend(np.asarray(x)[:, 0].astype(int).tolist())
        return x, y

    x = np.arange(N, dtype="float32").reshape(N, 1)
    ds = SliceDataset.from_tensor_slices((x, np.zeros((N, 1), "float32")))
    ds = ds.shuffle(N, seed=4).repeat().batch(4).map(record)
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    model.fit(ds, epochs=3, steps_per_epoch=2, verbose=0)
    blocks = _blocks(seen[:3 * N], N)
    assert len(blocks) == 3 and all(sorted(b) == list(range(N)) for b in blocks), seen
    assert len({tuple(b) for b in blocks}) > 1, seen


def test_timeseries_windows_reshuffle_each_epoch(tf):
    import flexflow_keras as keras

    series = np.arange(40)
    ours = keras.utils.timeseries_dataset_from_array(series, series, 3, batch_size=4, shuffle=True, seed=1)
    theirs = tf.keras.utils.timeseries_dataset_from_array(series, series, 3, batch_size=4, shuffle=True, seed=1)
    for who, ds in (("ours", ours), ("tensorflow", theirs)):
        passes = []
        for _ in range(2):
            starts = []
            for x, y in ds:
                x, y = np.asarray(x), np.asarray(y)
                assert (x[:, 0] == y).all() and (x[:, 2] == y + 2).all(), who
                starts += y.tolist()
            passes.append(starts)
        assert sorted(passes[0]) == sorted(passes[1]) == list(range(38)), who
        assert passes[0] != passes[1], who


def test_buffer_size_zero_is_refused_and_unknown_cardinality_is_the_whole_data(tf):
    from flexflow_keras.errors import DataError

    with pytest.raises(DataError, match="buffer_size"):
        _ours().shuffle(0)
    with pytest.raises(tf.errors.InvalidArgumentError):
        _values(_theirs(tf).shuffle(0))
    for who, base in _both(tf):
        assert sorted(_values(base.shuffle(-2, seed=1))) == list(range(N)), who
