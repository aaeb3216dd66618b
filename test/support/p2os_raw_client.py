"""A raw P2OS client for the emulator tests: packets byte by byte over a real TCP socket."""

import socket
import time

from p2os_driver import protocol as p

C = p.Command


class RawClient:
    """Just enough client to talk to the robot byte by byte."""

    def __init__(self, port):
        self.sock = socket.create_connection(('127.0.0.1', port), timeout=3)
        self.receiver = p.PacketReceiver()
        self.pending = []

    def send(self, number, argument=None):
        self.sock.sendall(p.encode_command(number, argument))

    def packet(self, timeout=2.0, kind=None):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            while self.pending:
                body = self.pending.pop(0)
                if kind is None or body[0] == kind:
                    return body
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                data = self.sock.recv(4096)
            except socket.timeout:
                break
            if not data:
                raise ConnectionError('closed')
            self.pending += [i for i in self.receiver.feed(data) if isinstance(i, bytes)]
        raise TimeoutError(f'no packet of type {kind}')

    def sync(self, open_argument=None):
        for step in range(3):
            self.send(step)
            reply = self.packet()
            assert reply[0] == step
        self.send(C.OPEN, open_argument)
        return p.decode_sync2_reply(reply)

    def sip(self):
        return p.decode_sip(self._any_sip())

    def fresh_sip(self):
        """The first SIP sent after now (older buffered packets are dropped)."""
        self.pending.clear()
        self.sock.setblocking(False)
        try:
            while self.sock.recv(65536):
                pass
        except BlockingIOError:
            pass
        finally:
            self.sock.setblocking(True)
        self.receiver = p.PacketReceiver()
        return self.sip()

    def _any_sip(self):
        while True:
            body = self.packet()
            if body[0] in (0x32, 0x33):
                return body

    def close(self):
        self.sock.close()
