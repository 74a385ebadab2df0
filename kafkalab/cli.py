"""The ``kafkalab`` command.

::

    kafkalab dump-log PATH [PATH ...] [--print-data-log]   look inside segment and index files
    kafkalab broker --port 9092 --log-dir DIR [...]        run one mini broker (python -m kafkalab.broker)
    kafkalab lab [--no-browser] [--port P]                 open the lessons in JupyterLab
    kafkalab schema-registry --bootstrap-servers H:P [...]   a schema registry (Confluent's REST API) on that Kafka

``dump-log`` is Kafka's ``kafka-dump-log.sh`` (``kafka.tools.DumpLogSegments``):
the same options, the same output, on the mini broker's files or a real
broker's. ``broker`` takes exactly the flags of ``python -m kafkalab.broker``.
``lab`` starts JupyterLab on the checkout (lesson 00 open, ``labs/`` beside it), as
``scripts/lab.sh`` does; each notebook starts
its own broker inside the notebook (``kafkalab.mini()``), so nothing else
has to run first.

A cluster to break from a terminal (see :mod:`kafkalab.cluster.supervisor`)::

    kafkalab up [--brokers 3] [--backend mini|kafka] [--dir D]   start ZooKeeper + N brokers in the background
    kafkalab up --backend kafka --mode kraft [--combined]         Kafka 4.x in KRaft mode: 3 controllers + N brokers
    kafkalab up --mode kraft [--combined]                         the mini KRaft cluster (Python controllers)
    kafkalab status                                               brokers, controller, partitions, groups, lag
    kafkalab kill|stop|restart|pause|resume ID                    break (and mend) a broker
    kafkalab down [--delete]                                      stop it all (the data stays unless --delete)

Every cluster command takes ``--dir`` (default ``$KAFKALAB_CLUSTER_DIR``, else
``~/.kafkalab/cluster``). Errors are one line on stderr and exit status 1
(2 for a usage error).
"""
from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys

from . import __version__

_HERE = os.path.dirname(os.path.abspath(__file__))


def _cmd_fetch_kafka(args: argparse.Namespace) -> int:
    from .cluster.distribution import FetchError, fetch_kafka

    sources = tuple(args.source) if args.source else None
    try:
        home = fetch_kafka(args.version, **({"sources": sources} if sources else {}),
                           say=lambda line: print(line, file=sys.stderr, flush=True))
    except FetchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(home)   # the last line: the distribution's directory (KAFKA_HOME=$(kafkalab fetch-kafka) works)
    return 0


def _cmd_fetch_jmx_exporter(args: argparse.Namespace) -> int:
    from .cluster.jmx_agent import fetch_jmx_exporter
    from .cluster.maven import FetchError

    try:
        jar = fetch_jmx_exporter(args.version)
    except FetchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(jar)   # the last line: the agent's jar
    return 0


def _cmd_fetch_connect(args: argparse.Namespace) -> int:
    from .kafka_connect.jvm import CONNECT_VERSION, ConnectJvmError, fetch_connect

    try:
        home = fetch_connect(args.version or CONNECT_VERSION)
    except ConnectJvmError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(home)   # the last line: the directory whose libs/ holds Kafka Connect
    return 0


def _cmd_schema_registry(args: argparse.Namespace) -> int:
    from .registry.app import serve

    return serve(args.bootstrap_servers, host=args.host, port=args.port, topic=args.topic, timeout=args.timeout)


def _cmd_dump_log(args: argparse.Namespace) -> int:
    from .tools.dump_log import dump_files

    paths = list(args.paths)
    for item in args.files or []:
        paths += [p for p in item.split(",") if p]
    if not paths:
        print("kafkalab dump-log: give at least one file (PATH or --files)", file=sys.stderr)
        return 2
    for path in paths:
        problem = _not_a_partition_dir(path)
        if problem:
            print(f"kafkalab dump-log: {problem}", file=sys.stderr)
            return 1
    try:
        decoded = args.cluster_metadata_decoder or args.offsets_decoder    # Kafka: a decoder implies --print-data-log
        ok = dump_files(paths, print_data_log=args.print_data_log or decoded,
                        deep_iteration=args.deep_iteration,
                        skip_record_metadata=args.skip_record_metadata,
                        verify_index_only=args.verify_index_only,
                        transaction_log_decoder=args.transaction_log_decoder,
                        cluster_metadata_decoder=args.cluster_metadata_decoder,
                        offsets_decoder=args.offsets_decoder)
    except BrokenPipeError:  # `kafkalab dump-log X | head`
        sys.stderr.close()
        return 0
    return 0 if ok else 1


def _not_a_partition_dir(path: str) -> str | None:
    """What is wrong with a directory given to dump-log (it must be a partition directory), or None."""
    if not os.path.isdir(path):
        return None
    entries = sorted(os.listdir(path))
    if any(e.endswith(".log") and os.path.isfile(os.path.join(path, e)) for e in entries):
        return None
    partitions = [e for e in entries if os.path.isdir(os.path.join(path, e)) and e.rpartition("-")[2].isdigit()
                  and any(f.endswith(".log") for f in os.listdir(os.path.join(path, e)))]
    if partitions:
        example = os.path.join(path, partitions[0])
        return (f"{path} is a broker's log directory (log.dirs), not a partition directory: give one of its "
                f"{len(partitions)} partition directories (e.g. {example}) or a segment file in one "
                f"(e.g. {os.path.join(example, '00000000000000000000.log')})")
    what = "is empty" if not entries else "holds no .log segment files"
    return (f"{path} {what}: give a partition directory (<log.dirs>/<topic>-<partition>, e.g. .../orders-0) "
            f"or a .log, .index or .timeindex file")


def _cmd_broker(argv: list[str]) -> int:
    from .broker.__main__ import main as broker_main

    for i, arg in enumerate(argv):   # a file where the log directory should be: say so, not "[Errno 17]"
        value = argv[i + 1] if arg == "--log-dir" and i + 1 < len(argv) else \
            arg.split("=", 1)[1] if arg.startswith("--log-dir=") else None
        if value and os.path.exists(value) and not os.path.isdir(value):
            print(f"kafkalab broker: --log-dir {value} is a file; give a directory (the broker keeps its partitions "
                  f"there and creates it if missing), e.g. --log-dir {value}.d", file=sys.stderr)
            return 2

    try:
        return broker_main(argv)
    except SystemExit as exc:  # argparse's --help and usage errors
        return exc.code if isinstance(exc.code, int) else 2


def find_notebooks_dir() -> str | None:
    """The lessons: ``notebooks/`` next to the package (a source checkout) or in the current directory."""
    for candidate in (os.path.join(os.path.dirname(_HERE), "notebooks"), os.path.join(os.getcwd(), "notebooks")):
        if os.path.isdir(candidate):
            return candidate
    return None


LAB_QUIET = ["--LabApp.news_url=None",
             "--LabApp.check_for_updates_class=jupyterlab.handlers.announcements.NeverCheckForUpdate"]
"""No "get notified about Jupyter news?" pop-up over the lesson, no update check."""


JUPYTER_CONFIG = os.path.join(_HERE, "jupyter_config")
"""Extra Jupyter config for the lab (labconfig/page_config.json turns the announcements plugin off)."""


def lab_env() -> dict:
    """This environment with kafkalab's Jupyter config dir on ``JUPYTER_CONFIG_PATH``."""
    env = dict(os.environ)
    env["JUPYTER_CONFIG_PATH"] = JUPYTER_CONFIG + (os.pathsep + env["JUPYTER_CONFIG_PATH"]
                                                   if env.get("JUPYTER_CONFIG_PATH") else "")
    return env


def _cmd_lab(args: argparse.Namespace) -> int:
    notebook_dir = args.notebook_dir or find_notebooks_dir()
    if notebook_dir is None or not os.path.isdir(notebook_dir):
        print("kafkalab lab: cannot find the notebooks/ folder; run it from the kafkalab checkout "
              "or pass --notebook-dir DIR", file=sys.stderr)
        return 2
    if args.notebook_dir:
        cmd = [sys.executable, "-m", "jupyterlab", f"--notebook-dir={os.path.abspath(notebook_dir)}"]
    else:  # like scripts/lab.sh: the checkout's root, so notebooks/ and labs/ are both reachable
        root = os.path.dirname(os.path.abspath(notebook_dir))
        cmd = [sys.executable, "-m", "jupyterlab", f"--notebook-dir={root}",
               "--LabApp.default_url=/lab/tree/notebooks/00_first_events.ipynb"]
    cmd.append(f"--ServerApp.ip={args.ip}")
    cmd += LAB_QUIET
    if args.port:
        cmd.append(f"--port={args.port}")
    if args.no_browser:
        cmd.append("--no-browser")
    extra = list(getattr(args, "jupyter_args", []) or [])
    if hasattr(os, "geteuid") and os.geteuid() == 0 and "--allow-root" not in extra:
        cmd.append("--allow-root")   # containers and CI machines often run as root (as scripts/lab.sh does)
    cmd += extra                     # anything else is JupyterLab's (--IdentityProvider.token=..., ...)
    if args.dry_run:
        print(shlex.join(cmd))
        return 0
    try:
        return subprocess.call(cmd, env=lab_env())
    except KeyboardInterrupt:  # JupyterLab got the Ctrl-C too and shuts itself down
        return 130


# -- the cluster commands --------------------------------------------------------------------------------------

def _fail(message: str, code: int = 1) -> int:
    print(f"kafkalab: {message}", file=sys.stderr)
    return code


def _config_pairs(items: list[str]) -> dict | None:
    configs = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            return None
        configs[key.strip()] = value.strip()
    return configs


def _cmd_up(args: argparse.Namespace) -> int:
    from .cluster.supervisor import UpError, check_can_start, start
    configs = _config_pairs(args.config)
    if configs is None:
        return _fail("--config takes NAME=VALUE (a broker config by Kafka's name), e.g. "
                     "--config min.insync.replicas=2", 2)
    directory = os.path.abspath(args.dir)
    try:
        check_can_start(directory, args.brokers, args.backend, args.host, args.base_port, args.mode)
    except UpError as exc:
        return _fail(f"up: {exc}")
    first = ("ZooKeeper" if args.mode == "zookeeper" else
             "KRaft (no ZooKeeper): " + ("combined broker+controller nodes," if args.combined else "3 controllers"))
    print(f"starting {first} and {args.brokers} {args.backend} broker(s) in {directory} ...", flush=True)
    try:
        report = start(directory, brokers=args.brokers, backend=args.backend, host=args.host,
                       base_port=args.base_port, configs=configs, timeout_s=args.timeout, mode=args.mode,
                       combined=args.combined)
    except UpError as exc:
        return _fail(f"up: {exc}")
    took = report.get("start_time_s")
    where = f"ZooKeeper {report['zookeeper_connect']}" if report.get("zookeeper_connect") else "KRaft"
    print(f"ready{f' in {took:.1f} s' if took else ''}: brokers {report['brokers']}, controller "
          f"{report.get('controller')}, {where} (supervisor pid {report['pid']})")
    print(f"bootstrap servers: {report['bootstrap_servers']}")
    for name, servers in (report.get("listeners") or {}).items():   # listeners added with --config listeners=...
        if servers != report["bootstrap_servers"]:
            print(f"listener {name}: {servers}")
    print("\nFor notebooks and clients started from this shell (kafkalab.connect() then sees this cluster):")
    print(f"export KAFKALAB_BOOTSTRAP_SERVERS={report['bootstrap_servers']}")
    print(f"export KAFKALAB_CLUSTER_DIR={shlex.quote(directory)}")
    print("\nThen: kafkalab status | kafkalab kill ID | kafkalab restart ID | kafkalab down")
    return 0


def _open(args: argparse.Namespace):
    from .cluster.supervisor import open_cluster
    return open_cluster(os.path.abspath(args.dir))


def _cell(value) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value) or "-"
    return str(value)


def _table(headers: list[str], rows: list[list]) -> str:
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    return "\n".join(lines)


def format_status(snap, directory: str | None = None) -> str:
    """``kafkalab status``'s text for a snapshot (kafkalab.viz.cluster_state)."""
    out = []
    where = f" in {directory}" if directory else ""
    kraft = any(b.roles for b in snap.brokers)   # KRaft: controllers are listed too, with their roles
    combined = any(set((b.roles or "").split(",")) == {"broker", "controller"} for b in snap.brokers)
    what = (f"{sum('broker' in (b.roles or '') for b in snap.brokers)} {snap.backend or ''} broker(s) and "
            f"{sum('controller' in (b.roles or '') for b in snap.brokers)} controller(s)"
            f"{' (combined nodes: broker,controller)' if combined else ''} in KRaft mode, active controller"
            if kraft else f"{len(snap.brokers)} {snap.backend or ''} broker(s), controller")
    out.append(f"cluster{where}: {what} {_cell(snap.controller)}, bootstrap servers {snap.bootstrap_servers}")
    if snap.metrics:   # Kafka's own metrics, the cluster's (kafkalab.viz.cluster_state.headline_metrics)
        out.append("metrics: " + ", ".join(f"{name} {int(value)}" for name, value in snap.metrics.items()))
    out.append("")
    out.append(_table(["broker", "address", "pid", "state", "registered", "controller"] + (["roles"] if kraft else []),
                      [[b.id, f"{b.host}:{b.port}", b.pid, b.state, "fenced" if b.fenced else b.registered,
                        "*" if b.is_controller else ""] + ([b.roles] if kraft else []) for b in snap.brokers]))
    out.append("")
    if snap.partitions:
        rows = []
        for p in snap.partitions:
            flags = "OFFLINE" if p.offline else ("under-replicated" if p.under_replicated else "")
            leos = " ".join(f"{r}:{_cell(p.leo.get(r))}" for r in p.replicas)
            rows.append([p.topic, p.partition, p.leader, p.replicas, p.isr, p.high_watermark, leos, flags])
        out.append(_table(["topic", "partition", "leader", "replicas", "isr", "high watermark",
                           "log end offsets (replica:LEO)", ""], rows))
    else:
        out.append("no topics yet" if not [t for t in snap.topics if not t.startswith("__")] else "no partitions")
    out.append("")
    if snap.groups:
        rows = []
        for g in snap.groups:
            owner = {tp: m.client_id or m.member_id for m in g.members for tp in m.assignment}
            if not g.offsets:
                rows.append([g.group_id, g.state, len(g.members), "-", "-", "-", "-", "-", "-"])
            for o in g.offsets:
                rows.append([g.group_id, g.state, len(g.members), o.topic, o.partition, o.committed, o.end, o.lag,
                             owner.get((o.topic, o.partition), "")])
        out.append(_table(["group", "state", "members", "topic", "partition", "committed", "end offset", "lag",
                           "owner"], rows))
    else:
        out.append("no consumer groups")
    for e in snap.errors:
        out.append(f"note: {e}")
    return "\n".join(out)


def _cmd_status(args: argparse.Namespace) -> int:
    from .cluster.supervisor import UpError
    from .viz.cluster_state import collect
    try:
        cluster = _open(args)
    except UpError as exc:
        return _fail(f"status: {exc}")
    except Exception as exc:   # noqa: BLE001 -- e.g. ZooKeeper gone: say so in one line
        return _fail(f"status: cannot read the cluster in {args.dir}: {exc}")
    try:
        snap = collect(cluster, topics=args.topic or None, internal=args.internal, timeout_s=args.timeout)
        print(format_status(snap, os.path.abspath(args.dir)))
    finally:
        cluster.close()
    return 0


def _cmd_control(args: argparse.Namespace) -> int:
    from .cluster.supervisor import UpError
    op = args.command
    try:
        cluster = _open(args)
    except UpError as exc:
        return _fail(f"{op}: {exc}")
    except Exception as exc:   # noqa: BLE001
        return _fail(f"{op}: cannot reach the cluster in {args.dir}: {exc}")
    try:
        ids = cluster.broker_ids + list(getattr(cluster, "controller_ids", []))   # KRaft: controllers too
        if args.id not in ids:
            return _fail(f"{op}: no broker {args.id} in this cluster; its brokers are "
                         f"{', '.join(map(str, cluster.broker_ids))}")
        try:
            if op == "restart":   # a killed broker waits for its old registration to expire: show it
                cluster.restart(args.id, progress=True)
            else:
                getattr(cluster, op)(args.id)
        except (RuntimeError, KeyError, TimeoutError) as exc:
            return _fail(f"{op}: {exc.args[0] if exc.args else exc}")
        nodes = cluster.nodes if hasattr(cluster, "nodes") else cluster.brokers
        row = [r for r in _records(nodes) if r["id"] == args.id][0]
        done = {"kill": "killed (SIGKILL)", "stop": "stopped (SIGTERM: controlled shutdown)",
                "restart": "restarted", "pause": "paused (SIGSTOP)", "resume": "resumed (SIGCONT)"}[op]
        print(f"broker {args.id} {done}: now {row['alive']}, pid {row['pid']}, controller {cluster.controller}")
        if op == "kill":
            session = cluster.configs.get("zookeeper.session.timeout.ms")
            if session:
                print(f"its registration (/brokers/ids/{args.id}) stays until its ZooKeeper session expires "
                      f"({int(session) / 1000:g} s); watch with: kafkalab status")
    finally:
        cluster.close()
    return 0


def _records(rows):
    return rows.to_dict("records") if hasattr(rows, "to_dict") else rows


def _cmd_down(args: argparse.Namespace) -> int:
    from .cluster.supervisor import UpError, stop
    try:
        print(stop(os.path.abspath(args.dir), delete=args.delete, timeout_s=args.timeout))
    except UpError as exc:
        return _fail(f"down: {exc}")
    return 0


def _broker_id(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a broker id is a number (1, 2, 3 ...), not {text!r}") from None


def _add_cluster_commands(sub) -> None:
    from .cluster.supervisor import DIR_ENV_VAR, default_dir

    def dir_option(p):
        p.add_argument("--dir", default=default_dir(),
                       help=f"the cluster's state directory (default: ${DIR_ENV_VAR}, else ~/.kafkalab/cluster; "
                            f"now %(default)s)")

    up = sub.add_parser(
        "up", help="start a cluster (ZooKeeper + N brokers) in the background",
        description="Start a ZooKeeper-mode cluster that keeps running after this command returns, and print its "
                    "bootstrap servers. A small supervisor process owns it; 'kafkalab down' stops it.",
        epilog="example: kafkalab up --brokers 3 && kafkalab kill 2 && kafkalab status")
    up.add_argument("--brokers", type=int, default=3, help="number of brokers, ids 1..N (default: %(default)s)")
    up.add_argument("--backend", choices=["mini", "kafka"], default="mini",
                    help="mini: kafkalab's Python brokers; kafka: Apache Kafka's own (needs KAFKA_HOME, a 3.x "
                         "release) (default: %(default)s)")
    dir_option(up)
    up.add_argument("--host", default="127.0.0.1", help="address the brokers listen on (default: %(default)s)")
    up.add_argument("--base-port", type=int, default=None,
                    help="broker i listens on BASE_PORT + i - 1 (default: free ports)")
    up.add_argument("--config", action="append", metavar="NAME=VALUE",
                    help="a broker config for every broker, by Kafka's name (repeatable)")
    up.add_argument("--mode", choices=["zookeeper", "kraft"], default="zookeeper",
                    help="kraft: without ZooKeeper: 3 controllers and the brokers (--backend kafka: Apache Kafka "
                         "4.x, 'kafkalab fetch-kafka 4' first; mini: Python controllers and brokers) "
                         "(default: %(default)s)")
    up.add_argument("--combined", action="store_true",
                    help="with --mode kraft: every node is broker and controller (process.roles=broker,controller; "
                         "Kafka 4.x or the mini KafkaRaftServer)")
    up.add_argument("--timeout", type=float, default=90.0, help="seconds to wait for the cluster (default: 90)")
    up.set_defaults(run=_cmd_up)

    st = sub.add_parser("status", help="brokers, controller, partitions (leader, ISR, offsets), groups and lag",
                        description="Show the cluster 'kafkalab up' started: each broker's process and "
                                    "registration, the controller, every partition's leader, replicas, ISR, high "
                                    "watermark and each replica's log end offset, and consumer groups with lag.")
    dir_option(st)
    st.add_argument("--topic", action="append", help="only this topic (repeatable)")
    st.add_argument("--internal", action="store_true", help="include internal topics (__consumer_offsets)")
    st.add_argument("--timeout", type=float, default=2.0, help="seconds to wait for each answer (default: 2)")
    st.set_defaults(run=_cmd_status)

    helps = {"kill": "SIGKILL a broker: a crash (no controlled shutdown)",
             "stop": "SIGTERM a broker: a controlled shutdown",
             "restart": "start a broker again (same id, port and data)",
             "pause": "SIGSTOP a broker: frozen, alive but silent",
             "resume": "SIGCONT a paused broker"}
    for name, text in helps.items():
        p = sub.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")
        p.add_argument("id", type=_broker_id, metavar="ID", help="the broker id (1..N; see kafkalab status)")
        dir_option(p)
        p.set_defaults(run=_cmd_control)

    down = sub.add_parser("down", help="stop the cluster 'kafkalab up' started (its data stays)",
                          description="Stop the brokers, then ZooKeeper, then the supervisor. The state directory "
                                      "(data, logs) stays unless --delete: 'kafkalab up' starts the same cluster "
                                      "again.")
    dir_option(down)
    down.add_argument("--delete", action="store_true", help="also remove the state directory (data and logs)")
    down.add_argument("--timeout", type=float, default=60.0, help="seconds to wait (default: 60)")
    down.set_defaults(run=_cmd_down)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafkalab",
        description="kafkalab: learn Apache Kafka hands-on — a real-protocol mini broker, "
                    "real clients, real failures, in Jupyter.",
        epilog="Run 'kafkalab COMMAND --help' for a command's options.")
    parser.add_argument("--version", action="version", version=f"kafkalab {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    d = sub.add_parser(
        "dump-log", help="print the batches and records of a segment, or an index (like kafka-dump-log.sh)",
        description="Print the contents of log segment (.log), offset index (.index), time index "
                    "(.timeindex), transaction index (.txnindex) and producer-state snapshot (.snapshot) "
                    "files the way Kafka's kafka-dump-log.sh does. Works on the files of "
                    "a mini broker or of a real Kafka broker (same format). A partition directory "
                    "means all its .log files.",
        epilog="example: kafkalab dump-log /tmp/kafkalab-xyz/orders-0/00000000000000000000.log --print-data-log")
    d.add_argument("paths", nargs="*", metavar="PATH",
                   help="a .log, .index, .timeindex, .txnindex or .snapshot file, or a partition dir")
    d.add_argument("--files", action="append", metavar="A,B",
                   help="comma-separated files, as kafka-dump-log.sh takes them")
    d.add_argument("--print-data-log", action="store_true",
                   help="print each record with its key and payload (implies --deep-iteration)")
    d.add_argument("--deep-iteration", action="store_true",
                   help="print each record's metadata (offset, timestamp, sizes, sequence, header keys)")
    d.add_argument("--skip-record-metadata", action="store_true",
                   help="with --print-data-log, print only keys and payloads")
    d.add_argument("--verify-index-only", action="store_true",
                   help="for index files, only report entries that do not match the log")
    d.add_argument("--transaction-log-decoder", action="store_true",
                   help="with --print-data-log, decode the records of __transaction_state")
    d.add_argument("--cluster-metadata-decoder", action="store_true",
                   help="decode the records of KRaft's __cluster_metadata (its .log segments and .checkpoint "
                        "snapshots) as JSON, one per record; implies --print-data-log")
    d.add_argument("--offsets-decoder", action="store_true",
                   help="decode the records of __consumer_offsets (committed offsets, group metadata) as JSON, "
                        "as Kafka 3.9's tool does; implies --print-data-log")
    d.set_defaults(run=_cmd_dump_log)

    f = sub.add_parser(
        "fetch-kafka", help="fetch Apache Kafka's broker and tools (for backend='kafka') into a cache",
        description="Fetch Apache Kafka's own broker and tools for VERSION into ~/.kafkalab/dist/VERSION "
                    "($KAFKALAB_DIST/VERSION when set), checking every file's checksum, and print the directory as "
                    "the last line. A second call reuses it. Sources, first that works: $KAFKA_HOME if it holds "
                    "that version, Maven (mvn), Apache Ivy (pyspark's), Apache's release archive.",
        epilog="examples: kafkalab fetch-kafka (the newest 3.9.x, ZooKeeper mode); kafkalab fetch-kafka 4 "
               "(the newest 4.x, KRaft); kafkalab fetch-kafka 3.9.2")
    f.add_argument("version", nargs="?", default=None, metavar="VERSION",
                   help="3.9.2 (exactly), 3.9 (the newest 3.9.x: the default) or 4 (the newest 4.x)")
    f.add_argument("--source", action="append", choices=["kafka-home", "maven", "ivy", "tarball"],
                   help="only this source (repeatable; default: all, in that order)")
    f.set_defaults(run=_cmd_fetch_kafka)

    from .cluster.jmx_agent import VERSION as JMX_EXPORTER_VERSION
    fj = sub.add_parser(
        "fetch-jmx-exporter", help="fetch the Prometheus JMX exporter's java agent (real Kafka's metrics_url)",
        description="Fetch io.prometheus.jmx:jmx_prometheus_javaagent into ~/.kafkalab/dist ($KAFKALAB_DIST when "
                    "set) through Maven, checked against the repository's SHA-1, and print the jar as the last line. "
                    "backend='kafka' brokers and KRaft nodes then start with it and serve their metrics under the "
                    "mini broker's names; without it they serve none.")
    fj.add_argument("version", nargs="?", default=JMX_EXPORTER_VERSION, metavar="VERSION",
                    help=f"the agent's version (default {JMX_EXPORTER_VERSION}, the one the lab's rules are "
                         "checked against)")
    fj.set_defaults(run=_cmd_fetch_jmx_exporter)

    fc = sub.add_parser(
        "fetch-connect", help="fetch Apache Kafka Connect's worker and file connector (for connect_cluster())",
        description="Fetch Kafka Connect VERSION (connect-runtime, connect-file, connect-json, connect-transforms "
                    "and their runtime dependencies) from the Maven repository into "
                    "~/.kafkalab/dist/kafka-connect-VERSION ($KAFKALAB_DIST when set), checking every jar's "
                    "checksum, and print the directory as the last line. A second call reuses it.",
        epilog="example: kafkalab fetch-connect (3.9.2, the release of the lab's real Kafka)")
    fc.add_argument("version", nargs="?", default=None, metavar="VERSION", help="exact version (default 3.9.2)")
    fc.set_defaults(run=_cmd_fetch_connect)

    # listed here for --help; main() hands everything after "broker" to python -m kafkalab.broker
    sub.add_parser("broker", help="run one mini broker in this terminal (same flags as python -m kafkalab.broker)")

    lab = sub.add_parser(
        "lab", help="open the lessons (notebooks/) in JupyterLab",
        description="Start JupyterLab on the notebooks/ folder. The notebooks start their own broker "
                    "inside the notebook (kafkalab.mini()), so nothing else needs to run first. Options not "
                    "listed here go to JupyterLab (e.g. --IdentityProvider.token=...); as root, --allow-root "
                    "is added.")
    lab.add_argument("--notebook-dir", help="folder to open (default: this checkout, at lesson 00)")
    lab.add_argument("--port", type=int, default=0, help="JupyterLab's port (default: JupyterLab's choice)")
    lab.add_argument("--ip", default="127.0.0.1", help="address JupyterLab listens on (default: %(default)s)")
    lab.add_argument("--no-browser", action="store_true", help="do not open a browser")
    lab.add_argument("--dry-run", action="store_true", help="print the JupyterLab command instead of running it")
    lab.set_defaults(run=_cmd_lab)

    sr = sub.add_parser(
        "schema-registry", help="run a schema registry (Confluent's REST API) with its state in Kafka",
        description="Serve Confluent Schema Registry's REST API (subjects, versions, ids, compatibility, config) "
                    "until Ctrl-C, keeping every schema in the compacted topic --topic of the Kafka cluster named "
                    "by --bootstrap-servers (created if missing). Prints its URL as the first line.",
        epilog="example: kafkalab schema-registry --bootstrap-servers 127.0.0.1:9092 --port 8081")
    sr.add_argument("--bootstrap-servers", metavar="HOST:PORT",
                    required=not os.environ.get("KAFKALAB_BOOTSTRAP_SERVERS"),
                    default=os.environ.get("KAFKALAB_BOOTSTRAP_SERVERS"),
                    help="the Kafka cluster that keeps the schemas (default: $KAFKALAB_BOOTSTRAP_SERVERS)")
    sr.add_argument("--port", type=int, default=8081, help="port to listen on (0: a free one; default: %(default)s)")
    sr.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    sr.add_argument("--topic", default="_schemas", help="the schemas topic (default: %(default)s)")
    sr.add_argument("--timeout", type=float, default=30.0,
                    help="seconds to wait for Kafka at start and for each write (default: %(default)s)")
    sr.set_defaults(run=_cmd_schema_registry)
    _add_cluster_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["broker"]:  # every flag after it belongs to python -m kafkalab.broker
        if {"-h", "--help"} & set(argv[1:]):
            print("kafkalab broker: runs one mini broker; it takes the flags of python -m kafkalab.broker:\n")
        return _cmd_broker(argv[1:])
    parser = build_parser()
    if argv[:1] == ["lab"]:   # options kafkalab does not know are JupyterLab's, as with scripts/lab.sh
        args, unknown = parser.parse_known_args(argv)
        args.jupyter_args = unknown
    else:
        args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
