"""The GPU path end to end under Numba's CUDA simulator: with -ll:gpu 1 the op tasks run their GPU
variants on device arrays, the runtime copies between system memory and the framebuffer, and training
gives the same numbers as on the CPU."""

import json
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import flexflow_keras as keras
    from flexflow_keras import layers
    keras.config.set(gpus=int(sys.argv[1]), cpus=1)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 3)).astype("float32")
    y = rng.integers(0, 2, 8)
    keras.utils.set_random_seed(5)
    m = keras.Sequential([keras.Input(shape=(3,)), layers.Dense(4, activation="relu"),
                          layers.Dense(2, activation="softmax")])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    h = m.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    print(json.dumps({"loss": h.history["loss"], "w": [w.ravel().tolist() for w in m.get_weights()]}))
""")


def run(gpus: int) -> dict:
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", FF_LOG_LEVEL="WARNING")
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(gpus)], capture_output=True, text=True,
                          timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_gpu_variant_matches_cpu():
    cpu, gpu = run(0), run(1)
    assert abs(cpu["loss"][0] - gpu["loss"][0]) <= 1e-5 * abs(cpu["loss"][0])
    for a, b in zip(cpu["w"], gpu["w"], strict=True):
        assert max(abs(p - q) for p, q in zip(a, b, strict=True)) < 1e-5
