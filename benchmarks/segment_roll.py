"""What rolling segments often costs producers: ``segment.bytes=1048576`` vs the default 1 GB.

Usage (from the repository root)::

    python -m benchmarks.segment_roll                      # starts a mini broker process
    python -m benchmarks.segment_roll --bootstrap-servers localhost:9092

Both topics live on the same broker and the runs alternate (default, 1 MB,
default, 1 MB, ...), so machine noise hits both alike. Each topic is created
with CreateTopics and its own ``segment.bytes`` (a topic config, as
``kafka-topics.sh --config segment.bytes=1048576`` would). With 1,000,000
records of 100 bytes (~110 MB on disk) the 1 MB topic rolls ~110 segments,
each a new ``.log``, ``.index`` and ``.timeindex``. Reports the median
records/s of each and the drop; the storage issue's goal is a drop of at
most 20 %.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import uuid

from benchmarks import throughput  # noqa: E402  (the sibling script)

DEFAULT_SEGMENT_BYTES = 1_073_741_824


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bootstrap-servers")
    p.add_argument("--records", type=int, default=1_000_000)
    p.add_argument("--value-size", type=int, default=100)
    p.add_argument("--segment-bytes", type=int, default=1_048_576)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--json", metavar="FILE")
    args = p.parse_args(argv)
    bench = throughput.parser().parse_args(["--records", str(args.records), "--value-size", str(args.value_size)])
    log_dir = None
    if args.bootstrap_servers:
        ctx = throughput.external(args.bootstrap_servers)
    else:
        import tempfile
        log_dir = tempfile.mkdtemp(prefix="kafkalab-bench-")
        ctx = throughput.broker_process({}, log_dir=log_dir)
    rates = {"default": [], "small": []}
    cpu = {"default": [], "small": []}  # broker CPU seconds per run (when the broker is ours)
    segments = {}
    try:
        with ctx as (bootstrap, pid, broker_cpu):
            print(f"broker at {bootstrap}; {args.records} records of {args.value_size} bytes, "
                  f"acks=1 linger.ms=5; segment.bytes default ({DEFAULT_SEGMENT_BYTES}) vs {args.segment_bytes}",
                  flush=True)
            for i in range(args.repeat):
                for kind, seg in (("default", DEFAULT_SEGMENT_BYTES), ("small", args.segment_bytes)):
                    topic = f"bench-seg-{kind}-{uuid.uuid4().hex[:8]}"
                    how = throughput.create_topic(bootstrap, topic, 1, {"segment.bytes": str(seg)})
                    if how != "CreateTopics":
                        raise SystemExit(f"this benchmark needs CreateTopics with topic configs: {how}")
                    cpu0 = broker_cpu and broker_cpu()
                    r = throughput.produce(bootstrap, topic, bench, {})
                    if broker_cpu:
                        cpu[kind].append(broker_cpu() - cpu0)
                    throughput.check_offsets(bootstrap, topic, 1, args.records)
                    rates[kind].append(r.records_per_s)
                    if log_dir is not None:
                        d = os.path.join(log_dir, f"{topic}-0")
                        segments[kind] = sum(f.endswith(".log") for f in os.listdir(d))
                    print(f"run {i + 1} segment.bytes={seg:>10}: {r.records_per_s:>10,.0f} rec/s "
                          f"{r.mb_per_s:6.1f} MB/s" + (f" ({segments[kind]} segments)" if segments else "")
                          + (f", broker CPU {cpu[kind][-1]:.2f} s" if broker_cpu else ""),
                          flush=True)
    finally:
        if log_dir is not None:
            import shutil
            shutil.rmtree(log_dir, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in rates.items()}
    drop = 1 - med["small"] / med["default"]
    print(f"median: default {med['default']:,.0f} rec/s, segment.bytes={args.segment_bytes} "
          f"{med['small']:,.0f} rec/s -> drop {100 * drop:.1f}% (goal: at most 20%)")
    if cpu["default"]:
        c = {k: statistics.median(v) for k, v in cpu.items()}
        print(f"median broker CPU per run: default {c['default']:.2f} s, small segments {c['small']:.2f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rates": rates, "broker_cpu_s": cpu, "median": med, "drop": drop, "segments": segments,
                       "params": vars(args)}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
