"""The closed-loop benchmark's reference: an HTTP server on the same event loop as the
bridge (asyncio on uvloop) that reads a request to its blank line and answers the bridge's
idle ping reply, byte for byte, with no parsing and no logic. The bridge's rate over this
one's is how much of what the loop can do the bridge's own work leaves.

    python -m nabaztag_bridge.canned_server PORT
"""

import asyncio
import sys

import uvloop

from nabaztag_bridge.rabbits import RabbitRegistry
from nabaztag_bridge.transport import Limits, reply_bytes


def idle_ping_reply():
    registry = RabbitRegistry(wake_after_boot=False)
    rabbit, _ = registry.seen('0019db000001')
    rabbit.tc = 0x7FFFFFFF
    return reply_bytes(200, registry.reply_packet(rabbit), 'application/octet-stream')


class CannedReply(asyncio.Protocol):
    reply = idle_ping_reply()

    def connection_made(self, transport):
        self.transport = transport
        self.received = b''

    def data_received(self, data):
        self.received += data
        if b'\r\n\r\n' in self.received:
            self.transport.write(self.reply)
            self.transport.close()


async def serve(port):
    loop = asyncio.get_running_loop()
    await loop.create_server(
        CannedReply, '127.0.0.1', port, backlog=Limits.backlog, reuse_address=True
    )
    await asyncio.Event().wait()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or not argv[0].isdigit():
        print('usage: python -m nabaztag_bridge.canned_server PORT', file=sys.stderr)
        return 2
    try:
        uvloop.run(serve(int(argv[0])))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == '__main__':
    sys.exit(main())
