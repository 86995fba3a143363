"""`str + string tensor` concatenates, as TensorFlow's string add (keras.io's CTC pipeline reads
``tf.io.read_file(wavs_path + wav_file + ".wav")`` with wav_file a dataset element)."""

import numpy as np

from flexflow_keras.data.dataset import StringTensor, as_tensor
from flexflow_keras.data.slices import SliceDataset


def test_str_and_string_tensors_concatenate():
    names = as_tensor(np.array(["a", "bc"]))
    joined = "wavs/" + names + ".wav"
    assert isinstance(joined, StringTensor) and joined.dtype == "string"
    assert joined.tolist() == [b"wavs/a.wav", b"wavs/bc.wav"]
    assert (as_tensor("x") + b"y").numpy() == b"xy"
    ds = SliceDataset.from_tensor_slices(["LJ001", "LJ002"]).map(lambda f: "/data/" + f + ".wav")
    assert list(ds.as_numpy_iterator()) == [b"/data/LJ001.wav", b"/data/LJ002.wav"]


def test_a_batch_of_text_prints_its_bytes_as_tensorflow_numpy_does():
    """TensorFlow's CSV tutorial prints each column of a make_csv_dataset batch (``f"{key:20s}: {value}"``); a
    text column printed every element as ``StringTensor(b'male', dtype=string)``."""
    words = np.array(["female", "male", "male"])
    batch = as_tensor(words)
    assert str(batch) == f"{batch}" == str(words.astype(object).astype(bytes)) == "[b'female' b'male' b'male']"
    assert repr(batch) == "StringTensor([b'female', b'male', b'male'], dtype=string)"
    assert str(batch[0]) == "b'female'" and batch[0].numpy() == b"female"
