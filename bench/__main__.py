"""``python -m bench``: run the workloads against every peer, write JSON, markdown and a chart.

Examples
--------
python -m bench                      # the full run: every library at its defaults, then
                                     # fresh outputs (about an hour on 2 cores)
python -m bench --threads 1          # every library on one core and one thread
python -m bench --busy 2             # beside two spinning processes (under load)
python -m bench --quick              # tiny sizes, under a minute: proves the harness works
python -m bench --only 'gather' --peers phisparse,numpy,torch
"""
import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

from . import RESULTS, chart, report, runner, summary
from .peers import PEERS


def _csv(text):
    return tuple(s.strip() for s in text.split(",") if s.strip())


def parse(argv):
    """Options from the command line."""
    ap = argparse.ArgumentParser(
        prog="python -m bench", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Time the workloads on phisparse and every peer; write JSON, markdown "
        "and a chart.", epilog=__doc__.split("Examples\n--------\n")[1]
        + "\nPeers, how to install them and how it measures: bench/PEERS.md")
    ap.add_argument("--quick", action="store_true",
                    help="tiny sizes, 5 repeats in 1 round, one process per peer, "
                    "processes in parallel: proves the harness works in under a minute")
    ap.add_argument("--only", metavar="REGEX", help="run the workloads whose name matches")
    ap.add_argument("--peers", type=_csv, default=tuple(PEERS),
                    help=f"comma-separated subset of: {', '.join(PEERS)}")
    ap.add_argument("--backends", type=_csv, default=None,
                    help="cpu,gpu (default: cpu, and gpu where cupy sees one)")
    ap.add_argument("--repeats", type=int, help="timed calls per (workload, peer); "
                    "default 6 (5 with --quick)")
    ap.add_argument("--rounds", type=int, help="interleaved rounds the repeats are split "
                    "over; default 2 (1 with --quick)")
    ap.add_argument("--group-rounds", type=int, default=8, metavar="N",
                    help="rounds of the short workloads (tiny/*, dense/*), whose jobs of one "
                    "peer share a process: N processes per peer, alternating with the "
                    "other peers' (default 8)")
    ap.add_argument("--alloc", type=_csv, default=("default", "fresh"),
                    help="allocation modes, comma-separated: default (every library at its "
                    "defaults: the headline), fresh (new memory for every output where a "
                    "library can be made to take it) and/or reused; default: default,fresh")
    ap.add_argument("--threads", type=int, help="pin every library, ours included, to this "
                    "many cores and threads (OpenMP, MKL, OpenBLAS, TensorFlow, torch, "
                    "phisparse); --threads 1 measures the algorithm, not the core count")
    ap.add_argument("--busy", type=int, default=0, metavar="N",
                    help="run N spinning processes beside the benchmark (under load)")
    ap.add_argument("--isolate", action=argparse.BooleanOptionalAction, default=None,
                    help="one process per (workload, peer) (default; --quick: per peer)")
    ap.add_argument("--parallel", type=int, help="worker processes at once; default 1 "
                    "(--quick: one per core, which spoils the timings)")
    ap.add_argument("--out", type=Path, default=RESULTS, help=f"output folder ({RESULTS})")
    args = ap.parse_args(argv)
    unknown = [p for p in args.peers if p not in PEERS]
    if unknown:
        ap.error(f"unknown peer(s) {', '.join(unknown)}; choose from {', '.join(PEERS)}")
    if set(args.alloc) - set(runner.ALLOC_ENV) or not args.alloc:
        ap.error(f"--alloc takes {' and/or '.join(runner.ALLOC_ENV)}, got {','.join(args.alloc)}")
    if (args.threads is not None and args.threads < 1) or args.busy < 0:
        ap.error("--threads takes a count >= 1 and --busy a count >= 0")
    if args.backends and set(args.backends) - {"cpu", "gpu"}:
        ap.error(f"--backends takes cpu and/or gpu, got {','.join(args.backends)}")
    return args


def options(args):
    """The runner's options, with the --quick defaults filled in."""
    quick = args.quick
    opts = runner.Options(
        quick=quick, only=args.only, peers=args.peers, backends=args.backends,
        repeats=args.repeats or (5 if quick else 6), rounds=args.rounds or (1 if quick else 2),
        allocs=args.alloc, isolate=(not quick) if args.isolate is None else args.isolate,
        parallel=args.parallel or (os.cpu_count() if quick else 1),
        timeout=120.0 if quick else 900.0, threads=args.threads, busy=args.busy,
        group_rounds=args.group_rounds)
    if min(opts.repeats, opts.rounds, opts.parallel, opts.group_rounds) < 1:
        raise SystemExit("bench: --repeats, --rounds, --group-rounds and --parallel must be "
                         ">= 1")
    return opts


def write(doc, out):
    """Write latest.{json,md,png} and a timestamped copy of the JSON under ``out``;
    return the markdown and the names written (no chart without matplotlib)."""
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (out / "latest.json").write_text(json.dumps(doc, indent=1))
    shutil.copyfile(out / "latest.json", out / f"bench-{stamp}.json")
    text = report.markdown(doc)
    (out / "latest.md").write_text(text)
    try:
        chart.plot(doc, out / "latest.png")
    except ImportError as exc:  # matplotlib is needed for the chart alone
        sys.stderr.write(f"bench: no chart ({exc}); install matplotlib for latest.png\n")
        return text, ["latest.json", "latest.md"]
    return text, ["latest.json", "latest.md", "latest.png"]


def main(argv=None):
    args = parse(sys.argv[1:] if argv is None else argv)
    opts = options(args)
    progress = report.Progress(total=1)
    machine = report.machine()
    parts = runner.execute(opts, progress, progress.say)
    progress.finish()
    doc = summary.document(parts, opts, machine)
    doc["machine"]["load_average_end"] = os.getloadavg()
    text, files = write(doc, args.out)
    sys.stdout.write(text)
    sys.stderr.write(f"wrote {', '.join(files)} in {args.out}\n")


if __name__ == "__main__":
    main()
