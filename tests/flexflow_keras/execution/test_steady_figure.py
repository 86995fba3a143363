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
