"""The command line: `plab` and the commands `python -m` runs (reproduce, spread, docs pages)."""
