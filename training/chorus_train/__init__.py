"""CHORUS training pipeline: random-weight Qwen3 models, ONNX (transformers.js) and GGUF export."""

__version__ = '0.1.0'
