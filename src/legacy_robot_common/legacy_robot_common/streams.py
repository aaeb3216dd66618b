"""Byte streams with one small interface, used by clients and emulators alike.

Every stream has ``read(max_bytes, timeout) -> bytes`` (``b''`` when nothing
arrived in time), ``write(data)``, ``drain()`` and ``close()``. A peer that has
gone away raises ConnectionLost. No rclpy here.
"""

import errno
import ipaddress
import os
import select
import socket
import termios

from .errors import ConnectionLost


class SocketStream:
    """A connected TCP socket."""

    def __init__(self, sock, write_timeout=5.0):
        self._sock = sock
        sock.settimeout(write_timeout)  # bounds sendall(); reads wait in select()
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        self.description = _describe_peer(sock)

    @classmethod
    def connect(cls, host, port, connect_timeout=3.0):
        try:
            sock = socket.create_connection((host, port), timeout=connect_timeout)
        except OSError as exc:
            raise ConnectionLost(
                f'cannot connect to {host}:{port}: {exc.strerror or exc}'
            ) from exc
        return cls(sock)

    def read(self, max_bytes=65536, timeout=None):
        try:
            ready, _, _ = select.select([self._sock], [], [], timeout)
            if not ready:
                return b''
            data = self._sock.recv(max_bytes)
        except (OSError, ValueError) as exc:
            raise ConnectionLost(f'{self.description}: {exc}') from exc
        if not data:
            raise ConnectionLost(f'{self.description}: closed by peer')
        return data

    def write(self, data):
        try:
            self._sock.sendall(data)
        except (OSError, ValueError) as exc:
            raise ConnectionLost(f'{self.description}: {exc}') from exc

    def drain(self):
        """TCP hands data to the kernel in write(); nothing more to wait for."""

    def close(self):
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()


class FdStream:
    """A file descriptor, e.g. the master side of a pseudo-terminal."""

    def __init__(self, fd, description='fd'):
        self._fd = fd
        self.description = description

    def read(self, max_bytes=65536, timeout=None):
        try:
            ready, _, _ = select.select([self._fd], [], [], timeout)
            if not ready:
                return b''
            data = os.read(self._fd, max_bytes)
        except OSError as exc:
            raise ConnectionLost(f'{self.description}: {exc}') from exc
        if not data:
            raise ConnectionLost(f'{self.description}: closed')
        return data

    def write(self, data):
        view = memoryview(data)
        try:
            while view:
                try:
                    written = os.write(self._fd, view)
                except BlockingIOError:
                    select.select([], [self._fd], [], 1.0)
                    continue
                view = view[written:]
        except OSError as exc:
            raise ConnectionLost(f'{self.description}: {exc}') from exc

    def drain(self):
        try:
            os.tcdrain(self._fd)
        except OSError as exc:
            if exc.errno not in (errno.ENOTTY, errno.EINVAL):
                raise ConnectionLost(f'{self.description}: {exc}') from exc

    def close(self):
        try:
            os.close(self._fd)
        except OSError:
            pass


class SerialStream:
    """A serial port opened with pyserial (device path or pyserial URL)."""

    POLL = 0.05  # pyserial's own read timeout; our timeout is built from slices of it

    def __init__(self, port, baudrate):
        import serial  # imported here so pure-TCP users do not need pyserial

        try:
            self._serial = serial.serial_for_url(
                port, baudrate=baudrate, timeout=self.POLL, write_timeout=5.0
            )
        except (serial.SerialException, ValueError, OSError) as exc:
            raise ConnectionLost(f'cannot open serial port {port}: {exc}') from exc
        self._error = serial.SerialException
        self.description = f'{port}@{baudrate}'

    def read(self, max_bytes=65536, timeout=None):
        slices = None if timeout is None else max(1, int(timeout / self.POLL + 0.5))
        try:
            while True:
                waiting = self._serial.in_waiting
                data = self._serial.read(min(max(waiting, 1), max_bytes))
                if data:
                    return data
                if slices is not None:
                    slices -= 1
                    if slices <= 0:
                        return b''
        except (self._error, OSError, TypeError) as exc:  # pyserial raises TypeError once closed
            raise ConnectionLost(f'{self.description}: {exc}') from exc

    def write(self, data):
        try:
            self._serial.write(data)
        except (self._error, OSError, termios.error) as exc:
            raise ConnectionLost(f'{self.description}: {exc}') from exc

    def drain(self):
        try:
            self._serial.flush()  # tcdrain: termios.error (not an OSError) on a closed pty
        except (self._error, OSError, termios.error) as exc:
            raise ConnectionLost(f'{self.description}: {exc}') from exc

    def close(self):
        self._serial.close()


def is_loopback(host):
    """True for an address (or 'localhost') only this machine can reach; False for any other
    address, a name, or no address at all."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == 'localhost'


def _describe_peer(sock):
    try:
        host, port = sock.getpeername()[:2]
        return f'{host}:{port}'
    except OSError:
        return 'socket'
