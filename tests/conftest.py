"""Shared test setup: make tests/ importable so test files can share helpers (corpus_cases.py)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# Golden-file cases (tests/golden/**/*.hlo): see tests/golden.py.
from golden import pytest_addoption, pytest_collect_file, pytest_sessionfinish  # noqa: E402,F401

# Every pipeline a test runs checks the module after each pass, so that a pass that breaks
# a module fails the test that ran it (tools and library default to one check at the end).
import os  # noqa: E402

os.environ.setdefault("HLO_VERIFY_EACH", "1")
