"""`simweb serve --index INDEX`: the HTTP JSON API and the related-pages page (Figures 13–14).

Binds 127.0.0.1 by default (this machine only); pass --host 0.0.0.0 to serve a network. The
page is at http://HOST:PORT/, the OpenAPI documentation at /docs.

It answers only requests addressed to its own names — 127.0.0.1, localhost, [::1] and the
--host address — and refuses any other Host with 400, so that a page of another site cannot
read it through DNS rebinding. Name the others it is reached by with --allow-host (a reverse
proxy's name, the machine's network name when bound to 0.0.0.0), once each.

Answers come from --workers processes (default: one per core this process may run on), which
share the port and the index: each maps the index's files, so its pages are in memory once
whatever the number of workers, and a worker's own memory does not grow with the load. Each
worker listens on a socket of its own (Linux's SO_REUSEPORT), among which the system deals the
connections out evenly; on one shared socket the first worker awake would take every connection
open at once. A worker that exits is replaced. --workers 1 answers from this process.

Before serving, the version's files are checked against the sizes its index.json records;
with --verify, against their SHA-256s too (reads the whole index once, and each version
published while serving before switching to it). A damaged index is refused with a one-line
message naming the file. The server keeps answering from the version it has while CURRENT is
missing or names a version it cannot open, and says why once on standard error.
"""
from __future__ import annotations

import argparse
import logging
import socket
import sys


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "serve",
        help="serve an index over HTTP: JSON API, OpenAPI docs and a small page",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--index", required=True, metavar="INDEX", help="the index folder (simweb build --out)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    p.add_argument("--crawl", metavar="DIR",
                   help="the ingested crawl the index was built from (default INDEX/crawl), for dedup and link measures")
    p.add_argument("--replay-prefix", metavar="PREFIX",
                   help="a web-archive player's address (pywb http://localhost:8080/COLL/ or a Wayback Machine's): "
                        "results link to PREFIX + 14-digit timestamp + / + URL")
    p.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="a Host name to answer besides 127.0.0.1, localhost, [::1] and --host (a reverse proxy's, "
                        "the machine's network name); repeat for several")
    p.add_argument("--verify", action="store_true",
                   help="check every file of the index against its SHA-256 before serving it")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="worker processes answering requests (default: one per core available)")
    p.set_defaults(func=run)


def default_workers() -> int:
    """One worker per core this process may run on."""
    import os

    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no affinity here
        return os.cpu_count() or 1


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from simweb.api import open_index
    from simweb.core.replay import replay_prefix_problem
    from simweb.guard import host_names
    from simweb.http import create_app

    if not 0 < args.port < 65536:
        print(f"simweb serve: --port: expected 1..65535, got {args.port}", file=sys.stderr)
        return 2
    if replay_prefix_problem(args.replay_prefix):
        print(f"simweb serve: --{replay_prefix_problem(args.replay_prefix)}", file=sys.stderr)
        return 2
    workers = default_workers() if args.workers is None else args.workers
    if workers < 1:
        print(f"simweb serve: --workers: expected a number of processes ≥ 1, got {workers}", file=sys.stderr)
        return 2
    hosts = host_names(args.host, args.allow_host)
    try:
        index = open_index(args.index, verify=args.verify, crawl=args.crawl)
        app = create_app(index, replay_prefix=args.replay_prefix, hosts=hosts) if workers == 1 else None
    except (ValueError, OSError) as e:
        print(f"simweb serve: {e}", file=sys.stderr)
        return 2
    log_to_stderr()
    print(f"simweb: serving {args.index} on http://{args.host}:{args.port}/ (API docs at /docs), "
          f"{workers} worker process{'es' if workers > 1 else ''}, to the host names {', '.join(sorted(hosts))} "
          "(--allow-host NAME for another)", file=sys.stderr)
    if app is not None:
        index.prepare()  # the key directory before the first request, not during it
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
        return 0
    # Worker processes (spawned) open the index this process checked, from the options here.
    import os

    from simweb.http import SERVE_ENVIRONMENT, worker_environment

    del index
    os.environ[SERVE_ENVIRONMENT] = worker_environment(args.index, args.crawl, args.verify, args.replay_prefix, hosts)
    if not hasattr(socket, "SO_REUSEPORT"):  # a system without it: one socket, shared
        uvicorn.run(WORKER_APP, factory=True, host=args.host, port=args.port, workers=workers, log_level="warning")
        return 0
    return serve_workers(args.host, args.port, workers)


#: The application each worker process builds (uvicorn's factory).
WORKER_APP = "simweb.http:app_from_environment"
#: Seconds between a worker's exit and its replacement's start.
RESTART_PAUSE = 1.0


def serve_workers(host: str, port: int, workers: int) -> int:
    """Run ``workers`` processes answering on ``host``:``port``, each on its own SO_REUSEPORT
    socket, until SIGINT or SIGTERM; a worker that exits meanwhile is replaced. This process
    holds a socket bound to the port (never listening: no connection comes to it), so the port
    stays the group's while workers come and go."""
    import multiprocessing
    import multiprocessing.connection
    import signal
    import time

    try:
        _port_socket(host, port, shared=False).close()  # in use by another server: refused, not shared
        held = _port_socket(host, port)
    except OSError as e:
        print(f"simweb serve: cannot bind {host}:{port}: {e.strerror or e}", file=sys.stderr)
        return 1
    spawn = multiprocessing.get_context("spawn")
    stop: list[int] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda number, _frame: stop.append(number))

    def start() -> multiprocessing.process.BaseProcess:
        process = spawn.Process(target=_worker, args=(host, port), daemon=False)
        process.start()
        return process

    running = [start() for _ in range(workers)]
    try:
        while not stop:
            multiprocessing.connection.wait([p.sentinel for p in running], timeout=0.5)
            for i, process in enumerate(running):
                if process.exitcode is not None and not stop:
                    logging.getLogger("simweb.http").info(
                        "worker %d exited with code %s; starting another", process.pid, process.exitcode)
                    time.sleep(RESTART_PAUSE)
                    running[i] = start()
    finally:
        for process in running:
            if process.exitcode is None:
                process.terminate()  # SIGTERM: uvicorn finishes the requests under way
        for process in running:
            process.join(timeout=20)
            if process.exitcode is None:
                process.kill()
        held.close()
    return 0


def _port_socket(host: str, port: int, shared: bool = True) -> socket.socket:
    """A TCP socket bound to ``host``:``port`` (with SO_REUSEPORT where ``shared``), not yet listening.

    Made from getaddrinfo's answer, so its protocol is TCP's: asyncio turns Nagle's rule off
    (TCP_NODELAY) only on connections accepted from such a socket. On uvicorn's own shared
    socket (protocol 0) it stayed on, and every answer after a connection's first few waited
    40 ms for the client's delayed acknowledgement of its headers before sending its body."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                         flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if shared:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind(address)
    except OSError:
        sock.close()
        raise
    return sock


def _worker(host: str, port: int) -> None:
    """One worker process: the app on a socket of its own in the port's group (uvicorn listens)."""
    import uvicorn

    sock = _port_socket(host, port)
    config = uvicorn.Config(WORKER_APP, factory=True, log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])


def log_to_stderr(worker: bool = False) -> None:
    """The server's own messages (version switches, a CURRENT it cannot follow), one line each;
    a worker process's (each follows CURRENT itself, and says so once) name the worker."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("simweb serve: " + ("worker %(process)d: " if worker else "")
                                           + "%(message)s"))
    logger = logging.getLogger("simweb.http")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
