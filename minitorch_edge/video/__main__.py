"""`python -m minitorch_edge.video [--short] [--threads 1 2] [--out DIR]` (also `minitorch-edge
video ...`): the video report (report.py) printed as Markdown; --out keeps the models and writes
report.md / report.json."""
import argparse
import sys

from .report import format_report, run_report, write_report


def main(argv=None, prog="python -m minitorch_edge.video"):
    parser = argparse.ArgumentParser(prog=prog,
                                     description="Synthetic multi-camera video analytics on the "
                                                 "C runtime: FPS and accuracy per setting")
    parser.add_argument("--short", action="store_true", help="the CI mode (seconds)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2],
                        help="worker thread counts to run (default: 1 2)")
    parser.add_argument("--motion-threshold", type=float, default=1e-3,
                        help="motion energy that makes a frame worth processing")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--width", type=int,
                        help="the heavy model's width (default: 8 short, 16 full)")
    parser.add_argument("--out", help="folder to keep the .mte files and report.md/json in")
    args = parser.parse_args(argv)
    if any(t < 1 for t in args.threads):
        parser.error(f"--threads must be positive, got {args.threads}")
    if args.width is not None and args.width < 1:
        parser.error(f"--width must be positive, got {args.width}")
    report = run_report(short=args.short, threads=tuple(args.threads), folder=args.out,
                        seed=args.seed, motion_threshold=args.motion_threshold,
                        width=args.width)
    print(format_report(report))
    if args.out:
        write_report(report, args.out)
        print(f"\nwrote {args.out}/report.md and report.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
