"""The ``minitorch-edge`` command (also ``python -m minitorch_edge``).

    minitorch-edge demo     train the small CNN on the bundled digits (the main job)
    minitorch-edge train --config file.json   train a zoo model on a built-in dataset
    minitorch-edge train --nproc 4 ...        the same, data-parallel in 4 MPI processes
    minitorch-edge info     version, active backend, built native kernels, CPU features

Errors are one line on stderr, ``minitorch-edge: error: <what>; <how to fix>``, with exit code 2
for usage and config errors and 1 for errors while running; ``--debug`` (anywhere on the line)
adds the traceback. Ctrl-C during training saves a resumable checkpoint and exits 130 (see
``train/runs.py``); a closed stdout (``minitorch-edge info | head -1``) ends quietly (141).
"""
import argparse
import json
import os
import platform
import sys
import traceback

from . import __version__, backend


def _cpu_flags():
    """CPU features as the OS reports them (the native library reports its own view too)."""
    wanted = ("avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx_vnni",
              "neon", "asimd", "asimddp")
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    have = set(line.split(":", 1)[1].split())
                    return [w for w in wanted if w in have]
    except OSError:
        pass
    return []


def info(out=sys.stdout):
    data = backend.info()
    rows = [("minitorch_edge", __version__),
            ("python", platform.python_version()),
            ("machine", f"{platform.machine()} ({platform.system()})"),
            ("backend", f"{data.pop('backend')} (MTE_BACKEND={data.pop('requested')})")]
    if "native" in data:
        rows.append(("native", data.pop("native")))
    else:
        rows.append(("native", f"libmte {data.pop('version', '?')}, ISA path "
                               f"{data.pop('isa', '?')}"))
        rows.append(("native kernels", ", ".join(data.pop("kernels", [])) or "none"))
        rows.append(("threads", str(data.pop("num_threads", backend.get_num_threads()))))
        feats = data.pop("cpu_features", None)
        if feats is not None:
            rows.append(("cpu features (libmte)", ", ".join(feats) or "none"))
    rows.append(("cpu features (os)", ", ".join(_cpu_flags()) or "unknown"))
    dispatch = data.pop("dispatch")
    isa_table = data.pop("isa_table", None)
    if isa_table:
        rows.append(("ISA per C family", ", ".join(f"{f} {isa}" for f, isa in isa_table.items())))
    for k, v in data.items():
        rows.append((k, str(v)))
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}", file=out)
    # the backend's dispatch table (backend/__init__.py): what runs each kernel
    print("\nkernel dispatch (backend/__init__.py; ISA from native/src/cpu.c)", file=out)
    width = max(len(k) for k in dispatch)
    for kernel, impl in dispatch.items():
        print(f"  {kernel:<{width}}  {impl}", file=out)


class UsageError(Exception):
    """A bad command line (argparse's complaints, re-raised so main prints them as one line)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(f"{message}; see {self.prog} --help")


def _parser():
    from .demo import DEFAULTS
    from .train.config import help_text
    parser = _Parser(prog="minitorch-edge", description="minitorch_edge command-line tools")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    def run_options(p, what):
        p.add_argument("--epochs", type=int, help=f"epochs to train (default {what})")
        p.add_argument("--batch-size", type=int, help=f"training batch size (default {what})")
        p.add_argument("--lr", type=float, help=f"the optimizer's learning rate (default {what})")
        p.add_argument("--seed", type=int, help=f"random seed (default {what})")
        p.add_argument("--out", help="run folder; an earlier run's folder is not reused: the "
                                     "next free name (OUT-1, OUT-2, ...) is taken")
        p.add_argument("--overwrite", action="store_true",
                       help="reuse --out even if it holds an earlier run")
        p.add_argument("--resume", nargs="?", const=True, metavar="PATH",
                       help="continue a run: PATH is its folder or a checkpoint; no PATH: the "
                            "last checkpoint in --out")
        p.add_argument("--quiet", action="store_true", help="no progress output")
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="show tracebacks of errors")

    demo = sub.add_parser("demo", help="train SmallCNN on the bundled 8x8 digits, save, reload")
    run_options(demo, f"the demo's: {DEFAULTS['epochs']} epochs, batch {DEFAULTS['batch_size']}, "
                      f"lr {DEFAULTS['lr']}, seed {DEFAULTS['seed']}, --out {DEFAULTS['out']}")
    train = sub.add_parser("train", help="train a zoo model on a built-in dataset",
                           formatter_class=argparse.RawDescriptionHelpFormatter,
                           epilog=help_text())
    train.add_argument("--config", help="JSON config file (keys below; missing keys take the "
                                        "defaults)")
    train.add_argument("--print-config", action="store_true",
                       help="print the complete config (the default one, or --config with the "
                            "overrides) as JSON with every key explained under \"_doc\", "
                            "and exit; the output loads back with --config")
    train.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="override a config key, dotted (--set optimizer.lr=0.01); VALUE is "
                            "read as JSON, else as a string; repeatable")
    train.add_argument("--nproc", type=int, metavar="N",
                       help="data-parallel training in N processes: runs this command under "
                            "mpiexec -n N (DistributedDataParallel, a DistributedSampler shard "
                            "per process, --batch-size per process; needs the 'distributed' "
                            "extra: mpi4py, mpich)")
    run_options(train, "from the config")
    sub.add_parser("video", add_help=False,     # its own parser: minitorch_edge/video/__main__.py
                   help="the video analytics report (synthetic cameras, motion sampling, an "
                        "int8 cascade on the C runtime); video --help for its options")
    info_p = sub.add_parser("info", help="version, backend, native kernels and CPU features")
    info_p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS)
    return parser


def _overrides(args, demo=False):
    """--epochs / --batch-size / --lr / --seed / --out as --set items (given ones only)."""
    items = []
    for flag, key in (("epochs", "epochs"), ("batch_size", "batch_size"), ("lr", "optimizer.lr"),
                      ("seed", "seed"), ("out", "out")):
        value = getattr(args, flag)
        if value is not None:
            items.append(f"{key}={json.dumps(value)}")
            if demo and flag == "epochs" and args.resume is None:
                items.append(f"scheduler.T_max={json.dumps(value)}")     # cosine over the run
    return items


def _config(args, demo):
    from .demo import DEFAULTS, demo_config, run_resumed_config
    from .train.config import apply_overrides, load_config, parse_config
    where = ""
    if demo:
        raw = demo_config()
    elif args.config is not None:
        raw, where = load_config(args.config), f" in {args.config}"
    else:
        raw = {}
    if args.resume is not None and (demo or args.config is None):
        out = args.out or raw.get("out") or (DEFAULTS["out"] if demo else
                                             parse_config(raw).run_dir)
        saved = run_resumed_config(args.resume, out)
        if saved is not None:
            raw, where = saved, " in the resumed run's config.json"
    raw = apply_overrides(raw, _overrides(args, demo) + list(getattr(args, "set", [])))
    return parse_config(raw, where)


def _run(argv):
    if argv[:1] == ["video"]:                   # its options are parsed by the video module
        from .video.__main__ import main as video_main
        return video_main(argv[1:], prog="minitorch-edge video")
    args = _parser().parse_args(argv)
    if args.command == "info":
        info()
        return 0
    if args.command == "demo":
        from .demo import run_demo
        run_demo(config=_config(args, demo=True), verbose=0 if args.quiet else 1,
                 resume=args.resume, overwrite=args.overwrite)
        return 0
    if args.command == "train" and args.nproc is not None:
        if args.nproc < 1:
            raise UsageError(f"--nproc must be >= 1, got {args.nproc}")
        from .demo import LAUNCHED_ENV
        if args.nproc > 1 and os.environ.get(LAUNCHED_ENV) != "1":   # start the N processes
            from .distributed.launch import launch
            try:
                return launch(args.nproc, [sys.executable, "-m", "minitorch_edge", *argv],
                              env=dict(os.environ, **{LAUNCHED_ENV: "1"}))
            except FileNotFoundError as e:
                raise UsageError(str(e)) from None
    if args.command == "train":
        config = _config(args, demo=False)
        if args.print_config:
            print(json.dumps(config.to_dict(docs=True), indent=2))
            return 0
        from .demo import train_from_config
        train_from_config(config, verbose=0 if args.quiet else 1, resume=args.resume,
                          overwrite=args.overwrite)
        return 0
    _parser().print_help()
    return 2


def _first_line(e):
    lines = str(e).strip().splitlines()
    return lines[0] if lines else type(e).__name__


def main(argv=None):
    """Run the command; returns the exit code (0, 1 runtime error, 2 usage/config error,
    130 interrupted, 141 stdout closed)."""
    from .train.config import ConfigError
    from .train.runs import RunInterrupted
    argv = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in argv
    try:
        code = _run(argv)
        sys.stdout.flush()              # a closed pipe shows here, not at interpreter exit
        return code
    except BrokenPipeError:
        # the reader went away (`| head`): stop quietly; later flushes go to /dev/null
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except RunInterrupted as e:
        print(f"minitorch-edge: {e}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("minitorch-edge: interrupted (outside training: nothing to save)", file=sys.stderr)
        return 130
    except (UsageError, ConfigError) as e:
        if debug:
            traceback.print_exc()
        print(f"minitorch-edge: error: {_first_line(e)}", file=sys.stderr)
        return 2
    except Exception as e:
        if debug:
            traceback.print_exc()
        hint = "" if debug else " (--debug shows the traceback)"
        print(f"minitorch-edge: error: {type(e).__name__}: {_first_line(e)}{hint}",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
