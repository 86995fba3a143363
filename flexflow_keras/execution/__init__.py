"""Execution: lowers (operator graph, strategy) onto the runtime and runs training, evaluation and
prediction steps.

- `training_graph`: the model graph plus per-sample loss nodes (and the softmax+crossentropy fusion);
- `store`: one region per tensor, weight, gradient and optimizer slot, with batch partitions;
- `tasks`: runtime tasks wrapping each op's forward/backward (CPU and GPU variants), the loader, the
  optimizer update and the loss/metric partial sums;
- `step`: the launch sequence of one step for one batch size, traced and replayed;
- `engine`: what the training loop talks to.
"""

from flexflow_keras.execution.engine import Engine
from flexflow_keras.execution.training_graph import LossSpec, TrainingGraph, build_training_graph

__all__ = ["Engine", "LossSpec", "TrainingGraph", "build_training_graph"]
