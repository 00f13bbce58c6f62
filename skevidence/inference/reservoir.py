"""Past-data store that mini-batches are drawn from.

Two regimes share one class:

* ``capacity=None``: every observation is kept, in buffers whose capacity
  doubles when full, so appending a chunk copies only that chunk
  (amortised O(1) per observation).
* ``capacity=k``: a uniform random sample of size ``k`` of the whole
  stream (reservoir sampling, Vitter's algorithm R, vectorised over a
  chunk), so memory stays bounded on an unbounded stream.
"""

from dataclasses import dataclass, field

import torch

__all__ = ["Reservoir"]


@dataclass
class Reservoir:
    capacity: int | None = None
    n_seen: int = 0
    size: int = 0
    buffers: tuple = field(default_factory=tuple)

    def data(self):
        """The stored observations as a batch (views, no copy)."""
        return tuple(b[: self.size] for b in self.buffers)

    def append(self, batch, generator):
        """Add a chunk of observations (a tuple of tensors)."""
        n_new = batch[0].shape[0]
        if not self.buffers:
            first = n_new if self.capacity is None else min(n_new, self.capacity)
            self.buffers = tuple(
                t.new_empty((max(first, 1),) + t.shape[1:]) for t in batch
            )
        if self.capacity is None:
            self._grow_to(self.size + n_new)
            self._write(slice(self.size, self.size + n_new), batch)
            self.size += n_new
        else:
            self._sample_into(batch, generator)
        self.n_seen += n_new

    def sample_indices(self, n, generator):
        """``n`` indices into :meth:`data`, drawn uniformly with replacement."""
        device = self.buffers[0].device
        return torch.randint(self.size, (n,), generator=generator, device=device)

    def _write(self, where, batch):
        for buf, t in zip(self.buffers, batch):
            buf[where] = t

    def _grow_to(self, needed):
        cap = self.buffers[0].shape[0]
        if needed <= cap:
            return
        while cap < needed:
            cap *= 2
        if self.capacity is not None:
            cap = min(cap, self.capacity)
        grown = []
        for buf in self.buffers:
            new = buf.new_empty((cap,) + buf.shape[1:])
            new[: self.size] = buf[: self.size]
            grown.append(new)
        self.buffers = tuple(grown)

    def _sample_into(self, batch, generator):
        k = self.capacity
        n_new = batch[0].shape[0]
        # Fill the free slots first; they are taken with probability one.
        n_fill = min(k - self.size, n_new)
        if n_fill > 0:
            self._grow_to(self.size + n_fill)
            self._write(slice(self.size, self.size + n_fill), tuple(t[:n_fill] for t in batch))
            self.size += n_fill
        if n_fill == n_new:
            return
        # Algorithm R: item number t (0-based) replaces a uniform slot in
        # [0, t] and is kept when that slot is < k.
        device = self.buffers[0].device
        t = torch.arange(self.n_seen + n_fill, self.n_seen + n_new, device=device)
        u = torch.rand(t.shape[0], generator=generator, device=device, dtype=torch.float64)
        slot = torch.floor(u * (t + 1).to(torch.float64)).to(torch.long)
        keep = slot < k
        slot, pos = slot[keep], torch.nonzero(keep).reshape(-1) + n_fill
        if slot.numel() == 0:
            return
        # Several items may hit one slot; as in the sequential algorithm the
        # last of them wins.
        last = torch.full((k,), -1, dtype=torch.long, device=device)
        last.scatter_reduce_(0, slot, pos, reduce="amax")
        slots = torch.nonzero(last >= 0).reshape(-1)
        self._write(slots, tuple(t[last[slots]] for t in batch))
