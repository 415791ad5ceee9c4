"""Typed shardings: XLA's `sharding={...}` attribute and Shardy's `xla.sdy.*` attributes.

The parser keeps `sharding=` as a generic value (hlo/values.py, checked by
`hlo.attributes.check_sharding`); `HloSharding.from_value` turns it into this typed form and
`to_value` / `str()` give it back, printed exactly as the generic printer prints it. Shardy's
frontend attributes (`xla.sdy.meshes`, `xla.sdy.sharding`, `xla.sdy.in_shardings`,
`xla.sdy.out_shardings`, `xla.sdy.manual_axes`) are read into the same representation
(`sdy_sharding`, `parse_meshes`).

A tiled sharding has a tile assignment: an array of device ids whose shape is the number of
tiles along each array dimension, followed by subgroup dimensions (`last_tile_dim_replicate`
is one replicated subgroup; `last_tile_dims={manual, replicated}` name theirs).
`device_grid()` gives that array with every subgroup merged into one trailing replication
dimension, which is what the propagation and the partitioner reason with.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from . import values as V
from .generic_attributes import check_sharding, format_sharding, is_tuple_sharding

REPLICATED = "replicated"
MAXIMAL = "maximal"
TILED = "tiled"
MANUAL = "manual"
UNKNOWN = "unknown"
UNREDUCED = "unreduced"
TUPLE = "tuple"


@dataclass(frozen=True)
class HloSharding:
    kind: str
    tile_shape: tuple[int, ...] = ()          # tile assignment dims, subgroup dims included
    devices: tuple[int, ...] = ()             # tile assignment, row-major
    iota: Optional[tuple[tuple[int, ...], tuple[int, ...]]] = field(default=None, compare=False)
    replicate_last: bool = False              # last_tile_dim_replicate
    subgroups: tuple[str, ...] = ()           # last_tile_dims={...}
    device: int = -1                          # maximal device=N
    elements: tuple["HloSharding", ...] = ()  # tuple shardings
    extra: tuple = field(default=(), compare=False)   # metadata, shard_as/shard_like items, kept verbatim
    explicit: bool = field(default=False, compare=False)  # written as a device list: printed as one

    # ------------------------------------------------------------------ constructors
    @staticmethod
    def replicated() -> "HloSharding":
        return HloSharding(REPLICATED)

    @staticmethod
    def manual() -> "HloSharding":
        return HloSharding(MANUAL)

    @staticmethod
    def maximal(device: int) -> "HloSharding":
        return HloSharding(MAXIMAL, device=device)

    @staticmethod
    def tuple_of(elements: Sequence["HloSharding"]) -> "HloSharding":
        return HloSharding(TUPLE, elements=tuple(elements))

    @staticmethod
    def from_grid(grid: np.ndarray, data_rank: Optional[int] = None) -> "HloSharding":
        """A tiled (or replicated) sharding from a device grid of shape tiles + (replication,).

        `grid` has one dimension per array dimension plus, when `data_rank` says so
        (data_rank == grid.ndim - 1), a trailing replication dimension."""
        grid = np.asarray(grid)
        if data_rank is None:
            data_rank = grid.ndim
        tiles = tuple(int(d) for d in grid.shape[:data_rank])
        rep = int(np.prod(grid.shape[data_rank:], dtype=np.int64)) if grid.ndim > data_rank else 1
        if all(t == 1 for t in tiles):
            return HloSharding.replicated()
        flat = tuple(int(d) for d in grid.reshape(-1))
        if rep > 1:
            return HloSharding(TILED, tiles + (rep,), flat, replicate_last=True)
        return HloSharding(TILED, tiles, flat)

    # ------------------------------------------------------------------ queries
    @property
    def is_tuple(self) -> bool:
        return self.kind == TUPLE

    @property
    def is_replicated(self) -> bool:
        return self.kind == REPLICATED or (self.kind == TILED and all(t == 1 for t in self.data_tiles)
                                            and not self.is_manual_subgroup)

    @property
    def is_tiled(self) -> bool:
        return self.kind == TILED

    @property
    def is_manual(self) -> bool:
        return self.kind == MANUAL

    @property
    def is_manual_subgroup(self) -> bool:
        return MANUAL in self.subgroups

    @property
    def num_subgroup_dims(self) -> int:
        return 1 if self.replicate_last else len(self.subgroups)

    @property
    def data_rank(self) -> int:
        return len(self.tile_shape) - self.num_subgroup_dims

    @property
    def data_tiles(self) -> tuple[int, ...]:
        return self.tile_shape[:self.data_rank]

    @property
    def num_devices(self) -> int:
        return len(self.devices)

    def device_grid(self) -> np.ndarray:
        """Tile assignment with all subgroup dimensions merged into one trailing dimension."""
        arr = np.array(self.devices, dtype=np.int64).reshape(self.tile_shape)
        rep = int(np.prod(self.tile_shape[self.data_rank:], dtype=np.int64))
        return arr.reshape(self.data_tiles + (rep,))

    def grid_for(self, rank: int, devices: Sequence[int]) -> np.ndarray:
        """Device grid of shape (tiles per dim..., replication) over `devices` for an array of `rank`."""
        if self.kind in (REPLICATED, UNKNOWN, UNREDUCED) or (self.kind == TILED and self.data_rank == 0):
            return np.array(list(devices), dtype=np.int64).reshape((1,) * rank + (-1,))
        if self.kind == MAXIMAL:
            raise ValueError("a maximal sharding has no device grid")
        if self.kind != TILED:
            raise ValueError(f"a {self.kind} sharding has no device grid")
        if self.data_rank != rank:
            raise ValueError(f"sharding {self} has {self.data_rank} tiled dimensions for an array of rank {rank}")
        return self.device_grid()

    def leaves(self) -> list["HloSharding"]:
        return list(self.elements) if self.is_tuple else [self]

    # ------------------------------------------------------------------ text
    @staticmethod
    def from_value(v) -> "HloSharding":
        check_sharding(v)
        if is_tuple_sharding(v):
            return HloSharding(TUPLE, elements=tuple(_single_from_items(leaf.items) for leaf in v.items))
        return _single_from_items(v.items)

    def to_value(self) -> V.Braced:
        if self.is_tuple:
            return V.Braced(tuple(e.to_value() for e in self.elements))
        items: list = []
        if self.kind in (REPLICATED, MANUAL, UNKNOWN, UNREDUCED):
            items.append(V.Ident(self.kind))
        elif self.kind == MAXIMAL:
            items += [V.Ident("maximal"), V.Keyed("device", self.device)]
        else:
            if self.iota is not None:
                items.append(V.Keyed("devices", V.Iota(self.tile_shape, self.iota[0], self.iota[1])))
            elif not self.explicit and tuple(self.devices) == tuple(range(len(self.devices))):
                items.append(V.Keyed("devices", V.Iota(self.tile_shape, (len(self.devices),), ())))
            else:
                items.append(V.Keyed("devices", V.Bracketed(self.tile_shape)))
                items.extend(self.devices)
            if self.replicate_last:
                items.append(V.Ident("last_tile_dim_replicate"))
            elif self.subgroups:
                items.append(V.Keyed("last_tile_dims", V.Braced(tuple(V.Ident(s) for s in self.subgroups))))
        items.extend(self.extra)
        return V.Braced(tuple(items))

    def __str__(self) -> str:
        return format_sharding(self.to_value())


def _single_from_items(items) -> HloSharding:
    kind = None
    tile_shape: tuple[int, ...] = ()
    devices: tuple[int, ...] = ()
    iota = None
    replicate_last = False
    subgroups: tuple[str, ...] = ()
    device = -1
    extra = []
    i = 0
    while i < len(items):
        item = items[i]
        if isinstance(item, V.Ident) and item.text in (REPLICATED, MANUAL, UNKNOWN, UNREDUCED, MAXIMAL):
            kind = item.text
        elif isinstance(item, V.Ident) and item.text == "last_tile_dim_replicate":
            replicate_last = True
        elif isinstance(item, V.Ident) and item.text in ("shard_as", "shard_like"):
            extra += [item, items[i + 1]]
            i += 1
        elif isinstance(item, V.Keyed) and item.key == "device":
            device = item.value
        elif isinstance(item, V.Keyed) and item.key == "devices":
            kind = TILED
            if isinstance(item.value, V.Iota):
                tile_shape = tuple(item.value.dims)
                iota = (tuple(item.value.reshape_dims), tuple(item.value.transpose))
                devices = iota_devices(iota[0], iota[1])
            else:
                tile_shape = tuple(item.value.items)
                ids = []
                while i + 1 < len(items) and isinstance(items[i + 1], int) and not isinstance(items[i + 1], bool):
                    ids.append(items[i + 1])
                    i += 1
                devices = tuple(ids)
        elif isinstance(item, V.Keyed) and item.key == "last_tile_dims":
            subgroups = tuple(t.text for t in item.value.items)
        else:
            extra.append(item)
        i += 1
    return HloSharding(kind, tile_shape, devices, iota, replicate_last, subgroups, device, (), tuple(extra),
                       explicit=kind == TILED and iota is None)


def iota_devices(reshape: Sequence[int], transpose: Sequence[int] = ()) -> tuple[int, ...]:
    n = math.prod(reshape)
    arr = np.arange(n).reshape(tuple(reshape))
    if transpose:
        arr = arr.transpose(tuple(transpose))
    return tuple(int(d) for d in arr.reshape(-1))


def sharding_of(inst) -> Optional[HloSharding]:
    """The typed sharding of an instruction (from `sharding=`), or None."""
    if inst.sharding is None:
        return None
    if isinstance(inst.sharding, HloSharding):
        return inst.sharding
    return HloSharding.from_value(inst.sharding)


def set_sharding(inst, sharding: Optional[HloSharding]) -> None:
    """Store a sharding on an instruction as the generic value the printer knows."""
    inst.sharding = None if sharding is None else sharding.to_value()


# --------------------------------------------------------------------------- Shardy

@dataclass(frozen=True)
class Mesh:
    axes: tuple[tuple[str, int], ...]
    device_ids: Optional[tuple[int, ...]] = None

    @property
    def size(self) -> int:
        return math.prod(s for _, s in self.axes)

    def devices(self) -> np.ndarray:
        ids = self.device_ids if self.device_ids else tuple(range(self.size))
        return np.array(ids, dtype=np.int64).reshape(tuple(s for _, s in self.axes) or ())

    def axis_size(self, name: str) -> int:
        for n, s in self.axes:
            if n == name:
                return s
        raise ValueError(f"mesh has no axis {name!r}")


_MESH = re.compile(r'(@?[\w.$-]+)\s*=\s*#sdy\.mesh<\s*\[(.*?)\](?:\s*,\s*device_ids\s*=\s*\[([\d,\s]*)\])?\s*>')
_AXIS = re.compile(r'"([^"]+)"\s*=\s*(\d+)')


def parse_mesh_body(axes_text: str, ids_text: Optional[str] = None) -> Mesh:
    axes = tuple((n, int(s)) for n, s in _AXIS.findall(axes_text))
    ids = tuple(int(x) for x in ids_text.replace(" ", "").split(",") if x) if ids_text else None
    return Mesh(axes, ids)


def parse_meshes(text: str) -> dict[str, Mesh]:
    """`{mesh = #sdy.mesh<["x"=2, "y"=2]>, ...}` (the value of xla.sdy.meshes) -> {name: Mesh}."""
    return {name.lstrip("@"): parse_mesh_body(axes, ids) for name, axes, ids in _MESH.findall(text)}


def module_meshes(module) -> dict[str, Mesh]:
    fa = module.config.frontend_attributes
    text = _frontend_value(fa, "xla.sdy.meshes")
    return parse_meshes(text) if text else {}


def _frontend_value(fa, key: str) -> Optional[str]:
    """A frontend attribute's value as text (strings unescaped, {dicts} as written)."""
    if fa is None:
        return None
    v = getattr(fa, "items", {}).get(key)
    if v is None:
        return None
    return v.text if isinstance(v, V.RawBraces) else str(v)


def frontend_attribute(inst_or_module, key: str) -> Optional[str]:
    fa = getattr(inst_or_module, "frontend_attributes", None)
    if fa is None and hasattr(inst_or_module, "config"):
        fa = inst_or_module.config.frontend_attributes
    return _frontend_value(fa, key)


_DIM = re.compile(r'\{([^{}]*)\}')


def _split_top(text: str) -> list[str]:
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "<[{(":
            depth += 1
        elif ch in ">]})":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    if text[start:].strip():
        out.append(text[start:].strip())
    return out


def _tensor_sharding(body: str, meshes: dict[str, Mesh]) -> tuple[Mesh, list[list[str]], list[str]]:
    """`@mesh, [{"x"}, {}], replicated={"y"}` -> (mesh, axes per dim, replicated axes)."""
    parts = _split_top(body)
    ref = parts[0]
    if ref.startswith("@"):
        name = ref[1:]
        if name not in meshes:
            raise ValueError(f"unknown Shardy mesh @{name}")
        mesh = meshes[name]
    else:
        m = re.match(r'#?(?:sdy\.)?mesh<\s*\[(.*?)\](?:\s*,\s*device_ids\s*=\s*\[([\d,\s]*)\])?\s*>', ref)
        if not m:
            raise ValueError(f"cannot read the Shardy mesh {ref!r}")
        mesh = parse_mesh_body(m.group(1), m.group(2))
    dims_text = parts[1].strip()
    if not (dims_text.startswith("[") and dims_text.endswith("]")):
        raise ValueError(f"cannot read the Shardy dimension shardings {dims_text!r}")
    dims = []
    for d in _DIM.findall(dims_text[1:-1]):
        names = re.findall(r'"([^"]+)"(\s*:\s*\()?', d)
        for n, sub in names:
            if sub:
                raise ValueError("Shardy sub-axes (\"x\":(1)2) are not supported")
        dims.append([n for n, _ in names])
    replicated = []
    for p in parts[2:]:
        if p.startswith("replicated="):
            replicated = re.findall(r'"([^"]+)"', p)
    return mesh, dims, replicated


def sdy_to_hlo(mesh: Mesh, dims: list[list[str]], manual_axes: Sequence[str] = ()) -> HloSharding:
    """A Shardy tensor sharding (axes per dimension) as an XLA tile assignment."""
    names = [n for n, _ in mesh.axes]
    used = [a for d in dims for a in d]
    rest = [a for a in names if a not in used]
    manual_rest = [a for a in rest if a in manual_axes]
    repl_rest = [a for a in rest if a not in manual_axes]
    order = [names.index(a) for a in used + manual_rest + repl_rest]
    grid = mesh.devices().transpose(order) if names else mesh.devices()
    tiles = tuple(math.prod(mesh.axis_size(a) for a in d) for d in dims)
    msize = math.prod(mesh.axis_size(a) for a in manual_rest)
    rsize = math.prod(mesh.axis_size(a) for a in repl_rest)
    if mesh.size == 1 or (all(t == 1 for t in tiles) and msize == 1):
        return HloSharding.replicated()
    if msize > 1:
        sub = (MANUAL,) + ((REPLICATED,) if rsize > 1 else ())
        shape = tiles + (msize,) + ((rsize,) if rsize > 1 else ())
        return HloSharding(TILED, shape, tuple(int(d) for d in grid.reshape(-1)), subgroups=sub)
    return HloSharding.from_grid(grid.reshape(tiles + (rsize,)), len(tiles))


def sdy_sharding(text: str, meshes: dict[str, Mesh], manual_axes: Sequence[str] = ()) -> HloSharding:
    """`#sdy.sharding<@mesh, [...]>` or `#sdy.sharding_per_value<[<@mesh, [...]>, ...]>`."""
    text = text.strip()
    m = re.match(r'#sdy\.sharding_per_value<\s*\[(.*)\]\s*>$', text, re.S)
    if m:
        values = [_strip_angle(v) for v in _split_top(m.group(1))]
        shardings = [sdy_to_hlo(*_tensor_sharding(v, meshes)[:2], manual_axes) for v in values]
        return shardings[0] if len(shardings) == 1 else HloSharding.tuple_of(shardings)
    m = re.match(r'#sdy\.sharding<(.*)>$', text, re.S)
    if not m:
        raise ValueError(f"cannot read the Shardy sharding {text!r}")
    mesh, dims, _ = _tensor_sharding(m.group(1), meshes)
    return sdy_to_hlo(mesh, dims, manual_axes)


def sdy_sharding_per_value(text: str, meshes: dict[str, Mesh], manual_axes: Sequence[str] = ()) -> list:
    """Each value's sharding of a `#sdy.sharding_per_value<[...]>`, with its mesh and axes."""
    m = re.match(r'#sdy\.sharding_per_value<\s*\[(.*)\]\s*>$', text.strip(), re.S)
    if not m:
        raise ValueError(f"cannot read the Shardy shardings {text!r}")
    out = []
    for v in _split_top(m.group(1)):
        mesh, dims, _ = _tensor_sharding(_strip_angle(v), meshes)
        out.append((sdy_to_hlo(mesh, dims, manual_axes), mesh, dims))
    return out


def _strip_angle(v: str) -> str:
    v = v.strip()
    if v.startswith("<") and v.endswith(">"):
        return v[1:-1]
    return v


def manual_axes_of(text: str) -> list[str]:
    """`#sdy<manual_axes{"x", "y"}>` -> ['x', 'y']."""
    return re.findall(r'"([^"]+)"', text or "")
