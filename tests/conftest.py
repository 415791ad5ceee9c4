"""Shared test setup: make tests/ importable so test files can share helpers (corpus_cases.py)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# Golden-file cases (tests/golden/**/*.hlo): see tests/golden.py.
from golden import pytest_addoption, pytest_collect_file, pytest_sessionfinish  # noqa: E402,F401
