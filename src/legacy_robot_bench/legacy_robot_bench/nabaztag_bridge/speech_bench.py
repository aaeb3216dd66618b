"""Speech benchmark of the Nabaztag bridge: one table, and bench-output/nabaztag_speech.json.

  nabaztag_speech_bench [--seconds 20] [--words 1000] [--say-only]

* real-time factor of each engine: CPU seconds of the worker process per second of audio,
  a paragraph of about 60 words, piper on one thread;
* first answer for a 10-word sentence from the worker process: cold (the process started
  and the voice loaded for it), warm (the next sentence), each engine;
* say round trip through the bridge (a real process; this process calls the service): a
  10-word sentence not yet cached (engine warm; the median of SAYS different sentences), and
  the same sentence again (cached); --say-only measures just these (some 20 s);
* MP3 bytes per second of speech at the bridge's defaults (22,050 Hz, 32 kbit/s);
* ping latency of 100 rabbits pinging every second (rabbit_load.c, the open-loop load of
  nabaztag_bench), p99, without speech and while the bridge synthesises a 1,000-word text.
"""

import argparse
import pathlib
import shutil
import statistics
import subprocess
import sys
import threading
import time

import rclpy

from legacy_robot_bench.common.bench import report, start_driver, stop_process, wait_ready
from legacy_robot_common.emulator import free_port
from legacy_robot_interfaces.srv import RabbitSay
from nabaztag_bridge import tts
from nabaztag_bridge.tts_client import WorkerProcess

from . import loadgen
from .bench import IDLE_PING, _answers

NAMESPACE = '/speech_bench'
SERIAL = '0019db000000'  # the first of rabbit_load's rabbits
SENTENCE = 'The quick brown rabbit jumps over the lazy dog near home.'  # 10 words + 1
PARAGRAPH = (
    'Once upon a time a small rabbit lived in a garden behind an old stone house. '
    'Every morning it listened to the birds, counted the carrots and waved its long ears '
    'at the children who walked past on their way to school. One day a letter arrived, '
    'and the rabbit read it aloud to everyone who wanted to hear it.'
)
ROUNDS = 2  # quiet / busy pairs
SAYS = 5  # different 10-word sentences said, engine warm: the median is the figure
VARIANTS = ('lazy', 'sleepy', 'old', 'happy', 'tired', 'small', 'grey')
TARGETS = {'rtf_piper': 0.1, 'warm': 0.5, 'cold': 1.5, 'cached': 0.020, 'ping_delta_ms': 2.0}


def words(count, offset=0):
    """count words of the paragraph, from word offset on (another offset: another text)."""
    base = PARAGRAPH.split()
    return ' '.join(base[(i + offset) % len(base)] for i in range(count)) + '.'


def engine_figures(catalogue, engine):
    """(real-time factor, cold s, warm s) of one engine, from a fresh worker process."""
    voice = catalogue.resolve(engine, '', 'en')

    def request(text):
        return {'id': 1, **tts.Request(voice, 1.0, text, 22050, 32, 300_000).to_wire()}

    worker = WorkerProcess(threads=1)
    started = time.monotonic()
    worker.start()
    header, _ = worker.call(request(SENTENCE))
    cold = time.monotonic() - started
    started = time.monotonic()
    worker.call(request(SENTENCE.replace('lazy', 'sleepy')))
    warm = time.monotonic() - started
    header, blobs = worker.call(request(PARAGRAPH))
    worker.stop()
    if not header.get('ok'):
        raise RuntimeError(f'{engine}: {header.get("error")}')
    rtf = header['cpu_seconds'] / header['audio_seconds']
    return rtf, cold, warm, sum(map(len, blobs)) / header['audio_seconds']


class SayClient:
    def __init__(self):
        rclpy.init()
        self.node = rclpy.create_node('speech_bench')
        self.client = self.node.create_client(RabbitSay, f'{NAMESPACE}/say')

    def call(self, text, timeout=600.0):
        """(seconds to the answer, reply)."""
        if not self.client.wait_for_service(timeout_sec=30.0):
            raise RuntimeError('the bridge offers no say service')
        started = time.monotonic()
        future = self.client.call_async(RabbitSay.Request(serial=SERIAL, text=text))
        rclpy.spin_until_future_complete(self.node, future, timeout_sec=timeout)
        if not future.done():
            raise RuntimeError('say did not answer')
        return time.monotonic() - started, future.result()

    def close(self):
        self.node.destroy_node()
        rclpy.try_shutdown()


def _say_into(client, text, answers):
    answers.append(client.call(text))


def start_bridge(program, namespace, parameters):
    """(the bridge's process, its port): a bridge on loopback, answering, with rabbit_load's
    100 rabbits registered."""
    port = free_port()
    bridge = start_driver(
        'nabaztag_bridge.node',
        namespace,
        {'host': '127.0.0.1', 'port': port, 'ping_interval': 1, **parameters},
    )
    try:
        wait_ready(
            bridge,
            lambda: _answers(f'http://127.0.0.1:{port}{IDLE_PING}'),
            'the bridge did not answer',
            settle=1.0,
        )
        loadgen.open_loop(program, port, 100, 1, 2)  # registers the rabbits
    except BaseException:
        stop_process(bridge)
        raise
    return bridge, port


def bridge_figures(program, seconds, word_count, output, rounds=ROUNDS):
    """say round trips (uncached, cached) and ping p99 without / with a long synthesis."""
    cache = pathlib.Path(output) / 'speech-bench-cache'
    shutil.rmtree(cache, ignore_errors=True)  # nothing cached by an earlier run
    parameters = {'tts_cache_dir': str(cache), 'tts_max_chars': 20_000, 'tts_timeout': 3600.0}
    bridge, port = start_bridge(program, NAMESPACE, parameters)
    client = None
    try:
        client = SayClient()
        client.call('Warming up.')  # the worker is started and its voice loaded
        says = []
        for variant in VARIANTS[:SAYS]:
            seconds_taken, reply = client.call(SENTENCE.replace('lazy', variant))
            if not reply.success:
                raise RuntimeError(f'say failed: {reply.message}')
            says.append(seconds_taken)
        cached, again = client.call(SENTENCE)
        if not (again.success and '(cached)' in again.message):
            raise RuntimeError(f'say failed: {again.message}')
        figures = {
            'uncached': statistics.median(says),
            'says': says,
            'cached': cached,
            'rounds': [],
        }
        for round_ in range(rounds):  # alternately: the machine's own noise hits both sides
            quiet = loadgen.open_loop(program, port, 100, 1, seconds)
            long_reply = []
            text = words(word_count, offset=round_)
            speaking = threading.Thread(
                target=_say_into, args=(client, text, long_reply), daemon=True
            )
            speaking.start()
            time.sleep(0.5)  # the worker has started on it
            busy = loadgen.open_loop(program, port, 100, 1, seconds)
            overlapped = speaking.is_alive()
            speaking.join()
            figures['rounds'].append(
                {
                    'quiet': quiet,
                    'busy': busy,
                    'overlapped': overlapped,
                    'long_seconds': long_reply[0][0],
                    'long_audio': long_reply[0][1].audio_seconds,
                }
            )
        return figures
    finally:
        if client is not None:
            client.close()
        stop_process(bridge)


def main(argv=None):
    parser = argparse.ArgumentParser(prog='nabaztag_speech_bench', description=__doc__)
    parser.add_argument('--seconds', type=float, default=20.0, help='open-loop run length')
    parser.add_argument('--words', type=int, default=1000, help='words of the long text')
    parser.add_argument('--output', default='bench-output', help='folder for the JSON')
    parser.add_argument(
        '--say-only',
        action='store_true',
        help='only the say rows (the bridge, engine warm, and cached): some 20 s',
    )
    args = parser.parse_args(argv)
    if args.seconds <= 0 or args.words < 1:
        print('error: --seconds must be positive and --words ≥ 1', file=sys.stderr)
        return 2
    catalogue = tts.VoiceCatalogue()
    engines = [
        name
        for name, present in (
            ('piper', catalogue.piper_installed and catalogue.piper_voices),
            ('espeak', catalogue.espeak_installed),
        )
        if present
    ]
    if not engines:
        print('error: no speech engine installed (requirements-speech.txt)', file=sys.stderr)
        return 2
    try:
        figures = {} if args.say_only else {e: engine_figures(catalogue, e) for e in engines}
        program = loadgen.build_rabbit_load(pathlib.Path(args.output) / 'bin')
        rounds = 0 if args.say_only else ROUNDS
        bridge = bridge_figures(program, args.seconds, args.words, args.output, rounds)
    except (RuntimeError, subprocess.TimeoutExpired, loadgen.LoadError) as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 1
    rows = []
    for engine, (rtf, cold, warm, mp3_rate) in figures.items():
        rows += [
            (
                f'{engine}: real-time factor (CPU s per s of audio, 1 thread)',
                rtf,
                f'{rtf:.3f}',
                ('<=', TARGETS['rtf_piper']) if engine == 'piper' else None,
            ),
            (
                f'{engine}: 10-word sentence, cold worker (start + voice load) (s)',
                cold,
                f'{cold:.2f} s',
                ('<=', TARGETS['cold']) if engine == 'piper' else None,
            ),
            (
                f'{engine}: 10-word sentence, warm worker (s)',
                warm,
                f'{warm:.3f} s',
                ('<=', TARGETS['warm']),
            ),
            (f'{engine}: MP3 bytes per s of speech', mp3_rate, f'{mp3_rate:,.0f} B/s', None),
        ]
    says = bridge['says']
    rows += [
        (
            f'say, 10-word sentence, engine warm (s), median of {len(says)} sentences',
            bridge['uncached'],
            f'{bridge["uncached"]:.3f} s',
            ('<=', TARGETS['warm']),
        ),
        (
            'say, the same sentence again (cached) (s)',
            bridge['cached'],
            f'{bridge["cached"] * 1000:.1f} ms',
            ('<=', TARGETS['cached']),
        ),
    ]
    if bridge['rounds']:
        rows += ping_rows(bridge['rounds'], args.words)
    return report(
        'Nabaztag speech benchmark' + (' (say only)' if args.say_only else ''),
        rows,
        args.output,
        'nabaztag_speech_say' if args.say_only else 'nabaztag_speech',
        {'engines': {e: list(f) for e, f in figures.items()}, 'bridge': bridge},
    )


def ping_rows(rounds, word_count):
    quiet = statistics.median(r['quiet']['p99_ms'] for r in rounds)
    busy = statistics.median(r['busy']['p99_ms'] for r in rounds)
    failed = sum(r[k]['failed'] + r[k]['overruns'] for r in rounds for k in ('quiet', 'busy'))
    return [
        (
            f'{word_count}-word say: answered after (s) / audio (s)',
            rounds[0]['long_seconds'],
            f'{rounds[0]["long_seconds"]:.1f} / {rounds[0]["long_audio"]:.0f}',
            None,
        ),
        (
            f'100 rabbits/s, no speech: ping p99 (ms), median of {len(rounds)}',
            quiet,
            ' / '.join(f'{r["quiet"]["p99_ms"]:.1f}' for r in rounds),
            None,
        ),
        (
            f'100 rabbits/s, {word_count}-word synthesis running: ping p99 (ms)'
            + ('' if all(r['overlapped'] for r in rounds) else ' (synthesis ended first)'),
            busy,
            ' / '.join(f'{r["busy"]["p99_ms"]:.1f}' for r in rounds),
            None,
        ),
        (
            'ping p99 difference, medians (ms)',
            busy - quiet,
            f'{busy - quiet:+.2f}',
            ('<=', TARGETS['ping_delta_ms']),
        ),
        ('failed or late pings (all runs)', failed, f'{failed}', ('<=', 0)),
    ]


if __name__ == '__main__':
    sys.exit(main())
