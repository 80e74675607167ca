"""Subcommands of the `simweb` command line."""
from __future__ import annotations

#: Exit status of `simweb ingest` and `simweb build` when some archive files were damaged or
#: could not be read (they are listed under "file errors"), but the others were read and the
#: output (the index) was written.
EXIT_FILE_ERRORS = 3
#: Exit status of `simweb ingest` and `simweb build` when nothing usable was read: no file of
#: the crawl gave a page; of `simweb build` too when every page's bag is empty under the
#: strategy (nothing to index). Then no index is published.
EXIT_NOTHING_READ = 4

EXIT_STATUS_HELP = f"""exit status:
  0  every archive file was read
  2  a usage error, or no archive file was found
  {EXIT_FILE_ERRORS}  some files were damaged or unreadable (listed under "file errors"); the rest was
     read and the output written
  {EXIT_NOTHING_READ}  nothing usable was read (no file gave a page; with --add, pages ingested before
     count); nothing is published and the crawl is left as it was; or (build) every page's bag
     is empty under the strategy: nothing to index, and no index is published"""


def ingest_exit_status(stats, keep_earlier: bool = False) -> int:
    """The exit status for what an ingest read (a ``simweb.tasks.ingest.stats.IngestStats``); with
    ``keep_earlier`` (``--add``) the pages ingested before count too, so nothing is "nothing read"."""
    if not stats.usable and not keep_earlier:
        return EXIT_NOTHING_READ
    return EXIT_FILE_ERRORS if stats.file_errors else 0
