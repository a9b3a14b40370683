"""What a request from the kernel process can reach on the trusted side (isolation/server.py), message by
message: the public nki API and a few attributes of what it returns, never tensor data or internals."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from speedpatch.targets.nki.emulator import PKGS_DIR
from speedpatch.targets.nki.emulator.tensor import Tile, hbm_tensor
from speedpatch.targets.nki.isolation.process import KernelProcess

if PKGS_DIR not in sys.path:
    sys.path.insert(0, PKGS_DIR)  # nki.compiler, as in the trusted runner

from speedpatch.targets.nki.isolation.server import Server  # noqa: E402


@pytest.fixture
def server() -> Server:
    process = KernelProcess("/scratch/candidate.py")
    process.source = "x = 1\n" * 50
    return Server(process)


def api(server: Server) -> dict[str, dict[str, int]]:
    """module -> name -> handle, as the kernel process learns them."""
    reply = server.handle(["mod", 0, []])
    assert reply is not None and reply[0] == "ok"
    listing = server.decode(reply[1])
    return {module: {name: server.table.interned[id(value)] for name, value in members}
            for module, members in listing}


def tile_handle(server: Server) -> int:
    data = np.arange(128 * 4, dtype=np.float32).reshape(128, 4)
    return server.table.add(hbm_tensor(data, "x"))


def test_the_api_listing_holds_the_public_functions_and_no_internals(server):
    names = api(server)
    assert {"load", "store", "ndarray", "affine_range", "exp", "float32", "tile_size"} <= set(names["language"])
    assert {"nc_matmul", "dma_copy", "activation"} <= set(names["isa"])
    for internal in ("np", "costmodel", "ops", "Tile", "copy_into", "new_tile", "reduce_tile", "math", "P"):
        assert internal not in names["language"], internal
    assert "np" not in names["isa"] and "nl" not in names["isa"]


@pytest.mark.parametrize("attribute", ["alloc", "read", "write", "pos", "_pos", "__dict__", "__class__", "data"])
def test_a_tile_shows_no_data_or_internals(server, attribute):
    reply = server.handle(["get", 0, [], tile_handle(server), attribute])
    assert reply is not None and reply[0] == "err" and reply[1] == "AttributeError", reply


def test_a_tile_shows_its_shape_and_dtype(server):
    h = tile_handle(server)
    assert server.handle(["get", 0, [], h, "shape"]) == ["ok", ["t", [128, 4]]]
    dtype = server.handle(["get", 0, [], h, "dtype"])
    assert dtype[0] == "ok" and dtype[1][0] == "h" and dtype[1][2]["name"] == "float32"


def test_operators_on_tiles_are_engine_ops_and_give_tiles(server):
    h = tile_handle(server)
    reply = server.handle(["op", 0, [], "lt", ["h", h], 3])
    assert reply[0] == "err", "a comparison on a tile would be tensor data on the host"
    reply = server.handle(["op", 0, [], "mod", "%s", ["h", h]])
    assert reply[0] == "err", "formatting through an operator is not available"


def test_a_tile_has_no_truth_value_or_number(server):
    h = tile_handle(server)
    assert server.handle(["bool", 0, [], h])[0] == "err"
    assert server.handle(["index", 0, [], h])[0] == "err"


def test_only_handed_out_callables_can_be_called(server):
    h = tile_handle(server)
    assert server.handle(["call", 0, [], h, [], {}])[0] == "err"
    names = api(server)
    dtype = names["language"]["float32"]
    assert server.handle(["call", 0, [], dtype, [], {}])[0] == "err"


def test_handles_die_at_every_launch(server):
    h = tile_handle(server)
    server.table.clear_launch()
    reply = server.handle(["get", 0, [], h, "shape"])
    assert reply[0] == "err" and "no longer exists" in reply[2]


def test_the_kernel_cannot_send_object_arrays_or_strings_as_data(server):
    with pytest.raises(TypeError):
        server.decode(["a", "object", [1], [["h", 1]]])
    with pytest.raises(TypeError):
        server.decode(["np", "U8"])


def test_a_deferred_failure_is_told_at_the_next_waiting_request_with_its_line(server):
    h = tile_handle(server)
    assert server.handle(["dop", 7, [], -1, "lt", ["h", h], 1]) is None
    assert server.handle(["dop", 8, [], -2, "xor", ["h", h], 1]) is None  # skipped after the first failure
    reply = server.handle(["get", 9, [], h, "shape"])
    assert reply[0] == "err" and reply[3] == 7, reply


def test_a_deferred_result_must_be_a_tile_loop_or_index_array(server):
    names = api(server)
    assert server.handle(["dcall", 3, [], -1, names["language"]["program_id"], [], {}]) is None
    reply = server.handle(["get", 4, [], -1, "shape"])
    assert reply[0] == "err" and "not a tile" in reply[2]


def test_a_deferred_result_cannot_take_an_existing_handle(server):
    h = tile_handle(server)
    names = api(server)
    server.handle(["dcall", 3, [], -5, names["language"]["arange"], [4], {}])
    assert isinstance(server.table.get(-5)[0], np.ndarray)
    server.handle(["ditem", 3, [], -5, h, ["s", 0, 1, None]])  # -5 is taken
    assert not isinstance(server.table.get(-5)[0], Tile)


def test_numpy_operators_arrive_by_name_and_only_from_the_list_kernels_use(server: Server):
    assert server.decode(["uf", "multiply"]) is np.multiply
    assert server.decode(["uf", "sum"]) is np.sum
    for name in ("load", "frombuffer", "__class__", "lib"):  # anything else in numpy stays out of reach
        with pytest.raises(TypeError, match="not an operator"):
            server.decode(["uf", name])
