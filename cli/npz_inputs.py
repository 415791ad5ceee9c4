"""Input arrays from .npz/.npy files, with a fix in every message.

The usual mistakes and what the messages say:

* `np.savez(f, x, y)` names the arrays arr_0, arr_1: name them `np.savez(f, arg0=x, arg1=y)`;
* a file that is not an .npz/.npy (text, a pickle, an empty file): how to write one;
* `<(...)` and other pipes cannot seek, which np.load needs: they are read into memory;
* bf16/f8 arrays saved from JAX or ml_dtypes load as `|V2`/`|V1` (numpy has no name for
  them): accepted for a parameter of that width, read as its raw bits; for another
  parameter the message says how to convert;
* float64 (numpy's default) for an f32 parameter, int64 for s32...: `x.astype(np.float32)`.
"""
from __future__ import annotations

import io
import os
import stat
import zipfile

import numpy as np

from hlo.diagnostics import error
from hlo.ir import Module
from hlo.runtime import values_io
from hlo.shapes import type_of_dtype
from hlo_cli.common import UsageError

_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")
_NPY_MAGIC = b"\x93NUMPY"
SAVE_HINT = "save inputs with np.savez(PATH, arg0=x, arg1=y) or one array with np.save(PATH, x)"


# --------------------------------------------------------------------------- files

def load_arrays(path: str) -> dict[str, np.ndarray]:
    """The arrays of an .npz file (or one .npy file, keyed ''); UsageError saying how to fix it."""
    source, head = _open(path)
    if not head.startswith(_ZIP_MAGIC + (_NPY_MAGIC,)):
        raise UsageError(f"cannot read {path}: it is not an .npz or .npy file ({_what_it_is(head)}); {SAVE_HINT}")
    try:
        data = np.load(source, allow_pickle=False)
        if not isinstance(data, np.lib.npyio.NpzFile):
            return {"": np.asarray(data)}
        with data:
            return {key: _array(data, key, path) for key in data.files}
    except (zipfile.BadZipFile, EOFError, OSError) as exc:
        raise UsageError(f"{path} is damaged or cut short ({exc}); write it again: {SAVE_HINT}") from None
    except ValueError as exc:
        raise UsageError(f"cannot read {path}: {exc}") from None


def load_array(path: str) -> np.ndarray:
    """The one array of an .npy file (or of an .npz holding one), for --input KEY=FILE."""
    arrays = list(load_arrays(path).values())
    if len(arrays) == 1:
        return arrays[0]
    raise UsageError(f"{path} holds {len(arrays)} arrays where --input takes one: give an .npy file "
                     f"(np.save(PATH, x)), or the .npz with --inputs")


def _open(path: str):
    """(what np.load reads, the first bytes). Pipes (`<(...)`) cannot seek: read them whole."""
    try:
        regular = stat.S_ISREG(os.stat(path).st_mode)
        with open(path, "rb") as f:
            if regular:
                return path, f.read(8)
            data = f.read()
    except IsADirectoryError:
        raise UsageError(f"cannot read {path}: it is a folder; {SAVE_HINT}") from None
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    return io.BytesIO(data), data[:8]


def _what_it_is(head: bytes) -> str:
    if not head:
        return "it is empty"
    if head.startswith(b"\x80"):
        return "it is a Python pickle"
    if head.startswith(b"HloModule"):
        return "it is HLO text"
    try:
        head.decode("ascii")
        return "it is text"
    except UnicodeDecodeError:
        return "it starts with the bytes " + " ".join(f"{b:02x}" for b in head[:4])


def _array(data, key: str, path: str) -> np.ndarray:
    try:
        return data[key]
    except ValueError as exc:   # object arrays need pickle, which is never allowed
        raise UsageError(f"{path}: array '{key}' cannot be read ({exc}); save numeric arrays, "
                         f"not Python objects") from None


# --------------------------------------------------------------------------- matching parameters

def check_inputs(module: Module, given: dict[str, np.ndarray]) -> None:
    """Check every given argK / dev{d}_argK array against its parameter leaf, in place:
    arrays of a type numpy cannot name (|V2 from ml_dtypes) become the leaf's raw bits.
    A located error with the fix for a positional np.savez key or a wrong type or shape."""
    leaves = parameter_leaves(module)
    for key in list(given):
        parsed = values_io.split_key(key)
        if key.startswith("arr_") and parsed is not None:
            raise _positional_keys_error(module, key, len(leaves))
        if parsed is None or parsed[1] != "arg" or parsed[2] >= len(leaves):
            continue   # the caller reports keys that match no parameter
        given[key] = _checked(key, given[key], *leaves[parsed[2]])


def parameter_leaves(module: Module) -> list[tuple[object, tuple[int, ...], object]]:
    """(parameter, tuple index, leaf shape) of every array leaf, in argK order."""
    return [(param, index, leaf) for param in module.entry.parameters
            for index, leaf in param.shape.leaves() if not leaf.is_token]


def _positional_keys_error(module: Module, key: str, total: int):
    entry = module.entry
    names = ", ".join(f"arg{i}=..." for i in range(min(total, 3))) + (", ..." if total > 3 else "")
    return error(f"input '{key}' matches no parameter of the entry computation %{entry.name}: "
                 f"np.savez(f, x, y) names positional arrays arr_0, arr_1, ...; name them after the "
                 f"parameters instead: np.savez(f, {names})", entry.signature_loc or entry.loc)


def _checked(key: str, array: np.ndarray, param, index: tuple[int, ...], shape) -> np.ndarray:
    t = shape.element_type
    stored = values_io.file_dtype(t)
    if array.dtype.kind == "V" and t.dtype.kind == "V" and array.dtype.itemsize == stored.itemsize:
        array = array.view(stored)   # ml_dtypes values saved by np.save: their raw bits
    if array.dtype not in (stored, t.dtype):
        raise _mismatch(key, array, param, index, shape, _type_fix(array.dtype, t, stored))
    if tuple(array.shape) != tuple(shape.dims):
        raise _mismatch(key, array, param, index, shape, _shape_fix(array, shape))
    return array


def _mismatch(key, array, param, index, shape, fix: str):
    parsed = values_io.split_key(key)
    device = f"device {parsed[0]}: " if parsed[0] is not None else ""
    leaf = f" leaf {{{','.join(map(str, index))}}}" if index else ""
    given = f"{array.dtype.str if array.dtype.kind == 'V' else _type_name(array.dtype)}" \
            f"[{','.join(map(str, array.shape))}]"
    return error(f"{device}argument for parameter {param.attrs['parameter_number']} (%{param.name}){leaf} does "
                 f"not match: expected {shape.without_layout()}, given {given} (input {key}); {fix}", param.loc)


def _type_name(dtype: np.dtype) -> str:
    """HLO's name for a numpy type (f64, s32), numpy's when HLO has none (uint64 is u64...)."""
    try:
        return type_of_dtype(dtype).name
    except (KeyError, ValueError, TypeError):
        return str(dtype)


def _type_fix(given: np.dtype, t, stored: np.dtype) -> str:
    if t.dtype.kind == "V":
        return (f"{t.name} values travel as ml_dtypes.{t.dtype.name} arrays or as their raw bits: save "
                f"x.astype(ml_dtypes.{t.dtype.name}), or its .view(np.{stored.name})")
    if given.kind == "V":
        return (f"{given.str} holds {given.itemsize}-byte values numpy has no name for (ml_dtypes types such as "
                f"bfloat16, as np.save stores them); convert them first: x.astype(np.{stored.name})")
    default = {"f": "float64", "i": "int64"}.get(given.kind)
    why = f"numpy makes {default} arrays by default; " if given.name == default and stored.name != default else ""
    return f"{why}save x.astype(np.{stored.name})"


def _shape_fix(array: np.ndarray, shape) -> str:
    dims = tuple(shape.dims)
    if array.size != int(np.prod(dims, dtype=np.int64)):
        return "the parameter's dimensions are fixed by the module"
    reshape = f"x.reshape({', '.join(map(str, dims)) or '()'})"
    if len(dims) == 2 and tuple(array.shape) == dims[::-1]:
        return f"transposed? save x.T (or {reshape} if the order is right)"
    return f"save {reshape}"
