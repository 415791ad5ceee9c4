"""The collectives family: collectives across several simulated devices (replicas x
partitions) in one process, their handlers, and replica-id / partition-id.

The evaluator runs every device of an SPMD program in its own thread. When a thread
reaches a collective it calls its `DeviceView` (one per device, obtained from a shared
`CollectiveContext`). The view works out which devices take part, then *rendezvouses*
with them: every member contributes its operands, the last one to arrive computes the
results of all members once (numpy), and each member picks its own.

Who takes part follows XLA (`GetCollectiveOpGroupMode` / `GetParticipatingDevices`):

  channel_id | use_global_device_ids | ids in replica_groups | group members
  -----------|-----------------------|-----------------------|-------------------------------
  absent     | false / not an attr   | replica ids           | those replicas, same partition
  present    | not an attribute      | partition ids         | those partitions, same replica
  present    | false                 | replica ids           | those replicas, all partitions
  present    | true                  | flattened ids         | exactly the listed devices
  absent     | true                  | (invalid)             |

(all-to-all, ragged-all-to-all, collective-permute and collective-broadcast have no
use_global_device_ids attribute.) Empty groups mean one group of every id of the mode.
The flattened id of a device is `replica_id * num_partitions + partition_id`.

A rendezvous is keyed by (op kind, channel_id, member devices, the calling instruction, how
many times this device already ran that collective there), so repeated collectives pair
up in order, and devices whose control flow diverges (even to another instruction of the
same kind and shapes, which XLA's rendezvous also keeps apart) time out with a clear
ValueError instead of hanging forever or mixing their data. `CollectiveContext.abort`
releases every waiting device at once (for when one device thread failed).
"""
from __future__ import annotations

import enum
import functools
from dataclasses import dataclass
import threading
import time
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

import numpy as np

from ..attributes import ReplicaGroups
from ..diagnostics import error
from ..opcodes import Op
from ..shapes import Shape
from .handlers import HANDLERS
from .values import Value, async_start_value

DEFAULT_TIMEOUT_SECONDS = 60.0


# --------------------------------------------------------------------------- group modes

class GroupMode(enum.Enum):
    """How the ids written in replica_groups map to devices (XLA's CollectiveOpGroupMode)."""
    CROSS_REPLICA = "cross-replica"
    CROSS_PARTITION = "cross-partition"
    CROSS_REPLICA_AND_PARTITION = "cross-replica-and-partition"
    FLATTENED_ID = "flattened-id"


def group_mode(channel_id: Optional[int], use_global_device_ids: Optional[bool]) -> GroupMode:
    """The group mode of a collective; use_global_device_ids=None: op without that attribute."""
    if channel_id is None:
        if use_global_device_ids:
            raise ValueError("use_global_device_ids=true requires a channel_id")
        return GroupMode.CROSS_REPLICA
    if use_global_device_ids is None:
        return GroupMode.CROSS_PARTITION
    return GroupMode.FLATTENED_ID if use_global_device_ids else GroupMode.CROSS_REPLICA_AND_PARTITION


def _id_count(mode: GroupMode, num_replicas: int, num_partitions: int) -> int:
    """How many distinct ids replica_groups may name in this mode."""
    if mode is GroupMode.CROSS_PARTITION:
        return num_partitions
    if mode is GroupMode.FLATTENED_ID:
        return num_replicas * num_partitions
    return num_replicas


def _as_id_groups(groups: Any) -> tuple[tuple[int, ...], ...]:
    """Accept hlo.attributes.ReplicaGroups, None, () or a sequence of id sequences."""
    if groups is None:
        return ()
    groups = getattr(groups, "groups", groups)
    return tuple(tuple(int(i) for i in g) for g in groups)


def _check_id_groups(id_groups: tuple[tuple[int, ...], ...], mode: GroupMode, id_count: int,
                     uniform: bool) -> None:
    """XLA's verifier rules: non-empty groups, ids in range and named once, equal sizes."""
    what = {GroupMode.CROSS_PARTITION: "partition id", GroupMode.FLATTENED_ID: "flattened device id"}
    kind = what.get(mode, "replica id")
    seen: set[int] = set()
    for group in id_groups:
        if not group:
            raise ValueError("replica_groups contains an empty group")
        for i in group:
            if not 0 <= i < id_count:
                raise ValueError(f"replica_groups names {kind} {i}, but only {id_count} exist "
                                 f"(valid ids 0..{id_count - 1}) in {mode.value} mode")
            if i in seen:
                raise ValueError(f"{kind} {i} appears more than once in replica_groups")
            seen.add(i)
    if uniform and len({len(g) for g in id_groups}) > 1:
        sizes = ", ".join(str(len(g)) for g in id_groups)
        raise ValueError(f"replica_groups must all have the same size for this collective (sizes {sizes})")


@functools.lru_cache(maxsize=4096)
def device_groups(mode: GroupMode, id_groups: tuple[tuple[int, ...], ...], num_replicas: int,
                  num_partitions: int, uniform: bool = True) -> Mapping[int, tuple[int, ...]]:
    """Map each participating flattened device id to its group (flattened ids, group order).

    Mirrors XLA's GetParticipatingFlattenedIdGroups; devices absent from the map take part
    in no group. Raises ValueError for replica_groups that XLA's verifier rejects.
    """
    if mode is GroupMode.FLATTENED_ID and not id_groups:
        raise ValueError("replica_groups must be given explicitly when use_global_device_ids=true")
    id_count = _id_count(mode, num_replicas, num_partitions)
    _check_id_groups(id_groups, mode, id_count, uniform)
    id_groups = id_groups or (tuple(range(id_count)),)
    P = num_partitions
    groups: list[tuple[int, ...]] = []
    for ids in id_groups:
        if mode is GroupMode.FLATTENED_ID:
            groups.append(ids)
        elif mode is GroupMode.CROSS_REPLICA_AND_PARTITION:
            groups.append(tuple(r * P + p for r in ids for p in range(P)))
        elif mode is GroupMode.CROSS_REPLICA:
            groups.extend(tuple(r * P + p for r in ids) for p in range(P))
        else:
            groups.extend(tuple(r * P + p for p in ids) for r in range(num_replicas))
    return MappingProxyType({device: group for group in groups for device in group})


# --------------------------------------------------------------------------- rendezvous

class _Rendezvous:
    """One meeting of the members of a group at one collective call."""

    def __init__(self, label: str, members: tuple[int, ...]):
        self.label = label
        self.members = members
        self.contributions: dict[int, Any] = {}
        self.results: Optional[list] = None
        self.error: Optional[BaseException] = None
        self.all_arrived = False
        self.done = False
        self.abandoned = False


class _Contribution:
    """What one member brings: a signature that must agree across members, and its arrays."""
    __slots__ = ("signature", "arrays")

    def __init__(self, signature: tuple, arrays: Sequence[np.ndarray]):
        self.signature = signature
        self.arrays = tuple(arrays)


Combine = Callable[[list], list]   # member contributions (group order) -> member results


@dataclass(frozen=True)
class Meeting:
    """One collective call as every member sees it.

    key:     identifies the call: (kind, channel_id, members, instruction, how many times before);
    members: flattened device ids, in group order;
    combine: every member's operands (group order) -> every member's results;
    fold:    for an all-reduce of one array: the combiner whose element-wise fold in group
             order gives every member's result, so a transport may fold in pieces."""
    key: tuple
    label: str
    members: tuple[int, ...]
    combine: Combine
    fold: Any = None


class CollectiveContext:
    """The shared state of every device of one simulated execution."""

    def __init__(self, num_replicas: int, num_partitions: int,
                 timeout: float = DEFAULT_TIMEOUT_SECONDS):
        if num_replicas < 1 or num_partitions < 1:
            raise ValueError(f"need at least one replica and one partition "
                             f"(got replica_count={num_replicas}, num_partitions={num_partitions})")
        self.num_replicas = num_replicas
        self.num_partitions = num_partitions
        self.timeout = timeout
        self._cond = threading.Condition()
        self._pending: dict[tuple, _Rendezvous] = {}
        self._views: dict[int, DeviceView] = {}
        self._abort_reason: Optional[str] = None

    @property
    def num_devices(self) -> int:
        return self.num_replicas * self.num_partitions

    def device(self, replica_id: int, partition_id: int) -> "DeviceView":
        """The view of one device; the same object for repeated calls with the same ids."""
        if not (0 <= replica_id < self.num_replicas and 0 <= partition_id < self.num_partitions):
            raise ValueError(f"device (replica {replica_id}, partition {partition_id}) does not exist: "
                             f"replica_count={self.num_replicas}, num_partitions={self.num_partitions}")
        flat = replica_id * self.num_partitions + partition_id
        with self._cond:
            view = self._views.get(flat)
            if view is None:
                view = self._views[flat] = DeviceView(self, replica_id, partition_id)
            return view

    def abort(self, reason: str) -> None:
        """Fail every waiting and future collective (call when a device thread has failed)."""
        with self._cond:
            if self._abort_reason is None:
                self._abort_reason = reason
            self._cond.notify_all()

    def describe(self, flat_id: int) -> str:
        """A device as people read it: 'replica 1', 'partition 3' or 'replica 1/partition 3'."""
        r, p = divmod(flat_id, self.num_partitions)
        if self.num_partitions == 1:
            return f"replica {r}"
        if self.num_replicas == 1:
            return f"partition {p}"
        return f"replica {r}/partition {p}"

    def describe_all(self, flat_ids: Iterable[int]) -> str:
        return "[" + ", ".join(self.describe(d) for d in flat_ids) + "]"

    # -- the meeting itself

    def exchange(self, meeting: "Meeting", me: int, contribution: _Contribution) -> Any:
        """Contribute, wait for every member, return this member's result.

        The members this context holds (`local_members`: all of them here, those of this
        process under MPI) meet at a rendezvous; the last to arrive finishes the meeting
        for all of them (`_finish`)."""
        local = self.local_members(meeting.members)
        if len(local) == 1:
            return self._finish(meeting, local, [contribution])[0]
        label = meeting.label
        with self._cond:
            self._raise_if_aborted(label)
            rendezvous = self._pending.get(meeting.key)
            if rendezvous is None:
                rendezvous = self._pending[meeting.key] = _Rendezvous(label, local)
            if rendezvous.abandoned:
                raise ValueError(f"{label}: {self.describe(me)} arrived after the other devices "
                                 f"had given up waiting (after {self.timeout:g} s)")
            rendezvous.contributions[me] = contribution
            is_last = len(rendezvous.contributions) == len(local)
            if is_last:
                rendezvous.all_arrived = True
                del self._pending[meeting.key]
            else:
                self._await(rendezvous)
        if is_last:
            self._complete(rendezvous, meeting)
        if rendezvous.error is not None:
            if is_last:     # the member that computed re-raises the original exception
                raise rendezvous.error
            raise ValueError(f"{label} failed: {rendezvous.error}")
        return rendezvous.results[local.index(me)]

    def local_members(self, members: tuple[int, ...]) -> tuple[int, ...]:
        """The members whose devices run in this process (every device, for threads)."""
        return members

    def _finish(self, meeting: "Meeting", local: tuple[int, ...], contributions: list) -> list:
        """The results of the local members (in `local` order) from their contributions."""
        self._check_agreement(meeting.label, local, contributions)
        return meeting.combine([c.arrays for c in contributions])

    def _raise_if_aborted(self, label: str) -> None:
        if self._abort_reason is not None:
            raise ValueError(f"{label}: execution aborted: {self._abort_reason}")

    def _await(self, rendezvous: _Rendezvous) -> None:
        """Wait (lock held) until the results are in; time out only while members are missing."""
        deadline = time.monotonic() + self.timeout
        while not rendezvous.done:
            self._raise_if_aborted(rendezvous.label)
            if rendezvous.abandoned:
                raise ValueError(f"{rendezvous.label}: abandoned because another member timed out "
                                 f"waiting for {self._missing(rendezvous)}")
            if rendezvous.all_arrived:      # the last member is computing: that always ends
                self._cond.wait()
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                rendezvous.abandoned = True
                self._cond.notify_all()
                raise ValueError(
                    f"{rendezvous.label} timed out after {self.timeout:g} s waiting for devices "
                    f"{self._missing(rendezvous)} (arrived: "
                    f"{self.describe_all(sorted(rendezvous.contributions))}); every member must reach "
                    f"the same collectives in the same order (diverging control flow?)")
            self._cond.wait(remaining)

    def _missing(self, rendezvous: _Rendezvous) -> str:
        return self.describe_all(m for m in rendezvous.members if m not in rendezvous.contributions)

    def _complete(self, rendezvous: _Rendezvous, meeting: "Meeting") -> None:
        """Compute every member's result outside the lock, then wake the members."""
        contributions = [rendezvous.contributions[m] for m in rendezvous.members]
        results, error = None, None
        try:
            results = self._finish(meeting, rendezvous.members, contributions)
        except BaseException as exc:   # every member must learn of the failure, whatever it is
            error = exc
        with self._cond:
            rendezvous.results, rendezvous.error = results, error
            rendezvous.done = True
            rendezvous.contributions.clear()    # drop references to the operands early
            self._cond.notify_all()

    def _check_agreement(self, label: str, members: tuple[int, ...], contributions: list) -> None:
        """Members of one collective must run the same instruction on same-shaped operands."""
        first, first_device = contributions[0], self.describe(members[0])
        for member, c in zip(members[1:], contributions[1:]):
            if c.signature != first.signature:
                raise ValueError(f"{label}: {self.describe(member)} called it with {_fmt_sig(c.signature)} "
                                 f"but {first_device} with {_fmt_sig(first.signature)}")
            if len(c.arrays) != len(first.arrays):
                raise ValueError(f"{label}: {self.describe(member)} passed {len(c.arrays)} operands "
                                 f"but {first_device} passed {len(first.arrays)}")
            for i, (a, b) in enumerate(zip(c.arrays, first.arrays)):
                if a.shape != b.shape or a.dtype != b.dtype:
                    raise ValueError(f"{label}: operand {i} of {self.describe(member)} is "
                                     f"{_fmt_array(a)} but that of {first_device} is {_fmt_array(b)}")


def _fmt_sig(signature: tuple) -> str:
    return ", ".join(f"{name}={value}" for name, value in signature) or "no attributes"


def _fmt_array(a: np.ndarray) -> str:
    return f"{a.dtype}{list(a.shape)}"


# --------------------------------------------------------------------------- per-device API

class DeviceView:
    """The collectives as seen from one device (use from that device's thread only)."""

    def __init__(self, context: CollectiveContext, replica_id: int, partition_id: int):
        self.context = context
        self.replica_id = replica_id
        self.partition_id = partition_id
        self.flat_id = replica_id * context.num_partitions + partition_id
        self._call_counts: dict[tuple, int] = {}
        self._labels: dict[tuple, tuple[str, str]] = {}
        self.instruction = ""       # the instruction calling (for messages), set by `at`

    def __repr__(self) -> str:
        return f"DeviceView({self.context.describe(self.flat_id)})"

    # -- membership and meeting

    def _group(self, kind: str, mode: GroupMode, groups: Any, uniform: bool = True,
               required: bool = True) -> Optional[tuple[int, ...]]:
        """This device's group (flattened ids in group order); None if in no group and not required."""
        ctx = self.context
        try:
            by_device = device_groups(mode, _as_id_groups(groups), ctx.num_replicas,
                                      ctx.num_partitions, uniform)
        except ValueError as exc:
            raise ValueError(f"{kind}: {exc}") from None
        group = by_device.get(self.flat_id)
        if group is None and required:
            own = {GroupMode.CROSS_PARTITION: f"partition id {self.partition_id}",
                   GroupMode.FLATTENED_ID: f"flattened device id {self.flat_id}"}
            raise ValueError(f"{kind}: {ctx.describe(self.flat_id)} ("
                             f"{own.get(mode, f'replica id {self.replica_id}')}) is in none of the "
                             f"replica_groups {_as_id_groups(groups)} ({mode.value} mode)")
        return group

    def _label_parts(self, base: tuple) -> tuple[str, str]:
        """The label of a call at `base` is before + call number + after (made once per base:
        a loop calls the same collective many times)."""
        parts = self._labels.get(base)
        if parts is None:
            kind, channel_id, members, instruction = base
            channel = "" if channel_id is None else f" channel_id={channel_id}"
            name = f" {instruction}" if instruction else ""
            parts = self._labels[base] = (f"collective {kind}{name}{channel} (call #",
                                          f" over devices {self.context.describe_all(members)})")
        return parts

    def at(self, inst) -> "DeviceView":
        """Name the instruction about to call a collective (for messages); returns self."""
        self.instruction = f"%{inst.name}"
        return self

    def _meet(self, kind: str, channel_id: Optional[int], members: tuple[int, ...],
              signature: tuple, arrays: Sequence[np.ndarray], combine: Combine, fold=None) -> Any:
        base = (kind, channel_id, members, self.instruction)
        call_number = self._call_counts.get(base, 0)
        self._call_counts[base] = call_number + 1
        before, after = self._label_parts(base)
        label = f"{before}{call_number + 1}{after}"
        arrays = tuple(np.asarray(a) for a in arrays)
        meeting = Meeting(base + (call_number,), label, members, combine, fold)
        return self.context.exchange(meeting, self.flat_id, _Contribution(signature, arrays))

    # -- the collectives

    def all_reduce(self, operands: Sequence[np.ndarray], groups: Any, channel_id: Optional[int],
                   use_global_device_ids: bool, combiner) -> list[np.ndarray]:
        """Every member gets the element-wise fold, in group order, of all members' operands."""
        mode = group_mode(channel_id, bool(use_global_device_ids))
        members = self._group("all-reduce", mode, groups, uniform=False)

        def combine(per_member):
            return _shared_result(_fold(per_member, combiner, "all-reduce"), len(per_member))

        fold = combiner if len(operands) == 1 else None
        return self._meet("all-reduce", channel_id, members, (("operands", len(operands)),),
                          operands, combine, fold)

    def all_gather(self, operands: Sequence[np.ndarray], dimension: int, groups: Any,
                   channel_id: Optional[int], use_global_device_ids: bool) -> list[np.ndarray]:
        """Every member gets the concatenation along `dimension` of the operands, in group order."""
        mode = group_mode(channel_id, bool(use_global_device_ids))
        members = self._group("all-gather", mode, groups)
        _check_dimension("all-gather", operands, dimension)

        def combine(per_member):
            gathered = [np.concatenate([m[i] for m in per_member], axis=dimension)
                        for i in range(len(per_member[0]))]
            return _shared_result(gathered, len(per_member))

        return self._meet("all-gather", channel_id, members, (("dimension", dimension),),
                          operands, combine)

    def reduce_scatter(self, operands: Sequence[np.ndarray], dimension: int, groups: Any,
                       channel_id: Optional[int], use_global_device_ids: bool,
                       combiner) -> list[np.ndarray]:
        """All-reduce, then member k keeps the k-th of n equal blocks along `dimension`."""
        mode = group_mode(channel_id, bool(use_global_device_ids))
        members = self._group("reduce-scatter", mode, groups)
        _check_dimension("reduce-scatter", operands, dimension)
        _check_divisible("reduce-scatter", operands, dimension, len(members))

        def combine(per_member):
            reduced = _fold(per_member, combiner, "reduce-scatter")
            shards = [np.split(r, len(per_member), axis=dimension) for r in reduced]
            return [[s[k].copy() for s in shards] for k in range(len(per_member))]

        return self._meet("reduce-scatter", channel_id, members, (("dimension", dimension),),
                          operands, combine)

    def all_to_all(self, operands: Sequence[np.ndarray], split_dimension: Optional[int],
                   groups: Any, channel_id: Optional[int]) -> list[np.ndarray]:
        """Array form: block j of each operand goes to member j, received blocks concatenated
        in member order. Tuple form (split_dimension None): operand j goes to member j."""
        mode = group_mode(channel_id, None)
        members = self._group("all-to-all", mode, groups)
        n = len(members)
        if split_dimension is None:
            if len(operands) != n:
                raise ValueError(f"all-to-all without dimensions needs one operand per group member: "
                                 f"{len(operands)} operands for a group of {n}")
            combine = functools.partial(_exchange_tuple, n)
        else:
            _check_dimension("all-to-all", operands, split_dimension)
            _check_divisible("all-to-all", operands, split_dimension, n)
            combine = functools.partial(_exchange_blocks, n, split_dimension)
        return self._meet("all-to-all", channel_id, members, (("dimensions", split_dimension),),
                          operands, combine)

    def ragged_all_to_all(self, input, output, input_offsets, send_sizes, output_offsets,
                          recv_sizes, groups: Any, channel_id: Optional[int]) -> np.ndarray:
        """Rows input[input_offsets[j]:+send_sizes[j]] land in member j's output at
        output_offsets[j] (the receiver's coordinates); unwritten rows keep `output`."""
        mode = group_mode(channel_id, None)
        members = self._group("ragged-all-to-all", mode, groups)
        arrays = [np.asarray(a) for a in (input, output, input_offsets, send_sizes, output_offsets,
                                          recv_sizes)]
        updates = _check_ragged_operands(arrays, len(members))
        combine = functools.partial(_exchange_ragged, self.context, members, updates)
        return self._meet("ragged-all-to-all", channel_id, members, (), arrays, combine)

    def collective_permute(self, operand, source_target_pairs: Sequence[Sequence[int]],
                           channel_id: Optional[int]):
        """For each pair (s, t), t receives s's operand; devices that are no target get zeros.

        Ids are replica ids (no channel_id: among the replicas of this partition) or
        partition ids (channel_id: among the partitions of this replica). `operand` may
        also be a list of arrays (combined form): the result is then a list too.
        """
        combined = isinstance(operand, (list, tuple))
        operands = list(operand) if combined else [operand]
        ctx = self.context
        pairs = tuple((int(s), int(t)) for s, t in source_target_pairs)
        if group_mode(channel_id, None) is GroupMode.CROSS_PARTITION:
            domain = tuple(self.replica_id * ctx.num_partitions + p for p in range(ctx.num_partitions))
            kind = "partition"
        else:
            domain = tuple(r * ctx.num_partitions + self.partition_id for r in range(ctx.num_replicas))
            kind = "replica"
        _check_pairs(pairs, len(domain), kind)
        combine = functools.partial(_exchange_permute, pairs)
        results = self._meet("collective-permute", channel_id, domain,
                             (("source_target_pairs", pairs),), operands, combine)
        return results if combined else results[0]

    def collective_broadcast(self, operands: Sequence[np.ndarray], groups: Any,
                             channel_id: Optional[int]) -> list[np.ndarray]:
        """Every member gets the operands of its group's first listed member; a device in no
        group gets zeros."""
        mode = group_mode(channel_id, None)
        members = self._group("collective-broadcast", mode, groups, required=False)
        if members is None:
            return [np.zeros_like(np.asarray(x)) for x in operands]

        def combine(per_member):
            return [[x.copy() for x in per_member[0]] for _ in per_member]

        return self._meet("collective-broadcast", channel_id, members, (), operands, combine)


# --------------------------------------------------------------------------- numpy work

def _shared_result(arrays: list[np.ndarray], n: int) -> list[list[np.ndarray]]:
    """Identical results for n members: the first gets the arrays, the others copies
    (so no two devices share a buffer a later in-place kernel could write)."""
    return [arrays] + [[a.copy() for a in arrays] for _ in range(n - 1)]


def _fold(per_member: list[tuple[np.ndarray, ...]], combiner, kind: str) -> list[np.ndarray]:
    """acc = v[m0]; acc = f(acc, v[m1]); ... in group order, for each operand (a binary f), or
    for all operands at once (an f of 2 x operands parameters)."""
    acc = list(per_member[0])
    count = len(acc)
    for values in per_member[1:]:
        if count > 1 and getattr(combiner, "num_params", 2 * count) == 2:
            # a variadic all-reduce applies its binary to_apply to each operand separately
            out = [combiner(a, v)[0] for a, v in zip(acc, values)]
        else:
            out = combiner(*acc, *values)
        if len(out) != count:
            raise ValueError(f"{kind}: the reduction computation returned {len(out)} values "
                             f"for {count} operands")
        acc = [np.asarray(o, dtype=a.dtype).reshape(a.shape) for o, a in zip(out, acc)]
    # Never hand back a member's own operand buffer (one member, or a computation that
    # returns a parameter unchanged).
    return [a.copy() if any(np.may_share_memory(a, m[i]) for m in per_member) else a
            for i, a in enumerate(acc)]


def _exchange_tuple(n: int, per_member: list) -> list[list[np.ndarray]]:
    """Tuple all-to-all: member p's result element j is member j's operand p."""
    return [[per_member[j][p].copy() for j in range(n)] for p in range(n)]


def _exchange_blocks(n: int, dim: int, per_member: list) -> list[list[np.ndarray]]:
    """Array all-to-all, per operand: member p gets block p of every member, in member order."""
    count = len(per_member[0])
    blocks = [[np.split(m[i], n, axis=dim) for i in range(count)] for m in per_member]
    return [[np.concatenate([blocks[j][i][p] for j in range(n)], axis=dim) for i in range(count)]
            for p in range(n)]


def _exchange_permute(pairs: tuple[tuple[int, int], ...], per_member: list) -> list[list[np.ndarray]]:
    source_of = {t: s for s, t in pairs}
    results = []
    for position, own in enumerate(per_member):
        source = source_of.get(position)
        results.append([np.zeros_like(x) for x in own] if source is None
                       else [x.copy() for x in per_member[source]])
    return results


def _check_dimension(kind: str, operands: Sequence[np.ndarray], dimension: int) -> None:
    for i, x in enumerate(operands):
        rank = np.ndim(x)
        if not 0 <= dimension < rank:
            raise ValueError(f"{kind}: dimension {dimension} is out of range for operand {i} "
                             f"of rank {rank}")


def _check_divisible(kind: str, operands: Sequence[np.ndarray], dimension: int, n: int) -> None:
    for i, x in enumerate(operands):
        size = np.shape(x)[dimension]
        if size % n:
            raise ValueError(f"{kind}: dimension {dimension} of operand {i} has size {size}, "
                             f"not divisible by the group size {n}")


def _check_pairs(pairs: tuple[tuple[int, int], ...], count: int, kind: str) -> None:
    sources, targets = set(), set()
    for s, t in pairs:
        for i in (s, t):
            if not 0 <= i < count:
                raise ValueError(f"collective-permute: source_target_pairs names {kind} id {i}, "
                                 f"but only {count} exist")
        if s in sources:
            raise ValueError(f"collective-permute: {kind} {s} is the source of more than one pair")
        if t in targets:
            raise ValueError(f"collective-permute: {kind} {t} is the target of more than one pair")
        sources.add(s)
        targets.add(t)


# --------------------------------------------------------------------------- ragged all-to-all

_RAGGED_METADATA = ("input_offsets", "send_sizes", "output_offsets", "recv_sizes")


def _check_ragged_operands(arrays: list[np.ndarray], n: int) -> int:
    """Validate one member's operands; returns the number of updates per peer."""
    data, out, *metadata = arrays
    if data.ndim < 1 or out.ndim < 1:
        raise ValueError("ragged-all-to-all: input and output must have rank >= 1")
    if data.shape[1:] != out.shape[1:] or data.dtype != out.dtype:
        raise ValueError(f"ragged-all-to-all: input {_fmt_array(data)} and output {_fmt_array(out)} "
                         f"must agree in element type and in every dimension but the first")
    first = metadata[0]
    for name, m in zip(_RAGGED_METADATA, metadata):
        if m.shape != first.shape:
            raise ValueError(f"ragged-all-to-all: {name} has shape {list(m.shape)} but input_offsets "
                             f"has {list(first.shape)}; all four must be identical")
        if m.ndim not in (1, 2) or not np.issubdtype(m.dtype, np.integer):
            raise ValueError(f"ragged-all-to-all: {name} must be a rank-1 or rank-2 integer array, "
                             f"got {_fmt_array(m)}")
    if first.size % n or first.size == 0:
        raise ValueError(f"ragged-all-to-all: metadata of {first.size} entries cannot be split "
                         f"evenly among the {n} group members")
    return first.size // n


def _exchange_ragged(ctx: CollectiveContext, members: tuple[int, ...], updates: int,
                     per_member: list) -> list[np.ndarray]:
    """Metadata entry [j * updates + u] of a sender describes its u-th piece for member j."""
    flat = [[np.asarray(m).reshape(-1).astype(np.int64) for m in arrays[2:]] for arrays in per_member]
    results = [arrays[1].copy() for arrays in per_member]
    for sender, arrays in enumerate(per_member):
        data = arrays[0]
        in_off, send, out_off, _ = flat[sender]
        for receiver in range(len(members)):
            for u in range(updates):
                k = receiver * updates + u
                _check_recv_size(ctx, members, flat, sender, receiver, updates, u)
                start, size, dest = int(in_off[k]), int(send[k]), int(out_off[k])
                _check_rows(ctx, members, sender, receiver, start, size, dest, data.shape[0],
                            results[receiver].shape[0])
                results[receiver][dest:dest + size] = data[start:start + size]
    return results


def _check_recv_size(ctx, members, flat, sender, receiver, updates, u) -> None:
    sent = flat[sender][1][receiver * updates + u]
    expected = flat[receiver][3][sender * updates + u]
    if sent != expected:
        raise ValueError(f"ragged-all-to-all: {ctx.describe(members[sender])} sends {sent} rows "
                         f"(update {u}) to {ctx.describe(members[receiver])}, whose recv_sizes "
                         f"expects {expected}")


def _check_rows(ctx, members, sender, receiver, start, size, dest, input_rows, output_rows) -> None:
    where = (f"ragged-all-to-all: {ctx.describe(members[sender])} -> "
             f"{ctx.describe(members[receiver])}")
    if size < 0:
        raise ValueError(f"{where}: negative send size {size}")
    if start < 0 or start + size > input_rows:
        raise ValueError(f"{where}: input rows [{start}, {start + size}) outside the input's "
                         f"{input_rows} rows")
    if dest < 0 or dest + size > output_rows:
        raise ValueError(f"{where}: output rows [{dest}, {dest + size}) outside the output's "
                         f"{output_rows} rows")


# --------------------------------------------------------------------------- handlers

HANDLERS.unsupported(Op.COLLECTIVE_REDUCE, reason="collective-reduce has no public semantics")


@HANDLERS.register(Op.REPLICA_ID)
def run_replica_id(ev, inst, ops):
    return np.array(ev.device.replica_id, dtype=np.uint32)


@HANDLERS.register(Op.PARTITION_ID)
def run_partition_id(ev, inst, ops):
    return np.array(ev.device.partition_id, dtype=np.uint32)


def _replica_groups(value) -> Optional[ReplicaGroups]:
    if value is None or (isinstance(value, ReplicaGroups) and not value.groups):
        return None
    if isinstance(value, ReplicaGroups):
        return value
    return ReplicaGroups(tuple(tuple(g) for g in value)) if value else None


def _collective_args(inst):
    """(replica groups, channel id, use_global_device_ids) of a collective."""
    a = inst.attrs
    return _replica_groups(a.get("replica_groups")), a.get("channel_id"), a.get("use_global_device_ids", False)


def _collective_start_value(shape: Shape, operands: Sequence, results: Sequence) -> Value:
    """all-gather-start / collective-permute-start: (operand(s), result(s), context...)."""
    if not shape.is_tuple:
        return results[0]
    ops_value = tuple(operands) if len(operands) > 1 else operands[0]
    res_value = tuple(results) if len(results) > 1 else results[0]
    return async_start_value(shape, ops_value, res_value)


@HANDLERS.register(Op.ALL_REDUCE, Op.ALL_REDUCE_START)
def run_all_reduce(ev, inst, ops):
    groups, channel, global_ids = _collective_args(inst)
    results = ev.device.at(inst).all_reduce(list(ops), groups, channel, global_ids, ev.combiner(inst.attrs["to_apply"]))
    return tuple(results) if len(ops) > 1 or inst.shape.is_tuple else results[0]


@HANDLERS.register(Op.ALL_GATHER, Op.ALL_GATHER_START)
def run_all_gather(ev, inst, ops):
    groups, channel, global_ids = _collective_args(inst)
    results = ev.device.at(inst).all_gather(list(ops), inst.attrs["dimensions"][0], groups, channel, global_ids)
    if inst.opcode == Op.ALL_GATHER_START:
        return _collective_start_value(inst.shape, ops, results)
    return tuple(results) if inst.shape.is_tuple else results[0]


@HANDLERS.register(Op.REDUCE_SCATTER)
def run_reduce_scatter(ev, inst, ops):
    groups, channel, global_ids = _collective_args(inst)
    results = ev.device.at(inst).reduce_scatter(list(ops), inst.attrs["dimensions"][0], groups, channel,
                                       global_ids, ev.combiner(inst.attrs["to_apply"]))
    return tuple(results) if inst.shape.is_tuple else results[0]


@HANDLERS.register(Op.ALL_TO_ALL)
def run_all_to_all(ev, inst, ops):
    groups, channel, _ = _collective_args(inst)
    dims = inst.attrs.get("dimensions")
    split = dims[0] if dims else None
    results = ev.device.at(inst).all_to_all(list(ops), split, groups, channel)
    return tuple(results) if inst.shape.is_tuple else results[0]


@HANDLERS.register(Op.RAGGED_ALL_TO_ALL)
def run_ragged_all_to_all(ev, inst, ops):
    groups, channel, _ = _collective_args(inst)
    return ev.device.at(inst).ragged_all_to_all(*ops, groups, channel)


@HANDLERS.register(Op.COLLECTIVE_BROADCAST)
def run_collective_broadcast(ev, inst, ops):
    groups, channel, _ = _collective_args(inst)
    results = ev.device.at(inst).collective_broadcast(list(ops), groups, channel)
    return tuple(results) if inst.shape.is_tuple else results[0]


@HANDLERS.register(Op.COLLECTIVE_PERMUTE, Op.COLLECTIVE_PERMUTE_START)
def run_collective_permute(ev, inst, ops):
    if inst.attrs.get("slice_sizes"):
        raise error(f"{inst.opcode} with slice_sizes (in-place form) is not supported by the interpreter",
                    inst.loc)
    pairs = [tuple(p) for p in inst.attrs["source_target_pairs"]]
    channel = inst.attrs.get("channel_id")
    if len(ops) == 1:
        results = [ev.device.at(inst).collective_permute(ops[0], pairs, channel)]
    else:  # the combined form: one exchange for every operand
        results = list(ev.device.at(inst).collective_permute(list(ops), pairs, channel))
    if inst.opcode == Op.COLLECTIVE_PERMUTE_START:
        return _collective_start_value(inst.shape, ops, results)
    return tuple(results) if len(ops) > 1 else results[0]


@HANDLERS.register(Op.ALL_REDUCE_DONE, Op.ALL_GATHER_DONE, Op.COLLECTIVE_PERMUTE_DONE)
def run_collective_done(ev, inst, ops):
    start = inst.operands[0]
    if start.shape.compatible(inst.shape):
        return ops[0]
    return ops[0][1]
