"""`keras.callbacks`: the Callback base with every hook, CallbackList, History, EarlyStopping,
ReduceLROnPlateau, LearningRateScheduler, TerminateOnNaN, CSVLogger, LambdaCallback, ModelCheckpoint,
and the progress display (ProgbarLogger, FlexFlowLogger; see callbacks/progress.py).

The training loop sets ``model.stop_training = True`` to stop; callbacks set it the same way.
"""

from __future__ import annotations

from flexflow_keras.callbacks.backup_and_restore import BackupAndRestore
from flexflow_keras.callbacks.callback import Callback
from flexflow_keras.callbacks.callback_list import CallbackList
from flexflow_keras.callbacks.early_stopping import EarlyStopping, ReduceLROnPlateau
from flexflow_keras.callbacks.history import History
from flexflow_keras.callbacks.misc import CSVLogger, LambdaCallback, LearningRateScheduler, TerminateOnNaN
from flexflow_keras.callbacks.model_checkpoint import ModelCheckpoint
from flexflow_keras.callbacks.monitor import MonitorCallback
from flexflow_keras.callbacks.progress import FlexFlowLogger, Progbar, ProgbarLogger, ProgressWriter
from flexflow_keras.callbacks.tensorboard import TensorBoard

__all__ = ["Callback", "CallbackList", "History", "EarlyStopping", "ReduceLROnPlateau", "LearningRateScheduler",
           "TerminateOnNaN", "CSVLogger", "LambdaCallback", "ModelCheckpoint", "MonitorCallback",
           "ProgbarLogger", "FlexFlowLogger", "Progbar", "ProgressWriter", "TensorBoard",
           "BackupAndRestore"]
