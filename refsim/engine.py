"""Where refsim's many-task jobs run: in this process, a local process pool, or a Ray cluster.

A job is a pure function applied to many small tasks that read a few large shared values. The
engine maps it, streams each result back as it finishes, and (with a :class:`ResultCache`) keeps
every result under its task's key the moment it arrives, so a re-run, an extended job or an
interrupted one computes only what is new. ``refsim sweep`` is the first user; a conformance or
calibration campaign shards through the same calls (one task per QEMU batch).

    from refsim.engine import Task, ResultCache, make_engine, run_cached

    tasks = [Task(key=k, payload={"cpu": c, "model": h}, needs=(h,)) for ...]
    shared = {h: model_bytes}                          # sent once per worker / once to Ray's object store
    with make_engine(workers=2, ray=None) as engine:   # ray="local" | "auto" | "ray://host:10001" | "host:6379"
        for done in run_cached(engine, my_task, tasks, shared, ResultCache(cache_dir)):
            done.task, done.result, done.cached        # in completion order; cached ones first

The contract a task function keeps (``my_task(payload, blobs) -> result``):

- a module-level function (pickled by reference: the workers import it), deterministic in its
  payload and blobs, so the same task gives the same bytes wherever it runs;
- ``payload`` is small and picklable; ``blobs`` is a dict holding exactly the shared values named
  by the task's ``needs``;
- the result is JSON-ready (lists, dicts, str, int, float, bool, None) when a cache keeps it;
- an expected failure (a model the target cannot run) is a result that says so: an exception is a
  bug and stops the job.

Engines (:func:`make_engine`): ``workers=1`` runs the tasks in this process, one after another;
``workers=N`` a pool of N spawned processes (the shared values go to each worker once, with its
start); ``ray=ADDRESS`` Ray's own API: ``ray.init(address=...)`` (``"local"`` starts a private
instance with ``workers`` CPUs and shuts it down at the end; ``"auto"`` joins the cluster this
machine is part of), the shared values ``ray.put`` once into the object store, one remote task per
:class:`Task` with the object references it needs as arguments (Ray resolves them on the worker's
node), results gathered with ``ray.wait`` as they finish, at most ``max_in_flight`` submitted at
once; an address nothing listens on is refused at once (``ray.init`` would retry for minutes), and
an error of refsim's own raised on a worker is raised here as itself. A pool worker whose parent
was killed leaves by itself; Ray's own tasks are cancelled when the job stops early. Ray is an optional extra (``pip install refsim[cluster]``): this module imports it only
inside :class:`RayEngine`, so ``refsim run`` and every command that does not ask for Ray never
loads it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from refsim.errors import RefsimError

TaskFn = Callable[[Any, dict[str, Any]], Any]

#: What `--ray` asks for when Ray is not installed.
RAY_MISSING = "--ray needs Ray: pip install 'refsim[cluster]' (the cluster extra)"


class EngineError(RefsimError):
    """The engine cannot start or reach its workers (the message says which and why)."""


@dataclass(frozen=True)
class Task:
    """One unit of work: ``key`` names its result (the cache key: equal keys mean equal results),
    ``payload`` is what the function gets, ``needs`` names the shared values it reads."""

    key: str
    payload: Any
    needs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Done:
    """A finished task: its result, and whether it came from the cache."""

    task: Task
    result: Any
    cached: bool = False


@dataclass
class Engine:
    """The in-process engine (``workers=1``): runs each task here, in order. The pool and Ray engines
    keep its interface: :meth:`map` yields ``(task, result)`` pairs in completion order."""

    workers: int = 1
    name: str = field(default="in-process", init=False)

    def map(self, fn: TaskFn, tasks: Iterable[Task], shared: Mapping[str, Any]) -> Iterator[tuple[Task, Any]]:
        for task in tasks:
            yield task, fn(task.payload, {n: shared[n] for n in task.needs})

    def close(self) -> None:
        pass

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# -- local process pool ------------------------------------------------------------------------

_WORKER_SHARED: dict[str, Any] = {}


def _pool_init(shared: dict[str, Any], parent: int) -> None:
    _WORKER_SHARED.clear()
    _WORKER_SHARED.update(shared)
    # A pool worker whose parent was killed (SIGKILL: no clean-up ran) would wait on the task queue
    # for ever: it holds that pipe's write end itself. Leave when the parent is gone.
    import threading

    def orphaned() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=orphaned, name="refsim-orphan-watch", daemon=True).start()


def _pool_call(fn: TaskFn, payload: Any, needs: tuple[str, ...]) -> Any:
    return fn(payload, {n: _WORKER_SHARED[n] for n in needs})


@dataclass
class PoolEngine(Engine):
    """``workers`` spawned processes (concurrent.futures); each gets the shared values once."""

    def __post_init__(self) -> None:
        self.name = f"process pool ({self.workers} workers)"

    def map(self, fn: TaskFn, tasks: Iterable[Task], shared: Mapping[str, Any]) -> Iterator[tuple[Task, Any]]:
        import multiprocessing
        from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

        tasks = list(tasks)
        if not tasks:
            return
        # spawn, not fork: a worker starts clean (no copied threads or locks), as a Ray worker does.
        context = multiprocessing.get_context("spawn")
        workers = min(self.workers, len(tasks))
        with ProcessPoolExecutor(
            workers, mp_context=context, initializer=_pool_init, initargs=(dict(shared), os.getpid())
        ) as pool:
            pending = {pool.submit(_pool_call, fn, t.payload, t.needs): t for t in tasks}
            try:
                while pending:
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for future in done:
                        yield pending.pop(future), future.result()
            finally:  # interrupted (Ctrl-C, a failed task, the consumer stopped): drop what has not started
                pool.shutdown(wait=True, cancel_futures=True)


# -- Ray ---------------------------------------------------------------------------------------


def _ray_call(fn: TaskFn, payload: Any, needs: tuple[str, ...], *blobs: Any) -> Any:
    """The remote side: Ray has resolved each needed object reference to its value."""
    return fn(payload, dict(zip(needs, blobs, strict=True)))


@dataclass
class RayEngine(Engine):
    """Tasks as Ray remote tasks (see the module docstring). ``address``: ``"local"`` (a private
    instance of ``workers`` CPUs, shut down by :meth:`close`), ``"auto"`` or a cluster address.
    When this process already called ``ray.init`` that session is used as it is."""

    address: str = "auto"
    max_in_flight: int = 1000

    def __post_init__(self) -> None:
        try:
            import ray
        except ImportError:
            raise EngineError(RAY_MISSING) from None
        self._ray = ray
        self._owned = False
        if self.address != "local":
            _check_reachable(self.address)
        if not ray.is_initialized():
            import logging

            kwargs: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False}
            if self.address == "local":
                kwargs.update(num_cpus=self.workers, include_dashboard=False)
            else:
                kwargs["address"] = self.address
            try:
                ray.init(**kwargs)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise EngineError(f"--ray {self.address}: cannot reach a Ray cluster ({first})") from None
            self._owned = True
        self.name = f"ray ({self.address}, {int(ray.cluster_resources().get('CPU', 0))} CPUs)"
        self._remote = ray.remote(_ray_call)

    def map(self, fn: TaskFn, tasks: Iterable[Task], shared: Mapping[str, Any]) -> Iterator[tuple[Task, Any]]:
        ray = self._ray
        refs: dict[str, Any] = {}  # each shared value put once, on first need
        queue = iter(tasks)
        pending: dict[Any, Task] = {}

        def submit() -> None:
            for task in queue:
                for n in task.needs:
                    if n not in refs:
                        refs[n] = ray.put(shared[n])
                args = [refs[n] for n in task.needs]
                pending[self._remote.remote(fn, task.payload, task.needs, *args)] = task
                if len(pending) >= self.max_in_flight:
                    return

        submit()
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    task = pending.pop(ref)
                    yield task, self._get(ref)
                submit()
        finally:
            for ref in pending:  # interrupted: the cluster need not finish what nobody will read
                with contextlib.suppress(Exception):
                    ray.cancel(ref)

    def _get(self, ref: Any) -> Any:
        """The task's result; a user error raised on a worker is raised here as itself (one line)."""
        from refsim.errors import USER_ERRORS

        try:
            return self._ray.get(ref)
        except self._ray.exceptions.RayTaskError as exc:
            cause = getattr(exc, "cause", None)
            if isinstance(cause, USER_ERRORS):
                raise cause from None
            raise

    def close(self) -> None:
        if self._owned and self._ray.is_initialized():
            self._ray.shutdown()
            self._owned = False


def _check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """Refuse at once a cluster address nothing listens on: ``ray.init`` would retry for minutes,
    printing its client's warnings. ``auto`` (Ray finds its own) is left to Ray."""
    import socket

    if address == "auto":
        return
    hostport = address.split("://", 1)[-1].rsplit("/", 1)[0]
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise EngineError(f"--ray {address}: expected local, auto, HOST:PORT or ray://HOST:PORT")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise EngineError(f"--ray {address}: nothing answers there ({exc.strerror or exc})") from None


def make_engine(workers: int | None = None, ray: str | None = None) -> Engine:
    """The engine for ``--workers`` / ``--ray`` (module docstring); ``workers`` None: one per CPU."""
    if workers is not None and workers < 1:
        raise EngineError(f"--workers must be at least 1, got {workers}")
    if ray is not None:
        return RayEngine(workers or os.cpu_count() or 1, address=ray)
    n = workers or os.cpu_count() or 1
    return Engine() if n == 1 else PoolEngine(n)


# -- results kept by key -----------------------------------------------------------------------


class ResultCache:
    """JSON results under their task keys, one file each (``<dir>/<key[:2]>/<key>.json``), written
    whole (temporary file + rename) the moment a result arrives: an interrupted job leaves only
    complete entries, and its re-run resumes from them."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Any | None:
        try:
            return json.loads(self._path(key).read_text())
        except (OSError, ValueError):  # absent, or not ours: compute it again
            return None

    def put(self, key: str, result: Any) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w") as f:
                json.dump(result, f, sort_keys=True)
            os.replace(tmp, path)
        except OSError as exc:
            raise EngineError(f"cache {self.root}: cannot write ({exc.strerror or exc})") from None

    def __contains__(self, key: str) -> bool:
        return self._path(key).is_file()


def run_cached(
    engine: Engine,
    fn: TaskFn,
    tasks: Iterable[Task],
    shared: Mapping[str, Any],
    cache: ResultCache | None = None,
) -> Iterator[Done]:
    """Every task's result: those the cache holds first (``cached=True``), then the rest from
    ``engine`` as they finish, each stored in the cache before it is yielded. Tasks with equal keys
    are computed once."""
    todo: dict[str, list[Task]] = {}
    for task in tasks:
        hit = None if cache is None else cache.get(task.key)
        if hit is not None:
            yield Done(task, hit, cached=True)
        else:
            todo.setdefault(task.key, []).append(task)
    for task, result in engine.map(fn, [same[0] for same in todo.values()], shared):
        if cache is not None:
            cache.put(task.key, result)
        for same in todo[task.key]:
            yield Done(same, result)


def content_key(*parts: Any) -> str:
    """A stable key from JSON-ready parts (sha256 of their canonical JSON)."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


__all__ = [
    "RAY_MISSING",
    "Done",
    "Engine",
    "EngineError",
    "PoolEngine",
    "RayEngine",
    "ResultCache",
    "Task",
    "content_key",
    "make_engine",
    "run_cached",
]
