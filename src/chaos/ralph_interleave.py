"""Seeded interleavings of asyncio tasks, for the concurrency tests Chaos writes (ralph-loop).

    from ralph_interleave import interleavings

    def test_concurrent_increments_are_not_lost():
        for seed, run in interleavings(runs=100):
            counter = Counter()
            run(counter.increment(), counter.increment())
            assert counter.value == 2, f"lost an update (seed {seed})"

`interleavings(runs, first_seed)` yields `(seed, run)` for seeds `first_seed`, `first_seed + 1`,
...; `run(*coroutines)` drives them together to completion on a fresh event loop and returns
their results, as `asyncio.gather` does. That loop takes its ready tasks in an order drawn from
`random.Random(seed)` rather than first come, first served: every `await` that yields is a point
where any other task may go first, and the same seed replays the same order.
`replay(seed, *coroutines)` runs one order again.
"""

import asyncio
import random

__all__ = ["interleavings", "replay"]


class _ShuffledLoop(asyncio.SelectorEventLoop):
    """An event loop that puts each newly ready callback at a seeded random place among those
    already ready, instead of last."""

    def __init__(self, rng):
        super().__init__()
        self._rng = rng

    def call_soon(self, callback, *args, context=None):
        handle = super().call_soon(callback, *args, context=context)
        # `_ready` is the loop's queue of ready callbacks (CPython 3.8 to 3.13).
        ready = getattr(self, "_ready", None)
        if ready is not None and len(ready) > 1 and ready[-1] is handle:
            ready.pop()
            ready.insert(self._rng.randrange(len(ready) + 1), handle)
        return handle


def replay(seed, *coroutines):
    """Runs `coroutines` together under the order of `seed`; their results, in order."""
    loop = _ShuffledLoop(random.Random(seed))
    try:
        async def together():
            return await asyncio.gather(*coroutines)

        return loop.run_until_complete(together())
    finally:
        loop.close()


def interleavings(runs=100, first_seed=0):
    """`(seed, run)` for `runs` seeds: `run(*coroutines)` is `replay(seed, *coroutines)`."""
    for seed in range(first_seed, first_seed + runs):
        yield seed, (lambda *coroutines, _seed=seed: replay(_seed, *coroutines))
