"""The smoke checks of the package's author (the full suite is beside this
folder): each test runs under asyncio and under trio, against koma-sim."""

import os
import shutil
import tempfile

import pytest

from koma_sdk import Client
from koma_sdk.sim import path as sim_path


# KOMA_SDK_TEST_LOOPS keeps some loops (trio cannot start under wine: scripts/platforms/wine.mjs).
@pytest.fixture(params=[b for b in os.environ.get("KOMA_SDK_TEST_LOOPS", "asyncio,trio").split(",") if b])
def anyio_backend(request):
    return request.param


@pytest.fixture
def sim_home():
    d = tempfile.mkdtemp(prefix="koma-sim-home-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def make_client(sim_home):
    made = []

    def make(faults="", **kw):
        env = {"KOMA_SIM_HOME": sim_home, "KOMA_SIM_DELAY_MS": "0"}
        if faults:
            env["KOMA_SIM_FAULT"] = faults
        env.update(kw.pop("env", {}))
        c = Client(sim_path(), env=env, **kw)
        made.append(c)
        return c

    yield make
    for c in made:
        c._native.kill_now()
