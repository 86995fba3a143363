"""Shared setup of the strategy-execution tests: a clean configuration and no command-line flags."""

import sys

import pytest

from flexflow_keras import config


@pytest.fixture(autouse=True)
def clean_config(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["pytest"])
    config.reset()
    yield
    config.reset()
