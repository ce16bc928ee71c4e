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

Threads the same way:

    from ralph_interleave import thread_interleavings

    def test_concurrent_deposits_are_not_lost():
        for seed, run in thread_interleavings(runs=100):
            account = Account()
            run(lambda: account.deposit(5), lambda: account.deposit(7))
            assert account.balance == 12, f"lost an update (seed {seed})"

`run(*callables)` calls each in a thread of its own and returns their results in order (the
first exception raised in a thread is raised again). The threads run one at a time: at each
line of Python they run (outside the standard library), the turn passes to a thread drawn from
`random.Random(seed)`, so a read and the write that follows it on another line can be split by
another thread, and the same seed replays the same order. A thread that blocks outside Python (a
lock another thread holds, a sleep) gives up its turn after a short stall, so locks work as
they do. `replay_threads(seed, *callables)` runs one order again. Lines run in these threads
are still seen by coverage.py.
"""

import asyncio
import os
import random
import sys
import threading
import time

__all__ = ["interleavings", "replay", "thread_interleavings", "replay_threads"]


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


_HERE = os.path.abspath(__file__)
_STDLIB = os.path.dirname(os.path.abspath(threading.__file__))


class _Turns:
    """One thread runs at a time; at each switch point the turn goes to one of the threads
    waiting at a switch point, drawn from the seed."""

    def __init__(self, rng, count, stall):
        self._rng = rng
        self._cond = threading.Condition()
        self._alive = set(range(count))
        self._waiting = set()
        self._turn = None
        self._stall = stall
        self._moved = time.monotonic()

    def _pass(self):
        ready = sorted(self._waiting)
        self._turn = self._rng.choice(ready) if ready else None
        self._moved = time.monotonic()
        self._cond.notify_all()

    def arrive(self, me):
        """Thread `me` is at a switch point: it waits for its turn."""
        with self._cond:
            self._waiting.add(me)
            holder_left = self._turn is None or self._turn == me or self._turn not in self._alive
            if holder_left and self._waiting == self._alive or self._turn == me:
                self._pass()
            while self._turn != me:
                if not self._cond.wait(self._stall) and time.monotonic() - self._moved >= self._stall:
                    # The thread whose turn it is blocks outside Python (a lock, a sleep).
                    self._pass()
            self._waiting.discard(me)

    def leave(self, me):
        with self._cond:
            self._alive.discard(me)
            self._waiting.discard(me)
            if self._turn == me or self._turn is None or self._waiting == self._alive:
                self._pass()


def _tracer(turns, me):
    """A trace function that makes every line of code outside the standard library a switch
    point, and still calls the trace function the thread had (coverage.py's)."""
    previous = sys.gettrace()

    def local_of(previous_local):
        def local(frame, event, arg):
            nonlocal previous_local
            if previous_local is not None:
                previous_local = previous_local(frame, event, arg)
            if event == "line":
                turns.arrive(me)
            return local

        return local

    def global_trace(frame, event, arg):
        previous_local = previous(frame, event, arg) if previous is not None else None
        if previous is not None:
            # coverage.py's tracer puts itself back as the thread's trace function when it is
            # called for a new frame: this one goes back in its place.
            sys.settrace(global_trace)
        name = frame.f_code.co_filename
        if name == _HERE or name.startswith(_STDLIB):
            return previous_local
        return local_of(previous_local)

    return global_trace


def replay_threads(seed, *callables, timeout=10.0, stall=0.005):
    """Calls `callables` each in a thread under the order of `seed`; their results, in order."""
    turns = _Turns(random.Random(seed), len(callables), stall)
    results = [None] * len(callables)
    errors = [None] * len(callables)

    def work(me, fn):
        try:
            turns.arrive(me)
            sys.settrace(_tracer(turns, me))
            results[me] = fn()
        except BaseException as e:  # raised again in the caller's thread
            errors[me] = e
        finally:
            sys.settrace(None)
            turns.leave(me)

    threads = [
        threading.Thread(target=work, args=(i, fn), daemon=True) for i, fn in enumerate(callables)
    ]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    if any(t.is_alive() for t in threads):
        raise AssertionError(f"the threads did not finish within {timeout} s (seed {seed}): a deadlock?")
    for e in errors:
        if e is not None:
            raise e
    return results


def thread_interleavings(runs=100, first_seed=0, timeout=10.0):
    """`(seed, run)` for `runs` seeds: `run(*callables)` is `replay_threads(seed, *callables)`."""
    for seed in range(first_seed, first_seed + runs):
        yield seed, (
            lambda *callables, _seed=seed: replay_threads(_seed, *callables, timeout=timeout)
        )
