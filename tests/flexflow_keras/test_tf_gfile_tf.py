"""`tf.io.gfile` under `python -m flexflow_keras`: TensorFlow's audio tutorial lists its command folders with
``tf.io.gfile.listdir`` and its clips with ``tf.io.gfile.glob(str(data_dir) + '/*/*')``; both were refused as
raw TensorFlow. The local-path calls now answer as TensorFlow 2.21's (compared on the same folder)."""

import os

import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras import keras_alias  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")


@pytest.fixture
def tree(tmp_path):
    for cmd in ("go", "no"):
        (tmp_path / cmd).mkdir()
        for k in range(2):
            (tmp_path / cmd / f"{k}.wav").write_bytes(b"RIFF")
    (tmp_path / "README.md").write_text("x")
    return tmp_path


def test_listdir_glob_exists_isdir_walk_as_tensorflow(tree):
    for name in ("listdir",):
        assert sorted(getattr(FFTF.io.gfile, name)(str(tree))) == sorted(getattr(tf.io.gfile, name)(str(tree)))
    for pattern in (str(tree) + "/*/*", str(tree) + "/*", str(tree) + "/n?/[01].wav", str(tree) + "/none/*"):
        assert sorted(FFTF.io.gfile.glob(pattern)) == sorted(tf.io.gfile.glob(pattern))
    for path in (tree, tree / "go", tree / "README.md", tree / "missing"):
        assert FFTF.io.gfile.exists(str(path)) == tf.io.gfile.exists(str(path))
        assert FFTF.io.gfile.isdir(str(path)) == tf.io.gfile.isdir(str(path))
    got = [(os.path.relpath(d, tree), sorted(s), sorted(f)) for d, s, f in FFTF.io.gfile.walk(str(tree))]
    want = [(os.path.relpath(d, tree), sorted(s), sorted(f)) for d, s, f in tf.io.gfile.walk(str(tree))]
    assert sorted(got) == sorted(want)


def test_files_and_errors_as_tensorflow(tree):
    with FFTF.io.gfile.GFile(str(tree / "README.md")) as f, tf.io.gfile.GFile(str(tree / "README.md")) as g:
        assert f.read() == g.read()
    with FFTF.io.gfile.GFile(str(tree / "go" / "0.wav"), "rb") as f:
        assert f.read() == b"RIFF"
    FFTF.io.gfile.makedirs(str(tree / "a" / "b"))
    FFTF.io.gfile.makedirs(str(tree / "a" / "b"))  # an existing directory is fine, as TensorFlow's
    FFTF.io.gfile.copy(str(tree / "README.md"), str(tree / "a" / "r.md"))
    with pytest.raises(tf.errors.AlreadyExistsError):
        tf.io.gfile.copy(str(tree / "README.md"), str(tree / "a" / "r.md"))
    with pytest.raises(FileExistsError, match="overwrite=True"):
        FFTF.io.gfile.copy(str(tree / "README.md"), str(tree / "a" / "r.md"))
    FFTF.io.gfile.rename(str(tree / "a" / "r.md"), str(tree / "a" / "s.md"))
    assert sorted(FFTF.io.gfile.listdir(str(tree / "a"))) == ["b", "s.md"]
    FFTF.io.gfile.remove(str(tree / "a" / "s.md"))
    FFTF.io.gfile.rmtree(str(tree / "a"))
    assert not os.path.exists(tree / "a")
    with pytest.raises(tf.errors.NotFoundError):
        tf.io.gfile.listdir(str(tree / "missing"))
    with pytest.raises(LookupError, match="No such file"):
        FFTF.io.gfile.listdir(str(tree / "missing"))
    with pytest.raises(ValueError, match="local paths only"):
        FFTF.io.gfile.glob("gs://bucket/*")
