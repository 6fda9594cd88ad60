"""The run settings as the engine defines them (src/core/vocabulary/settings.ts), read from the
copy `npm run gen` writes beside this file (run_settings.json): one name, unit and default per
concept on both sides. The coverage target above all: percent, `coverage_target`, as in the
reward service's requests and the `chorus` command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

_SETTINGS: dict[str, dict[str, Any]] = json.loads(Path(__file__).with_name('run_settings.json').read_text())['settings']


def setting(name: str) -> dict[str, Any]:
    """The definition of a run setting by its Python (snake_case) name; KeyError names the ones there are."""
    try:
        return _SETTINGS[name]
    except KeyError:
        raise KeyError(f'no run setting {name!r} (there are: {", ".join(_SETTINGS)})') from None


def default(name: str) -> Any:
    return setting(name)['default']


def check(name: str, value: Any) -> Any:
    """`value` if it is one of the setting's values, else ValueError saying what it takes."""
    d = setting(name)
    if 'enum' in d:
        if value not in d['enum']:
            raise ValueError(f'{name} must be one of {d["enum"]}, got {value!r}')
        return value
    if d['type'] in ('number', 'integer'):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        ok = ok and (d['type'] != 'integer' or float(value).is_integer())
        ok = ok and value >= d.get('minimum', float('-inf')) and value <= d.get('maximum', float('inf'))
        ok = ok and ('exclusiveMinimum' not in d or value > d['exclusiveMinimum'])
        if not ok:
            raise ValueError(f'{name} must be a {d["type"]} in its range ({d["description"]}), got {value!r}')
    return value


COVERAGE_TARGET = default('coverage_target')
"""The default coverage target, percent (100: a run passes at full coverage)."""
