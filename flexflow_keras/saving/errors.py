"""The error of a save asked for with arguments that cannot work (a file suffix that does not match what
is saved, an unbuilt model, a config JSON cannot hold). It is a `ValueError`, as Keras raises, and one of
the framework's errors, so a script run from the command line prints it as one clean block (exit 1).
Damaged or foreign files on loading are `DataError`s."""

from flexflow_keras.errors import FlexFlowKerasError


class SavingError(FlexFlowKerasError, ValueError):
    """A save or checkpoint argument that cannot work; the message names it and the fix."""


class NotSerializableError(FlexFlowKerasError, NotImplementedError):
    """A model or layer that a `.keras` config cannot describe (no `get_config`, an op applied directly to
    symbolic tensors). A `NotImplementedError`, as Keras raises, and a framework error (one clean block)."""


class FilepathKeyError(FlexFlowKerasError, KeyError):
    """A ModelCheckpoint filepath template naming a key the logs do not have. A `KeyError`,
    as Keras raises, and a framework error (one clean block); its text is the message, without the quotes
    a KeyError puts around it."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""
