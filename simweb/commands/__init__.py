"""Subcommands of the `simweb` command line."""
