"""Checkpoints survive `kill -9`: a process that saves over and over (model.save and save_weights) is
killed 8 times, at random moments and inside a save; after every kill the files on disk load and hold
one of the last two saved states. A damaged checkpoint gives one clean error from the command line, and
a fit resumed from a checkpoint in a fresh process gives bit-identical weights to an uninterrupted one."""

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

SAVER = textwrap.dedent("""
    import sys, time, zipfile
    import numpy as np
    import flexflow_keras as keras

    path, wpath, start, pause = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "pause"
    if pause:  # stop inside the save, after the config and before the weights, so the kill lands there
        original = zipfile.ZipFile.writestr
        def slow_writestr(self, name, data, *args, **kwargs):
            if name == "model.weights.h5":
                print("inside", flush=True)
                time.sleep(30)
            return original(self, name, data, *args, **kwargs)
        zipfile.ZipFile.writestr = slow_writestr
    m = keras.Sequential([keras.Input((128,)), keras.layers.Dense(512), keras.layers.Dense(10)])
    m.compile(optimizer="adam", loss="mse")
    m.fit(np.ones((8, 128), "float32"), np.ones((8, 10), "float32"), epochs=1, verbose=0)
    i = start
    while True:
        i += 1
        m.layers[-1].bias.assign(np.full(10, i, "float32"))
        m.save(path)
        m.save_weights(wpath)
        print(i, flush=True)
""")


def _env(tmp_path):
    return dict(os.environ, HOME=str(tmp_path), FF_LOG_LEVEL="WARNING", PYTHONUNBUFFERED="1")


def _bias_of_files(path, wpath):
    import flexflow_keras as keras

    model = keras.models.load_model(path)
    whole = model.layers[-1].bias.numpy()
    model.load_weights(wpath)
    return float(whole[0]), float(model.layers[-1].bias.numpy()[0])


def test_kill_9_at_any_moment_leaves_the_previous_checkpoint_readable(tmp_path):
    script = tmp_path / "saver.py"
    script.write_text(SAVER)
    path, wpath = tmp_path / "ck.keras", tmp_path / "ck.weights.h5"
    rnd = random.Random(0)
    last = 0
    previous = None
    inside_kills = 0
    for round_no in range(8):
        pause = round_no % 2 == 1 and last > 0
        proc = subprocess.Popen([sys.executable, str(script), str(path), str(wpath), str(last),
                                 "pause" if pause else "run"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=_env(tmp_path), cwd=str(ROOT))
        first = proc.stdout.readline().strip()  # the first save finished (or, with pause, one is under way)
        assert first, proc.communicate()[1][-3000:]
        if pause:
            assert first == "inside"
            inside_kills += 1
        else:
            time.sleep(rnd.uniform(0.0, 0.4))
        proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate()
        assert proc.returncode == -signal.SIGKILL
        printed = [int(s) for s in [first, *out.split()] if s.isdigit()]
        whole, weights = _bias_of_files(path, wpath)
        if pause:  # killed inside its first save: both files are the previous round's, intact
            assert (whole, weights) == previous, (round_no, previous, whole, weights)
        else:  # the last reported save, or the one that finished just before the kill
            done = printed[-1]
            assert done <= whole <= done + 1, (round_no, done, whole)
            assert done <= weights <= done + 1, (round_no, done, weights)
        previous = (whole, weights)
        last = int(max(whole, weights))
    assert inside_kills >= 3
    # a later save clears the temporaries the killed writers left
    leftovers = [f for f in os.listdir(tmp_path) if ".tmp-" in f]
    import flexflow_keras as keras

    keras.models.load_model(path).save(path)
    assert [f for f in os.listdir(tmp_path) if ".tmp-" in f and f.startswith(".ck.keras")] == [], leftovers


def test_a_damaged_checkpoint_is_one_clean_error(tmp_path):
    import flexflow_keras as keras

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.save(tmp_path / "ck.keras")
    data = (tmp_path / "ck.keras").read_bytes()
    (tmp_path / "ck.keras").write_bytes(data[: len(data) // 3])
    script = tmp_path / "load.py"
    script.write_text("import sys\nimport flexflow_keras as keras\nkeras.models.load_model(sys.argv[1])\n")
    proc = subprocess.run([sys.executable, str(script), str(tmp_path / "ck.keras")], capture_output=True, text=True,
                          env=_env(tmp_path), cwd=str(ROOT), timeout=120)
    assert proc.returncode == 1
    assert f"flexflow_keras: error: {tmp_path / 'ck.keras'} (" in proc.stderr
    assert "is not a readable .keras model file: not a complete zip archive" in proc.stderr
    assert "Load an earlier checkpoint" in proc.stderr
    assert "Traceback" not in proc.stderr


RESUME = textwrap.dedent("""
    import sys
    import numpy as np
    import flexflow_keras as keras

    mode, ckpt, out, shuffle = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "shuffle"
    N, K = 4, 2
    rs = np.random.RandomState(0)
    x = rs.rand(96, 12).astype("float32")
    y = rs.randint(0, 3, 96)
    L = keras.layers
    if mode == "resume":
        model = keras.models.load_model(ckpt)
    else:
        keras.utils.set_random_seed(7)
        model = keras.Sequential([keras.Input((12,)), L.Dense(32, activation="relu"), L.BatchNormalization(),
                                  L.Dropout(0.3), L.Dense(3, activation="softmax")])
        model.compile(optimizer=keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy",
                      metrics=["accuracy"])
    keras.utils.set_random_seed(3)
    if mode == "full":
        model.fit(x, y, batch_size=16, epochs=N, shuffle=shuffle, verbose=0)
    elif mode == "part":
        model.fit(x, y, batch_size=16, epochs=K, shuffle=shuffle, verbose=0,
                  callbacks=[keras.callbacks.ModelCheckpoint(ckpt)])
    else:
        model.fit(x, y, batch_size=16, epochs=N, initial_epoch=K, shuffle=shuffle, verbose=0)
    np.savez(out, *model.get_weights(), iterations=model.optimizer.iterations)
""")


@pytest.mark.parametrize("shuffle", ["shuffle", "in_order"])
def test_resume_with_initial_epoch_is_bit_identical(tmp_path, shuffle):
    # Each epoch's order is a function of (seed, epoch), so a resumed run shuffles epochs K.. as the whole run did.
    script = tmp_path / "resume.py"
    script.write_text(RESUME)
    ckpt = tmp_path / "ck.keras"
    for mode in ("full", "part", "resume"):
        proc = subprocess.run([sys.executable, str(script), mode, str(ckpt), str(tmp_path / f"{mode}.npz"), shuffle],
                              capture_output=True, text=True, env=_env(tmp_path), cwd=str(ROOT), timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
    with np.load(tmp_path / "full.npz") as full, np.load(tmp_path / "resume.npz") as resumed, \
            np.load(tmp_path / "part.npz") as part:
        assert int(part["iterations"]) == 12 and int(full["iterations"]) == int(resumed["iterations"]) == 24
        assert not np.array_equal(part["arr_0"], full["arr_0"])  # the resumed run did train
        for key in full.files:
            np.testing.assert_array_equal(full[key], resumed[key], err_msg=key)


def test_a_checkpoint_path_with_the_wrong_suffix_is_one_clean_error(tmp_path):
    script = tmp_path / "ck.py"
    script.write_text("import flexflow_keras as keras\nkeras.callbacks.ModelCheckpoint('best.weights.h5')\n")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=_env(tmp_path),
                          cwd=str(ROOT), timeout=120)
    assert proc.returncode == 1
    assert ("flexflow_keras: error: ModelCheckpoint saves the whole model (save_weights_only=False) in Keras 3's "
            "format, so the filepath must end in `.keras` (or `.h5` for Keras' legacy HDF5 file); received "
            "filepath='best.weights.h5'") in proc.stderr
    assert "save_weights_only=True" in proc.stderr and "Traceback" not in proc.stderr
