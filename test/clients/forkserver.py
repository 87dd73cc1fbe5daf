"""Runs the real clients' own entry points, forked from one warm interpreter.

Each client command is what /usr/bin/openstack, /usr/bin/nova or sdk_probe.py would run (the same
main(), the same argv and environment, its own process), but forked from a Python that imported
the clients once: their import is most of a command's CPU (~0.5 s each, several hundred commands).
What a command still imports after the fork (its API plugins: cinderclient, swiftclient, oslo_log…,
about 160 modules, a third of a forked command's CPU) the child names on exit, and the server
imports it between commands, so the next command forks with it loaded.

Protocol: one JSON request per line on stdin, {"id", "tool", "argv", "env"}; one JSON answer per
line on stdout, {"id", "code", "stdout", "stderr"}. Single-threaded (select + waitpid), so fork is
safe; commands run concurrently.
"""

import contextlib
import json
import os
import runpy
import select
import sys
import tempfile

import cliff.app  # noqa: F401
import keystoneauth1.session  # noqa: F401
import novaclient.shell
import novaclient.v2.client  # noqa: F401
import openstack.connection  # noqa: F401
import openstackclient.shell
from importlib.metadata import entry_points

HERE = os.path.dirname(os.path.abspath(__file__))

# OSC's `--wait` polls every 5 s (osc_lib's wait_for_status and wait_for_delete default): against
# a local cloud that answers in milliseconds, most of the CLI tests' time. The commands poll every
# 0.2 s here instead; what they send and how they read the answers is unchanged.
import osc_lib.utils as _osc_utils  # noqa: E402


def _polling_faster(wait):
    def wrapped(*args, sleep_time=0.2, **kwargs):
        return wait(*args, sleep_time=sleep_time, **kwargs)

    return wrapped


_osc_utils.wait_for_status = _polling_faster(_osc_utils.wait_for_status)
_osc_utils.wait_for_delete = _polling_faster(_osc_utils.wait_for_delete)

# The commands' modules too (what cliff loads lazily per command): warm them once.
for group in ("openstack.compute.v2", "openstack.image.v2", "openstack.identity.v3", "openstack.common"):
    for ep in entry_points(group=group):
        try:
            ep.load()
        except Exception:  # a plugin the command never needs may not import; the command reports its own errors
            pass


def child(req, out_path, err_path, modules_path):
    before = set(sys.modules)
    out = os.open(out_path, os.O_WRONLY)
    err = os.open(err_path, os.O_WRONLY)
    os.dup2(out, 1)
    os.dup2(err, 2)
    os.close(0)
    sys.stdout = os.fdopen(1, "w", closefd=False)
    sys.stderr = os.fdopen(2, "w", closefd=False)
    os.environ.clear()
    os.environ.update(req["env"])
    tool = req["tool"]
    code = 1
    try:
        if tool == "openstack":
            sys.argv = ["openstack", *req["argv"]]
            code = openstackclient.shell.main(req["argv"])
        elif tool == "nova":
            sys.argv = ["nova", *req["argv"]]
            # main's default argv is sys.argv as it was at import: pass the command's own
            code = novaclient.shell.main(req["argv"])
        else:  # the SDK probe, as `python3 sdk_probe.py args…`
            sys.argv = [os.path.join(HERE, "sdk_probe.py"), *req["argv"]]
            runpy.run_path(sys.argv[0], run_name="__main__")
            code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException as e:  # what the interpreter would print for an uncaught exception
        import traceback

        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        with open(modules_path, "w") as f:
            f.write("\n".join(sorted(set(sys.modules) - before)))
    except BaseException:  # a warm-up hint only
        pass
    os._exit(code or 0)


def warm(modules_path):
    """Imports what a finished command imported after its fork (best effort: a hint, not a need)."""
    try:
        with open(modules_path) as f:
            names = f.read().split()
        os.unlink(modules_path)
    except OSError:
        return
    for name in names:
        if name in sys.modules:
            continue
        try:
            __import__(name)
        except BaseException:  # a module that only imports in its command's context
            pass


def main():
    running = {}  # pid → (id, out_path, err_path, modules_path)
    buf = b""
    stdin = sys.stdin.buffer
    open_input = True
    while open_input or running:
        readable, _, _ = select.select([stdin] if open_input else [], [], [], 0.01)
        if readable:
            chunk = os.read(stdin.fileno(), 65536)
            if not chunk:
                open_input = False
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                req = json.loads(line)
                fd_out, out_path = tempfile.mkstemp()
                fd_err, err_path = tempfile.mkstemp()
                fd_mod, modules_path = tempfile.mkstemp()
                os.close(fd_out)
                os.close(fd_err)
                os.close(fd_mod)
                pid = os.fork()
                if pid == 0:
                    child(req, out_path, err_path, modules_path)
                running[pid] = (req["id"], out_path, err_path, modules_path)
        while running:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            rid, out_path, err_path, modules_path = running.pop(pid)
            with open(out_path, errors="replace") as f:
                out = f.read()
            with open(err_path, errors="replace") as f:
                err = f.read()
            os.unlink(out_path)
            os.unlink(err_path)
            code = os.waitstatus_to_exitcode(status)
            sys.stdout.write(json.dumps({"id": rid, "code": code, "stdout": out, "stderr": err}) + "\n")
            sys.stdout.flush()
            # answered first: the warm-up costs the next command nothing but its fork's head start
            with contextlib.redirect_stdout(sys.stderr):  # stdout is the answers' channel
                warm(modules_path)


if __name__ == "__main__":
    main()
