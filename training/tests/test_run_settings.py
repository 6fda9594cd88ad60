"""The training side reads the run settings the engine defines (run_settings.json, written by
`npm run gen` from src/core/vocabulary/settings.ts): one name and unit per concept, the coverage
target in percent as the reward service takes it."""

import json
from pathlib import Path

import pytest

from chorus_train import run_settings
from chorus_train.envs import TokenRewardEnv
from chorus_train.policy import Sample

REPO = Path(__file__).resolve().parents[2]


def test_the_copy_is_the_engines_settings():
    copy = json.loads((REPO / 'training' / 'chorus_train' / 'run_settings.json').read_text())['settings']
    assert copy['coverage_target']['unit'] == 'percent'
    assert copy['coverage_target']['service_field'] == 'coverage_target'
    assert run_settings.COVERAGE_TARGET == copy['coverage_target']['default'] == 100
    assert run_settings.default('timeout') == copy['timeout']['default']
    assert set(run_settings.setting('score')['enum']) == {'paper', 'legal'}


def test_values_are_checked_against_the_definition():
    assert run_settings.check('coverage_target', 90) == 90
    for bad in (-1, 100.5, 'x', True):
        with pytest.raises(ValueError, match='coverage_target'):
            run_settings.check('coverage_target', bad)
    with pytest.raises(ValueError, match="'paper', 'legal'"):
        run_settings.check('score', 'strict')
    with pytest.raises(KeyError, match='threshold'):
        run_settings.setting('threshold')


def test_a_task_target_is_a_percent():
    env = TokenRewardEnv(good={1})
    half = Sample(prompt_ids=[0], response_ids=[1, 2], text='')
    assert env.score({'coverage_target': 50}, [half])[0].passed
    assert not env.score({'coverage_target': 60}, [half])[0].passed
    assert not env.score({}, [half])[0].passed  # the default target is 100%
