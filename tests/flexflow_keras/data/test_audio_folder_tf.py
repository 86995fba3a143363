"""`keras.utils.audio_dataset_from_directory` (TensorFlow's current audio tutorial loads mini Speech Commands
with it: ``audio_dataset_from_directory(data_dir, batch_size=64, validation_split=0.2, seed=0,
output_sequence_length=16000, subset='both')``); it was an UnsupportedUtilityError. The batches, labels, split
and class names equal tf.keras 3.15's on the same folder."""

import wave

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf


@pytest.fixture
def folder(tmp_path):
    rng = np.random.default_rng(0)
    for cmd in ["go", "no", "yes"]:
        (tmp_path / cmd).mkdir()
        for k in range(4):
            n = int(rng.integers(300, 900))
            with wave.open(str(tmp_path / cmd / f"{k}.wav"), "wb") as w:
                w.setnchannels(1)
                w.setsampwidth(2)
                w.setframerate(16000)
                w.writeframes((rng.uniform(-0.5, 0.5, n) * 32767).astype("<i2").tobytes())
        (tmp_path / cmd / "notes.txt").write_text("not audio")
    return tmp_path


def _batches(ds):
    out = []
    for item in ds:
        parts = item if isinstance(item, tuple) else (item,)
        out.append([np.asarray(p) for p in parts])
    return out


def _same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        for a, b in zip(g, w, strict=True):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kwargs", [dict(batch_size=5), dict(batch_size=4, output_sequence_length=600,
                                                             label_mode="categorical"),
                                    dict(batch_size=None, labels=None), dict(batch_size=3, class_names=["yes", "go"])])
def test_batches_as_keras(folder, kwargs):
    got = ff.utils.audio_dataset_from_directory(str(folder), shuffle=False, verbose=False, **kwargs)
    want = tf.keras.utils.audio_dataset_from_directory(str(folder), shuffle=False, verbose=False, **kwargs)
    _same(_batches(got), _batches(want))
    assert got.class_names == want.class_names


def test_split_both_as_keras(folder):
    args = dict(batch_size=4, validation_split=0.25, subset="both", seed=3, output_sequence_length=800,
                verbose=False)
    got = ff.utils.audio_dataset_from_directory(str(folder), **args)
    want = tf.keras.utils.audio_dataset_from_directory(str(folder), **args)
    _same(_batches(got[1]), _batches(want[1]))  # the validation files, unshuffled: the same batches

    def rows(ds):  # the training files, reshuffled each pass: the same set
        return sorted(tuple(np.r_[x.ravel()[:20], y]) for b in _batches(ds) for x, y in zip(*b, strict=True))

    assert rows(got[0]) == rows(want[0])


def test_refusals_say_what_to_do(folder):
    with pytest.raises(ValueError, match="ragged=True and output_sequence_length"):
        ff.utils.audio_dataset_from_directory(str(folder), ragged=True, output_sequence_length=10)
    with pytest.raises(ValueError, match="ragged=True"):
        ff.utils.audio_dataset_from_directory(str(folder), ragged=True)
    with pytest.raises(ValueError, match="resample the files"):
        ff.utils.audio_dataset_from_directory(str(folder), sampling_rate=8000)
    with pytest.raises(ValueError, match="Audio folder .* does not exist"):
        ff.utils.audio_dataset_from_directory(str(folder / "go" / "nothing"), labels=None)
