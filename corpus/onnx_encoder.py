"""The fast encoder: an ONNX build of a sentence-transformers model, made offline, run by
OpenVINO in bfloat16 where the CPU computes in it, else by onnxruntime as int8.

The model's own torch weights are exported with ``torch.onnx.export`` (the transformer only:
token ids in, last hidden state out). Then one of two runtimes, chosen per machine:

- **OpenVINO, bfloat16** (``openvino-bf16``), when OpenVINO is installed and the CPU has
  bfloat16 arithmetic (AVX-512 BF16, AMX): the fp32 export, compiled with bf16 inference
  precision, so its matrix products run on AMX tiles. 3.4x raw ``SentenceTransformer.encode``
  at cosine 0.9999 to fp32, where onnxruntime's int8, already on AMX's int8 tiles for its
  matrix products, was held near 2x by its fp32 softmax, normalisation and GELU.
- **onnxruntime, int8** (``onnx-int8``) otherwise: the export quantized with onnxruntime's
  dynamic quantization, int8 weights per output channel, MatMul nodes only (per-tensor int8
  lost too much of the ranking's quality on Cranfield). On a CPU without bf16, OpenVINO in fp32
  was slower than this.

Figures: `benchmarks/encoder.py`, docs/benchmarks.md. The build happens on first use (some
seconds) and is cached in ``cache_dir`` under the fp32 model's version, so every process of a
deployment that shares the folder reuses one file.

Encoding uses the model's own tokenizer (its ``max_seq_length`` truncation), mean pooling over
the attention mask, and L2 normalisation, as the sentence-transformers pipeline of
all-MiniLM-L6-v2 does. The vectors are close to fp32's but not equal, so the model version is
a different one: the fp32 version + ``+openvino-bf16:`` or ``+onnx-int8:`` + the hash of the
file the runtime reads. An index, and the embedding cache, never mix any two of them: an index
built by the other runtime (or by this module's earlier int8-only version, on a bf16 machine)
is refused at search time until it is rebuilt ("The model of ... changed since its index was
built; rebuild it.").
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
import threading
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from corpus.embedding import (
    Encoder,
    ModelInfo,
    ModelNotFoundError,
    encoder_missing,
    model_version,
    texts_to_encode,
)

# The retriever's ``params.backend`` naming this encoder (kept from when it was int8 only).
BACKEND = "onnx-int8"
OPENVINO_BF16 = "openvino-bf16"
_MAX_BATCH = 32
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_built: dict[tuple[Path, Path, int, str], tuple[Any, Any, ModelInfo, int]] = {}
_built_lock = threading.Lock()


class OnnxEncoder:
    """Encoder's interface (``info``, ``encode``) over the ONNX build of a model folder.

    ``runtime`` is ``"openvino-bf16"``, ``"onnx-int8"`` or None: the first this machine can
    run (`best_runtime`)."""

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        cache_dir: str | Path,
        threads: int = 0,
        batch_size: int = _MAX_BATCH,
        runtime: str | None = None,
    ) -> None:
        if runtime not in (None, OPENVINO_BF16, BACKEND):
            raise ValueError(f"runtime is {OPENVINO_BF16} or {BACKEND}, not {runtime!r}.")
        self.runtime = runtime or best_runtime()
        self.fp32 = Encoder(model_path)
        self.cache_dir = Path(cache_dir)
        # 0: the runtime's default (one thread per core).
        self.threads = threads
        self.batch_size = batch_size

    @property
    def info(self) -> ModelInfo:
        return self._session()[2]

    @property
    def model_file(self) -> Path:
        # The folder's version from its files: loading the torch model only to name the file
        # would cost seconds before anyone is told the build is under way (`is_built`).
        version = model_version(self.fp32.model_path)
        name = "model-int8.onnx" if self.runtime == BACKEND else "model.onnx"
        return self.cache_dir / version.replace(":", "-") / name

    def is_built(self) -> bool:
        """Whether the build is ready; if not, the first `encode` or `info` makes it (tens of
        seconds, minutes on a busy machine), once per model and cache folder."""
        key = self._key()
        return key in _built or self.model_file.is_file()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised float32 vectors, one row per text, in input order."""
        texts = texts_to_encode(texts)
        run, tokenizer, info, max_length = self._session()
        out = np.zeros((len(texts), info.dimension), dtype=np.float32)
        # Texts of similar length share a batch (as sentence-transformers sorts them), so little
        # padding is computed.
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        for first in range(0, len(order), self.batch_size):
            rows = order[first : first + self.batch_size]
            encoded = tokenizer(
                [texts[i] for i in rows],
                padding=True,
                truncation=True,
                max_length=max_length,
                return_tensors="np",
            )
            hidden = run(
                {name: encoded[name].astype(np.int64) for name in _INPUTS if name in encoded}
            )
            mask = encoded["attention_mask"][..., np.newaxis].astype(np.float32)
            pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[rows] = pooled / np.clip(norms, 1e-12, None)
        return out

    def _key(self) -> tuple[Path, Path, int, str]:
        return (self.fp32.model_path, self.cache_dir, self.threads, self.runtime)

    def _session(self) -> tuple[Any, Any, ModelInfo, int]:
        key = self._key()
        with _built_lock:
            if key not in _built:
                try:
                    from transformers import AutoTokenizer
                except ImportError as exc:
                    raise encoder_missing(exc) from exc

                path = self.fp32.model_path
                _check_mean_pooling(path)
                model_file = self.model_file
                if not model_file.is_file():
                    if self.runtime == BACKEND:
                        build_int8(path, model_file)
                    else:
                        export_fp32(path, model_file)
                opened = _openvino if self.runtime == OPENVINO_BF16 else _onnxruntime
                fp32 = self.fp32.info
                info = ModelInfo(
                    name=f"{fp32.name} ({self.runtime})",
                    version=f"{fp32.version}+{self.runtime}:{_file_hash(model_file)}",
                    dimension=fp32.dimension,
                )
                tokenizer = AutoTokenizer.from_pretrained(str(path))
                run = opened(model_file, self.threads)
                _built[key] = (run, tokenizer, info, _max_seq_length(path))
            return _built[key]


@functools.cache
def best_runtime() -> str:
    """``openvino-bf16`` where OpenVINO is installed and the CPU computes in bfloat16, else
    ``onnx-int8`` (OpenVINO in fp32 was slower than onnxruntime's int8)."""
    try:
        import openvino
    except ImportError:
        return BACKEND
    capabilities = openvino.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    return OPENVINO_BF16 if "BF16" in capabilities else BACKEND


Run = Callable[[dict[str, np.ndarray]], np.ndarray]


def _onnxruntime(model_file: Path, threads: int) -> Run:
    try:
        import onnxruntime
    except ImportError as exc:
        raise encoder_missing(exc) from exc
    options = onnxruntime.SessionOptions()
    # Idle threads sleep instead of spinning: on cores shared with web workers a spinning pool
    # takes CPU from labellers' requests for nothing.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if threads:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(
        str(model_file), options, providers=["CPUExecutionProvider"]
    )
    names = {i.name for i in session.get_inputs()}

    def run(feed: dict[str, np.ndarray]) -> np.ndarray:
        return session.run(None, {name: feed[name] for name in names})[0]

    return run


def _openvino(model_file: Path, threads: int) -> Run:
    import openvino

    core = openvino.Core()
    config: dict[str, Any] = {
        "INFERENCE_PRECISION_HINT": "bf16",
        # One request at a time per process, as onnxruntime's session: all threads on it.
        "PERFORMANCE_HINT": "LATENCY",
    }
    if threads:
        config["INFERENCE_NUM_THREADS"] = threads
    compiled = core.compile_model(core.read_model(str(model_file)), "CPU", config)
    precision = str(compiled.get_property("INFERENCE_PRECISION_HINT"))
    if "bf" not in precision.lower():
        # The version says bf16: vectors of another precision must not carry it.
        raise ModelNotFoundError(f"OpenVINO compiled the encoder in {precision}, not bf16.")
    names = {port.get_any_name() for port in compiled.inputs}
    output = compiled.outputs[0]

    def run(feed: dict[str, np.ndarray]) -> np.ndarray:
        # An infer request is not shared between threads: one per batch (they are cheap).
        request = compiled.create_infer_request()
        result = request.infer({name: feed[name] for name in names})
        return np.array(result[output], dtype=np.float32)

    return run


def export_fp32(model_path: Path, target: Path) -> None:
    """Export the model's transformer to ONNX from its torch weights (OpenVINO reads it)."""
    _export(model_path, target, quantize=False)


def build_int8(model_path: Path, target: Path) -> None:
    """Export the model's transformer to ONNX and quantize it to int8 (onnxruntime runs it)."""
    _export(model_path, target, quantize=True)


def _export(model_path: Path, target: Path, *, quantize: bool) -> None:
    """Written to a temporary file in the target folder and renamed into place, so a process
    reading the cache never sees half a file and two processes building at once both end with
    a whole one."""
    try:
        import torch
        from transformers import AutoModel, AutoTokenizer

        if quantize:
            from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise encoder_missing(exc) from exc

    target.parent.mkdir(parents=True, exist_ok=True)
    # Eager attention traces to plain MatMul/Softmax nodes (SDPA's trace depends on the mask).
    model = AutoModel.from_pretrained(str(model_path), attn_implementation="eager").eval()
    tokenizer = AutoTokenizer.from_pretrained(str(model_path))
    sample = tokenizer(["an example sentence", "a second one"], padding=True, return_tensors="pt")
    names = [name for name in _INPUTS if name in sample]

    class LastHiddenState(torch.nn.Module):
        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            return self.inner(**dict(zip(names, inputs, strict=True))).last_hidden_state

    with tempfile.TemporaryDirectory(dir=target.parent) as work, warnings.catch_warnings():
        # The tracer's general cautions (a Python bool in transformers' masking, advanced
        # indexing in opset 17) are console noise on every first start: whether the exported
        # graph is right is checked where it matters, its vectors against the torch model's
        # (tests/corpus/test_onnx_encoder.py).
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
        warnings.filterwarnings("ignore", category=UserWarning, module=r"torch\.onnx")
        exported = Path(work) / "model.onnx"
        with torch.no_grad():
            torch.onnx.export(
                LastHiddenState(model),
                tuple(sample[name] for name in names),
                str(exported),
                input_names=names,
                output_names=["last_hidden_state"],
                dynamic_axes={n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]},
                opset_version=17,
                dynamo=False,
            )
        if not quantize:
            os.replace(exported, target)
            return
        quantized = Path(work) / "model-int8.onnx"
        quantize_dynamic(
            str(exported),
            str(quantized),
            per_channel=True,
            op_types_to_quantize=["MatMul"],
            weight_type=QuantType.QInt8,
        )
        os.replace(quantized, target)


def _check_mean_pooling(path: Path) -> None:
    config = path / "1_Pooling" / "config.json"
    if config.is_file():
        pooling = json.loads(config.read_text())
        if not pooling.get("pooling_mode_mean_tokens", False):
            raise ModelNotFoundError(
                f"The ONNX encoder pools by mean, and the model at {path} does not."
            )


def _max_seq_length(path: Path) -> int:
    config = path / "sentence_bert_config.json"
    if config.is_file():
        return int(json.loads(config.read_text()).get("max_seq_length", 256))
    return 256


def _file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()[:16]
