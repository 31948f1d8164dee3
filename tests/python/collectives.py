"""Collectives for Context._save_ranks/_load_ranks in one process (what
rngsnap's TorchComm, rngsnap/_context/comm.py, provides over
torch.distributed): a world of one, one whose link is down, and a world of
threads."""
import threading


class OneRank:
    """The collectives of a world of one."""
    size = 1

    def allgather(self, data):
        return data

    def broadcast(self, data, root):
        return data


class LinkDown(OneRank):
    def allgather(self, data):
        raise ConnectionError("link down")


class Threads:
    """In-process collectives for `size` threads (each calls with its own
    rank view); every collective is two barrier rounds."""

    def __init__(self, size):
        self.size = size
        self.slots = [b""] * size
        self.barrier = threading.Barrier(size)

    def rank(self, r):
        outer = self

        class View:
            size = outer.size

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
        return View()
