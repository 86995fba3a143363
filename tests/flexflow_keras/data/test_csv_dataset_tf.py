"""tf.data.experimental.make_csv_dataset and CsvDataset (data/csv_dataset.py) against TensorFlow 2.21's,
on a file as keras.io's structured-data examples write them: typed by column_defaults, inferred, with
missing fields, gzip, select_columns and a label column."""

import gzip

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras.data import csv_dataset  # noqa: E402
from flexflow_keras.errors import DataError  # noqa: E402

pytestmark = pytest.mark.tf
ROWS = ["a,b,c,label", "1,2.5,x,0", "3,,yy,1", "5,-1e3,,2", "70000,4.25,\"q,r\",1", "9,0.5,z,0"]


@pytest.fixture()
def path(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("\n".join(ROWS) + "\n")
    return str(p)


def _batches(ds):
    out = []
    for x, y in ds:
        out.append(({k: np.asarray(v) for k, v in x.items()}, np.asarray(y)))
    return out


def _same(ours, theirs):
    assert len(ours) == len(theirs)
    for (xo, yo), (xt, yt) in zip(ours, theirs, strict=True):
        assert list(xo) == list(xt)
        for k in xo:
            assert xo[k].dtype == xt[k].dtype or (xo[k].dtype == object and xt[k].dtype == object), k
            assert xo[k].tolist() == xt[k].tolist(), k
        assert yo.dtype == yt.dtype and yo.tolist() == yt.tolist()


@pytest.mark.parametrize("defaults", [None, [[0], [0.0], ["NA"], [0]], [[0], [1.5], [""], "int64"]])
def test_make_csv_dataset_matches_tf(path, defaults):
    kw = dict(batch_size=2, label_name="label", num_epochs=1, shuffle=False)
    tf_defaults = None if defaults is None else [tf.int64 if d == "int64" else d for d in defaults]
    _same(_batches(csv_dataset.make_csv_dataset(path, column_defaults=defaults, **kw)),
          _batches(tf.data.experimental.make_csv_dataset(path, column_defaults=tf_defaults, **kw)))


def test_make_csv_dataset_names_select_gzip_and_epochs(tmp_path):
    gz = tmp_path / "t.csv.gz"
    with gzip.open(gz, "wt") as f:
        f.write("\n".join(ROWS[1:]) + "\n")
    kw = dict(batch_size=3, column_names=["a", "b", "c", "label"], select_columns=["label", "a"],
              label_name="label", header=False, compression_type="GZIP", shuffle=False)
    ours = list(csv_dataset.make_csv_dataset(str(gz), num_epochs=2, **kw))
    theirs = list(tf.data.experimental.make_csv_dataset(str(gz), num_epochs=2, **kw))
    assert len(ours) == len(theirs) == 4  # 10 records, the last batch partial
    _same(_batches(ours), _batches(theirs))
    endless = csv_dataset.make_csv_dataset(str(gz), num_epochs=None, **kw)
    assert all(np.asarray(y).shape == (3,) for _, y in endless.take(5))  # forever: full batches only
    shuffled = csv_dataset.make_csv_dataset(str(gz), batch_size=5, column_names=kw["column_names"], header=False,
                                            compression_type="GZIP", num_epochs=1, shuffle_seed=3)
    assert sorted(v for b in shuffled for v in np.asarray(b["a"]).tolist()) == [1, 3, 5, 9, 70000]


def test_csv_dataset_records_match_tf(path):
    kw = dict(record_defaults=[[0], ["?"]], header=True, select_cols=[0, 2])
    ours = [tuple(np.asarray(v).tolist() for v in rec) for rec in csv_dataset.csv_dataset(path, **kw)]
    theirs = [tuple(np.asarray(v.numpy()).tolist() for v in rec) for rec in tf.data.experimental.CsvDataset(path, **kw)]
    assert ours == theirs


def test_csv_errors_name_the_problem(path, tmp_path):
    with pytest.raises(DataError, match="label_name='target' is not one of the columns"):
        csv_dataset.make_csv_dataset(path, 2, label_name="target")
    with pytest.raises(DataError, match="column 'b' is empty.*no default"):
        csv_dataset.make_csv_dataset(path, 2, column_defaults=[[0], "float32", [""], [0]])
    with pytest.raises(DataError, match="'x', which is not a int32"):
        csv_dataset.make_csv_dataset(path, 2, column_defaults=[[0], [0.0], [0], [0]])
    with pytest.raises(DataError, match="no CSV file"):
        csv_dataset.make_csv_dataset(str(tmp_path / "none.csv"), 2)


def test_runner_maps_the_tf_names(path):
    from flexflow_keras import keras_alias

    fftf = keras_alias._TensorFlow("tensorflow")
    ds = fftf.data.experimental.make_csv_dataset(path, batch_size=5, label_name="label", num_epochs=1,
                                                 shuffle=False)
    x, y = next(iter(ds))
    assert np.asarray(y).tolist() == [0, 1, 2, 1, 0] and np.asarray(x["a"]).dtype == np.int32
    recs = list(fftf.data.experimental.CsvDataset(path, [[0], [0.0], [""], [0]], header=True))
    assert len(recs) == 5 and np.asarray(recs[1][1]).item() == 0.0


def test_decode_csv_matches_tf_on_lines_batches_and_in_a_text_line_map(path, tmp_path):
    """TensorFlow's CSV tutorial: ``tf.io.decode_csv(lines, record_defaults=[int(), str(), float(), ...])`` on a
    list of lines, mapped over ``TextLineDataset(path).skip(1)`` line by line and over batches of lines, and
    ``CsvDataset`` made per file name in ``list_files(...).interleave``."""
    from flexflow_keras import keras_alias

    fftf = keras_alias._TensorFlow("tensorflow")
    types = [0, 0.0, "", 0]  # the tutorial writes int(), float(), str()
    lines = ROWS[1:]

    def values(columns):  # (kind, values); text is bytes either way ('S' from a TensorFlow scalar's numpy())
        return [(np.asarray(c).dtype.kind.replace("S", "O"), np.asarray(c).tolist()) for c in columns]
    ours, theirs = fftf.io.decode_csv(lines, record_defaults=types), tf.io.decode_csv(lines, record_defaults=types)
    assert values(ours) == values([c.numpy() for c in theirs])
    assert [c.dtype.name for c in ours] == [c.dtype.name for c in theirs]
    as_text = [""] * 4
    assert values(fftf.io.decode_csv(lines, as_text)) == values([c.numpy() for c in tf.io.decode_csv(lines, as_text)])
    for build in (lambda t: t.data.TextLineDataset(path).skip(1).map(lambda x: t.io.decode_csv(x, types)),
                  lambda t: t.data.TextLineDataset(path).skip(1).batch(2).map(lambda x: t.io.decode_csv(x, types))):
        got = [values(rec) for rec in build(fftf)]
        want = [values([c.numpy() for c in rec]) for rec in build(tf)]
        assert got == want
    second = tmp_path / "u.csv"
    second.write_text("\n".join(ROWS[:3]) + "\n")
    pattern = str(tmp_path / "*.csv")
    rows = fftf.data.Dataset.list_files(pattern, shuffle=False).interleave(
        lambda f: fftf.data.experimental.CsvDataset(f, types, header=True), cycle_length=2)
    ref = tf.data.Dataset.list_files(pattern, shuffle=False).interleave(
        lambda f: tf.data.experimental.CsvDataset(f, types, header=True), cycle_length=2)
    assert [values(r) for r in rows] == [values([c.numpy() for c in r]) for r in ref]
    with pytest.raises(DataError, match="record 1 .* has 2 fields; expected 4"):
        fftf.io.decode_csv(["1,2,x,0", "1,2"], types)
