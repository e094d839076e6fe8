import pytest

from tests.judges.world import build_world
from tests.llm_server import LLMServer


@pytest.fixture
def llm():
    server = LLMServer().start()
    yield server
    server.stop()


@pytest.fixture
def allow_local(settings):
    settings.GOLDSET_HTTP_ALLOWED_HOSTS = ["127.0.0.1"]


@pytest.fixture
def people(member):
    return {
        "ann": member("labeller"),
        "bob": member("labeller"),
        "lead": member("lead"),
        "admin": member("admin"),
    }


@pytest.fixture
def world(project, people, llm):
    built = build_world(project, ann=people["ann"], bob=people["bob"], lead=people["lead"])
    llm.truth.update(built.truth)
    return built
