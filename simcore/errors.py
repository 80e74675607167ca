"""The errors a user can cause — what they gave is not what was expected — in one module, so that
every layer raises them without importing the layers above (warcio's ``exceptions.py``). The
commands print one of them as one line and exit 2; Prefect's run logs keep it to its first line
(simweb.tasks.logs)."""
from __future__ import annotations


class DirectoryFormatError(ValueError):
    """The directory file is not what the parser expects (malformed XML, refused entities, bad TSV)."""


class StrategyError(ValueError):
    """A strategy parameter is out of range or a strategy text cannot be read."""


class IndexFormatError(ValueError):
    """An index folder that is not a complete simweb index of a version this code reads."""


class OutputNotWritable(OSError):
    """The output folder cannot be created or written to."""


class EmptySample(ValueError):
    """The directory and the crawl have no pair of sibling classes in common to sample."""


#: The exceptions that mean "what you gave is not what was expected".
USER_INPUT_ERRORS: tuple[type[BaseException], ...] = (
    FileNotFoundError, NotADirectoryError, OutputNotWritable, DirectoryFormatError, StrategyError, IndexFormatError,
    EmptySample)
