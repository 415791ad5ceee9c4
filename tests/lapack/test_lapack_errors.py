"""A LAPACK custom call that does not fit its target is a located user error on both backends:
`file:line:col: error: custom-call %NAME: TARGET: ...` at the custom call's own line, naming
the instruction as written there (also when the pipeline inlined it under another name)."""
import pytest
from click.testing import CliRunner

from hlo_cli.hlo_run import main as hlo_run

CALL = 'custom_call_target="{target}", api_version=API_VERSION_TYPED_FFI, backend_config={{{config}}}'


def module(operands: str, params: list[str], shape: str, target: str, config: str) -> str:
    lines = ["HloModule bad", "", "eigh.19 {"]
    lines += [f"  p{i} = {p} parameter({i})" for i, p in enumerate(params)]
    lines += [f"  ROOT eigh.20 = {shape} custom-call({operands}), " + CALL.format(target=target, config=config), "}",
              "", "ENTRY main {"]
    lines += [f"  a{i} = {p} parameter({i})" for i, p in enumerate(params)]
    args = ", ".join(f"a{i}" for i in range(len(params)))
    lines += [f"  c1 = {shape} call({args}), to_apply=eigh.19",
              f"  ROOT c2 = {shape} call({args}), to_apply=eigh.19", "}", ""]
    return "\n".join(lines)


POTRF_OK = ("p0", ["f32[3,3]{0,1}"], "(f32[3,3]{0,1}, s32[])", "lapack_spotrf_ffi", "uplo = 76 : ui8")

BAD = {
    "unknown target": (("p0", ["f32[3,3]"], "f32[3,3]", "lapack_sfoo_ffi", ""), "lapack_sfoo_ffi"),
    "operand count": (("p0, p1", ["f32[3,3]{0,1}", "f32[3,3]{0,1}"], POTRF_OK[2], POTRF_OK[3], POTRF_OK[4]),
                      "lapack_spotrf_ffi: expects 1 operands, got 2"),
    "operand type": (("p0", ["f64[3,3]{0,1}"], POTRF_OK[2], POTRF_OK[3], POTRF_OK[4]),
                     "lapack_spotrf_ffi: operand 0 has element type f64, expected f32"),
    "not square": (("p0", ["f32[3,4]{0,1}"], "(f32[3,4]{0,1}, s32[])", POTRF_OK[3], POTRF_OK[4]),
                   "operand 0 must be square"),
    "result shape": (("p0", ["f32[3,3]{0,1}"], "(f32[3,3]{0,1}, s32[2])", POTRF_OK[3], POTRF_OK[4]),
                     "result 1 is s32[2], the target gives s32[]"),
    "result count": (("p0", ["f32[3,3]{0,1}"], "f32[3,3]{0,1}", POTRF_OK[3], POTRF_OK[4]),
                     "declares 1 results, the target gives 2"),
    "bad option": (POTRF_OK[:4] + ("uplo = 70 : ui8",), "attribute uplo=70 is not one of ['L', 'U']"),
    "missing option": (POTRF_OK[:4] + ("",), "backend_config lacks attribute 'uplo'"),
    "unsorted schur only": (("p0", ["f32[3,3]{0,1}"], "(f32[3,3]{0,1}, f32[3,3]{0,1}, f32[3]{0}, f32[3]{0}, s32[], "
                             "s32[])", "lapack_sgees_ffi", "mode = 86 : ui8, sort = 83 : ui8"),
                            "ordering the eigenvalues (sort = 'S') is not implemented"),
    "malformed config": (POTRF_OK[:4] + ("uplo = ",), "lapack_spotrf_ffi: backend_config"),
}


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_call_is_an_error_at_its_line_naming_it(tmp_path, backend, case):
    spec, message = BAD[case]
    path = tmp_path / "bad.hlo"
    text = module(*spec)
    path.write_text(text)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "ROOT eigh.20" in t)
    result = CliRunner().invoke(hlo_run, [str(path), "--random-inputs", "--backend", backend])
    assert result.exit_code == 1, result.output
    first = result.output.splitlines()[0]
    assert first.startswith(f"{path}:")
    assert first.split(":")[1] == str(line)  # the custom call's line inside eigh.19, whichever copy failed
    assert "%eigh.20" in first and message in first, first


def test_legacy_options_must_be_constants_when_compiled(tmp_path):
    text = """HloModule legacy

ENTRY main {
  lower = s32[] parameter(0)
  a = f32[2,2] parameter(1)
  one = s32[] constant(1)
  two = s32[] constant(2)
  ROOT chol = (f32[2,2], s32[]) custom-call(lower, one, two, a), custom_call_target="lapack_spotrf"
}
"""
    path = tmp_path / "legacy.hlo"
    path.write_text(text)
    result = CliRunner().invoke(hlo_run, [str(path), "--random-inputs", "--backend", "cpu"])
    assert result.exit_code == 1
    assert f"{path}:8:" in result.output and "option operand 0 must be a constant s32 scalar" in result.output
