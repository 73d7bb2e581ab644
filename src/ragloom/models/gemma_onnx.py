"""EmbeddingGemma's sentence-transformers folder turned into one ONNX graph, without torch.

The model ships as safetensors for PyTorch (``Gemma3TextModel`` with bidirectional attention,
mean pooling, two dense layers). onnxruntime, which already runs the default embedder, runs it
as well once the graph is written down, so the weights are read here with numpy (a safetensors
file is a JSON header and raw little-endian arrays) and the network is spelt out in standard
ONNX operators: Gemma's RMS norms (``x * (1 + w)``), rotary positions (a global base for the
full-attention layers and a local base for the sliding ones), one key/value head shared by the
three query heads, the bidirectional window of the sliding layers, tanh GELU gating, mean
pooling over the mask and the two dense projections. The vectors are the model's own before
normalisation (the embedder normalises, and cuts Matryoshka dimensions).

``convert`` writes the fp32 graph and then, with onnxruntime's dynamic quantisation, the INT8
one the embedder loads (see BENCHMARKS.md for what each costs and how close they are).
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

#: Input values that share one scale in a quantised weight (smaller: closer to fp32, slower).
BLOCK = 32

_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16, "I64": np.int64}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of a safetensors file, as float32 numpy arrays (memory-mapped where possible)."""
    with open(path, "rb") as handle:
        length = struct.unpack("<Q", handle.read(8))[0]
        header = json.loads(handle.read(length))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + length)
    tensors: dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        dtype = _DTYPES[info["dtype"]]
        array = data[start:end].view(dtype).reshape(info["shape"])
        if info["dtype"] == "BF16":
            array = (array.astype(np.uint32) << 16).view(np.float32)
        tensors[name] = array.astype(np.float32, copy=False)
    return tensors


class _Graph:
    """A small helper to write an ONNX graph node by node."""

    def __init__(self) -> None:
        from onnx import helper

        self.helper = helper
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._count = 0

    def name(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def const(self, value: np.ndarray | float | int | list[int], hint: str = "c") -> str:
        from onnx import numpy_helper

        array = np.asarray(value)
        if array.dtype == np.float64:
            array = array.astype(np.float32)
        name = self.name(hint)
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def weight(self, array: np.ndarray, name: str) -> str:
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array, dtype=np.float32), name))
        return name

    def matmul_8bit(self, x: str, weight: np.ndarray, hint: str) -> str:
        """``x @ weight.T`` with the weight in symmetric INT8 blocks of ``BLOCK`` input values,
        each with its own scale (onnxruntime's ``MatMulNBits``); activations stay fp32 and are
        quantised per block inside the kernel (``accuracy_level`` 4), one row at a time, so a
        text's vector does not depend on the others in its batch."""
        from onnx import numpy_helper
        from onnxruntime.capi._pybind_state import quantize_matmul_8bits

        matrix = np.ascontiguousarray(weight.T, dtype=np.float32)  # [K, N]
        rows, cols = matrix.shape
        blocks = (rows + BLOCK - 1) // BLOCK
        if blocks * BLOCK != rows:
            matrix = np.pad(matrix, ((0, blocks * BLOCK - rows), (0, 0)))
        packed = np.zeros((cols, blocks, BLOCK), dtype=np.uint8)
        scales = np.zeros((cols, blocks), dtype=np.float32)
        zero_points = np.zeros((cols, blocks), dtype=np.uint8)
        quantize_matmul_8bits(packed, matrix, scales, zero_points, BLOCK, cols, rows, True)
        self.initializers.append(numpy_helper.from_array(packed, hint + "_q8"))
        self.initializers.append(numpy_helper.from_array(scales, hint + "_scales"))
        out = self.name(hint)
        self.nodes.append(self.helper.make_node(
            "MatMulNBits", [x, hint + "_q8", hint + "_scales"], [out], domain="com.microsoft",
            K=rows, N=cols, bits=8, block_size=BLOCK, accuracy_level=4))
        return out

    def op(self, kind: str, *inputs: str, hint: str | None = None, **attributes: Any) -> str:
        out = self.name(hint or kind.lower())
        self.nodes.append(self.helper.make_node(kind, list(inputs), [out], **attributes))
        return out


def _rope_tables(base: float, dim: int, length: int) -> tuple[np.ndarray, np.ndarray]:
    inv_freq = 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.int64).astype(np.float32) / dim))
    freqs = np.outer(np.arange(length, dtype=np.float32), inv_freq)
    emb = np.concatenate([freqs, freqs], axis=-1)
    return np.cos(emb).astype(np.float32), np.sin(emb).astype(np.float32)


def build_model(folder: Path, quantize: bool = True, max_positions: int | None = None) -> Any:
    """The ONNX model of the sentence-transformers folder ``folder``: with ``quantize``, its
    linear layers' weights in INT8 blocks (``MatMulNBits``) and its token table in INT8 rows;
    else every weight in fp32 (the reference)."""
    from onnx import TensorProto, helper

    config = json.loads((folder / "config.json").read_text())
    weights = read_safetensors(folder / "model.safetensors")
    dense = [read_safetensors(folder / part / "model.safetensors")["linear.weight"] for part in _dense_parts(folder)]
    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    kv_heads = int(config["num_key_value_heads"])
    head_dim = int(config["head_dim"])
    eps = float(config["rms_norm_eps"])
    layers = list(config.get("layer_types") or [])
    length = int(max_positions or config["max_position_embeddings"])
    window = _attention_window(config)
    scaling = float(config["query_pre_attn_scalar"]) ** -0.5

    g = _Graph()
    ids, mask = "input_ids", "attention_mask"
    # Positions 0..T-1 and the tables' first T rows.
    shape = g.op("Shape", ids)
    steps = g.op("Gather", shape, g.const(np.array(1, dtype=np.int64)), axis=0)
    zero64, one64 = g.const(np.array(0, dtype=np.int64)), g.const(np.array(1, dtype=np.int64))
    positions = g.op("Range", zero64, steps, one64)
    steps_1d = g.op("Unsqueeze", steps, g.const(np.array([0], dtype=np.int64)))
    tables = {}
    for kind, base in zip(("global", "local"), _rope_bases(config)):
        cos, sin = _rope_tables(base, head_dim, length)
        sliced = [g.op("Slice", g.const(t, f"rope_{kind}"), g.const(np.array([0], dtype=np.int64)), steps_1d,
                       g.const(np.array([0], dtype=np.int64))) for t in (cos, sin)]
        tables[kind] = sliced  # [T, head_dim], broadcast over batch and heads

    # Attention biases: padding (every layer) and the bidirectional window (sliding layers).
    maskf = g.op("Cast", mask, to=TensorProto.FLOAT)
    pad_bias = g.op("Mul", g.op("Sub", g.const(np.float32(1.0)), maskf), g.const(np.float32(-1e9)))
    pad_bias = g.op("Unsqueeze", pad_bias, g.const(np.array([1, 2], dtype=np.int64)))  # [B,1,1,T]
    rows = g.op("Unsqueeze", positions, g.const(np.array([1], dtype=np.int64)))
    cols = g.op("Unsqueeze", positions, g.const(np.array([0], dtype=np.int64)))
    distance = g.op("Abs", g.op("Sub", rows, cols))
    outside = g.op("Cast", g.op("Not", g.op("Less", distance, g.const(np.array(window, dtype=np.int64)))),
                   to=TensorProto.FLOAT)
    window_bias = g.op("Add", pad_bias, g.op("Mul", outside, g.const(np.float32(-1e9))))  # [B,1,T,T]

    def rms_norm(x: str, weight: np.ndarray, hint: str) -> str:
        mean = g.op("ReduceMean", g.op("Mul", x, x), g.const(np.array([-1], dtype=np.int64)), keepdims=1)
        normed = g.op("Div", x, g.op("Sqrt", g.op("Add", mean, g.const(np.float32(eps)))))
        return g.op("Mul", normed, g.weight(1.0 + weight, hint))

    def linear(x: str, weight: np.ndarray, hint: str) -> str:
        if not quantize:
            return g.op("MatMul", x, g.weight(weight.T, hint))
        return g.matmul_8bit(x, weight, hint)

    def rotate(x: str, cos: str, sin: str) -> str:
        half = head_dim // 2
        first = g.op("Slice", x, g.const(np.array([0], dtype=np.int64)), g.const(np.array([half], dtype=np.int64)),
                     g.const(np.array([-1], dtype=np.int64)))
        second = g.op("Slice", x, g.const(np.array([half], dtype=np.int64)),
                      g.const(np.array([head_dim], dtype=np.int64)), g.const(np.array([-1], dtype=np.int64)))
        rotated = g.op("Concat", g.op("Neg", second), first, axis=-1)
        return g.op("Add", g.op("Mul", x, cos), g.op("Mul", rotated, sin))

    def heads_of(x: str, count: int) -> str:  # [B,T,count*hd] -> [B,count,T,hd]
        shaped = g.op("Reshape", x, g.const(np.array([0, 0, count, head_dim], dtype=np.int64)))
        return g.op("Transpose", shaped, perm=[0, 2, 1, 3])

    def gelu_tanh(x: str) -> str:
        cube = g.op("Mul", g.op("Mul", x, x), x)
        inner = g.op("Mul", g.op("Add", x, g.op("Mul", cube, g.const(np.float32(0.044715)))),
                     g.const(np.float32(math.sqrt(2.0 / math.pi))))
        return g.op("Mul", g.op("Mul", x, g.const(np.float32(0.5))), g.op("Add", g.op("Tanh", inner), g.const(np.float32(1.0))))

    if quantize:
        embedded = _embedding(g, weights["embed_tokens.weight"], ids, TensorProto.FLOAT)
    else:
        embedded = g.op("Gather", g.weight(weights["embed_tokens.weight"], "embed_tokens"), ids, axis=0)
    h = g.op("Mul", embedded, g.const(np.float32(np.float32(hidden) ** 0.5)))
    for n in range(int(config["num_hidden_layers"])):
        p = f"layers.{n}."
        sliding = (layers[n] if layers else "full_attention") == "sliding_attention"
        cos, sin = tables["local" if sliding else "global"]
        x = rms_norm(h, weights[p + "input_layernorm.weight"], p + "input_norm")
        q = heads_of(linear(x, weights[p + "self_attn.q_proj.weight"], p + "q"), heads)
        k = heads_of(linear(x, weights[p + "self_attn.k_proj.weight"], p + "k"), kv_heads)
        v = heads_of(linear(x, weights[p + "self_attn.v_proj.weight"], p + "v"), kv_heads)
        q = rotate(rms_norm(q, weights[p + "self_attn.q_norm.weight"], p + "q_norm"), cos, sin)
        k = rotate(rms_norm(k, weights[p + "self_attn.k_norm.weight"], p + "k_norm"), cos, sin)
        if kv_heads != heads and kv_heads != 1:  # grouped heads: repeat each key/value head
            k = g.op("Tile", k, g.const(np.array([1, heads // kv_heads, 1, 1], dtype=np.int64)))
            v = g.op("Tile", v, g.const(np.array([1, heads // kv_heads, 1, 1], dtype=np.int64)))
        scores = g.op("Mul", g.op("MatMul", q, g.op("Transpose", k, perm=[0, 1, 3, 2])), g.const(np.float32(scaling)))
        scores = g.op("Add", scores, window_bias if sliding else pad_bias)
        attended = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)  # [B,H,T,hd]
        merged = g.op("Reshape", g.op("Transpose", attended, perm=[0, 2, 1, 3]),
                      g.const(np.array([0, 0, heads * head_dim], dtype=np.int64)))
        out = linear(merged, weights[p + "self_attn.o_proj.weight"], p + "o")
        h = g.op("Add", h, rms_norm(out, weights[p + "post_attention_layernorm.weight"], p + "post_attn_norm"))
        x = rms_norm(h, weights[p + "pre_feedforward_layernorm.weight"], p + "pre_ff_norm")
        gate = gelu_tanh(linear(x, weights[p + "mlp.gate_proj.weight"], p + "gate"))
        up = linear(x, weights[p + "mlp.up_proj.weight"], p + "up")
        down = linear(g.op("Mul", gate, up), weights[p + "mlp.down_proj.weight"], p + "down")
        h = g.op("Add", h, rms_norm(down, weights[p + "post_feedforward_layernorm.weight"], p + "post_ff_norm"))
    h = rms_norm(h, weights["norm.weight"], "final_norm")

    # Mean over the tokens the mask keeps (the prompt included, as the model was trained).
    weights_3d = g.op("Unsqueeze", maskf, g.const(np.array([2], dtype=np.int64)))
    summed = g.op("ReduceSum", g.op("Mul", h, weights_3d), g.const(np.array([1], dtype=np.int64)), keepdims=0)
    counts = g.op("Max", g.op("ReduceSum", maskf, g.const(np.array([1], dtype=np.int64)), keepdims=1),
                  g.const(np.float32(1e-9)))
    pooled = g.op("Div", summed, counts)
    for number, matrix in enumerate(dense):
        pooled = linear(pooled, matrix, f"dense_{number}")
    g.nodes.append(helper.make_node("Identity", [pooled], ["sentence_embedding"]))

    graph = helper.make_graph(
        g.nodes, "embeddinggemma",
        [helper.make_tensor_value_info(ids, TensorProto.INT64, ["batch", "tokens"]),
         helper.make_tensor_value_info(mask, TensorProto.INT64, ["batch", "tokens"])],
        [helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", int(dense[-1].shape[0]) if dense else hidden])],
        g.initializers,
    )
    opsets = [helper.make_opsetid("", 18), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets, producer_name="ragloom")


def _embedding(g: _Graph, table: np.ndarray, ids: str, float_type: int) -> str:
    """The rows of ``ids``, from the table stored as INT8 with one scale per row: a quarter of
    the fp32 table (805 MB -> 201 MB for Gemma's 262,144 tokens), and each row's values keep
    their own range, so the vectors move by less than a 1e-4 cosine."""
    from onnx import numpy_helper

    scales = np.abs(table).max(axis=1, keepdims=True) / 127.0
    scales[scales == 0] = 1.0
    quantised = np.empty(table.shape, dtype=np.int8)
    for start in range(0, table.shape[0], 16384):  # in slices: no fp32 copy of the whole table
        block = table[start : start + 16384] / scales[start : start + 16384]
        quantised[start : start + 16384] = np.clip(np.rint(block), -127, 127).astype(np.int8)
    g.initializers.append(numpy_helper.from_array(quantised, "embed_tokens_int8"))
    g.initializers.append(numpy_helper.from_array(scales.astype(np.float32), "embed_tokens_scale"))
    rows = g.op("Cast", g.op("Gather", "embed_tokens_int8", ids, axis=0), to=float_type)
    return g.op("Mul", rows, g.op("Gather", "embed_tokens_scale", ids, axis=0))


def _dense_parts(folder: Path) -> Iterator[str]:
    """The dense layers after pooling, in the order modules.json lists them."""
    modules = json.loads((folder / "modules.json").read_text())
    for module in sorted(modules, key=lambda m: int(m["idx"])):
        if module["type"].endswith(".Dense"):
            yield module["path"]


def _rope_bases(config: dict[str, Any]) -> tuple[float, float]:
    """Rotary bases of the full-attention and the sliding layers, as transformers 4
    (``rope_theta``, ``rope_local_base_freq``) or 5 (``rope_parameters`` per layer type) writes them."""
    per_type = config.get("rope_parameters") or {}
    if "full_attention" in per_type:
        return (float(per_type["full_attention"]["rope_theta"]),
                float(per_type.get("sliding_attention", {}).get("rope_theta", 10000.0)))
    return float(config["rope_theta"]), float(config.get("rope_local_base_freq", 10000.0))


def _attention_window(config: dict[str, Any]) -> int:
    """How far apart two tokens of a sliding layer may be (``|i - j| < window``). With
    bidirectional attention the model looks half its sliding window each way
    (transformers' Gemma3TextConfig: ``sliding_window // 2 + 1``)."""
    window = int(config.get("sliding_window") or config["max_position_embeddings"])
    return window // 2 + 1 if config.get("use_bidirectional_attention") else window


def convert(folder: Path, out: Path, quantize: bool = True) -> Path:
    """Write ``out/model.onnx`` (its weights in ``model.onnx.data``) for the model in ``folder``:
    INT8 weights when ``quantize`` (what the embedder runs), else the fp32 reference."""
    import onnx

    out.mkdir(parents=True, exist_ok=True)
    target = out / "model.onnx"
    model = build_model(folder, quantize=quantize)
    onnx.save_model(model, str(target), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=target.name + ".data", size_threshold=1024)
    return target
