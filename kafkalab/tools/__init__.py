"""Tools that look inside a broker's files, like the scripts in Kafka's ``bin/``.

* :func:`dump_log` prints a segment (``.log``), offset index (``.index``) or
  time index (``.timeindex``) the way ``kafka-dump-log.sh`` does
  (``kafka.tools.DumpLogSegments``); ``kafkalab dump-log PATH`` is the same
  from a shell.
* :func:`dump_log_df` returns the same content as a pandas DataFrame, for a
  notebook.
* :func:`list_segments` summarises a partition directory, one row per
  segment; :func:`list_files` lists every file in it with its size.
* :func:`read_segment`, :func:`read_offset_index`, :func:`read_time_index`
  give the parsed structures themselves.
* :func:`metadata_log_df` reads KRaft's metadata log (``__cluster_metadata-0``:
  segments and ``.checkpoint`` snapshots) into a DataFrame, one decoded record a
  row; ``dump_log(..., cluster_metadata_decoder=True)`` (``kafkalab dump-log
  --cluster-metadata-decoder``) prints it as ``kafka-dump-log.sh`` does.
* :mod:`.dump_snapshot` prints producer-state ``.snapshot`` files (``kafka-dump-log.sh`` on them).
* :mod:`.client_quotas`: AlterClientQuotas and DescribeClientQuotas from Python (KIP-546).
* :mod:`.rebalance_scenario`: the same members under each group protocol, who stops consuming (lesson 05).

They read files written by the mini broker or by a real Apache Kafka broker:
the format is the same.
"""
from .dump_log import (
    BatchInfo,
    RecordInfo,
    SegmentDump,
    dump_log,
    dump_log_df,
    list_files,
    list_segments,
    read_offset_index,
    read_segment,
    read_time_index,
)
from .metadata_log import metadata_log_df

__all__ = [
    "BatchInfo",
    "RecordInfo",
    "SegmentDump",
    "dump_log",
    "dump_log_df",
    "list_files",
    "list_segments",
    "metadata_log_df",
    "read_offset_index",
    "read_segment",
    "read_time_index",
]
