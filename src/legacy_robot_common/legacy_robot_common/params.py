"""Declaring parameters with a description and a clear error for invalid values.

A node lists its parameters as data, a tuple of `Parameter` records (its `parameters.py`), and
declares them all with `declare_table`; `declare` stays for a parameter whose default or range
depends on other values.
"""

from dataclasses import dataclass
from types import SimpleNamespace

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
from rclpy.parameter import Parameter as RosParameter


class ParameterError(ValueError):
    """A parameter value the driver cannot work with; the message says which and why."""


@dataclass(frozen=True)
class Parameter:
    """One row of a node's parameter table: what `declare` takes, as data."""

    name: str
    default: object
    description: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple | None = None
    read_only: bool = False


def read_only(name, default, description, **limits):
    """A `Parameter` fixed at start (most of a driver's are): `read_only=True`."""
    return Parameter(name, default, description, read_only=True, **limits)


def declare_table(node, table):
    """Declare every `Parameter` of `table` in order, each checked as `declare` checks it.

    Returns the values as a namespace, one attribute per parameter name (`values.port`);
    `vars(values)` is the {name: value} dict. A list default is copied: a table is shared by
    every node of its kind in a process.
    """
    return SimpleNamespace(
        **{
            row.name: declare(
                node,
                row.name,
                list(row.default) if isinstance(row.default, list) else row.default,
                row.description,
                minimum=row.minimum,
                maximum=row.maximum,
                choices=row.choices,
                read_only=row.read_only,
            )
            for row in table
        }
    )


def declare(
    node, name, default, description, *, minimum=None, maximum=None, choices=None, read_only=False
):
    """Declare one parameter and return its value, checked against range and choices."""
    descriptor = ParameterDescriptor(description=description, read_only=read_only)
    numeric = isinstance(default, (int, float)) and not isinstance(default, bool)
    if numeric and (minimum is not None or maximum is not None):
        low = (
            minimum if minimum is not None else (-(2**63) if isinstance(default, int) else -1e308)
        )
        high = (
            maximum if maximum is not None else (2**63 - 1 if isinstance(default, int) else 1e308)
        )
        if isinstance(default, int):
            descriptor.integer_range = [
                IntegerRange(from_value=int(low), to_value=int(high), step=0)
            ]
        else:
            descriptor.floating_point_range = [
                FloatingPointRange(from_value=float(low), to_value=float(high), step=0.0)
            ]
    _accept_integers_as_numbers(node, name, default)
    try:
        if isinstance(default, RosParameter.Type):
            return _declare_optional(node, name, default, descriptor)
        value = node.declare_parameter(name, default, descriptor).value
    except (InvalidParameterValueException, InvalidParameterTypeException) as exc:
        raise ParameterError(_explain(node, name, default, minimum, maximum, exc)) from None
    if choices is not None and value not in choices:
        raise ParameterError(
            f'{node.get_name()}: parameter {name!r} is {value!r}; '
            f'expected one of {", ".join(map(repr, choices))}'
        )
    return value


# "not set" for a parameter declared by its type alone: its type's empty value
NOT_SET = {
    RosParameter.Type.STRING: '',
    RosParameter.Type.BOOL_ARRAY: [],
    RosParameter.Type.INTEGER_ARRAY: [],
    RosParameter.Type.DOUBLE_ARRAY: [],
    RosParameter.Type.STRING_ARRAY: [],
}


def _declare_optional(node, name, type_, descriptor):
    """A parameter with no default, declared by its type (e.g. a mount that is the model's
    unless given): its value, or None when not given. Left unset, rclpy's get_parameters would
    answer nothing at all for a request that names it, and rqt_reconfigure and `ros2 param
    dump` ask for every name at once: "not set" is the type's empty value instead, which every
    tool can show (so an empty value given counts as not set too)."""
    if type_ not in NOT_SET:
        raise ValueError(f'parameter {name!r}: only a string or an array may have no default')
    value = node.declare_parameter(name, type_, descriptor).value
    if value is None:
        # set directly: rclpy reads an empty list as a byte array, not as this type
        node._parameters[name] = RosParameter(name, type_, NOT_SET[type_])
    return None if value is None or len(value) == 0 else value


def _accept_integers_as_numbers(node, name, default):
    """ROS users type `-p max_linear_speed:=1` and `-p camera_mount:="[0, 0, 0.2, 0]"`: an
    integer (or integer list) given at start where a number (number list) is expected is taken
    as that number, as ros2 launch's YAML users expect."""
    override = node._parameter_overrides.get(name)  # rclpy keeps the start values here
    if override is None:
        return
    if isinstance(default, float) and override.type_ == RosParameter.Type.INTEGER:
        node._parameter_overrides[name] = RosParameter(
            name, RosParameter.Type.DOUBLE, float(override.value)
        )
    elif isinstance(default, str) and override.type_ == RosParameter.Type.BOOL:
        # a choice such as auto / true / false: `-p laser:=true` and YAML `laser: true` are bools
        node._parameter_overrides[name] = RosParameter(
            name, RosParameter.Type.STRING, str(override.value).lower()
        )
    elif (
        default is RosParameter.Type.DOUBLE_ARRAY
        or isinstance(default, list)
        and default
        and all(isinstance(v, float) for v in default)
    ) and override.type_ == RosParameter.Type.INTEGER_ARRAY:
        node._parameter_overrides[name] = RosParameter(
            name, RosParameter.Type.DOUBLE_ARRAY, [float(v) for v in override.value]
        )


def _explain(node, name, default, minimum, maximum, exc):
    kind = {bool: 'true or false', int: 'an integer', float: 'a number', str: 'a string'}.get(
        type(default), f'a {type(default).__name__}'
    )
    bounds = ''
    if minimum is not None or maximum is not None:
        bounds = (
            f' within {minimum if minimum is not None else "-inf"}..'
            f'{maximum if maximum is not None else "inf"}'
        )
    return f'{node.get_name()}: parameter {name!r} must be {kind}{bounds} ({exc})'
