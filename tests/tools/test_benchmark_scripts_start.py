"""Every script under benchmarks/ starts and explains itself (`--help`): a script that no longer
imports after a refactoring fails here, not in front of the person measuring."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p for p in (ROOT / "benchmarks").glob("*.py") if "__main__" in p.read_text())  # not helpers


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.stem for s in SCRIPTS])
def test_benchmark_script_starts(script):
    result = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True,
                            timeout=120, cwd=ROOT)
    assert result.returncode == 0 and "usage" in result.stdout.lower(), result.stderr[-2000:]
