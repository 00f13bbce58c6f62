"""Past-data store that mini-batches are drawn from.

Two regimes share one class:

* ``capacity=None``: every observation is kept, in buffers whose capacity
  doubles when full, so appending a chunk copies only that chunk
  (amortised O(1) per observation).
* ``capacity=k``: a uniform random sample of size ``k`` of the whole
  stream (reservoir sampling, Vitter's algorithm R, vectorised over a
  chunk), so memory stays bounded on an unbounded stream.

A store is a value: :meth:`Reservoir.append` returns a new store and the
old one still holds what it held. An unbounded store shares its buffers
with the stores appended to it (each sees only its first ``size`` rows,
and rows past them are written once); a bounded one copies its buffers
before overwriting a slot.
"""

from dataclasses import dataclass, field, replace

import torch

__all__ = ["Reservoir", "WITHOUT_REPLACEMENT"]

# Largest store, in mini-batches, that mini-batches are drawn from without
# replacement.
WITHOUT_REPLACEMENT = 16


@dataclass(frozen=True)
class Reservoir:
    capacity: int | None = None
    n_seen: int = 0
    size: int = 0
    buffers: tuple = ()
    # Rows written into the buffers so far, shared by every store holding
    # them: a store shorter than that must not write its rows there again.
    written: list = field(default_factory=lambda: [0], compare=False, repr=False)

    def data(self):
        """The stored observations as a batch (views, no copy)."""
        return tuple(b[: self.size] for b in self.buffers)

    def append(self, batch, generator):
        """This store with a chunk of observations (a tuple of tensors) added."""
        n_new = batch[0].shape[0]
        if self.capacity is None:
            store = self._with_room(batch, n_new)._filled(batch)
        else:
            store = self._sampled(batch, generator)
        return replace(store, n_seen=self.n_seen + n_new)

    def sample_indices(self, n, generator):
        """At most ``n`` indices into :meth:`data`, a uniform sample.

        All of them when ``n`` reaches the store's size (the sum over the
        sample is then exact); without replacement while the store holds at
        most ``WITHOUT_REPLACEMENT`` times ``n`` (a sample of a fraction
        ``f`` has ``1 - f`` of the variance of one with replacement); with
        replacement beyond, where that saving is small and a permutation
        of the whole store would cost more than the mini-batch.
        """
        device = self.buffers[0].device
        if n >= self.size:
            return torch.arange(self.size, device=device)
        if self.size <= WITHOUT_REPLACEMENT * n:
            return torch.randperm(self.size, generator=generator, device=device)[:n]
        return torch.randint(self.size, (n,), generator=generator, device=device)

    def _with_room(self, batch, n):
        """This store, on buffers where rows ``size .. size + n`` are free to write."""
        if not self.buffers:
            first = n if self.capacity is None else min(n, self.capacity)
            return replace(self, written=[0], buffers=tuple(
                t.new_empty((max(first, 1),) + t.shape[1:]) for t in batch))
        cap = self.buffers[0].shape[0]
        needed = self.size + n
        if needed <= cap and self.written[0] <= self.size:
            return self
        while cap < needed:
            cap *= 2
        if self.capacity is not None:
            cap = min(cap, self.capacity)
        return replace(self, buffers=self._copied(cap), written=[self.size])

    def _copied(self, cap):
        copies = []
        for buf in self.buffers:
            new = buf.new_empty((cap,) + buf.shape[1:])
            new[: self.size] = buf[: self.size]
            copies.append(new)
        return tuple(copies)

    def _filled(self, batch):
        """The store with ``batch`` written past its rows (see :meth:`_with_room`)."""
        end = self.size + batch[0].shape[0]
        for buf, t in zip(self.buffers, batch):
            buf[self.size : end] = t
        self.written[0] = end
        return replace(self, size=end)

    def _sampled(self, batch, generator):
        k = self.capacity
        n_new = batch[0].shape[0]
        # Fill the free slots first; they are taken with probability one.
        n_fill = min(k - self.size, n_new)
        store = self
        if n_fill > 0:
            store = self._with_room(batch, n_fill)._filled(tuple(t[:n_fill] for t in batch))
        if n_fill == n_new:
            return store
        # Algorithm R: item number t (0-based) replaces a uniform slot in
        # [0, t] and is kept when that slot is < k.
        device = store.buffers[0].device
        t = torch.arange(self.n_seen + n_fill, self.n_seen + n_new, device=device)
        u = torch.rand(t.shape[0], generator=generator, device=device, dtype=torch.float64)
        slot = torch.floor(u * (t + 1).to(torch.float64)).to(torch.long)
        keep = slot < k
        slot, pos = slot[keep], torch.nonzero(keep).reshape(-1) + n_fill
        if slot.numel() == 0:
            return store
        # Several items may hit one slot; as in the sequential algorithm the
        # last of them wins.
        last = torch.full((k,), -1, dtype=torch.long, device=device)
        last.scatter_reduce_(0, slot, pos, reduce="amax")
        slots = torch.nonzero(last >= 0).reshape(-1)
        buffers = tuple(b.clone() for b in store.buffers)  # other stores may hold these
        for buf, t in zip(buffers, batch):
            buf[slots] = t[last[slots]]
        return replace(store, buffers=buffers, written=[store.size])
