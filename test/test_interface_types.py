"""Every interface type a driver's node shows on the graph resolves to its Python class through
legacy_robot_common.topics.import_type, the one lookup the benchmark's floor, the Foxglove relay
and the bag export share: messages, services, and the types an action's hidden topics and
services carry (the P2OS move and turn actions' FeedbackMessage, SendGoal, GetResult)."""

import rclpy

from legacy_robot_bringup.compose import running
from legacy_robot_bringup.registry import discover_plugins
from legacy_robot_common.topics import import_type


def graph_types(node):
    """({topic type names}, {service type names}) of a node's publishers, subscriptions and
    services, hidden ones (an action's) included."""
    name, namespace = node.get_name(), node.get_namespace()
    topics = node.get_publisher_names_and_types_by_node(name, namespace)
    topics += node.get_subscriber_names_and_types_by_node(name, namespace)
    services = node.get_service_names_and_types_by_node(name, namespace)
    return (
        {t for _, types in topics for t in types},
        {t for _, types in services for t in types},
    )


def test_every_topic_and_service_type_of_every_driver_resolves():
    plugins = discover_plugins()
    with running(list(plugins.values()), sim=True, namespace_per_robot=True) as composition:
        found = {robot: graph_types(node) for robot, node in composition.nodes.items()}
    assert set(found) == set(plugins)
    topic_types = set().union(*(topics for topics, _ in found.values()))
    service_types = set().union(*(services for _, services in found.values()))
    p2os_topics, p2os_services = found['p2os']
    assert 'legacy_robot_interfaces/action/Move_FeedbackMessage' in p2os_topics
    assert 'action_msgs/msg/GoalStatusArray' in p2os_topics
    assert 'legacy_robot_interfaces/action/Turn_SendGoal' in p2os_services
    assert 'legacy_robot_interfaces/action/Move_GetResult' in p2os_services

    # each class, used by a node of its own, shows on the graph under the very same name
    rclpy.init()
    try:
        probe = rclpy.create_node('type_probe', namespace='/type_probe')
        for i, type_name in enumerate(sorted(topic_types)):
            probe.create_publisher(import_type(type_name), f'topic{i}', 1)
        for i, type_name in enumerate(sorted(service_types)):
            probe.create_client(import_type(type_name), f'service{i}')
        shown_topics = probe.get_publisher_names_and_types_by_node('type_probe', '/type_probe')
        shown_services = probe.get_client_names_and_types_by_node('type_probe', '/type_probe')
        assert {t for _, types in shown_topics for t in types} == topic_types
        assert {t for _, types in shown_services for t in types} == service_types
        probe.destroy_node()
    finally:
        rclpy.shutdown()
