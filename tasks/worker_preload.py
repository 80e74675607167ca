"""Imported by every worker of the flows' Dask clusters as it starts (Dask's worker preload).

A fresh worker process would otherwise import Prefect's task engine and the stage modules —
Prefect, nltk (which pulls in scipy.stats), pandas, pyarrow: several seconds of CPU on a small
machine — inside its first task runs, stage after stage. Imported as the worker starts, they
are paid once, by all workers at the same time, before any task runs. Only what the tasks use:
dask.dataframe, which no stage uses, took a second of each worker's start (2.5–3.9 s a worker
without it, 3.4–4.5 s with it, measured alone).
The flows' local clusters preload it; give it to the workers of a cluster of your own::

    dask worker tcp://scheduler:8786 --nthreads 1 --preload simweb.tasks.worker_preload
"""
import prefect.task_engine  # noqa: F401 — runs every Prefect task on the worker

import simweb.tasks.bags.task  # noqa: F401
import simweb.tasks.dedup  # noqa: F401
import simweb.tasks.ingest.task  # noqa: F401
import simweb.tasks.signatures  # noqa: F401
from simweb.core.text import stemmed_stopwords
from simweb.tasks.logs import install_one_line_full_disk

stemmed_stopwords()  # the stemmed stoplist every ingest reads, made once per worker
install_one_line_full_disk()  # a task that met a full disk: one line in the worker's log, not its traceback
