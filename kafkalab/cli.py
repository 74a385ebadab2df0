"""The ``kafkalab`` command.

::

    kafkalab dump-log PATH [PATH ...] [--print-data-log]   look inside segment and index files
    kafkalab broker --port 9092 --log-dir DIR [...]        run one mini broker (python -m kafkalab.broker)
    kafkalab lab [--no-browser] [--port P]                 open the lessons in JupyterLab

``dump-log`` is Kafka's ``kafka-dump-log.sh`` (``kafka.tools.DumpLogSegments``):
the same options, the same output, on the mini broker's files or a real
broker's. ``broker`` takes exactly the flags of ``python -m kafkalab.broker``.
``lab`` starts JupyterLab on the checkout (lesson 00 open, ``labs/`` beside it), as
``scripts/lab.sh`` does; each notebook starts
its own broker inside the notebook (``kafkalab.mini()``), so nothing else
has to run first.

Cluster commands (``up``, ``status``, ``kill``, ``restart``, ``down``) are
planned: they will each be one more subcommand registered in
:func:`build_parser`.
"""
from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys

from . import __version__

_HERE = os.path.dirname(os.path.abspath(__file__))


def _cmd_dump_log(args: argparse.Namespace) -> int:
    from .tools.dump_log import dump_files

    paths = list(args.paths)
    for item in args.files or []:
        paths += [p for p in item.split(",") if p]
    if not paths:
        print("kafkalab dump-log: give at least one file (PATH or --files)", file=sys.stderr)
        return 2
    try:
        ok = dump_files(paths, print_data_log=args.print_data_log, deep_iteration=args.deep_iteration,
                        skip_record_metadata=args.skip_record_metadata,
                        verify_index_only=args.verify_index_only)
    except BrokenPipeError:  # `kafkalab dump-log X | head`
        sys.stderr.close()
        return 0
    return 0 if ok else 1


def _cmd_broker(argv: list[str]) -> int:
    from .broker.__main__ import main as broker_main

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
    if args.port:
        cmd.append(f"--port={args.port}")
    if args.no_browser:
        cmd.append("--no-browser")
    if args.dry_run:
        print(shlex.join(cmd))
        return 0
    try:
        return subprocess.call(cmd)
    except KeyboardInterrupt:  # JupyterLab got the Ctrl-C too and shuts itself down
        return 130


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
        description="Print the contents of log segment (.log), offset index (.index) and time index "
                    "(.timeindex) files the way Kafka's kafka-dump-log.sh does. Works on the files of "
                    "a mini broker or of a real Kafka broker (same format). A partition directory "
                    "means all its .log files.",
        epilog="example: kafkalab dump-log /tmp/kafkalab-xyz/orders-0/00000000000000000000.log --print-data-log")
    d.add_argument("paths", nargs="*", metavar="PATH", help="a .log, .index or .timeindex file, or a partition dir")
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
    d.set_defaults(run=_cmd_dump_log)

    # listed here for --help; main() hands everything after "broker" to python -m kafkalab.broker
    sub.add_parser("broker", help="run one mini broker in this terminal (same flags as python -m kafkalab.broker)")

    lab = sub.add_parser(
        "lab", help="open the lessons (notebooks/) in JupyterLab",
        description="Start JupyterLab on the notebooks/ folder. The notebooks start their own broker "
                    "inside the notebook (kafkalab.mini()), so nothing else needs to run first.")
    lab.add_argument("--notebook-dir", help="folder to open (default: this checkout, at lesson 00)")
    lab.add_argument("--port", type=int, default=0, help="JupyterLab's port (default: JupyterLab's choice)")
    lab.add_argument("--ip", default="127.0.0.1", help="address JupyterLab listens on (default: %(default)s)")
    lab.add_argument("--no-browser", action="store_true", help="do not open a browser")
    lab.add_argument("--dry-run", action="store_true", help="print the JupyterLab command instead of running it")
    lab.set_defaults(run=_cmd_lab)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["broker"]:  # every flag after it belongs to python -m kafkalab.broker
        if {"-h", "--help"} & set(argv[1:]):
            print("kafkalab broker: runs one mini broker; it takes the flags of python -m kafkalab.broker:\n")
        return _cmd_broker(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
