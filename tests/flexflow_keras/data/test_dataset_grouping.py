"""tf.data's interleave, group_by_window, bucket_by_sequence_length, scan, rebatch, unique, ignore_errors,
get_single_element, sample_from_datasets, choose_from_datasets and with_options (data/derived.py,
data/grouping.py, data/options.py), element by element against TensorFlow's tf.data on small inputs, and a
fit on bucketed sequences of varying length."""

import numpy as np
import pytest

from flexflow_keras.data.derived import text_line_dataset
from flexflow_keras.data.slices import SliceDataset as D
from flexflow_keras.errors import DataError

SEQ_LENGTHS = [3, 7, 2, 12, 5, 8, 1, 15, 4, 9]


@pytest.fixture(scope="module")
def tf():
    return pytest.importorskip("tensorflow")


def _values(x):
    if isinstance(x, tuple):
        return tuple(_values(v) for v in x)
    if isinstance(x, dict):
        return {k: _values(v) for k, v in x.items()}
    return np.asarray(x).tolist()


def _items(ds):
    return [_values(x) for x in ds.as_numpy_iterator()]


def _same(tf, build):
    """`build(Dataset, length_of)` on TensorFlow's tf.data and on ours gives the same elements."""
    theirs = _items(build(tf.data.Dataset, lambda x: tf.shape(x)[0]))
    ours = _items(build(D, lambda x: np.shape(x)[0]))
    assert ours == theirs
    return ours


def _sequences(dataset_cls, tf_spec=None):
    def gen():
        for n in SEQ_LENGTHS:
            yield np.arange(1, n + 1, dtype=np.int32), np.int32(n % 2)
    return dataset_cls.from_generator(gen, output_signature=tf_spec)


@pytest.mark.tf
@pytest.mark.parametrize("kwargs", [
    {}, {"cycle_length": 2, "block_length": 3}, {"cycle_length": 3, "block_length": 2},
    {"num_parallel_calls": -1}, {"num_parallel_calls": 2}, {"cycle_length": 1},
    {"cycle_length": 4, "block_length": 2, "num_parallel_calls": -1, "deterministic": True}])
def test_interleave_as_tensorflow(tf, kwargs):
    # cycle_length None: TensorFlow's choice from the CPU cores (interleave: all; AUTOTUNE calls: a third)
    _same(tf, lambda Dataset, _n: Dataset.range(1, 6).interleave(
        lambda x: Dataset.range(x).map(lambda y: x * 10 + y), **kwargs))
    # inputs whose datasets are empty or end inside a block
    _same(tf, lambda Dataset, _n: Dataset.range(9).interleave(
        lambda x: Dataset.range(x % 4).map(lambda y: x * 10 + y), **kwargs))


@pytest.mark.tf
def test_interleave_of_tuples_and_files_as_tensorflow(tf, tmp_path):
    _same(tf, lambda Dataset, _n: Dataset.from_tensor_slices(([1, 2, 3], [10, 20, 30])).interleave(
        lambda a, b: Dataset.from_tensor_slices([a, b, a + b]), cycle_length=2))
    paths = []
    for k in range(3):
        paths.append(str(tmp_path / f"f{k}.csv"))
        with open(paths[-1], "w") as f:
            f.write("header\n" + "".join(f"{k},{i}\n" for i in range(k + 2)))

    def lines(Dataset, _n):
        text_lines = text_line_dataset if Dataset is D else tf.data.TextLineDataset
        return Dataset.from_tensor_slices(paths).interleave(lambda p: text_lines(p).skip(1), cycle_length=2,
                                                            block_length=2)
    assert len(_same(tf, lines)) == 9
    _same(tf, lambda Dataset, _n: Dataset.range(3).interleave(lambda i: Dataset.from_tensors(i).repeat(2),
                                                              cycle_length=2))
    _same(tf, lambda Dataset, _n: Dataset.from_tensors(({"a": [1.0, 2.0]}, 3)))


@pytest.mark.tf
def test_group_by_window_as_tensorflow(tf):
    _same(tf, lambda Dataset, _n: Dataset.range(20).group_by_window(
        lambda x: x % 3, lambda key, w: w.batch(4), window_size=4))
    # unfinished windows come out in ascending key order at the end, whatever order the keys came in
    _same(tf, lambda Dataset, _n: Dataset.from_tensor_slices(np.array([5, 17, 1, 8, 4, 30, 2, 11])).group_by_window(
        lambda x: x % 7, lambda key, w: w.batch(10), window_size=3))
    _same(tf, lambda Dataset, _n: Dataset.from_tensor_slices(np.array([5, 1, 3, 2, 9, 4, 0, 7])).group_by_window(
        lambda x: x % 3, lambda key, w: w.batch(10).map(lambda b: (key, b)), window_size_func=lambda key: key + 1))
    _same(tf, lambda Dataset, _n: Dataset.from_tensor_slices((np.arange(8), np.arange(8) * 10)).group_by_window(
        lambda a, b: a % 2, lambda key, w: w.batch(3), window_size=3))


@pytest.mark.tf
@pytest.mark.parametrize("kwargs", [
    {"bucket_boundaries": [4, 9], "bucket_batch_sizes": [2, 2, 2]},
    {"bucket_boundaries": [4, 9, 20], "bucket_batch_sizes": [2, 2, 2, 1], "pad_to_bucket_boundary": True},
    {"bucket_boundaries": [4, 9], "bucket_batch_sizes": [2, 3, 2], "drop_remainder": True},
    {"bucket_boundaries": [6], "bucket_batch_sizes": [3, 2], "padding_values": (-1, 0)},
    {"bucket_boundaries": [6], "bucket_batch_sizes": [3, 2], "padded_shapes": ([16], [])},
    {"bucket_boundaries": [6, 13], "bucket_batch_sizes": [1, 1, 1], "no_padding": True}])
def test_bucket_by_sequence_length_as_tensorflow(tf, kwargs):
    spec = (tf.TensorSpec([None], tf.int32), tf.TensorSpec([], tf.int32))
    batches = _same(tf, lambda Dataset, length_of: _sequences(Dataset, spec).bucket_by_sequence_length(
        lambda x, y: length_of(x), **kwargs))
    assert len(batches) > 2
    if kwargs.get("pad_to_bucket_boundary"):  # the same through tf.data.experimental's function and .apply
        theirs = _items(_sequences(tf.data.Dataset, spec).apply(tf.data.experimental.bucket_by_sequence_length(
            lambda x, y: tf.shape(x)[0], **kwargs)))
        assert theirs == batches


@pytest.mark.tf
def test_scan_rebatch_unique_choose_and_single_element_as_tensorflow(tf):
    _same(tf, lambda Dataset, _n: Dataset.range(6).scan(np.int64(0), lambda s, x: (s + x, s * 2)))
    _same(tf, lambda Dataset, _n: Dataset.from_tensor_slices(([1, 2, 3], [4, 5, 6])).scan(
        0, lambda s, e: (s + 1, e[0] + e[1] + s)))
    _same(tf, lambda Dataset, _n: Dataset.range(10).batch(4).rebatch(3))
    _same(tf, lambda Dataset, _n: Dataset.range(10).batch(4).rebatch([1, 2]))
    _same(tf, lambda Dataset, _n: Dataset.range(10).batch(4).rebatch([3, 4], drop_remainder=True))
    _same(tf, lambda Dataset, _n: Dataset.from_tensor_slices(np.array([[1, 2], [3, 4], [5, 6]])).rebatch(4))
    _same(tf, lambda Dataset, _n: Dataset.from_tensor_slices([3, 1, 3, 2, 1, 5]).unique())
    _same(tf, lambda Dataset, _n: Dataset.from_tensor_slices(["a", "b", "a", "c"]).unique())
    _same(tf, lambda Dataset, _n: Dataset.from_tensor_slices(np.array([[1, 2], [1, 2], [3, 4]])).unique())
    choices = np.array([0, 1, 1, 1, 0, 0, 0, 1], np.int64)
    for stop in (True, False):
        _same(tf, lambda Dataset, _n, stop=stop: Dataset.choose_from_datasets(
            [Dataset.range(3), Dataset.range(10, 12)], Dataset.from_tensor_slices(choices),
            stop_on_empty_dataset=stop))
    assert int(D.range(4, 5).get_single_element()) == int(tf.data.Dataset.range(4, 5).get_single_element())
    x, y = D.from_tensor_slices((np.arange(3), np.arange(3) * 2)).batch(3).get_single_element()
    assert x.tolist() == [0, 1, 2] and y.tolist() == [0, 2, 4]


@pytest.mark.tf
def test_ignore_errors_drops_the_elements_whose_map_raised(tf):
    data = np.array([[1, 2], [0, 0], [4, 4], [0, 1]], np.float32)
    theirs = _items(tf.data.Dataset.from_tensor_slices(data).map(
        lambda x: tf.debugging.check_numerics(1.0 / x[0], "x")).ignore_errors())

    def inverse(x):
        if x[0] == 0:
            raise ValueError("division by zero")
        return 1.0 / x[0]
    ours = _items(D.from_tensor_slices(data).map(inverse).ignore_errors(log_warning=True))
    np.testing.assert_allclose(ours, theirs)
    with pytest.raises(ValueError, match="division by zero"):
        _items(D.from_tensor_slices(data).map(inverse))


def test_sample_from_datasets_draws_by_weight_and_keeps_each_datasets_order():
    a, b = D.range(300), D.range(1000, 1100)
    ds = D.sample_from_datasets([a, b], weights=[0.75, 0.25], seed=3)
    first, again = [int(v) for v in _items(ds)], [int(v) for v in _items(ds)]
    assert first == again  # a seed, no rerandomize_each_iteration: the same order each pass, as TensorFlow
    assert sorted(first) == list(range(300)) + list(range(1000, 1100))
    assert [v for v in first if v < 1000] == list(range(300))  # each dataset's own order is kept
    from_b = sum(v >= 1000 for v in first[:200])
    assert 25 <= from_b <= 75  # a quarter of the first 200 draws, give or take
    redrawn = D.sample_from_datasets([a, b], seed=3, rerandomize_each_iteration=True)
    assert _items(redrawn) != _items(redrawn)
    stopped = [int(v) for v in _items(D.sample_from_datasets([D.range(3), b], seed=1, stop_on_empty_dataset=True))]
    assert stopped.count(0) + stopped.count(1) + stopped.count(2) == 3 and len(stopped) < 103
    assert [int(v) for v in _items(D.sample_from_datasets([a, b], weights=[0, 1], seed=1))] == list(range(1000, 1100))


def test_sample_from_endless_datasets_oversamples_as_the_imbalanced_data_tutorial():
    """TensorFlow's imbalanced-data tutorial balances 1% positives: ``sample_from_datasets([pos_ds, neg_ds],
    [0.5, 0.5])`` of ``shuffle().repeat()`` datasets, batched, then fit with steps_per_epoch (it was an
    "endless dataset" error)."""
    import flexflow_keras as keras

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(400, 3)).astype("float32"), (np.arange(400) < 8).astype(np.int64)
    pos = D.from_tensor_slices((x[y == 1], y[y == 1])).shuffle(100).repeat()
    neg = D.from_tensor_slices((x[y == 0], y[y == 0])).shuffle(1000).repeat()
    resampled = D.sample_from_datasets([pos, neg], weights=[0.5, 0.5], seed=4).batch(256).prefetch(2)
    assert resampled.is_endless()
    with pytest.raises(DataError, match="endless"):
        len(resampled)
    batches = list(resampled.take(6))
    assert [b[0].shape for b in batches] == [(256, 3)] * 6
    labels = np.concatenate([np.asarray(b[1]) for b in batches])
    assert 0.45 < labels.mean() < 0.55  # 8 positives of 400, drawn half the time
    assert {tuple(r) for r in np.concatenate([np.asarray(b[0]) for b in batches])[labels == 1]} <= \
        {tuple(r) for r in x[:8]}
    again = list(resampled.take(6))  # the first elements stay the same however many a take asks for
    np.testing.assert_array_equal(np.asarray(again[0][1]), np.asarray(batches[0][1]))
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, activation="sigmoid")])
    model.compile("adam", "binary_crossentropy", metrics=[keras.metrics.Recall(name="recall")])
    history = model.fit(resampled, epochs=2, steps_per_epoch=3, validation_data=D.from_tensor_slices((x, y)).batch(64),
                        verbose=0)
    assert len(history.history["loss"]) == 2 and np.isfinite(history.history["val_loss"]).all()
    # with one dataset ending it (stop_on_empty_dataset) the result ends too
    stopped = D.sample_from_datasets([pos, D.range(5)], seed=1, stop_on_empty_dataset=True)
    assert not stopped.is_endless() and 5 <= len(list(stopped)) < 100


@pytest.mark.tf
def test_options_are_kept_as_tensorflow_names_them(tf):
    from flexflow_keras.data.options import AutoShardPolicy, Options

    def names(o):
        return {n for n in dir(o) if not n.startswith("_") and n != "merge"}
    assert names(Options()) == names(tf.data.Options())
    for group in ("experimental_distribute", "experimental_optimization", "threading", "autotune"):
        assert names(getattr(Options(), group)) == names(getattr(tf.data.Options(), group)), group
    assert [(p.name, int(p)) for p in AutoShardPolicy] == [
        (p.name, int(p.value)) for p in tf.data.experimental.AutoShardPolicy]
    options = Options()
    options.experimental_distribute.auto_shard_policy = AutoShardPolicy.DATA
    options.experimental_deterministic = False
    ds = D.range(4).with_options(options).map(lambda x: x * 2).batch(2)
    assert ds.options() == options and ds.options().deterministic is False
    assert ds.options().experimental_distribute.auto_shard_policy == AutoShardPolicy.DATA
    later = Options()
    later.deterministic = True
    both = ds.with_options(later).options()  # merged, the later one's set values over the earlier ones
    assert both.deterministic is True and both.experimental_distribute.auto_shard_policy == AutoShardPolicy.DATA
    assert D.range(2).options() == Options() and _items(ds) == [[0, 2], [4, 6]]
    with pytest.raises(DataError, match="no option 'auto_shard'"):
        options.auto_shard = 1


def test_errors_name_the_argument_and_the_fix():
    with pytest.raises(DataError, match="exactly one of window_size and window_size_func"):
        D.range(3).group_by_window(lambda x: x, lambda k, w: w.batch(2))
    with pytest.raises(DataError, match=r"len\(bucket_batch_sizes\) must equal"):
        D.range(3).bucket_by_sequence_length(lambda x: x, [2], [1])
    with pytest.raises(DataError, match="shorter than the last bucket boundary"):
        _items(_sequences(D).bucket_by_sequence_length(lambda x, y: len(x), [4], [2, 2], pad_to_bucket_boundary=True))
    with pytest.raises(DataError, match="batch the dataset first"):
        _items(D.range(3).rebatch(2))
    with pytest.raises(DataError, match="exactly one element, this one has 3"):
        D.range(3).get_single_element()
    with pytest.raises(DataError, match="index 2, out of range for 2 datasets"):
        _items(D.choose_from_datasets([D.range(2), D.range(2)], D.from_tensor_slices(np.array([0, 2]))))
    with pytest.raises(DataError, match="int32, int64 and string"):
        _items(D.from_tensor_slices([1.0, 1.0]).unique())
    with pytest.raises(DataError, match="must return a dataset"):
        _items(D.range(3).interleave(lambda x: x))
    with pytest.raises(DataError, match="positive integer for block_length"):
        D.range(3).interleave(lambda x: D.range(x), block_length=0)
    with pytest.raises(DataError, match="weights must be 2 non-negative"):
        D.sample_from_datasets([D.range(2), D.range(2)], weights=[1.0])
    with pytest.raises(DataError, match="save.*bucket_by_sequence_length"):
        D.range(2).save("path")


def test_fit_trains_on_bucketed_sequences_of_varying_length():
    import flexflow_keras as keras

    rng = np.random.default_rng(0)
    lengths = rng.integers(3, 24, 96)
    labels = rng.integers(0, 2, 96).astype(np.float32)
    # the label is written in the tokens: class 1 sequences use the upper half of the vocabulary
    seqs = [rng.integers(1, 16, n) + 15 * int(y) for n, y in zip(lengths, labels, strict=True)]

    def gen():
        for s, y in zip(seqs, labels, strict=True):
            yield s.astype(np.int32), y
    ds = D.from_generator(gen).bucket_by_sequence_length(lambda x, y: len(x), [8, 16], [16, 16, 16])
    widths = {x.shape[1] for x, _ in ds}
    assert len(widths) > 2  # batches of several lengths in one fit

    keras.utils.set_random_seed(0)
    inp = keras.Input((None,), dtype="int32")
    h = keras.layers.GlobalAveragePooling1D()(keras.layers.Embedding(31, 8, mask_zero=True)(inp))
    model = keras.Model(inp, keras.layers.Dense(1, activation="sigmoid")(h))
    model.compile(keras.optimizers.Adam(0.05), "binary_crossentropy", metrics=["accuracy"])
    history = model.fit(ds, epochs=4, verbose=0).history
    assert history["loss"][-1] < history["loss"][0] * 0.7
    assert history["accuracy"][-1] > 0.85


def test_the_runner_maps_tf_data_experimental_and_options():
    from flexflow_keras import tf_compat

    options = tf_compat.CONSTANTS["tf.data.Options"]()
    options.experimental_distribute.auto_shard_policy = tf_compat.CONSTANTS["tf.data.experimental.AutoShardPolicy"].OFF
    bucket = tf_compat.mapped_call("tf.data.experimental.bucket_by_sequence_length")
    ds = _sequences(D).with_options(options).apply(bucket(lambda x, y: len(x), [8], [4, 4]))
    assert [x.shape for x, _ in ds] == [(4, 7), (4, 15), (2, 4)]
    sample = tf_compat.mapped_call("tf.data.experimental.sample_from_datasets")
    assert sorted(int(v) for v in _items(sample([D.range(2), D.range(5, 7)], seed=0))) == [0, 1, 5, 6]
    assert int(tf_compat.mapped_call("tf.data.experimental.get_single_element")(D.range(1))) == 0
