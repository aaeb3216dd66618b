"""Run pynab's nabd (from the owner's checkout, on PYTHONPATH) as a test peer on this machine.

Two changes of ours, made here and not in the checkout:
- nabd's network check dials public DNS servers at start-up; here it answers "no Internet"
  without a connection (test traffic stays on this machine);
- nabd's virtual I/O has no button, RFID or ear input of its own: NabIOPeer adds a loopback
  control port (nabd's port + 2) taking lines `button click`, `button double_click`,
  `rfid <hex uid> [removed]`, `ears <left> <right>`, each answered `ok`, so that the events come
  out of nabd itself.

    python tools/peers/nabd_peer.py --pidfile=/tmp/nabd.pid
"""

import asyncio
import sys

from nabcommon import network
from nabcommon.nabservice import NabService
from nabd.ears import Ears
from nabd.nabio_virtual import NabIOVirtual
from nabd.rfid import TagFlags, TagTechnology

network.internet_connection = lambda: False


class NabIOPeer(NabIOVirtual):
    def __init__(self):
        super().__init__()
        self.loop.create_task(
            asyncio.start_server(self._control, '127.0.0.1', NabService.PORT_NUMBER + 2)
        )

    def has_rfid(self):
        return True

    async def _control(self, reader, writer):
        while line := await reader.readline():
            self._act(line.decode().split())
            writer.write(b'ok\n')
            await writer.drain()

    def _act(self, words):
        if words[:1] == ['button'] and len(words) == 2:
            self.button.callback(words[1], self.loop.time())
        elif words[:1] == ['rfid'] and len(words) >= 2:
            flags = TagFlags.REMOVED if 'removed' in words else TagFlags.CLEAR
            uid = bytes.fromhex(words[1])
            self.rfid.callback(TagTechnology.ISO14443A, uid, None, None, None, flags, None)
        elif words[:1] == ['ears'] and len(words) == 3:
            self.ears.left, self.ears.right = int(words[1]), int(words[2])
            self.ears.callback(Ears.LEFT_EAR)


if __name__ == '__main__':
    from nabd.nabd import Nabd

    Nabd.main([*sys.argv[1:], '--nabio=nabd_peer.NabIOPeer'])
