"""A minimal Foxglove WebSocket client (the protocol's JSON and binary frames over the
`websockets` library), independent of the SDK the relay uses: the tests and the benchmark watch
the relay as Foxglove does. CDR is decoded by mcap_ros2's decoder from the definitions the
server advertises."""

import json
import struct
import time

from mcap_ros2._dynamic import generate_dynamic
from websockets.sync.client import connect

SUBPROTOCOLS = ['foxglove.sdk.v1', 'foxglove.websocket.v1']
MESSAGE_DATA = 0x01  # server → client: subscription id, log time, payload
SERVICE_RESPONSE = 0x03
CLIENT_MESSAGE_DATA = 0x01  # client → server: client channel id, payload
SERVICE_REQUEST = 0x02


class FoxgloveClient:
    def __init__(self, url, **options):
        """options: websockets' connect() arguments (e.g. ping_interval=None for a client
        that reads slowly on purpose: its pings' answers wait behind the data)."""
        options = {'max_size': None, 'open_timeout': 10, **options}
        self.ws = connect(url, subprotocols=SUBPROTOCOLS, legacy=True, **options)
        self.channels = {}  # topic → advertised channel
        self.services = {}  # name → advertised service
        self.messages = {}  # topic → [decoded message] (or [payload size] undecoded)
        self.received = 0  # message frames
        self.responses = {}  # call id → (encoding, payload)
        self.failures = {}  # call id → message
        self.statuses = []  # the server's status messages' texts
        self._subscriptions = {}  # subscription id → (topic, decoder)
        self._next_id = 1

    def close(self):
        self.ws.close()

    def receive(self, seconds):
        """Handle what the server sends for seconds."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            if not self.receive_one(left):
                return

    def receive_one(self, timeout):
        """Handle one frame from the server; False if none came within timeout s."""
        try:
            frame = self.ws.recv(timeout=timeout)
        except TimeoutError:
            return False
        if isinstance(frame, str):
            self._on_json(json.loads(frame))
        else:
            self._on_binary(frame)
        return True

    def wait_for(self, predicate, timeout):
        deadline = time.monotonic() + timeout
        while not predicate() and time.monotonic() < deadline:
            self.receive(0.2)
        return predicate()

    def _on_json(self, message):
        op = message.get('op')
        if op == 'advertise':
            for channel in message['channels']:
                self.channels[channel['topic']] = channel
        elif op == 'unadvertise':
            gone = set(message['channelIds'])
            self.channels = {t: c for t, c in self.channels.items() if c['id'] not in gone}
        elif op == 'advertiseServices':
            for service in message['services']:
                self.services[service['name']] = service
        elif op == 'serviceCallFailure':
            self.failures[message['callId']] = message['message']
        elif op == 'status':
            self.statuses.append(message['message'])

    def _on_binary(self, frame):
        opcode = frame[0]
        if opcode == MESSAGE_DATA:
            subscription, _log_time = struct.unpack_from('<IQ', frame, 1)
            topic, decode = self._subscriptions[subscription]
            self.received += 1
            self.messages.setdefault(topic, []).append(
                decode(frame[13:]) if decode else len(frame) - 13
            )
        elif opcode == SERVICE_RESPONSE:
            _service, call, length = struct.unpack_from('<III', frame, 1)
            self.responses[call] = (frame[13 : 13 + length].decode(), frame[13 + length :])

    def _id(self):
        self._next_id += 1
        return self._next_id

    def subscribe(self, topic, decode=True):
        channel = self.channels[topic]
        decoder = None
        if decode:
            decoder = generate_dynamic(channel['schemaName'], channel['schema'])[
                channel['schemaName']
            ]
        subscription = self._id()
        self._subscriptions[subscription] = (topic, decoder)
        self.ws.send(
            json.dumps(
                {
                    'op': 'subscribe',
                    'subscriptions': [{'id': subscription, 'channelId': channel['id']}],
                }
            )
        )

    def call(self, name, payload, timeout=10.0):
        """Call a service with CDR payload; (encoding, response bytes) or the failure text."""
        service, call = self.services[name], self._id()
        encoding = b'cdr'
        self.ws.send(
            struct.pack('<BIII', SERVICE_REQUEST, service['id'], call, len(encoding))
            + encoding
            + payload
        )
        self.wait_for(lambda: call in self.responses or call in self.failures, timeout)
        return self.responses.get(call) or self.failures.get(call)

    def advertise(self, topic, schema_name):
        channel = self._id()
        self.ws.send(
            json.dumps(
                {
                    'op': 'advertise',
                    'channels': [
                        {
                            'id': channel,
                            'topic': topic,
                            'encoding': 'cdr',
                            'schemaName': schema_name,
                        }
                    ],
                }
            )
        )
        return channel

    def publish(self, channel, payload):
        self.ws.send(struct.pack('<BI', CLIENT_MESSAGE_DATA, channel) + payload)
