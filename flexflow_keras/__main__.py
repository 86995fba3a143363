"""`python -m flexflow_keras SCRIPT.py [args]`: run an unmodified Keras / tf.keras script on flexflow_keras.

`keras`, `tensorflow.keras` and `tf.keras` (``from tensorflow import keras`` too) are mapped onto
flexflow_keras (see `flexflow_keras.keras_alias`); raw TensorFlow calls raise an error naming the call.
The script runs as `__main__` with ``sys.argv = [SCRIPT.py, args...]``, so the flags after the script
reach its own argparse and flexflow_keras' flags (-e, -b, -d, -ll:gpu, ...) as usual.
"""

from __future__ import annotations

import os
import runpy
import sys

USAGE = ("usage: python -m flexflow_keras SCRIPT.py [script and flexflow_keras flags ...]\n"
         "Runs a Keras / tf.keras script unmodified, with keras, tensorflow.keras and tf.keras mapped onto "
         "flexflow_keras.")


def main(argv: list[str] | None = None) -> int:
    """Run the script named in `argv` (default: sys.argv[1:]); returns the exit status of a usage error."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        sys.stderr.write(USAGE + "\n")
        return 0 if argv else 2
    script = argv[0]
    if not os.path.isfile(script):
        sys.stderr.write(f"flexflow_keras: error: python -m flexflow_keras: no such script {script!r}.\n{USAGE}\n")
        return 2
    from flexflow_keras import keras_alias

    keras_alias.install()
    sys.argv = [script] + argv[1:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
