"""KernelBench `.py` solutions: the syntax-tree check (runs anywhere) and the checks of what actually runs
on the GPU host (the dispatched torch ops, the extension's linked symbols), which need torch."""

from __future__ import annotations

import importlib.util
import sys

import pytest
from speedpatch.targets.cuda import pycheck
from speedpatch.targets.cuda.target import CudaTarget

from .conftest import EXAMPLES

KB = (EXAMPLES / "kernelbench_relu.py").read_text()
SOLUTION = KB[KB.index("# speedpatch: solution") + len("# speedpatch: solution\n"):]
HONEST_FORWARD = "return relu.relu_cuda(x.contiguous())"


def findings_for(forward: str) -> list[str]:
    code = SOLUTION.replace(HONEST_FORWARD, forward)
    assert code != SOLUTION
    return [f.message for f in pycheck.check(code)]


def test_the_example_solution_passes() -> None:
    assert pycheck.check(SOLUTION) == []
    assert CudaTarget().diagnostics(KB, "kernelbench_relu.py") == []


@pytest.mark.parametrize(("forward", "named"), [
    ('return getattr(torch, "re" + "lu")(x)', "`getattr`"),
    ('return vars(torch)["relu"](x)', "`vars`"),
    ('return __import__("torch").relu(x)', "`__import__`"),
    ('return eval("torch.re" + "lu")(x)', "`eval`"),
    ('return exec("y = 1") or x', "`exec`"),
    ("return x.__class__.__base__", "`__class__`"),
    ("global CACHE\n        return x", "`global`"),
    ('return os.system("true") or x', "`os`"),  # a module the harness part imported
])
def test_names_reached_by_strings_or_reflection_are_rejected(forward: str, named: str) -> None:
    assert any(named in m for m in findings_for(forward)), findings_for(forward)


@pytest.mark.parametrize(("line", "named"), [
    ("import os", "imports `os`"),
    ("import ctypes", "imports `ctypes`"),
    ("from importlib import import_module", "imports from `importlib`"),
    ("from subprocess import run as go", "imports from `subprocess`"),
])
def test_imports_outside_the_allowlist_are_rejected(line: str, named: str) -> None:
    found = [f.message for f in pycheck.check(line + "\n" + SOLUTION)]
    assert any(named in m for m in found), found


def test_torch_nn_functional_imported_as_f_is_allowed_as_kernelbench_solutions_write_it() -> None:
    code = "import torch.nn.functional as F\n" + SOLUTION.replace(HONEST_FORWARD, "return F.relu(x)")
    assert pycheck.check(code) == []


def test_torch_nn_functional_imported_as_f_still_refuses_paths_through_its_module_attributes() -> None:
    code = "import torch.nn.functional as F\n" + SOLUTION.replace(HONEST_FORWARD, "return F.torch.cuda.Stream()")
    assert any("a path from an imported module" in f.message for f in pycheck.check(code))


def test_patching_torch_or_the_timer_is_rejected_however_it_is_reached() -> None:
    found = findings_for("ev = torch.cuda.Event\n        ev.elapsed_time = lambda a, b: 0.0\n        return x")
    assert any("assigns to `ev.elapsed_time`" in m for m in found)
    assert any("uses `torch.cuda.Event`" in m for m in found)


def test_an_aliased_torch_is_still_torch() -> None:
    found = [f.message for f in pycheck.check("import torch as t\n" + SOLUTION.replace(
        HONEST_FORWARD, "t.backends.cuda.matmul.allow_tf32 = True\n        return x"))]
    assert any("uses `torch.backends.cuda.matmul.allow_tf32`" in m for m in found), found



# Red-team finds: each passed the syntax tree before. A side stream makes the runner's events (recorded on the
# current stream) time nothing; a global module hook or a process-wide setting runs inside the baseline's call.
@pytest.mark.parametrize(("forward", "named"), [
    ("t = torch\n        s = t.cuda.Stream()\n        return x", "uses `torch` as a value"),
    ("f = torch.nn.functional\n        return f.relu(x)", "uses `torch.nn.functional` as a value"),
    ("s = torch.Stream(device='cuda')\n        return x", "uses `torch.Stream`"),
    ("torch.accelerator.synchronize()\n        return x", "uses `torch.accelerator.synchronize`"),
    ("torch.get_device_module('cuda').synchronize()\n        return x", "uses `torch.get_device_module`"),
    ("e = torch.Event(device='cuda')\n        return x", "uses `torch.Event`"),
    ("torch.nn.modules.module.register_module_forward_hook(lambda m, i, o: o)\n        return x",
     "uses `torch.nn.modules.module.register_module_forward_hook`"),
])
def test_streams_hooks_and_torch_kept_in_a_variable_are_rejected(forward: str, named: str) -> None:
    assert any(named in m for m in findings_for(forward)), findings_for(forward)


def test_a_torch_name_imported_from_torch_is_checked_as_its_path() -> None:
    found = [f.message for f in pycheck.check("from torch import set_float32_matmul_precision as p\n" + SOLUTION.replace(
        HONEST_FORWARD, "p('medium')\n        return relu.relu_cuda(x)"))]
    assert any("uses `torch.set_float32_matmul_precision`" in m for m in found), found


def test_types_dtypes_and_memory_formats_may_be_values() -> None:
    code = SOLUTION.replace(HONEST_FORWARD, "y = x.to(torch.float32).contiguous(memory_format=torch.contiguous_format)\n"
                            "        assert isinstance(y, torch.Tensor) and y.dtype in (torch.float, torch.half)\n"
                            "        return relu.relu_cuda(y)")
    assert pycheck.check(code) == []


# An output of the solution's own tensor class: the runner's comparison (isclose, ~, |, .sum()) keeps the
# subclass, so `def sum(self): return 0` would make any output pass; dunders (__torch_function__, __eq__,
# __exit__ returning True, __del__) change how Python or torch treat the solution's objects.
@pytest.mark.parametrize(("before", "forward", "named"), [
    ("class Liar(torch.Tensor):\n    def sum(self, *args, **kwargs):\n        return 0\n",
     "return torch.empty_like(x).as_subclass(Liar)", "subclasses `torch.Tensor`"),
    ("", "return torch.empty_like(x).as_subclass(type(x))", "uses `as_subclass`"),
    ("class Wrap:\n    @classmethod\n    def __torch_function__(cls, func, types, args=(), kwargs=None):\n        return True\n",
     "return relu.relu_cuda(x)", "defines `__torch_function__`"),
    ("class Quiet:\n    __exit__ = lambda self, *exc: True\n", "return relu.relu_cuda(x)", "defines `__exit__`"),
])
def test_tensor_subclasses_and_dunder_definitions_are_rejected(before: str, forward: str, named: str) -> None:
    code = SOLUTION.replace(HONEST_FORWARD, forward).replace("class ModelNew", before + "\n\nclass ModelNew")
    found = [f.message for f in pycheck.check(code)]
    assert any(named in m for m in found), found


def test_a_fallback_to_the_reference_op_is_rejected() -> None:
    found = findings_for("try:\n            return relu.relu_cuda(x)\n        except RuntimeError:\n"
                         "            return x.clamp(min=0)")
    assert any("try/except" in m for m in found)


def test_findings_carry_the_line_in_the_whole_file() -> None:
    text = KB.replace(HONEST_FORWARD, 'return getattr(torch, "relu")(x)')
    line = next(i for i, s in enumerate(text.splitlines()) if "getattr" in s)
    found = [f for f in CudaTarget().diagnostics(text, "kernelbench_relu.py") if "getattr" in f.message]
    assert found and found[0].line == line


needs_torch_gpu = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None,
    reason="torch is not installed on this machine: the dispatched-op check runs in kernelbench_runner.py on the "
           "GPU host (tests/cuda/test_gpu.py and scripts/gpu_check.py run it there)")


@needs_torch_gpu
def test_the_runner_sees_a_reference_op_called_as_a_tensor_method() -> None:
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device visible to torch")
    sys.path.insert(0, str(EXAMPLES.parents[1] / "targets" / "cuda"))
    import kernelbench_runner

    class Cheat(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.relu()  # no name check could tell this from a tensor's own method

    class Honest(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.empty_like(x).copy_(x)

    x = [torch.randn(1024, device="cuda")]
    assert kernelbench_runner.foreign_ops(Cheat(), x) == ["aten::relu"]
    assert kernelbench_runner.foreign_ops(Honest(), x) == []


@pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                    reason="torch is not installed on this machine (the runner's comparison runs on the GPU host)")
def test_the_runner_refuses_an_output_of_a_tensor_subclass() -> None:
    import torch

    sys.path.insert(0, str(EXAMPLES.parents[1] / "targets" / "cuda"))
    import kernelbench_runner

    class Liar(torch.Tensor):
        def sum(self, *args, **kwargs):  # what the comparison counts its differing elements with
            return 0

    want = torch.ones(8)
    assert kernelbench_runner.mismatch(torch, torch.ones(8), want) == ""
    why = kernelbench_runner.mismatch(torch, torch.full((8,), 5.0).as_subclass(Liar), want)
    assert "subclass of torch.Tensor" in why, why


def _runner():
    sys.path.insert(0, str(EXAMPLES.parents[1] / "targets" / "cuda"))
    import kernelbench_runner

    return kernelbench_runner


@pytest.mark.parametrize("symbol", [
    "_ZN3c104cuda17getStreamFromPoolEba",  # c10::cuda::getStreamFromPool(bool, signed char): a pool stream
    "_ZN3c104cuda17getStreamFromPoolEia",  # the (int priority, DeviceIndex) overload of newer torch
    "_ZN3c104cuda20setCurrentCUDAStreamENS0_10CUDAStreamE",
    "cudaStreamAddCallback", "syscall", "mprotect", "write",
])
def test_an_extension_that_imports_a_side_stream_or_raw_system_calls_is_foreign(symbol: str) -> None:
    # Red-team find: a kernel launched on a c10 pool stream runs outside the runner's current-stream events.
    assert _runner().FOREIGN_SYMBOL.search(symbol)


@pytest.mark.parametrize("symbol", [
    "_ZN3c104cuda20getCurrentCUDAStreamEa", "cudaLaunchKernel", "__cudaRegisterFunction", "pthread_mutex_lock",
    "_ZN3c106detail14torchCheckFailEPKcS2_jRKSs", "fwrite",
])
def test_what_an_honest_extension_imports_is_not_foreign(symbol: str) -> None:
    assert not _runner().FOREIGN_SYMBOL.search(symbol)
