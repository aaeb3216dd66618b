"""A ROS node in the test process that watches a driver running as another process."""

import signal

import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from helpers import spin_until, start_module
from lifecycle_msgs.srv import GetState
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from tf2_msgs.msg import TFMessage

from legacy_robot_bench.common.bench import ros_args
from legacy_robot_common.tf import TF_QOS, TF_STATIC_LISTENER_QOS


def latest_status(diagnostic_arrays, suffix):
    """The newest DiagnosticStatus whose name ends with suffix, or None."""
    for array in reversed(diagnostic_arrays):
        for status in array.status:
            if status.name.endswith(suffix):
                return status
    return None


def is_link_task(task):
    """The transport tasks: clients report '<...> link' ('connected'), the Nabaztag bridge, a
    server, 'http server' ('listening; N of M rabbits online'). Each is OK when it is up."""
    return task.endswith('link') or task == 'http server'


class LinkLevels:
    """/diagnostics callback: the newest level of every node's link tasks."""

    def __init__(self):
        self.latest = {}  # (node, task) → level

    def __call__(self, msg):
        for status in msg.status:
            path, _, task = status.name.partition(': ')
            node = path.rpartition('/')[2]  # statuses are named "<namespace>/<node>: <task>"
            if is_link_task(task):
                self.latest[(node, task)] = status.level

    def up(self, expected):
        """The nodes of expected whose every link task is OK (and that reported one)."""
        return {
            node
            for node in expected
            if any(n == node for n, _ in self.latest)
            and all(
                level == DiagnosticStatus.OK for (n, _), level in self.latest.items() if n == node
            )
        }


class Observer:
    """A ROS node in the test process: subscriptions record, services are called and awaited."""

    def __init__(self, namespace):
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = Node('test_observer', context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.ns = namespace
        self.messages = {}
        # one client per service: each new client is a new DDS reader that the server must
        # discover before it can answer (service_is_ready() cannot tell). rmw_fastrtps waits
        # 100 ms for that by default; a loaded CI run lost an answer so. Our processes wait 1 s
        # (legacy_robot_common/middleware.py); fewer new clients still means fewer waits.
        self.service_clients = {}

    def listen(self, msg_type, topic, qos=10):
        self.messages[topic] = []
        self.node.create_subscription(
            msg_type, f'{self.ns}/{topic}', self.messages[topic].append, qos
        )
        return self.messages[topic]

    def listen_tf(self):
        """([TFMessage on /tf], [TFMessage on /tf_static]) with tf2's QoS (static: latched)."""
        dynamic, static = [], []
        self.node.create_subscription(TFMessage, '/tf', dynamic.append, TF_QOS)
        self.node.create_subscription(
            TFMessage, '/tf_static', static.append, TF_STATIC_LISTENER_QOS
        )
        return dynamic, static

    def call(self, srv_type, name, request, timeout=10.0):
        key = (srv_type, f'{self.ns}/{name}')
        if key not in self.service_clients:
            self.service_clients[key] = self.node.create_client(*key)
        client = self.service_clients[key]
        assert spin_until(self.executor, client.service_is_ready, timeout), f'no service {name}'
        future = client.call_async(request)
        assert spin_until(self.executor, future.done, timeout), f'{name} did not answer'
        return future.result()

    def ask(self, srv_type, service, /, **fields):
        """The reply of a service to a request with fields (asserted to come)."""
        reply = self.call(srv_type, service, srv_type.Request(**fields))
        assert reply is not None, f'{service}: no reply'
        return reply

    def lifecycle_state(self, node_name, attempts=3):
        """A managed node's current state id. Asked again when no answer comes: a request
        sent in the moment the server is discovered can lose its response (DDS matching), and
        asking changes nothing."""
        key = (GetState, f'{self.ns}/{node_name}/get_state')
        if key not in self.service_clients:
            self.service_clients[key] = self.node.create_client(*key)
        client = self.service_clients[key]
        for _ in range(attempts):
            assert self.spin_until(client.service_is_ready, 10), 'no get_state'
            future = client.call_async(GetState.Request())
            if self.spin_until(future.done, 5):
                return future.result().current_state.id
        raise AssertionError(f'{node_name}/get_state did not answer {attempts} times')

    def spin_until(self, predicate, timeout):
        return spin_until(self.executor, predicate, timeout)

    def diagnostic_status(self, suffix):
        """→ a function that gives the newest DiagnosticStatus on /diagnostics whose name ends
        with suffix (None before the first)."""
        arrays = []
        self.node.create_subscription(DiagnosticArray, '/diagnostics', arrays.append, 10)
        return lambda: latest_status(arrays, suffix)

    def status_says(self, status, text, timeout):
        """Spin until status() (from diagnostic_status) has text in its message; → whether it
        did within timeout."""
        return self.spin_until(lambda: status() is not None and text in status().message, timeout)

    def close(self):
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)


class DriverProcesses:
    """Drivers started as real processes next to their emulators, each with an Observer."""

    def __init__(self):
        self.started = []

    def start(self, module, namespace, emulator, parameters):
        process = start_module(module, *ros_args(namespace, parameters))
        observer = Observer(namespace)
        self.started.append((emulator, process, observer))
        return emulator, process, observer

    def stop_all(self):
        for emulator, process, observer in self.started:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=20)
            # pytest shows it when the test failed: the driver's side of the story
            print(f'--- {" ".join(process.args[2:4])} (exit {process.returncode}) ---\n{out}{err}')
            observer.close()
            emulator.stop()


def parents_by_child(messages):
    """{child frame: {parent frames}} over TFMessages."""
    found = {}
    for message in messages:
        for transform in message.transforms:
            found.setdefault(transform.child_frame_id, set()).add(transform.header.frame_id)
    return found


def reachable(tree, root):
    """Frames below root in {child: parent}."""
    below, frontier = set(), {root}
    while frontier:
        frontier = {child for child, parent in tree.items() if parent in frontier} - below
        below |= frontier
    return below
