"""The trained model: prediction rules, the scoring scan, counts, margins and bounds."""

# numba's cache folder is keyed by the compiled code before any model function is decorated
import perceptron_lab.engine.numba_cache  # noqa: E402, F401
