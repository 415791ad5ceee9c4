"""hlo.sharding: every sharding form parses, prints back as written and checks; Shardy's
xla.sdy attributes read into the same representation."""
import numpy as np
import pytest

from hlo import HloError, format_module, parse_module
from hlo.sharding import (HloSharding, frontend_attribute, manual_axes_of, module_meshes, parse_meshes,
                          sdy_sharding, set_sharding, sharding_of)


def module_with(sharding: str, shape="f32[4,8]") -> str:
    return f"HloModule m\n\nENTRY %e (p: {shape}) -> {shape} {{\n  ROOT %p = {shape} parameter(0), sharding={sharding}\n}}\n"


FORMS = {
    "{replicated}": ("replicated", None),
    "{maximal device=1}": ("maximal", None),
    "{manual}": ("manual", None),
    "{unknown}": ("unknown", None),
    "{devices=[2,2]0,1,2,3}": ("tiled", [[0, 1], [2, 3]]),
    "{devices=[2,2]3,2,1,0}": ("tiled", [[3, 2], [1, 0]]),
    "{devices=[2,2]<=[4]}": ("tiled", [[0, 1], [2, 3]]),
    "{devices=[2,2]<=[2,2]T(1,0)}": ("tiled", [[0, 2], [1, 3]]),
    "{devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}": ("tiled", [[[0, 2]], [[1, 3]]]),
    "{devices=[1,2,2]<=[4] last_tile_dims={manual}}": ("tiled", [[[0, 1], [2, 3]]]),
    "{devices=[2,1,2,2]<=[8] last_tile_dims={manual, replicated}}": ("tiled", None),
    '{devices=[2,2]<=[4] metadata={op_name="a"}}': ("tiled", [[0, 1], [2, 3]]),
}


@pytest.mark.parametrize("text", sorted(FORMS))
def test_every_form_parses_prints_back_and_converts(text):
    kind, grid = FORMS[text]
    module = parse_module(module_with(text))
    assert f"sharding={text}" in format_module(module)
    s = sharding_of(module.entry.root)
    assert s.kind == kind
    assert str(s) == text
    if grid is not None:
        g = s.device_grid()
        assert g.reshape(-1).tolist() == np.array(grid).reshape(-1).tolist()
    # writing the typed value back prints the same text
    set_sharding(module.entry.root, s)
    assert f"sharding={text}" in format_module(module)


def test_tuple_sharding():
    text = "{{replicated}, {devices=[2,1]<=[2]}}"
    module = parse_module(module_with(text, "(f32[4,8], f32[4,8])"))
    s = sharding_of(module.entry.root)
    assert s.is_tuple and [e.kind for e in s.elements] == ["replicated", "tiled"]
    assert str(s) == text


def test_subgroup_queries():
    s = sharding_of(parse_module(module_with("{devices=[2,1,2,2]<=[8] last_tile_dims={manual, replicated}}"))
                    .entry.root)
    assert s.data_tiles == (2, 1) and s.subgroups == ("manual", "replicated") and s.is_manual_subgroup
    assert s.device_grid().shape == (2, 1, 4)


@pytest.mark.parametrize("bad", ["{devices=[2,2]0,1,2}", "{devices=[2,2]<=[8]}", "{replicated manual}",
                                 "{devices=[2,2]<=[2,2]T(0,0)}", "{bogus}"])
def test_wrong_shardings_are_errors(bad):
    with pytest.raises(HloError):
        parse_module(module_with(bad))


MESHES = '{mesh = #sdy.mesh<["x"=2, "y"=2]>, m8 = #sdy.mesh<["a"=2, "b"=4]>, p = #sdy.mesh<["x"=2], device_ids=[1,0]>}'


def test_shardy_meshes():
    meshes = parse_meshes(MESHES)
    assert meshes["mesh"].axes == (("x", 2), ("y", 2))
    assert meshes["m8"].size == 8
    assert meshes["p"].devices().tolist() == [1, 0]


@pytest.mark.parametrize("sdy,xla", [
    ('#sdy.sharding<@mesh, [{"x"}, {"y"}]>', "{devices=[2,2]<=[4]}"),
    ('#sdy.sharding<@mesh, [{"y"}, {}]>', "{devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}"),
    ('#sdy.sharding<@mesh, [{}, {}]>', "{replicated}"),
    ('#sdy.sharding<@mesh, [{"x", "y"}, {}]>', "{devices=[4,1]<=[4]}"),
    ('#sdy.sharding<@mesh, [{"y", "x"}, {}]>', "{devices=[4,1]<=[2,2]T(1,0)}"),
    ('#sdy.sharding<@m8, [{"b"}, {"a"}]>', "{devices=[4,2]<=[2,4]T(1,0)}"),
    ('#sdy.sharding<@p, [{"x"}]>', "{devices=[2]1,0}"),
    ('#sdy.sharding_per_value<[<@mesh, [{}, {\"y\"}]>]>', "{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}"),
])
def test_shardy_shardings_become_tile_assignments(sdy, xla):
    meshes = parse_meshes(MESHES)
    got = sdy_sharding(sdy, meshes)
    want = sharding_of(parse_module(module_with(xla, "f32[8]" if "[2]1,0" in xla else "f32[4,8]")).entry.root)
    assert got == want, (str(got), xla)


def test_shardy_manual_axes_and_frontend_attributes():
    text = ('HloModule m, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["x"=2, "y"=2]>}}\n\n'
            'ENTRY %e (p: f32[8,16]) -> f32[4,8] {\n  %p = f32[8,16]{1,0} parameter(0)\n'
            '  ROOT %c = f32[4,8]{1,0} custom-call(%p), custom_call_target="xla.sdy.GlobalToLocalShape", '
            'frontend_attributes={xla.sdy.in_shardings="#sdy.sharding_per_value<[<@mesh, [{\\"x\\"}, {\\"y\\"}]>]>",'
            'xla.sdy.manual_axes="#sdy<manual_axes{\\"x\\", \\"y\\"}>"}\n}\n')
    module = parse_module(text)
    root = module.entry.root
    assert manual_axes_of(frontend_attribute(root, "xla.sdy.manual_axes")) == ["x", "y"]
    s = sdy_sharding(frontend_attribute(root, "xla.sdy.in_shardings"), module_meshes(module))
    assert str(s) == "{devices=[2,2]<=[4]}"
    # an axis left out of a manual region's sharding is a manual subgroup
    s = sdy_sharding('#sdy.sharding<@mesh, [{"x"}, {}]>', module_meshes(module), manual_axes=["x", "y"])
    assert str(s) == "{devices=[2,1,2]<=[4] last_tile_dims={manual}}"


@pytest.mark.parametrize("text,groups", [
    ("mesh['axis_0'=2,'axis_1'=2] {'axis_0'}", [[0, 2], [1, 3]]),
    ("mesh['axis_0'=2,'axis_1'=2] {'axis_1'}", [[0, 1], [2, 3]]),
    ("mesh['axis_0'=2,'axis_1'=2], device_ids=([2,2]T(1,0)) {'axis_0'}", [[0, 1], [2, 3]]),
    ("mesh['a'=2,'b'=2,'c'=2] {'a','c'}", [[0, 1, 4, 5], [2, 3, 6, 7]]),
    ("mesh['axis_0'=1,'axis_1'=4] {'axis_1'}", [[0, 1, 2, 3]]),
])
def test_mesh_form_collective_groups(text, groups):
    n = len(groups) * len(groups[0])
    module = parse_module(f"HloModule m, num_partitions={n}\n\n%add (a: f32[], b: f32[]) -> f32[] {{\n"
                          "  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n  ROOT %r = f32[] add(%a, %b)\n}\n\n"
                          f"ENTRY %e (p: f32[4]) -> f32[4] {{\n  %p = f32[4] parameter(0)\n"
                          f"  ROOT %s = f32[4] all-reduce(%p), channel_id=1, replica_groups={text}, "
                          "use_global_device_ids=true, to_apply=%add\n}\n")
    root = module.entry.root
    assert [list(g) for g in root.attrs["replica_groups"].groups] == groups
    assert f"replica_groups={text}," in format_module(module)


@pytest.mark.parametrize("name", ["tp_mlp", "tp_attention"])
def test_xla_partitioned_dumps_run_on_their_devices(name):
    from pathlib import Path
    from hlo import check_module
    from hlo.spmd_run import run_spmd
    data = Path(__file__).resolve().parents[1] / "data" / "spmd"
    module = parse_module((data / f"{name}.opt.hlo").read_text())
    check_module(module)
    inputs = np.load(data / f"{name}.inputs.npz")
    want = np.load(data / f"{name}.expected.npz")["out0"]
    got = run_spmd(module, [inputs[f"arg{i}"] for i in range(len(inputs.files))], 4)
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)
