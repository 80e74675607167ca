"""The files a crawl may come in, known by their names and first bytes: one table that the
ingest (simweb.tasks.archives), the folder listing (simweb.tasks.sources), the checks made
before a command starts (simweb.commands.inputs) and the payload sniffing (simweb.core.charset)
share. Constants only: importing it costs nothing."""

WARC_SUFFIXES = (".warc", ".warc.gz", ".warc.zst")
ARC_SUFFIXES = (".arc", ".arc.gz")
#: Names a crawl's archive files have (a file named otherwise is looked into before it is read).
ARCHIVE_SUFFIXES = WARC_SUFFIXES + ARC_SUFFIXES
#: A WACZ package (Webrecorder's format: Browsertrix, ArchiveWeb.page): a ZIP file whose
#: archive/ folder holds the crawl's WARC files.
WACZ_SUFFIX = ".wacz"

GZIP_MAGIC = b"\x1f\x8b\x08"  # a gzip member (deflate)
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"  # a zstd frame
ZSTD_DICT_FRAME = b"\x5d\x2a\x4d\x18"  # the skippable frame a .warc.zst file's dictionary is in
ZIP_MAGIC = b"PK\x03\x04"

#: Compressions that simweb does not read, by their first bytes, with the tool that undoes each.
OTHER_COMPRESSIONS = ((b"BZh", "bzip2"), (b"\xfd7zXZ\x00", "xz"), (b"\x04\x22\x4d\x18", "lz4"))
#: The same compressions by the name suffix their files have.
OTHER_COMPRESSION_SUFFIXES = (".bz2", ".xz", ".lz4")
