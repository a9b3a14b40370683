"""Kernel detection, harness detection, splicing, static checks and feedback text of the NKI target."""

from __future__ import annotations

import pytest
from speedpatch import api
from speedpatch.config import config_from_dict
from speedpatch.errors import UserError
from speedpatch.model import OK, Evaluation
from speedpatch.targets import get_target
from speedpatch.targets.nki.target import NkiTarget

HARNESS = '\nINPUTS = {"x": ((128, 64), "float32")}\n\n\ndef reference(x):\n    return x\n'


def names(source: str) -> list[str]:
    return [k.name for k in NkiTarget().find_kernels(source)]


def test_target_is_registered_with_its_default_backend():
    target = get_target("nki")
    assert target.default_backend == "nki-emulator"
    assert [b.name for b in target.backends()] == ["nki-emulator", "nki-simulate", "nki-neuron"]


def test_finds_jit_baremetal_and_benchmark_kernels_under_any_alias():
    source = (
        "import nki\nimport nki as n2\nfrom nki import baremetal as bm\nimport neuronxcc.nki as legacy\n"
        "import neuronxcc.nki\n\n"
        "@nki.jit\ndef a(x):\n    return x\n\n"
        "@n2.jit(mode='auto')\ndef b(x):\n    return x\n\n"
        "@bm\ndef c(x):\n    return x\n\n"
        "@legacy.benchmark(warmup=2, iters=10)\ndef d(x):\n    return x\n\n"
        "@neuronxcc.nki.jit\ndef e(x):\n    return x\n\n"
        "def plain(x):\n    return x\n\n"
        "@other.jit\ndef f(x):\n    return x\n"
    )
    assert names(source) == ["a", "b", "c", "d", "e"]


def test_finds_kernels_decorated_through_a_module_level_name_for_an_nki_decorator():
    # the AWS documentation's nki.isa example tests write `nki_jit = nki.trace` and decorate with @nki_jit
    source = (
        "import neuronxcc.nki as nki\nimport other\n\n"
        "nki_jit = nki.trace\nmy_jit = other.jit\n\n"
        "@nki_jit\ndef a(x):\n    return x\n\n"
        "@my_jit\ndef b(x):\n    return x\n"
    )
    assert names(source) == ["a"]


def test_a_jit_helper_that_another_kernel_calls_is_not_a_kernel_of_its_own():
    # Public kernels decorate helpers with @nki.jit too and call them from the launched kernel.
    source = (
        "import nki\nimport nki.language as nl\n\n"
        "@nki.jit\ndef core(a, out):\n    out[...] = a\n\n"
        "@nki.jit\ndef kernel(x):\n    core(x, x)\n    return x\n" + HARNESS
    )
    assert names(source) == ["kernel"]
    cycle = "import nki\n\n@nki.jit\ndef f(x):\n    return g(x)\n\n@nki.jit\ndef g(x):\n    return f(x)\n"
    assert names(cycle) == ["f", "g"]  # every one is called: none is dropped


def test_kernel_region_spans_decorator_to_end_of_function():
    source = "import nki\n\n\n@nki.jit\ndef k(x):\n    y = x\n    return y\n\n\nZ = 1\n"
    (kernel,) = NkiTarget().find_kernels(source)
    assert kernel.text == "@nki.jit\ndef k(x):\n    y = x\n    return y\n"
    assert (kernel.start_line, kernel.signature_line, kernel.end_line) == (3, 4, 7)
    assert source[kernel.start:kernel.end] == kernel.text


def test_kernel_without_harness_is_not_runnable_and_says_why():
    (kernel,) = NkiTarget().find_kernels("import nki\n\n@nki.jit\ndef k(x):\n    return x\n")
    assert not kernel.runnable
    assert "INPUTS" in kernel.reason and "reference" in kernel.reason
    (kernel,) = NkiTarget().find_kernels("import nki\n\n@nki.jit\ndef k(x):\n    return x\n" + HARNESS)
    assert kernel.runnable


def test_files_that_do_not_parse_still_show_their_kernels():
    source = "import nki\n\n@nki.jit\ndef k(x):\n    y = (x +\n    return y\n\nZ = 1\n"
    (kernel,) = NkiTarget().find_kernels(source)
    assert kernel.name == "k" and not kernel.runnable
    assert "Z = 1" not in kernel.text


def test_a_file_that_does_not_parse_says_on_which_line_and_why():
    source = "import nki\n\n@nki.jit\ndef k(x):\n    y = (x +\n    return y\n"
    (kernel,) = NkiTarget().find_kernels(source)
    assert "does not parse (line 5: '(' was never closed" in kernel.reason, kernel.reason


def test_a_python_file_without_a_kernel_says_what_an_nki_kernel_looks_like():
    with pytest.raises(UserError) as refused:
        api.make_problem("plain.py", "def add(a, b):\n    return a + b\n", None, config_from_dict({}))
    message = str(refused.value)
    assert "no kernel found (looked for " in message
    assert "nki: a Python function decorated with @nki.jit" in message
    assert "see examples/nki/" in message


def test_junk_and_non_nki_python_give_no_kernels():
    assert names("") == []
    assert names("\x00\x01 def (((") == []
    assert names("import torch\n\n@torch.jit.script\ndef f(x):\n    return x\n") == []
    assert names("(" * 500) == []


def test_splice_replaces_only_the_kernel():
    target = NkiTarget()
    source = "import nki\n\n@nki.jit\ndef k(x):\n    return x\n" + HARNESS
    (kernel,) = target.find_kernels(source)
    new = target.splice(source, kernel, "@nki.jit\ndef k(x):\n    return x  # faster\n")
    assert "# faster" in new and new.endswith(HARNESS.lstrip("\n"))


def test_static_check_rejects_kernels_that_touch_the_harness_or_the_process():
    target = NkiTarget()
    source = "import nki\n\n@nki.jit\ndef k(x):\n    return reference(x)\n" + HARNESS
    (kernel,) = target.find_kernels(source)
    assert any("reference" in r for r in target.static_check(source, kernel))
    escaping = source.replace("return reference(x)", "import os\n    return x")
    assert any("'os'" in r for r in target.static_check(escaping, kernel))
    clean = source.replace("return reference(x)", "return x")
    assert target.static_check(clean, kernel) == []
    assert target.static_check(HARNESS, kernel)  # kernel missing


def test_feedback_text_names_engines_latency_and_hot_lines():
    feedback = {
        "latency_us": 12.5, "pe_utilization": 0.25, "dma_transfers": 4, "dma_bytes": 1024,
        "sbuf_peak_kib_per_partition": 2.0, "psum_peak_kib_per_partition": 2.0,
        "engines": {"tensor": {"busy_us": 3.0, "utilization": 0.24, "instructions": 2},
                    "dma": {"busy_us": 10.0, "utilization": 0.2, "instructions": 4}},
        "hot_lines": [{"line": 12, "busy_us": 5.0}],
    }
    text = NkiTarget().feedback_text(Evaluation(status=OK, value=12.5, unit="us", feedback=feedback))
    assert "12.5 us" in text and "Tensor engine" in text and "line 12" in text and "DMA" in text


def test_targets_for_a_path_come_in_the_same_order_whichever_was_loaded_first(monkeypatch):
    from speedpatch import targets

    monkeypatch.setattr(targets, "_targets", {})  # a fresh process
    targets.get_target("cuda")
    assert [t.name for t in targets.targets_for_path("k.py")][:2] == ["nki", "cuda"]
