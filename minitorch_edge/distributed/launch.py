"""Launching an MPI job for the user: ``minitorch-edge train --nproc N`` and the tests use this.

`launch(nproc, argv)` runs ``mpiexec -n nproc argv...`` (mpiexec found next to the Python
interpreter, as the ``mpich`` wheel installs it, or on PATH), copies its output through, and
when the job fails because a process died (killed by a signal, ``os._exit``), says which rank it
was: rank 0 writes the job's rank -> pid table to the file named by $MTE_DIST_RANKS_FILE at
init_process_group, and mpiexec (MPICH's hydra) names the dead process by pid.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

__all__ = ["find_mpiexec", "launch", "RANKS_FILE_ENV"]

RANKS_FILE_ENV = "MTE_DIST_RANKS_FILE"


def find_mpiexec():
    """The mpiexec next to sys.executable (a venv with the mpich wheel), else on PATH."""
    near = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    found = near if os.path.exists(near) else shutil.which("mpiexec")
    if found is None:
        raise FileNotFoundError("mpiexec not found next to the Python interpreter or on PATH: "
                                "pip install 'minitorch_edge[distributed]' (mpi4py, mpich) or "
                                "install an MPI library")
    return found


def write_ranks_file(pids):
    """Rank 0, at init_process_group: the rank -> (host, pid) table, written atomically."""
    path = os.environ.get(RANKS_FILE_ENV)
    if not path:
        return
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        for rank, (host, pid) in enumerate(pids):
            f.write(f"{rank} {pid} {host}\n")
    os.replace(tmp, path)


def _read_ranks_file(path):
    table = {}
    try:
        with open(path) as f:
            for line in f:
                rank, pid, _host = line.split(maxsplit=2)
                table[int(pid)] = int(rank)
    except (OSError, ValueError):
        pass
    return table


def launch(nproc, argv, env=None, out=None, timeout=None, mpiexec_args=()):
    """Run ``mpiexec -n nproc *argv``; returns its exit status. Output goes to `out` (default
    sys.stdout); a process that died is reported as ``rank R (pid P) died``."""
    if not isinstance(nproc, int) or nproc < 1:
        raise ValueError(f"launch: nproc must be a positive int, got {nproc!r}")
    out = sys.stdout if out is None else out
    with tempfile.TemporaryDirectory(prefix="mte_dist_") as tmp:
        ranks_file = os.path.join(tmp, "ranks.txt")
        env = dict(os.environ if env is None else env, **{RANKS_FILE_ENV: ranks_file})
        proc = subprocess.Popen([find_mpiexec(), *mpiexec_args, "-n", str(nproc), *argv],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, errors="replace")
        dead = []
        try:
            for line in proc.stdout:
                out.write(line)
                m = re.search(r"PID (\d+) RUNNING AT", line)
                if m:
                    dead.append(int(m.group(1)))
            rc = proc.wait(timeout=timeout)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        if rc != 0 and dead:
            table = _read_ranks_file(ranks_file)
            for pid in dead:
                who = f"rank {table[pid]}" if pid in table else "a process"
                out.write(f"minitorch-edge: {who} (pid {pid}) died (exit status {rc}); "
                          f"mpiexec stopped every rank\n")
        out.flush()
        return rc
