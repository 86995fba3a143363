"""`-d` with a folder of class sub-folders of images: fit() without data trains on it through the loader
pipeline; a -ll:zsize too small for two batches is a clean usage error; image_dataset_from_directory
matches tf.keras on a small folder."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from PIL import Image

SCRIPT = textwrap.dedent('''
    import flexflow_keras as keras
    from flexflow_keras import layers

    model = keras.Sequential([keras.Input((28, 28, 1)), layers.Conv2D(4, 3, activation="relu"),
                              layers.MaxPooling2D(2), layers.Flatten(), layers.Dense(10, activation="softmax")])
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="categorical_crossentropy", metrics=["accuracy"])
    history = model.fit(epochs=3, batch_size=16, verbose=0)
    print("final accuracy", history.history["accuracy"][-1])
''')


def make_folder(root, per_class=12, size=28, mode="L", ext="png"):
    """10 class folders of images whose brightness says the class (plus noise)."""
    rng = np.random.default_rng(0)
    for c in range(10):
        (root / f"digit_{c}").mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            a = np.clip(c * 25 + rng.normal(0, 6, (size, size)), 0, 255).astype(np.uint8)
            Image.fromarray(a, "L").convert(mode).save(root / f"digit_{c}" / f"{i:03d}.{ext}")
    return root


def run(script_path, *args, home):
    env = dict(os.environ, FF_LOG_LEVEL="INFO", PYTHONUNBUFFERED="1", HOME=str(home))
    return subprocess.run([sys.executable, str(script_path), *args], capture_output=True, text=True, timeout=600,
                          env=env)


def test_fit_without_data_trains_on_the_image_folder(tmp_path):
    folder = make_folder(tmp_path / "digits")
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    proc = run(script, "-d", str(folder), "-ll:cpu", "2", home=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    log = proc.stderr
    assert "image folder" in log and "120 samples" in log and "10 classes" in log and str(folder) in log
    assert "synthetic" not in log.lower()
    assert 0.0 <= float(proc.stdout.split("final accuracy")[-1]) <= 1.0


def test_training_on_the_folder_equals_training_on_its_decoded_arrays(tmp_path):
    """The same seed gives the same order, batches and weights, whether the images are decoded by the
    loader pipeline or passed to fit() as arrays."""
    import flexflow_keras as keras
    from flexflow_keras import config, layers
    from flexflow_keras.data.images import open_image_folder

    folder = make_folder(tmp_path / "digits", per_class=4)

    def train(**data):
        keras.utils.set_random_seed(0)
        m = keras.Sequential([keras.Input((28, 28, 1)), layers.Conv2D(2, 3, activation="relu"), layers.Flatten(),
                              layers.Dense(10, activation="softmax")])
        m.compile(optimizer=keras.optimizers.Adam(1e-3), loss="categorical_crossentropy", metrics=["accuracy"])
        h = m.fit(epochs=2, batch_size=8, verbose=0, **data)
        return h.history["loss"], m.get_weights()

    src = open_image_folder(folder, [(None, 28, 28, 1)])
    loss_a, w_a = train(x=src.load(), y=keras.utils.to_categorical(src.labels, 10))
    config.set(dataset=str(folder))
    try:
        loss_f, w_f = train()
    finally:
        config.set(dataset=None)
    np.testing.assert_allclose(loss_f, loss_a, rtol=1e-6)
    for a, b in zip(w_a, w_f, strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-7)


def test_zsize_too_small_for_two_batches_is_a_usage_error(tmp_path):
    folder = make_folder(tmp_path / "digits", per_class=2)
    script = tmp_path / "train.py"
    # 16 images of 256x256x1 float32 are 4 MB a batch: 1 MB (the smallest -ll:zsize) holds none
    script.write_text(SCRIPT.replace("keras.Input((28, 28, 1))", "keras.Input((256, 256, 1))"))
    proc = run(script, "-d", str(folder), "-ll:zsize", "1", home=tmp_path)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "-ll:zsize 1 MB holds 0 batches of 16 x (256, 256, 1) float32" in proc.stderr
    assert "pass -ll:zsize 9" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.tf
def test_image_dataset_matches_tf_keras(tmp_path):
    tf = pytest.importorskip("tensorflow")
    from flexflow_keras.utils import image_dataset_from_directory

    folder = make_folder(tmp_path / "digits", per_class=3, size=12, mode="RGB")
    ours = image_dataset_from_directory(folder, image_size=(12, 12), batch_size=8, shuffle=False, verbose=False)
    theirs = tf.keras.utils.image_dataset_from_directory(str(folder), image_size=(12, 12), batch_size=8,
                                                         shuffle=False, verbose=False)
    assert ours.class_names == theirs.class_names
    ox, oy = ours.to_arrays()
    tx = np.concatenate([b[0].numpy() for b in theirs])
    ty = np.concatenate([b[1].numpy() for b in theirs])
    np.testing.assert_array_equal(oy, ty)
    assert ox.dtype == tx.dtype == np.float32
    assert np.abs(ox - tx).max() <= 1.0  # within 1/255 of the pixel range
    for kw in (dict(image_size=(7, 9)), dict(image_size=(20, 16), interpolation="nearest"),
               dict(image_size=(5, 8), crop_to_aspect_ratio=True)):  # resized as tf.image.resize does
        ox = image_dataset_from_directory(folder, batch_size=8, shuffle=False, verbose=False, **kw).to_arrays()[0]
        tx = np.concatenate([b[0].numpy() for b in tf.keras.utils.image_dataset_from_directory(
            str(folder), batch_size=8, shuffle=False, verbose=False, **kw)])
        np.testing.assert_allclose(ox, tx, rtol=1e-5, atol=1e-3, err_msg=str(kw))
    split = dict(image_size=(12, 12), validation_split=0.3, seed=42, verbose=False)
    ov = image_dataset_from_directory(folder, subset="validation", **split)
    tv = tf.keras.utils.image_dataset_from_directory(str(folder), subset="validation", **split)
    assert sorted(ov.file_paths) == sorted(tv.file_paths)  # the same files held out for the same seed


EVAL_SCRIPT = textwrap.dedent('''
    import flexflow_keras as keras
    from flexflow_keras import layers

    model = keras.Sequential([keras.Input((28, 28, 1)), layers.Flatten(), layers.Dense(10, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(epochs=1, batch_size=16, verbose=0)
    model.evaluate(verbose=0)
''')


@pytest.mark.parametrize("held_out", ["val", None])
def test_evaluate_without_data_reads_the_held_out_folder_beside_train(tmp_path, held_out):
    make_folder(tmp_path / "ds" / "train", per_class=3)
    if held_out:
        make_folder(tmp_path / "ds" / held_out, per_class=2)
    script = tmp_path / "train.py"
    script.write_text(EVAL_SCRIPT)
    proc = run(script, "-d", str(tmp_path / "ds" / "train"), "-ll:cpu", "1", home=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    if held_out:
        assert f"evaluating on {tmp_path / 'ds' / 'val'}" in proc.stderr and "20 samples" in proc.stderr
    else:
        assert "the training images: no held-out folder" in proc.stderr
