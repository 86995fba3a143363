"""The framework's exception types. Each message says who, what was expected, what came, and the fix."""


class FlexFlowKerasError(Exception):
    """Base of every error raised by flexflow_keras."""


class ShapeError(FlexFlowKerasError, ValueError):
    """An op or layer received a tensor of the wrong shape."""


class CrossBatchError(ShapeError):
    """A symbolic op would put rows of different samples together (two batch dims in one tensor, or samples
    merged by a reshape), which a graph split by samples cannot hold. An activity regularizer that does this
    is computed on the whole batch instead (layers/activity_penalty.py); elsewhere it is this error."""


class GraphError(FlexFlowKerasError, ValueError):
    """A model's graph is malformed (disconnected inputs, cycles)."""


class TapeUsedError(GraphError, RuntimeError):
    """A non-persistent `GradientTape` was asked for a second gradient (or jacobian); also a RuntimeError, as
    TensorFlow raises for it (``except RuntimeError`` in Géron's handson-ml3 chapter 12)."""


class ConfigError(FlexFlowKerasError, ValueError):
    """A command-line flag or configuration value is invalid."""


class ArgumentError(FlexFlowKerasError, ValueError):
    """A layer or other Keras object was constructed with an argument it does not take (a ValueError, as
    Keras raises; a framework error, so the command line shows its message alone)."""


class DataError(FlexFlowKerasError, ValueError):
    """Training data is missing, unreadable, or does not match the model."""


class MissingFileError(DataError, FileNotFoundError):
    """A model or weights file to load does not exist. Also a FileNotFoundError (an OSError), as tf.keras
    raises for it: scripts resume with ``try: load_model(p) except OSError: build()``."""


class StrategyError(FlexFlowKerasError, ValueError):
    """A parallelization strategy (or strategy file) does not fit the model or the machine."""
