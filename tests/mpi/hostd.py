#!/usr/bin/env python3
"""A stand-in for sshd between network namespaces that play hosts, so that an
ordinary user's mpirun can start ranks on the other "host" the way it does on
a cluster: through ssh, whose daemon runs as root and gives the caller
processes as the caller's own uid, never another's.

  hostd.py serve SOCKET      (root) answer on the Unix socket SOCKET
  hostd.py connect SOCKET [ssh options] HOST COMMAND...
                             the ssh-like client: an mpirun launch agent
                             (--mca plm_rsh_agent "python3 hostd.py connect S",
                             MPICH's -launcher-exec through a wrapper)

The server runs tests/mpi/netns_agent.sh HOST COMMAND with the client's
standard input, output and error (passed as descriptors, SCM_RIGHTS) and its
uid as XRXE_MPI_USER, which is the kernel's word for who connected
(SO_PEERCRED), not anything the client says. Like ssh it passes one command
line and returns the command's exit status (128 + N for a signal); if the
client goes away (mpirun kills its ssh children at the end of a job) the
command's process group is killed. Environment of the server: what
netns_agent.sh reads (XRXE_MPI_HOSTS, XRXE_MPI_XRXE).
"""
import json
import os
import pwd
import select
import signal
import socket
import struct
import subprocess
import sys
import threading

AGENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "netns_agent.sh")
MAX_REQUEST = 1 << 20  # an orted command line is a few KiB


def serve_one(conn):
    with conn:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _pid, uid, _gid = struct.unpack("3i", creds)
        try:
            msg, fds, _flags, _addr = socket.recv_fds(conn, MAX_REQUEST, 3)
        except OSError:
            return
        try:
            req = json.loads(msg)
            host, command = str(req["host"]), str(req["command"])
            if len(fds) != 3:
                raise ValueError("want 3 descriptors")
        except (ValueError, KeyError, TypeError) as e:
            for fd in fds:
                os.close(fd)
            conn.send(json.dumps({"status": 255, "error": str(e)}).encode())
            return
        env = dict(os.environ)
        env.pop("XRXE_MPI_USER", None)
        if uid != 0:
            try:
                env["XRXE_MPI_USER"] = pwd.getpwuid(uid).pw_name
            except KeyError:
                env["XRXE_MPI_USER"] = str(uid)
        try:
            proc = subprocess.Popen([AGENT, host, command], stdin=fds[0], stdout=fds[1],
                                    stderr=fds[2], env=env, start_new_session=True)
        finally:
            for fd in fds:
                os.close(fd)
        # Wait for the command, or for the client to hang up (then kill it).
        while proc.poll() is None:
            ready, _, _ = select.select([conn], [], [], 0.2)
            if ready and not conn.recv(1):
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
                proc.wait()
                return
        status = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
        try:
            conn.send(json.dumps({"status": status}).encode())
        except OSError:
            pass


def serve(path):
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    srv.bind(path)
    # Anyone may connect, as anyone may reach sshd: each gets only itself.
    os.chmod(path, 0o666)
    srv.listen(64)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve_one, args=(conn,), daemon=True).start()


def connect(path, args):
    # ssh's options before the host: those with an argument, and flags.
    while args and args[0].startswith("-"):
        args = args[2:] if args[0] in ("-l", "-p", "-o", "-i", "-F") else args[1:]
    if len(args) < 2:
        print("hostd connect: usage: connect SOCKET [ssh options] HOST COMMAND...",
              file=sys.stderr)
        return 255
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.connect(path)
        socket.send_fds(s, [json.dumps({"host": args[0], "command": " ".join(args[1:])}).encode()],
                        [0, 1, 2])
        reply = s.recv(4096)
    except OSError as e:
        print(f"hostd connect: {path}: {e.strerror}", file=sys.stderr)
        return 255
    if not reply:
        print("hostd connect: the server closed the connection", file=sys.stderr)
        return 255
    answer = json.loads(reply)
    if "error" in answer:
        print(f"hostd connect: {answer['error']}", file=sys.stderr)
    return int(answer["status"])


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "serve":
        serve(sys.argv[2])
    elif len(sys.argv) >= 3 and sys.argv[1] == "connect":
        sys.exit(connect(sys.argv[2], sys.argv[3:]))
    print(__doc__, file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
    main()
