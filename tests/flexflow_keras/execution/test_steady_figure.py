"""Engine.measure's figure counts the settled untimed steps with the timed ones (execution/engine.py
steady_figure): a short measurement's 2 timed steps, one of them disturbed, do not decide alone."""

from flexflow_keras.execution.engine import SETTLED, steady_figure


def test_settled_untimed_steps_join_the_median():
    # x2 settled at about 22 ms; one of its 2 timed steps met a disturbance
    assert steady_figure([0.070, 0.030, 0.022, 0.022, 0.023], [0.045, 0.022]) == 0.022
    assert steady_figure([0.030, 0.022, 0.021, 0.023], [0.045, 0.046, 0.050]) > 0.03  # three disturbed: it moves


def test_steps_that_never_settled_are_left_out():
    cold = [0.070, 0.040, 0.030, 0.050, 0.035, 0.060, 0.030, 0.045]  # MAX_WARM reached unsettled
    assert max(cold[-3:]) > SETTLED * min(cold[-3:])
    assert steady_figure(cold, [0.021, 0.023]) == 0.022
    assert steady_figure([0.02, 0.02], [0.03]) == 0.03  # fewer than 3 untimed: nothing to add


def _scripted(seq):
    it = iter(seq)
    return lambda: next(it)


def test_steps_that_paused_on_the_way_down_are_timed_again():
    from flexflow_keras.execution.engine import settled_steps

    # the MNIST CNN at x2: settled at ~20 ms, then 18 and 12, then 11 from there on
    untimed, timed = settled_steps(_scripted([0.037, 0.020, 0.018, 0.020, 0.018, 0.012, 0.011, 0.011, 0.011, 0.011]),
                                   2, 0.0)
    assert timed == [0.011, 0.011] and steady_figure(untimed, timed) == 0.011
    # steps that settled for good are timed once
    untimed, timed = settled_steps(_scripted([0.03, 0.016, 0.017, 0.016, 0.016, 0.017]), 2, 0.0)
    assert untimed == [0.03, 0.016, 0.017, 0.016] and timed == [0.016, 0.017]
    # a slower timed step does not extend it either (a disturbed step: steady_figure's median takes care)
    untimed, timed = settled_steps(_scripted([0.02, 0.016, 0.016, 0.016, 0.03, 0.016]), 2, 0.0)
    assert timed == [0.03, 0.016]


def test_re_timing_stops_after_max_warm_extra_steps():
    from flexflow_keras.execution.engine import MAX_WARM, settled_steps

    falling = [0.02 * 0.8 ** k for k in range(40)]  # always 20% faster than the step before
    untimed, timed = settled_steps(_scripted([0.02, 0.02, 0.02] + falling), 2, 0.0)
    assert len(untimed) - 3 <= MAX_WARM + 2
