"""One run of one Keras 2.3.1 example for benchmarks/keras2_corpus.py, in a fresh process:

    python benchmarks/_corpus_run.py FRAMEWORK DATA_DIR SCRIPT.py OUT.json

FRAMEWORK is ``flexflow_keras`` (keras, tensorflow.keras and tf.keras mapped onto it, as `python -m
flexflow_keras` does) or ``keras`` (Keras 3 itself). In both, the script's ``keras.datasets.*.load_data``
returns the same arrays, read from DATA_DIR's .npz files (Keras' own loaders would download), and
``Model.fit`` is timed. OUT.json gets the seconds spent in fit and the number of fit calls; the parent
times the whole process.
"""

from __future__ import annotations

import functools
import json
import os
import runpy
import sys
import time

import numpy as np


def _words(xs, num_words, oov_char=2):
    if not num_words:
        return xs
    out = np.empty(len(xs), dtype=object)
    for i, s in enumerate(xs):
        out[i] = [w if w < num_words else oov_char for w in s]
    return out


def _loaders(data_dir: str) -> dict:
    def npz(name):
        return np.load(os.path.join(data_dir, f"{name}.npz"), allow_pickle=True)

    def images(name):
        def load_data(*args, **kwargs):
            d = npz(name)
            return (d["x_train"], d["y_train"]), (d["x_test"], d["y_test"])
        return load_data

    def imdb(path=None, num_words=None, skip_top=0, maxlen=None, seed=113, start_char=1, oov_char=2,
             index_from=3, **kwargs):
        d = npz("imdb")
        return ((_words(d["x_train"], num_words, oov_char), d["y_train"]),
                (_words(d["x_test"], num_words, oov_char), d["y_test"]))

    def reuters(path=None, num_words=None, skip_top=0, maxlen=None, test_split=0.2, seed=113, start_char=1,
                oov_char=2, index_from=3, **kwargs):
        d = npz("reuters")
        x, y = _words(d["x"], num_words, oov_char), d["y"]
        cut = int(len(x) * (1 - test_split))
        return (x[:cut], y[:cut]), (x[cut:], y[cut:])

    return {"mnist": images("mnist"), "cifar10": images("cifar10"), "imdb": imdb, "reuters": reuters}


def main() -> None:
    framework, data_dir, script, out = sys.argv[1:5]
    if framework == "flexflow_keras":
        from flexflow_keras import keras_alias

        keras_alias.install()
    import importlib

    import keras

    for name, fn in _loaders(data_dir).items():
        importlib.import_module(f"keras.datasets.{name}").load_data = fn
    record = {"fit_s": 0.0, "fits": 0}
    original = keras.Model.fit

    @functools.wraps(original)
    def timed_fit(self, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            record["fit_s"] += time.perf_counter() - t0
            record["fits"] += 1

    keras.Model.fit = timed_fit
    sys.argv = [script]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
    with open(out, "w") as f:
        json.dump(record, f)


if __name__ == "__main__":
    main()
