"""The stages of an index build (paper Figure 10), one module each: its name, the recipe of its
cache key (simweb.tasks.stagecache: what it reads and its parameters), its compute, and what
reads its output. simweb.flows.chain only orders them.

    dedup        (optional) the crawl with each near-duplicate cluster collapsed   :mod:`.dedup`
    bags         its sub-stages in order, and the bags an earlier build
                 consumed once it had signed them                                  :mod:`.bags`
      bag-fragments  each ingest part's fragments, in cells of URL ids             :mod:`.fragments`
      bag-merge      per range of URL ids, equal (URL, term) pairs summed          :mod:`.merge`
      bags           df, then weighting and normalisation per partition            :mod:`.weighting`
    signatures   m min-hashes per bag → H and the url ↔ doc map                    :mod:`.signatures`
    invert       H → I                                                             :mod:`.invert`
    publish      the index folder switched to the new version atomically           :mod:`.publish`
    related-table  every page's answer to the default query computed ahead, into
                 the published version (run by the flows after the chain)          :mod:`.related_table`

The ingest before them writes the crawl folder (:mod:`.ingest`: shards of archive files).

A stage's tasks go where its caller says: the workers of the flow's cluster
(simweb.tasks.options.Workers, which simweb.flows.cluster.workers builds from the flow's task
runner); without them it runs here, on Dask's local scheduler.
"""
