"""The spawn helper of pi-teams-hooks.

spawn/helper.ts starts one per leader process and asks it to start hooks. It starts each with
posix_spawn (glibc runs the child on its own small stack until the exec: no copy of this process's
page tables and no copy-on-write faults afterwards), which costs a small fraction of a fork of the
leader's Node process (docs/architecture.md, "The spawn helper"). The hook gets what
node:child_process gives a detached child with piped stdio: its own session and process group, three
pipes, default signal dispositions and an empty signal mask, the working directory and exactly the
environment asked for, the command looked up in that environment's PATH. The helper writes the hook's
stdin, relays its stdout and stderr, and reports its pid and how it ended. It never signals a hook
(the leader ends process groups itself) and it ends when the leader closes its stdin.

Frames, both ways: a 4-byte big-endian payload length, a 1-byte type, a 4-byte big-endian run id,
the payload.
  leader -> helper  S start (cwd, command, argument count, arguments, NAME=value entries; NUL-separated)
                    I bytes for the hook's stdin   E end of stdin   C release: stop reading its output
  helper -> leader  H ready (once, run id 0)   P started (pid)   F not started (errno)
                    O stdout bytes   R stderr bytes   o stdout closed   r stderr closed
                    X ended (0 and the exit code, or 1 and the signal)
"""

import errno
import fcntl
import os
import select
import signal
import stat
import struct
import sys

HEADER = struct.Struct(">IcI")
CHUNK = 65536
# Every signal a program can name (glibc keeps its own two, 32 and 33, out of this set).
SIGNALS = sorted(signal.valid_signals() - {signal.SIGKILL, signal.SIGSTOP})
CONTROL_IN, CONTROL_OUT = 0, 1

runs = {}  # run id -> Run
by_pid = {}  # pid -> run id, until reaped
owner = {}  # fd -> run id, for every pipe being waited on
# poll(2), not epoll: a (un)register is no system call, and there are only a few pipes.
poller = select.poll()
READ, WRITE = select.POLLIN | select.POLLHUP | select.POLLERR, select.POLLOUT | select.POLLERR
outbox = []  # frames for the leader, written at once before the next wait


class Run:
    __slots__ = ("pid", "stdin", "pending", "stdin_done", "outputs", "exited")

    def __init__(self, pid, stdin, stdout, stderr):
        self.pid = pid
        self.stdin = stdin
        self.pending = b""
        self.stdin_done = False
        self.outputs = {stdout: (b"O", b"o"), stderr: (b"R", b"r")}
        self.exited = False


def send(kind, run_id, payload=b""):
    outbox.append(HEADER.pack(len(payload), kind, run_id))
    if payload:
        outbox.append(payload)


def flush():
    if not outbox:
        return
    view = memoryview(b"".join(outbox))
    outbox.clear()
    while view:
        try:
            view = view[os.write(CONTROL_OUT, view):]
        except InterruptedError:
            continue
        except OSError:
            os._exit(0)  # the leader is gone


def find_command(command, env):
    """What execvp would exec, with PATH taken from the hook's environment, or an OSError.

    Each directory is looked at with stat and access, not by trying posix_spawn in it: a failed
    spawn costs as much as one that works.
    """
    if b"/" in command:
        return command
    path = env.get(b"PATH")
    denied = False
    for directory in path.split(b":") if path is not None else [b"/usr/local/bin", b"/usr/bin", b"/bin"]:
        candidate = os.path.join(directory or b".", command)
        try:
            regular = stat.S_ISREG(os.stat(candidate).st_mode)
        except OSError:
            continue
        if regular and os.access(candidate, os.X_OK):
            return candidate
        denied = True  # execve of a directory, or of a file without x, is EACCES; execvp goes on looking
    code = errno.EACCES if denied else errno.ENOENT
    raise OSError(code, os.strerror(code))


def spawn(cwd, command, args, env, fds):
    """Returns the pid, or raises OSError with the errno execvp would give."""
    os.chdir(cwd)  # the child inherits it; this process never uses its own working directory
    actions = [(os.POSIX_SPAWN_DUP2, fd, target) for fd, target in fds]
    found = find_command(command, env)
    options = dict(file_actions=actions, setsid=True, setsigmask=(), setsigdef=SIGNALS)
    try:
        return os.posix_spawn(found, [command] + args, env, **options)
    except OSError as error:
        if error.errno != errno.ENOEXEC:
            raise
    # An executable without "#!": execvp (and so node:child_process) runs it with /bin/sh; so do we.
    return os.posix_spawn(b"/bin/sh", [b"/bin/sh", found] + args, env, **options)


def start(run_id, payload):
    fields = payload.split(b"\0")
    cwd, command, count = fields[0], fields[1], int(fields[2])
    args = fields[3 : 3 + count]
    env = {}
    for entry in fields[3 + count :]:
        name, eq, value = entry.partition(b"=")
        if eq and name:
            env[name] = value
    pipes = []
    try:
        stdin_r, stdin_w = os.pipe()
        pipes += [stdin_r, stdin_w]
        stdout_r, stdout_w = os.pipe()
        pipes += [stdout_r, stdout_w]
        stderr_r, stderr_w = os.pipe()
        pipes += [stderr_r, stderr_w]
        pid = spawn(cwd, command, args, env, [(stdin_r, 0), (stdout_w, 1), (stderr_w, 2)])
    except OSError as error:
        for fd in pipes:
            os.close(fd)
        send(b"F", run_id, struct.pack(">I", error.errno or errno.EINVAL))
        return
    for fd in (stdin_r, stdout_w, stderr_w):
        os.close(fd)
    # All three of our ends non-blocking: a read on a stale poll event (its pipe closed and the number
    # reused by a newer run's within one pass) must never wait for that run to write.
    for fd in (stdin_w, stdout_r, stderr_r):
        fcntl.fcntl(fd, fcntl.F_SETFL, os.O_NONBLOCK)
    run = Run(pid, stdin_w, stdout_r, stderr_r)
    runs[run_id] = run
    by_pid[pid] = run_id
    for fd in run.outputs:
        owner[fd] = run_id
        poller.register(fd, READ)
    send(b"P", run_id, struct.pack(">I", pid))
    flush()  # the leader waits for the pid


def close_stdin(run_id, run):
    if run.stdin is None:
        return
    if owner.pop(run.stdin, None) is not None:
        poller.unregister(run.stdin)
    os.close(run.stdin)
    run.stdin = None
    run.pending = b""


def pump_stdin(run_id, run):
    while run.stdin is not None and run.pending:
        try:
            run.pending = run.pending[os.write(run.stdin, run.pending):]
        except (BlockingIOError, InterruptedError):
            break
        except OSError:
            run.pending = b""  # EPIPE: the hook does not read its stdin, which is its right
    if run.stdin is None:
        return
    if run.pending:
        if run.stdin not in owner:
            owner[run.stdin] = run_id
            poller.register(run.stdin, WRITE)
        return
    if owner.pop(run.stdin, None) is not None:
        poller.unregister(run.stdin)  # nothing to write: no POLLOUT to wake on until the next I
    if run.stdin_done:
        close_stdin(run_id, run)


def close_output(run_id, run, fd, announce):
    del owner[fd]
    poller.unregister(fd)
    os.close(fd)
    kind = run.outputs.pop(fd)[1]
    if announce:
        send(kind, run_id)


def forget_if_done(run_id):
    run = runs.get(run_id)
    if run is not None and run.exited and not run.outputs:
        close_stdin(run_id, run)
        del runs[run_id]


def reap():
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        run_id = by_pid.pop(pid, None)
        if run_id is None:
            continue
        if os.WIFSIGNALED(status):
            send(b"X", run_id, struct.pack(">II", 1, os.WTERMSIG(status)))
        else:
            send(b"X", run_id, struct.pack(">II", 0, os.WEXITSTATUS(status)))
        run = runs.get(run_id)
        if run is not None:
            run.exited = True
            forget_if_done(run_id)


control = bytearray()


def read_control():
    try:
        data = os.read(CONTROL_IN, CHUNK)
    except (BlockingIOError, InterruptedError):
        return
    if not data:
        os._exit(0)  # the leader closed its end: its runs are over, or it is gone
    control.extend(data)
    while len(control) >= HEADER.size:
        length, kind, run_id = HEADER.unpack_from(control)
        if len(control) < HEADER.size + length:
            return
        payload = bytes(control[HEADER.size : HEADER.size + length])
        del control[: HEADER.size + length]
        if kind == b"S":
            start(run_id, payload)
            continue
        run = runs.get(run_id)
        if run is None:
            continue
        if kind == b"I":
            run.pending += payload
            pump_stdin(run_id, run)
        elif kind == b"E":
            run.stdin_done = True
            pump_stdin(run_id, run)
        elif kind == b"C":
            close_stdin(run_id, run)
            for fd in list(run.outputs):
                close_output(run_id, run, fd, False)
            forget_if_done(run_id)


def main():
    if sys.version_info < (3, 8):
        sys.exit("the spawn helper needs Python 3.8 or later (os.posix_spawn with setsid)")
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    # The C-level handler writes to the wake-up pipe at once: an exit is never missed by select.
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    poller.register(CONTROL_IN, READ)
    poller.register(wake_r, READ)
    send(b"H", 0)
    while True:
        flush()
        for fd, events in poller.poll():
            if fd == wake_r:
                try:
                    while os.read(wake_r, 256):
                        pass
                except (BlockingIOError, InterruptedError):
                    pass
                continue
            if fd == CONTROL_IN:
                read_control()
                continue
            run_id = owner.get(fd)
            run = runs.get(run_id)
            if run is None:
                continue
            if fd == run.stdin:
                pump_stdin(run_id, run)
                continue
            if fd not in run.outputs:
                continue
            try:
                data = os.read(fd, CHUNK)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b""
            if data:
                send(run.outputs[fd][0], run_id, data)
            else:
                close_output(run_id, run, fd, True)
                forget_if_done(run_id)
        reap()

main()
