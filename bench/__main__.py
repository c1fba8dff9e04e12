"""`python -m bench [--quick] [--note TEXT]`: run every bench part, write JSON and PNG, print a table."""

from __future__ import annotations

import argparse
import datetime as dt
import os
import time
from pathlib import Path

from bench import _machine, _plugins, _report

RESULTS = Path(__file__).resolve().parent / "results"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small counts: the same keys in under a minute")
    parser.add_argument("--note", default="", help="what else was running, in your words")
    parser.add_argument("--out", type=Path, default=RESULTS, help="directory for latest.json / latest.png")
    args = parser.parse_args(argv)
    started = dt.datetime.now(dt.UTC)
    load_before = _machine.other_load()
    clock = time.perf_counter()
    collected = _plugins.run_all(args.quick)
    run = {
        "quick": args.quick,
        "started_utc": started.isoformat(timespec="seconds"),
        "seconds": round(time.perf_counter() - clock, 1),
        "parts": collected.parts,
        "load_before": load_before,
        "load_after": _machine.other_load(),
        "note": args.note,
        "nice": os.nice(0),  # a run under `nice -n -10` says so: it takes CPU from other work
    }
    document = {**collected.figures, "machine": _machine.facts(), "run": run}
    args.out.mkdir(parents=True, exist_ok=True)
    _report.write_json(args.out / "latest.json", document)
    _report.plot(args.out / "latest.png", collected.samples)
    print(_report.table(collected.figures, collected.ratios, collected.keys_by_part))
    print(f"\nwrote {args.out / 'latest.json'} and {args.out / 'latest.png'} in {run['seconds']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
