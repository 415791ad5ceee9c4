"""The MPI tests start mpiexec themselves; they are skipped when the 'mpi' extra is missing."""
from pathlib import Path

import pytest

from mpi_helpers import find_mpiexec

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    try:
        import mpi4py  # noqa: F401
        missing = None if find_mpiexec() else "no mpiexec"
    except ImportError:
        missing = "mpi4py is not installed (pip install -e '.[mpi]')"
    if missing:
        skip = pytest.mark.skip(reason=f"MPI tests: {missing}")
        for item in items:
            if HERE in Path(item.fspath).parents:
                item.add_marker(skip)
