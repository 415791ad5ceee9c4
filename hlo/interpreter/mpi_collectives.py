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
* any other all-reduce of one array is reduced in pieces: rank r receives piece r
  of every member (MPI all-to-all), folds the pieces in group order with the same
  combiner as the threads, and every rank gathers the folded pieces: the threaded
  run's order for every element, at the bandwidth of MPI's own reduce-scatter +
  all-gather algorithm;
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
from .collectives import DEFAULT_TIMEOUT_SECONDS, CollectiveContext, Meeting, _fold, _shared_result

# All-reduces smaller than this (bytes, over every member) gather everything instead of
# reducing in pieces: one exchange instead of two.
PIECEWISE_MIN_BYTES = 64 * 1024
_DIGEST_TAG = 77

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
        ranks = tuple(sorted({self.rank_of(m) for m in meeting.members}))
        if ranks == (self.world.rank,):
            return super()._finish(meeting, local, contributions)
        self._check_agreement(meeting.label, local, contributions)
        comm = self.world.comm_for(meeting.members, ranks, meeting.label)
        arrays = [c.arrays for c in contributions]
        description = _describe(meeting, contributions[0])
        op = _builtin_op(meeting, arrays[0], self.world.MPI)
        if op is None and meeting.fold is not None and arrays[0][0].nbytes * len(meeting.members) >= PIECEWISE_MIN_BYTES:
            return self._all_reduce_in_pieces(comm, ranks, meeting, local, arrays, description)
        self._check_across(comm, ranks, meeting, description)
        if op is not None:
            return self._all_reduce_builtin(comm, ranks, meeting, arrays, op)
        return self._gather_and_combine(comm, ranks, meeting, local, arrays)

    def _check_across(self, comm, ranks, meeting: Meeting, description: str) -> None:
        """Every rank must be at the same call with operands of the same types and shapes."""
        digest = hashlib.sha1(description.encode()).digest()
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
        MPI, me = self.world.MPI, comm.Get_rank()
        sample = arrays[0][0]
        n, itemsize, count = sample.size, sample.dtype.itemsize, len(ranks)
        bounds = [n * r // count for r in range(count + 1)]
        sizes = [(bounds[r + 1] - bounds[r]) * itemsize for r in range(count)]
        offsets = _offsets(sizes)
        flats = [np.ascontiguousarray(a[0]).reshape(-1).view(np.uint8) for a in arrays]
        members_of = [tuple(m for m in meeting.members if self.rank_of(m) == rank) for rank in ranks]
        # what goes out: piece r of every local member, to rank r (nothing to this rank)
        send_counts = [0 if r == me else sizes[r] * len(flats) for r in range(count)]
        if len(flats) == 1:
            send, send_offsets = flats[0], [0 if r == me else offsets[r] for r in range(count)]
        else:
            send = np.concatenate([f[offsets[r]:offsets[r] + sizes[r]] for r in range(count) if r != me
                                   for f in flats] or [np.empty(0, np.uint8)])
            send_offsets = _offsets(send_counts)
        piece = sizes[me]
        recv_counts = [0 if r == me else piece * len(members_of[r]) for r in range(count)]
        recv = self._scratch(meeting.members, sum(recv_counts))
        recv_offsets = _offsets(recv_counts)
        exchange = comm.Ialltoallv([send, send_counts, send_offsets, MPI.BYTE],
                                   [recv, recv_counts, recv_offsets, MPI.BYTE])
        self._exchange_checked(comm, ranks, meeting, description, exchange)
        where = {m: (r, i) for r, ms in enumerate(members_of) for i, m in enumerate(ms)}
        pieces = []
        for m in meeting.members:        # group order: the threaded fold's order
            r, i = where[m]
            if r == me:
                chunk = flats[i][offsets[me]:offsets[me] + piece]
            else:
                chunk = recv[recv_offsets[r] + i * piece:recv_offsets[r] + (i + 1) * piece]
            pieces.append((chunk.view(sample.dtype),))
        result = self._result_buffer(meeting.members, n * itemsize)
        _fold_into(result[offsets[me]:offsets[me] + piece].view(sample.dtype), pieces, meeting.fold)
        self.world.wait([comm.Iallgatherv(MPI.IN_PLACE, [result, sizes, offsets, MPI.BYTE])], meeting.label, ranks)
        return _shared_result([result.view(sample.dtype).reshape(sample.shape)], len(local))

    def _exchange_checked(self, comm, ranks, meeting: Meeting, description: str, exchange) -> None:
        """Complete `exchange`, the ranks' digests of the call sent alongside; a rank whose digest
        differs (another call, other operands) is named."""
        MPI, me = self.world.MPI, comm.Get_rank()
        digest = np.frombuffer(hashlib.sha1(description.encode()).digest(), np.uint8)
        theirs = np.zeros((len(ranks), digest.size), np.uint8)
        peers = [r for r in range(len(ranks)) if r != me]
        headers = [comm.Isend(digest, r, tag=_DIGEST_TAG) for r in peers]
        headers += [comm.Irecv(theirs[r], r, tag=_DIGEST_TAG) for r in peers]
        try:
            self.world.wait([exchange, *headers], meeting.label, ranks)
        except MPI.Exception as exc:  # sizes that disagree: the digests say why
            self.world.wait(headers, meeting.label, ranks)
            self._raise_for_digests(ranks, meeting, digest, theirs, peers, description)
            raise ValueError(f"{meeting.label}: MPI failed: {exc}") from None
        self._raise_for_digests(ranks, meeting, digest, theirs, peers, description)

    @staticmethod
    def _raise_for_digests(ranks, meeting, digest, theirs, peers, description) -> None:
        for r in peers:
            if not np.array_equal(theirs[r], digest):
                raise ValueError(f"{meeting.label}: rank {ranks[r]} is at another call or has other operands "
                                 f"than this rank's {description}")

    def _result_buffer(self, key, size: int) -> np.ndarray:
        """Memory for a result: one of this group's earlier results that nothing refers to any
        more (a loop's previous value, say), else new memory. Reusing pages spares the page
        faults of fresh memory, a tenth of a large all-reduce's time."""
        pool = self._results.setdefault(key, [])
        for buffer in pool:
            # referenced only by the pool and by getrefcount's argument: free to overwrite
            if buffer.size == size and sys.getrefcount(buffer) == 3:
                return buffer
        buffer = np.empty(size, np.uint8)
        if len(pool) < 2:
            pool.append(buffer)
        return buffer

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
        members_of = [tuple(m for m in meeting.members if self.rank_of(m) == rank) for rank in ranks]
        counts = [member_bytes * len(ms) for ms in members_of]
        recv = np.empty(sum(counts), np.uint8)
        self.world.wait([comm.Iallgatherv(send, [recv, counts, _offsets(counts), MPI.BYTE])], meeting.label, ranks)
        position = {m: k for k, m in enumerate(m for ms in members_of for m in ms)}
        per_member = [_unpack(recv, position[m] * member_bytes, templates) for m in meeting.members]
        results = meeting.combine(per_member)
        return [results[meeting.members.index(m)] for m in local]


def _describe(meeting: Meeting, contribution) -> str:
    """What every rank of a call must agree on: the call, its attributes, its operands' types."""
    return repr((meeting.key, contribution.signature,
                 tuple((a.dtype.str, a.shape) for a in contribution.arrays)))


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
