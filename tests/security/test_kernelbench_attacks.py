"""KernelBench solutions that count their calls. The trusted runner (targets/cuda/kernelbench_runner.py) calls
ModelNew a fixed number of times, fixed by its command line (--seeds, --warmup, --trials): a model that counts
its calls (in `self`, or in a static of its extension) knows which call is the one whose dispatched ops are
recorded, which outputs are checked and which calls are only timed.

The parts that need torch and a CUDA device run on the GPU host; the syntax-tree and symbol rules, and the
draw of the recorded calls, run anywhere."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import pytest
from speedpatch.targets.cuda import pycheck

REPO = Path(__file__).resolve().parents[2]
KB = (REPO / "examples" / "cuda" / "kernelbench_relu.py").read_text()
SOLUTION = KB[KB.index("# speedpatch: solution") + len("# speedpatch: solution\n"):]
HONEST_FORWARD = "return relu.relu_cuda(x.contiguous())"


def runner():
    sys.path.insert(0, str(REPO / "targets" / "cuda"))
    import kernelbench_runner

    return kernelbench_runner


def test_a_model_cannot_ask_whether_a_dispatch_mode_records_its_call() -> None:
    code = SOLUTION.replace(HONEST_FORWARD, "if torch.utils._python_dispatch._get_current_dispatch_mode() is None:\n"
                                            "            return x.relu()\n        " + HONEST_FORWARD)
    found = [f.message for f in pycheck.check(code)]
    assert any("torch.utils._python_dispatch" in m for m in found), found


def test_an_extension_that_asks_whether_a_dispatch_mode_is_active_is_foreign() -> None:
    # c10::impl::TorchDispatchModeTLS::get_stack_len(): the C++ side of the same question
    assert runner().FOREIGN_SYMBOL.search("_ZN3c104impl20TorchDispatchModeTLS13get_stack_lenEv")


def test_the_calls_whose_ops_are_recorded_are_drawn_per_run_inside_the_timing_loop() -> None:
    kb = runner()
    draws = [kb.recorded_trials(100) for _ in range(2)]
    assert all(len(d) == kb.RECORDED_CALLS and d <= set(range(100)) for d in draws), draws
    assert draws[0] != draws[1]  # equal with probability 1 / C(100, 8)
    assert kb.recorded_trials(3) == {0, 1, 2}


needs_cuda_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None,
    reason="torch is not installed on this machine: the runner's timing loop runs on the GPU host")


def _time(kb, candidate, recorded: set[int], trials: int = 10, fresh: bool = False):
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device visible to torch")

    class Reference(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(x)

    models = {"reference": Reference(), "baseline": Reference(), "candidate": candidate}
    sets = [[torch.randn(4096, device="cuda")] for _ in range(3)]
    wants = [torch.relu(s[0]) for s in sets]
    args = argparse.Namespace(warmup=1, trials=trials, seed=0)
    flush = torch.empty(1 << 20, dtype=torch.int32, device="cuda")
    def make() -> list:
        return [torch.randn(4096, device="cuda")]

    return kb.time_models(torch, models, sets, flush, args, wants, recorded, make if fresh else None)


@needs_cuda_torch
def test_a_model_that_runs_the_reference_op_after_its_first_call_is_rejected() -> None:
    import torch

    kb = runner()

    class Counter(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.calls = 0

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.calls += 1
            return torch.empty_like(x).copy_(x.clamp(min=0)) if self.calls == 1 else torch.relu(x)

    with pytest.raises(kb.Stop) as stop:
        _time(kb, Counter(), kb.recorded_trials(10))
    assert stop.value.status == "rejected" and "aten::relu" in stop.value.message, stop.value.message


@needs_cuda_torch
def test_a_model_that_skips_the_work_in_calls_it_knows_are_only_timed_is_incorrect() -> None:
    import torch

    kb = runner()

    class Skipper(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.calls = 0

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.calls += 1
            out = torch.empty_like(x)
            return out if 1 < self.calls < 11 else out.copy_(x.clamp(min=0))  # right in the last timed call

    with pytest.raises(kb.Stop) as stop:
        _time(kb, Skipper(), set())  # one warm-up, then ten timed calls: the 11th is the last
    assert stop.value.status == "incorrect" and "in the timing loop" in stop.value.message, stop.value.message


# Red-team: load_inline's arguments were not read. `build_directory` put the extension outside the folder whose
# .so files the runner reads for linked symbols (so cuBLAS, streams or dlopen in it were never seen), and
# `extra_ldflags` / linker flags in the compiler flags linked a library into it.
LOAD_INLINE_ATTACKS = [
    ('build_directory="."', "`build_directory`"),
    ('extra_ldflags=["-lcublas"]', "`extra_ldflags`"),
    ('extra_include_paths=["/tmp"]', "`extra_include_paths`"),
    ('extra_cuda_cflags=["-O3", "-Xlinker", "-lcublas"]', "'-lcublas'"),
    ('extra_cflags=["-O3 -Wl,--whole-archive"]', "'-O3 -Wl,--whole-archive'"),
    ('extra_cflags=["-fplugin=/tmp/p.so"]', "-fplugin"),
    # gcc runs the wrapper in place of cc1plus and as: a process of the solution's during the build
    ('extra_cflags=["-wrapper", "/bin/sh,-c,true"]', "'-wrapper'"),
    ('extra_cuda_cflags=["-Xcompiler", "-wrapper,/bin/sh,-c,true"]', "'-wrapper,/bin/sh,-c,true'"),
    ('extra_cuda_cflags=["--compiler-options=-wrapper,/bin/sh"]', "-wrapper"),
    ('extra_cuda_cflags=["--library=cublas"]', "'--library=cublas'"),
    # flags read from a file (the extension's own sources, where comments hold anything), and files written where
    # the flag says: the result file the verdict is read from is two folders up
    ('extra_cuda_cflags=["--options-file", "cuda.cu"]', "'--options-file'"),
    ('extra_cflags=["-aux-info", "../../speedpatch_result.json"]', "'-aux-info'"),
    ('extra_cflags=["-MF../../speedpatch_result.json"]', "-MF"),
    # torch writes the flags unquoted into build.ninja, whose commands run through /bin/sh
    ('extra_cflags=["-O3; touch /tmp/pwned"]', "written with letters, digits"),
    ('extra_cuda_cflags=["-O3 `id`"]', "written with letters, digits"),
    ('extra_cflags=["-O3 | sh"]', "written with letters, digits"),
    ('extra_cflags=["-O3\\nrule own\\n  command = sh"]', "written with letters, digits"),
    ("extra_cflags=FLAGS", "compiler flags must be written out"),
    ("**OPTIONS", "`**` arguments"),
]
NAME_ATTACKS = ['"../torch_ext_problem/speedpatch_relu"', "EXTENSION_NAME"]


@pytest.mark.parametrize("name", NAME_ATTACKS)
def test_the_extensions_name_is_an_identifier_written_out(name: str) -> None:
    # its build folder is TORCH_EXTENSIONS_DIR/<name>: a path would put it outside the folder the runner reads
    code = SOLUTION.replace('name="speedpatch_relu"', f"name={name}")
    assert code != SOLUTION
    found = [f.message for f in pycheck.check(code)]
    assert any("an extension's name is an identifier" in m for m in found), found


@pytest.mark.parametrize(("argument", "named"), LOAD_INLINE_ATTACKS)
def test_load_inline_builds_in_the_checked_folder_and_links_nothing_else(argument: str, named: str) -> None:
    code = SOLUTION.replace("verbose=False,", f"verbose=False,\n    {argument},")
    assert code != SOLUTION
    found = [f.message for f in pycheck.check(code)]
    assert any(named in m for m in found), found


def test_compiler_flags_that_only_optimize_pass() -> None:
    flags = '["-O3", "--use_fast_math", "-lineinfo", "-gencode=arch=compute_90,code=sm_90", "-Xptxas=-v", "-DNDEBUG"]'
    code = SOLUTION.replace("verbose=False,", f"verbose=False,\n    extra_cuda_cflags={flags},\n    extra_cflags=['-O3'],")
    assert pycheck.check(code) == []


@pytest.mark.parametrize("symbol", [
    "_ZN2at4cuda2mmERKNS_6TensorES3_",  # at::cuda::mm(const Tensor&, const Tensor&): cuBLAS, no dispatcher
    "_ZN2at4cuda6mm_outERNS_6TensorERKS1_S4_",
    "_ZN2at6native4reluERKNS_6TensorE",
    "_ZN2at25compositeexplicitautograd3addERKNS_6TensorES3_d",
    "_ZN2at4cuda4blas4gemmIfEEvcclllN3c1016OptionalArrayRefIlEEPKT_lS8_lS5_PS6_l",  # ATen's cuBLAS wrapper
    "_ZN2at4cuda24getCurrentCUDABlasHandleEv",
])
def test_torch_kernels_called_past_the_dispatcher_are_foreign(symbol: str) -> None:
    # The recorded ops are what passes through the dispatcher; these compute without passing it.
    assert runner().FOREIGN_SYMBOL.search(symbol)


@pytest.mark.parametrize("symbol", ["_ZN2at4cuda26getCurrentDevicePropertiesEv", "_ZN2at4cuda9warp_sizeEv",
                                    "_ZNK2at10TensorBase8data_ptrIfEEPT_v"])
def test_device_queries_and_tensor_accessors_are_not_foreign(symbol: str) -> None:
    assert not runner().FOREIGN_SYMBOL.search(symbol)


@needs_cuda_torch
def test_a_model_that_keeps_outputs_by_input_content_never_meets_timed_inputs_it_has_seen() -> None:
    import torch

    kb = runner()

    class Memo(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.kept: list = []
            self.hits = 0

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for seen, out in self.kept:
                if torch.equal(seen, x):
                    self.hits += 1
                    return out.clone()
            out = x.clamp(min=0)
            self.kept.append((x.clone(), out.clone()))
            return out

    memo = Memo()
    _time(kb, memo, set(), fresh=True)  # one warm-up on a seed's set, then ten trials on fresh sets
    assert memo.hits == 0, f"{memo.hits} timed calls met inputs the model had kept"


# The known-open route of the previous pass: the extension's C++ runs in the runner's process, so through the
# Python C API or pybind11's object API it reached the runner's module (its comparison, the nonce). The sources
# are now read; each line below, added to the example's CUDA source, was accepted before.
CPP_ATTACKS = [
    ('PyObject* runner = PyImport_ImportModule("__main__");', "`PyObject`"),
    ('static auto runner = py::module_::import("__main__");', "`py::module_`"),
    ("namespace P = pybind11;", "`namespace P = pybind11`"),
    ("using namespace pybind11;", "`using namespace pybind11`"),
    ("#define CAT(a, b) a##b", "`##`"),
    # no namespace named: the module object of PYBIND11_MODULE reaches pybind11 by its type and by ADL
    ('PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { auto r = decltype(m)::import("__main__"); }', "`::import(`"),
    ('PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { setattr(getattr(m, "__dict__"), "x", m); }', "`setattr(`"),
    ('extern "C" void* load(const char*) __asm__("PyImport_" "ImportModule");', 'asm label'),
    ("#include <Python.h>", "Python header"),
    ('#include "pybind11/eval.h"', "Python header"),
    ("static void* wrap = (void*)&THPVariable_Wrap;", "`THPVariable_Wrap`"),
    ("static int depth() { return c10::impl::TorchDispatchModeTLS::stack_len(); }", "`TorchDispatchModeTLS`"),
    # read with comments removed, by a reader that took a string's "/*" for a comment's start: the call between
    # the two strings was blanked with the "comment"; and a splice (backslash, line end: `\\\\` in the Python
    # source is one backslash in the string) split the name where the rules looked for it
    ('const char* a = "/*"; static void* m = PyImport_ImportModule("__main__"); const char* b = "*/";',
     "`PyImport_ImportModule`"),
    ('static void* m = (void*)&P\\\\\nyImport_ImportModule;', "`PyImport_ImportModule`"),
]


@pytest.mark.parametrize(("line", "named"), CPP_ATTACKS)
def test_the_extensions_source_may_not_reach_python_from_inside_the_runner(line: str, named: str) -> None:
    code = SOLUTION.replace("#include <torch/extension.h>\n", "#include <torch/extension.h>\n" + line + "\n")
    assert code != SOLUTION
    found = pycheck.check(code)
    assert any(named in f.message for f in found), [f.message for f in found]
    assert any(SOLUTION.splitlines()[f.line - 1].startswith("#include <torch/extension.h>") for f in found), \
        "the finding names the line of the source string it is on"


@pytest.mark.parametrize("line", ['#include "/etc/passwd"', "#include <../../../etc/passwd>", "#import <cuda.h>"])
def test_the_extensions_source_reads_no_file_outside_the_include_folders(line: str) -> None:
    # the build's error quotes a file it cannot parse, and the log goes back to the LLM
    code = SOLUTION.replace("#include <torch/extension.h>\n", "#include <torch/extension.h>\n" + line + "\n")
    assert code != SOLUTION
    found = [f.message for f in pycheck.check(code)]
    assert any(line in m and "includes only" in m for m in found), found


def test_sources_computed_at_run_time_are_refused() -> None:
    code = SOLUTION.replace("cuda_sources=relu_source,", 'cuda_sources=relu_source.replace("Q", "Py"),')
    found = [f.message for f in pycheck.check(code)]
    assert any("must be written out" in m for m in found), found


def test_an_honest_extension_with_its_own_bindings_and_comments_passes() -> None:
    bindings = 'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("relu_cuda", &relu_cuda, py::arg("x")); }'
    code = SOLUTION.replace("#include <torch/extension.h>\n", "#include <torch/extension.h>\n"
                            "// PyTorch's own binding below; Python sees relu_cuda\n").replace(
        "auto y = torch::empty_like(x);",
        'TORCH_CHECK(x.is_cuda(), "a PyTorch CUDA tensor, as Python passes it");\n    auto y = torch::empty_like(x);').replace(
        'cpp_sources="torch::Tensor relu_cuda(torch::Tensor x);",',
        f'cpp_sources=["torch::Tensor relu_cuda(torch::Tensor x);", {bindings!r}],')
    assert "PYBIND11_MODULE" in code
    assert pycheck.check(code) == []


# Modules are objects whose attributes include the modules they imported, and objects carry their internals in
# private attributes: paths the torch rules (`torch.cuda...`, `torch.ops`) and the forbidden names (`os`, `sys`)
# never saw. Each passed the syntax tree before, in the runner's process (red-team).
MODULE_ATTRIBUTE_ATTACKS = [
    # subprocess, os and sys as torch.utils.cpp_extension imported them: a process, or any module (the runner's)
    ('torch.utils.cpp_extension.os.system("true")\n        ' + HONEST_FORWARD, "`torch.utils.cpp_extension.os.system`"),
    ('torch.utils.cpp_extension.sys.modules.get("builtins").setattr(x, "y", 1)\n        ' + HONEST_FORWARD,
     "`torch.utils.cpp_extension.sys.modules`"),
    ('torch.os.system("true")\n        ' + HONEST_FORWARD, "`torch.os.system`"),
    # torch itself, as torch.nn.functional imported it: a side stream, and the ops by name
    ("torch.nn.functional.torch.cuda.set_stream(torch.nn.functional.torch.cuda.Stream())\n        " + HONEST_FORWARD,
     "`torch.nn.functional.torch.cuda"),
    ("return torch.nn.functional.torch.ops.aten.relu(x)", "`torch.nn.functional.torch.ops"),
    # ctypes, as numpy's array interface keeps it
    ("return x if x.cpu().numpy().ctypes._ctypes.CDLL(None) else x", "`.numpy`"),
    ("return x if x.untyped_storage()._share_filename_cpu_() else x", "private attribute `_share_filename_cpu_`"),
    # a class made by type(): its finalizer is a dictionary key, no `def __del__` in the tree
    ('self.keep = type("F", (), {"__d" "el__": lambda s: x.relu()})()\n        ' + HONEST_FORWARD, "`type`"),
    ('return __build_class__(lambda: None, "K") and x', "`__build_class__`"),
    # str.format walks attributes and items itself: the model's module globals, and from there any module, as text
    ('self.seen = "{0.forward.__globals__[torch].utils}".format(self)\n        ' + HONEST_FORWARD, "`.format`"),
    # a running generator's frame: its caller's (forward's), and that one's caller's, the runner's globals
    ("g = (g.gi_frame.f_back.f_back.f_globals for _ in [0])\n        next(g)\n        " + HONEST_FORWARD, "`.gi_frame`"),
    ("g = (g.gi_frame.f_back.f_back.f_globals for _ in [0])\n        next(g)\n        " + HONEST_FORWARD, "`.f_globals`"),
]


@pytest.mark.parametrize(("forward", "named"), MODULE_ATTRIBUTE_ATTACKS)
def test_modules_reached_through_other_modules_attributes_are_refused(forward: str, named: str) -> None:
    code = SOLUTION.replace(HONEST_FORWARD, forward)
    assert code != SOLUTION
    found = [f.message for f in pycheck.check(code)]
    assert any(named in m for m in found), found


# `self._x` is the model's own state only where `self` is a method's first parameter: any function may name its
# parameter `self` and be handed any object (before: `(lambda self: self._base)(x)` passed the private-attribute rule).
SELF_ATTACKS = [
    ("return (lambda self: self._base)(x) or x", "names a parameter `self`"),
    ("self = x\n        return self._base", "assigns to `self`"),
    # a method taken from its class runs with any object as its `self`
    ("return ModelNew.peek(x) or x", "takes the method `ModelNew.peek` from its class"),
]


@pytest.mark.parametrize(("forward", "named"), SELF_ATTACKS)
def test_self_is_the_model_only_as_a_method_s_first_parameter(forward: str, named: str) -> None:
    code = SOLUTION.replace(HONEST_FORWARD, forward).replace(
        "class ModelNew(nn.Module):\n", "class ModelNew(nn.Module):\n    def peek(self):\n        return self._base\n\n")
    found = [f.message for f in pycheck.check(code)]
    assert any(named in m for m in found), found


def test_a_class_constant_read_through_the_class_stays_usable() -> None:
    code = SOLUTION.replace(HONEST_FORWARD, "return " + HONEST_FORWARD[7:] + " * ModelNew.SCALE[0]").replace(
        "class ModelNew(nn.Module):\n", "class ModelNew(nn.Module):\n    SCALE = (1.0, -2.0)\n\n")
    assert pycheck.check(code) == []


def test_the_model_s_own_private_state_stays_usable_in_its_methods_and_their_closures() -> None:
    code = SOLUTION.replace(HONEST_FORWARD, "self._calls = 1\n        def inner():\n            return self._calls\n"
                                            "        return " + HONEST_FORWARD[7:] + " * inner()")
    assert pycheck.check(code) == []


def test_a_module_imported_under_another_name_from_a_torch_module_is_refused_where_it_is_used() -> None:
    code = "from torch.utils.cpp_extension import subprocess as sp\n" + SOLUTION.replace(
        HONEST_FORWARD, 'sp.run(["true"])\n        ' + HONEST_FORWARD)
    found = [f.message for f in pycheck.check(code)]
    assert any("`torch.utils.cpp_extension.subprocess.run`" in m for m in found), found


def test_typing_evaluates_no_annotation_strings_for_a_solution() -> None:
    # get_type_hints evaluates a string annotation: code the syntax tree read as a string constant
    code = ("from __future__ import annotations\nimport typing\n\n\ndef hint(a: \"x\") -> None:\n    pass\n\n\n"
            + SOLUTION.replace(HONEST_FORWARD, "typing.get_type_hints(hint)\n        " + HONEST_FORWARD))
    found = [f.message for f in pycheck.check(code)]
    assert any("`typing.get_type_hints`" in m for m in found), found


def test_torch_namespaces_classes_dtypes_and_typing_types_stay_usable() -> None:
    code = ("import math\nimport typing\nfrom torch.nn import functional as F\n" + SOLUTION.replace(
        HONEST_FORWARD, "y: typing.Optional[torch.Tensor] = None\n        s = math.sqrt(torch.finfo(torch.float32).eps)\n"
        "        w = torch.nn.init.zeros_(torch.empty(2))\n        z = torch.linalg.norm(w) + torch.special.expit(w).sum()\n"
        "        torch.nn.Module.__init__(self) if y is not None else None\n"
        "        self.label = \"{}x{:>{w}}\".format(1, 2, w=3)\n"
        "        return F.relu(" + HONEST_FORWARD[7:] + ") * s + z")).replace(
        "class ModelNew(nn.Module):", "class ModelNew(torch.nn.Module):")
    assert pycheck.check(code) == []


# Red-team, attribute reads without attribute syntax: a class pattern's keywords read the attributes they name
# (`case C(attr=p)` is getattr(subject, "attr")), which no rule on `.attr` nodes saw. Each passed the check before:
# the first reached the runner's globals and replaced its comparison.
MATCH_ATTACKS = [
    "match (g for g in [0]):\n            case object(gi_frame=object(f_back=object(f_back=object(f_globals=G)))):\n"
    "                G['mismatch'] = lambda *a: ''\n        " + HONEST_FORWARD,
    "match self:\n            case object(forward=object(__globals__={'torch': object(cuda=c)})):\n"
    "                c.set_stream(c.Stream())\n        " + HONEST_FORWARD,
    "match relu:\n            case object(relu_cuda=f):\n                return f(x)\n        " + HONEST_FORWARD,
]


@pytest.mark.parametrize("forward", MATCH_ATTACKS)
def test_a_class_pattern_may_not_read_attributes_by_keyword(forward: str) -> None:
    found = [f.message for f in pycheck.check(SOLUTION.replace(HONEST_FORWARD, forward))]
    assert any("class pattern with keyword attributes" in m for m in found), found


def test_value_and_positional_class_patterns_stay_usable() -> None:
    code = SOLUTION.replace(HONEST_FORWARD, "match x.dim():\n            case 1 | 2:\n                pass\n"
                                            "            case int(n):\n                pass\n        " + HONEST_FORWARD)
    assert pycheck.check(code) == []


@pytest.mark.parametrize("header", ["def meta(name, bases, ns):\n    ns['x'] = 1\n    return ns\n\n\n"
                                    "class Made(metaclass=meta):\n    pass\n",
                                    "class Made(nn.Module, option=1):\n    pass\n"])
def test_a_class_takes_no_keywords_a_metaclass_or_init_subclass_would_run(header: str) -> None:
    found = [f.message for f in pycheck.check(header + "\n\n" + SOLUTION)]
    assert any("passes the class `Made` keywords" in m for m in found), found


@pytest.mark.parametrize(("prefix", "forward", "named"), [
    # pydoc imports the module it is asked about: import-time code of any installed module, by a string
    ("", 'help("antigravity")\n        ' + HONEST_FORWARD, "`help`"),
    # ForwardRef(...).evaluate() (Python 3.14) evaluates its string: eval under a type's name
    ("import typing\n", 'typing.ForwardRef("__import__(\'os\')").evaluate()\n        ' + HONEST_FORWARD,
     "`typing.ForwardRef`"),
    ("from typing import ForwardRef as Ref\n", 'Ref("1")\n        ' + HONEST_FORWARD, "`typing.ForwardRef`"),
])
def test_names_that_import_or_evaluate_strings_are_refused(prefix: str, forward: str, named: str) -> None:
    found = [f.message for f in pycheck.check(prefix + SOLUTION.replace(HONEST_FORWARD, forward))]
    assert any(named in m for m in found), found


# Red-team, C++ the source rules never read. load_inline writes `m.def("NAME", NAME, "DOC")` for each of
# `functions` unescaped; a macro defined among the compiler flags is code; a source name changed after the
# assignment the check read. Each line put PyImport_ImportModule (the runner's module, from C++) past the check.
EVIL = "'static auto q = PyImport_ImportModule(\"__main__\");'"
CPP = 'cpp_sources="torch::Tensor relu_cuda(torch::Tensor x);",'
UNREAD_CPP_ATTACKS = [
    ('functions=["relu_cuda"]', 'functions=["relu_cuda); static auto q = PyImport_ImportModule(\\"__main__\\"); '
     'void z() { (void)(relu_cuda"]', "`functions` names"),
    ('functions=["relu_cuda"]', 'functions={"relu_cuda": "\\"); } static auto q = PyImport_ImportModule(\\"m\\"); '
     'void z() { (void)(\\""}', "`functions` gives the docstring"),
    ('functions=["relu_cuda"]', "functions=[NAME]", "`functions` names `NAME`"),
    ("verbose=False,", 'verbose=False,\n    extra_cflags=["-DGET=PyImport_ImportModule"],',
     "defines the macro 'GET=PyImport_ImportModule'"),
    ("verbose=False,", 'verbose=False,\n    extra_cuda_cflags=["-D", "CAT(a,b)=a##b"],', "defines the macro 'CAT(a'"),
    ("verbose=False,", 'verbose=False,\n    extra_cuda_cflags=["-Xcompiler=-O3,-DGET=PyImport_ImportModule"],',
     "defines the macro"),
    ("relu = load_inline(", f"relu_source += {EVIL}\nrelu = load_inline(", "`cuda_sources` is `relu_source`"),
    ("relu = load_inline(", f"if True:\n    relu_source = {EVIL}\nrelu = load_inline(", "`cuda_sources` is `relu_source`"),
    ("relu = load_inline(", f"for relu_source in [{EVIL}]:\n    pass\nrelu = load_inline(", "`cuda_sources` is"),
    ("relu = load_inline(", f"(relu_source := {EVIL})\nrelu = load_inline(", "`cuda_sources` is `relu_source`"),
    ("relu = load_inline(", f"def build(relu_source={EVIL}):\n    return load_inline(name='x', cpp_sources='', "
     "cuda_sources=relu_source)\n\n\nrelu = load_inline(", "`cuda_sources` is `relu_source`"),
    (CPP, f"cpp_sources=CPP,\n)\nCPP.append({EVIL})\nrelu = load_inline(name='again', {CPP}",
     "`cpp_sources` is `CPP`"),
    (CPP, f"cpp_sources=CPP,\n)\nCPP[0] = {EVIL}\nrelu = load_inline(name='again', {CPP}", "`cpp_sources` is `CPP`"),
]


@pytest.mark.parametrize(("old", "new", "named"), UNREAD_CPP_ATTACKS)
def test_the_cpp_that_load_inline_compiles_is_all_read(old: str, new: str, named: str) -> None:
    code = SOLUTION.replace(old, new, 1)
    if "CPP" in new:
        code = "CPP = ['torch::Tensor relu_cuda(torch::Tensor x);']\n" + code
    assert code != SOLUTION
    found = [f.message for f in pycheck.check(code)]
    assert any(named in m for m in found), found


def test_sources_functions_and_definitions_written_as_kernelbench_writes_them_pass() -> None:
    code = ("HEADER = '#include <cuda_fp16.h>\\n'\nCPP = ['torch::Tensor relu_cuda(torch::Tensor x);']\n"
            "FUNCS = ['relu_cuda']\n" + SOLUTION.replace(CPP, "cpp_sources=CPP,").replace(
                "cuda_sources=relu_source,", "cuda_sources=HEADER + relu_source,").replace(
                'functions=["relu_cuda"]', "functions=FUNCS").replace(
                "verbose=False,", 'verbose=False,\n    extra_cuda_cflags=["-O3", "-DBLOCK=256", "-D", "TILE=32", '
                '"-DNDEBUG", "-U__CUDA_NO_HALF_OPERATORS__", "-Xcompiler=-DX=1.0f,-O3", "-DEPS=-1e-5"],'))
    assert pycheck.check(code) == []
    for functions in ('{"relu_cuda": "ReLU of x (CUDA)"}', '"relu_cuda"'):
        assert pycheck.check(SOLUTION.replace('functions=["relu_cuda"]', f"functions={functions}")) == []


# Red-team, checked after it ran: the runner read the extension's linked symbols only after the candidate module
# was imported and the models built, and the dynamic loader runs an extension's static initializers when it maps
# it. A constructor calling fopen (or reading the process's memory and writing a result) ran first.
EARLY = r"""
#include <stdio.h>
__attribute__((constructor)) static void early(void) {
    FILE* f = fopen(MARKER, "w");
    if (f) { fputs("ran before the check", f); fclose(f); }
}
"""


def test_an_extension_is_checked_before_its_static_initializers_run(tmp_path: Path, monkeypatch) -> None:
    import importlib.machinery
    import shutil
    import subprocess

    if shutil.which("gcc") is None or shutil.which("nm") is None:
        pytest.skip("gcc and nm build and read the stand-in extension")
    kb = runner()
    loader = importlib.machinery.ExtensionFileLoader
    monkeypatch.setattr(loader, "create_module", loader.create_module)  # restored after the test
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "marker"
    folder = tmp_path / "torch_ext_candidate" / "early"
    folder.mkdir(parents=True)
    (folder / "early.c").write_text(EARLY.replace("MARKER", f'"{marker}"'))
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(folder / "early.so"), str(folder / "early.c")], check=True)
    (tmp_path / "problem.py").write_text("class ModelNew:\n    pass\n")
    # what load_inline does with the extension it built (torch.utils.cpp_extension._import_module_from_library)
    (tmp_path / "candidate.py").write_text(
        "import importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('early', {str(folder / 'early.so')!r})\n"
        "importlib.util.module_from_spec(spec)\n\nclass ModelNew:\n    pass\n")
    args = argparse.Namespace(problem="problem.py", candidate="candidate.py")
    with pytest.raises(kb.Stop) as stop:
        kb.load_files(args)
    assert not marker.exists(), "the extension's constructor ran before its symbols were read"
    assert stop.value.status == "rejected" and "fopen" in stop.value.message, stop.value.message


@pytest.mark.parametrize("symbol", [
    # files and descriptors by names the rule did not list: the result pipe is a descriptor ($SPEEDPATCH_RESULT_FD)
    "fdopen", "freopen", "creat", "openat", "__open_2", "dprintf", "dup2", "environ",
    "_ZNSt14basic_ofstreamIcSt11char_traitsIcEEC1EPKcSt13_Ios_Openmode",  # std::ofstream(const char*, mode)
    "_ZNSt13basic_filebufIcSt11char_traitsIcEE4openEPKcSt13_Ios_Openmode", "_ZNSt10filesystem6removeERKNS_4pathE",
    # processes, and code run as the process ends, after the runner's verdict
    "posix_spawn", "vfork", "clone", "_exit", "quick_exit", "atexit", "signal", "sigaction",
    # another process's GPU memory; persisting L2 lines survive the flush before each trial
    "cudaIpcOpenMemHandle", "cudaStreamSetAttribute", "cudaCtxResetPersistingL2Cache", "cudaDeviceSetLimit",
])
def test_files_processes_exit_hooks_and_persisting_l2_are_foreign(symbol: str) -> None:
    assert runner().FOREIGN_SYMBOL.search(symbol)


@pytest.mark.parametrize("symbol", [
    "__cxa_atexit",  # destructors of the extension's own statics
    "_ZNSt7__cxx1119basic_ostringstreamIcSt11char_traitsIcESaIcEEC1Ev",  # TORCH_CHECK's message
    "_ZNSt8ios_base4InitC1Ev", "printf", "abort", "__assert_fail", "cudaFuncSetAttribute", "cudaMemcpyAsync",
    "cudaStreamSynchronize", "__cudaPushCallConfiguration",
])
def test_what_error_messages_statics_and_launches_import_stays_allowed(symbol: str) -> None:
    assert not runner().FOREIGN_SYMBOL.search(symbol)


def test_load_inline_returns_a_module_the_runner_checks_before_loading() -> None:
    # is_python_module=False: torch.ops.load_library maps the library through ctypes, past the import-time check
    code = SOLUTION.replace("verbose=False,", "verbose=False,\n    is_python_module=False,")
    found = [f.message for f in pycheck.check(code)]
    assert any("`is_python_module` other than True" in m for m in found), found
    assert pycheck.check(SOLUTION.replace("verbose=False,", "verbose=False,\n    is_python_module=True,")) == []


# Red-team: the tensor-subclass rule read a base's spelling, so a name assigned torch.Tensor, a call returning it,
# or another tensor class passed. (The runner refuses an output of a subclass too; this is the first line.)
@pytest.mark.parametrize(("header", "named"), [
    ("T = torch.Tensor\n\n\nclass Liar(T):\n    def sum(self):\n        return 0\n", "subclasses `T`"),
    ("def make():\n    return torch.Tensor\n\n\nclass Liar(make()):\n    pass\n", "subclasses `make()`"),
    ("class Liar(torch.FloatTensor):\n    pass\n", "subclasses `torch.FloatTensor`"),
    ("class Liar(nn.UninitializedParameter):\n    pass\n", "subclasses `torch.nn.UninitializedParameter`"),
])
def test_a_tensor_class_is_refused_as_a_base_however_it_is_named(header: str, named: str) -> None:
    found = [f.message for f in pycheck.check(header + "\n\n" + SOLUTION)]
    assert any(named in m for m in found), found


def test_bases_named_where_they_are_defined_or_imported_pass() -> None:
    code = ("import typing\nT = typing.TypeVar('T')\n\n\nclass Box(typing.Generic[T]):\n    pass\n\n\n"
            "class Base(nn.Module):\n    pass\n\n\nclass Config(object):\n    pass\n\n\n"
            + SOLUTION.replace("class ModelNew(nn.Module)", "class ModelNew(Base)"))
    assert pycheck.check(code) == []
    # a name the solution never binds is the harness part's: the reference Model, as some solutions extend it
    assert pycheck.check(SOLUTION.replace("class ModelNew(nn.Module)", "class ModelNew(Model)")) == []


def test_the_cuda_queries_allowed_by_name_are_usable() -> None:
    # torch.cuda.is_available() was refused through its `torch.cuda` part, though listed as allowed
    code = SOLUTION.replace(HONEST_FORWARD, "assert torch.cuda.is_available() and torch.cuda.current_device() >= 0\n"
                                            "        " + HONEST_FORWARD)
    assert pycheck.check(code) == []
    found = [f.message for f in pycheck.check(SOLUTION.replace(HONEST_FORWARD, "torch.cuda.current_stream()\n"
                                                                               "        " + HONEST_FORWARD))]
    assert any("torch.cuda.current_stream" in m for m in found), found


# Red-team, torch's dispatcher from the extension: a kernel registered for an aten op replaces it for the whole
# process, the runner's comparison (torch.isclose) and the reference included; a call redispatched below the Python
# key, or a key excluded around it, never reaches the dispatch mode that records the candidate's ops. Each line
# passed the source rules before.
DISPATCHER_ATTACKS = [
    'TORCH_LIBRARY_IMPL(aten, CUDA, m) { m.impl("isclose", &relu_cuda); }',
    "static torch::Tensor hidden(torch::Tensor x) { c10::impl::ExcludeDispatchKeyGuard g(c10::DispatchKey::Python); "
    "return at::relu(x); }",
    "static torch::Tensor below(torch::Tensor x) { return at::redispatch::relu(c10::DispatchKeySet("
    "c10::DispatchKey::CUDA), x); }",
    'static auto op = c10::Dispatcher::singleton().findSchemaOrThrow("aten::relu", "");',
]


@pytest.mark.parametrize("line", DISPATCHER_ATTACKS)
def test_the_extension_may_not_register_or_bypass_torch_s_dispatcher(line: str) -> None:
    code = SOLUTION.replace("#include <torch/extension.h>\n", "#include <torch/extension.h>\n" + line + "\n")
    found = [f.message for f in pycheck.check(code)]
    assert any("torch's dispatcher and dispatch keys" in m for m in found), found


@pytest.mark.parametrize("symbol", [
    "_ZN5torch7LibraryC1ENS0_4KindESsSt8optionalIN3c1011DispatchKeyEEPKcj",  # torch::Library (TORCH_LIBRARY*)
    "_ZN5torch6detail16TorchLibraryInitC1ENS_7Library4KindEPFvRS2_EPKcSt8optionalIN3c1011DispatchKeyEES8_j",
    "_ZN2at4_ops4relu10redispatchEN3c1014DispatchKeySetERKNS_6TensorE",
    "_ZN3c104impl29tls_set_dispatch_key_excludedENS_11DispatchKeyEb",
    # the loader's list of libraries and their symbol tables: a function found without naming it
    "dl_iterate_phdr", "_r_debug", "dladdr", "getauxval",
])
def test_registrations_and_redispatches_are_foreign(symbol: str) -> None:
    assert runner().FOREIGN_SYMBOL.search(symbol)


@pytest.mark.parametrize("symbol", [
    "_ZN2at4_ops4relu4callERKNS_6TensorE",  # a dispatched op: the recording sees it
    "_ZN3c104impl23ExcludeDispatchKeyGuardC1ENS_14DispatchKeySetE",  # torch::empty_like's autograd guard
])
def test_dispatched_calls_and_torch_s_own_guards_are_not_foreign(symbol: str) -> None:
    assert not runner().FOREIGN_SYMBOL.search(symbol)


# Red-team: the timed trials ran baseline, candidate, reference, reversed every other trial, all on the same inputs.
# In every trial another model had already computed the candidate's answer, and its output was alive in device
# memory during the candidate's call (at an offset the caching allocator repeats), for a kernel reading past its
# own buffers to copy at memcpy speed. The candidate now runs before the reference, and the baseline on other inputs.
def test_no_model_runs_on_the_candidate_s_inputs_before_it_in_a_trial() -> None:
    kb = runner()
    orders = [kb.trial_order(i) for i in range(4)]
    assert all(order[-1] == "reference" for order in orders), orders
    assert {tuple(order[:2]) for order in orders} == {("baseline", "candidate"), ("candidate", "baseline")}


@needs_cuda_torch
def test_the_baseline_in_a_trial_never_sees_the_candidate_s_inputs() -> None:
    import torch

    kb = runner()
    seen: dict[str, list[float]] = {"baseline": [], "reference": [], "candidate": []}

    class Spy(torch.nn.Module):
        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            seen[self.name].append(float(x.sum()))
            return torch.relu(x)

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device visible to torch")
    models = {name: Spy(name) for name in seen}
    sets = [[torch.randn(4096, device="cuda")] for _ in range(3)]
    args = argparse.Namespace(warmup=0, trials=6, seed=0)
    flush = torch.empty(1 << 20, dtype=torch.int32, device="cuda")
    kb.time_models(torch, models, sets, flush, args, [torch.relu(s[0]) for s in sets], set(),
                   lambda: [torch.randn(4096, device="cuda")])
    assert not set(seen["candidate"]) & set(seen["baseline"])
    assert seen["candidate"] == seen["reference"]


# Red-team, device memory the candidate's kernels can write: the trial's inputs and the reference's weights sat in
# device memory during the candidate's call, and a kernel writing past its own buffers (nothing in a CUDA context
# stops it) could zero them, so that the reference computed the same trivial output the candidate returned. The
# runner's loop is run here with stand-in tensors (no torch on this machine); `zero_` on the trusted object plays
# the out-of-bounds write.
class StandIn:
    def __init__(self, values: list[float], device: str = "gpu") -> None:
        self.v, self.device = list(values), device

    def clone(self) -> StandIn:
        return StandIn(self.v, self.device)

    def cpu(self) -> StandIn:
        return StandIn(self.v, "cpu")

    def to(self, device: str) -> StandIn:
        return StandIn(self.v, device)

    def detach(self) -> StandIn:
        return self

    def reshape(self, *shape: int) -> StandIn:
        return self

    def view(self, dtype: object) -> StandIn:
        return self

    def zero_(self) -> StandIn:
        self.v[:] = [0.0] * len(self.v)
        return self


def _stand_in_loop(kb, monkeypatch, candidate, reference, made: list) -> None:
    import contextlib
    import random
    import types

    class Event:
        def __init__(self, **_: object) -> None:
            pass

        def record(self) -> None:
            pass

        def elapsed_time(self, _: object) -> float:
            return 1.0

    torch = types.SimpleNamespace(Tensor=StandIn, uint8="uint8", equal=lambda a, b: a.v == b.v,
                                  no_grad=contextlib.nullcontext,
                                  cuda=types.SimpleNamespace(Event=Event, synchronize=lambda: None))
    monkeypatch.setattr(kb, "mismatch", lambda torch, got, want: "" if got.v == want.v else "differs")

    def fresh() -> list:
        made.append([StandIn([random.gauss(0, 1) for _ in range(8)])])
        return made[-1]

    models = {"baseline": lambda x: StandIn([max(a, 0.0) for a in x.v]), "candidate": candidate, "reference": reference}
    sets = [[StandIn([random.gauss(0, 1) for _ in range(8)])] for _ in range(3)]
    flush = types.SimpleNamespace(fill_=lambda i: None)
    kb.time_models(torch, models, sets, flush, argparse.Namespace(warmup=0, trials=4, seed=0), None, set(), fresh)


def test_the_reference_computes_on_the_trial_s_inputs_as_they_were_before_the_candidate_ran(monkeypatch) -> None:
    kb = runner()
    made: list = []

    def zeroes_the_trusted_inputs(x: StandIn) -> StandIn:
        made[-1][0].zero_()  # the trial's own inputs, not the copy it was given
        return StandIn([0.0] * len(x.v))

    with pytest.raises(kb.Stop) as stop:
        _stand_in_loop(kb, monkeypatch, zeroes_the_trusted_inputs, lambda x: StandIn([max(a, 0.0) for a in x.v]), made)
    assert stop.value.status == "incorrect", stop.value.message


def test_a_reference_whose_weights_changed_during_the_timing_loop_is_caught(monkeypatch) -> None:
    kb = runner()

    class Scaled:
        def __init__(self) -> None:
            self.w = StandIn([2.0])

        def parameters(self) -> list:
            return [self.w]

        def __call__(self, x: StandIn) -> StandIn:
            return StandIn([self.w.v[0] * max(a, 0.0) for a in x.v])

    reference = Scaled()

    def zeroes_the_reference_s_weights(x: StandIn) -> StandIn:
        reference.w.zero_()
        return StandIn([0.0] * len(x.v))

    with pytest.raises(kb.Stop) as stop:
        _stand_in_loop(kb, monkeypatch, zeroes_the_reference_s_weights, reference, [])
    assert stop.value.status == "rejected" and "reference's weights changed" in stop.value.message, stop.value.message


def test_a_functions_dict_changed_after_its_assignment_is_refused() -> None:
    code = ('FUNCS = {"relu_cuda": "ReLU"}\nFUNCS["relu_cuda"] = "\\"); } static auto q = PyImport_ImportModule('
            '\\"m\\"); void z() { (void)(\\""\n' + SOLUTION.replace('functions=["relu_cuda"]', "functions=FUNCS"))
    found = [f.message for f in pycheck.check(code)]
    assert any("`functions` names `FUNCS`" in m for m in found), found


def test_kernelbench_s_own_empty_flags_pass() -> None:
    # KernelBench's example solution writes extra_cflags=[""], extra_ldflags=[""]: LLM answers copy it, and it links
    # nothing (refused before, as any extra_ldflags)
    code = SOLUTION.replace("verbose=False,", 'verbose=True,\n    extra_cflags=[""],\n    extra_ldflags=[""],')
    assert pycheck.check(code) == []
    found = [f.message for f in pycheck.check(SOLUTION.replace("verbose=False,", 'extra_ldflags=["", "-lcublas"],'))]
    assert any("`extra_ldflags`" in m for m in found), found
