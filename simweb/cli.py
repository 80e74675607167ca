"""The `simweb` command line: one subcommand per module in ``simweb.commands``.

Each command module defines ``register(subparsers)``, which adds its parser and sets
``func`` to a callable taking the parsed arguments and returning an exit code.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

# Command modules, in the order `simweb --help` lists them.
COMMAND_MODULES = (
    "simweb.commands.demo",
    "simweb.commands.ingest",
    "simweb.commands.build",
    "simweb.commands.bags",
    "simweb.commands.orchestrate",
    "simweb.commands.related",
    "simweb.commands.cdxj",
    "simweb.commands.serve",
    "simweb.commands.corpus",
    "simweb.commands.evaluate",
    "simweb.commands.dedup",
    "simweb.commands.overlap",
    "simweb.commands.verify",
)


EXAMPLES = """examples:
  simweb corpus debdocs --out debdocs                 a ready-made crawl and topic directory
  simweb build debdocs/warc --out index               build the related-pages index of a crawl
  simweb related https://docs.python.org/3.11/library/json.html --index index
  simweb serve --index index                          HTTP API and search page on 127.0.0.1:8080
  simweb evaluate --crawl index/crawl --directory debdocs/directory.rdf --out report
  simweb demo                                         all of the above on the embedded crawl

`simweb COMMAND --help` tells more about each command."""


def build_parser() -> argparse.ArgumentParser:
    from simweb import __version__

    parser = argparse.ArgumentParser(
        prog="simweb",
        description="Related-pages search over web crawls (Haveliwala et al., WWW 2002).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"simweb {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


#: Commands that may run a Prefect flow, and with it Prefect's temporary API server.
FLOW_COMMANDS = frozenset({"build", "ingest", "evaluate", "demo", "corpus"})
#: Those that tie it themselves when they run a flow through Prefect (simweb.commands.runmode.run_flow),
#: and import none of Prefect's server when they run it in this process.
RUN_FLOW_COMMANDS = frozenset({"build", "ingest", "evaluate", "demo"})


def tie_temporary_server_to_this_process() -> None:
    """Have the kernel stop Prefect's temporary API server when this process dies.

    Prefect starts its temporary server as a child process and stops it at exit; a process
    killed outright (SIGKILL, the OOM killer) never reaches that, and the server would run on
    for good. Its child is started with PR_SET_PDEATHSIG, so it gets SIGTERM when we die (Linux;
    elsewhere nothing changes).
    """
    import ctypes
    import functools
    import signal
    import subprocess
    import types

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return
    import prefect.server.api.server as prefect_server

    def die_with_parent() -> None:
        prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG

    tied = types.ModuleType("subprocess")
    tied.__dict__.update(subprocess.__dict__)
    tied.Popen = functools.partial(subprocess.Popen, preexec_fn=die_with_parent)
    prefect_server.subprocess = tied


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    # Prefect reads its settings when first imported: the temporary server can take a while to
    # start on a busy machine (its default patience is 20 s).
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    # Progress comes from the flows' logs; Dask's own start-up chatter stays out of the way.
    os.environ.setdefault("DASK_DISTRIBUTED__LOGGING__DISTRIBUTED", "warning")
    args = build_parser().parse_args(argv)
    if args.command in FLOW_COMMANDS - RUN_FLOW_COMMANDS and not getattr(args, "no_prefect", False):
        tie_temporary_server_to_this_process()
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BaseException as exc:  # a full disk where the output goes, in any stage: one line, exit 1
        from simweb.tasks.full_disk import full_disk_error

        full = full_disk_error(exc)
        if full is None:
            raise
        from simweb.commands.errors import full_disk_line

        print(f"simweb {args.command}: {full_disk_line(args, full)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
