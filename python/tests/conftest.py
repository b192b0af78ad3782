"""Fixtures of the Python tests: the event loops, and koma-sim clients that
are closed when their test ends."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import pytest

from helpers import LOOPS, SIM, MakeClient, sim_env
from koma_sdk import Client

# Every async test runs under asyncio and trio (helpers.LOOPS). A test or
# file that the package supports under asyncio only overrides
# `anyio_backend`, saying why.
BACKENDS = LOOPS


@pytest.fixture(params=BACKENDS)
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # A bound on every test, so that a hang ends the run with every thread's
    # stack instead of stalling it (pyproject.toml: the thread method; only
    # a stop for a hang: a test that passes takes a few seconds).
    try:
        import pytest_timeout  # noqa: F401
    except ImportError:
        return
    for item in items:
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(180))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A fresh KOMA_SIM_HOME."""
    d = tmp_path / "home"
    d.mkdir()
    return d


@pytest.fixture
async def sim_client(home: Path, anyio_backend: str) -> AsyncIterator[MakeClient]:
    """A factory of koma-sim clients, closed when the test ends:
    `sim_client(faults=..., delay_ms=..., env=..., home=..., **client options)`."""
    made: list[Client] = []

    def make(
        *,
        faults: str | Iterable[str] = (),
        delay_ms: int = 0,
        env: dict[str, str] | None = None,
        home_dir: Path | None = None,
        **options: Any,
    ) -> Client:
        client = Client(
            SIM, env={**sim_env(home_dir or home, faults=faults, delay_ms=delay_ms), **(env or {})}, **options
        )
        made.append(client)
        return client

    yield make
    for client in made:
        await client.close()
