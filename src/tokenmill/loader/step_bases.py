"""The global step each epoch begins at, for planners whose plans depend on it (a weights schedule).

The batch iterator's position is (epoch, step); a mix that follows the training step needs the step
count of all epochs before too. It is one integer per epoch, worked out forward from one known epoch
(epoch 1 at step 0, or the epoch a state was saved in, which records its own) by adding each epoch's
steps, and kept.
"""

from __future__ import annotations

from collections.abc import Callable

from tokenmill.errors import ConfigError


class StepBases:
    """Known global steps at the start of epochs; :meth:`at` walks forward from the last known one."""

    def __init__(self, epoch: int = 1, base: int = 0) -> None:
        self.known: dict[int, int] = {int(epoch): int(base)}

    def at(self, epoch: int, steps_of: Callable[[int], int]) -> int:
        """The global step ``epoch`` begins at; ``steps_of(e)`` gives the steps epoch ``e`` runs."""
        if epoch in self.known:
            return self.known[epoch]
        earlier = [e for e in self.known if e < epoch]
        if not earlier:
            raise ConfigError(
                f"epoch {epoch} begins before the first epoch this iterator knows the step of "
                f"({min(self.known)}); a mix that follows the step plans forward from there"
            )
        e = max(earlier)
        base = self.known[e]
        while e < epoch:
            base += steps_of(e)
            e += 1
            self.known[e] = base
        return base


__all__ = ["StepBases"]
