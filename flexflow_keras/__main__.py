"""`python -m flexflow_keras SCRIPT.py [args]`: run an unmodified Keras / tf.keras script on flexflow_keras.

`keras`, `tensorflow.keras` and `tf.keras` (``from tensorflow import keras`` too) are mapped onto
flexflow_keras (see `flexflow_keras.keras_alias`); raw TensorFlow calls raise an error naming the call.
The script runs as `__main__` with ``sys.argv = [SCRIPT.py, args...]``: flexflow_keras reads its flags
(-e, -b, -d, -ll:gpu, ...) from there as usual, and the script's own argparse, which knows nothing of
them, parses what is left (`config.remaining_argv`) when it is called without an explicit list.
"""

from __future__ import annotations

import os
import runpy
import sys

USAGE = ("usage: python -m flexflow_keras SCRIPT.py [script and flexflow_keras flags ...]\n"
         "Runs a Keras / tf.keras script unmodified, with keras, tensorflow.keras and tf.keras mapped onto "
         "flexflow_keras.")


def _argparse_sees_the_script_flags() -> None:
    """`parse_args()` / `parse_known_args()` without a list read the command line minus our flags."""
    import argparse

    from flexflow_keras import config

    original = argparse.ArgumentParser.parse_known_args

    def parse_known_args(self, args=None, namespace=None):
        if args is None:
            args = config.remaining_argv()[1:]
        return original(self, args, namespace)

    argparse.ArgumentParser.parse_known_args = parse_known_args


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
    _argparse_sees_the_script_flags()
    sys.argv = [script] + argv[1:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
