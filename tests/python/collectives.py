"""Communicators for Context._save_ranks/_load_ranks in one process (what
rngsnap's TorchComm, rngsnap/_context/comm.py, provides over
torch.distributed; python/src/comm.c lists the methods): a world of one,
one whose link is down, and a world of threads (every thread its own
node, each rank's messages in a queue of its own)."""
import collections
import queue
import threading


class OneRank:
    """A world of one: rank 0, its own node; what it sends itself waits
    for its recv."""
    size = 1
    rank = 0
    node_ranks = [0]

    def __init__(self):
        self.sent = collections.deque()

    def allgather(self, data):
        return data

    def broadcast(self, data, root):
        return data

    def send(self, data, dest):
        assert dest == 0, dest
        self.sent.append(bytes(data))

    def recv(self, nbytes, src):
        assert src in (None, 0), src
        data = self.sent.popleft()
        assert len(data) == nbytes, (len(data), nbytes)
        return data, 0


class LinkDown(OneRank):
    """Every call that communicates fails."""

    def _down(self, *args):
        raise ConnectionError("link down")

    allgather = broadcast = send = recv = _down


class Threads:
    """In-process communicator for `size` threads (each calls with its
    own rank view): every collective is two barrier rounds; a send puts
    (sender, data) in the receiver's queue.  A thread that fails calls
    abort(): the others' waits then raise instead of waiting for ever."""

    def __init__(self, size):
        self.size = size
        self.slots = [b""] * size
        self.barrier = threading.Barrier(size)
        self.inbox = [queue.Queue() for _ in range(size)]

    def abort(self):
        self.barrier.abort()
        for box in self.inbox:
            box.put((None, None))

    def rank(self, r):
        outer = self

        class View:
            size = outer.size
            rank = r
            node_ranks = [r]

            def __init__(self):
                self.early = []  # received from another src than asked

            def allgather(self, data):
                outer.slots[r] = data
                outer.barrier.wait()
                got = b"".join(outer.slots)
                outer.barrier.wait()
                return got

            def broadcast(self, data, root):
                if r == root:
                    outer.slots[root] = data
                outer.barrier.wait()
                got = outer.slots[root]
                outer.barrier.wait()
                return got

            def send(self, data, dest):
                outer.inbox[dest].put((r, bytes(data)))

            def recv(self, nbytes, src):
                for i, (sender, data) in enumerate(self.early):
                    if src in (None, sender):
                        del self.early[i]
                        return self._sized(data, nbytes), sender
                while True:
                    sender, data = outer.inbox[r].get()
                    if sender is None:
                        raise ConnectionError("another rank aborted")
                    if src in (None, sender):
                        return self._sized(data, nbytes), sender
                    self.early.append((sender, data))

            @staticmethod
            def _sized(data, nbytes):
                assert len(data) == nbytes, (len(data), nbytes)
                return data
        return View()
