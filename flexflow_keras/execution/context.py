"""The process-wide runtime the models run on, built from the configuration's `-ll:*` flags.

One `Runtime` serves every model of the process (as one Legion runtime would); it is rebuilt when the
machine flags change (a notebook calling `config.set(cpus=...)`) and shut down at exit.
"""

from __future__ import annotations

import atexit
import logging
import sys
import threading

from flexflow_keras import config as _config
from flexflow_keras.execution import simulator_notice
from runtime import Machine, Runtime, comm

log = logging.getLogger("flexflow_keras")
_lock = threading.Lock()
_current: tuple[tuple, Runtime] | None = None


_checked: tuple | None = None  # the (argv, machine flags) already checked by check_before_work


def check_before_work() -> None:
    """Stop on the command line's mistakes before the script loads data or builds a model, not when the
    first fit builds the runtime: `--help`, a mistyped flag (`--epoch`, `-ll:gpus`), and a machine that
    cannot be built here (`-ll:gpu 2` on a host without GPUs). Called by the dataset loaders, by
    `image_dataset_from_directory` and by model construction; once per command line and machine flags.

    Raises:
        ConfigError, MachineError: as building the runtime would, with the same message.
    """
    global _checked
    _config.check_script_args()
    cfg = _config.get()
    _config.check_no_effect(cfg)
    key = (tuple(sys.argv), tuple(cfg.legion_args()))
    if key == _checked:
        return
    Machine.from_args(cfg.legion_args())
    _checked = key


def get_runtime() -> Runtime:
    """The runtime for the current configuration (created on first use)."""
    global _current
    _config.check_script_args()  # --help and mistyped flags stop here, before any work
    cfg = _config.get()
    _config.check_no_effect(cfg)
    key = (tuple(cfg.legion_args()), cfg.executor, cfg.profile)
    with _lock:
        if _current is not None and _current[0] == key:
            return _current[1]
        if _current is not None:
            _current[1].shutdown()
        machine = Machine.from_args(cfg.legion_args())
        if (w := comm.world()) is not None:  # one node of several (mpiexec)
            machine.set_nodes(w.size, w.rank, w.links)
        rtm = Runtime(machine, executor=cfg.executor, profile=cfg.profile)
        if comm.world() is not None:  # a rank waiting on the others gives up when its own task failed
            comm.add_failure_probe(lambda: next((n.error for n in rtm.engine.unreported_failures()), None))
        log.info("runtime: %s, executor %s", machine, cfg.executor)
        simulator_notice.announce(machine)
        _current = (key, rtm)
        return rtm


def shutdown_runtime() -> None:
    """Stop the process-wide runtime (writes the profile when -lg:prof is on)."""
    global _current
    with _lock:
        if _current is None:
            return
        rtm = _current[1]
        _current = None
    cfg = _config.get()
    if cfg.profile and hasattr(rtm, "write_profile"):
        try:
            rtm.write_profile(cfg.profile_path)
            log.info("profile written to %s", cfg.profile_path)
        except OSError as e:  # checked when read (config._validate); the disk may still refuse it at the end
            log.error("error: -lg:prof could not write the profile to %s (%s). Give a writable "
                      "path with --profile-path.", cfg.profile_path, e.strerror or e)
    rtm.shutdown()


def cancel_runtime(timeout: float) -> bool:
    """Ctrl-C: stop the process-wide runtime within `timeout` seconds, dropping tasks not yet started
    (no profile is written). Returns whether it stopped in time."""
    global _current
    with _lock:
        if _current is None:
            return True
        rtm = _current[1]
        _current = None
    return rtm.cancel(timeout)


atexit.register(shutdown_runtime)
