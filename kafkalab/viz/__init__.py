"""Small display helpers for the notebooks: records as tables, a partition's log as a picture."""
from .log_strip import plot_log
from .records import records_frame

__all__ = ["plot_log", "records_frame"]
