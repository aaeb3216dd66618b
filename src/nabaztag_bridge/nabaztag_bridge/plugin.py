"""How the Nabaztag bridge appears in bringup, the demo and the launch files.

In the demo an emulated rabbit boots from the bridge (a stand-in bytecode the
emulator accepts; Violet's is not shipped), is clicked, has an ear turned, is
shown a tag and records. The demo answers a click with a choreography and a tag
with a sound from the media root; the echo plugin plays the recording back. The
rabbit is also asked the time by voice (the question spoken by the neural voice, uploaded
as the rabbit records) and what the bridge heard goes on `heard` and into summary.txt. The
bridge runs the demo's rules (DEMO_RULES): the heard question is answered with the time, the
scenario's tag starts a choreography, a double click publishes on /intents; the rules that
fired go into summary.txt too. The event log, the question, the recording and the spoken answer
as the rabbit played it (WAVs) go to demo-output/nabaztag/. In the demo the same bridge speaks to
a serverless and a pynab rabbit declared in a rabbits file (demo_rabbits.py): each is asked the
time and shown a tag of its own, and summary.txt says what each played.
"""

import functools
import pathlib
import shutil
import tempfile
import threading

from legacy_robot_common.artifacts import save_lines, save_wav
from legacy_robot_common.emulator import free_port
from legacy_robot_common.plugin import (
    ByName,
    DemoScript,
    DemoTopic,
    FoxgloveView,
    RobotPlugin,
    SoakPart,
)
from legacy_robot_interfaces.msg import (
    ChoreographyStep,
    RabbitEvent,
    RabbitHeard,
    RabbitList,
    RabbitRecording,
    RuleFired,
)
from legacy_robot_interfaces.srv import RabbitChoreography, RabbitSay, RabbitSound

from . import protocol as p
from . import recording
from .demo_rabbits import PYNAB_NAME, SERVERLESS_NAME, OtherRabbits
from .demo_rabbits import RULES as OTHER_RABBITS_RULES
from .emulator import (
    RabbitEmulator,
    RabbitOptions,
    Scenario,
    decode_audio,
    rabbit_request,
    spoken_recording,
)
from .replay import NabaztagReplay
from .server import SPEECH_PATH

KIND_NAMES = {
    getattr(RabbitEvent, name): name.lower()
    for name in (
        'BOOT',
        'PING',
        'CLICK',
        'DOUBLE_CLICK',
        'CLICK_WHILE_PLAYING',
        'END_OF_MESSAGE',
        'EARS_MOVED',
        'RFID',
        'RECORDING',
        'LOCATE',
        'SAY_SYNTHESISING',
        'SAY_QUEUED',
        'SAY_FETCHED',
        'SAY_DONE',
    )
}
SIM_PORT = 8080
DEMO_SOUND = 'hello.wav'
DEMO_SPEECH = 'Hello! I am a Nabaztag rabbit, and I speak through ROS 2.'
DEMO_SPEECH_AT = 3.0  # s into the demo
DEMO_QUESTION = 'What time is it?'
DEMO_TAG = 'd0021a0352d64cec'  # the one the emulator's scenario shows
# The demo's scene (s after the emulator starts): a new program interrupts the one a rabbit
# plays, so the spoken question has the rabbit to itself until its answer has played (the
# rabbit pings 4 s after an upload, gets the echo of the question, then the answer).
DEMO_SCENE = (
    (2.0, 'move_ears', (5, 12)),
    (4.0, 'click', ()),
    (6.0, 'show_tag', (DEMO_TAG,)),
    (18.0, 'record', (1.5,)),  # a tone: heard, no words
)
DEMO_SCENE_PERIOD = 24.0
OTHER_RABBITS = (SERVERLESS_NAME, PYNAB_NAME)  # the violet rabbit is the one that calls
DEMO_QUESTION_AT = 8.0  # the rabbit records the spoken question
# the shipped example (config/nabaztag_rules.yaml) with the scenario's tag
DEMO_RULES = f"""rules:
  - name: tell the time
    when: {{phrase: what time is it}}
    cooldown: 5
    do:
      - say: It is {{time}}.
  - name: the dancing tag
    when: {{rfid: {DEMO_TAG}}}
    cooldown: 2
    do:
      - choreography: wiggle
  - name: double click starts
    when: double_click
    do:
      - publish: {{topic: /intents, type: std_msgs/msg/String, fields: {{data: start}}}}
{OTHER_RABBITS_RULES}"""
# one second of silence as MPEG-1 Layer III (the rabbit's format): 38 frames of 128 kbit/s at
# 44.1 kHz, each a 4-byte header and 413 zero bytes (no side information: silence)
SILENT_MP3 = (b'\xff\xfb\x90\x00' + bytes(413)) * 38
# Emulator-only: a real rabbit's boot code would accept this wrapper and then fail to run it.
STAND_IN_BYTECODE = p.wrap_bytecode(
    b'legacy_robots emulator stand-in, not a Nabaztag program; '
    b'for emulated rabbits only /vl/p4.jsp?sn='
)


def describe(msg):
    text = f'{msg.serial} {KIND_NAMES.get(msg.kind, msg.kind)}'
    if msg.kind == RabbitEvent.EARS_MOVED:
        text += f' ears {msg.ear0},{msg.ear1}'
    if msg.rfid:
        text += f' tag {msg.rfid}'
    return text


def describe_heard(msg):
    if msg.text:
        return f'heard {msg.text!r} from {msg.serial} ({msg.language}, {msg.duration:.1f} s)'
    return f'heard nothing in {msg.duration:.1f} s from {msg.serial}: {msg.reason}'


def describe_firing(msg):
    detail = f' {msg.detail!r}' if msg.detail else ''
    return f'rule {msg.rule!r} fired on {msg.trigger}{detail}'


def rules_by_rabbit(fired, kinds):
    """One line per rabbit (in the order they fired): its kind, name or serial, and the rules
    its events fired. kinds: serial -> kind (a rabbit not listed calls: violet)."""
    by_rabbit = {}
    for msg in fired:
        by_rabbit.setdefault(msg.serial, []).append(describe_firing(msg))
    return [
        f'{kinds.get(serial, "violet")} rabbit {serial or "(every rabbit)"}: {", ".join(lines)}'
        for serial, lines in by_rabbit.items()
    ]


class DemoEmulator:
    """One rabbit with a scenario, calling a bridge on a free loopback port; the bridge gets
    the stand-in bytecode and a media root with one sound. other_kinds (the demo): a serverless
    and a pynab rabbit beside it, declared in a rabbits file."""

    def __init__(self, other_kinds=False):
        self.folder = tempfile.TemporaryDirectory(prefix='nabaztag-demo-')
        folder = pathlib.Path(self.folder.name)
        (folder / 'bytecode.bin').write_bytes(STAND_IN_BYTECODE)
        (folder / 'media').mkdir()
        (folder / 'media' / DEMO_SOUND).write_bytes(recording.encode_wav(recording.tone(1.0)))
        (folder / 'media' / 'hello.mp3').write_bytes(SILENT_MP3)  # the README's example
        (folder / 'rules.yaml').write_text(DEMO_RULES)
        port = free_port()
        self.asked_after = None  # how many programs the rabbit had played when asked
        self.question_wav = None
        self._spoken = threading.Event()  # the question was spoken (or could not be)
        self.others = OtherRabbits(port, self.spoken_question) if other_kinds else None
        self.parameters = {
            'host': '127.0.0.1',
            'port': port,
            'ping_interval': 1,
            'plugin': 'echo',
            'bytecode_file': str(folder / 'bytecode.bin'),
            'media_root': str(folder / 'media'),
            'rules_file': str(folder / 'rules.yaml'),
        }
        if self.others is not None:
            (folder / 'rabbits.yaml').write_text(self.others.rabbits_file())
            self.parameters['rabbits_file'] = str(folder / 'rabbits.yaml')
        (folder / 'played').mkdir()
        self.emulator = RabbitEmulator(
            RabbitOptions(server=f'127.0.0.1:{port}/vl', audio_dir=str(folder / 'played'))
        )
        self.rabbit = self.emulator.rabbits[0]
        self.emulator.scenario = Scenario(self.rabbit, DEMO_SCENE, DEMO_SCENE_PERIOD)
        self.emulator.start()
        self.description = self.emulator.description
        if self.others is not None:
            self.others.start()
            self.description += f'; {self.others.description}'
        self._question = threading.Timer(DEMO_QUESTION_AT, self.ask_the_time)
        self._question.daemon = True
        self._question.start()

    def ask_the_time(self):
        """The rabbit records someone asking the time (neural voice if installed)."""
        try:
            # the serverless rabbit records the same question
            self.question_wav = wav = spoken_recording(DEMO_QUESTION, neural=True)
        except ValueError as exc:  # no speech engine: the demo goes on without the question
            print(f'nabaztag demo: cannot speak the question: {exc}')
            return
        finally:
            self._spoken.set()
        self.asked_after = self.rabbit.audio_programs
        self.rabbit.record_sound(wav)

    def spoken_question(self, timeout):
        """The question as the rabbit records it (a WAV), once spoken; None if it was not."""
        self._spoken.wait(timeout)
        return self.question_wav

    def answer(self):
        """The rabbit's spoken answer to the question: the last program of speech only that it
        played after it was asked (PlayedAudio), or None."""
        if self.asked_after is None:
            return None
        spoken = [
            played
            for played in self.rabbit.audio_since(self.asked_after)
            if all(SPEECH_PATH in url for url in played.urls)
        ]
        return spoken[-1] if spoken else None

    def write_artifacts(self, folder):
        answer = self.answer()
        if answer is None:
            return []
        folder.mkdir(parents=True, exist_ok=True)
        return [pathlib.Path(shutil.copyfile(answer.path, folder / 'answer.wav'))]

    def summary_lines(self):
        violet = f'violet rabbit {self.rabbit.serial}: played'
        others = self.others.summary_lines() if self.others is not None else []
        if self.answer() is None:
            return [f'{violet} no spoken answer to {DEMO_QUESTION!r}', *others]
        return [f'{violet} the spoken answer to {DEMO_QUESTION!r} (answer.wav)', *others]

    def stop(self):
        self._question.cancel()
        # a question being spoken finishes first: the neural voice runs in onnxruntime, whose
        # threads still working when the process exits abort it (std::terminate)
        self._question.join()
        if self.others is not None:
            self.others.stop()
        self.emulator.stop()
        self.folder.cleanup()


class RabbitKeeper(DemoScript):
    """Says a sentence (the say service; the audio it played kept as speech.mp3 and
    speech.wav), answers clicks with a choreography and tags with a sound; keeps the event
    log."""

    STEPS = [
        ChoreographyStep(wait=0, opcode=ChoreographyStep.ALL_LEDS, args=[0, 80, 255]),
        ChoreographyStep(wait=20, opcode=ChoreographyStep.EAR, args=[0, 4, 0]),
        ChoreographyStep(wait=0, opcode=ChoreographyStep.EAR, args=[1, 4, 1]),
        ChoreographyStep(wait=20, opcode=ChoreographyStep.LED, args=[4, 255, 0, 80, 0, 0]),
        ChoreographyStep(wait=20, opcode=ChoreographyStep.LED_OFF, args=[4]),
    ]

    def __init__(self):
        super().__init__()
        self.log = []
        self.recording = None
        self.recordings = []  # one heard message each, in the same order
        self.pending = []
        self.speech = None  # the say call's future, then its MP3 bytes
        self.speech_files = []
        self.heard = []
        self.fired = []  # RuleFired messages
        self.kinds = {}  # serial or name -> kind, from the rabbits topic
        self.violet_serial = None  # the rabbit the scripted calls go to (its first event)

    def setup(self, node, namespace):
        self.choreography = node.create_client(
            RabbitChoreography, f'{namespace}/play_choreography'
        )
        self.sound = node.create_client(RabbitSound, f'{namespace}/play_sound')
        self.say = node.create_client(RabbitSay, f'{namespace}/say')

    def on_message(self, topic, msg):
        if topic == 'events':
            self.log.append(describe(msg))
            if msg.serial in OTHER_RABBITS:  # their rules answer them
                return
            self.violet_serial = self.violet_serial or msg.serial
            if msg.kind == RabbitEvent.CLICK:
                self.pending.append(
                    (
                        self.choreography,
                        RabbitChoreography.Request(serial=msg.serial, tempo=5, steps=self.STEPS),
                    )
                )
            elif msg.kind == RabbitEvent.RFID:
                self.pending.append(
                    (self.sound, RabbitSound.Request(serial=msg.serial, media_file=DEMO_SOUND))
                )
        elif topic == 'recordings':
            self.recording = msg
            self.recordings.append(msg)
        elif topic == 'heard':
            self.heard.append(msg)
        elif topic == 'rules_fired':
            self.fired.append(msg)
        elif topic == 'rabbits':
            self.kinds.update((rabbit.serial, rabbit.kind) for rabbit in msg.rabbits)

    def act(self, elapsed):
        while self.pending and self.pending[0][0].service_is_ready():
            client, request = self.pending.pop(0)
            client.call_async(request)
        if elapsed >= DEMO_SPEECH_AT and self.violet_serial is not None:
            self.call_until_success(
                'say',
                self.say,
                RabbitSay.Request(serial=self.violet_serial, text=DEMO_SPEECH, choreography='nod'),
            )
            future = self._pending.get('say', (None, 0))[0]
            if future is not None and future.done() and not self.speech_files:
                reply = future.result()
                if reply.success:
                    self.log.append(f'say: {reply.message}')
                    # the files the rabbit fetched, fetched again for the output (without the
                    # query that would count as the rabbit's fetch)
                    self.speech_files = [
                        rabbit_request(url.partition('?')[0]) for url in reply.audio_urls
                    ]

    def summary_lines(self):
        said = [line for line in self.log if line.startswith('say: ')]
        lines = [describe_heard(msg) for msg in self.heard]
        if not self.heard:
            lines.append(f'heard nothing (asked {DEMO_QUESTION!r}; is asr_engine on?)')
        lines += rules_by_rabbit(self.fired, self.kinds) or ['no rule fired']
        if not self.speech_files:
            return ['did not speak (no answer from the say service)', *lines]
        return [f'said {DEMO_SPEECH!r} (speech.mp3, speech.wav); {said[-1]}', *lines]

    def write_artifacts(self, folder):
        paths = [save_lines(folder / 'events.txt', self.log)]
        if self.speech_files:
            (folder / 'speech.mp3').write_bytes(b''.join(self.speech_files))
            pcm, rate = decode_audio(self.speech_files)
            paths += [folder / 'speech.mp3', save_wav(folder / 'speech.wav', pcm, rate)]
        if self.heard:
            paths.append(save_lines(folder / 'heard.txt', map(describe_heard, self.heard)))
        spoken = [rec for rec, msg in zip(self.recordings, self.heard, strict=False) if msg.text]
        if spoken:  # the question (the scenario's tone has no words)
            rate = spoken[0].sample_rate
            paths.append(save_wav(folder / 'question.wav', bytes(spoken[0].pcm), rate, 1))
        if self.recording is not None:
            paths.append(
                save_wav(
                    folder / 'recording.wav',
                    bytes(self.recording.pcm),
                    self.recording.sample_rate,
                    1,
                )
            )
        return paths


PLUGIN = RobotPlugin(
    name='nabaztag',
    package='nabaztag_bridge',
    # by name, not imported: node.main imports this plugin
    create_node=ByName('nabaztag_bridge.node:NabaztagBridge'),
    start_emulator=DemoEmulator,
    start_demo_emulator=functools.partial(DemoEmulator, other_kinds=True),
    emulator_arguments=('--server', f'127.0.0.1:{SIM_PORT}/vl', '--no-boot', '--scenario'),
    sim_parameters={'host': '127.0.0.1', 'port': SIM_PORT, 'ping_interval': 2},
    demo_topics=(
        DemoTopic('events', RabbitEvent, describe),
        DemoTopic(
            'recordings',
            RabbitRecording,
            lambda m: f'{len(m.pcm) / max(m.sample_rate, 1):.1f} s from {m.serial}',
        ),
        DemoTopic('heard', RabbitHeard, describe_heard),
        DemoTopic('rules_fired', RuleFired, describe_firing),
        DemoTopic(
            'rabbits', RabbitList, lambda m: ', '.join(f'{r.serial} {r.state}' for r in m.rabbits)
        ),
    ),
    make_demo_script=RabbitKeeper,
    # the rabbits are the clients: replay sends their recorded requests to the bridge
    make_replay=NabaztagReplay,
    label='Nabaztag',
    # the HTTP thread answers a ping in well under a millisecond but waits for the GIL whenever
    # the executor builds a message, by default up to 5 ms per hand-over, several times per
    # request (measured: rabbit list of 5,000 rabbits -> ping p99 44 ms)
    switch_interval=0.0005,
    foxglove=FoxgloveView(
        plots=('rabbits.rabbits[:].queued_packets',),
        services=(('set_ears', 'set ears'), ('play_sound', 'play sound')),
    ),
    bench_quick_arguments=(
        '--seconds',
        '5',
        '--rabbits',
        '100',
        '--many-rabbits',
        '1000',
        '--requests',
        '5000',
        '--no-drain',
    ),
    soak_parts=(
        SoakPart(
            'nabaztag',
            'legacy_robot_bench.nabaztag_bridge.soak:malformed_rows',
            '--requests',
            10_000,
            'Nabaztag: malformed requests',
        ),
    ),
)
