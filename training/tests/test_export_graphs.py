"""The exported graphs compute the Hugging Face Qwen3 equations: both the transformers.js
past/present graph and the in-place KV cache graph (cache buffers larger than what is used, the
unused slots full of garbage), prompt in one call then token by token; and the in-place graph
shares its sibling's weight bytes instead of writing them again."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from conftest import tiny_cfg

from chorus_train import tiny_model
from chorus_train.export_onnx import export

IDS = [151644, 8948, 198, 2610, 525, 264, 1273, 13, 151645, 198, 151644, 77091, 198]


@pytest.fixture(scope='module')
def exported(tiny_ckpts, tmp_path_factory):
    out = tmp_path_factory.mktemp('export')
    export(tiny_ckpts[0], out, ['fp32', 'q4'], block=16, log=lambda *_: None)
    return tiny_ckpts[0], out / 'onnx'


@pytest.mark.parametrize(
    'fname, run, tol',
    [
        ('model.onnx', tiny_model.run_onnx, 2e-3),
        ('model.inplace.onnx', tiny_model.run_onnx_inplace, 2e-3),
        ('model_q4.onnx', tiny_model.run_onnx, None),
        ('model_q4.inplace.onnx', tiny_model.run_onnx_inplace, None),
    ],
)
def test_logits_match_the_numpy_reference(exported, fname, run, tol):
    ckpt, onnx_dir = exported
    ref = tiny_model.reference_logits(ckpt, IDS)
    got = run(onnx_dir / fname, tiny_cfg(), IDS, split=8)
    assert got.shape == ref.shape
    if tol is not None:
        assert np.abs(got - ref).max() / np.abs(ref).max() < tol
    else:  # 4-bit weights: close, not equal
        assert np.corrcoef(got.ravel(), ref.ravel())[0, 1] > 0.9


def test_inplace_graph_reuses_the_weight_bytes(exported):
    _, onnx_dir = exported
    for fname in ('model.onnx', 'model_q4.onnx'):
        plain = onnx.load(str(onnx_dir / fname), load_external_data=False)
        inplace = onnx.load(str(onnx_dir / fname.replace('.onnx', '.inplace.onnx')), load_external_data=False)

        def where(m):
            return {t.name: tuple((e.key, e.value) for e in t.external_data) for t in m.graph.initializer if t.external_data}

        a, b = where(plain), where(inplace)
        assert a, fname  # the weights are external
        for name, loc in b.items():
            assert a.get(name) == loc, name  # same file, offset and length
        names = {i.name for i in inplace.graph.input}
        assert {'past_length', 'cache.0.key', 'cache.0.value'} <= names
        assert 'attention_mask' not in names
        assert {o.name for o in inplace.graph.output} >= {'logits', 'new.0.key', 'new.0.value'}
