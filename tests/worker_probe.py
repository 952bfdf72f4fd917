"""What a pool's worker process has set up, read in a spawned process. This module imports
nothing at the top, so that a process started with one of its functions as target has not loaded
numpy when the function starts, as a pool's worker has not when its set-up runs."""


def worker_blas_threads(queue):
    """Set up as a pool's worker, then import numpy: put (whether numpy was loaded before the
    set-up, the thread counts of numpy's BLAS libraries) on ``queue``."""
    import sys

    from perceptron_lab.run import executors

    before = "numpy" in sys.modules
    executors._worker_init(queue)
    import numpy  # noqa: F401
    from threadpoolctl import threadpool_info

    queue.put((before, sorted(i["num_threads"] for i in threadpool_info()
                              if i["user_api"] == "blas" and "numpy" in i["filepath"])))
