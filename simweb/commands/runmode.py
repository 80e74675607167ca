"""Whether a command runs its flow in this process or through Prefect on a Dask cluster.

Starting Prefect's temporary API server and a local Dask cluster costs 20–40 s on a small
machine, more than a small crawl takes to build. So `simweb build`, `simweb ingest` and
`simweb evaluate` run the flow's body in this process (``flow.fn``: the same stages, the same
outputs) when the crawl is small, and as a Prefect flow run on a Dask cluster otherwise;
``--prefect`` and ``--no-prefect`` force either way, and ``--dask-address`` or ``--workers``
(which choose a cluster) mean Prefect. Deployments always run through Prefect.
"""
from __future__ import annotations

import argparse
import os

# The size under which work runs in this process (measured there) is the flows' rule too.
from simweb.flows.runsize import SMALL_INPUT_BYTES, folder_size, human_size  # noqa: F401 (for the commands)


def add_mode_options(parser: argparse.ArgumentParser, flow: str) -> None:
    """--prefect / --no-prefect, mutually exclusive."""
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--prefect", action="store_true",
                     help=f"run the {flow} flow through Prefect on a Dask cluster, whatever the input's size")
    how.add_argument("--no-prefect", action="store_true",
                     help="run in this process without Prefect or Dask, whatever the input's size")


def mode_conflict(args: argparse.Namespace) -> str | None:
    """The one-line complaint when --no-prefect is combined with an option that chooses a cluster."""
    if getattr(args, "no_prefect", False):
        for option, given in (("--dask-address", getattr(args, "dask_address", None)),
                              ("--workers", getattr(args, "workers", None))):
            if given is not None:
                return (f"--no-prefect runs in this process; it cannot be combined with {option}, which "
                        "chooses a Dask cluster (drop one of them)")
    return None


def choose_mode(args: argparse.Namespace, input_bytes: int | None, flow: str) -> tuple[bool, str]:
    """(in this process?, the reason in words) for input of ``input_bytes`` (None: not known,
    e.g. remote files)."""
    if getattr(args, "no_prefect", False):
        return True, "run in this process, without Prefect or Dask (--no-prefect)"
    if getattr(args, "prefect", False):
        return False, f"run as the {flow} Prefect flow (--prefect)"
    if getattr(args, "dask_address", None):
        return False, f"run as the {flow} Prefect flow on the Dask cluster at {args.dask_address}"
    if getattr(args, "workers", None) is not None:
        return False, f"run as the {flow} Prefect flow on {args.workers} local Dask worker(s) (--workers)"
    if input_bytes is None:
        return False, f"run as the {flow} Prefect flow on a local Dask cluster (the input's size is not known)"
    if input_bytes < SMALL_INPUT_BYTES:
        return True, (f"small (under {SMALL_INPUT_BYTES // 2**20} MB): run in this process without Prefect "
                      "or Dask (--prefect to run it as a Prefect flow)")
    return False, (f"run as the {flow} Prefect flow on a local Dask cluster (--no-prefect to run it in "
                   "this process)")


#: Remote files whose sizes are asked for (one request each) to choose how a command runs;
#: a longer list runs through Prefect, its size unknown.
MAX_REMOTE_SIZES = 64


def crawl_size(files: list[str]) -> int | None:
    """The bytes of ``files`` (a remote file's as its store tells them), else None: a file
    whose size cannot be told, or more than :data:`MAX_REMOTE_SIZES` remote files."""
    total = 0
    remote = [path for path in files if "://" in path and not path.startswith("file://")]
    if len(remote) > MAX_REMOTE_SIZES:
        return None
    for path in files:
        try:
            if path in remote:
                from simweb.tasks.storage import filesystem

                fs, p = filesystem(path)
                total += int(fs.size(p))
            else:
                total += os.path.getsize(path.removeprefix("file://"))
        except (OSError, TypeError, ValueError):
            return None
    return total






def run_flow(flow, in_process: bool, *args, **params):
    """Run the Prefect ``flow`` with these arguments: its body in this process (``flow.fn``,
    simweb's log lines on standard error), or as a flow run on Prefect's temporary server (tied
    to this process, so that a killed command leaves no server behind)."""
    if in_process:
        from simweb.commands.errors import show_simweb_logs

        with show_simweb_logs():
            result = flow.fn(*args, **params)
        from prefect.states import State

        # A body that ends in a Failed state (nothing usable was read) raises its exception here,
        # as the flow run would.
        return result.result() if isinstance(result, State) else result
    # The temporary Prefect server can take a while to start on a busy machine.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    from simweb.cli import tie_temporary_server_to_this_process
    from simweb.commands.errors import install_one_line_user_errors

    tie_temporary_server_to_this_process()
    install_one_line_user_errors()
    return flow(*args, **params)
