"""import_type: interface type names as the graph reports them → classes, and clear errors."""

import pytest
from std_srvs.srv import Trigger

from legacy_robot_common.topics import import_type
from legacy_robot_interfaces.action import Move
from legacy_robot_interfaces.msg import NamedValues


def test_messages_services_and_every_part_of_an_action():
    assert import_type('legacy_robot_interfaces/msg/NamedValues') is NamedValues
    assert import_type('std_srvs/srv/Trigger') is Trigger
    assert import_type('std_srvs/srv/Trigger_Request') is Trigger.Request
    assert import_type('legacy_robot_interfaces/action/Move') is Move
    prefix = 'legacy_robot_interfaces/action/Move'
    assert import_type(f'{prefix}_FeedbackMessage') is Move.Impl.FeedbackMessage
    assert import_type(f'{prefix}_SendGoal') is Move.Impl.SendGoalService
    assert import_type(f'{prefix}_GetResult') is Move.Impl.GetResultService
    assert import_type(f'{prefix}_Goal') is Move.Goal
    assert import_type(f'{prefix}_SendGoal_Request') is Move.Impl.SendGoalService.Request


@pytest.mark.parametrize(
    'name, error',
    [
        ('Odometry', ValueError),
        ('nav_msgs/Odometry', ValueError),
        ('nav_msgs/idl/Odometry', ValueError),
        ('nav_msgs/msg/', ValueError),
        ('nav_msgs/msg/NoSuchType', AttributeError),
        ('legacy_robot_interfaces/action/Move_NoSuchPart', AttributeError),
        ('legacy_robot_interfaces/action/NoSuch_FeedbackMessage', AttributeError),
        ('no_such_package/msg/Thing', ImportError),
    ],
)
def test_names_that_name_no_type(name, error):
    with pytest.raises(error):
        import_type(name)
