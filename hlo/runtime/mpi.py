"""MPI plumbing shared by every transport of collectives across processes.

One process per MPI rank; `MpiWorld` wraps what the interpreter's transport
(hlo.interpreter.mpi_collectives) and the compiled code's hooks need:

* waiting for non-blocking MPI requests with a timeout (MPI's blocking calls cannot
  time out), servicing control messages meanwhile;
* a control channel (its own communicator): a failing rank tells the others
  (`abort_others`), and a rank that times out asks the others where they are, so
  that its message names the rank that died or went elsewhere;
* communicators for groups of ranks, created once per group of devices;
* bytes between ranks (inputs out from rank 0, results back), and the start-up
  check that every rank runs the same thing (`check_consistent`).

mpi4py is an optional dependency (the `mpi` extra): `load_mpi` imports it or
explains how to install it.
"""
from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
import time
import zlib
from typing import Any, Callable, Optional, Sequence

import numpy as np

DEFAULT_COLLECTIVE_TIMEOUT = 300.0

# Environment variables an MPI launcher sets (MPICH/hydra and PMIx, Open MPI, MVAPICH, Slurm's PMI).
_SIZE_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "MV2_COMM_WORLD_SIZE")

_TAG_ABORT, _TAG_QUERY, _TAG_REPLY = 1, 2, 3
_STATUS_GRACE_SECONDS = 2.0
_NAP_AFTER_SECONDS = 0.05       # waits longer than this sleep between tests
_NAP_SECONDS = 0.0005     # how long a rank that timed out waits for the others' answers


class MpiUnavailable(RuntimeError):
    """mpi4py (or an MPI library under it) is missing."""


class PeerFailed(ValueError):
    """Another rank failed and said so: this rank stops too."""


class CollectiveTimeout(ValueError):
    """Waiting for other ranks took longer than the collective timeout."""


def load_mpi():
    """The mpi4py.MPI module, or MpiUnavailable naming the extra that installs it."""
    try:
        from mpi4py import MPI  # lazy: an optional dependency, only for runs over several processes
    except ImportError as exc:
        raise MpiUnavailable("running over MPI needs mpi4py and an MPI library: install the 'mpi' extra "
                             "(pip install 'hlo-toolchain[mpi]', which brings mpi4py and the mpich "
                             f"wheel) ({exc})") from None
    return MPI


def launched_by_mpi() -> bool:
    """Whether an MPI launcher started this process as one of several ranks."""
    for name in _SIZE_VARIABLES:
        value = os.environ.get(name, "")
        if value.isdigit() and int(value) > 1:
            return True
    return False


class MpiWorld:
    """This process's view of the MPI job: its rank, the communicators, the waits."""

    def __init__(self, timeout: float = DEFAULT_COLLECTIVE_TIMEOUT):
        MPI = self.MPI = load_mpi()
        _survive_failure_notices()
        world = MPI.COMM_WORLD
        self.rank = world.Get_rank()
        self.size = world.Get_size()
        self.timeout = timeout
        self.data = world.Dup()       # collectives and point-to-point data
        self.control = world.Dup()    # abort notices and status queries only
        node = world.Split_type(MPI.COMM_TYPE_SHARED)
        self.oversubscribed = node.Get_size() > (os.cpu_count() or 1)   # more ranks than cores here
        node.Free()
        self._comms: dict[Any, Any] = {}
        self._comms_lock = threading.Lock()
        self._waiting: dict[int, str] = {}     # thread id -> what it waits for (status answers)
        self._replies: list = []               # pending status answers (keep the requests alive)
        self._failed: Optional[PeerFailed] = None

    @property
    def peer_failure(self) -> Optional[PeerFailed]:
        """The failure another rank reported, if any."""
        return self._failed

    # -- waiting

    def wait(self, requests: Sequence, what: str, peers: Sequence[int]) -> None:
        """Complete every request, or raise PeerFailed / CollectiveTimeout naming the ranks.

        what: the operation, as messages name it; peers: the ranks it waits for."""
        Testall = self.MPI.Request.Testall
        if Testall(requests):
            return
        me = threading.get_ident()
        self._waiting[me] = what
        try:
            self._poll(lambda: Testall(requests), what, peers)
        finally:
            self._waiting.pop(me, None)

    def _poll(self, done: Callable[[], bool], what: str, peers: Sequence[int]) -> None:
        """Test until done. MPI progresses non-blocking operations only inside its calls, so
        spin (as MPI's blocking calls do) while every rank of this node has a core of its own;
        where ranks outnumber cores, yield the core between tests; nap through long waits."""
        start = time.monotonic()
        deadline = start + self.timeout
        nap_after = _NAP_AFTER_SECONDS
        spins = 0
        while not done():
            spins += 1
            if spins % 64 == 0:
                self.service_control()
                now = time.monotonic()
                if now > deadline:
                    raise CollectiveTimeout(self._timeout_message(what, peers))
                if now - start > nap_after:
                    time.sleep(_NAP_SECONDS)
            elif self.oversubscribed:
                os.sched_yield()

    def service_control(self) -> None:
        """Raise PeerFailed if another rank reported a failure; answer status queries."""
        MPI, control = self.MPI, self.control
        if self._failed is not None:
            raise self._failed
        status = MPI.Status()
        while control.Iprobe(MPI.ANY_SOURCE, _TAG_QUERY, status):
            control.recv(source=status.Get_source(), tag=_TAG_QUERY)
            where = "; ".join(sorted(set(self._waiting.values()))) or "computing (in no collective)"
            self._replies.append(control.isend(where, dest=status.Get_source(), tag=_TAG_REPLY))
        if control.Iprobe(MPI.ANY_SOURCE, _TAG_ABORT, status):
            message = control.recv(source=status.Get_source(), tag=_TAG_ABORT)
            self._failed = PeerFailed(f"rank {status.Get_source()} failed: {message}")
            raise self._failed

    def _timeout_message(self, what: str, peers: Sequence[int]) -> str:
        """Ask the peers where they are; say who answered what and who did not."""
        answers = self._ask_status([p for p in peers if p != self.rank])
        lines = []
        for p in sorted(set(peers) - {self.rank}):
            if p in answers:
                lines.append(f"rank {p} waits in {answers[p]}")
            else:
                lines.append(f"rank {p} does not answer (it died, or is stuck outside collectives)")
        return (f"{what} timed out after {self.timeout:g} s on rank {self.rank}: " + "; ".join(lines)
                + " (see --collective-timeout)")

    def _ask_status(self, peers: list[int]) -> dict[int, str]:
        MPI, control = self.MPI, self.control
        sends = [control.isend(None, dest=p, tag=_TAG_QUERY) for p in peers]
        answers: dict[int, str] = {}
        deadline = time.monotonic() + min(_STATUS_GRACE_SECONDS, self.timeout)
        status = MPI.Status()
        while len(answers) < len(peers) and time.monotonic() < deadline:
            self.service_control()      # another rank's failure report says more than this timeout
            while control.Iprobe(MPI.ANY_SOURCE, _TAG_REPLY, status):
                answers[status.Get_source()] = control.recv(source=status.Get_source(), tag=_TAG_REPLY)
            time.sleep(1e-3)
        del sends   # left unfinished for ranks that died: this rank is about to stop anyway
        return answers

    def abort_others(self, message: str) -> None:
        """Tell every other rank that this one failed (best effort, one second at most)."""
        requests = [self.control.isend(message, dest=p, tag=_TAG_ABORT) for p in range(self.size) if p != self.rank]
        deadline = time.monotonic() + 1.0
        while requests and not self.MPI.Request.Testall(requests) and time.monotonic() < deadline:
            time.sleep(1e-3)

    # -- communicators

    def comm_for(self, key: Any, ranks: tuple[int, ...], what: str):
        """A communicator of exactly `ranks` (ascending), one per key (a group of devices),
        so that the collectives of different groups never share one."""
        with self._comms_lock:
            comm = self._comms.get(key)
        if comm is not None:
            return comm
        group = self.data.Get_group().Incl(list(ranks))
        tag = zlib.crc32(repr(key).encode()) % 32000
        try:
            comm = self.collectively(lambda: self.data.Create_group(group, tag),
                                     f"{what} (setting up the group of ranks {list(ranks)})", ranks)
        finally:
            group.Free()
        with self._comms_lock:
            self._comms[key] = comm
        return comm

    def collectively(self, blocking: Callable[[], Any], what: str, peers: Sequence[int]) -> Any:
        """The result of a blocking MPI call that every rank of a group must make (creating a
        communicator or a window): run aside, waited for with the collective timeout."""
        made: dict[str, Any] = {}

        def run() -> None:
            try:
                made["result"] = blocking()
            except BaseException as exc:   # handed to the waiting thread
                made["error"] = exc

        worker = threading.Thread(target=run, daemon=True, name="hlo-mpi-collective")
        worker.start()
        self._poll(lambda: not worker.is_alive(), what, peers)
        if "error" in made:
            raise ValueError(f"{what}: {made['error']}") from None
        return made["result"]

    # -- whole-job operations

    def allgather_bytes(self, comm, payload: bytes, what: str, peers: Sequence[int]) -> list[bytes]:
        """Every rank of comm gets every rank's payload (in comm rank order)."""
        MPI = self.MPI
        lengths = np.zeros(comm.Get_size(), np.int64)
        self.wait([comm.Iallgather(np.array([len(payload)], np.int64), lengths)], what, peers)
        out = np.empty(int(lengths.sum()), np.uint8)
        counts = [int(n) for n in lengths]
        displacements = [int(d) for d in np.concatenate([[0], np.cumsum(lengths)[:-1]])]
        send = np.frombuffer(payload, np.uint8) if payload else np.empty(0, np.uint8)
        self.wait([comm.Iallgatherv(send, [out, counts, displacements, MPI.BYTE])], what, peers)
        return [out[d:d + n].tobytes() for d, n in zip(displacements, counts)]

    def allgather_fixed(self, comm, payload: bytes, what: str, peers: Sequence[int]) -> list[bytes]:
        """allgather_bytes for payloads of the same length on every rank (one exchange)."""
        out = np.empty(len(payload) * comm.Get_size(), np.uint8)
        self.wait([comm.Iallgather(np.frombuffer(payload, np.uint8), out)], what, peers)
        n = len(payload)
        return [out[i * n:(i + 1) * n].tobytes() for i in range(comm.Get_size())]

    def allgather_object(self, obj: Any, what: str) -> list[Any]:
        blobs = self.allgather_bytes(self.data, pickle.dumps(obj, protocol=5), what, range(self.size))
        return [pickle.loads(b) for b in blobs]

    def send_object(self, obj: Any, dest: int, what: str) -> None:
        payload = np.frombuffer(pickle.dumps(obj, protocol=5), np.uint8)
        size = np.array([payload.size], np.int64)
        self.wait([self.data.Isend(size, dest, tag=10), self.data.Isend(payload, dest, tag=11)], what, [dest])

    def recv_object(self, source: int, what: str) -> Any:
        size = np.zeros(1, np.int64)
        self.wait([self.data.Irecv(size, source, tag=10)], what, [source])
        payload = np.empty(int(size[0]), np.uint8)
        self.wait([self.data.Irecv(payload, source, tag=11)], what, [source])
        return pickle.loads(payload.tobytes())

    def check_consistent(self, fingerprint: dict[str, str]) -> None:
        """Every rank must give the same fingerprint (module, options, inputs): raise a
        ValueError naming the first rank that differs from rank 0, and how."""
        every = self.allgather_object(fingerprint, "the start-up check of the ranks")
        reference = every[0]
        for rank, theirs in enumerate(every[1:], start=1):
            for field in sorted(set(reference) | set(theirs)):
                if theirs.get(field) != reference.get(field):
                    raise ValueError(f"rank {rank} differs from rank 0 in its {field}: "
                                     f"{theirs.get(field)} on rank {rank}, {reference.get(field)} on rank 0; "
                                     f"every rank must run the same module with the same options")


def _survive_failure_notices() -> None:
    """MPICH's launcher, told not to clean up, signals SIGUSR1 to the ranks left when one
    fails; by default that would end them before they can say which rank and where. The
    ranks find out by themselves (abort notices, timeouts): ignore the signal."""
    if hasattr(signal, "SIGUSR1") and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)


def exit_now(code: int) -> None:
    """End this rank without MPI_Finalize (which would wait for ranks that failed)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
