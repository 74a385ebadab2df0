"""Small display helpers for the notebooks: records as tables, a partition's log as a picture, and a live
cluster dashboard (``kafkalab.viz.dashboard(kafka)``, see :mod:`kafkalab.viz.dashboard_widget`)."""
from .log_strip import plot_log
from .records import records_frame

__all__ = ["plot_log", "records_frame", "dashboard"]


def __getattr__(name):   # the dashboard imports ipywidgets: only when asked for
    if name in ("dashboard", "Dashboard"):
        from . import dashboard_widget
        return getattr(dashboard_widget, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
