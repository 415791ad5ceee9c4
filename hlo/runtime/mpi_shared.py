"""Memory shared by the ranks of one node: an MPI-3 shared memory window per group of ranks.

When every rank of a group runs on the same machine, a collective need not send its data
through MPI's messages (two copies through the transport per phase): the ranks write what
the others need into the group's window, meet at a barrier, and read it where it lies.
`SharedWindow` is that window, double-buffered: call k uses half k % 2, so a rank that
writes half k % 2 again, at call k + 2, has passed the first barrier of call k + 1, which
every rank reaches only after it finished reading half k % 2 at call k.

The window is MPI's (`MPI_Win_allocate_shared`, with `MPI_Win_sync` around each barrier
for the memory model); every wait has the collective timeout (MpiWorld.wait). Groups that
span machines, or runs with HLO_MPI_SHARED_MEMORY=0 (to exercise the message path on one
machine), have no window.
"""
from __future__ import annotations

import os
from typing import Optional, Sequence

import numpy as np

from .mpi import MpiWorld

_ENVIRONMENT_SWITCH = "HLO_MPI_SHARED_MEMORY"


def shared_memory_enabled() -> bool:
    return os.environ.get(_ENVIRONMENT_SWITCH, "1") != "0"


def all_on_one_node(world: MpiWorld, comm, what: str, peers: Sequence[int]) -> bool:
    """Whether every rank of comm runs on this machine (a collective call of comm's ranks)."""
    MPI = world.MPI
    node = world.collectively(lambda: comm.Split_type(MPI.COMM_TYPE_SHARED), what, peers)
    together = node.Get_size() == comm.Get_size()
    node.Free()
    return together


class SharedWindow:
    """A group's shared memory, in two halves used by alternate calls."""

    def __init__(self, world: MpiWorld, comm):
        self.world = world
        self.comm = comm
        self.half_bytes = 0
        self._win = None
        self._memory: Optional[np.ndarray] = None
        self._calls = 0
        self.generation = 0      # counts the windows made (views of an older one are stale)

    def fits(self, nbytes: int) -> bool:
        return nbytes <= self.half_bytes

    def grow(self, nbytes: int, what: str, peers: Sequence[int]) -> None:
        """Halves of at least nbytes (rounded up to a power of two): a collective call of the
        group's ranks, which must all be at the same call (check before)."""
        half = max(1 << 16, 1 << (max(nbytes, 1) - 1).bit_length())
        self.free(what, peers)
        MPI, comm = self.world.MPI, self.comm
        size = 2 * half if comm.Get_rank() == 0 else 0      # one block, on the group's first rank
        self._win = self.world.collectively(lambda: MPI.Win.Allocate_shared(size, 1, comm=comm),
                                            f"{what} (allocating {2 * half} bytes of shared memory)", peers)
        buffer, _ = self._win.Shared_query(0)
        self._memory = np.frombuffer(buffer, np.uint8, count=2 * half)
        self._win.Lock_all(MPI.MODE_NOCHECK)
        self.half_bytes = half
        self.generation += 1

    def next_half(self) -> tuple[tuple[int, int], np.ndarray]:
        """The half this call writes and reads (the calls of a group alternate), and a key that
        names it until the window grows (for views made once per half)."""
        which = self._calls % 2
        self._calls += 1
        start = which * self.half_bytes
        return (self.generation, which), self._memory[start:start + self.half_bytes]

    def barrier(self, what: str, peers: Sequence[int]) -> None:
        """Every rank has written its part of this call's half and may read the others'."""
        self._win.Sync()
        self.world.wait([self.comm.Ibarrier()], what, peers)
        self._win.Sync()

    def free(self, what: str, peers: Sequence[int]) -> None:
        if self._win is None:
            return
        win, self._win, self._memory, self.half_bytes = self._win, None, None, 0
        win.Unlock_all()
        self.world.collectively(win.Free, f"{what} (freeing shared memory)", peers)
