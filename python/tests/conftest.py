"""pytest configuration: the tests import the package from the build tree (PYTHONPATH, set by
ctest) and run in a temporary directory of their own."""

import pytest


@pytest.fixture(autouse=True)
def _inside_tmp_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
