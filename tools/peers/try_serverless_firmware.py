"""Drive ServerlessNabaztag's own simulator through nabaztag_bridge and print what happened.

    tools/peers/try_serverless_firmware.sh PATH/TO/ServerlessNabaztag

The simulator (the firmware's compiler/mtl_simu, built from the owner's checkout) boots from the
bridge: its server setting (conf.bin) names the bridge, which serves the checkout's vl/ with our
own hook words. Then each ROS service of the serverless kind is called, each hook is fired inside
the rabbit (its Forth console, /forth?c=...) and the events topic is read. One row per step;
exit status 0 only when every step passed. Nothing of the firmware is copied: it runs where the
owner keeps it.
"""

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request

from peer_run import Steps, bridge, wait

from legacy_robot_common.emulator import free_port
from legacy_robot_interfaces.msg import RabbitEvent
from legacy_robot_interfaces.srv import (
    RabbitEars,
    RabbitProgram,
    RabbitSay,
    RabbitSetting,
    RabbitSound,
)
from nabaztag_bridge import recording

API = 'http://127.0.0.1:8080'  # the simulator maps the firmware's port 80 to 8080
MAC = '0123456789ab'
NAME = 'simulated'
SETTING_BYTES = 40  # conf.bin starts with the "Violet Platform" setting, NUL-terminated
TAG = 'd0021a0102030405'
EARS_MODE_RESET = 0  # /status ears.mode while the ears find their reference after a boot


def api(path):
    with urllib.request.urlopen(API + path, timeout=5) as reply:
        return reply.status, reply.read()


def status():
    return json.loads(api('/status')[1])


def ears_now():
    ears = status()['ears']
    return ears['left']['last_position'], ears['right']['last_position']


def forth(code):
    return api('/forth?c=' + urllib.parse.quote(code))


def write_conf(checkout, server, folder):
    conf = bytearray((checkout / 'conf.bin').read_bytes())
    setting = server.encode() + b'\0'
    if len(setting) > SETTING_BYTES:
        raise SystemExit(f'server setting {server!r} is too long for conf.bin')
    conf[: len(setting)] = setting
    (folder / 'conf.bin').write_bytes(bytes(conf))


def prepare(checkout):
    """→ (folder, bridge port, parameters): conf.bin naming the bridge, a rabbits file, media."""
    for needed in ('compiler/mtl_simu/mtl_simu', 'nominal.mtl', 'vl/init.forth'):
        if not (checkout / needed).exists():
            raise SystemExit(f'missing {checkout / needed}: run try_serverless_firmware.sh')
    folder = pathlib.Path(tempfile.mkdtemp(prefix='serverless-sim-'))
    (folder / 'media').mkdir()
    (folder / 'media' / 'tone.wav').write_bytes(recording.encode_wav(recording.tone(0.5)))
    port = free_port()
    write_conf(checkout, f'127.0.0.1:{port}', folder)
    (folder / 'rabbits.yaml').write_text(
        f'rabbits:\n  - name: {NAME}\n    kind: serverless\n'
        f'    address: 127.0.0.1:8080\n    mac: {MAC}\n'
    )
    parameters = {
        'host': '127.0.0.1',
        'port': port,
        'media_root': str(folder / 'media'),
        'rabbits_file': str(folder / 'rabbits.yaml'),
        'serverless_vl_dir': str(checkout / 'vl'),
        'rabbit_timeout': 3.0,
        'rabbit_status_period': 1.0,
        'tts_engine': 'espeak',
    }
    return folder, port, parameters


def steps_with(b, steps):
    def hook(code, kind, **fields):
        def fire():
            since = len(b.events)
            forth(code)
            return b.seen(kind, since, **fields), b.last_event(since)

        return fire

    def booted():
        # up, and its ears past the reset that follows a boot (mode -1, then 0): an ear command
        # sent before that reset ends is lost, the reset ends at the reference position
        up = wait(lambda: status()['ears']['mode'] > EARS_MODE_RESET, 60)
        # our hook words are loaded once a click inside the rabbit reaches ROS
        since = len(b.events)
        return up and wait(
            lambda: forth('on-click') and b.seen(RabbitEvent.CLICK, since, 1), 60, 1
        ), 'API up, our hook words loaded'

    def ears():
        ok, text = b.call(RabbitEars, 'set_ears', ear0=5, ear1=9)
        return ok and wait(lambda: ears_now() == (5, 9), 20), f'{text}; /status {ears_now()}'

    def program(code, expect):
        def run():
            ok, text = b.call(RabbitProgram, 'send_program', program=code)
            return ok and expect in text, text

        return run

    def setting(name, sleep_state):
        def run():
            ok, text = b.call(RabbitSetting, 'rabbit_setting', name=name)
            reached = wait(lambda: status()['sleep_state'] == sleep_state, 20)
            return ok and reached, f'{text}; /status sleep_state {status()["sleep_state"]}'

        return run

    steps.run('boot from the bridge', booted)
    steps.run('set_ears 5, 9', ears)
    steps.run('send_program (Forth) "1 2 + ."', program('1 2 + .', '3'))
    steps.run(
        'play_sound media tone.wav',
        lambda: b.call(RabbitSound, 'play_sound', media_file='tone.wav'),
    )
    steps.run(
        'say "Hello from ROS."', lambda: b.call(RabbitSay, 'say', 30, text='Hello from ROS.')
    )
    steps.run('sleep', setting('sleep', 1))
    steps.run('wakeup', setting('wake', 0))
    steps.run('hook click → events', hook('on-click', RabbitEvent.CLICK))
    steps.run('hook double click → events', hook('on-dbl-click', RabbitEvent.DOUBLE_CLICK))
    steps.run('hook ears → events (5, 9)', hook('on-ears', RabbitEvent.EARS_MOVED, ear0=5, ear1=9))
    steps.run('hook rfid → events', hook(f'"{TAG}" on-rfid', RabbitEvent.RFID, rfid=TAG))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('checkout', type=pathlib.Path, help='a built ServerlessNabaztag checkout')
    checkout = parser.parse_args(argv).checkout.resolve()
    folder, _, parameters = prepare(checkout)
    steps = Steps()
    with bridge('/sim', parameters, NAME, folder / 'bridge.log') as b:
        with open(folder / 'simulator.log', 'wb') as log:
            simulator = subprocess.Popen(
                [
                    str(checkout / 'compiler/mtl_simu/mtl_simu'),
                    '--noleds',
                    '--mac',
                    MAC,
                    '--logs',
                    'init,vm,simunet',
                    '--source',
                    str(checkout / 'nominal.mtl'),
                ],
                cwd=folder,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            try:
                steps_with(b, steps)
            finally:
                simulator.terminate()
                simulator.wait(10)
    fetched = (folder / 'simulator.log').read_text(errors='replace')
    for path in ('/local/tone.wav', '/tts/'):
        steps.run(
            f'the rabbit fetched {path} from the bridge',
            lambda p=path: (f'GET {p}' in fetched, ''),
        )
    print(f'logs: {folder}')
    return 0 if steps.passed else 1


if __name__ == '__main__':
    sys.exit(main())
