"""``LogManager``: every partition log under ``log.dirs``, and their checkpoint files.

Kafka's LogManager loads the partition directories at start-up, creates and
deletes logs, and periodically writes two checkpoint files in the log dir::

    recovery-point-offset-checkpoint   up to where each log is known flushed
    log-start-offset-checkpoint        each log's log start offset

Both use Kafka's checkpoint text format: a version line (0), a count line,
then one ``<topic> <partition> <offset>`` line per log.
"""
from __future__ import annotations

import os

from ..config import BrokerConfig, LogConfig
from .log import UnifiedLog, parse_partition_dir

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"


def read_checkpoint(path: str) -> dict[tuple[str, int], int]:
    """Read a Kafka offset checkpoint file; a missing or malformed one reads as empty."""
    if not os.path.exists(path):
        return {}
    out = {}
    try:
        with open(path) as f:
            lines = f.read().splitlines()
        if not lines or lines[0].strip() != "0":
            return {}
        count = int(lines[1])
        for line in lines[2:2 + count]:
            topic, part, offset = line.split()
            out[(topic, int(part))] = int(offset)
    except (ValueError, IndexError):
        return {}
    return out


def write_checkpoint(path: str, offsets: dict[tuple[str, int], int]) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"0\n{len(offsets)}\n")
        for (topic, part), offset in sorted(offsets.items()):
            f.write(f"{topic} {part} {offset}\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class LogManager:
    def __init__(self, log_dir: str, config: BrokerConfig):
        self.log_dir = log_dir
        self.config = config
        self.logs: dict[tuple[str, int], UnifiedLog] = {}
        os.makedirs(log_dir, exist_ok=True)

    def existing_partition_dirs(self) -> list[tuple[str, int]]:
        out = []
        for name in os.listdir(self.log_dir):
            parsed = parse_partition_dir(name)
            if parsed and os.path.isdir(os.path.join(self.log_dir, name)):
                out.append(parsed)
        return out

    def get_or_create_log(self, topic: str, partition: int, log_config: LogConfig) -> UnifiedLog:
        key = (topic, partition)
        log = self.logs.get(key)
        if log is None:
            recovery = read_checkpoint(os.path.join(self.log_dir, RECOVERY_POINT_CHECKPOINT)).get(key, 0)
            start = read_checkpoint(os.path.join(self.log_dir, LOG_START_OFFSET_CHECKPOINT)).get(key, 0)
            log = UnifiedLog(os.path.join(self.log_dir, f"{topic}-{partition}"), topic, partition, log_config,
                             log_start_offset=start, recovery_point=recovery)
            self.logs[key] = log
        return log

    def delete_log(self, topic: str, partition: int) -> None:
        log = self.logs.pop((topic, partition), None)
        if log is not None:
            log.delete()

    def checkpoint(self) -> None:
        """Write both checkpoint files (Kafka does it every log.flush.offset.checkpoint.interval.ms)."""
        write_checkpoint(os.path.join(self.log_dir, RECOVERY_POINT_CHECKPOINT),
                         {k: log.recovery_point for k, log in self.logs.items()})
        write_checkpoint(os.path.join(self.log_dir, LOG_START_OFFSET_CHECKPOINT),
                         {k: log.log_start_offset for k, log in self.logs.items()})

    def close(self) -> None:
        """Clean shutdown: flush every log, so its recovery point is its end, and checkpoint."""
        for log in self.logs.values():
            log.flush()
        self.checkpoint()
        for log in self.logs.values():
            log.close()
