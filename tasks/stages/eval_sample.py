"""Stage ``eval-sample`` of the evaluation: the sample of sibling classes (paper Section 5).

Reads the crawl's links once (simweb.tasks.crawl) and the directory file once, streaming
(simweb.tasks.directory_file), keeping only URLs the crawl links to; leaves out the directory's
own pages and their links (Section 5, footnote 8: a directory's pages link to every member of
a class with the class's name, so they would leak the answer); and draws pairs of sibling
third-level classes (simweb.core.sampling). Cached by simweb.tasks.stagecache under ``work``;
writes

    sample.parquet   url, url_id, class_1 … class_3
    sample.json      the parameters, the sample's description and counts, the directory's own
                     pages and hosts, and the showcase sources of the Figure 2 listing
"""
from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from simweb.core.directory import CLASS_DEPTH, ODP_HOSTS, Directory, build_directory, collapse_depth, cut_note
from simweb.core.errors import EmptySample
from simweb.core.gamma import class_codes
from simweb.core.sampling import PAPER_PAIRS, Sample, describe, sample_class_pairs
from simweb.core.urls import url_id
from simweb.tasks.crawl.parts import crawl_files_identity
from simweb.tasks.crawl.tables import link_targets
from simweb.tasks.directory_file import directory_format, read_directory_file, read_lines
from simweb.tasks.logs import run_logger
from simweb.tasks.stagecache import StageOutput, file_identities, run_stage
from simweb.tasks.storage import filesystem, join, read_parquet_file, write_bytes_atomic, write_parquet_atomic

__all__ = ["STAGE_SAMPLE", "EmptySample", "LoadedSample", "SampleParams", "load_sample", "prepare_sample", "sample_table"]

STAGE_SAMPLE = "eval-sample"
# Sources shown in the Figure 2-style listing of the report.
SHOWCASE_SOURCES = 3


@dataclass(frozen=True)
class SampleParams:
    """How the sample is drawn (Section 5); see :mod:`simweb.core.sampling` for the reading of
    "300 pairs of clusters from the third level"."""

    seed: int = 0
    n_pairs: int = PAPER_PAIRS
    min_pages: int = 2
    max_pages_per_class: int | None = None
    directory_format: str = "auto"
    depth: int = CLASS_DEPTH  # the collapse depth (Section 2.1); a shallower directory: its own



def prepare_sample(
    crawl: str,
    directory: str,
    work: str,
    params: SampleParams = SampleParams(),
    directory_pages: str | None = None,
) -> StageOutput:
    """Stage ``eval-sample``: parse the directory once and draw the sample (cached)."""
    inputs = {
        "crawl": crawl_files_identity(crawl),
        "directory": file_identities([directory]),
        "directory_pages": file_identities([directory_pages]) if directory_pages else [],
    }

    def compute(tmp: str) -> dict:
        t0 = time.perf_counter()
        excluded = read_lines(directory_pages) if directory_pages else []
        fmt = directory_format(directory) if params.directory_format == "auto" else params.directory_format
        # The directory's own pages are known before it is parsed: the listed pages and, for an
        # Open Directory dump, its hosts. Their links are dropped before anything is counted.
        probe = build_directory((), directory_pages=excluded, directory_hosts=ODP_HOSTS if fmt == "rdf" else ())
        linked, counts = link_targets(crawl, probe.is_directory_page)
        # The single pass over the directory file, keeping only URLs the crawl links to; a second
        # one at its own depth when the directory is shallower than the collapse depth asked for.
        parsed = read_directory_file(directory, fmt=fmt, directory_pages=excluded, keep=set(linked), depth=params.depth)
        depth = collapse_depth(params.depth, parsed.counts["deepest"],
                               parsed.counts.get("topics_not_slash_separated", 0))
        notes = []
        if note := cut_note(parsed.counts):
            notes.append(note)
            run_logger("simweb.evaluate").warning("eval-sample: %s", notes[-1])
        if depth != params.depth:
            notes.append(f"the directory is {depth} levels deep below Top, shallower than the collapse depth "
                         f"{params.depth}: its classes are taken at depth {depth}")
            run_logger("simweb.evaluate").info("eval-sample: %s", notes[-1])
            parsed = read_directory_file(directory, fmt=fmt, directory_pages=excluded, keep=set(linked), depth=depth)
        sample = sample_class_pairs(
            parsed.classes, linked, n_pairs=params.n_pairs, seed=params.seed,
            min_pages=params.min_pages, max_pages_per_class=params.max_pages_per_class,
        )
        if len(sample.class_pairs) == 0:
            counts = ", ".join(f"{n:,} {k.replace('_', ' ')}" for k, n in parsed.counts.items() if n)
            raise EmptySample(
                f"no pair of sibling classes with at least {params.min_pages} linked-to URLs each: the "
                f"directory classifies {len(parsed)} URLs that the crawl links to (listings: {counts}); "
                "check that the directory and the crawl name the same URLs"
            )
        write_parquet_atomic(sample_table(sample), join(tmp, "sample.parquet"))
        description = describe(sample)
        rng = np.random.default_rng(params.seed)
        codes = class_codes(list(sample.classes))
        same = np.bincount(codes[:, -1])[codes[:, -1]] - 1
        candidates = np.flatnonzero(same >= 2)
        showcase = sorted(rng.choice(candidates, size=min(SHOWCASE_SOURCES, candidates.size), replace=False).tolist()) \
            if candidates.size else []
        info = {
            "seed": params.seed,
            "params": dataclasses.asdict(params),
            "description": dataclasses.asdict(description),
            "description_lines": notes + description.lines(),
            "depth": depth,
            "class_pairs": [["/".join(a), "/".join(b)] for a, b in sample.class_pairs],
            "eligible_classes": sample.eligible_classes,
            "eligible_urls": sample.eligible_urls,
            "directory_counts": parsed.counts,
            "directory_pages_listed": len(excluded),
            # The directory's own pages, dropped from the crawl by every strategy (footnote 8).
            "excluded_pages": sorted(probe.directory_pages),
            "excluded_hosts": list(probe.directory_hosts),
            "crawl_counts": _crawl_counts(counts),
            "showcase": showcase,
            "seconds": round(time.perf_counter() - t0, 3),
        }
        write_bytes_atomic(json.dumps(info, indent=1, sort_keys=True).encode(), join(tmp, "sample.json"))
        return {"urls": len(sample), "classes": description.classes, "pairs": description.class_pairs}

    return run_stage(work, STAGE_SAMPLE, inputs, dataclasses.asdict(params), compute)


def _crawl_counts(counts: dict[str, int]) -> dict[str, int]:
    """The crawl reader's counts, the pages it leaves out named as the directory's own."""
    names = {"excluded_pages": "directory_pages_dropped", "links_from_excluded_pages": "links_from_directory_pages"}
    return {names.get(k, k): v for k, v in counts.items()}


def sample_table(sample: Sample) -> pa.Table:
    """The SAMPLE table: each sampled URL, its id and its class, one column per level."""
    depth = len(sample.classes[0]) if sample.classes else 3
    columns = {
        "url": pa.array(sample.urls, pa.string()),
        "url_id": pa.array([url_id(u) for u in sample.urls], pa.uint64()),
    }
    for k in range(depth):
        columns[f"class_{k + 1}"] = pa.array([c[k] for c in sample.classes], pa.string())
    return pa.table(columns)


@dataclass(frozen=True)
class LoadedSample:
    """The sample as the strategy and report stages read it back."""

    urls: list[str]
    url_ids: np.ndarray
    classes: list[tuple[str, ...]]
    codes: np.ndarray  # simweb.core.gamma.class_codes of ``classes``
    info: dict

    def directory_pages(self) -> Directory:
        """The directory's own pages and hosts the sample stage found: every strategy leaves
        them and their links out of the crawl (Section 5, footnote 8)."""
        return Directory({}, frozenset(self.info.get("excluded_pages", [])), tuple(self.info.get("excluded_hosts", [])))


def load_sample(sample_dir: str) -> LoadedSample:
    """The output of the sample stage at ``sample_dir`` (a StageOutput's path)."""
    table = read_parquet_file(join(sample_dir, "sample.parquet"))
    level_cols = sorted(c for c in table.column_names if c.startswith("class_"))
    levels = [table.column(c).to_pylist() for c in level_cols]
    fs, path = filesystem(join(sample_dir, "sample.json"))
    with fs.open(path, "rb") as f:
        info = json.loads(f.read())
    classes = [tuple(c) for c in zip(*levels)]
    return LoadedSample(table.column("url").to_pylist(), table.column("url_id").to_numpy(), classes,
                        class_codes(classes), info)
