"""Naming a callable by data: ByName imports its module when called, not when it is made (a
plugin names its node this way, so that the node's main can import the plugin)."""

import sys

import pytest

from legacy_robot_common.plugin import ByName, resolve


def test_by_name_imports_its_module_when_called_not_before():
    sys.modules.pop('colorsys', None)
    to_hsv = ByName('colorsys:rgb_to_hsv')
    assert 'colorsys' not in sys.modules
    assert to_hsv(1.0, 0.0, 0.0) == (0.0, 1.0, 1.0)
    assert 'colorsys' in sys.modules


def test_resolve_names_the_module_and_the_attribute():
    assert resolve('os.path:join') is sys.modules['os'].path.join


@pytest.mark.parametrize(
    'spec, error, named',
    [
        ('colorsys:no_such_function', AttributeError, 'no_such_function'),
        ('no_such_module:f', ImportError, 'no_such_module'),
    ],
)
def test_a_wrong_name_fails_when_called_and_says_which(spec, error, named):
    with pytest.raises(error, match=named):
        ByName(spec)()
