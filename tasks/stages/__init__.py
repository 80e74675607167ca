"""The stages of an index build (paper Figure 10), one module each: its name, the recipe of its
cache key (simweb.tasks.stagecache: what it reads and its parameters), its compute, and what
reads its output. simweb.flows.chain only orders them.

    dedup        (optional) the crawl with each near-duplicate cluster collapsed   :mod:`.dedup`
    bags         fragments → merge → weighting (simweb.tasks.bags), and the bags
                 an earlier build consumed once it had signed them                 :mod:`.bags`
    signatures   m min-hashes per bag → H and the url ↔ doc map                    :mod:`.signatures`
    invert       H → I                                                             :mod:`.invert`
    publish      the index folder switched to the new version atomically           :mod:`.publish`

The ingest before them writes the crawl folder (:mod:`.ingest`: the outcome of its shards).

A stage's Dask work goes where its caller says: a scheduler (``scheduler``) or a fan-out of Prefect
tasks (``fan_out``, simweb.flows.cluster.fan_out); without either it runs here, on Dask's local
scheduler.
"""
