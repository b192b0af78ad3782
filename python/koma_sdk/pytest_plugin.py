"""koma_sdk's pytest plugin (registered by the package's `pytest11` entry
point): the fixture `fake_koma`, a factory of `koma_sdk.testing.FakeKoma`
whose fakes are stopped when the test ends.

    async def test_deploy(fake_koma):
        koma = fake_koma(Scenario(turns=[ScriptedTurn([Output("done")])]))
        await koma.client.create()
        ...

The fixture is a plain one, so it serves any runner of async tests:
pytest-asyncio, anyio's plugin (asyncio and trio), pytest-trio. Each fake's
folder is under the test's `tmp_path` (kept by pytest for a look after a
failure). At the end of the test, a client the test left open is stopped at
once (its koma-sim killed and reaped); `await koma.aclose()` in the test
closes it gracefully first.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from ._scenario import hide_mistake
from .testing import FakeKoma, FakeKomaOptions, Scenario

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["FakeKomaFactory", "fake_koma"]


class FakeKomaFactory(Protocol):
    """What the `fake_koma` fixture is: `fake_koma(scenario, **options)`
    makes a `FakeKoma` (its options are `FakeKoma`'s, `FakeKomaOptions`,
    without `dir`)."""

    def __call__(self, scenario: Scenario | Mapping[str, Any], **options: Unpack[FakeKomaOptions]) -> FakeKoma: ...


@pytest.fixture
def fake_koma(tmp_path: Path) -> Iterator[FakeKomaFactory]:
    """A factory of fake Komas (koma-sim playing a scenario), stopped when the test ends."""
    made: list[FakeKoma] = []

    def make(scenario: Scenario | Mapping[str, Any], **options: Any) -> FakeKoma:
        __tracebackhide__ = hide_mistake  # a mistake in the scenario is shown at the test's line
        if "dir" in options:
            raise TypeError("fake_koma(): `dir` is the fixture's own (a folder under the test's tmp_path)")
        koma = FakeKoma(scenario, dir=tmp_path / f"koma-{len(made) + 1}", **options)
        made.append(koma)
        return koma

    yield make
    for koma in made:
        koma.stop()
