"""The ``minitorch-edge`` command (also ``python -m minitorch_edge``).

    minitorch-edge demo     train the small CNN on the bundled digits (the main job)
    minitorch-edge train --config file.json   train a zoo model on a built-in dataset
    minitorch-edge info     version, active backend, built native kernels, CPU features
"""
import argparse
import platform
import sys

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


def main(argv=None):
    parser = argparse.ArgumentParser(prog="minitorch-edge",
                                     description="minitorch_edge command-line tools")
    sub = parser.add_subparsers(dest="command")
    from .demo import DEFAULTS
    demo = sub.add_parser("demo", help="train SmallCNN on the bundled 8x8 digits, save, reload")
    demo.add_argument("--out", default=DEFAULTS["out"], help="output folder (default runs/demo)")
    demo.add_argument("--epochs", type=int, default=DEFAULTS["epochs"])
    demo.add_argument("--batch-size", type=int, default=DEFAULTS["batch_size"])
    demo.add_argument("--lr", type=float, default=DEFAULTS["lr"])
    demo.add_argument("--seed", type=int, default=DEFAULTS["seed"])
    demo.add_argument("--quiet", action="store_true", help="no progress output")
    train = sub.add_parser("train", help="train a zoo model on a built-in dataset")
    train.add_argument("--config", required=True, help="JSON file (see demo.train_from_config)")
    sub.add_parser("info", help="version, backend, native kernels and CPU features")
    args = parser.parse_args(argv)
    if args.command == "info":
        info()
        return 0
    if args.command == "demo":
        from .demo import run_demo
        run_demo(out=args.out, epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
                 seed=args.seed, verbose=0 if args.quiet else 1)
        return 0
    if args.command == "train":
        from .demo import train_from_config
        train_from_config(args.config)
        return 0
    parser.print_help()
    return 1


if __name__ == "__main__":
    sys.exit(main())
