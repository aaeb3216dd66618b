"""A Foxglove WebSocket server for the ROS graph: live view and control without a ROS desktop.

Foxglove (and Lichtblick) connect to ws://HOST:PORT and see every topic of the graph as a
channel (CDR bytes with the full ros2msg definition, so the client needs nothing installed),
every driver service (Foxglove's Service Call panel), and may publish on the topics the
drivers subscribe to (the Teleop panel's geometry_msgs/Twist on cmd_vel). What the relay
costs follows the clients: a topic gets a ROS subscription when a client first subscribes to
its channel, its messages are relayed only while one does, and they go to the server through
one bounded queue, so a slow client or a flood drops (counted on /diagnostics) instead of
holding up a driver.
"""

import functools
import queue
import re
import threading

import foxglove
from foxglove.websocket import Capability, StatusLevel
from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy
from rclpy.serialization import deserialize_message, serialize_message
from rclpy.topic_or_service_is_hidden import topic_or_service_is_hidden

from .diagnostics import OK, WARN, DiagnosticsPublisher
from .handoff import ExecutorHandoff
from .message_definitions import UnknownType, shared
from .params import ParameterError
from .ratelimit import RateLimitedLogger
from .streams import is_loopback
from .topics import import_type, matching_qos

DEFAULT_PORT = 8765
GRAPH_PERIOD = 1.0  # s between looks at the graph (new topics, services, robots)
QUEUE_LENGTH = 1000  # messages waiting for the server; beyond: dropped, counted
SERVICE_TIMEOUT = 10.0  # s a Foxglove service call waits for the driver's answer
LATCHED_KEPT = 64  # distinct messages a latched topic keeps for late clients
# rclpy's own services of every node: parameters (Foxglove has no panel for their types) and
# type descriptions; the lifecycle services stay (configure / activate from a button)
HIDDEN_SERVICE_TYPES = ('rcl_interfaces/srv/', 'type_description_interfaces/srv/')
# no QoS-event handlers: each is a waitable every executor wake-up walks (as DriverNode's
# publishers do without them)
NO_SUBSCRIPTION_EVENTS = SubscriptionEventCallbacks(use_default_callbacks=False)
NO_PUBLISHER_EVENTS = PublisherEventCallbacks(use_default_callbacks=False)


PUBLISH_OPTION = '--foxglove-publish'
SERVICES_OPTION = '--foxglove-services'
# a space, or a comma outside a {m,n} repetition: what separates patterns in one text
PATTERN_SEPARATOR = re.compile(r'\s+|,(?![^{}]*\})')


def compile_patterns(texts, option):
    """Regular expressions from texts, each of which may hold several separated by spaces or
    commas (a launch argument is one text); ParameterError naming option for a bad one."""
    patterns = []
    for text in texts:
        for part in filter(None, PATTERN_SEPARATOR.split(text)):
            try:
                patterns.append(re.compile(part))
            except re.error as exc:
                raise ParameterError(
                    f'{option} {part!r}: not a regular expression ({exc})'
                ) from None
    return patterns


class ClientAccess:
    """What Foxglove clients may do besides watching: publish on which topics and call which
    services, each a list of regular expressions a whole name must match. Not given: anything
    on loopback, nothing on any other address (the SDK has no TLS and no authentication, so
    anyone who reaches the port is a client). Given: they hold on every address."""

    def __init__(self, host, publish=None, services=None):
        self.beyond_loopback = not is_loopback(host)
        self.publish = self._patterns(publish, PUBLISH_OPTION)
        self.services = self._patterns(services, SERVICES_OPTION)

    def _patterns(self, texts, option):
        if texts is None:
            texts = [] if self.beyond_loopback else ['.*']
        return compile_patterns(texts, option)

    def may_publish(self, topic):
        return any(pattern.fullmatch(topic) for pattern in self.publish)

    def may_call(self, service):
        return any(pattern.fullmatch(service) for pattern in self.services)

    def opened(self):
        """What this access opens beyond loopback ('' when nothing), for a warning."""
        if not self.beyond_loopback:
            return ''
        granted = [
            f'{option} {" ".join(p.pattern for p in patterns)}'
            for option, patterns in (
                (PUBLISH_OPTION, self.publish),
                (SERVICES_OPTION, self.services),
            )
            if patterns
        ]
        return ', '.join(granted)


class _Topic:
    """One ROS topic as a Foxglove channel, and its subscription once anyone watched."""

    def __init__(self, name, type_name, channel):
        self.name, self.type_name, self.channel = name, type_name, channel
        self.watchers = set()  # Foxglove client ids subscribed
        self.subscription = None
        self.latched = None  # transient local topics: their distinct messages


class _Subscription:
    """A subscription the relay made, kept while the relay runs: rclpy 9.1.2's events
    executor aborted the process at exit (7 of 25 runs) after the relay had destroyed
    subscriptions while spinning, and none in 20 runs once it kept them. Messages of a topic
    nobody watches are dropped on arrival."""

    def __init__(self, type_name, subscription, latched):
        self.type_name, self.subscription, self.latched = type_name, subscription, latched


class FoxgloveRelay(ExecutorHandoff, Node):
    """The relay node: a Foxglove server (started here) kept in step with the ROS graph."""

    def __init__(self, host='127.0.0.1', port=DEFAULT_PORT, access=None, **kwargs):
        # no parameter services: it has no parameters, and every entity costs each wake-up
        super().__init__('foxglove_relay', start_parameter_services=False, **kwargs)
        # the server's threads hand their work to the executor's (the server listens before
        # the relay is in an executor: a client may subscribe before)
        self.init_handoff()
        self._definitions = shared()
        self._foxglove_context = foxglove.Context()
        self._topics = {}  # topic → _Topic
        self._kept_subscriptions = {}  # topic → _Subscription (made at a first watcher, kept)
        self._by_channel = {}  # Foxglove channel id → _Topic
        self._service_clients = {}  # service name → rclpy client (None until its first call)
        self._client_channels = {}  # (client id, client channel id) → ROS publisher
        self._client_publishers = {}  # (topic, type) → ROS publisher
        self._queue = queue.Queue(QUEUE_LENGTH)
        self._lock = threading.Lock()
        self.relayed = self.dropped = self.published = self.refused = 0
        self._host = host
        self.access = access or ClientAccess(host)
        self._refusals = RateLimitedLogger(self.get_logger())
        try:
            self.server = foxglove.start_server(
                name='legacy robots',
                host=host,
                port=port,
                context=self._foxglove_context,
                capabilities=[Capability.ClientPublish, Capability.Services],
                supported_encodings=['cdr'],
                server_listener=_Listener(self),
            )
        except Exception as exc:  # the SDK raises its own error types for bind failures
            super().destroy_node()
            raise OSError(f'foxglove: cannot listen on {host}:{port}: {exc}') from None
        self._sender = threading.Thread(target=self._send_loop, name='foxglove-send', daemon=True)
        self._sender.start()
        opened = self.access.opened()
        if opened:
            self.get_logger().warning(
                f'foxglove: clients on {host}:{self.port} may control the robots ({opened}): '
                'the server has no TLS and no authentication; anyone who reaches this port can '
                'do that (docs/foxglove.md: reaching the live view safely)'
            )
        diagnostics = DiagnosticsPublisher(self, f'foxglove ws://{host}:{self.port}')
        diagnostics.add_task('foxglove', self._status)
        self.create_timer(GRAPH_PERIOD, self.follow_graph)
        self.follow_graph()

    @property
    def port(self):
        return self.server.port

    @property
    def url(self):
        host = 'localhost' if self._host in ('127.0.0.1', '0.0.0.0', '::') else self._host
        return f'ws://{host}:{self.port}'

    @property
    def announcement(self):
        return (
            f'foxglove: {self.url} (Foxglove or Lichtblick: Open connection → '
            f'Foxglove WebSocket → {self.url})'
        )

    @property
    def watching_clients(self):
        """Ids of the clients that watch a topic now."""
        with self._lock:
            return set().union(*(t.watchers for t in self._topics.values()))

    # ---- the graph → channels and services ---------------------------------------------------
    def follow_graph(self):
        self._follow_topics()
        self._follow_services()

    def _follow_topics(self):
        present = {}
        for name, types in self.get_topic_names_and_types():
            # a topic with two types cannot be one channel; hidden topics (an action's
            # _action/feedback and status) are left out, as foxglove_bridge leaves them out
            if len(types) == 1 and not topic_or_service_is_hidden(name):
                present[name] = types[0]
        for name in [n for n, t in self._topics.items() if present.get(n) != t.type_name]:
            self._close_topic(self._topics.pop(name))
        for name, type_name in present.items():
            if name not in self._topics:
                self._open_topic(name, type_name)

    def _open_topic(self, name, type_name):
        try:
            definition = self._definitions.definition(type_name)
        except UnknownType as exc:
            self.get_logger().warning(f'foxglove: {name} not relayed: {exc}', once=True)
            return
        channel = foxglove.Channel(
            name,
            message_encoding='cdr',
            context=self._foxglove_context,
            schema=foxglove.Schema(name=type_name, encoding='ros2msg', data=definition.encode()),
        )
        topic = self._topics[name] = _Topic(name, type_name, channel)
        self._by_channel[channel.id()] = topic

    def _close_topic(self, topic):
        """The topic left the graph: its channel goes (the server unsubscribes its clients); its
        subscription stays, for the topic's return."""
        with self._lock:
            topic.watchers.clear()
        self._by_channel.pop(topic.channel.id(), None)
        topic.channel.close()

    def _follow_services(self):
        present = {
            name: types[0]
            for name, types in self.get_service_names_and_types()
            if len(types) == 1 and not types[0].startswith(HIDDEN_SERVICE_TYPES)
        }
        gone = [name for name in self._service_clients if name not in present]
        if gone:
            self.server.remove_services(gone)
            for name in gone:
                client = self._service_clients.pop(name)
                if client is not None:
                    self.destroy_client(client)
        added = []
        for name, type_name in present.items():
            if name not in self._service_clients:
                service = self._offer_service(name, type_name)
                if service is not None:
                    added.append(service)
        if added:
            self.server.add_services(added)

    def _offer_service(self, name, type_name):
        try:
            request, response = self._definitions.service_definitions(type_name)
            srv_type = import_type(type_name)
        except (UnknownType, ImportError, AttributeError) as exc:
            self.get_logger().warning(f'foxglove: service {name} not offered: {exc}', once=True)
            return None
        self._service_clients[name] = None  # its client is made at the first call

        def schema(part, text):
            return foxglove.MessageSchema(
                encoding='cdr',
                schema=foxglove.Schema(
                    name=f'{type_name}_{part}', encoding='ros2msg', data=text.encode()
                ),
            )

        return foxglove.Service(
            name,
            schema=foxglove.ServiceSchema(
                type_name,
                request=schema('Request', request),
                response=schema('Response', response),
            ),
            handler=lambda call: self._call(name, srv_type, call),
        )

    def _client(self, name, srv_type):
        """The service's rclpy client, made in the executor's thread at the first call (an
        idle client still costs every executor wake-up)."""
        client = self._service_clients.get(name)
        if client is None:
            made = threading.Event()

            def make():
                if self._service_clients.get(name) is None:
                    self._service_clients[name] = self.create_client(srv_type, name)
                made.set()

            self._in_executor(make)
            if not made.wait(SERVICE_TIMEOUT):
                raise TimeoutError(f'{name}: the relay is not spinning')
            client = self._service_clients[name]
        return client

    def _call(self, name, srv_type, call):
        """A Foxglove service call (in the server's thread): the ROS call, its CDR answer; one
        the access does not allow is refused (a failed call and an error status)."""
        if not self.access.may_call(name):
            raise PermissionError(self._refuse(f'a client may not call {name}', SERVICES_OPTION))
        request = deserialize_message(bytes(call.payload), srv_type.Request)
        client = self._client(name, srv_type)
        done = threading.Event()
        future = client.call_async(request)
        future.add_done_callback(lambda _: done.set())
        if not done.wait(SERVICE_TIMEOUT):
            future.cancel()
            raise TimeoutError(f'{call.service_name}: no answer in {SERVICE_TIMEOUT:g} s')
        return serialize_message(future.result())

    def _in_executor(self, function, *args):
        """Run function in the executor's thread (ROS entities are made and destroyed there,
        not in the server's threads), once the relay is in an executor. (It was dropped before
        that: a client connected while bringup started got none of its subscriptions.)"""
        self.hand_off(functools.partial(function, *args))

    def handle_handoff(self, work):
        try:
            work()
        except Exception as exc:  # one failed subscription must not stop the others
            self.get_logger().error(f'foxglove: {exc!r}')

    # ---- subscriptions follow the clients ----------------------------------------------------
    def client_subscribed(self, client_id, channel_id):
        topic = self._by_channel.get(channel_id)
        if topic is None:
            return
        with self._lock:
            topic.watchers.add(client_id)
            first = len(topic.watchers) == 1
        if first and topic.subscription is None:
            self._in_executor(self._subscribe, topic)
        elif topic.latched:  # a later client gets the latched messages too
            for data in list(topic.latched):
                self._enqueue(topic, data)

    def client_unsubscribed(self, client_id, channel_id):
        topic = self._by_channel.get(channel_id)
        if topic is None:
            return
        with self._lock:
            topic.watchers.discard(client_id)

    def _subscribe(self, topic):
        if topic.subscription is not None or not topic.watchers:
            return
        kept = self._kept_subscriptions.get(topic.name)
        if kept is not None and kept.type_name != topic.type_name:
            self.destroy_subscription(kept.subscription)  # the topic came back as another type
            kept = None
        if kept is None:
            qos = matching_qos(self.get_publishers_info_by_topic(topic.name))
            kept = self._kept_subscriptions[topic.name] = _Subscription(
                topic.type_name,
                self.create_subscription(
                    import_type(topic.type_name),
                    topic.name,
                    lambda data, name=topic.name: self._on_message(name, data),
                    qos,
                    raw=True,
                    event_callbacks=NO_SUBSCRIPTION_EVENTS,
                ),
                qos.durability == DurabilityPolicy.TRANSIENT_LOCAL,
            )
        topic.latched = {} if kept.latched else None
        topic.subscription = kept.subscription

    def _on_message(self, name, data):
        topic = self._topics.get(name)
        if topic is None:
            return
        # latched topics keep their distinct messages (/tf_static: one per driver), not per
        # publisher: rclpy 9.1's events executor fails on callbacks taking MessageInfo
        if topic.latched is not None and data not in topic.latched:
            if len(topic.latched) >= LATCHED_KEPT:
                topic.latched.pop(next(iter(topic.latched)))
            topic.latched[data] = None
        if topic.watchers:
            self._enqueue(topic, data)

    def _enqueue(self, topic, data):
        try:
            self._queue.put_nowait((topic.channel, data))
        except queue.Full:
            self.dropped += 1

    def _send_loop(self):
        while True:
            item = self._queue.get()
            if item is None:
                return
            channel, data = item
            channel.log(data)
            self.relayed += 1

    # ---- client publishing -------------------------------------------------------------------
    def client_advertised(self, client_id, channel):
        """A client's channel: accepted for a topic the access allows that a node other than
        this relay subscribes to (the drivers' command topics), with the type given by the
        client's schema."""
        if not self.access.may_publish(channel.topic):
            self._refuse(f'a client may not publish on {channel.topic}', PUBLISH_OPTION)
            return
        subscribers = [
            info
            for info in self.get_subscriptions_info_by_topic(channel.topic)
            if info.node_name != self.get_name()
        ]
        if channel.encoding != 'cdr' or not subscribers:
            self.refused += 1
            self.get_logger().warning(
                f'foxglove: a client may not publish on {channel.topic} '
                f'({channel.encoding}): only topics the drivers subscribe to, '
                'in cdr'
            )
            return
        try:
            msg_type = import_type(channel.schema_name)
        except (ValueError, ImportError, AttributeError):
            self.refused += 1
            self.get_logger().warning(
                f'foxglove: unknown type {channel.schema_name!r} for {channel.topic}'
            )
            return
        key = (channel.topic, channel.schema_name)
        publisher = self._client_publishers.get(key)
        if publisher is None:
            publisher = self._client_publishers[key] = self.create_publisher(
                msg_type, channel.topic, 10, event_callbacks=NO_PUBLISHER_EVENTS
            )
        self._client_channels[(client_id, channel.id)] = publisher

    def client_unadvertised(self, client_id, channel_id):
        self._client_channels.pop((client_id, channel_id), None)

    def client_message(self, client_id, channel_id, data):
        publisher = self._client_channels.get((client_id, channel_id))
        if publisher is None:
            self.refused += 1
            return
        publisher.publish(bytes(data))
        self.published += 1

    def _refuse(self, what, option):
        """Count, log (rate-limited) and tell the clients a refused client request (an error
        status to all: the SDK has none for one client); its text."""
        self.refused += 1
        where = 'beyond loopback' if self.access.beyond_loopback else 'here'
        text = f'foxglove: {what}: not allowed {where} (bringup {option} REGEX allows it)'
        self._refusals.warning(option, text)
        self.server.publish_status(text, StatusLevel.Error)
        return text

    # ---- state -------------------------------------------------------------------------------
    def _status(self):
        watched = sum(1 for t in self._topics.values() if t.watchers)
        values = {
            'url': self.url,
            'clients': len(self.watching_clients),
            'channels': len(self._topics),
            'topics watched': watched,
            'services': len(self._service_clients),
            'messages relayed': self.relayed,
            'messages waiting': self._queue.qsize(),  # for the server, at most QUEUE_LENGTH
            'messages dropped': self.dropped,
            'client messages published': self.published,
            'client messages refused': self.refused,
        }
        level = WARN if self.dropped else OK
        return level, f'{len(self.watching_clients)} client(s), {watched} topic(s) watched', values

    def destroy_node(self):
        self.close_handoff()
        self.server.stop()
        self._queue.put(None)
        self._sender.join(timeout=2.0)
        super().destroy_node()


class _Listener:
    """The server's callbacks (its threads), handed to the relay."""

    def __init__(self, relay):
        self._relay = relay

    def on_subscribe(self, client, channel):
        self._relay.client_subscribed(client.id, channel.id)

    def on_unsubscribe(self, client, channel):
        self._relay.client_unsubscribed(client.id, channel.id)

    def on_client_advertise(self, client, channel):
        self._relay.client_advertised(client.id, channel)

    def on_client_unadvertise(self, client, client_channel_id):
        self._relay.client_unadvertised(client.id, client_channel_id)

    def on_message_data(self, client, client_channel_id, data):
        self._relay.client_message(client.id, client_channel_id, data)
