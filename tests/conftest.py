import itertools
import os
import signal

import pytest

from core import Receiver

# Fixtures shared by many test files, found by name (no test imports a fixture), and the
# Hypothesis profiles, loaded before any test module is imported.
pytest_plugins = ["tests.support.console_support", "tests.support.hypothesis_settings", "tests.support.watch_fixtures", "tests.support.ports"]

# Key files are wrapped with a slow KDF (a quarter of a second a guess); the suite adds and unlocks
# operators hundreds of times, so it wraps with one round. Set here, before any test, so the CLI and
# console processes the tests start inherit it; one test checks the real default on its own.
os.environ.setdefault("USSD_CONSOLE_KDF_ROUNDS", "1")
# The tests read the English words whatever language the machine running them speaks: LANGUAGE is
# the first variable the command line and the console choose a language from (core/i18n.py).
# A test about choosing the language sets its own.
os.environ["LANGUAGE"] = "en"

BACKENDS = ["sqlite", "postgres"]


def pytest_xdist_auto_num_workers(config) -> int:
    """``-n auto``: two workers more than the cores this process may use. Many tests wait on a
    process, a watcher's tick or a socket rather than on the CPU; measured on two cores, four
    workers took a quarter less time than two with both cores busy, a sixth less on an idle machine.
    The in-process tier (`make check`) too: its console tests wait on the app's pauses and idle
    checks, so one worker a core left the cores half idle (1,133 tests: 236 s with two workers,
    168 s with four, on an idle two-core machine)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return cores + 2


def _must_have_postgres() -> bool:
    return bool(os.environ.get("CI")) or os.environ.get("USSD_REQUIRE_PG") == "1"


@pytest.fixture(scope="session")
def pg_url(tmp_path_factory):
    """A PostgreSQL server for the run: $USSD_TEST_PG_URL, or a throwaway local one that every
    xdist worker shares (tests/support/pg_server.py ``SharedPostgres``); each test makes its own schema
    or database on it.

    In CI (or with USSD_REQUIRE_PG=1) a missing server fails the tests loudly;
    elsewhere they are skipped with the reason.
    """
    from tests.support.pg_server import PostgresUnavailable, SharedPostgres
    from tests.support.shared import shared_folder

    given = os.environ.get("USSD_TEST_PG_URL")
    if given:
        yield given
        return
    server = SharedPostgres(shared_folder(tmp_path_factory) / "postgres")
    try:
        url = server.acquire()
    except (PostgresUnavailable, OSError) as exc:
        if _must_have_postgres():
            pytest.fail(f"PostgreSQL tests cannot run: {exc}", pytrace=False)
        pytest.skip(f"PostgreSQL not available here: {exc}")
    os.environ["USSD_TEST_PG_URL"] = url  # subprocesses started by tests find it too
    try:
        yield url
    finally:
        os.environ.pop("USSD_TEST_PG_URL", None)
        server.release()


def pytest_sessionfinish(session):
    """The controller (or a run without workers) stops a shared server that no worker stopped."""
    if hasattr(session.config, "workerinput") or os.environ.get("USSD_TEST_PG_URL"):
        return
    from tests.support.pg_server import SharedPostgres
    from tests.support.shared import shared_folder

    folder = shared_folder(session.config._tmp_path_factory) / "postgres"
    if folder.exists():
        SharedPostgres(folder).stop_left_over()


@pytest.fixture(params=BACKENDS)
def new_store(request, tmp_path):
    """A factory of fresh, empty store targets on the parametrized backend."""
    if request.param == "sqlite":
        counter = itertools.count()
        return lambda: str(tmp_path / f"store{next(counter)}.db")
    from tests.support.pg_server import fresh_schema_url

    url = request.getfixturevalue("pg_url")
    return lambda: fresh_schema_url(url)


@pytest.fixture
def receiver(new_store):
    r = Receiver(new_store())
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


@pytest.fixture
def inbox(home):
    """A home ready for delivery, and a receiver on its store."""
    from core.inbox import prepare_home

    prepare_home(home)
    r = Receiver(str(home.db))
    yield home, r
    r.close()


@pytest.fixture(autouse=True)
def english_again():
    """Every test leaves English behind it, as each run of the program starts anew: a test that
    selects a language (directly, or through a command's --lang in-process) does not speak it on."""
    yield
    from core import i18n

    i18n.select(i18n.SOURCE)


def pytest_collection_modifyitems(config, items):
    """The ``process`` marker, set here and only here (tests/support/tiers.py says by what)."""
    from tests.support.tiers import mark

    mark(items)


@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config):
    """An xdist worker whose tests are done ignores SIGINT. When the run ends, execnet gives each
    worker 5 s to finish and then sends it a SIGINT; what a worker still does then is pytest's own
    garbage collection passes (five, for unraisable exceptions), which on a busy machine take longer.
    The KeyboardInterrupt then lands in Hypothesis's gc callback and is reported as an unraisable
    exception at the end of a green run. Ignored, execnet waits for the worker as it means to."""
    if hasattr(config, "workerinput"):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
