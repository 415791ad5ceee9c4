"""Collectives between processes: the interpreter's devices spread over MPI ranks.

`MpiCollectiveContext` is a `CollectiveContext` whose devices live in several
processes: device d runs on rank `rank_of(d)` (contiguous blocks, as many devices per
rank as the count divides into), as a thread of that rank. The semantics stay those of
collectives.py: the devices of a group that share a rank meet at the threaded
rendezvous, then the last of them takes the meeting across ranks for all of them
(`_finish`), on a communicator of exactly the group's ranks:

* every rank first shares a digest of the call (instruction, group, operand types and
  shapes), so ranks that disagree fail with a message naming the rank, not garbage;
* an all-reduce of one array whose `to_apply` is add, multiply, min, max, and, or or
  xor on integers or pred runs MPI's built-in reduction: the result does not depend
  on the order, so it is bit for bit the threaded one;
* any other all-reduce of one array of up to SHARED_MAX_BYTES (over all members) goes
  through the group's shared memory window when its ranks share a machine
  (hlo.runtime.mpi_shared): every rank writes its digest of the call and the pieces the
  others fold there, folds its own piece in group order with the threads' combiner, and
  copies the others' folded pieces (`_all_reduce_shared`);
* otherwise such an all-reduce of 64 KB or more is reduced in pieces: rank r
  receives piece r of every member (MPI all-to-all), folds the pieces in group order
  with the same combiner as the threads, and every rank gathers the folded pieces: the
  threaded run's order for every element, at the bandwidth of MPI's own reduce-scatter +
  all-gather;
* everything else gathers every member's operands on every rank of the group and runs
  the very `combine` the threads run.

Every wait has the collective timeout (hlo.runtime.mpi.MpiWorld.wait).
"""
from __future__ import annotations

import hashlib
import sys
from typing import Any, Optional

import numpy as np

from ..runtime.mpi import MpiWorld
from ..runtime.mpi_shared import SharedWindow, all_on_one_node, shared_memory_enabled
from .collectives import DEFAULT_TIMEOUT_SECONDS, CollectiveContext, Meeting, _fold, _shared_result

# All-reduces smaller than this (bytes, over every member) gather everything instead of
# reducing in pieces: one exchange instead of two.
PIECEWISE_MIN_BYTES = 64 * 1024
# All-reduces of at most this many bytes (over every member) go through a shared window when the
# group's ranks share a machine; larger ones as messages in pieces (measured with 2 ranks against
# MPI's Allreduce: the window 1.15x at 1 MB, 1.22x at 4 MB, 1.00x at 16 MB; messages 1.07x at 4 MB,
# 1.20x at 16 MB).
SHARED_MAX_BYTES = 16 << 20
_DIGEST_TAG = 77
_DIGEST_BYTES = 20    # sha1
_HEADER_BYTES = 32    # a rank's digest in a shared window, padded
RESULT_POOL = 3   # result buffers kept per group and size: a loop's value, its next, one held by the caller

# Reductions whose result does not depend on the order, per numpy ufunc: MPI's built-in
# operation for integers, and for pred (0/1 bytes).
_INTEGER_OPS = {np.add: "SUM", np.multiply: "PROD", np.maximum: "MAX", np.minimum: "MIN",
                np.bitwise_and: "BAND", np.bitwise_or: "BOR", np.bitwise_xor: "BXOR"}
_PRED_OPS = {np.add: "BOR", np.multiply: "BAND", np.maximum: "BOR", np.minimum: "BAND",
             np.bitwise_and: "BAND", np.bitwise_or: "BOR", np.bitwise_xor: "BXOR"}


def devices_per_rank(devices: int, ranks: int) -> int:
    """How many devices each rank runs; a ValueError unless they share out evenly."""
    if devices % ranks:
        raise ValueError(f"{devices} device(s) cannot be shared out evenly over {ranks} MPI ranks: "
                         f"start a number of ranks that divides {devices}")
    return devices // ranks


class MpiCollectiveContext(CollectiveContext):
    """The devices of one execution spread over the ranks of an MPI job."""

    def __init__(self, num_replicas: int, num_partitions: int, world: MpiWorld,
                 timeout: float = DEFAULT_TIMEOUT_SECONDS):
        super().__init__(num_replicas, num_partitions, timeout)
        self.world = world
        self.per_rank = devices_per_rank(self.num_devices, world.size)
        self._buffers: dict[tuple, np.ndarray] = {}
        self._results: dict[tuple, list[np.ndarray]] = {}
        self._plans: dict[tuple, _PiecePlan] = {}
        self._sites: dict[tuple, _CallSite] = {}
        self._windows: dict[tuple, Optional[SharedWindow]] = {}

    # -- placement

    def rank_of(self, device: int) -> int:
        return device // self.per_rank

    @property
    def local_devices(self) -> list[int]:
        first = self.world.rank * self.per_rank
        return list(range(first, first + self.per_rank))

    def local_members(self, members: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(m for m in members if self.rank_of(m) == self.world.rank)

    def describe(self, flat_id: int) -> str:
        return f"{super().describe(flat_id)} (rank {self.rank_of(flat_id)})"

    # -- across ranks

    def _finish(self, meeting: Meeting, local: tuple[int, ...], contributions: list) -> list:
        site = self._call_site(meeting, contributions[0])
        if site.ranks == (self.world.rank,):
            return super()._finish(meeting, local, contributions)
        if len(contributions) > 1:
            self._check_agreement(meeting.label, local, contributions)
        if site.comm is None:
            site.comm = self.world.comm_for(meeting.members, site.ranks, meeting.label)
            if site.folds:
                site.window = self._window_for(meeting.members, site.comm, site.ranks, meeting.label)
        comm, ranks = site.comm, site.ranks
        arrays = [c.arrays for c in contributions]
        description = f"{site.description}, call #{meeting.key[-1] + 1}"
        if site.window is not None and site.through_window:
            return self._all_reduce_shared(site, meeting, local, arrays, description)
        if site.in_pieces:
            return self._all_reduce_in_pieces(comm, ranks, meeting, local, arrays, description)
        self._check_across(comm, ranks, meeting, description)
        if site.builtin is not None:
            return self._all_reduce_builtin(comm, ranks, meeting, arrays, site.builtin)
        return self._gather_and_combine(comm, ranks, meeting, local, arrays)

    def _window_for(self, members: tuple[int, ...], comm, ranks, what: str) -> Optional[SharedWindow]:
        """The group's shared memory window when all its ranks run on this machine (found once
        per group, by a collective call of its ranks)."""
        if members not in self._windows:
            together = shared_memory_enabled() and all_on_one_node(self.world, comm, what, ranks)
            self._windows[members] = SharedWindow(self.world, comm) if together else None
        return self._windows[members]

    def _all_reduce_shared(self, site: "_CallSite", meeting: Meeting, local: tuple[int, ...], arrays: list,
                           description: str) -> list:
        """Through the group's shared memory, in pieces: every rank writes its digest of the call
        and piece r of its members' operands for each other rank r into this call's half of
        the window; after a barrier (and the digests checked), rank r folds piece r of every
        member in group order (the threads' fold) into its result and into the window; after a
        second barrier every rank copies the others' folded pieces into its result."""
        window, ranks = site.window, site.ranks
        if not window.fits(site.shared_bytes):
            self._check_across(site.comm, ranks, meeting, description)   # the same call on every rank
            window.grow(site.shared_bytes, meeting.label, ranks)
        views = site.half_views(*window.next_half(), local, arrays[0][0].dtype)
        digest = _digest(description)
        views.headers[views.me, :_DIGEST_BYTES] = digest
        operands = [a[0].reshape(-1) for a in arrays]
        for i, lo, hi, target in views.outgoing:
            target[...] = operands[i][lo:hi]
        window.barrier(meeting.label, ranks)
        if views.digests.tobytes() != digest.tobytes() * len(ranks):
            _raise_for_differing(meeting, description, digest,
                                 [(rank, views.digests[k]) for k, rank in enumerate(ranks) if k != views.me])
        sample = arrays[0][0]
        result = self._result_buffer(meeting.members, sample.nbytes).view(sample.dtype)
        lo, hi = views.mine
        pieces = [(operands[i][lo:hi] if i is not None else there,) for i, there in views.sources]
        _fold_into(result[lo:hi], pieces, meeting.fold)
        views.folded[...] = result[lo:hi]
        window.barrier(meeting.label, ranks)
        for lo, hi, there in views.incoming:
            result[lo:hi] = there
        return _shared_result([result.reshape(sample.shape)], len(local))

    def _call_site(self, meeting: Meeting, contribution) -> "_CallSite":
        """What the calls of this collective at this instruction over this group share (found
        on the first call; again when the operands' types change)."""
        key = meeting.key[:-1]
        site = self._sites.get(key)
        if site is None or not site.matches(meeting, contribution):
            ranks = tuple(sorted({self.rank_of(m) for m in meeting.members}))
            site = self._sites[key] = _CallSite(key, ranks, contribution, meeting, self.world.MPI)
        return site

    def _check_across(self, comm, ranks, meeting: Meeting, description: str) -> None:
        """Every rank must be at the same call with operands of the same types and shapes."""
        digest = _digest(description).tobytes()
        digests = self.world.allgather_fixed(comm, digest, meeting.label, ranks)
        if all(d == digest for d in digests):
            return
        every = self.world.allgather_bytes(comm, description.encode(), meeting.label, ranks)
        first = every[0].decode()
        for rank, theirs in zip(ranks[1:], every[1:]):
            if theirs.decode() != first:
                raise ValueError(f"{meeting.label}: rank {rank} is at another call or has other operands: "
                                 f"{theirs.decode()} on rank {rank}, {first} on rank {ranks[0]}")

    def _all_reduce_builtin(self, comm, ranks, meeting: Meeting, arrays: list, op) -> list:
        mpi_op, view = op
        local = _fold(arrays, meeting.fold, "all-reduce")[0]     # any order gives the same bits
        send = np.ascontiguousarray(local).view(view)
        out = np.empty_like(send)
        self.world.wait([comm.Iallreduce(send, out, op=mpi_op)], meeting.label, ranks)
        result = out.view(local.dtype).reshape(local.shape)
        return _shared_result([result], len(arrays))

    def _all_reduce_in_pieces(self, comm, ranks, meeting: Meeting, local: tuple[int, ...], arrays: list,
                              description: str) -> list:
        """Reduce-scatter by hand (rank r folds piece r in group order), then all-gather.

        A rank keeps its own members' piece where it is (no copy to itself), and the folded
        piece goes straight into the result buffer that the all-gather fills in place. The
        ranks' digests of the call travel beside the pieces (no round trip of their own)."""
        MPI = self.world.MPI
        sample = arrays[0][0]
        plan = self._piece_plan(comm, ranks, meeting.members, sample.nbytes, sample.dtype.itemsize)
        flats = [np.ascontiguousarray(a[0]).reshape(-1).view(np.uint8) for a in arrays]
        # what goes out: piece r of every local member, to rank r (nothing to this rank)
        if len(flats) == 1:
            send, send_counts, send_offsets = flats[0], plan.send_counts, plan.send_offsets
        else:
            send = np.concatenate([f[plan.offsets[r]:plan.offsets[r] + plan.sizes[r]] for r in plan.peers
                                   for f in flats])
            send_counts = [size * len(flats) for size in plan.send_counts]
            send_offsets = _offsets(send_counts)
        recv = self._scratch(meeting.members, plan.recv_bytes)
        exchange = comm.Ialltoallv([send, send_counts, send_offsets, MPI.BYTE],
                                   [recv, plan.recv_counts, plan.recv_offsets, MPI.BYTE])
        self._exchange_checked(comm, ranks, meeting, description, exchange, plan)
        mine = slice(plan.offsets[plan.me], plan.offsets[plan.me] + plan.piece)
        pieces = [((flats[i][mine] if start is None else recv[start:start + plan.piece]).view(sample.dtype),)
                  for i, start in plan.sources]          # group order: the threaded fold's order
        result = self._result_buffer(meeting.members, sample.nbytes)
        _fold_into(result[mine].view(sample.dtype), pieces, meeting.fold)
        self.world.wait([comm.Iallgatherv(MPI.IN_PLACE, [result, plan.sizes, plan.offsets, MPI.BYTE])],
                        meeting.label, ranks)
        return _shared_result([result.view(sample.dtype).reshape(sample.shape)], len(local))

    def _piece_plan(self, comm, ranks, members: tuple[int, ...], nbytes: int, itemsize: int) -> "_PiecePlan":
        """Where each rank's piece lies and what travels where (computed once per group and size)."""
        key = (members, nbytes, itemsize)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = _PiecePlan(comm.Get_rank(), nbytes // itemsize, itemsize, members,
                                                   self._members_by_rank(members, ranks))
        return plan

    def _exchange_checked(self, comm, ranks, meeting: Meeting, description: str, exchange,
                          plan: "_PiecePlan") -> None:
        """Complete `exchange`, the ranks' digests of the call sent alongside (on the plan's
        persistent requests: one call to start them); a rank whose digest differs (another
        call, other operands) is named."""
        MPI = self.world.MPI
        digest = _digest(description)
        headers = plan.digest_requests(comm, _DIGEST_TAG)
        plan.digest_out[:] = digest
        MPI.Prequest.Startall(headers)
        try:
            self.world.wait([exchange, *headers], meeting.label, ranks)
        except MPI.Exception as exc:  # sizes that disagree: the digests say why
            self.world.wait(headers, meeting.label, ranks)
            _raise_for_differing(meeting, description, digest, plan.peer_digests(ranks))
            raise ValueError(f"{meeting.label}: MPI failed: {exc}") from None
        if plan.digests_in.tobytes() != digest.tobytes() * len(plan.peers):
            _raise_for_differing(meeting, description, digest, plan.peer_digests(ranks))

    def _result_buffer(self, key, size: int) -> np.ndarray:
        """Memory for a result: one of this group's earlier results of this size that nothing
        refers to any more (a loop's previous value, say), else new memory that joins the pool in
        place of its oldest buffer. Fresh pages cost a page fault each on first touch, several
        times the all-reduce's own time per byte on a virtual machine; a caller that keeps one
        result (the last value of a loop) costs one fresh buffer, not one every other call."""
        pool = self._results.setdefault((key, size), [])
        for k in range(len(pool)):
            # referenced only by the pool and by getrefcount's argument: free to overwrite
            if sys.getrefcount(pool[k]) == 2:
                buffer = pool[k]
                pool.append(pool.pop(k))      # most recently used last
                return buffer
        buffer = np.empty(size, np.uint8)
        pool.append(buffer)
        if len(pool) > RESULT_POOL:
            del pool[0]                       # the least recently used, still in use elsewhere
        return buffer

    def _members_by_rank(self, members: tuple[int, ...], ranks: tuple[int, ...]) -> list[tuple[int, ...]]:
        """For each of `ranks`, the members it runs (in group order)."""
        return [tuple(m for m in members if self.rank_of(m) == rank) for rank in ranks]

    def _scratch(self, key, size: int) -> np.ndarray:
        """A receive buffer reused by the calls of one group (they run one after another)."""
        buffer = self._buffers.get(key)
        if buffer is None or buffer.size < size:
            buffer = self._buffers[key] = np.empty(size, np.uint8)
        return buffer[:size]

    def _gather_and_combine(self, comm, ranks, meeting: Meeting, local: tuple[int, ...], arrays: list) -> list:
        """Every rank gets every member's operands and runs the threads' combine."""
        MPI = self.world.MPI
        templates = arrays[0]
        member_bytes = sum(a.nbytes for a in templates)
        send = np.concatenate([np.ascontiguousarray(a).reshape(-1).view(np.uint8)
                               for member in arrays for a in member] or [np.empty(0, np.uint8)])
        members_of = self._members_by_rank(meeting.members, ranks)
        counts = [member_bytes * len(ms) for ms in members_of]
        recv = np.empty(sum(counts), np.uint8)
        self.world.wait([comm.Iallgatherv(send, [recv, counts, _offsets(counts), MPI.BYTE])], meeting.label, ranks)
        position = {m: k for k, m in enumerate(m for ms in members_of for m in ms)}
        per_member = [_unpack(recv, position[m] * member_bytes, templates) for m in meeting.members]
        results = meeting.combine(per_member)
        return [results[meeting.members.index(m)] for m in local]


class _CallSite:
    """One collective instruction over one group of devices, as its calls on this rank share
    it: the ranks and their communicator, the operand types (`matches`), MPI's built-in
    operation when it gives the threads' bits, whether it is reduced in pieces, and the
    description every rank must agree on (each call adds its number)."""
    __slots__ = ("ranks", "comm", "signature", "types", "reduction", "builtin", "folds", "in_pieces", "description",
                 "window", "position", "slot_bytes", "slots_start", "shared_bytes", "through_window", "views",
                 "nbytes")

    def __init__(self, key: tuple, ranks: tuple[int, ...], contribution, meeting: Meeting, MPI):
        arrays = contribution.arrays
        self.ranks = ranks
        self.comm = None
        self.signature = contribution.signature
        self.types = tuple((a.dtype, a.shape) for a in arrays)
        self.reduction = _reduction(meeting)
        self.builtin = _builtin_op(meeting, arrays, MPI)
        self.folds = self.builtin is None and meeting.fold is not None and arrays[0].nbytes > 0
        self.in_pieces = self.folds and arrays[0].nbytes * len(meeting.members) >= PIECEWISE_MIN_BYTES
        # in a shared window half: a header (digest) per rank, one slot per member in group order, then
        # the area of the folded pieces
        self.window: Optional[SharedWindow] = None
        self.position = {m: k for k, m in enumerate(meeting.members)}
        self.slot_bytes = _round64(arrays[0].nbytes)
        self.slots_start = _round64(len(ranks) * _HEADER_BYTES)
        self.shared_bytes = self.slots_start + (len(meeting.members) + 1) * self.slot_bytes   # + the folded pieces
        self.through_window = self.folds and arrays[0].nbytes * len(meeting.members) <= SHARED_MAX_BYTES
        self.views: dict[tuple, _HalfViews] = {}
        self.nbytes = arrays[0].nbytes
        self.description = repr((key, self.signature, tuple((a.dtype.str, a.shape) for a in arrays)))

    def half_views(self, key: tuple, half: np.ndarray, local: tuple[int, ...], dtype) -> "_HalfViews":
        """The views of a window half this site uses (made once per half)."""
        views = self.views.get(key)
        if views is None:
            if any(known[0] != key[0] for known in self.views):
                self.views.clear()          # views of a window that has since grown (freed)
            views = self.views[key] = _HalfViews(self, half, local, dtype)
        return views

    def matches(self, meeting: Meeting, contribution) -> bool:
        arrays = contribution.arrays
        return (contribution.signature == self.signature and _reduction(meeting) == self.reduction
                and len(arrays) == len(self.types)
                and all(a.dtype == dtype and a.shape == shape for a, (dtype, shape) in zip(arrays, self.types)))


class _HalfViews:
    """A call site's views of one half of its group's shared window: every rank's header (and
    digest); per member a slot for the pieces it sends to the other ranks; one area for the
    folded pieces. What this rank writes (`outgoing`: (local operand, start, stop, where)),
    folds (`sources` in group order: (local operand, None) or (None, the piece in the
    window)), publishes (`folded`) and collects (`incoming`: (start, stop, the piece))."""
    __slots__ = ("me", "headers", "digests", "mine", "outgoing", "sources", "folded", "incoming")

    def __init__(self, site: "_CallSite", half: np.ndarray, local: tuple[int, ...], dtype):
        count = len(site.ranks)
        me = self.me = site.comm.Get_rank()
        self.headers = half[:count * _HEADER_BYTES].reshape(count, _HEADER_BYTES)
        self.digests = self.headers[:, :_DIGEST_BYTES]
        bounds = _piece_bounds(site.nbytes // dtype.itemsize, count)
        areas = [half[start:start + site.nbytes].view(dtype)
                 for start in range(site.slots_start, site.slots_start + (len(site.position) + 1) * site.slot_bytes,
                                    site.slot_bytes)]
        slots, folded = areas[:-1], areas[-1]
        self.mine = bounds[me]
        lo, hi = self.mine
        index = {m: i for i, m in enumerate(local)}
        self.outgoing = [(i, a, b, slots[site.position[m]][a:b])
                         for i, m in enumerate(local) for r, (a, b) in enumerate(bounds) if r != me]
        self.sources = [(index[m], None) if m in index else (None, slots[k][lo:hi])
                        for m, k in site.position.items()]
        self.folded = folded[lo:hi]
        self.incoming = [(a, b, folded[a:b]) for r, (a, b) in enumerate(bounds) if r != me]


def _reduction(meeting: Meeting) -> tuple:
    """What decides how an all-reduce may travel: whether it folds, and with which ufunc."""
    return meeting.fold is None, getattr(meeting.fold, "ufunc", None)


def _builtin_op(meeting: Meeting, operands: tuple, MPI) -> Optional[tuple[Any, np.dtype]]:
    """(MPI operation, dtype to send as) when the all-reduce is one of MPI's built-in
    reductions on a type where every order gives the same bits; else None."""
    ufunc = getattr(meeting.fold, "ufunc", None)
    if ufunc is None or len(operands) != 1:
        return None
    dtype = operands[0].dtype
    if dtype.kind == "b" and ufunc in _PRED_OPS:
        return getattr(MPI, _PRED_OPS[ufunc]), np.dtype(np.uint8)
    if dtype.kind not in "iu" or ufunc not in _INTEGER_OPS:
        return None
    name = _INTEGER_OPS[ufunc]
    if name in ("SUM", "PROD") and dtype.kind == "i":
        dtype = np.dtype(f"u{dtype.itemsize}")    # wrap-around is defined for unsigned C types only
    return getattr(MPI, name), dtype


class _PiecePlan:
    """The layout of an all-reduce in pieces on one rank: piece r (of `sizes[r]` bytes at
    `offsets[r]`) is folded by rank r; what this rank sends to and receives from each rank, and
    where each member's copy of this rank's piece is (`sources`, in group order: (index among
    the local operands, None) for a member of this rank, (None, offset in the receive buffer)
    for the others)."""

    def __init__(self, me: int, n: int, itemsize: int, members: tuple[int, ...], members_of: list[tuple]):
        count = len(members_of)
        self.me = me
        self.sizes = [(hi - lo) * itemsize for lo, hi in _piece_bounds(n, count)]
        self.offsets = _offsets(self.sizes)
        self.piece = self.sizes[me]
        self.peers = [r for r in range(count) if r != me]
        self.send_counts = [0 if r == me else self.sizes[r] for r in range(count)]
        self.send_offsets = [0 if r == me else self.offsets[r] for r in range(count)]
        self.recv_counts = [0 if r == me else self.piece * len(members_of[r]) for r in range(count)]
        self.recv_offsets = _offsets(self.recv_counts)
        self.recv_bytes = sum(self.recv_counts)
        where = {m: (r, i) for r, ms in enumerate(members_of) for i, m in enumerate(ms)}
        self.sources = []
        for m in members:
            r, i = where[m]
            self.sources.append((i, None) if r == me else (None, self.recv_offsets[r] + i * self.piece))
        self.digest_out = np.zeros(_DIGEST_BYTES, np.uint8)
        self.digests_in = np.zeros((len(self.peers), _DIGEST_BYTES), np.uint8)
        self._digest_requests: Optional[list] = None

    def peer_digests(self, ranks: tuple[int, ...]) -> list:
        """(rank, its digest of the call) for every peer, once the digests are in."""
        return [(ranks[r], self.digests_in[k]) for k, r in enumerate(self.peers)]

    def digest_requests(self, comm, tag: int) -> list:
        """Persistent sends of `digest_out` to every peer and receives of theirs into `digests_in`."""
        if self._digest_requests is None:
            self._digest_requests = ([comm.Send_init(self.digest_out, r, tag=tag) for r in self.peers]
                                     + [comm.Recv_init(self.digests_in[k], r, tag=tag)
                                        for k, r in enumerate(self.peers)])
        return self._digest_requests


def _digest(description: str) -> np.ndarray:
    return np.frombuffer(hashlib.sha1(description.encode()).digest(), np.uint8)


def _raise_for_differing(meeting: Meeting, description: str, digest: np.ndarray, theirs) -> None:
    """Name the first rank whose digest of the call (in `theirs`: (rank, digest)) is not ours."""
    for rank, their_digest in theirs:
        if not np.array_equal(their_digest, digest):
            raise ValueError(f"{meeting.label}: rank {rank} is at another call or has other operands "
                             f"than this rank's {description}")


def _piece_bounds(n: int, count: int) -> list[tuple[int, int]]:
    """The elements [start, stop) of each of `count` ranks' pieces of an array of n elements."""
    return [(n * r // count, n * (r + 1) // count) for r in range(count)]


def _fold_into(out: np.ndarray, pieces: list, combiner) -> None:
    """out = the fold of the pieces in order, as _fold computes it; where the combiner is one
    IEEE float operation (numpy's ufunc on f32 / f64 computes exactly that), without temporaries."""
    ufunc = getattr(combiner, "ufunc", None)
    if ufunc in _EXACT_UFUNCS and out.dtype in _EXACT_UFUNC_TYPES and len(pieces) >= 2:
        ufunc(pieces[0][0], pieces[1][0], out=out)
        for (piece,) in pieces[2:]:
            ufunc(out, piece, out=out)
        return
    out[...] = _fold(pieces, combiner, "all-reduce")[0]


_EXACT_UFUNCS = (np.add, np.multiply)   # (numpy's maximum and minimum order -0 and +0 otherwise than XLA)
_EXACT_UFUNC_TYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _round64(n: int) -> int:
    return (n + 63) // 64 * 64


def _offsets(counts: list[int]) -> list[int]:
    out, total = [], 0
    for c in counts:
        out.append(total)
        total += c
    return out


def _unpack(buffer: np.ndarray, start: int, templates: tuple) -> tuple:
    """Arrays shaped and typed like `templates`, copied out of raw bytes from `start`."""
    out = []
    for t in templates:
        out.append(buffer[start:start + t.nbytes].view(t.dtype).reshape(t.shape).copy())
        start += t.nbytes
    return tuple(out)
