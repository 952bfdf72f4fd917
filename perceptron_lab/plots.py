"""Figures: what every figure shares (atomic PNG writes). The papers' own figures are drawn by
their plug-ins (``perceptron_lab/papers/<paper>/figures.py``)."""

from __future__ import annotations

import io


def save_figure(fig, out, **kwargs) -> None:
    """Render ``fig`` as PNG and write it atomically (like every other output)."""
    from .store import atomic_write_bytes

    buf = io.BytesIO()
    fig.savefig(buf, format="png", **kwargs)
    atomic_write_bytes(out, buf.getvalue())
