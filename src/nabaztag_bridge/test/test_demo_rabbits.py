"""The Nabaztag demo's serverless and pynab rabbits without ROS, over real loopback sockets: the
rabbits file declares the two emulators where they listen, each step of their scene reaches the
wire as the bridge gets it (the serverless rabbit's hooks over HTTP, nabd's events decoded by
the pynab link) and fires that rabbit's rules of the demo, and what each was told to play is
what the summary says. The whole demo through the bridge: test/test_demo_e2e.py."""

import http.server
import itertools
import pathlib
import queue
import threading
import urllib.parse
import urllib.request

import pytest
from helpers import wait_for

from nabaztag_bridge import demo_rabbits as d
from nabaztag_bridge import plugin, recording, rules
from nabaztag_bridge import protocol as p
from nabaztag_bridge.kinds import KINDS, LinkOptions, make_links
from nabaztag_bridge.kinds.roster import load_entries, split_address
from nabaztag_bridge.server import SPEECH_PATH

WAIT = 10.0
QUESTION = recording.encode_wav(recording.tone(0.3))  # stands in for the spoken question
DEMO_SECONDS = 20.0  # the README's demo
ANSWER_SECONDS = 5.0  # recognise, synthesise, fetch: the last question needs this much


class Server:
    """A loopback HTTP server: keeps each POST (path, body), answers 200; serves the answer
    MP3 at SPEECH_PATH."""

    def __init__(self):
        self.posts = queue.Queue()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get('Content-Length') or 0))
                server.posts.put((self.path, body))
                self._reply(b'')

            def do_GET(self):
                self._reply(plugin.SILENT_MP3)

            def _reply(self, body):
                self.send_response(200)
                self.send_header('Content-Length', str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self._http = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.port = self._http.server_address[1]
        threading.Thread(target=self._http.serve_forever, daemon=True).start()

    def stop(self):
        self._http.shutdown()
        self._http.server_close()


@pytest.fixture
def rig():
    """(the stand-in bridge's server, the other rabbits, the pynab link, its events)."""
    bridge = Server()
    others = d.OtherRabbits(bridge.port, lambda timeout: QUESTION)
    entries = load_entries(others.rabbits_file(), KINDS)
    events = queue.Queue()
    pynab = [
        link for link in make_links(entries, events.put, LinkOptions()) if link.kind == 'pynab'
    ]
    pynab[0].start()
    assert wait_for(lambda: others.nabd.status()['services'] == 1, WAIT)
    yield bridge, others, pynab[0], events
    pynab[0].stop()
    others.stop()
    bridge.stop()


def test_the_rabbits_file_declares_both_emulators_where_they_listen():
    others = d.OtherRabbits(9, lambda timeout: None)
    try:
        entries = load_entries(others.rabbits_file(), KINDS)
        assert [(e.id, e.kind) for e in entries] == [
            (d.SERVERLESS_NAME, 'serverless'),
            (d.PYNAB_NAME, 'pynab'),
        ]
        ports = [split_address(e.address, 0) for e in entries]
        assert ports == [('127.0.0.1', others.serverless.port), ('127.0.0.1', others.nabd.port)]
    finally:
        others.stop()


def test_the_questions_come_one_at_a_time_after_the_violet_one_and_within_the_demo():
    others = d.OtherRabbits(9, lambda timeout: None)
    try:
        times = [at for at, _ in others.steps()]
    finally:
        others.stop()
    questions = (plugin.DEMO_QUESTION_AT, d.SERVERLESS_QUESTION_AT, d.PYNAB_INTENT_AT)
    assert times == sorted(times)
    assert all(later - earlier >= 3.0 for earlier, later in itertools.pairwise(questions))
    assert questions[-1] + ANSWER_SECONDS <= DEMO_SECONDS


def test_each_step_reaches_the_wire_and_fires_its_rabbits_rules(rig):
    bridge, others, pynab, events = rig
    firings = []
    engine = rules.RuleEngine(firings.append)
    engine.load(rules.load(plugin.DEMO_RULES, lambda name: f'http://127.0.0.1/{name}'))
    for _, step in others.steps():
        step()
    assert others.notes == []
    hooks = [bridge.posts.get(timeout=WAIT) for _ in range(2)]
    assert [path for path, _ in hooks] == ['/hooks/rfid.php', '/hooks/record.php']
    tag = urllib.parse.parse_qs(hooks[0][1].decode())['tag'][0]
    engine.on_event(d.SERVERLESS_NAME, 'rfid', p.normalize_rfid(tag))
    assert hooks[1][1] == QUESTION  # the recogniser hears it (test_heard_e2e.py): the words
    engine.on_heard(d.SERVERLESS_NAME, plugin.DEMO_QUESTION)
    for _ in range(2):  # as the bridge hands a link's events to the rules
        event = events.get(timeout=WAIT)
        if event.event == 'intent':
            engine.on_intent(event.serial, event.intent)
        else:
            engine.on_event(event.serial, event.event, event.rfid)
    assert sorted((f.serial, f.rule.name) for f in firings) == sorted(
        [
            (d.SERVERLESS_NAME, 'the kitchen tag'),
            (d.SERVERLESS_NAME, 'tell the time'),
            (d.PYNAB_NAME, 'the lounge tag'),
            (d.PYNAB_NAME, 'tell the time when asked by intent'),
        ]
    )


def test_the_summary_says_what_each_rabbit_was_told_to_play(rig):
    bridge, others, pynab, _ = rig
    assert others.summary_lines() == [
        f'serverless rabbit {d.SERVERLESS_NAME}: played no spoken answer',
        f'pynab rabbit {d.PYNAB_NAME}: played no answer to {d.CLOCK_INTENT}',
    ]
    url = f'http://127.0.0.1:{bridge.port}{SPEECH_PATH}answer.mp3'
    play = f'http://127.0.0.1:{others.serverless.port}/play?' + urllib.parse.urlencode({'u': url})
    urllib.request.urlopen(play, timeout=WAIT).close()
    assert pynab.play_urls([url]).result(WAIT) is not None
    assert wait_for(lambda: others.serverless_answers(), WAIT)
    assert others.summary_lines() == [
        f'serverless rabbit {d.SERVERLESS_NAME}: played the spoken answer by /play?u= '
        f'({url}, {len(plugin.SILENT_MP3)} bytes)',
        f'pynab rabbit {d.PYNAB_NAME}: played the answer to {d.CLOCK_INTENT}, a command with '
        f'{url}',
    ]


def test_only_the_demo_declares_the_other_rabbits():
    """sim, the record/replay tests and `demo --record` run the violet rabbit alone: a
    recording of the bridge replays the rabbits that call it, not the ones it calls."""
    plain = plugin.PLUGIN.start_emulator()
    try:
        assert 'rabbits_file' not in plain.parameters and plain.summary_lines()[1:] == []
    finally:
        plain.stop()
    demo = plugin.PLUGIN.start_demo_emulator()
    try:
        text = pathlib.Path(demo.parameters['rabbits_file']).read_text()
        assert [e.kind for e in load_entries(text, KINDS)] == ['serverless', 'pynab']
        assert len(demo.summary_lines()) == 3  # the violet rabbit's line and one per rabbit
    finally:
        demo.stop()
