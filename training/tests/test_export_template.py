"""The chat template reaches the exported model however the checkpoint stored it."""

from __future__ import annotations

import json

from chorus_train.export_onnx import inline_chat_template


def export_dirs(tmp_path, jinja: str, config: dict):
    """A checkpoint holding chat_template.jinja and an export holding tokenizer_config.json."""
    src, out = tmp_path / 'ckpt', tmp_path / 'out'
    src.mkdir()
    out.mkdir()
    (src / 'chat_template.jinja').write_text(jinja)
    (out / 'tokenizer_config.json').write_text(json.dumps(config))
    return src, out


def test_jinja_template_is_inlined_into_tokenizer_config(tmp_path):
    src, out = export_dirs(tmp_path, '{% for m in messages %}<|im_start|>{{ m.role }}{% endfor %}', {'eos_token': '<|im_end|>'})
    inline_chat_template(src, out)
    cfg = json.loads((out / 'tokenizer_config.json').read_text())
    assert cfg['chat_template'].startswith('{% for m in messages %}')
    assert cfg['eos_token'] == '<|im_end|>'
    assert (out / 'chat_template.jinja').exists()


def test_existing_template_in_config_wins(tmp_path):
    src, out = export_dirs(tmp_path, 'new', {'chat_template': 'kept'})
    inline_chat_template(src, out)
    assert json.loads((out / 'tokenizer_config.json').read_text())['chat_template'] == 'kept'


def test_no_jinja_no_change(tmp_path):
    (tmp_path / 'tokenizer_config.json').write_text('{"a": 1}')
    inline_chat_template(tmp_path / 'missing', tmp_path)
    assert (tmp_path / 'tokenizer_config.json').read_text() == '{"a": 1}'
