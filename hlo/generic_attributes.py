"""Attributes kept as the generic values the grammar produced (hlo/values.py): sharding,
statistics, origin, result_accuracy and domain. These functions check their structure when
parsed and print them in XLA's canonical spelling; hlo.sharding gives shardings a typed form.
"""
from __future__ import annotations

from . import values as V
from .textutil import format_float


def format_int_list(values) -> str:
    return "{" + ",".join(str(v) for v in values) + "}"


_SHARDING_KINDS = ("replicated", "manual", "unknown", "unreduced", "maximal")
_SUBGROUP_TYPES = ("manual", "replicated", "unreduced", "maximal")
_SHARDING_HELP = ("expected replicated, manual, unknown, unreduced, maximal device=N, devices=[...]..., "
                  "last_tile_dim_replicate, last_tile_dims={...}, shard_as N, shard_like N or metadata={...}")


def _plain_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def is_tuple_sharding(v) -> bool:
    """True for `{}` and `{{...}, {...}}` (a sharding per tuple leaf)."""
    return isinstance(v, V.Braced) and all(isinstance(i, V.Braced) for i in v.items)


def check_sharding(v):
    if not isinstance(v, V.Braced):
        raise ValueError("expected a sharding like {replicated} or {devices=[2,1]0,1}")
    if is_tuple_sharding(v):
        for leaf in v.items:
            _check_single_sharding(leaf.items)
    else:
        _check_single_sharding(v.items)
    return v


def _check_single_sharding(items) -> None:
    kinds = []
    i = 0
    while i < len(items):
        item = items[i]
        if isinstance(item, V.Ident) and item.text in _SHARDING_KINDS:
            kinds.append(item.text)
        elif isinstance(item, V.Ident) and item.text == "last_tile_dim_replicate":
            pass
        elif isinstance(item, V.Ident) and item.text in ("shard_as", "shard_like"):
            if i + 1 >= len(items) or not _plain_int(items[i + 1]):
                raise ValueError(f"{item.text} takes a group id, e.g. {item.text} 1")
            i += 1
        elif isinstance(item, V.Keyed) and item.key == "device":
            if "maximal" not in kinds or not _plain_int(item.value):
                raise ValueError("device=N comes after 'maximal', e.g. {maximal device=0}")
        elif isinstance(item, V.Keyed) and item.key == "devices":
            kinds.append("devices")
            i = _check_tile_assignment(item.value, items, i)
        elif isinstance(item, V.Keyed) and item.key == "last_tile_dims":
            if not (isinstance(item.value, V.Braced) and item.value.items and all(
                    isinstance(t, V.Ident) and t.text in _SUBGROUP_TYPES for t in item.value.items)):
                raise ValueError("last_tile_dims takes subgroup types, e.g. last_tile_dims={manual, replicated}")
        elif isinstance(item, V.Keyed) and item.key == "metadata":
            if not isinstance(item.value, V.RawBraces):
                raise ValueError("sharding metadata is written metadata={op_name=\"...\"}")
        else:
            raise ValueError(f"unexpected '{_show(item)}' in a sharding; {_SHARDING_HELP}")
        i += 1
    if len(kinds) != 1:
        what = "one of" if not kinds else "only one of"
        raise ValueError(f"a sharding needs {what} replicated, manual, unknown, unreduced, maximal or devices=")


def _check_tile_assignment(value, items, i) -> int:
    """Index of the last item of `devices=[dims]ids...` or `devices=[dims]<=[reshape]T(perm)`."""
    if isinstance(value, V.Iota):
        total = 1
        for d in value.dims:
            total *= d
        count = 1
        for d in value.reshape_dims:
            count *= d
        if total != count:
            raise ValueError(f"devices=[{','.join(map(str, value.dims))}] has {total} tiles but the iota list "
                             f"has {count} devices")
        if value.transpose and sorted(value.transpose) != list(range(len(value.reshape_dims))):
            raise ValueError("T(...) must be a permutation of the iota reshape dimensions")
        return i
    if not (isinstance(value, V.Bracketed) and value.items and all(_plain_int(d) for d in value.items)):
        raise ValueError("devices= takes tile dimensions like devices=[2,2]0,1,2,3 or devices=[2,2]<=[4]")
    total = 1
    for d in value.items:
        total *= d
    ids = 0
    while i + 1 < len(items) and _plain_int(items[i + 1]):
        ids += 1
        i += 1
    if ids != total:
        raise ValueError(f"devices=[{','.join(map(str, value.items))}] needs {total} device ids, got {ids}")
    return i


def format_sharding(v) -> str:
    if is_tuple_sharding(v):
        parts = [(f"/*index={i}*/" if i and i % 5 == 0 else "") + format_sharding(leaf)
                 for i, leaf in enumerate(v.items)]
        return "{" + ", ".join(parts) + "}"
    return "{" + " ".join(text for _, text in sorted(_sharding_parts(v.items), key=lambda p: p[0])) + "}"


def _sharding_parts(items):
    """(rank, text) pieces of a single sharding; sorting by rank gives XLA's order."""
    parts = []
    i = 0
    while i < len(items):
        item = items[i]
        if isinstance(item, V.Keyed) and item.key == "devices":
            text = "devices=" + V.format_value(item.value)
            ids = []
            while i + 1 < len(items) and _plain_int(items[i + 1]):
                ids.append(str(items[i + 1]))
                i += 1
            parts.append((1, text + ",".join(ids)))
        elif isinstance(item, V.Ident) and item.text in ("shard_as", "shard_like"):
            parts.append((4, f"{item.text} {items[i + 1]}"))
            i += 1
        elif isinstance(item, V.Keyed) and item.key == "device":
            parts.append((1, f"device={item.value}"))
        elif isinstance(item, V.Keyed) and item.key == "last_tile_dims":
            parts.append((3, "last_tile_dims={" + ", ".join(t.text for t in item.value.items) + "}"))
        elif isinstance(item, V.Keyed) and item.key == "metadata":
            parts.append((5, "metadata=" + item.value.text))
        elif isinstance(item, V.Ident) and item.text == "last_tile_dim_replicate":
            parts.append((2, item.text))
        else:
            parts.append((0, V.format_value(item)))
        i += 1
    return parts


def check_statistics(v):
    if not (isinstance(v, V.Braced) and all(isinstance(i, V.Keyed) for i in v.items)):
        raise ValueError("expected {visualizing_index=N, stat=number, ...}")
    for i, item in enumerate(v.items):
        ok = _plain_int(item.value) if i == 0 else (isinstance(item.value, (int, float))
                                                     and not isinstance(item.value, bool))
        if not ok:
            raise ValueError("statistics start with an integer index (visualizing_index=N) followed by "
                             "name=number entries")
    return v


def format_statistics(v) -> str:
    return "{" + ",".join(f"{i.key}={_format_number(i.value)}" for i in v.items) + "}"


def _format_number(x) -> str:
    if isinstance(x, float) and not isinstance(x, bool):
        return format_float(x, "f64")
    return str(int(x))


def check_origin(v):
    if not (isinstance(v, V.Braced) and len(v.items) == 1):
        raise ValueError('expected an original value like {{"name"}} or {({"a"}, {"b" {1}})}')
    _check_origin_tree(v.items[0])
    return v


def _check_origin_tree(t) -> None:
    if isinstance(t, V.Paren):
        for item in t.items:
            _check_origin_tree(item)
    elif isinstance(t, V.Bracketed):
        if not (len(t.items) == 1 and isinstance(t.items[0], V.Ident)):
            raise ValueError("expected [synthetic_call]")
    elif isinstance(t, V.Braced):
        items = t.items
        if not (1 <= len(items) <= 2 and isinstance(items[0], V.Str)
                and (len(items) == 1 or (isinstance(items[1], V.Braced)
                                         and all(_plain_int(x) for x in items[1].items)))):
            raise ValueError('an original array is written {"instruction_name"} or {"name" {shape,index}}')
    else:
        raise ValueError(f"unexpected '{_show(t)}' in an original value")


def format_origin(v) -> str:
    return "{" + _format_origin_tree(v.items[0]) + "}"


def _format_origin_tree(t) -> str:
    if isinstance(t, V.Paren):
        return "(" + ", ".join(_format_origin_tree(i) for i in t.items) + ")"
    if isinstance(t, V.Bracketed):
        return "[" + t.items[0].text + "]"
    text = V.format_value(t.items[0])
    if len(t.items) == 2:
        text += " " + format_int_list(t.items[1].items)
    return "{" + text + "}"


_ACCURACY_MODES = ("default", "highest")
_TOLERANCE_KEYS = ("atol", "rtol", "ulps")


def check_result_accuracy(v):
    if not (isinstance(v, V.Braced) and len(v.items) == 1 and isinstance(v.items[0], V.Keyed)):
        raise ValueError("expected {mode=highest} or {tolerance={atol=0,rtol=0,ulps=1}}")
    item = v.items[0]
    if item.key == "mode":
        if not (isinstance(item.value, V.Ident) and item.value.text.lower() in _ACCURACY_MODES):
            raise ValueError("the result accuracy mode is default or highest")
    elif item.key == "tolerance":
        fields = item.value.items if isinstance(item.value, V.Braced) else None
        if not fields or not all(isinstance(f, V.Keyed) and f.key in _TOLERANCE_KEYS for f in fields):
            raise ValueError("a tolerance is written {atol=D,rtol=D,ulps=N}")
        for f in fields:
            ok = _plain_int(f.value) if f.key == "ulps" else isinstance(f.value, (int, float)) and \
                not isinstance(f.value, bool)
            if not ok:
                raise ValueError(f"tolerance {f.key}= takes {'an integer' if f.key == 'ulps' else 'a number'}")
        if len({f.key for f in fields}) != len(fields):
            raise ValueError("a tolerance field is given twice")
    else:
        raise ValueError(f"unexpected '{item.key}='; expected mode= or tolerance=")
    return v


def is_default_result_accuracy(v) -> bool:
    item = v.items[0]
    return item.key == "mode" and item.value.text.lower() == "default"


def format_result_accuracy(v) -> str:
    item = v.items[0]
    if item.key == "mode":
        return "{mode=" + item.value.text.lower() + "}"
    fields = {f.key: f.value for f in item.value.items}
    inner = ",".join(f"{k}={_format_number(fields[k])}" for k in _TOLERANCE_KEYS if k in fields)
    return "{tolerance={" + inner + "}}"


def check_domain(v):
    items = v.items if isinstance(v, V.Braced) else None
    if items is None or not all(isinstance(i, V.Keyed) for i in items):
        raise ValueError('expected {kind="sharding", entry={...}, exit={...}}')
    fields = {i.key: i.value for i in items}
    if set(fields) != {"kind", "entry", "exit"} or len(items) != 3:
        raise ValueError('a domain needs exactly kind="...", entry={...} and exit={...}')
    if not isinstance(fields["kind"], V.Str):
        raise ValueError('the domain kind is a string, e.g. kind="sharding"')
    check_sharding(fields["entry"])
    check_sharding(fields["exit"])
    return v


def format_domain(v) -> str:
    fields = {i.key: i.value for i in v.items}
    return (f"{{kind={V.format_value(fields['kind'])}, entry={format_sharding(fields['entry'])}, "
            f"exit={format_sharding(fields['exit'])}}}")


_GENERIC_CHECKS = {"sharding": check_sharding, "statistics": check_statistics, "origin": check_origin,
                   "result_accuracy": check_result_accuracy, "domain": check_domain}
_GENERIC_FORMATS = {"sharding": format_sharding, "statistics": format_statistics, "origin": format_origin,
                    "result_accuracy": format_result_accuracy, "domain": format_domain}


def check_generic_attribute(name: str, value):
    """The value of a generic-valued attribute after checking its structure (ValueError if malformed)."""
    check = _GENERIC_CHECKS.get(name)
    return check(value) if check is not None else value


def format_generic_attribute(name: str, value) -> str:
    fmt = _GENERIC_FORMATS.get(name)
    return fmt(value) if fmt is not None else V.format_value(value)


def _show(v) -> str:
    try:
        return V.format_value(v)
    except Exception:
        return repr(v)
