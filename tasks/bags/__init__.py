"""The `bags` stage: pages + links → one weighted bag per URL (paper Section 6.1, Figure 10).

Three cached sub-stages (simweb.tasks.stagecache: outputs keyed by inputs and parameters, published
whole with a manifest), so a second strategy reuses what it shares with the first:

    OUT/bag-fragments/<key>/part-{pages,links}-<part>.c<cell>.parquet   (url_id, url, term, weight)   FRAGMENTS
        key: the content digests of the crawl's parts (those CRAWL.json selects, if it exists;
        simweb.tasks.crawl) + Strategy.fragment_params()
        One Dask task per pages part and per links part, each reading its part slice by slice
        (simweb.tasks.crawl.slices.page_slices / link_slices; a links slice comes with the words of
        its source pages, into which its anchors are word offsets, simweb.tasks.contexts):
        simweb.core.bags.Corpus builds the slice's fragments (content + title per page; anchor
        window + link id per inlink; out-link id per outlink) and adds up equal (URL, term)
        pairs within the slice: fragments merge associatively, so combining early is exact.
        Each part's fragments go to one file per cell of a grid of 2^L equal ranges of URL ids
        (:class:`.cells.CellFiles`; 2^L the merge partitions the crawl's size suggests, recorded as
        the stats' "cells"), a cell's rows held back over slices and written in runs sorted by
        URL id, in row groups cut at a finer grid (:func:`.cells.write_fragments`), so that a merge
        partition opens only its own cells and reads few, long runs.
        Once the merge is published the fragments are consumed (stagecache.consume: files
        deleted, manifest and stats kept): the merge is a function of them alone, so they are
        made again only if the merge is lost.
    OUT/bag-merge/<key>/part-*.parquet       (url_id, url, term, tf)           MERGED
    OUT/bag-merge/<key>/_terms/counts-*.parquet   (term, df) per partition
        key: the fragments (not P: partitioning changes how the work is cut, not the bags)
        Partition i of P holds the URLs of the i-th of P equal ranges of URL ids
        (:func:`.grid.url_ranges`; P a power of two unless the user names it); its task reads from
        the fragment files of its cells the row groups of that range (their URL id statistics
        say which) and merges them (:func:`.merge.merge_rows`):
        one row per (URL, term), sorted by URL id then term, and how many URLs each term
        occurs in. No shuffle of Python objects; the partitions in order are sorted by URL id.
    OUT/bags/<key>/part-*.parquet            simweb.tasks.schemas.BAGS
    OUT/bags/<key>/_terms/df.parquet         (term, df) over the whole collection
        key: the merged bags + the frequency weighting and normalisation
        df = number of merged bags holding the term: the partitions' term counts added up
        (:func:`.df.sum_counts`); NMDF's μ, σ are fitted to it when the strategy leaves them unset
        (recorded in the manifest's stats); then per partition: tf × factor(df), normalised
        to the strategy's constant sum (simweb.core.weighting).

Memory is bounded by :class:`.sizes.PartSize` (``part_mb``), never by the crawl: a task holds a slice
of a part, a merge partition, or a partition and the collection's DF table.

The crawl is read by simweb.tasks.crawl, which also decides which copy of a page crawled in
two WARC files counts: the first by (source_file, record_offset); the other copies' pages and
the links read from them are skipped and counted, so a page crawled twice contributes one
content fragment and its anchors once.

One module each: how much a task holds (:mod:`.sizes`), the grid of URL id ranges the work is
cut at (:mod:`.grid`), the fragments of a part (:mod:`.fragments`) and their files of cells
(:mod:`.cells`, the open-file limit they need :mod:`.open_files`), the merge of a range
(:mod:`.merge`), document frequencies (:mod:`.df`), the weighting of a partition (:mod:`.weigh`),
how tasks go to Dask (:mod:`.scheduling`), a sample's bags for the evaluation (:mod:`.sample`)
and the Prefect task (:mod:`.task`: ``bags_task``). The three sub-stages — their names, keys and
the work over a whole crawl — are simweb.tasks.stages.fragments, .merge and .weighting, built
or reused in order by simweb.tasks.stages.bags.build_bags_stage. Reading a published bags folder
back is simweb.tasks.bag_reader's.
"""

# Bumped when fragments, merged bags or weighted bags change meaning or layout, so old outputs
# are not reused (2: merge partitions by URL id range, with their term counts).
BAGS_FORMAT = 2
