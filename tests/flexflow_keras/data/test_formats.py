"""The -d format detector and readers (data/formats): every format read from tiny generated files, every
unusable path a DataError that says what was found, and -d data shaped for a model's inputs."""

import io
import os
import pickle
import tarfile

import numpy as np
import pytest
from dataset_files import cifar10_dir, mnist_idx_dir, write_idx  # tests/dataset_files.py

from flexflow_keras.data.formats import Detection, describe_path, detect, open_dataset
from flexflow_keras.data.formats.for_model import conform_input, shape_for_model
from flexflow_keras.errors import DataError
from flexflow_keras.losses import CategoricalCrossentropy, SparseCategoricalCrossentropy
from flexflow_keras.ops.graph import TensorSpec

# --- every format ------------------------------------------------------------------------------------------

def test_npz_keras_keys_xy_and_numbered(tmp_path):
    p = tmp_path / "a.npz"
    np.savez(p, x_train=np.zeros((5, 3), np.float32), y_train=np.arange(5), x_test=np.ones((2, 3)), y_test=[0, 1])
    ds = open_dataset(str(p))
    assert ds.num_train == 5 and ds.has_test and ds.classes == 5 and "x_test" in ds.format
    p2 = tmp_path / "b.npz"
    np.savez(p2, x=np.zeros((4, 2)), y=np.array([0, 1, 2, 1]))
    ds2 = open_dataset(str(p2))
    assert ds2.num_train == 4 and not ds2.has_test and ds2.classes == 3 and ds2.format == "npz x/y"
    p3 = tmp_path / "c.npz"
    np.savez(p3, x_train_0=np.zeros((3, 2)), x_train_1=np.zeros((3, 5)), y_train=np.zeros(3, np.int64))
    assert [a.shape for a in open_dataset(str(p3)).x_train] == [(3, 2), (3, 5)]


@pytest.mark.parametrize("gz", [True, False])
def test_mnist_idx_directory_plain_and_gz(tmp_path, gz):
    x, y = mnist_idx_dir(tmp_path / "mnist", gz=gz)
    assert detect(str(tmp_path / "mnist")).kind == "idx-dir"
    ds = open_dataset(str(tmp_path / "mnist"))
    assert ds.format == "MNIST IDX files" and ds.classes == 6 and ds.has_test
    np.testing.assert_array_equal(ds.x_train[0], x)
    np.testing.assert_array_equal(ds.y_train[0], y)
    np.testing.assert_array_equal(ds.x_test[0], x[:2])
    assert "-d " + str(tmp_path / "mnist") + " (MNIST IDX files): 6 training samples, 6 classes, inputs (28, 28) " \
           "uint8" == ds.summary()


def test_idx_single_file_finds_its_partner_and_big_endian_floats(tmp_path):
    x, y = mnist_idx_dir(tmp_path, gz=False, test=False)
    ds = open_dataset(str(tmp_path / "train-labels-idx1-ubyte"))
    np.testing.assert_array_equal(ds.x_train[0], x)
    f = np.arange(6, dtype=">f4").reshape(2, 3)
    write_idx(tmp_path / "floats", f)
    from flexflow_keras.data.formats.idx import read_idx

    out = read_idx(str(tmp_path / "floats"))
    assert out.dtype == np.float32 and out.dtype.isnative
    np.testing.assert_array_equal(out, f)


def test_cifar10_directory_and_tar(tmp_path):
    batches = cifar10_dir(tmp_path / "cifar-10-batches-py")
    ds = open_dataset(str(tmp_path / "cifar-10-batches-py"))
    assert ds.format == "CIFAR-10 python batches" and ds.x_train[0].shape == (10, 32, 32, 3)
    assert ds.y_train[0].shape == (10, 1) and ds.classes == 10 and ds.class_names[3] == "c3"
    np.testing.assert_array_equal(ds.x_train[0][0], batches["data_batch_1"][0][0].reshape(3, 32, 32).transpose(1, 2, 0))
    np.testing.assert_array_equal(ds.y_test[0][:, 0], batches["test_batch"][1])
    # the parent directory holding only that batch folder stands for it
    assert detect(str(tmp_path)).kind == "cifar-dir"
    tar_path = tmp_path / "cifar-10-python.tar.gz"
    with tarfile.open(tar_path, "w:gz") as tar:
        for name in os.listdir(tmp_path / "cifar-10-batches-py"):
            tar.add(tmp_path / "cifar-10-batches-py" / name, f"cifar-10-batches-py/{name}")
    ds2 = open_dataset(str(tar_path))
    np.testing.assert_array_equal(ds2.x_train[0], ds.x_train[0])


def test_cifar100_directory_fine_and_coarse(tmp_path):
    d = tmp_path / "cifar-100-python"
    d.mkdir()
    for name, n in (("train", 4), ("test", 2)):
        (d / name).write_bytes(pickle.dumps({b"data": np.zeros((n, 3072), np.uint8), b"fine_labels": list(range(n)),
                                             b"coarse_labels": [1] * n}, protocol=2))
    ds = open_dataset(str(d))
    assert ds.format == "CIFAR-100 python batches" and ds.classes == 100
    np.testing.assert_array_equal(ds.y_train[0][:, 0], [0, 1, 2, 3])
    np.testing.assert_array_equal(ds.extra_labels["coarse"][0][:, 0], [1, 1, 1, 1])


def test_npy_pairs_in_a_directory_and_from_one_file(tmp_path):
    np.save(tmp_path / "x_train.npy", np.zeros((4, 3), np.float32))
    np.save(tmp_path / "y_train.npy", np.array([0, 1, 0, 1]))
    np.save(tmp_path / "x_test.npy", np.zeros((2, 3), np.float32))
    np.save(tmp_path / "y_test.npy", np.array([1, 0]))
    ds = open_dataset(str(tmp_path))
    assert ds.num_train == 4 and ds.has_test and ds.classes == 2
    assert open_dataset(str(tmp_path / "y_train.npy")).num_train == 4
    assert len(open_dataset(str(tmp_path / "x_test.npy")).x_train[0]) == 2
    other = tmp_path / "plain"
    other.mkdir()
    np.save(other / "x.npy", np.zeros((3, 2)))
    np.save(other / "y.npy", np.zeros(3))
    assert open_dataset(str(other / "x.npy")).format == ".npy pair x.npy + y.npy"


def test_csv_label_column_by_name_or_last_and_text_labels(tmp_path):
    p = tmp_path / "iris.csv"
    p.write_text("a,Label,b\n1,0,2.5\n3,2,4\n5,1,6\n")
    ds = open_dataset(str(p))
    np.testing.assert_array_equal(ds.x_train[0], [[1, 2.5], [3, 4], [5, 6]])
    np.testing.assert_array_equal(ds.y_train[0], [0, 2, 1])
    assert ds.classes == 3 and "'Label'" in ds.format
    q = tmp_path / "last.csv"
    q.write_text("f1,f2,kind\n1,2,dog\n3,4,cat\n")
    ds = open_dataset(str(q))
    np.testing.assert_array_equal(ds.y_train[0], [1, 0])
    assert ds.class_names == ["cat", "dog"]
    r = tmp_path / "reg.csv"
    r.write_text("f,price\n1,2.5\n2,3.5\n")
    assert open_dataset(str(r)).classes is None


# --- every unusable case -----------------------------------------------------------------------------------

def test_empty_directory(tmp_path):
    with pytest.raises(DataError, match="found an empty directory.*Accepted: an .npz"):
        open_dataset(str(tmp_path))


def test_directory_of_text_files(tmp_path):
    for i in range(3):
        (tmp_path / f"notes{i}.txt").write_text("hello")
    with pytest.raises(DataError, match=r"found a directory of 3 \.txt files"):
        open_dataset(str(tmp_path))
    assert describe_path(str(tmp_path / "notes0.txt")) == "a 5-byte .txt file"


def test_missing_path():
    with pytest.raises(DataError, match="no such file or directory"):
        open_dataset("/nonexistent/data.npz")


def test_npy_without_partner(tmp_path):
    np.save(tmp_path / "x.npy", np.zeros((3, 2)))
    with pytest.raises(DataError, match="needs its partner y.npy.*missing"):
        open_dataset(str(tmp_path / "x.npy"))
    with pytest.raises(DataError, match=r"no x.npy \+ y.npy .*pair \(.npy files: x.npy\)"):
        open_dataset(str(tmp_path))
    np.save(tmp_path / "data.npy", np.zeros(3))
    with pytest.raises(DataError, match="a single .npy file named data.npy"):
        open_dataset(str(tmp_path / "data.npy"))


def test_csv_with_a_text_cell_names_line_and_column(tmp_path):
    p = tmp_path / "d.csv"
    p.write_text("height,width,label\n1,2,0\n3,wide,1\n")
    with pytest.raises(DataError, match=r"line 3, column 'width' holds 'wide', not a number"):
        open_dataset(str(p))
    q = tmp_path / "ragged.csv"
    q.write_text("a,b,label\n1,2,0\n1,2\n")
    with pytest.raises(DataError, match="line 3 has 2 cells but the header has 3"):
        open_dataset(str(q))


def test_npz_with_other_keys_and_not_a_zip(tmp_path):
    p = tmp_path / "o.npz"
    np.savez(p, a=np.zeros(2), b=np.zeros(2))
    with pytest.raises(DataError, match="found an .npz with keys a, b"):
        open_dataset(str(p))
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(DataError, match="cannot read it as an .npz"):
        open_dataset(str(bad))
    ragged = tmp_path / "r.npz"
    xs = np.empty(2, dtype=object)
    xs[0], xs[1] = [1, 2], [3]
    np.savez(ragged, x=xs, y=np.zeros(2))
    with pytest.raises(DataError, match="object"):
        open_dataset(str(ragged))


def test_corrupt_gz_and_truncated_idx(tmp_path):
    mnist_idx_dir(tmp_path / "m", gz=True)
    raw = (tmp_path / "m" / "train-images-idx3-ubyte.gz").read_bytes()
    (tmp_path / "m" / "train-images-idx3-ubyte.gz").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(DataError, match="cannot read the IDX file .*train-images-idx3-ubyte.gz"):
        open_dataset(str(tmp_path / "m"))
    mnist_idx_dir(tmp_path / "t", gz=False, test=False)
    raw = (tmp_path / "t" / "train-images-idx3-ubyte").read_bytes()
    (tmp_path / "t" / "train-images-idx3-ubyte").write_bytes(raw[:-10])
    with pytest.raises(DataError, match="truncated or padded"):
        open_dataset(str(tmp_path / "t"))
    (tmp_path / "t" / "train-labels-idx1-ubyte").unlink()
    with pytest.raises(DataError, match="missing train-labels-idx1-ubyte"):
        open_dataset(str(tmp_path / "t"))


def test_cifar_directory_missing_a_batch_and_pickled_code(tmp_path):
    cifar10_dir(tmp_path / "c", skip=("data_batch_3",))
    with pytest.raises(DataError, match="CIFAR-10 python batches are incomplete: missing data_batch_3"):
        open_dataset(str(tmp_path / "c"))
    (tmp_path / "c" / "data_batch_3").write_bytes(pickle.dumps(os.system, protocol=2))
    with pytest.raises(DataError, match="refusing to load"):
        open_dataset(str(tmp_path / "c"))


def test_several_datasets_in_one_directory_and_other_files(tmp_path):
    np.savez(tmp_path / "a.npz", x=np.zeros((2, 2)), y=np.zeros(2))
    (tmp_path / "b.csv").write_text("f,label\n1,0\n")
    with pytest.raises(DataError, match=r"several datasets \(a.npz, b.csv\)"):
        open_dataset(str(tmp_path))
    (tmp_path / "model.h5").write_bytes(b"\x89HDF")
    with pytest.raises(DataError, match="found a 4-byte .h5 file"):
        open_dataset(str(tmp_path / "model.h5"))
    buf = io.BytesIO()
    with tarfile.open(tmp_path / "other.tar.gz", "w:gz") as tar:
        info = tarfile.TarInfo("readme.txt")
        info.size = 0
        tar.addfile(info, buf)
    with pytest.raises(DataError, match="holds no CIFAR python batches"):
        open_dataset(str(tmp_path / "other.tar.gz"))


def test_image_folder_is_detected_not_read_as_arrays(tmp_path):
    for cls in ("cats", "dogs"):
        (tmp_path / cls).mkdir()
        (tmp_path / cls / "0.jpg").write_bytes(b"\xff\xd8")
    assert detect(str(tmp_path)).kind == "image-folder"
    with pytest.raises(DataError, match="image_dataset_from_directory"):
        open_dataset(str(tmp_path))
    root = tmp_path / "imagenet"
    for split in ("train", "test", "val"):
        (root / split / "n01").mkdir(parents=True)
        (root / split / "n01" / "a.JPEG").write_bytes(b"\xff\xd8")
    with pytest.raises(DataError, match=r"several datasets \(test, train, val\). Point -d at the one to use, e.g. "
                                        r"-d .*imagenet/test"):
        detect(str(root))  # train/ and test/ folders are not CIFAR-100's train and test batches
    (root / "val" / "n01" / "a.JPEG").unlink()
    (root / "test" / "n01" / "a.JPEG").unlink()
    assert detect(str(root)) == Detection("image-folder", str(root / "train"))


# --- shaped for a model ------------------------------------------------------------------------------------

@pytest.mark.parametrize("want", [(28, 28, 1), (784,), (28, 28)])
def test_mnist_shaped_for_the_model(tmp_path, want):
    mnist_idx_dir(tmp_path, gz=False)
    ds = open_dataset(str(tmp_path))
    src = shape_for_model(ds, [TensorSpec((None,) + want)], [TensorSpec((None, 10))],
                          [SparseCategoricalCrossentropy()])
    assert src.x[0].shape == (6,) + want and src.x[0].dtype == np.uint8  # not rescaled
    assert "MNIST IDX files" in src.describe() and "6 training samples" in src.describe()
    test = shape_for_model(ds, [TensorSpec((None,) + want)], [TensorSpec((None, 10))], [None], split="test")
    assert test.num_samples == 2 and "2 test samples" in test.describe()


def test_channels_transpose_one_hot_and_mismatch_errors(tmp_path):
    a = np.arange(2 * 4 * 4 * 3).reshape(2, 4, 4, 3)
    out, note = conform_input(a, (3, 4, 4), "-d x", "img")
    np.testing.assert_array_equal(out, a.transpose(0, 3, 1, 2))
    assert "channels-first" in note
    with pytest.raises(DataError, match=r"\(28, 28\) per sample .*input 'dense_input' expects \(10,\)"):
        conform_input(np.zeros((2, 28, 28)), (10,), "-d x", "dense_input")
    p = tmp_path / "d.npz"
    np.savez(p, x=np.zeros((3, 4), np.float32), y=np.array([0, 2, 1]))
    ds = open_dataset(str(p))
    src = shape_for_model(ds, [TensorSpec((None, 4))], [TensorSpec((None, 3))], [CategoricalCrossentropy()])
    np.testing.assert_array_equal(src.y[0], np.eye(3)[[0, 2, 1]])
    with pytest.raises(DataError, match="labels run from 0 to 2 but the model's output has 2 classes"):
        shape_for_model(ds, [TensorSpec((None, 4))], [TensorSpec((None, 2))], [CategoricalCrossentropy()])
    with pytest.raises(DataError, match="holds 1 input and 1 label arrays but the model has 2 inputs"):
        shape_for_model(ds, [TensorSpec((None, 4))] * 2, [TensorSpec((None, 3))], [None])
