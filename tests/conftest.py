"""Shared test set-up: quiet Prefect, the real third-party fixtures in ../shared/fixtures."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")

REPO = Path(__file__).resolve().parents[1]
SHARED_FIXTURES = REPO.parent / "shared" / "fixtures"


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    """../shared/fixtures: real WARC files and a DMOZ excerpt (read in place, never copied)."""
    if not SHARED_FIXTURES.is_dir():
        pytest.fail(f"expected the shared fixtures at {SHARED_FIXTURES}; clone the project beside ../shared")
    return SHARED_FIXTURES


@pytest.fixture(scope="session")
def warc_dir(shared_fixtures: Path) -> Path:
    return shared_fixtures / "warc"


@pytest.fixture(scope="session")
def prefect_harness(tmp_path_factory):
    """A throw-away Prefect API (its own database) for tests that run flows."""
    os.environ["PREFECT_HOME"] = str(tmp_path_factory.mktemp("prefect-home"))
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield
