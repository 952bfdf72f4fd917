"""``python -m benchmarks`` (``make bench``)."""

from .run import main

main()
