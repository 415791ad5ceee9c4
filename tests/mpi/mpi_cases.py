"""Every collective form as a small module on 4 devices, with per-device inputs.

The tests run each case in one process (devices as threads) and under mpiexec with 2
ranks (two devices each) and 4 ranks (one each), and require the same bits.
"""
from __future__ import annotations

import numpy as np

COMPUTATIONS = """
%add_f32 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(%a, %b)
}

%add_f64 (a: f64[], b: f64[]) -> f64[] {
  %a = f64[] parameter(0)
  %b = f64[] parameter(1)
  ROOT %r = f64[] add(%a, %b)
}

%mul_f32 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] multiply(%a, %b)
}

%max_f32 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] maximum(%a, %b)
}

%min_f32 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] minimum(%a, %b)
}

%axpb_f32 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %ab = f32[] multiply(%a, %b)
  ROOT %r = f32[] add(%ab, %a)
}

%add_bf16 (a: bf16[], b: bf16[]) -> bf16[] {
  %a = bf16[] parameter(0)
  %b = bf16[] parameter(1)
  ROOT %r = bf16[] add(%a, %b)
}

%add_s32 (a: s32[], b: s32[]) -> s32[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  ROOT %r = s32[] add(%a, %b)
}

%mul_s32 (a: s32[], b: s32[]) -> s32[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  ROOT %r = s32[] multiply(%a, %b)
}

%xor_s32 (a: s32[], b: s32[]) -> s32[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  ROOT %r = s32[] xor(%a, %b)
}

%min_s64 (a: s64[], b: s64[]) -> s64[] {
  %a = s64[] parameter(0)
  %b = s64[] parameter(1)
  ROOT %r = s64[] minimum(%a, %b)
}

%max_u8 (a: u8[], b: u8[]) -> u8[] {
  %a = u8[] parameter(0)
  %b = u8[] parameter(1)
  ROOT %r = u8[] maximum(%a, %b)
}

%and_pred (a: pred[], b: pred[]) -> pred[] {
  %a = pred[] parameter(0)
  %b = pred[] parameter(1)
  ROOT %r = pred[] and(%a, %b)
}

%or_pred (a: pred[], b: pred[]) -> pred[] {
  %a = pred[] parameter(0)
  %b = pred[] parameter(1)
  ROOT %r = pred[] or(%a, %b)
}
"""


def module(name: str, body: str, replicas: int = 4, partitions: int = 1, computations: str = "") -> str:
    return (f"HloModule {name}, replica_count={replicas}, num_partitions={partitions}\n{COMPUTATIONS}\n"
            f"{computations}\nENTRY %main {{\n{body}\n}}\n")


CASES: dict[str, str] = {}
INPUTS: dict[str, list] = {}     # per case: one (dtype, shape, kind) per parameter


def case(name: str, params: list, body: str, replicas: int = 4, partitions: int = 1, computations: str = "") -> None:
    CASES[name] = module(name, body, replicas, partitions, computations)
    INPUTS[name] = params


case("all_reduce_floats", [("f32", (64,), "nan")], """
  %p = f32[64] parameter(0)
  %s = f32[64] all-reduce(%p), replica_groups={}, to_apply=%add_f32
  %m = f32[64] all-reduce(%p), replica_groups={}, to_apply=%mul_f32
  %x = f32[64] all-reduce(%p), replica_groups={}, to_apply=%max_f32
  %n = f32[64] all-reduce(%p), replica_groups={{0,2},{1,3}}, to_apply=%min_f32
  %c = f32[64] all-reduce(%p), replica_groups={{3,0,1},{2}}, to_apply=%axpb_f32
  ROOT %t = (f32[64], f32[64], f32[64], f32[64], f32[64]) tuple(%s, %m, %x, %n, %c)""")

case("float_reductions", [("f32", (33,), "nan"), ("f64", (9,), "nan")], """
  %p = f32[33] parameter(0)
  %q = f64[9] parameter(1)
  %s = f32[33] all-reduce(%p), replica_groups={}, to_apply=%add_f32
  %m = f32[33] all-reduce(%p), replica_groups={{0,1},{2,3}}, to_apply=%mul_f32
  %x = f32[33] all-reduce(%p), replica_groups={{3,2,1,0}}, to_apply=%max_f32
  %n = f32[33] all-reduce(%p), replica_groups={}, to_apply=%min_f32
  %d = f64[9] all-reduce(%q), replica_groups={}, to_apply=%add_f64
  %b = f32[3,2,33] broadcast(%p), dimensions={2}
  %rs = f32[3,1,33] reduce-scatter(%b), replica_groups={{0,1},{2,3}}, dimensions={1}, to_apply=%max_f32
  ROOT %t = (f32[33], f32[33], f32[33], f32[33], f64[9], f32[3,1,33]) tuple(%s, %m, %x, %n, %d, %rs)""")

case("all_reduce_large", [("f32", (40000,), "normal"), ("bf16", (33001,), "normal")], """
  %p = f32[40000] parameter(0)
  %q = bf16[33001] parameter(1)
  %s = f32[40000] all-reduce(%p), replica_groups={}, to_apply=%add_f32
  %g = f32[40000] all-reduce(%p), replica_groups={{1,0},{3,2}}, to_apply=%axpb_f32
  %b = bf16[33001] all-reduce(%q), replica_groups={}, to_apply=%add_bf16
  ROOT %t = (f32[40000], f32[40000], bf16[33001]) tuple(%s, %g, %b)""")

# Chained all-reduces in pieces whose every result is kept: a result buffer is reused only when
# nothing refers to it any more (mpi_collectives keeps a pool of them per group and size).
case("all_reduce_large_results_kept", [("f32", (40000,), "normal")], """
  %p = f32[40000] parameter(0)
  %a = f32[40000] all-reduce(%p), replica_groups={}, to_apply=%add_f32
  %b = f32[40000] all-reduce(%a), replica_groups={}, to_apply=%add_f32
  %c = f32[40000] all-reduce(%b), replica_groups={}, to_apply=%axpb_f32
  %d = f32[40000] all-reduce(%c), replica_groups={}, to_apply=%add_f32
  %e = f32[40000] all-reduce(%d), replica_groups={}, to_apply=%add_f32
  ROOT %t = (f32[40000], f32[40000], f32[40000], f32[40000], f32[40000]) tuple(%a, %b, %c, %d, %e)""")

# A group's shared window grows when a larger all-reduce comes: in a loop of two turns, a small
# all-reduce, then a large one; the small one's views of the first window must not be used again.
case("all_reduce_growing_window", [("f32", (16,), "normal"), ("f32", (40000,), "normal")], """
  %p = f32[16] parameter(0)
  %q = f32[40000] parameter(1)
  %zero = s32[] constant(0)
  %init = (s32[], f32[16], f32[40000]) tuple(%zero, %p, %q)
  %w = (s32[], f32[16], f32[40000]) while(%init), condition=%grow_cond, body=%grow_body
  %a = f32[16] get-tuple-element(%w), index=1
  %b = f32[40000] get-tuple-element(%w), index=2
  ROOT %t = (f32[16], f32[40000]) tuple(%a, %b)""", computations="""
%grow_cond (s: (s32[], f32[16], f32[40000])) -> pred[] {
  %s = (s32[], f32[16], f32[40000]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %two = s32[] constant(2)
  ROOT %lt = pred[] compare(%i, %two), direction=LT
}

%grow_body (s: (s32[], f32[16], f32[40000])) -> (s32[], f32[16], f32[40000]) {
  %s = (s32[], f32[16], f32[40000]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %x = f32[16] get-tuple-element(%s), index=1
  %y = f32[40000] get-tuple-element(%s), index=2
  %one = s32[] constant(1)
  %j = s32[] add(%i, %one)
  %small = f32[16] all-reduce(%x), replica_groups={}, to_apply=%axpb_f32
  %large = f32[40000] all-reduce(%y), replica_groups={}, to_apply=%add_f32
  ROOT %t = (s32[], f32[16], f32[40000]) tuple(%j, %small, %large)
}
""")

case("all_reduce_integers", [("s32", (4096,), "huge"), ("s64", (17,), "huge"), ("u8", (33,), "normal"),
                             ("pred", (12,), "normal")], """
  %i = s32[4096] parameter(0)
  %l = s64[17] parameter(1)
  %u = u8[33] parameter(2)
  %p = pred[12] parameter(3)
  %a = s32[4096] all-reduce(%i), replica_groups={}, to_apply=%add_s32
  %m = s32[4096] all-reduce(%i), replica_groups={{0,1},{2,3}}, to_apply=%mul_s32
  %x = s32[4096] all-reduce(%i), replica_groups={}, to_apply=%xor_s32
  %n = s64[17] all-reduce(%l), replica_groups={}, to_apply=%min_s64
  %v = u8[33] all-reduce(%u), replica_groups={}, to_apply=%max_u8
  %pa = pred[12] all-reduce(%p), replica_groups={}, to_apply=%and_pred
  %po = pred[12] all-reduce(%p), replica_groups={{0,3},{1,2}}, to_apply=%or_pred
  ROOT %t = (s32[4096], s32[4096], s32[4096], s64[17], u8[33], pred[12], pred[12]) tuple(%a, %m, %x, %n, %v, %pa, %po)""")

case("all_reduce_variadic", [("f32", (8,), "normal"), ("f32", (8,), "normal")], """
  %v = f32[8] parameter(0)
  %i = f32[8] parameter(1)
  %r = (f32[8], f32[8]) all-reduce(%v, %i), replica_groups={}, to_apply=%axpb_f32
  %s = f32[8] all-reduce-start(%v), replica_groups={{0,1},{2,3}}, to_apply=%add_f32
  %d = f32[8] all-reduce-done(%s)
  %r0 = f32[8] get-tuple-element(%r), index=0
  %r1 = f32[8] get-tuple-element(%r), index=1
  ROOT %t = (f32[8], f32[8], f32[8]) tuple(%r0, %r1, %d)""")

case("channels_and_ids", [("f32", (6,), "normal")], """
  %p = f32[6] parameter(0)
  %rid = u32[] replica-id()
  %pid = u32[] partition-id()
  %flat = f32[6] all-reduce(%p), channel_id=1, replica_groups={{0,3},{1,2}}, use_global_device_ids=true, to_apply=%add_f32
  %xp = f32[6] all-reduce(%p), channel_id=2, replica_groups={}, to_apply=%add_f32
  %xrp = f32[6] all-reduce(%p), channel_id=3, replica_groups={}, use_global_device_ids=false, to_apply=%max_f32
  %xr = f32[6] all-reduce(%p), replica_groups={}, to_apply=%add_f32
  %g = f32[24] all-gather(%p), channel_id=4, replica_groups={{0,1}}, dimensions={0}
  ROOT %t = (u32[], u32[], f32[6], f32[6], f32[6], f32[6], f32[24]) tuple(%rid, %pid, %flat, %xp, %xrp, %xr, %g)""",
     replicas=2, partitions=2)

case("all_gather_forms", [("f32", (3, 2), "normal"), ("s32", (5,), "normal")], """
  %p = f32[3,2] parameter(0)
  %q = s32[5] parameter(1)
  %g0 = f32[12,2] all-gather(%p), replica_groups={}, dimensions={0}
  %g1 = f32[3,4] all-gather(%p), replica_groups={{2,0},{1,3}}, dimensions={1}
  %gt = (f32[12,2], s32[20]) all-gather(%p, %q), replica_groups={}, dimensions={0}
  %gs = (f32[3,2], f32[3,8]) all-gather-start(%p), replica_groups={}, dimensions={1}
  %gd = f32[3,8] all-gather-done(%gs)
  ROOT %t = (f32[12,2], f32[3,4], (f32[12,2], s32[20]), f32[3,8]) tuple(%g0, %g1, %gt, %gd)""")

case("reduce_scatter_and_all_to_all", [("f32", (8, 3), "normal"), ("f32", (2,), "normal")], """
  %p = f32[8,3] parameter(0)
  %q = f32[2] parameter(1)
  %rs = f32[2,3] reduce-scatter(%p), replica_groups={}, dimensions={0}, to_apply=%add_f32
  %rg = f32[4,3] reduce-scatter(%p), replica_groups={{0,2},{1,3}}, dimensions={0}, to_apply=%axpb_f32
  %aa = f32[8,3] all-to-all(%p), replica_groups={}, dimensions={0}
  %ag = f32[8,3] all-to-all(%p), replica_groups={{3,1},{0,2}}, dimensions={0}
  ROOT %t = (f32[2,3], f32[4,3], f32[8,3], f32[8,3]) tuple(%rs, %rg, %aa, %ag)""")

case("all_to_all_tuple", [("f32", (2,), "normal"), ("f32", (2,), "normal")], """
  %p = f32[2] parameter(0)
  %q = f32[2] parameter(1)
  ROOT %at = (f32[2], f32[2], f32[2], f32[2]) all-to-all(%p, %q, %q, %p), replica_groups={}""")

case("permute_and_broadcast", [("f32", (5,), "normal"), ("s32", (3,), "normal")], """
  %p = f32[5] parameter(0)
  %q = s32[3] parameter(1)
  %rot = f32[5] collective-permute(%p), source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  %part = f32[5] collective-permute(%p), source_target_pairs={{0,2},{3,1}}
  %both = (f32[5], s32[3]) collective-permute(%p, %q), source_target_pairs={{1,0},{0,1},{3,2}}
  %st = (f32[5], f32[5], u32[], u32[]) collective-permute-start(%p), source_target_pairs={{2,0},{0,2}}
  %dn = f32[5] collective-permute-done(%st)
  %bc = f32[5] collective-broadcast(%p), replica_groups={{2,0,1,3}}
  %bg = s32[3] collective-broadcast(%q), replica_groups={{1,0},{3,2}}
  ROOT %t = (f32[5], f32[5], (f32[5], s32[3]), f32[5], f32[5], s32[3]) tuple(%rot, %part, %both, %dn, %bc, %bg)""")

case("ragged_all_to_all", [("f32", (6, 2), "normal"), ("f32", (8, 2), "zeros"), ("s32", (4,), "ragged_in_offsets"),
                           ("s32", (4,), "ragged_send"), ("s32", (4,), "ragged_out_offsets"),
                           ("s32", (4,), "ragged_recv")], """
  %in = f32[6,2] parameter(0)
  %out = f32[8,2] parameter(1)
  %io = s32[4] parameter(2)
  %ss = s32[4] parameter(3)
  %oo = s32[4] parameter(4)
  %rs = s32[4] parameter(5)
  ROOT %r = f32[8,2] ragged-all-to-all(%in, %out, %io, %ss, %oo, %rs), replica_groups={}""")

case("send_recv_and_async", [("f32", (4,), "normal")], """
  %p = f32[4] parameter(0)
  %tok = token[] after-all()
  %snd = (f32[4], u32[], token[]) send(%p, %tok), channel_id=7
  %sd = token[] send-done(%snd), channel_id=7
  %rcv = (f32[4], u32[], token[]) recv(%tok), channel_id=7
  %rd = (f32[4], token[]) recv-done(%rcv), channel_id=7
  %got = f32[4] get-tuple-element(%rd), index=0
  %as = ((f32[4]), f32[4], u32[]) async-start(%got), calls=%wrapped_all_reduce
  %ad = f32[4] async-done(%as)
  ROOT %t = (f32[4], f32[4]) tuple(%got, %ad)""")
CASES["send_recv_and_async"] = CASES["send_recv_and_async"].replace("ENTRY %main", """%wrapped_all_reduce (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %r = f32[4] all-reduce(%x), replica_groups={}, to_apply=%add_f32
}

ENTRY %main""")


# What the compiled backend does not compile (docs/ARCHITECTURE.md): ragged exchanges, the
# tuple form of all-to-all, tokens and asynchronous wrappers.
NOT_COMPILED = {"ragged_all_to_all", "all_to_all_tuple", "send_recv_and_async"}

# What hlo_collectives_mpi.c runs (reductions with a single binary op on pred, integers, f32, f64).
AOT = ["float_reductions", "all_reduce_integers", "channels_and_ids", "all_gather_forms", "permute_and_broadcast"]


# --------------------------------------------------------------------------- inputs

# Ragged all-to-all: group position p sends 1 + (p + j) % 2 rows to position j.
def _ragged(p: int, kind: str) -> np.ndarray:
    n = 4
    send = [1 + (p + j) % 2 for j in range(n)]
    recv = [1 + (q + p) % 2 for q in range(n)]
    values = {"ragged_send": send, "ragged_recv": recv,
              "ragged_in_offsets": np.cumsum([0] + send[:-1]),
              # where p's rows land in j's output: after the rows of the senders before p
              "ragged_out_offsets": [sum(1 + (q + j) % 2 for q in range(p)) for j in range(n)]}
    return np.asarray(values[kind], np.int32)


def device_inputs(name: str, devices: int = 4, seed: int = 0) -> dict[str, np.ndarray]:
    """dev{d}_arg{i} for every device and parameter of a case (file conventions: bf16 as raw bits)."""
    import ml_dtypes
    rng = np.random.default_rng(seed)
    arrays = {}
    for d in range(devices):
        for i, (dtype, shape, kind) in enumerate(INPUTS[name]):
            arrays[f"dev{d}_arg{i}"] = _array(rng, dtype, shape, kind, d, ml_dtypes)
    return arrays


def _array(rng, dtype: str, shape, kind: str, device: int, ml_dtypes) -> np.ndarray:
    if kind.startswith("ragged"):
        return _ragged(device, kind)
    if kind == "zeros":
        return np.zeros(shape, np.float32)
    if dtype == "pred":
        return rng.random(shape) < 0.7
    if dtype in ("s32", "s64", "u8"):
        info = np.iinfo(np.dtype({"s32": np.int32, "s64": np.int64, "u8": np.uint8}[dtype]))
        if kind == "huge":
            return rng.integers(info.min, info.max, size=shape, dtype=info.dtype, endpoint=True)
        return rng.integers(0, min(info.max, 100), size=shape).astype(info.dtype)
    x = (rng.standard_normal(shape) * (1 + device)).astype(np.float64 if dtype == "f64" else np.float32)
    if kind == "nan":
        x[::7] = np.nan
        x[3] = -0.0
        x[5] = np.inf if device % 2 else -np.inf
    if dtype == "bf16":
        return x.astype(ml_dtypes.bfloat16).view(np.uint16)
    return x
