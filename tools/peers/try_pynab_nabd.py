"""Drive pynab's nabd, run on this machine, through nabaztag_bridge and print what happened.

    tools/peers/try_pynab_nabd.sh PATH/TO/pynab

The script's shell half starts nabd (nabd_peer.py: nabd's virtual I/O plus a control port for
the button, tags and ears); this half starts the bridge with a rabbits file naming that nabd,
calls each ROS service of the pynab kind, makes nabd send each event (through the control port)
and reads the events topic. One row per step; exit status 0 only when every step passed.
"""

import argparse
import pathlib
import socket
import sys
import tempfile

from peer_run import Steps, bridge, wait

from legacy_robot_common.emulator import free_port
from legacy_robot_interfaces.msg import RabbitEvent, RabbitList
from legacy_robot_interfaces.srv import (
    RabbitEars,
    RabbitProgram,
    RabbitSay,
    RabbitSetting,
    RabbitSound,
)
from nabaztag_bridge import recording

NABD = 10543
CONTROL = NABD + 2  # nabd_peer.py's control port
NAME = 'pi'
TAG = 'd0021a0102030405'


def control(line):
    with socket.create_connection(('127.0.0.1', CONTROL), timeout=5) as peer:
        peer.sendall(line.encode() + b'\n')
        return peer.recv(16)


def prepare():
    folder = pathlib.Path(tempfile.mkdtemp(prefix='pynab-nabd-'))
    (folder / 'media').mkdir()
    (folder / 'media' / 'tone.wav').write_bytes(recording.encode_wav(recording.tone(0.5)))
    (folder / 'rabbits.yaml').write_text(
        f'rabbits:\n  - name: {NAME}\n    kind: pynab\n    address: 127.0.0.1:{NABD}\n'
    )
    parameters = {
        'host': '127.0.0.1',
        'port': free_port(),
        'media_root': str(folder / 'media'),
        'rabbits_file': str(folder / 'rabbits.yaml'),
        'rabbit_timeout': 3.0,
        'tts_engine': 'espeak',
    }
    return folder, parameters


def steps_with(b, steps):
    states = b.ros.listen(RabbitList, 'rabbits')

    def mine():
        rabbits = [r for m in states[-1:] for r in m.rabbits if r.serial == NAME]
        return rabbits[0] if rabbits else None

    def connected():
        ok = b.ros.spin_until(lambda: mine() is not None and mine().connected, 20)
        return ok, f'state {mine().state if mine() else None}'

    def event(line, kind, **fields):
        def fire():
            since = len(b.events)
            control(line)
            return b.seen(kind, since, **fields), b.last_event(since)

        return fire

    def setting(name, asleep):
        def run():
            ok, text = b.call(RabbitSetting, 'rabbit_setting', name=name)
            reached = b.ros.spin_until(lambda: mine() is not None and mine().asleep == asleep, 10)
            return ok and reached, text

        return run

    steps.run('the bridge connects to nabd', connected)
    steps.run('set_ears 5, 9', lambda: b.call(RabbitEars, 'set_ears', ear0=5, ear1=9))
    steps.run(
        'play_sound media tone.wav',
        lambda: b.call(RabbitSound, 'play_sound', media_file='tone.wav'),
    )
    steps.run(
        'say "Hello from ROS."', lambda: b.call(RabbitSay, 'say', 30, text='Hello from ROS.')
    )
    steps.run('sleep', setting('sleep', True))
    steps.run('wakeup', setting('wake', False))
    steps.run(
        'send_program (a nabd packet) gestalt',
        lambda: b.call(RabbitProgram, 'send_program', program='{"type": "gestalt"}'),
    )
    steps.run('button click → events', event('button click', RabbitEvent.CLICK))
    steps.run(
        'button double click → events', event('button double_click', RabbitEvent.DOUBLE_CLICK)
    )
    steps.run('tag on → events', event(f'rfid {TAG}', RabbitEvent.RFID, rfid=TAG))
    steps.run('tag off → events', event(f'rfid {TAG} removed', RabbitEvent.RFID_REMOVED, rfid=TAG))
    steps.run(
        'ears turned by hand → events', event('ears 3 9', RabbitEvent.EARS_MOVED, ear0=3, ear1=9)
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--logs', type=pathlib.Path, help="folder of nabd's log (to print)")
    args = parser.parse_args(argv)
    if not wait(lambda: control('') is not None, 30):
        raise SystemExit(f'nabd_peer is not listening on {CONTROL}: see try_pynab_nabd.sh')
    folder, parameters = prepare()
    steps = Steps()
    with bridge('/pynab', parameters, NAME, folder / 'bridge.log') as b:
        steps_with(b, steps)
    print(f'logs: {folder}' + (f', nabd: {args.logs}' if args.logs else ''))
    return 0 if steps.passed else 1


if __name__ == '__main__':
    sys.exit(main())
