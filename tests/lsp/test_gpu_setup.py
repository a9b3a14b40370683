"""speedpatch.toml gets what cuda-ssh needs, appended, and nothing the user wrote is lost."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib
from speedpatch.lsp.gpu import configure_gpu


def test_a_missing_config_file_is_created_with_the_backend_choice_and_its_table(tmp_path: Path):
    path, line, changed = configure_gpu(tmp_path / "speedpatch.toml")
    data = tomllib.loads(path.read_text())
    assert changed and data["backends"] == {"cuda": "cuda-ssh"} and data["backend"]["cuda-ssh"] == {"host": ""}
    assert path.read_text().split("\n")[line] == 'host = ""'
    assert path.read_text().startswith("[backends]\n")  # no blank line before the first table


def test_an_existing_backends_table_gets_the_key_not_a_second_table(tmp_path: Path):
    config = tmp_path / "speedpatch.toml"
    config.write_text('[backends]\ngemmini = "gemmini-spike"\n')
    configure_gpu(config)
    data = tomllib.loads(config.read_text())
    assert data["backends"] == {"gemmini": "gemmini-spike", "cuda": "cuda-ssh"}


def test_a_chosen_cuda_backend_and_a_filled_in_host_are_kept(tmp_path: Path):
    config = tmp_path / "speedpatch.toml"
    text = '[backends]\ncuda = "cuda-local"\n\n[backend.cuda-ssh]\nhost = "gpu1"\n'
    config.write_text(text)
    _, line, changed = configure_gpu(config)
    assert not changed and config.read_text() == text and line == 4


def test_a_config_that_does_not_parse_is_not_touched(tmp_path: Path):
    config = tmp_path / "speedpatch.toml"
    config.write_text("[search\n")
    with pytest.raises(ValueError, match="does not parse"):
        configure_gpu(config)
    assert config.read_text() == "[search\n"
