"""Running untrusted code: every candidate build and run goes through `run_process`, which puts it in a
bubblewrap sandbox (docs/threat-model.md, "Sandbox").

In the sandbox a process sees a read-only view of the system; only its scratch folder is writable; $HOME,
/home, /root, /tmp, /var/tmp and /run are empty (small tmpfs), with only what a build needs bound back
read-only (the Python installation, speedpatch's own package, speedpatch's cache, the source file's folder
and any path named on the command line); it has no network (its own network namespace holds only a
loopback), its own PID namespace (when the command ends, everything it started dies with it), no
capabilities (as root: user nobody in a user namespace of its own), an environment reduced to an allowlist (never a credential), and rlimits on address space,
processes, file size and CPU time. Its output is read through a pipe that keeps the first and last
`output_bytes` (nothing of it is written to disk, and a result line printed last survives any amount of
logging); backends that want a result channel the output cannot fill ask for one (`result_channel`).

Where bubblewrap is missing or cannot create namespaces, the same call falls back to rlimits, the
environment allowlist and process-group killing, and the status (`status()`) says so; `required` scopes
refuse to run instead. Trusted steps (speedpatch building its own model archive, ssh to a remote host)
opt out with `trusted=True`: no sandbox, the full environment, but the same output cap and secret scrub.
"""

from __future__ import annotations

import glob
import math
import os
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO

from speedpatch.redact import is_secret_name, known_secrets, redact

LOG_LIMIT = 20_000  # characters of output kept per evaluation
LINE_LIMIT = 400  # characters kept per output line (the method's fix prompt does the same)
RESULT_LIMIT = 1_000_000  # bytes kept from a result channel
RESULT_FD_ENV = "SPEEDPATCH_RESULT_FD"  # names the result channel's descriptor in the child's environment
BWRAP_ENV = "SPEEDPATCH_BWRAP"  # which bubblewrap to use; "none" runs without one (benchmarks, tests)
GIB = 1 << 30

# Environment variables a sandboxed process may inherit. Variables the calling backend sets itself (a
# value that differs from speedpatch's own environment) pass too; a credential-like name never does.
ALLOWED_ENV = frozenset({
    "PATH", "LANG", "LANGUAGE", "TZ", "TERM", "CC", "CXX", "SOURCE_DATE_EPOCH", "LD_LIBRARY_PATH",
    "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES",
    "NEURON_RT_VISIBLE_CORES", "NEURON_RT_NUM_CORES", "PYTHONPATH", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE",
    "PYTHONUNBUFFERED", "PYTHONIOENCODING", "PYTHONUTF8", "VIRTUAL_ENV", "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
})
ALLOWED_ENV_PREFIXES = ("LC_",)
# Folders whose contents a candidate must not see or keep anything in: replaced by an empty tmpfs.
MASKED_DIRS = ("/tmp", "/var/tmp", "/run", "/root", "/home")
# Host secrets readable by uid 0 even without capabilities: hidden when speedpatch runs as root.
HIDDEN_FILES = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers")
HIDDEN_DIRS = ("/etc/ssh", "/etc/sudoers.d")
TMPFS_BYTES = 256 << 20  # each masked folder's tmpfs: scratch space for compilers, not storage
DEVICES = {"nvidia": ("/dev/nvidia*", "/dev/nvidia-caps"), "neuron": ("/dev/neuron*",)}


@dataclass(frozen=True)
class Limits:
    memory_bytes: int | None = 4 * GIB  # RLIMIT_AS; None = unlimited
    processes: int | None = 1024  # RLIMIT_NPROC (the kernel counts all processes of the real user)
    file_bytes: int | None = 1 * GIB  # RLIMIT_FSIZE: the largest file a candidate may write
    cpu_seconds: int | None = None  # RLIMIT_CPU; None = the call's timeout (rounded up) + 1
    output_bytes: int = 4_000_000  # output kept: the first and the last half of this


@dataclass(frozen=True)
class Scope:
    """What the current thread's processes belong to and how they run (set by the evaluation pool)."""

    owner: object | None = None  # kill_processes(owner) ends them (cancellation)
    scratch: Path | None = None  # the evaluation's scratch folder: the only writable place
    read_only: tuple[Path, ...] = ()  # more folders to show (the source file's folder, for includes)
    limits: Limits = field(default_factory=Limits)
    required: bool = False  # refuse to run candidates without bubblewrap


@dataclass(frozen=True)
class Status:
    active: bool
    reason: str  # what isolates candidates, or why nothing does

    def describe(self) -> str:
        if self.active:
            return f"sandbox: active ({self.reason})"
        return (f"sandbox: not active ({self.reason}); candidates run with rlimits and a scrubbed environment "
                "only: they can read and write what you can")


@dataclass
class ProcResult:
    returncode: int | None  # None when it timed out
    output: str  # stdout + stderr, the middle cut when long, secrets removed
    seconds: float
    timed_out: bool
    sandboxed: bool = False  # ran inside bubblewrap
    result: str | None = None  # what the process wrote to its result channel (result_channel=True)
    output_bytes: int = 0  # how much output the process wrote in all


_scope = threading.local()
_running: dict[object, set[subprocess.Popen[bytes]]] = {}
_running_lock = threading.Lock()
_status: dict[str, Status] = {}
_status_lock = threading.Lock()


def set_process_scope(owner: object | None, scratch: Path | None = None, read_only: Iterable[Path] = (),
                      limits: Limits | None = None, required: bool = False) -> None:
    """Processes this thread starts from now on belong to `owner` (see kill_processes) and run under
    these limits, with `scratch` as their writable folder."""
    _scope.value = Scope(owner, Path(scratch) if scratch else None, tuple(Path(p) for p in read_only),
                         limits or Limits(), required)
    _scope.owner = owner  # read by runners that register processes in _running themselves


def current_scope() -> Scope:
    return getattr(_scope, "value", None) or Scope()


def kill_processes(owner: object) -> None:
    """Kill every process group started on behalf of `owner` that is still running (cancellation)."""
    with _running_lock:
        procs = list(_running.get(owner, ()))
    for proc in procs:
        _kill_group(proc.pid)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def truncate_output(text: str, limit: int = LOG_LIMIT, line_limit: int = LINE_LIMIT) -> str:
    lines = []
    for line in text.splitlines():
        lines.append(line if len(line) <= line_limit else line[:line_limit] + " [...]")
    out = "\n".join(lines)
    if len(out) > limit:
        half = limit // 2
        out = out[:half] + f"\n[... {len(out) - limit} characters cut ...]\n" + out[-half:]
    return out


# ---- is bubblewrap usable here? --------------------------------------------------------------------

def bwrap_path() -> str | None:
    chosen = os.environ.get(BWRAP_ENV)
    if chosen is not None:
        return None if chosen.lower() in ("", "none", "off") else chosen
    return shutil.which("bwrap")


def _namespace_args(user_ns: bool) -> list[str]:
    args = ["--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    if not user_ns:
        return args
    # A user namespace of its own keeps even uid 0 powerless outside it. Inside it, root becomes nobody,
    # which (unlike a capability-less root) may still nest a sandbox of its own: the NKI emulator runs the
    # kernel in one. Further user namespaces stay allowed for that reason (no --disable-userns).
    return args + ["--unshare-user"] + (["--uid", "65534", "--gid", "65534"] if os.geteuid() == 0 else [])


_user_ns: dict[str, bool] = {}


def status(refresh: bool = False) -> Status:
    """Whether candidates run in bubblewrap here; probed once per bwrap path (a real sandboxed /bin/true)."""
    path = bwrap_path()
    key = path or ""
    with _status_lock:
        if key in _status and not refresh:
            return _status[key]
        _status[key] = found = _probe(path)
        return found


def _probe(path: str | None) -> Status:
    if not sys.platform.startswith("linux"):
        return Status(False, f"bubblewrap needs Linux namespaces; this is {sys.platform}")
    if path is None:
        if os.environ.get(BWRAP_ENV) is not None:
            return Status(False, f"disabled by {BWRAP_ENV}={os.environ[BWRAP_ENV]!r}")
        return Status(False, "bubblewrap (bwrap) not found: install it (Debian/Ubuntu: apt-get install bubblewrap)")
    if not os.access(path, os.X_OK):
        return Status(False, f"bubblewrap not found at {path}")
    errors = []
    for user_ns in (True, False):
        argv = [path, *_namespace_args(user_ns), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                "--tmpfs", "/tmp", "--", "/bin/true"]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.SubprocessError) as exc:
            return Status(False, f"bubblewrap failed to start: {exc}")
        if done.returncode == 0:
            _user_ns[path] = user_ns
            version = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
            extra = "" if user_ns else ", without a user namespace"
            return Status(True, f"{version or 'bubblewrap'}: read-only system, writable scratch only, no network, "
                                f"own PID namespace{extra}")
        errors.append(done.stderr.strip() or f"exit {done.returncode}")
    return Status(False, f"bubblewrap cannot create namespaces here ({errors[-1][:200]}); "
                         "user namespaces may be disabled (sysctl kernel.unprivileged_userns_clone, a container)")


# ---- the pieces of one sandboxed call --------------------------------------------------------------

def sandbox_env(env: dict[str, str] | None, home: str, tmpdir: str) -> dict[str, str]:
    """The environment a candidate gets: the allowlist of speedpatch's own, plus what the caller set."""
    base = os.environ
    source = base if env is None else env
    secrets = known_secrets()
    out: dict[str, str] = {}
    for name, value in source.items():
        set_by_caller = env is not None and base.get(name) != value
        if is_secret_name(name) or any(s in value for s in secrets):
            continue
        if set_by_caller or name in ALLOWED_ENV or name.startswith(ALLOWED_ENV_PREFIXES):
            out[name] = value
    out.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    out["HOME"], out["TMPDIR"] = home, tmpdir
    return out


def _rlimits(limits: Limits, timeout: float) -> list[tuple[int, int]]:
    cpu = limits.cpu_seconds or int(math.ceil(timeout)) + 1
    wanted = [(resource.RLIMIT_AS, limits.memory_bytes), (resource.RLIMIT_NPROC, limits.processes),
              (resource.RLIMIT_FSIZE, limits.file_bytes), (resource.RLIMIT_CPU, cpu)]
    out = []
    for which, value in wanted:
        if value is None:
            continue
        _, hard = resource.getrlimit(which)
        out.append((which, value if hard == resource.RLIM_INFINITY else min(value, hard)))
    return out


_PRLIMIT_NAMES = {resource.RLIMIT_AS: "as", resource.RLIMIT_NPROC: "nproc", resource.RLIMIT_FSIZE: "fsize",
                  resource.RLIMIT_CPU: "cpu"}


def _with_rlimits(argv: list[str], rlimits: list[tuple[int, int]]) -> tuple[list[str], Callable[[], None] | None]:
    """argv run under the rlimits: through util-linux prlimit (an exec, safe in a threaded server), else
    through a preexec hook (macOS)."""
    prlimit = shutil.which("prlimit")
    if prlimit:
        return [prlimit, *(f"--{_PRLIMIT_NAMES[w]}={v}" for w, v in rlimits), "--", *argv], None

    def apply() -> None:
        for which, value in rlimits:
            resource.setrlimit(which, (value, value))

    return argv, apply


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _masked_roots() -> list[Path]:
    roots = [Path(d) for d in MASKED_DIRS]
    home = os.environ.get("HOME")
    if home and Path(home).is_absolute() and Path(home) != Path("/") and Path(home) not in roots:
        roots.append(Path(home))
    return roots


def _argv_paths(argv: Sequence[str]) -> list[Path]:
    """Absolute paths named on a (trusted) command line: `/x`, `-I/x`, `--extlib=/x`, and the same inside
    a shell command string (`sh -c "/opt/tool/run {binary}"`, the gemmini-command backend's)."""
    words: list[str] = []
    for arg in argv:
        words.append(arg)
        if any(c.isspace() for c in arg):
            try:
                words += shlex.split(arg)
            except ValueError:  # unbalanced quotes: the words as they stand
                words += arg.split()
    found = []
    for arg in words:
        if arg.startswith("-") and "=/" in arg:
            arg = arg.split("=", 1)[1]
        elif arg.startswith("-") and arg[2:3] == "/":
            arg = arg[2:]
        if arg.startswith("/") and "\n" not in arg and "\0" not in arg:
            found.append(Path(arg))
    return found


def _env_paths(env: dict[str, str]) -> list[Path]:
    """Absolute paths in the (already filtered) environment: PYTHONPATH, LD_LIBRARY_PATH, CUDA_HOME, and
    what the backend set itself (a Neuron installation's PYTHONPATH from [backend.nki-neuron] env)."""
    found = []
    for name, value in env.items():
        if name in ("HOME", "TMPDIR"):
            continue
        found += [Path(part) for part in value.split(os.pathsep) if part.startswith("/") and "\n" not in part]
    return found


_static_binds: dict[str, list[Path]] = {}


def _static_read_only() -> list[Path]:
    """What any build or Python candidate needs to see: Python, speedpatch, its cache, the PATH tools."""
    key = "\0".join([os.environ.get("PATH", ""), os.environ.get("XDG_CACHE_HOME", ""), os.environ.get("HOME", ""),
                     str(sys.path)])
    if key not in _static_binds:
        here = Path(__file__).resolve().parent
        import speedpatch

        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "speedpatch"
        paths = [Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix), Path(sys.executable).parent,
                 here, Path(speedpatch.__file__).resolve().parent, cache]
        paths += [Path(p) for p in sys.path if p and os.path.isabs(p)]
        paths += [Path(p) for p in os.environ.get("PATH", "").split(os.pathsep) if p and os.path.isabs(p)]
        _static_binds[key] = paths
    return _static_binds[key]


def _bind_list(paths: Iterable[Path], masked: list[Path]) -> list[Path]:
    """The existing paths that lie under a masked folder (elsewhere the read-only root shows them), less
    those inside another one of them (bound with it)."""
    found: set[Path] = set()
    for path in paths:
        try:
            real = path.resolve()
        except (OSError, RuntimeError):
            continue
        if real.exists() and real not in masked and any(_inside(real, m) for m in masked):
            found.add(real)
    return sorted(p for p in found if not any(other != p and _inside(p, other) for other in found))


_layouts: dict[tuple[str, ...], list[str]] = {}


def _layout(masked: list[Path]) -> list[str]:
    """The mounts every sandbox gets: tmpfs over the masked folders, the hidden host secrets. The host's
    layout does not change while speedpatch runs: computed once."""
    key = tuple(str(m) for m in masked)
    if key not in _layouts:
        args: list[str] = []
        for root in sorted(masked, key=lambda m: len(m.parts)):  # $HOME under /tmp or /home: its own, after
            if root.is_dir():
                args += ["--size", str(TMPFS_BYTES), "--tmpfs", str(root)]
        for hidden in HIDDEN_FILES if os.geteuid() == 0 else ():  # others cannot read them anyway
            if os.path.isfile(hidden):
                args += ["--ro-bind", "/dev/null", hidden]
        for hidden in HIDDEN_DIRS if os.geteuid() == 0 else ():
            if os.path.isdir(hidden):
                args += ["--size", "4096", "--tmpfs", hidden, "--remount-ro", hidden]
        _layouts[key] = args
    return _layouts[key]


_fixed: dict[tuple[str, ...], list[Path]] = {}


def _fixed_read_only(env: dict[str, str]) -> list[Path]:
    """The binds that depend only on speedpatch's installation and the environment, resolved once per
    distinct environment (resolving paths costs more than starting bubblewrap)."""
    key = tuple(sorted(f"{k}={v}" for k, v in env.items()))
    if key not in _fixed:
        _fixed[key] = _bind_list([*_static_read_only(), *_env_paths(env)], _masked_roots())
    return _fixed[key]


def bwrap_argv(bwrap: str, argv: list[str], cwd: Path, writable: Path, read_only: Iterable[Path],
               devices: Iterable[str], user_ns: bool, fixed: Sequence[Path] = ()) -> list[str]:
    """The bubblewrap command line for argv (see the module docstring for the layout). `fixed`: binds
    already resolved by _bind_list."""
    masked = _masked_roots()
    args = [bwrap, *_namespace_args(user_ns), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            *_layout(masked)]
    for pattern in devices:
        for node in sorted(glob.glob(pattern)):
            args += ["--dev-bind", node, node]
    scratch = writable.resolve()
    # the scratch folder is the candidate's own: paths inside it (its sources, objects) stay writable
    shown = {*fixed, *_bind_list(read_only, masked)}
    binds = [(p, "--ro-bind") for p in shown if not _inside(p, scratch)
             and not any(other != p and _inside(p, other) for other in shown)]
    binds.append((scratch, "--bind"))
    for path, how in sorted(binds, key=lambda b: len(b[0].parts)):  # parents before children
        args += [how, str(path), str(path)]
    return [*args, "--chdir", str(cwd.resolve()), "--", *argv]


# ---- running ----------------------------------------------------------------------------------------

class _Drain(threading.Thread):
    """Reads a pipe to its end, keeping the first and last `keep // 2` bytes: a process that writes
    gigabytes costs time, never memory or disk, and its last lines (where results are printed) survive."""

    def __init__(self, fd: int, keep: int) -> None:
        super().__init__(daemon=True)
        self.fd, self.half = fd, max(1, keep // 2)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def run(self) -> None:
        try:
            while True:
                chunk = os.read(self.fd, 65536)
                if not chunk:
                    break
                self.total += len(chunk)
                room = self.half - len(self.head)
                if room > 0:
                    self.head += chunk[:room]
                    chunk = chunk[room:]
                if chunk:
                    self.tail += chunk
                    if len(self.tail) > 2 * self.half:  # trim now and then, not on every chunk
                        del self.tail[: len(self.tail) - self.half]
        except OSError:
            pass
        finally:
            os.close(self.fd)

    def text(self) -> str:
        tail = self.tail[-self.half:]
        cut = self.total - len(self.head) - len(tail)
        middle = f"\n[... {cut} bytes of output cut ...]\n".encode() if cut > 0 else b""
        return bytes(self.head + middle + tail).decode("utf-8", "replace")


def _feed(pipe: IO[bytes], data: bytes) -> None:
    try:
        with pipe:
            pipe.write(data)
    except (BrokenPipeError, OSError):
        pass  # the process stopped reading: its business


def run_process(
    argv: list[str],
    cwd: Path,
    timeout: float,
    env: dict[str, str] | None = None,
    input_text: str | None = None,
    max_output: int | None = None,
    *,
    trusted: bool = False,
    read_only: Iterable[Path] = (),
    devices: Iterable[str] = (),
    limits: Limits | None = None,
    result_channel: bool = False,
    pass_fds: Sequence[int] = (),
    raw_exit: bool = False,
) -> ProcResult:
    """Run a command in its own process group with a time limit, sandboxed unless `trusted`.

    read_only: more paths to show inside the sandbox (paths on the command line are shown already).
    devices: device-node globs to bind (DEVICES["nvidia"], DEVICES["neuron"]); device runs have no
        address-space limit (GPU runtimes reserve far more address space than they use).
    result_channel: give the process a pipe of its own, named by $SPEEDPATCH_RESULT_FD, whose contents
        come back as ProcResult.result however much the process prints.
    pass_fds: descriptors the process inherits under the same numbers (a verdict file the caller reads).
    raw_exit: keep the exit status as the sandbox reports it. By default 128+N reads as death by signal N
        (-N, as Popen says), but a program may itself exit with 128+N (Spike: 128 + the trap cause).
    """
    start = time.monotonic()
    scope = current_scope()
    cwd = Path(cwd)
    devices = tuple(devices)
    limits = _call_limits(limits or scope.limits, devices)
    command = _command(argv, cwd, timeout, env, trusted, scope, limits, [*read_only], devices)
    if isinstance(command, ProcResult):
        return command
    started = _start(command, argv[0], cwd, input_text, max_output or limits.output_bytes, result_channel,
                     pass_fds, scope.owner)
    if isinstance(started, ProcResult):
        return started
    timed_out = _wait(started.proc, timeout, scope.owner)
    return _collect(started, command.sandboxed, raw_exit, timed_out, start)


@dataclass
class _Command:
    """How one call's process is started: its argv (wrapped in bubblewrap and prlimit, or as given), its
    environment and, where no prlimit exists, the hook that sets its rlimits."""

    argv: list[str]
    env: dict[str, str] | None
    preexec: Callable[[], None] | None = None
    sandboxed: bool = False  # inside bubblewrap


@dataclass
class _Started:
    proc: subprocess.Popen[bytes]
    output: _Drain  # stdout + stderr
    result: _Drain | None  # the result channel, when asked for


def _call_limits(limits: Limits, devices: tuple[str, ...]) -> Limits:
    """The limits of one call: device runs have no address-space limit (GPU runtimes reserve far more
    address space than they use)."""
    return replace(limits, memory_bytes=None) if devices else limits


def _writable(scope: Scope, cwd: Path) -> Path:
    """The one writable folder: the scope's scratch folder when cwd lies inside it, else cwd."""
    return scope.scratch if scope.scratch and _inside(cwd.resolve(), scope.scratch.resolve()) else cwd


def _command(argv: list[str], cwd: Path, timeout: float, env: dict[str, str] | None, trusted: bool, scope: Scope,
             limits: Limits, read_only: list[Path], devices: tuple[str, ...]) -> _Command | ProcResult:
    """argv as it is started: as given (trusted), in bubblewrap under rlimits, or, where bubblewrap is not
    usable, under rlimits alone (a ProcResult refuses that when the scope requires the sandbox)."""
    if trusted:
        return _Command(list(argv), env)
    sandbox = status()
    if not sandbox.active and scope.required:
        return ProcResult(126, f"refused: [sandbox] required = true, but {sandbox.describe()}", 0.0, False)
    writable = _writable(scope, cwd)
    command, preexec = _with_rlimits(list(argv), _rlimits(limits, timeout))
    if not sandbox.active:
        return _Command(command, sandbox_env(env, str(writable), str(writable)), preexec)
    home = os.environ.get("HOME") or "/root"
    run_env = sandbox_env(env, home if Path(home).is_absolute() else "/root", "/tmp")
    bwrap = bwrap_path()
    assert bwrap is not None
    shown = [*scope.read_only, *read_only, *_argv_paths(argv)]
    wrapped = bwrap_argv(bwrap, command, cwd, writable, shown, devices, _user_ns.get(bwrap, False),
                         fixed=_fixed_read_only(run_env))
    return _Command(wrapped, run_env, preexec, sandboxed=True)


def _start(command: _Command, name: str, cwd: Path, input_text: str | None, keep: int, result_channel: bool,
           pass_fds: Sequence[int], owner: object) -> _Started | ProcResult:
    """Start the process with its output (and result channel) on pipes read by _Drain threads and its
    input fed by another; a ProcResult says why it could not start."""
    out_r, out_w = os.pipe()
    res_r, res_w = os.pipe() if result_channel else (-1, -1)
    env = command.env
    if result_channel:
        env = dict(os.environ if env is None else env)
        env[RESULT_FD_ENV] = str(res_w)
    try:
        proc = _spawn(command, env, cwd, input_text is not None, out_w,
                      (*pass_fds, *((res_w,) if result_channel else ())), owner)
    except OSError as exc:
        for fd in (out_r, res_r):
            if fd >= 0:
                os.close(fd)
        return ProcResult(127, f"cannot start {name}: {exc}", 0.0, False)
    finally:
        for fd in (out_w, res_w):  # the child has its copies; ours would keep the pipes from ending
            if fd >= 0:
                os.close(fd)
    started = _Started(proc, _Drain(out_r, keep), _Drain(res_r, RESULT_LIMIT) if result_channel else None)
    for drain in _drains(started):
        drain.start()
    if input_text is not None and proc.stdin is not None:
        threading.Thread(target=_feed, args=(proc.stdin, input_text.encode()), daemon=True).start()
    return started


def _spawn(command: _Command, env: dict[str, str] | None, cwd: Path, piped_input: bool, out_w: int,
           pass_fds: tuple[int, ...], owner: object) -> subprocess.Popen[bytes]:
    """Popen in a session of its own, registered for kill_processes(owner)."""
    # started and registered under the lock: a cancel (kill_processes) in between would miss it
    with _running_lock:
        proc = subprocess.Popen(
            command.argv, cwd=cwd, env=env,
            stdin=subprocess.PIPE if piped_input else subprocess.DEVNULL,
            stdout=out_w, stderr=out_w, start_new_session=True, pass_fds=pass_fds,
            preexec_fn=command.preexec,  # only where no prlimit exists (macOS); see _with_rlimits
        )
        _running.setdefault(owner, set()).add(proc)
    return proc


def _drains(started: _Started) -> list[_Drain]:
    return [started.output] + ([started.result] if started.result is not None else [])


def _wait(proc: subprocess.Popen[bytes], timeout: float, owner: object) -> bool:
    """Wait up to `timeout` seconds, then end the process group whatever happened; whether it timed out."""
    try:
        proc.wait(timeout=timeout)
        return False
    except subprocess.TimeoutExpired:
        return True
    finally:
        # Nothing outlives the call: bubblewrap's PID namespace takes its whole tree down with it; without
        # it the group is killed (a process that left the group escapes: said in the status).
        _kill_group(proc.pid)
        proc.wait()
        with _running_lock:
            _running.get(owner, set()).discard(proc)


def _collect(started: _Started, sandboxed: bool, raw_exit: bool, timed_out: bool, start: float) -> ProcResult:
    """The ProcResult of an ended process: its output and result channel read to their end (or given up
    on), secrets removed, its exit status as Popen would say it."""
    for drain in _drains(started):
        drain.join(timeout=2.0)  # a writer that escaped the group may hold the pipe: do not wait for it
    secrets = known_secrets()
    text = redact(started.output.text(), secrets)
    result = redact(started.result.text(), secrets) if started.result is not None else None
    code = _exit_status(started.proc.returncode, sandboxed, raw_exit)
    return ProcResult(None if timed_out else code, truncate_output(text), time.monotonic() - start,
                      timed_out, sandboxed, result, started.output.total)


def _exit_status(code: int | None, sandboxed: bool, raw_exit: bool) -> int | None:
    """bubblewrap reports a death by signal N as 128+N: read it as Popen would (-N), unless `raw_exit`."""
    if sandboxed and not raw_exit and code is not None and 128 < code < 128 + signal.NSIG:
        return 128 - code
    return code
