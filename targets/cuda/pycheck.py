"""The solution part of a KernelBench `.py` problem, read as a Python syntax tree, not as text.

Text rules fall to re-spelling (`getattr(torch, "re" + "lu")`, `__import__("os")`, `eval`). This check walks
the tree and allows a small language: imports of torch, torch.nn, torch.utils.cpp_extension and math;
definitions; `load_inline(...)` of the CUDA sources; a `ModelNew` whose methods compute with the extension.
Rejected, with the line: any name or attribute that reaches code by a string or reflection (eval, exec,
compile, __import__, importlib, getattr/setattr/delattr, globals/locals/vars, dunder attributes, open),
other imports (os, sys, ctypes, subprocess, threading...), torch internals that change the measurement
(torch.cuda streams/events/graphs/synchronize, the device-generic torch.Stream/Event/accelerator and
get_device_module, torch.backends (allow_tf32), torch._C, torch.ops, torch.library, torch.compile/jit,
process-wide module hooks and function modes, which run inside the baseline's and reference's calls too),
a torch module or function used as a value (`t = torch` would carry every later path past the check; only
types such as dtypes and classes may be values), a path from a module through anything but torch's own
namespaces (`torch.utils.cpp_extension.os`, `torch.nn.functional.torch.cuda`: modules carry the modules they
imported), private attributes past `self`, `type()`, format strings whose fields walk attributes, class patterns whose keywords read
attributes (`case object(gi_frame=...)`), class keywords (a metaclass), assignments to anything but local names and `self.` attributes
(monkeypatching the runner, torch or the timer), `global`/`nonlocal`, and try/except (a fallback to the
reference op when the kernel fails). What load_inline compiles is read whole: its sources (names of strings
bound once), the `functions` it writes into the bindings (identifiers), and macros defined in the flags (numbers).

Which torch ops actually run is checked where they run: kernelbench_runner.py records the ops ModelNew
dispatches (TorchDispatchMode) and rejects any outside allocation, views and copies.
"""

from __future__ import annotations

import ast
import re
import string
from typing import Any

from speedpatch.targets import cfamily
from speedpatch.targets.base import Finding

ALLOWED_IMPORTS = {"torch", "torch.nn", "torch.nn.functional", "torch.utils.cpp_extension", "math", "__future__", "typing"}
FORBIDDEN_NAMES = {"eval", "exec", "compile", "__import__", "getattr", "setattr", "delattr", "globals", "locals",
                   "vars", "open", "breakpoint", "input", "__builtins__", "__loader__", "__spec__", "importlib",
                   "memoryview", "exit", "quit",
                   # help("name") imports the module of that name (pydoc), running its import-time code
                   "help",
                   # modules the harness part may have imported: the solution may not use them either
                   "os", "sys", "subprocess", "ctypes", "builtins", "shutil", "socket", "threading",
                   "multiprocessing", "inspect", "gc", "signal", "pickle", "marshal", "io", "pathlib",
                   # type(name, bases, namespace) makes a class whose dunders (`__del__`, `__torch_function__`) are
                   # dictionary keys, strings the syntax tree does not read; type(obj) hands out any object's class
                   "type"}
# Attributes that reach files or native memory from a tensor: `x.numpy()` (an ndarray: `.tofile`, and `.ctypes`,
# which carries the ctypes module), `torch.from_file` / `UntypedStorage.from_file` (read, or map and write, a file).
FORBIDDEN_ATTRIBUTES = {"numpy", "tofile", "from_file", "ctypes"}
# Frames and code objects: a running generator's `g.gi_frame.f_back` is its caller's frame, and `.f_back` again
# the runner's, whose `.f_globals` hold the comparison and the nonce (red-team: passed this check). Every
# attribute that hands out a frame, walks frames or reads one's namespaces is refused, on any object.
FRAME_ATTRIBUTES = {"gi_frame", "cr_frame", "ag_frame", "tb_frame", "tb_next", "f_back", "f_globals", "f_locals",
                    "f_builtins", "f_code", "gi_code", "cr_code", "ag_code", "gi_yieldfrom", "cr_await", "ag_await",
                    "co_consts", "co_code"}
# The namespaces a path from an imported module may pass through on its way to what it names, with the names
# allowed below each (None: any public name; a class, capitalized, may also be passed through). Modules are
# objects whose attributes include the modules they imported: `torch.os`, `torch.utils.cpp_extension.subprocess`,
# `torch.nn.functional.torch.cuda` and `typing.sys` are paths to os, subprocess, torch.cuda and sys.modules that
# no rule on `torch.cuda...` or on the name `os` sees (red-team: each passed this check).
NAMESPACES: dict[str, set[str] | None] = {
    "torch": None, "torch.nn": None, "torch.nn.functional": None, "torch.nn.init": None, "torch.linalg": None,
    "torch.fft": None, "torch.special": None, "torch.utils": {"cpp_extension"},
    "torch.utils.cpp_extension": {"load_inline"}, "math": None, "__future__": None,
    "torch.cuda": {"is_available", "current_device"},  # queries; the rest of torch.cuda is refused below
    # typing's types and cast; get_type_hints evaluates string annotations (code the tree never read), and so does
    # ForwardRef("...").evaluate() (Python 3.14): only the types an annotation is written with
    "typing": {"cast", "Any", "Optional", "Union", "List", "Tuple", "Dict", "Set", "FrozenSet", "Sequence", "Mapping",
               "Iterable", "Iterator", "Callable", "Type", "TypeVar", "Generic", "Literal", "Final", "ClassVar",
               "TYPE_CHECKING", "NoReturn", "Annotated"},
}
ALLOWED_DUNDERS = {"__init__", "__name__"}
# Tensor subclasses: the runner compares the output with torch ops, which keep a subclass's type and call its
# methods (`bad.sum()`), so an output of the solution's own tensor class could pass any comparison.
TENSOR_CLASSES = {"torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter"}
SUBCLASSING = {"as_subclass", "_make_subclass", "_make_wrapper_subclass"}
TENSOR_CLASS = re.compile(r"(?:Tensor|Parameter|Buffer)$")  # torch.FloatTensor, torch.nn.UninitializedParameter...
# torch attributes a solution may not touch (prefix match on the dotted path from a torch import).
FORBIDDEN_TORCH = ("torch.cuda", "torch.backends", "torch.ops", "torch.library", "torch.compile", "torch.jit",
                   "torch.fx", "torch.hub", "torch.load", "torch.save", "torch.manual_seed", "torch.autograd",
                   "torch.utils.cpp_extension.load", "torch.distributed", "torch.multiprocessing",
                   # device-generic streams and events, and torch.cuda itself by another name
                   "torch.Stream", "torch.Event", "torch.accelerator", "torch.get_device_module", "torch.xpu",
                   "torch.mps", "torch.mtia",
                   # process-wide hooks and modes: they run inside the baseline's and the reference's calls too
                   "torch.nn.modules", "torch.overrides")
# A torch path used as a value (not called, not the base of a longer path): only types. A module or function
# kept in a variable (`t = torch`, `f = torch.nn.functional`, `def forward(self, x, m=torch)`) would take
# every later path through it past the check above.
TORCH_VALUE = re.compile(r"^torch(?:\.\w+)*\.(?:[A-Z]\w*|u?int\d*|float\d*\w*|half|double|bfloat16|bool|long|short|"
                         r"cfloat|cdouble|complex\d+|q?u?int\d+|dtype|device|contiguous_format|channels_last\w*|preserve_format|"
                         r"strided|inf|nan|pi|e)$")
# torch.utils._python_dispatch tells a model whether a dispatch mode is active: whether the runner records it
FORBIDDEN_TORCH_PREFIXES = ("torch._", "torch.utils._", "torch.set_", "torch.use_deterministic")
# From torch.utils.cpp_extension only load_inline, with the keywords that say what to compile and how to
# optimize it. Refused: where it is built (`build_directory`: the runner reads the linked symbols of the
# extensions built in the candidate's own folder, so one built elsewhere was never read) and what it links
# or includes from elsewhere (`extra_ldflags=["-lcublas"]`, include paths).
LOAD_INLINE = "torch.utils.cpp_extension.load_inline"
LOAD_INLINE_KEYWORDS = {"name", "cpp_sources", "cuda_sources", "functions", "extra_cflags", "extra_cuda_cflags",
                        "verbose", "with_cuda", "is_python_module", "with_pytorch_error_handling"}
LOAD_INLINE_POSITIONAL = 3  # name, cpp_sources, cuda_sources (the order of the later ones changed across versions)
# Compiler flags that link, load or include something from outside the sources (per flag, also after
# -Xcompiler/-Xptxas-style prefixes and inside comma lists): `-lineinfo` is nvcc's, not a library.
# `-wrapper prog,args` makes gcc run `prog` in place of each of its subprograms: a process of the solution's while
# the extension builds (red-team: passed as `extra_cflags=["-wrapper", ...]` and as nvcc's `-Xcompiler -wrapper,...`;
# g++ and nvcc both ran the given shell here). `--library`/`--library-path` are nvcc's long -l/-L.
FORBIDDEN_FLAG = re.compile(r"(?:^|[\s,=])(?:-l(?!ineinfo\b)\S|-L|-Wl,|-Xlinker|--linker-options|-B|-fplugin|-specs"
                            r"|-include|--pre-include|-imacros|-I|-isystem|-iquote|-idirafter|--include-path"
                            r"|-ccbin|--compiler-bindir|-load|-wrapper|--library|@"
                            # flags read from a file, and files written where the flag says
                            r"|-optf|--options-file|-MF|--dependency-output|-aux-info|-save-temps|-dumpdir|-dumpbase"
                            r"|-keep-dir|--keep-dir)")
# A macro defined on the command line is source text the source rules never read: `-DGET=PyImport_ImportModule`
# and a source calling GET(...), or `-DCAT(a,b)=a##b`, reached the Python C API past them (red-team). A
# definition there may name a switch or a number (`-DNDEBUG`, `-DBLOCK=256`); code is defined in the sources.
# torch writes the flags unquoted into build.ninja, and ninja runs each command through /bin/sh: `;`, `|`, `>`,
# backquotes or a line break in a flag ran a command of the solution's, or a rule of its own, during the build
# (red-team: "-O3; touch /tmp/x" passed). A flag is written with letters, digits and - _ = , . + : and spaces.
FLAG_TEXT = re.compile(r"^[A-Za-z0-9_=,.+: -]*$")
DEFINE_FLAG = re.compile(r"(?:^|[\s,=])(?:-D|--define-macro)[\s=]*([^\s,]*)")
PLAIN_DEFINE = re.compile(r"^[A-Za-z_]\w*(?:=[-+]?(?:\d[\w.+-]*)?)?$")
# The extension's C++ runs inside the runner's process: through the Python C API or pybind11's object API it
# would reach the runner itself (its comparison, the nonce) and any module. An honest kernel's C++ needs
# neither (load_inline's `functions=` writes the bindings; `PYBIND11_MODULE` with `m.def` and `py::arg` stay
# allowed). Read as text with comments removed; token pasting and asm labels are refused too, since either
# would build a name these rules cannot see. The linked-symbol check on the GPU host is the second line.
SOURCE_ARGUMENTS = {"cpp_sources": 1, "cuda_sources": 2}  # keyword -> position
CPP_FORBIDDEN = [
    (re.compile(r"\b_?Py[A-Za-z_]\w*"), "the Python C API"),
    (re.compile(r"\bTHP\w+"), "torch's Python bindings"),
    (re.compile(r"\b(?:py|pybind11)\s*::\s*(?!arg\b)\w+"), "pybind11's Python object API"),
    (re.compile(r"\b(?:using\s+namespace\s+|namespace\s+\w+\s*=\s*)(?:py|pybind11)\b"), "pybind11's namespace"),
    (re.compile(r"(?:\.|::)\s*(?:attr|import|ptr|inc_ref|dec_ref)\s*\("), "a Python object's attributes or a Python import"),
    # pybind11's free functions, found by argument-dependent lookup from PYBIND11_MODULE's module object
    (re.compile(r"\b(?:getattr|setattr|hasattr|delattr|isinstance|iter|repr|eval|exec|eval_file|reinterpret_borrow"
                r"|reinterpret_steal)\s*(?:<[^<>]*>)?\s*\("), "pybind11's Python object API"),
    (re.compile(r"\b(?:PyInterpreter|\w*DispatchModeTLS|PythonTorchFunctionTLS)\b"), "torch's Python dispatch state"),
    (re.compile(r"#\s*include\s*[<\"](?:Python\.h|pybind11/|torch/csrc/|torch/python\.h)"), "a Python header"),  # on text with strings
    # torch's dispatcher: a kernel registered for an aten op (TORCH_LIBRARY_IMPL(aten, CUDA, m) { m.impl("isclose",
    # ...) }) answers the runner's comparison and the reference for the whole process; a dispatch key excluded or a
    # redispatch below the Python key hides the ops the runner records
    (re.compile(r"\b(?:TORCH_LIBRARY\w*|Dispatcher|RegisterOperators|redispatch\w*|\w*DispatchKey\w*Guard"
                r"|tls_\w*dispatch_key\w*)\b"), "torch's dispatcher and dispatch keys"),
    (re.compile(r"##"), "token pasting (a name built out of sight)"),
    (re.compile(r"\)\s*(?:__asm__|__asm|asm)\s*\(\s*\""), "an asm label (a symbol named by a string)"),
]
# Names are read in the code, not in comments nor string and character literals (cfamily.code_text): a message
# such as "PyTorch tensor expected" is text, not a call (a name in a string reaches nothing without dlsym, which
# the symbol check refuses).
ALLOWED_TORCH_CUDA = {"torch.cuda.current_device", "torch.cuda.is_available"}


def _dotted(node: ast.AST) -> str:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def check(solution: str, line_offset: int = 0) -> list[Finding]:
    """Findings for the solution part of a KernelBench file (its first line is line `line_offset`)."""
    try:
        tree = ast.parse(solution)
    except SyntaxError as exc:
        return [Finding("python", f"the solution is not valid Python: {exc.msg}", line_offset + (exc.lineno or 1) - 1, 0)]
    findings: list[Finding] = []
    # name -> module path it stands for (the harness part imports these for the solution)
    aliases: dict[str, str] = {"torch": "torch", "nn": "torch.nn", "load_inline": LOAD_INLINE}

    def add(node: ast.AST, message: str) -> None:
        findings.append(Finding("python", message, line_offset + getattr(node, "lineno", 1) - 1,
                                getattr(node, "col_offset", 0)))

    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    # the solution's classes and their methods: a method taken from its class (`Helper.peek(obj)`) runs with any
    # object as `self`, and `self._...` is allowed only because `self` is the model's own
    methods: dict[str, set[str]] = {}
    for c in ast.walk(tree):
        if isinstance(c, ast.ClassDef):  # its functions, and names bound in its body to anything but constants
            methods.setdefault(c.name, set()).update(  # (`peek2 = peek`; `BLOCK = 256` stays readable as a constant)
                {f.name for f in c.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
                | {t.id for a in c.body if isinstance(a, (ast.Assign, ast.AnnAssign)) and a.value is not None
                   and not all(isinstance(v, ast.Constant) for v in ast.walk(a.value) if isinstance(v, ast.expr)
                               and not isinstance(v, (ast.Tuple, ast.List, ast.UnaryOp)))
                   for t in (a.targets if isinstance(a, ast.Assign) else [a.target]) if isinstance(t, ast.Name)})
    for node in ast.walk(tree):
        owner = _dotted(node.value).rpartition(".")[2] if isinstance(node, ast.Attribute) else ""
        if (isinstance(node, ast.Attribute) and owner and node.attr in methods.get(owner, set())
                and node.attr not in ALLOWED_DUNDERS):
            add(node, f"takes the method `{owner}.{node.attr}` from its class: called so, its `self` is "
                      f"whatever is passed, not the model (call methods on the object: `self.{node.attr}(...)`)")
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name not in ALLOWED_IMPORTS:
                    add(node, f"imports `{alias.name}`: a solution may import only {', '.join(sorted(ALLOWED_IMPORTS))}")
                aliases[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level or module not in ALLOWED_IMPORTS:
                add(node, f"imports from `{module or '.'}`: a solution may import only {', '.join(sorted(ALLOWED_IMPORTS))}")
            for alias in node.names:
                if alias.name == "*":
                    add(node, f"`from {module} import *` hides what the solution uses")
                aliases[alias.asname or alias.name] = f"{module}.{alias.name}"
        elif isinstance(node, ast.Name) and (node.id in FORBIDDEN_NAMES
                                             or (_dunder(node.id) and isinstance(node.ctx, ast.Load))):
            add(node, f"uses `{node.id}`: it reaches code by a string or by reflection")
        elif isinstance(node, ast.Attribute):
            if node.attr.startswith("__") and node.attr not in ALLOWED_DUNDERS:
                add(node, f"uses the attribute `{node.attr}`: reflection on objects, modules or frames")
            elif node.attr.startswith("_") and node.attr not in ALLOWED_DUNDERS and not _method_self(node.value, parents):
                add(node, f"uses the private attribute `{node.attr}`: an object's internals (`x.numpy().ctypes._ctypes` "
                          "is the ctypes module); only the model's own `self._...` state is the solution's")
            elif node.attr in ("format", "format_map") and not _plain_format(node.value):
                add(node, f"uses `.{node.attr}` on a format string that is not written out or whose fields read "
                          "attributes or items (`\"{0.forward.__globals__}\".format(self)`): a replacement field walks "
                          "objects as the syntax tree cannot see")
            elif node.attr in FORBIDDEN_ATTRIBUTES:
                add(node, f"uses `.{node.attr}`: it reaches files or native memory from a tensor, not a kernel")
            elif node.attr in FRAME_ATTRIBUTES:
                add(node, f"uses `.{node.attr}`: a frame or code object reaches its callers' globals (the runner's)")
            elif node.attr in SUBCLASSING:
                add(node, f"uses `{node.attr}`: a tensor of a class of the solution's could answer the runner's comparison")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and _dunder(node.name):
            add(node, f"defines `{node.name}`: a solution's objects may not change how Python or torch treat them "
                      "(a tensor that answers the runner's comparison, a finalizer, a context that swallows errors)")
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id == "self":
            add(node, "assigns to `self`: `self.` is the model's own state only as the method's own first argument")
        elif isinstance(node, ast.arg) and node.arg == "self" and not _method_self_arg(node, parents):
            add(node, "names a parameter `self` outside a method's first argument: `self._...` is the model's own "
                      "state only there (a function's `self` could be any object, `self._x` its internals)")
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and _dunder(node.id):
            add(node, f"defines `{node.id}`: a solution's objects may not change how Python or torch treat them")
        elif isinstance(node, ast.MatchClass) and node.kwd_attrs:
            add(node, f"matches a class pattern with keyword attributes (`{ast.unparse(node)[:60]}`): each keyword reads "
                      "the attribute it names, as the syntax tree cannot see (`case object(gi_frame=object(f_back=F))` "
                      "walks frames to the runner's globals); compare values, or read attributes as `obj.name`")
        elif isinstance(node, ast.ClassDef) and node.keywords:
            add(node, f"passes the class `{node.name}` keywords ({', '.join(str(k.arg) for k in node.keywords)}): a "
                      "metaclass or a base's __init_subclass__ runs code as the class is made, with its namespace")
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            add(node, "`global`/`nonlocal` state outlives a call: results could be cached across calls")
        elif isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            add(node, "try/except: a fallback (to the reference op) when the kernel fails is not a solution")
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                for sub in ast.walk(target):
                    if isinstance(sub, (ast.Attribute, ast.Subscript)) and not _own_state(sub):
                        add(node, f"assigns to `{ast.unparse(sub)}`: only local names and `self.` attributes may "
                                  "be assigned (no patching of torch, the runner or the timer)")
                        break
    inline_calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and _resolves(node.func, aliases) == LOAD_INLINE]
    constants = _module_constants(tree, inline_calls, parents)
    bound = _bindings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                path = _dotted(base.value if isinstance(base, ast.Subscript) else base)
                head, _, rest = path.partition(".")
                full = (aliases.get(head, head) + ("." + rest if rest else "")) if path else ""
                if full in TENSOR_CLASSES or (full.startswith("torch.") and TENSOR_CLASS.search(full)):
                    add(node, f"subclasses `{full}`: a tensor subclass's methods run inside the runner's comparison "
                              "(an output whose sum() says 0 would pass any check)")
                elif not path or (head not in aliases and head not in methods and head in bound):
                    # `T = torch.Tensor` then `class Liar(T)` (red-team: passed), or a base a call returns; a name
                    # the solution never binds is the harness part's (`class ModelNew(Model)`) or a builtin
                    add(node, f"subclasses `{ast.unparse(base)[:60]}`: a base class is named where it is defined or "
                              "imported (a name assigned a class, or a call's result, could be torch.Tensor)")
        # a path through an imported name counts too (`from torch import Stream`, then `Stream()`)
        if isinstance(node, ast.Attribute) or (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
                                               and node.id in aliases):
            path = _dotted(node)
            head, _, rest = path.partition(".")
            full = (aliases.get(head, head) + ("." + rest if rest else "")) if path else ""
            if head in aliases and "." in full:
                step = _namespace_step(full)
                if step:
                    add(node, step)
            if not full.startswith("torch"):
                continue
            parent = parents.get(node)
            allowed_below = isinstance(parent, ast.Attribute) and f"{full}.{parent.attr}" in ALLOWED_TORCH_CUDA
            if full not in ALLOWED_TORCH_CUDA and not allowed_below and (
                    any(full == p or full.startswith(p + ".") for p in FORBIDDEN_TORCH)
                    or full.startswith(FORBIDDEN_TORCH_PREFIXES)):
                add(node, f"uses `{full}`: streams, events, backend switches and torch internals change the "
                          "measurement, not the kernel")
            parent = parents.get(node)
            used_as_value = not ((isinstance(parent, ast.Attribute) and parent.value is node)
                                 or (isinstance(parent, ast.Call) and parent.func is node))
            if used_as_value and not TORCH_VALUE.match(full):
                add(node, f"uses `{full}` as a value (kept in a variable, passed or returned): a solution names torch's "
                          "modules and functions where it calls them, so the check above sees every path")
        if node in inline_calls:
            _check_load_inline(node, add, constants)
            _check_sources(node, constants, line_offset, findings)
    unique = {(f.line, f.column, f.message): f for f in findings}
    return sorted(unique.values(), key=lambda f: (f.line, f.column))


def _resolves(node: ast.AST, aliases: dict[str, str]) -> str:
    """The dotted path `node` names, with its first name read through the solution's imports."""
    path = _dotted(node)
    head, _, rest = path.partition(".")
    return (aliases.get(head, head) + ("." + rest if rest else "")) if path else ""


def _check_load_inline(node: ast.Call, add: Any, constants: dict[str, ast.AST]) -> None:
    """load_inline's arguments: what to compile, not where to build it or what else to link or include."""
    if len(node.args) > LOAD_INLINE_POSITIONAL or any(isinstance(a, ast.Starred) for a in node.args):
        add(node, f"passes load_inline more than {LOAD_INLINE_POSITIONAL} positional arguments: name the others")
    names = [k.value for k in node.keywords if k.arg == "name"] + node.args[:1]
    for name in names:
        # the build folder is TORCH_EXTENSIONS_DIR/<name>: a path there would build it outside the checked folder
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str) and name.value.isidentifier()):
            add(name, f"passes load_inline the name `{ast.unparse(name)[:60]}`: an extension's name is an identifier "
                      "written out (it names its build folder inside the runner's)")
    for keyword in node.keywords:
        if keyword.arg is None:
            add(keyword, "passes load_inline `**` arguments: its keywords must be written out")
        elif keyword.arg == "extra_ldflags" and isinstance(keyword.value, (ast.List, ast.Tuple)) and all(
                isinstance(item, ast.Constant) and item.value == "" for item in keyword.value.elts):
            pass  # `extra_ldflags=[""]`, as KernelBench's own example writes it: links nothing
        elif keyword.arg not in LOAD_INLINE_KEYWORDS:
            add(keyword, f"passes load_inline `{keyword.arg}`: an extension is built in the runner's folder for it "
                         "(whose linked symbols are checked) from its own sources, linking nothing else")
        elif keyword.arg in ("extra_cflags", "extra_cuda_cflags"):
            flags = keyword.value
            items = flags.elts if isinstance(flags, (ast.List, ast.Tuple)) else [flags]
            for item in items:
                if not (isinstance(item, ast.Constant) and isinstance(item.value, str)):
                    add(item, f"`{keyword.arg}` holds `{ast.unparse(item)}`: compiler flags must be written out "
                              "as strings")
                elif not FLAG_TEXT.match(item.value):
                    add(item, f"`{keyword.arg}` holds {item.value!r}: torch writes compiler flags unquoted into the "
                              "build file the shell runs, so a flag is written with letters, digits, spaces and "
                              "- _ = , . + : only")
                elif FORBIDDEN_FLAG.search(item.value):
                    add(item, f"`{keyword.arg}` holds {item.value!r}: flags that link, load or include files from "
                              "outside the solution's sources, or write files, are not a kernel")
            written = " ".join(i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str))
            for definition in DEFINE_FLAG.findall(written):
                if not PLAIN_DEFINE.match(definition):
                    add(flags, f"`{keyword.arg}` defines the macro {definition!r}: a definition on the command line "
                               "may name a switch or a number (-DNDEBUG, -DBLOCK=256); code is defined in the sources, "
                               "where it is read")
        elif keyword.arg == "is_python_module" and not (isinstance(keyword.value, ast.Constant)
                                                        and keyword.value.value is True):
            add(keyword, "passes load_inline `is_python_module` other than True: the library would be loaded by "
                         "torch.ops.load_library (ctypes), past the runner's check of an extension before it is loaded")
        elif keyword.arg == "functions":
            value = keyword.value
            _check_functions(constants.get(value.id, value) if isinstance(value, ast.Name) else value, add)


def _check_functions(value: ast.AST, add: Any) -> None:
    """load_inline writes `m.def("NAME", NAME, "DOC")` into the C++ it compiles, NAME and DOC unescaped: a name
    or docstring holding `")` and code put C++ that the source rules never read into the extension (red-team)."""
    names: list[ast.AST | None]
    docs: list[ast.AST]
    if isinstance(value, ast.Dict):
        names, docs = list(value.keys), list(value.values)
    else:
        names, docs = (list(value.elts) if isinstance(value, (ast.List, ast.Tuple)) else [value]), []
    for name in names:
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str) and name.value.isidentifier()):
            add(name if name is not None else value, f"`functions` names `{ast.unparse(name)[:60] if name else '**'}`: "
                "load_inline writes each name into the C++ bindings it compiles, so it is an identifier written out")
    for doc in docs:
        if not (isinstance(doc, ast.Constant) and isinstance(doc.value, str)
                and not any(c in doc.value for c in '"\\\n')):
            add(doc, f"`functions` gives the docstring `{ast.unparse(doc)[:60]}`: load_inline writes it into the C++ "
                     "bindings unescaped, so it is a string written out without quotes, backslashes or line breaks")


def _bindings(tree: ast.Module) -> dict[str, int]:
    """How many times each name is bound anywhere in the module (assigned, augmented, a loop or `with` target, `:=`,
    a parameter, a definition, an import, a pattern capture), in any scope."""
    counts: dict[str, int] = {}

    def bind(name: str | None) -> None:
        if name:
            counts[name] = counts.get(name, 0) + 1

    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bind(node.id)
        elif isinstance(node, ast.arg):
            bind(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bind(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bind(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)):
            bind(node.name)
        elif isinstance(node, ast.MatchMapping):
            bind(node.rest)
        elif isinstance(node, ast.ExceptHandler):
            bind(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                bind(name)
    return counts


def _module_constants(tree: ast.Module, inline_calls: list[ast.Call],
                      parents: dict[ast.AST, ast.AST]) -> dict[str, ast.AST]:
    """Names assigned at module level and bound nowhere else, to the value they were assigned (red-team:
    `relu_source += "..."`, a second assignment inside `if True:`, a `for` target, `:=` or a parameter of the
    same name changed the source after the assignment that was read). A name holding a list or a dict (which
    `.append`, `[0] = ` or any function it is passed to can change) is read only where load_inline takes it."""
    counts = _bindings(tree)
    found: dict[str, ast.AST] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            found[stmt.targets[0].id] = stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            found[stmt.target.id] = stmt.value

    def taken_by_load_inline(name: ast.Name) -> bool:  # the value of a call's argument, through lists and `+`
        node: ast.AST = name
        while isinstance(parents.get(node), (ast.List, ast.Tuple, ast.BinOp)):
            node = parents[node]
        parent = parents.get(node)
        if isinstance(parent, ast.keyword):
            parent = parents.get(parent)
        return parent in inline_calls

    mutable = {name for name, value in found.items()
               if any(isinstance(n, (ast.List, ast.Dict, ast.Set)) for n in ast.walk(value))}
    kept = {name: value for name, value in found.items() if counts.get(name) == 1}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in mutable
                and not taken_by_load_inline(node)):
            kept.pop(node.id, None)
    return kept


def _source_pieces(node: ast.AST, constants: dict[str, ast.AST], depth: int = 0) -> list[ast.Constant] | None:
    """The string constants a source argument is made of (literals, lists of them, `+`, names of module-level
    constants), or None when it is computed some other way."""
    if depth > 8:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node]
    parts: list[ast.AST] = []
    if isinstance(node, (ast.List, ast.Tuple)):
        parts = list(node.elts)
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        parts = [node.left, node.right]
    elif isinstance(node, ast.Name) and node.id in constants:
        parts = [constants[node.id]]
    else:
        return None
    pieces: list[ast.Constant] = []
    for part in parts:
        found = _source_pieces(part, constants, depth + 1)
        if found is None:
            return None
        pieces += found
    return pieces


def _check_sources(node: ast.Call, constants: dict[str, ast.AST], line_offset: int, findings: list[Finding]) -> None:
    """The C++ and CUDA sources given to load_inline: written out, and without the Python C API."""
    given = {k.arg: k.value for k in node.keywords if k.arg in SOURCE_ARGUMENTS}
    for keyword, position in SOURCE_ARGUMENTS.items():
        if keyword not in given and len(node.args) > position:
            given[keyword] = node.args[position]
    for keyword, value in given.items():
        pieces = _source_pieces(value, constants)
        if pieces is None:
            findings.append(Finding("python", f"`{keyword}` is `{ast.unparse(value)[:60]}`: the extension's sources "
                                    "must be written out as strings (or names of strings assigned once, lists used only there), so that "
                                    "what is read is what is compiled",
                                    line_offset + value.lineno - 1, value.col_offset))
            continue
        for piece in pieces:
            text = cfamily.code_text(str(piece.value))  # str by construction
            code = cfamily.code_text(str(piece.value), literals=False)
            for include in cfamily.file_reads(str(piece.value)):
                why = cfamily.unsafe_include(include)
                if why:  # the build quotes a file it cannot parse, and the log goes back to the LLM
                    findings.append(Finding("python", f"the extension's source has `{include.line}` ({why}): it "
                                            "includes only the compiler's, CUDA's and torch's headers",
                                            line_offset + piece.lineno - 1, 0))
            for pattern, what in CPP_FORBIDDEN:
                hit = pattern.search(text if what == "a Python header" else code)
                if hit:
                    line = line_offset + piece.lineno - 1 + text[: hit.start()].count("\n")
                    findings.append(Finding("python", f"the extension's source uses `{hit.group(0).strip()}` "
                                            f"({what}): its C++ runs in the runner's process, where that would reach "
                                            "the runner itself, not compute a kernel", line, 0))


def _namespace_step(full: str) -> str:
    """Why the last step of `full` (a path from an imported module) leaves the namespaces a solution may name,
    or '' when it does not."""
    outer, _, name = full.rpartition(".")
    if outer in NAMESPACES:
        allowed = NAMESPACES[outer]
        if allowed is None or name in allowed:
            return ""
    elif outer.rpartition(".")[2][:1].isupper() or TORCH_VALUE.match(outer):
        return ""  # a class's or a dtype's attribute (`torch.nn.Module.__init__`, `torch.float32.itemsize`)
    return (f"uses `{full}`: a path from an imported module may pass only through "
            f"{', '.join(sorted(n for n in NAMESPACES if NAMESPACES[n] is None))} (and torch.utils.cpp_extension's "
            "load_inline, typing's annotation types) and classes; other modules' attributes are the modules they imported "
            "(`torch.os`, `torch.utils.cpp_extension.subprocess`, `typing.sys`)")


def _method_self_arg(arg: ast.arg, parents: dict[ast.AST, ast.AST]) -> bool:
    """Whether `arg` is the first positional parameter of a function defined directly in a class body."""
    arguments = parents.get(arg)
    function = parents.get(arguments) if arguments is not None else None
    return (isinstance(arguments, ast.arguments) and isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
            and isinstance(parents.get(function), ast.ClassDef)
            and bool(arguments.posonlyargs + arguments.args) and (arguments.posonlyargs + arguments.args)[0] is arg)


def _method_self(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """`self` read inside a method whose first parameter it is (parameters named `self` elsewhere are refused)."""
    if not (isinstance(node, ast.Name) and node.id == "self"):
        return False
    scope = parents.get(node)
    while scope is not None:  # the innermost function binding `self` (closures inside a method see the method's)
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            bound = [a for a in scope.args.posonlyargs + scope.args.args + scope.args.kwonlyargs if a.arg == "self"]
            if bound:
                return _method_self_arg(bound[0], parents)
        scope = parents.get(scope)
    return False


def _plain_format(node: ast.AST) -> bool:
    """A format string written out whose replacement fields name arguments only (`{}`, `{0}`, `{name}`), without
    `.attribute` or `[item]`: str.format evaluates those paths itself, dunders included."""
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return False

    def fields(text: str, depth: int = 0) -> list[str]:  # field names, also those nested in a format spec
        parsed = list(string.Formatter().parse(text))
        return [f for _, name, spec, _ in parsed for f in ([name] if name else [])
                + (fields(spec, depth + 1) if spec and depth < 2 else [])]

    try:
        names = fields(node.value)
    except ValueError:
        return False
    return not any("." in f or "[" in f for f in names)


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__") and name not in ALLOWED_DUNDERS


def _own_state(node: ast.AST) -> bool:
    """`self.x = ...`, `self.x[i] = ...`, `local[i] = ...`: the model's or the function's own state."""
    base = node
    while isinstance(base, (ast.Attribute, ast.Subscript)):
        base = base.value
    if not isinstance(base, ast.Name):
        return False
    if base.id == "self":
        return True
    return isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)  # a local container
