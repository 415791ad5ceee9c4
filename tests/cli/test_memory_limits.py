"""Sizes that follow from the module are checked before anything is allocated (issue 16): a
huge parameter drawn at random, a huge iota, a compiled program's buffers, and --max-memory,
each refused at its instruction (exit 1), never a MemoryError (exit 70)."""
import pytest

from user_session import shell

HUGE_PARAMETER = "HloModule m\n\nENTRY e {\n  ROOT x = f32[1000000,1000000,1000000] parameter(0)\n}\n"
HUGE_IOTA = "HloModule m\n\nENTRY e {\n  ROOT i = s32[100000000000] iota(), iota_dimension=0\n}\n"
SMALL_IOTA = "HloModule m\n\nENTRY e {\n  ROOT i = s32[1000000] iota(), iota_dimension=0\n}\n"


@pytest.fixture
def work(tmp_path):
    for name, text in (("param.hlo", HUGE_PARAMETER), ("iota.hlo", HUGE_IOTA), ("small.hlo", SMALL_IOTA)):
        (tmp_path / name).write_text(text)
    return tmp_path


def refused(result, where: str, needs: str):
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith(f"{where}: error: "), result.stderr
    assert needs in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_a_huge_random_input_is_refused_at_its_parameter(work, backend):
    result = shell(f"hlo-run --backend {backend} --random-inputs param.hlo", work)
    refused(result, "param.hlo:4:8", "a random input for parameter 0 needs 10913936.4 TiB")


def test_a_huge_iota_is_refused_at_the_instruction(work):
    refused(shell("hlo-run iota.hlo", work), "iota.hlo:4:8", "the result s32[100000000000] of 'iota' needs 372.5 GiB")


def test_a_compiled_program_whose_buffers_do_not_fit_is_refused(work):
    refused(shell("hlo-run --backend cpu iota.hlo", work), "iota.hlo:4:8",
            "the compiled program (its buffers) needs 372.5 GiB")


def test_max_memory_sets_the_limit(work):
    result = shell("hlo-run --max-memory 1M --no-print small.hlo", work)
    refused(result, "small.hlo:4:8", "needs 3.8 MiB, more than the 1.0 MiB allowed by --max-memory")
    assert shell("hlo-run --max-memory 8M --no-print small.hlo", work).returncode == 0


def test_max_memory_says_what_a_size_looks_like(work):
    result = shell("hlo-run --max-memory lots small.hlo", work)
    assert result.returncode == 1
    assert result.stderr == "error: --max-memory: expected a size such as 512M or 4G, got 'lots'\n"
