"""The paper plug-ins shipped with plab, one package each (see :mod:`perceptron_lab.config.plugins`).

A paper package defines ``PAPER`` (a :class:`perceptron_lab.config.plugins.Paper`) in its
``__init__.py`` and keeps everything of its own beside it: ``reference/`` (the published tables as
CSV, described in ``REFERENCE.md``), ``tables.py`` (the paper's layouts, scoring rule and
tolerances) and ``figures.py``. Papers import the core, never each other; the core loads them by
name only.
"""
