"""XLA's mesh form of collective groups: `mesh['x'=2,'y'=4], device_ids=(...) {'y','x':(1)2}`.

A mesh names its axes and their sizes; its devices are the plain order (iota), a reshaped
and transposed iota `device_ids=([2,4]T(1,0))`, or a permutation `device_ids=(3,1,2,0)`.
The braces list the axes (or sub-axes `'x':(pre-size)size`) a collective runs over: each
group is the devices that differ only along those, ordered as listed. Every rule XLA's
parser and mesh classes check is checked here (ValueError naming what is wrong), and `text`
spells a mesh as XLA prints it.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Optional

import numpy as np


_MESH_FORM = re.compile(r"mesh\[(?P<axes>[^\]]*)\](?:\s*,\s*device_ids\s*=\s*\((?P<ids>[^{]*)\))?\s*\{(?P<refs>[^}]*)\}\s*$")
_MESH_AXIS = re.compile(r"""\s*(['"])(.*?)\1\s*=\s*(\d+)\s*$""")
_MESH_REF = re.compile(r"""\s*(['"])(.*?)\1\s*(?::\s*\(\s*(\d+)\s*\)\s*(\d+))?\s*$""")
_MESH_IOTA = re.compile(r"\s*\[([\d,\s]*)\]\s*T\(([\d,\s]*)\)\s*$")


def _int_items(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


@dataclass
class MeshGroupsText:
    """`mesh['x'=2,'y'=4], device_ids=(...) {'y','x':(1)2}`, checked as XLA checks it."""
    names: list[str]
    sizes: list[int]
    devices: np.ndarray                       # the device array, shaped like the mesh
    ids_text: Optional[str]                   # device_ids as written (None: iota)
    refs: list[tuple[int, Optional[tuple[int, int]]]]  # (axis, (pre-size, size) of a sub-axis)

    @staticmethod
    def parse(text: str) -> "MeshGroupsText":
        m = _MESH_FORM.match(text)
        if not m:
            raise ValueError("mesh groups are written mesh['x'=2,'y'=2] {'y'}, with an optional "
                             "device_ids=(...) after the mesh")
        names, sizes = [], []
        for item in filter(str.strip, m.group("axes").split(",")):
            axis = _MESH_AXIS.match(item)
            if not axis:
                raise ValueError(f"a mesh axis is written 'name'=size, not {item.strip()}")
            if axis.group(2) in names:
                raise ValueError(f"the mesh names axis '{axis.group(2)}' twice")
            names.append(axis.group(2))
            sizes.append(int(axis.group(3)))
        devices = _mesh_devices(m.group("ids"), sizes)
        mesh = MeshGroupsText(names, sizes, devices, m.group("ids") and m.group("ids").strip(), [])
        for item in filter(str.strip, m.group("refs").split(",")):
            mesh.refs.append(mesh._axis_ref(item))
        mesh._check_refs()
        return mesh

    def _axis_ref(self, item: str) -> tuple[int, Optional[tuple[int, int]]]:
        ref = _MESH_REF.match(item)
        if not ref:
            raise ValueError(f"a grouped axis is written 'name' or 'name':(pre-size)size, not {item.strip()}")
        if ref.group(2) not in self.names:
            raise ValueError(f"axis '{ref.group(2)}' is not an axis of the mesh (axes: "
                             + ", ".join(f"'{n}'" for n in self.names) + ")")
        axis = self.names.index(ref.group(2))
        if ref.group(3) is None:
            return axis, None
        pre, size, full = int(ref.group(3)), int(ref.group(4)), self.sizes[axis]
        if pre < 1 or size < 2 or size >= full or full % (pre * size):
            raise ValueError(f"sub-axis '{ref.group(2)}':({pre}){size} must have a pre-size of at least 1 and a "
                             f"size of at least 2 below the axis size {full}, and pre-size x size must divide {full}")
        return axis, (pre, size)

    def _check_refs(self) -> None:
        for i, (a, sa) in enumerate(self.refs):
            for b, sb in self.refs[i + 1:]:
                if a == b and (sa is None or sb is None or _sub_axes_overlap(sa, sb)):
                    raise ValueError(f"grouped axes overlap: axis '{self.names[a]}' is listed more than once")
        for (a, sa), (b, sb) in zip(self.refs, self.refs[1:]):
            if a == b and sa and sb and sa[0] * sa[1] == sb[0]:
                raise ValueError(f"adjacent sub-axes of '{self.names[a]}' must be written as one sub-axis")
        if self.group_size() < 2:
            raise ValueError(f"mesh groups must have more than one device per group, but have {self.group_size()}")

    def group_size(self) -> int:
        return math.prod(sa[1] if sa else self.sizes[a] for a, sa in self.refs)

    def groups(self) -> np.ndarray:
        """XLA's replica groups: each mesh axis split into its sub-axes, grouped ones moved last."""
        split_sizes, offsets, grouped = [], [], [0] * len(self.refs)
        for axis, full in enumerate(self.sizes):
            offsets.append(len(split_sizes))
            listed = [k for k, (a, _) in enumerate(self.refs) if a == axis]
            if any(self.refs[k][1] is None for k in listed):  # the whole axis
                grouped[listed[0]] = len(split_sizes)
                split_sizes.append(full)
                continue
            done = 1
            for k in sorted(listed, key=lambda k: self.refs[k][1][0]):
                pre, size = self.refs[k][1]
                if pre != done:
                    split_sizes.append(pre // done)
                grouped[k] = len(split_sizes)
                split_sizes.append(size)
                done = pre * size
            if done != full:
                split_sizes.append(full // done)
        rest = [d for d in range(len(split_sizes)) if d not in grouped]
        return self.devices.reshape(split_sizes).transpose(rest + grouped).reshape(-1, self.group_size())

    def text(self) -> str:
        """XLA's spelling (the device ids only when they are not the plain iota)."""
        axes = ",".join(f"'{n}'={s}" for n, s in zip(self.names, self.sizes))
        ids = f", device_ids=({self.ids_text.replace(' ', '')})" if self.ids_text and not _plain_iota(self.ids_text) else ""
        refs = ",".join(f"'{self.names[a]}'" + (f":({sa[0]}){sa[1]}" if sa else "") for a, sa in self.refs)
        return f"mesh[{axes}]{ids} {{{refs}}}"


def _sub_axes_overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """True unless two sub-axes of one axis cover separate, nested ranges (XLA's CanCoexistWithoutOverlap)."""
    (pa, sa), (pb, sb) = a, b
    if pa * sa > pb and pb * sb > pa:
        return True
    return max(pa, pb) % min(pa * sa, pb * sb) != 0


def _plain_iota(ids: str) -> bool:
    iota = _MESH_IOTA.match(ids)
    return bool(iota) and _int_items(iota.group(2)) == list(range(len(_int_items(iota.group(2)))))


MAX_DEVICES = 1 << 20  # far more than any machine runs one program on


def _mesh_devices(ids: Optional[str], sizes: list[int]) -> np.ndarray:
    total = math.prod(sizes)
    if total > MAX_DEVICES:
        raise ValueError(f"a mesh of {total} devices is more than the {MAX_DEVICES} this toolchain handles")
    if ids is None:
        return np.arange(total).reshape(sizes)
    iota = _MESH_IOTA.match(ids)
    if iota:
        dims, perm = _int_items(iota.group(1)), _int_items(iota.group(2))
        if math.prod(dims) != total or sorted(perm) != list(range(len(dims))):
            raise ValueError(f"device_ids=({ids.strip()}): [{','.join(map(str, dims))}] must hold the mesh's {total} "
                             "devices and T(...) must permute its dimensions")
        return np.arange(total).reshape(dims).transpose(perm).reshape(sizes)
    try:
        listed = _int_items(ids)
    except ValueError:
        raise ValueError(f"device_ids are written ([dims]T(perm)) or as a list of ids, not ({ids.strip()})") from None
    if len(listed) != total or sorted(listed) != list(range(total)):
        raise ValueError(f"device_ids=({ids.strip()}) must list each of the mesh's {total} devices once")
    if listed == list(range(total)):
        raise ValueError(f"device_ids=({ids.strip()}) is the plain order: leave device_ids out")
    return np.array(listed).reshape(sizes)
