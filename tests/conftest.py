import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
for folder in (HERE / "toy", HERE):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))


@pytest.fixture(scope="module")
def spike():
    """The gemmini-spike backend; the test is skipped where scripts/setup/gemmini-spike.sh has not run."""
    from speedpatch.targets import get_target

    backend = get_target("gemmini").backend("gemmini-spike")
    usable = backend.availability({})
    if not usable.usable:
        pytest.skip(f"gemmini-spike unavailable: {usable.reason}")
    return backend



def pytest_collection_finish(session) -> None:
    """Under `--dist loadgroup` every test marked xdist_group must carry its group in its node id on the
    worker (that is how pytest-xdist routes a group to one worker). With pytest 9.2 it silently did not, and
    the Ray scenarios ran on both workers at once: say so in the warnings summary."""
    import warnings

    if not getattr(session.config.option, "loadgroup", False):
        return
    lost = [item.nodeid for item in session.items if item.get_closest_marker("xdist_group") and "@" not in item.nodeid]
    if lost:
        warnings.warn(f"--dist loadgroup does not group {len(lost)} tests (e.g. {lost[0]}) with this pytest and "
                      "pytest-xdist (pytest-xdist issue #1386): they run on several workers at once; install the "
                      "test extras' pytest (<9.2)", stacklevel=1)


def pytest_collection_modifyitems(config, items) -> None:
    """Grouped tests first (the Ray scenarios, the VS Code end-to-end tests): each group is one unit of minutes
    on one worker, and collected last (tests/vscode) it started when the other worker had little left to do."""
    items.sort(key=lambda item: 0 if item.get_closest_marker("xdist_group") else 1)  # stable: order kept within
