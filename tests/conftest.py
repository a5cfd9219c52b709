import pytest

from core import Receiver


@pytest.fixture
def receiver():
    r = Receiver(":memory:")
    yield r
    r.close()


@pytest.fixture
def store_path(tmp_path):
    return str(tmp_path / "receiver.db")


@pytest.fixture
def home(tmp_path):
    """A fresh home folder for commands and the inbox."""
    from core.home import Home

    return Home(tmp_path / "home").ensure()
