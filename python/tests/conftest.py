# SPDX-License-Identifier: MIT
"""Fixtures: a context on the private syshaxd that python/tests/run.sh
starts ($SYSHAX_DEVICE), and the model file it generated in the daemon's
model_dir ($SYSHAX_TEST_MODEL, a path relative to it)."""
import os

import pytest

import syshax


@pytest.fixture
def sh():
    with syshax.open() as ctx:
        yield ctx


@pytest.fixture
def model_path():
    path = os.environ.get("SYSHAX_TEST_MODEL")
    if not path:
        pytest.fail("SYSHAX_TEST_MODEL is not set: run the tests with "
                    "python/tests/run.sh (make check-python)")
    return path
