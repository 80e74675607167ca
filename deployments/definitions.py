"""The simweb deployments: which flow, default parameters, schedule, concurrency.

Deployment values live here and nowhere else (STYLE.md habit 13): the flows only declare
typed parameters, which the Prefect UI shows as a form; this module fills that form with
defaults that point into one local data folder (a :class:`Workspace`).

=====================  =================================  ======================================
deployment             flow                               when
=====================  =================================  ======================================
build-index            simweb.flows.build_index           on demand (UI "Run", or ``simweb orchestrate run``)
ingest-new-crawl       simweb.flows.ingest_new_crawl      every hour (cron ``0 * * * *``), one run at a time
evaluate-strategies    simweb.flows.evaluate_strategies   on demand
debdocs-corpus         simweb.flows.debdocs_corpus        on demand
=====================  =================================  ======================================

A flow module that is not present in this installation is reported by
:func:`missing_flows` and left out of :func:`build_deployments`, so the others are served.
"""
from __future__ import annotations

import importlib
import inspect
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Hourly, on the hour. Change it with ``simweb orchestrate up --ingest-cron``, or in the UI
#: (a UI edit lasts until the deployments are served again).
INGEST_CRON = "0 * * * *"
#: Where ``simweb orchestrate up`` keeps crawl files, stage outputs and indexes by default.
DEFAULT_DATA_DIR = "simweb-data"


@dataclass(frozen=True, slots=True)
class Workspace:
    """One local data folder holding everything the deployments read and write.

    ``warc``: the WARC files a full build reads; ``inbox``: where new WARC files are dropped
    for the hourly ingestion; ``index``: the build's output (pages, links, stage outputs and
    the index queries read), shared by build-index and ingest-new-crawl; ``directory.rdf``:
    the topic directory evaluations compare against; ``evaluation``: strategy reports;
    ``debdocs``: the DebDocs crawl (WARC files and its own directory) once built.
    """

    root: str

    @classmethod
    def at(cls, root: str | os.PathLike) -> "Workspace":
        text = os.fspath(root)
        return cls(text if "://" in text else str(Path(text).expanduser().resolve()))

    def _sub(self, name: str) -> str:
        return f"{self.root.rstrip('/')}/{name}"

    @property
    def warc(self) -> str:
        return self._sub("warc")

    @property
    def inbox(self) -> str:
        return self._sub("inbox")

    @property
    def index(self) -> str:
        return self._sub("index")

    @property
    def directory(self) -> str:
        """The topic directory evaluations compare against: an ODP RDF dump or a url<TAB>category TSV."""
        return self._sub("directory.rdf")

    @property
    def evaluation(self) -> str:
        return self._sub("evaluation")

    @property
    def debdocs(self) -> str:
        return self._sub("debdocs")

    def create(self) -> None:
        """Make the local folders a user is expected to fill (a remote root needs none)."""
        if "://" in self.root:
            return
        for folder in (self.warc, self.inbox, self.index, self.evaluation):
            Path(folder).mkdir(parents=True, exist_ok=True)


@dataclass(frozen=True, slots=True)
class DeploymentSpec:
    """How one flow is deployed. ``parameters`` maps a workspace to the defaults the UI shows."""

    name: str
    flow_module: str
    flow_function: str
    description: str
    parameters: Callable[[Workspace], dict[str, Any]]
    cron: str | None = None
    concurrency_limit: int | None = None
    tags: tuple[str, ...] = field(default=("simweb",))

    @property
    def entrypoint(self) -> str:
        return f"{self.flow_module}.{self.flow_function}"


class FlowNotAvailable(ImportError):
    """The module of a deployment's flow is not part of this installation."""


def _build_index_defaults(ws: Workspace) -> dict[str, Any]:
    return {"crawl": ws.warc, "out": ws.index}


def _ingest_defaults(ws: Workspace) -> dict[str, Any]:
    return {"inbox": ws.inbox, "out": ws.index}


def _evaluate_defaults(ws: Workspace) -> dict[str, Any]:
    from simweb.tasks.layout import crawl_folder

    # The crawl a build ingested (build-index keeps it in out/crawl).
    return {"crawl": crawl_folder(ws.index), "directory": ws.directory, "out": ws.evaluation}


def _debdocs_defaults(ws: Workspace) -> dict[str, Any]:
    return {"out": ws.debdocs}


SPECS: tuple[DeploymentSpec, ...] = (
    DeploymentSpec(
        name="build-index",
        flow_module="simweb.flows.build_index",
        flow_function="build_index",
        description="Build the related-pages index from the WARC files of a crawl: ingest, bags, "
        "signatures, inverted index (paper Figure 10). Finished stages are reused.",
        parameters=_build_index_defaults,
        concurrency_limit=1,
    ),
    DeploymentSpec(
        name="ingest-new-crawl",
        flow_module="simweb.flows.ingest_new_crawl",
        flow_function="ingest_new_crawl",
        description="Ingest the WARC files dropped into the inbox since the last run (each file once, "
        "by content), then bring the index up to date.",
        parameters=_ingest_defaults,
        cron=INGEST_CRON,
        concurrency_limit=1,
    ),
    DeploymentSpec(
        name="evaluate-strategies",
        flow_module="simweb.flows.evaluate_strategies",
        flow_function="evaluate_strategies",
        description="Compare similarity-search strategies against a topic directory with the paper's "
        "Γ measures (Sections 4–5) and write tables, plots and a report.",
        parameters=_evaluate_defaults,
    ),
    DeploymentSpec(
        name="debdocs-corpus",
        flow_module="simweb.flows.debdocs_corpus",
        flow_function="debdocs_corpus",
        description="Build the DebDocs crawl: Debian documentation packages as a WARC collection "
        "with their own topic directory.",
        parameters=_debdocs_defaults,
    ),
)


def spec(name: str) -> DeploymentSpec:
    for s in SPECS:
        if s.name == name:
            return s
    raise KeyError(f"no deployment named {name!r}; expected one of {', '.join(s.name for s in SPECS)}")


def load_flow(s: DeploymentSpec):
    """Import the flow object of a deployment, or raise :class:`FlowNotAvailable` saying which."""
    try:
        module = importlib.import_module(s.flow_module)
    except ModuleNotFoundError as err:
        if err.name is not None and (s.flow_module == err.name or s.flow_module.startswith(err.name + ".")):
            raise FlowNotAvailable(
                f"deployment {s.name}: expected the flow {s.entrypoint}, but module {s.flow_module} is not in "
                "this installation; update simweb, or serve the other deployments"
            ) from err
        raise
    flow_obj = getattr(module, s.flow_function, None)
    if flow_obj is None or not hasattr(flow_obj, "to_deployment"):
        raise FlowNotAvailable(
            f"deployment {s.name}: expected a Prefect flow named {s.flow_function} in {s.flow_module}, "
            f"found {type(flow_obj).__name__ if flow_obj is not None else 'nothing'}"
        )
    return flow_obj


def check_parameters(s: DeploymentSpec, flow_obj, parameters: dict[str, Any]) -> None:
    """Refuse defaults for parameters the flow does not declare (a typo would be ignored by the UI)."""
    accepted = inspect.signature(flow_obj.fn).parameters
    unknown = sorted(set(parameters) - set(accepted))
    if unknown:
        raise TypeError(
            f"deployment {s.name}: defaults name {', '.join(unknown)}, which {s.entrypoint} does not take; "
            f"expected some of {', '.join(accepted)} — rename them in deployments/definitions.py"
        )


def missing_flows(names: Iterable[str] | None = None) -> dict[str, str]:
    """Deployments whose flow cannot be imported here, with the reason."""
    missing = {}
    for s in SPECS:
        if names is not None and s.name not in names:
            continue
        try:
            load_flow(s)
        except FlowNotAvailable as err:
            missing[s.name] = str(err)
    return missing


def build_deployments(
    workspace: Workspace,
    *,
    names: Iterable[str] | None = None,
    ingest_cron: str | None = INGEST_CRON,
    ingest_every: float | None = None,
    overrides: dict[str, dict[str, Any]] | None = None,
) -> list:
    """The ``RunnerDeployment`` objects to serve (deployments whose flow is missing are left out).

    ``overrides`` replaces default parameters per deployment (``{"build-index": {"m": 16}}``);
    ``ingest_cron`` None serves the ingestion without a schedule; ``ingest_every`` (seconds)
    schedules it at that interval instead of the cron.
    """
    from prefect.deployments.runner import EntrypointType

    wanted = set(names) if names is not None else None
    deployments = []
    for s in SPECS:
        if wanted is not None and s.name not in wanted:
            continue
        try:
            flow_obj = load_flow(s)
        except FlowNotAvailable:
            continue
        parameters = {**s.parameters(workspace), **(overrides or {}).get(s.name, {})}
        check_parameters(s, flow_obj, parameters)
        cron = ingest_cron if s.name == "ingest-new-crawl" else s.cron
        interval = ingest_every if s.name == "ingest-new-crawl" else None
        deployments.append(
            flow_obj.to_deployment(
                name=s.name,
                description=s.description,
                parameters=parameters,
                cron=None if interval else cron,
                interval=interval or None,
                concurrency_limit=s.concurrency_limit,
                tags=list(s.tags),
                # Served runs import the flow by module path, so they work from any folder.
                entrypoint_type=EntrypointType.MODULE_PATH,
            )
        )
    return deployments
