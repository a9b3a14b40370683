"""The kernel process of an isolated NKI evaluation: starting it in its own sandbox, the message pipes,
its log, and ending it. Stdlib only, so that the runner can start it before it imports anything else
(the kernel process boots while the trusted side builds inputs and references)."""

from __future__ import annotations

import json
import os
import resource
import shutil
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

KERNEL_SIDE = Path(__file__).resolve().parent / "kernel_side.py"
_HEADER = struct.Struct(">I")
MAX_MESSAGE = 64 << 20
_DUMPS = json.JSONEncoder(separators=(",", ":")).encode
KERNEL_LOG_LIMIT = 64_000  # characters of the kernel process's own output kept


class ProtocolError(Exception):
    """The kernel process broke the protocol or went away (a crash, an exit, a hang cut by its deadline)."""


class KernelProcess:
    """The sandboxed process running kernel_side.py on the candidate's kernel module."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.proc: subprocess.Popen[bytes] | None = None
        self.isolation = ""
        self.source = ""
        self.deadline = 0.0
        self._drainer: threading.Thread | None = None
        self._wfd = -1
        self.log: list[str] = []
        self._log_size = 0

    def append_log(self, text: str) -> None:
        if self._log_size < KERNEL_LOG_LIMIT:
            self.log.append(text)
            self._log_size += len(text)

    def start(self, source: str, ends_at: float, isolation: str, cwd: str | Path) -> None:
        """Boot the kernel process on `source` (it loads the module without waiting for anything); it
        stops itself at `ends_at` (time.time(); 0 for never), printing where it was."""
        self.deadline = deadline = max(0.0, ends_at - time.time()) if ends_at else 0.0
        to_kernel_r, to_kernel_w = os.pipe()
        from_kernel_r, from_kernel_w = os.pipe()
        prefix, user, why = sandbox_command(isolation, Path(cwd))
        self.isolation = why
        # -I -S: no environment, no user or site directories (nor their .pth hooks); only NumPy's folder is
        # added back, for kernels that import it.
        argv = [*prefix, sys.executable, "-I", "-S", str(KERNEL_SIDE), self.filename, f"{ends_at:.3f}",
                str(from_kernel_w), _numpy_folder()]
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
               "MKL_NUM_THREADS": "1"}
        _not_dumpable()
        try:
            try:
                self.proc = self._spawn(argv, to_kernel_r, from_kernel_w, env, "/" if prefix else str(cwd), deadline,
                                        user)
            except PermissionError:
                if user is None:
                    raise
                # 'nobody' cannot read this Python installation (e.g. under /root): same process, own rlimits.
                self.isolation = "separate process with rlimits only (user nobody cannot run this Python)"
                self.proc = self._spawn(argv, to_kernel_r, from_kernel_w, env, str(cwd), deadline, None)
        finally:
            os.close(to_kernel_r)
            os.close(from_kernel_w)
        self._wfd = to_kernel_w
        self._rfile = os.fdopen(from_kernel_r, "rb", buffering=1 << 16)
        self._drainer = threading.Thread(target=self._drain, daemon=True)
        self._drainer.start()
        self.source = source
        self.send(["source", source])

    @staticmethod
    def _spawn(argv: list[str], stdin: int, request_fd: int, env: dict[str, str], cwd: str, deadline: float,
               user: int | None) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, pass_fds=(request_fd,), env=env,
            cwd=cwd, start_new_session=True, preexec_fn=_limits(deadline, user is not None), user=user,
            group=user, extra_groups=[] if user is not None else None,
        )

    def _drain(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.append_log(raw.decode("utf-8", "replace"))

    def send(self, message: list[Any]) -> None:
        data = _DUMPS(message).encode()
        view = memoryview(_HEADER.pack(len(data)) + data)
        try:
            while view:
                view = view[os.write(self._wfd, view):]
        except OSError as exc:
            raise ProtocolError("the kernel process went away") from exc

    def receive(self) -> list[Any]:
        head = self._rfile.read(4)
        if len(head) < 4:
            raise ProtocolError("the kernel process exited before finishing")
        (size,) = _HEADER.unpack(head)
        if size > MAX_MESSAGE:
            raise ProtocolError(f"the kernel process sent a {size}-byte message")
        data = self._rfile.read(size)
        try:
            message = json.loads(data)
        except (ValueError, RecursionError) as exc:  # RecursionError: a deeply nested message
            raise ProtocolError("the kernel process sent a malformed message") from exc
        if not isinstance(message, list) or len(message) < 3 or not isinstance(message[0], str) \
                or not isinstance(message[2], list):
            raise ProtocolError("the kernel process sent a malformed message")
        return message

    def stop(self) -> str:
        """End the kernel process (and everything it started); its output."""
        if self._wfd < 0:
            return "".join(self.log)
        try:
            self.send(["exit"])
        except ProtocolError:
            pass
        if self.proc is not None:
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(self.proc.pid, 9)
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.wait()
        for close in (lambda: os.close(self._wfd), lambda: self._rfile.close()):
            try:
                close()
            except (OSError, AttributeError):
                pass
        if self._drainer is not None:
            self._drainer.join(timeout=2)  # its last output (a deadline dump) is read to the end
        self._wfd = -1
        return "".join(self.log)


def _limits(deadline: float, dropped: bool) -> Callable[[], None]:
    def apply() -> None:
        # The kernel process holds no tensor data: 2 GiB of address space is plenty for Python + NumPy.
        _lower(resource.RLIMIT_AS, 2 << 30)
        _lower(resource.RLIMIT_FSIZE, 1 << 20)
        if deadline > 0:
            _lower(resource.RLIMIT_CPU, int(deadline) + 5)
        if dropped:  # the 'nobody' fallback: few processes of its own
            _lower(resource.RLIMIT_NPROC, 32)
        _die_with_parent()

    return apply


def _lower(which: int, value: int) -> None:
    """Set a limit, never above the one already in force (an outer sandbox may have set a lower one)."""
    try:
        _, hard = resource.getrlimit(which)
        cap = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (cap, cap))
    except (ValueError, OSError):  # a limit this system does not support (macOS: RLIMIT_AS)
        pass


def _numpy_folder() -> str:
    """The folder NumPy is installed in ('' if none), found without importing it."""
    try:
        import importlib.util

        spec = importlib.util.find_spec("numpy")
    except (ImportError, ValueError):
        return ""
    if spec is None or not spec.submodule_search_locations:
        return ""
    return str(Path(list(spec.submodule_search_locations)[0]).parent)


def _die_with_parent() -> None:
    """The kernel process is killed when the trusted process dies, however it dies (its own deadline, a
    kill): prctl(PR_SET_PDEATHSIG, SIGKILL). Bubblewrap does the same with --die-with-parent."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None).prctl(1, 9, 0, 0, 0)
        except (OSError, AttributeError):
            pass


def _not_dumpable() -> None:
    """Keep processes of the same user (the kernel process, if it escapes its sandbox) out of this one's
    memory and descriptors (/proc/PID/mem, /proc/PID/fd, ptrace): prctl(PR_SET_DUMPABLE, 0)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


_BWRAP_OK: dict[str, bool] = {}


def bwrap_usable() -> bool:
    """Whether bubblewrap can start a fully unshared process here (it cannot in some containers)."""
    if "ok" not in _BWRAP_OK:
        path = shutil.which("bwrap")
        ok = False
        if path:
            try:
                ok = subprocess.run([path, *_bwrap_args(Path("/tmp")), "true"], capture_output=True,
                                    timeout=10).returncode == 0
            except (OSError, subprocess.TimeoutExpired):
                ok = False
        _BWRAP_OK["ok"] = ok
    return _BWRAP_OK["ok"]


def _bwrap_args(cwd: Path) -> list[str]:
    # Read-only system; no /proc (nothing of the trusted process to look at), private /tmp, the scratch
    # folder hidden, every namespace unshared (no network, own PIDs), killed with the trusted process.
    args = ["--ro-bind", "/", "/", "--dev", "/dev", "--tmpfs", "/proc", "--tmpfs", "/tmp"]
    masked = [Path("/tmp")]
    if str(cwd) not in ("/", "/tmp"):
        args += ["--tmpfs", str(cwd)]
        masked.append(Path(cwd))
    # what the kernel process runs from must stay visible when it lives under a masked folder (a clone or
    # a virtual environment in /tmp): the Python installation and this package's isolation folder
    for needed in _runtime_paths():
        if any(needed == m or m in needed.parents for m in masked) and needed.exists():
            args += ["--ro-bind", str(needed), str(needed)]
    return [*args, "--unshare-all", "--die-with-parent", "--new-session", "--chdir", "/"]


def _runtime_paths() -> list[Path]:
    """Folders the kernel process reads: the interpreter (venv and base installation) and kernel_side.py."""
    paths = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), Path(sys.executable).parent.resolve(),
             Path(__file__).resolve().parent}
    for entry in (Path(sys.prefix), Path(sys.executable).parent):  # the unresolved spellings too (symlinks)
        paths.add(entry.absolute())
    return sorted(paths)


def sandbox_command(isolation: str, cwd: Path) -> tuple[list[str], int | None, str]:
    """(argv prefix, uid to drop to, description) for the kernel process."""
    if isolation in ("auto", "bwrap") and bwrap_usable():
        return ["bwrap", *_bwrap_args(cwd)], None, "bubblewrap (own namespaces, read-only system, no /proc)"
    if os.geteuid() == 0:
        return [], 65534, "separate process as user nobody (bubblewrap unavailable)"
    return [], None, "separate process with rlimits only (bubblewrap unavailable)"
