"""tf.data's dataset-from-datasets methods (data/derived.py) and from_tensor_slices' reading of its argument,
as TensorFlow gives them (the values in the comments are TensorFlow 2.21's)."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from flexflow_keras.data.slices import SliceDataset as D
from flexflow_keras.errors import DataError

ROOT = Path(__file__).resolve().parents[3]


def _items(ds):
    return list(ds.as_numpy_iterator())


def test_lists_are_one_tensor_and_text_is_bytes():
    assert [int(v) for v in _items(D.from_tensor_slices([1, 2, 3]))] == [1, 2, 3]
    ds = D.from_tensor_slices((["a b", "c d", "e f"], ["x", "y", "z"])).batch(2)
    assert [(e.shape, s.shape) for e, s in _items(ds)] == [((2,), (2,)), ((1,), (1,))]
    x, _ = next(iter(D.from_tensor_slices((np.array(["hello world", "foo"]), np.array([0, 1])))))
    assert x.numpy() == b"hello world"
    assert _items(D.from_tensor_slices(np.array(["a", "b"])))[0] == b"a"


def test_concatenate_filter_unbatch_enumerate_shard():
    a = D.from_tensor_slices(np.arange(4))
    b = D.from_tensor_slices(np.arange(10, 12))
    assert [int(v) for v in _items(a.concatenate(b))] == [0, 1, 2, 3, 10, 11]
    assert [int(v) for v in _items(a.filter(lambda x: x % 2 == 0))] == [0, 2]
    assert [int(v) for v in _items(a.batch(3).unbatch())] == [0, 1, 2, 3]
    assert [(int(i), int(v)) for i, v in _items(b.enumerate(start=5))] == [(5, 10), (6, 11)]
    assert [int(v) for v in _items(a.shard(2, 1))] == [1, 3]
    text = D.from_tensor_slices(np.array(["a b", "", "c"])).filter(lambda x: len(x.numpy()) > 0)
    assert _items(text.batch(2).unbatch()) == [b"a b", b"c"]
    with pytest.raises(DataError, match="not batched"):
        a.unbatch()
    with pytest.raises(DataError, match=r"Dataset.save\(\) is a tf.data method"):
        a.save("path")


def test_zip_range_and_generators():
    x = D.from_tensor_slices(np.arange(3))
    y = D.range(10, 14)
    assert [(int(p), int(q)) for p, q in _items(D.zip((x, y)))] == [(0, 10), (1, 11), (2, 12)]
    assert [sorted(d) for d in _items(D.zip({"a": x, "b": y}))][0] == ["a", "b"]

    def gen():
        for n in range(1, 4):
            yield np.arange(n), n
    ds = D.from_generator(gen, output_signature=None).padded_batch(2)
    batches = _items(ds)
    np.testing.assert_array_equal(batches[0][0], [[0, 0], [0, 1]])
    np.testing.assert_array_equal(batches[1][0], [[0, 1, 2]])
    assert len(ds) == 2
    with pytest.raises(DataError, match="not a generator object"):
        D.from_generator(gen())


def test_padded_batch_shapes_values_and_batch_refusing_ragged():
    ds = D.from_generator(lambda: ((np.ones(n, "int64"), np.array([b"w"] * n, dtype=object)) for n in (1, 3)))
    ids, words = _items(ds.padded_batch(2, padded_shapes=([4], [None]), padding_values=(-1, b"<pad>")))[0]
    np.testing.assert_array_equal(ids, [[1, -1, -1, -1], [1, 1, 1, -1]])
    assert words.tolist() == [[b"w", b"<pad>", b"<pad>"], [b"w", b"w", b"w"]]
    with pytest.raises(DataError, match="use padded_batch"):
        _items(ds.batch(2))
    with pytest.raises(DataError, match="padded_shapes gives 2"):
        _items(ds.padded_batch(2, padded_shapes=([2], [None])))


def test_derived_datasets_draw_a_new_upstream_order_each_pass():
    base = D.from_tensor_slices(np.arange(50)).shuffle(50, seed=3)
    ds = base.concatenate(D.from_tensor_slices(np.arange(50, 52)))
    first, second = [int(v) for v in _items(ds)], [int(v) for v in _items(ds)]
    assert sorted(first) == sorted(second) == list(range(52)) and first != second


def test_text_lines_parsed_and_padded_under_the_runner(tmp_path):
    lines = tmp_path / "lines.txt"
    lines.write_text("2\ta\tb\t1\t2\n3\tc\td\te\t3\t4\t5\n")
    script = tmp_path / "s.py"
    script.write_text(f"""
import tensorflow.data as tf_data
import tensorflow.strings as tf_strings
ds = tf_data.TextLineDataset({str(lines)!r})
def parse(record):
    record = tf_strings.split(record, sep="\\t")
    n = tf_strings.to_number(record[0], out_type="int32")
    return record[1:n + 1], tf_strings.to_number(record[n + 1:], out_type="int64")
for x, y in ds.map(parse).padded_batch(2):
    print(x.numpy().tolist(), y.numpy().tolist())
""")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "flexflow_keras", str(script)], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[[b'a', b'b', b''], [b'c', b'd', b'e']] [[1, 2, 0], [3, 4, 5]]"


def test_text_elements_have_a_string_dtype_in_map():
    seen = {}

    def look(features):
        seen.update({k: v.dtype == "string" for k, v in features.items()})
        return features
    ds = D.from_tensor_slices({"thal": np.array(["fixed", "normal"]), "age": np.array([60, 50])}).map(look)
    _items(ds)
    assert seen == {"thal": True, "age": False}
    batch = next(iter(D.from_tensor_slices(np.array(["a", "b"])).batch(2)))
    assert batch.dtype == "string" and np.dtype(batch.dtype) == np.dtype(object) and batch.numpy().tolist() == [b"a",
                                                                                                                b"b"]


def test_batched_inputs_stay_batches():
    a, b = D.range(6).batch(2), D.range(10, 14).batch(2)
    both = _items(a.concatenate(b))
    assert [x.tolist() for x in both] == [[0, 1], [2, 3], [4, 5], [10, 11], [12, 13]]
    assert [x.tolist() for x in _items(a.filter(lambda x: x[0] > 0))] == [[2, 3], [4, 5]]
    assert [int(v) for v in _items(a.concatenate(b).unbatch())] == [0, 1, 2, 3, 4, 5, 10, 11, 12, 13]
    # a second batch stacks the batches (TensorFlow 2.21: [[0 1] [2 3]], [[4 5] [10 11]], [[12 13]])
    assert [x.tolist() for x in _items(a.concatenate(b).batch(2))] == [[[0, 1], [2, 3]], [[4, 5], [10, 11]],
                                                                         [[12, 13]]]


def test_batches_of_batches_as_tensorflow():
    # the char-RNN tutorial: ids.batch(seq_length + 1, drop_remainder=True).map(split_input_target).batch(B)
    ds = D.from_tensor_slices(np.arange(50)).batch(5, drop_remainder=True).map(lambda s: (s[:-1], s[1:])).batch(3)
    items = _items(ds)
    assert [(x.shape, y.shape) for x, y in items] == [((3, 4), (3, 4))] * 3 + [((1, 4), (1, 4))]
    assert items[1][0].tolist() == [[15, 16, 17, 18], [20, 21, 22, 23], [25, 26, 27, 28]]
    assert items[0][1][0].tolist() == [1, 2, 3, 4] and len(ds) == 4
    assert [x.shape for x in _items(D.range(10).batch(2).batch(2, drop_remainder=True))] == [(2, 2), (2, 2)]
    assert [x.tolist() for x in _items(D.range(10).batch(2).batch(2).unbatch())] == [[0, 1], [2, 3], [4, 5],
                                                                                      [6, 7], [8, 9]]
    # TensorFlow 2.21: range(5).batch(2).padded_batch(2) -> [[0 1] [2 3]], [[4]]; range(5).batch(3).padded_batch(2)
    # -> [[0 1 2] [3 4 0]]
    assert [x.tolist() for x in _items(D.range(5).batch(2).padded_batch(2))] == [[[0, 1], [2, 3]], [[4]]]
    assert [x.tolist() for x in _items(D.range(5).batch(3).padded_batch(2))] == [[[0, 1, 2], [3, 4, 0]]]
    with pytest.raises(DataError, match="repeats without end"):
        D.range(4).repeat().batch(2).batch(2)


def test_window_and_flat_map_as_tensorflow():
    # TensorFlow 2.21: range(7).window(3, 2) -> [0 1 2] [2 3 4] [4 5 6] [6]
    assert [[int(v) for v in w] for w in D.range(7).window(3, 2)] == [[0, 1, 2], [2, 3, 4], [4, 5, 6], [6]]
    assert [[int(v) for v in w] for w in D.range(7).window(3, shift=1, stride=2)] == [
        [0, 2, 4], [1, 3, 5], [2, 4, 6], [3, 5], [4, 6], [5], [6]]
    assert [[int(v) for v in w] for w in D.range(7).window(3, shift=2, drop_remainder=True)] == [
        [0, 1, 2], [2, 3, 4], [4, 5, 6]]
    pairs = D.from_tensor_slices((np.arange(5), np.arange(5) * 10)).window(2, 2)
    zipped = _items(pairs.flat_map(lambda a, b: D.zip((a.batch(2), b.batch(2)))))
    assert [(a.tolist(), b.tolist()) for a, b in zipped] == [([0, 1], [0, 10]), ([2, 3], [20, 30]), ([4], [40])]
    keyed = D.from_tensor_slices({"a": np.arange(3)}).window(2).flat_map(lambda d: d["a"].batch(2))
    assert [a.tolist() for a in _items(keyed)] == [[0, 1], [2]]
    with pytest.raises(DataError, match="positive integer for shift"):
        D.range(3).window(2, shift=0)
    with pytest.raises(DataError, match="must return a dataset"):
        _items(D.range(3).flat_map(lambda x: x))


def test_windowed_series_trains_as_the_time_series_courses_build_it():
    """window(n + 1, shift=1, drop_remainder=True).flat_map(batch).map(split).shuffle().batch(): what
    fit reads is every window once, features (batch, n) and the next value as the label."""
    series = np.arange(40, dtype=np.float32)
    ds = (D.from_tensor_slices(series).window(6, shift=1, drop_remainder=True)
          .flat_map(lambda w: w.batch(6)).map(lambda w: (w[:-1], w[-1])).shuffle(100, seed=1).batch(8))
    batches = _items(ds)
    assert len(ds) == 5 and [x.shape for x, _ in batches][:1] == [(8, 5)]
    x = np.concatenate([b[0] for b in batches])
    y = np.concatenate([b[1] for b in batches])
    assert sorted(y.tolist()) == list(range(5, 40)) and np.array_equal(x[:, -1] + 1, y)
    with pytest.raises(DataError, match="flat_map"):
        _items(D.range(5).window(2).batch(2))
