"""``kvfabric report``: the weekly review of the controller's transfer logs, as HTML.

    kvfabric report TRANSFERS.jsonl [MORE.jsonl...] [--since 7d] [--out report.html]

Reads the JSON-lines logs (``kvfabric controller --log``), keeps the records of the
last ``--since`` (default 7 days, counted back from now; ``all`` keeps everything)
and writes one self-contained HTML file (:mod:`controller.review`). Lines that cannot
be used are skipped, counted by reason in the report and on standard error.
Exit statuses: 0 report written, 1 a log or the output could not be read or written,
2 a bad command line.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from controller.config.units import UnitError, parse_duration
from controller.review import read_logs, render_html, review


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the arguments of ``kvfabric report``."""
    parser.add_argument("logs", nargs="+", type=Path, metavar="TRANSFERS.jsonl",
                        help="transfer logs of the controller (--log)")  # fmt: skip
    parser.add_argument("--since", default="7d",
                        help="how far back from now (7d, 12h, 30m) or 'all'")  # fmt: skip
    parser.add_argument("--out", type=Path, default=Path("report.html"),
                        help="the HTML file to write (default report.html)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """Read, review, render."""
    since: float | None = None
    if args.since != "all":
        try:
            since = time.time() - parse_duration(args.since)
        except UnitError as exc:
            print(f"kvfabric report: error: --since {args.since!r}: {exc}", file=sys.stderr)
            return 2
    try:
        records = read_logs(args.logs, since)
    except OSError as exc:
        print(f"kvfabric report: error: {exc}", file=sys.stderr)
        return 1
    for reason, n in records.skipped.most_common():
        where = ", ".join(records.examples[reason])
        print(f"kvfabric report: skipped {n} line(s): {reason} (first at {where})",
              file=sys.stderr)  # fmt: skip
    text = render_html(review(records))
    try:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"kvfabric report: error: {exc}", file=sys.stderr)
        return 1
    print(f"kvfabric report: {len(records.records)} records of {len(records.files)} log(s) "
          f"-> {args.out}")  # fmt: skip
    return 0
