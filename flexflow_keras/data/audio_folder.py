"""`keras.utils.audio_dataset_from_directory`: a folder of class sub-folders of .wav files as a dataset of
(audio batch, label batch), with Keras 3's arguments, order, split and padding.

Files are indexed as Keras does (`index_folder`: the sorted walk, .wav only, shuffled once with the seed
before the split; the last `validation_split` of them validate). Each file is decoded once, when the dataset
is made, as `tf.audio.decode_wav` gives it (float32 (samples, channels) in [-1, 1)); `output_sequence_length`
cuts or zero-pads every clip to that many samples (``decode_wav(desired_samples=...)``), else a batch is
zero-padded to its longest clip, as Keras' ``padded_batch``. The result is a dataset of this framework's
tf.data stand-in (data/slices.py, data/derived.py) with `class_names`; with ``shuffle=True`` the order
changes each pass (Keras' shuffle buffer of 8 batches; not TensorFlow's order). Not here: `sampling_rate`
(Keras resamples with tensorflow_io) and ``ragged=True``, refused with what to do instead.
"""

from __future__ import annotations

import logging

import numpy as np

from flexflow_keras.data.dataset import encode_labels, index_folder, split_parts
from flexflow_keras.errors import ArgumentError, DataError

log = logging.getLogger("flexflow_keras")


def _decode(path: str, length: int | None) -> np.ndarray:
    from flexflow_keras.tf_signal import decode_wav

    try:
        with open(path, "rb") as f:
            contents = f.read()
    except OSError as e:
        raise DataError(f"audio_dataset_from_directory could not read {path!r}: {e.strerror or e}.") from None
    return np.asarray(decode_wav(contents, desired_samples=-1 if length is None else length)[0], np.float32)


def _check(labels, label_mode, class_names, sampling_rate, output_sequence_length, ragged, batch_size) -> None:
    if labels not in ("inferred", None) and not isinstance(labels, (list, tuple, np.ndarray)):
        raise ArgumentError(f"labels must be 'inferred', None, or a list of integer labels, one per audio file; "
                            f"received labels={labels!r}.")
    if labels not in ("inferred", None) and class_names:
        raise ArgumentError(f"class_names is only taken with labels='inferred'; received labels={labels!r} and "
                            f"class_names={class_names!r}.")
    if label_mode not in ("int", "categorical", "binary", None):
        raise ArgumentError(f"label_mode must be one of 'int', 'categorical', 'binary' or None, received "
                            f"label_mode={label_mode!r}.")
    if ragged and output_sequence_length is not None:
        raise ArgumentError("audio_dataset_from_directory cannot take both ragged=True and output_sequence_length "
                            "(Keras' ValueError); give one of them.")
    if ragged:
        raise ArgumentError("audio_dataset_from_directory(ragged=True) is not supported by flexflow_keras; leave "
                            "ragged=False (batches are zero-padded to their longest clip) or give "
                            "output_sequence_length.")
    if sampling_rate is not None:
        raise ArgumentError(f"audio_dataset_from_directory(sampling_rate={sampling_rate!r}): resampling needs "
                            f"tensorflow_io in Keras and is not done by flexflow_keras; resample the files "
                            f"beforehand (e.g. with ffmpeg -ar) and leave sampling_rate=None.")
    if output_sequence_length is not None and int(output_sequence_length) < 1:
        raise ArgumentError(f"output_sequence_length must be a positive number of samples or None, received "
                            f"{output_sequence_length!r}.")
    if batch_size is not None and int(batch_size) < 1:
        raise ArgumentError(f"batch_size must be a positive int or None, received {batch_size!r}.")


def audio_dataset_from_directory(directory, labels="inferred", label_mode="int", class_names=None, batch_size=32,
                                 sampling_rate=None, output_sequence_length=None, ragged=False, shuffle=True,
                                 seed=None, validation_split=None, subset=None, follow_links=False, verbose=True):
    """A dataset of (audio, labels) batches from a directory of class sub-folders of .wav files.

    Args:
        directory: the folder; with labels="inferred" one sub-folder per class.
        labels: "inferred", None, or a list of integer labels in the sorted order of the files.
        label_mode: "int" (int32 ids), "categorical" (one-hot float32), "binary" (float32 (N, 1)) or None.
        class_names: with labels="inferred", the sub-folders to use, in this order.
        batch_size: clips per batch (None: single clips).
        sampling_rate: not supported (Keras resamples with tensorflow_io); None.
        output_sequence_length: cut or zero-pad every clip to this many samples; None pads each batch.
        ragged: not supported; False.
        shuffle: shuffle the files (and reshuffle every pass); False keeps the sorted order.
        seed: the shuffling seed; required with validation_split and shuffle.
        validation_split: fraction of the files held out for validation.
        subset: "training", "validation" or "both" (a tuple of two datasets); with validation_split.
        follow_links: descend into symlinked sub-folders.
        verbose: log how many files and classes were found.

    Example:
        >>> train, val = keras.utils.audio_dataset_from_directory("data/mini_speech_commands", batch_size=64,
        ...     validation_split=0.2, seed=0, output_sequence_length=16000, subset="both")
    """
    from flexflow_keras.data.derived import DerivedDataset
    from flexflow_keras.data.slices import SliceDataset
    from flexflow_keras.execution.context import check_before_work

    check_before_work()
    _check(labels, label_mode, class_names, sampling_rate, output_sequence_length, ragged, batch_size)
    length = None if output_sequence_length is None else int(output_sequence_length)
    paths, ids, names, label_mode, seed = index_folder(directory, labels, label_mode, class_names, follow_links,
                                                       shuffle, seed, validation_split, subset, verbose, (".wav",),
                                                       "audio")

    def make(rows: slice, which: str | None, shuffled: bool):
        sub_paths = paths[rows]
        if not sub_paths:
            raise DataError(f"No {which + ' ' if which else ''}audio files found in directory {str(directory)!r} "
                            f"(allowed format: .wav; validation_split={validation_split}).")
        if verbose and which:
            log.info("Using %d files for %s.", len(sub_paths), which)
        clips = [_decode(p, length) for p in sub_paths]
        y = None if ids is None else encode_labels(ids[rows], label_mode, len(names or []))
        if length is not None:  # one length: arrays
            audio = np.stack(clips)
            ds = SliceDataset.from_tensor_slices(audio if y is None else (audio, y))
        else:
            items = clips if y is None else list(zip(clips, list(y), strict=True))
            ds = DerivedDataset(lambda _k: items, "audio_dataset_from_directory(...)")
        if shuffled:
            ds = ds.shuffle(8 * batch_size if batch_size is not None else 1024, seed=seed)
        if batch_size is not None:
            ds = ds.batch(int(batch_size)) if length is not None else ds.padded_batch(int(batch_size))
        ds.class_names = None if names is None else list(names)
        return ds

    return split_parts(len(paths), validation_split, subset, shuffle, make)
