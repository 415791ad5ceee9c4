"""Shared test setup: make tests/ importable so test files can share helpers (corpus_cases.py)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
