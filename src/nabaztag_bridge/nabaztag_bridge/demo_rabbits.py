"""The demo's rabbits of the other two kinds, beside the violet rabbit the demo emulator plays: a
ServerlessNabaztag rabbit and a pynab rabbit (an emulated nabd), both on free loopback ports and
declared to the bridge in a rabbits file. Each is shown a tag of its own (a rule turns its ears)
and asked the time: the serverless rabbit by voice (its record hook posts the spoken question the
violet rabbit records), the pynab rabbit by intent (nabd recognises speech itself and sends the
asr event, as nabclockd would be asked). Their questions come after the violet rabbit's, a few
seconds apart, so the bridge's one recogniser and one voice take one question at a time.
"""

import threading
import time

from .emulator_pynab import NabdEmulator
from .emulator_serverless import ServerlessRabbit
from .server import SPEECH_PATH

SERVERLESS_NAME = 'kitchen'
PYNAB_NAME = 'lounge'
SERVERLESS_TAG = 'd0021a0352b7e2f4'
PYNAB_TAG = 'd0021a0352b7e2f5'
SERVERLESS_EARS = (7, 8)
PYNAB_EARS = (4, 12)
CLOCK_INTENT = 'nabclockd/clock'
# s after the emulators start: the violet rabbit shows its tag at 6 s and records the question
# at 8 s; the recogniser needs a few seconds per question on a loaded machine
SERVERLESS_TAG_AT = 5.0
PYNAB_TAG_AT = 7.0
SERVERLESS_QUESTION_AT = 11.0
PYNAB_INTENT_AT = 14.0
QUESTION_WAIT = 5.0  # s the serverless step waits for the question's audio to be spoken
RULES = f"""  - name: tell the time when asked by intent
    when: {{intent: {CLOCK_INTENT}}}
    cooldown: 5
    do:
      - say: It is {{time}}.
  - name: the kitchen tag
    when: {{rfid: {SERVERLESS_TAG}}}
    rabbit: {SERVERLESS_NAME}
    do:
      - ears: [{SERVERLESS_EARS[0]}, {SERVERLESS_EARS[1]}]
  - name: the lounge tag
    when: {{rfid: {PYNAB_TAG}}}
    rabbit: {PYNAB_NAME}
    do:
      - ears: [{PYNAB_EARS[0]}, {PYNAB_EARS[1]}]
"""


class OtherRabbits:
    """The serverless and the pynab rabbit and their scene. bridge_port: where the bridge
    listens (the serverless rabbit's hooks go there). question(timeout) → the spoken question
    as a WAV the rabbit records, or None when it could not be spoken."""

    def __init__(self, bridge_port, question):
        self.serverless = ServerlessRabbit(f'127.0.0.1:{bridge_port}').start()
        self.nabd = NabdEmulator().start()
        self.notes = []  # what went wrong in the scene, for the summary
        self._question = question
        self._stopping = threading.Event()
        self._thread = threading.Thread(
            target=self._scene, name='nabaztag-demo-scene', daemon=True
        )

    @property
    def description(self):
        return f'{self.serverless.description}; {self.nabd.description}'

    def rabbits_file(self):
        """The rabbits file's text declaring both (the violet rabbit calls: not declared)."""
        return (
            'rabbits:\n'
            f'  - {{name: {SERVERLESS_NAME}, kind: serverless, '
            f'address: "127.0.0.1:{self.serverless.port}"}}\n'
            f'  - {{name: {PYNAB_NAME}, kind: pynab, address: "127.0.0.1:{self.nabd.port}"}}\n'
        )

    def start(self):
        self._thread.start()
        return self

    def steps(self):
        return (
            (SERVERLESS_TAG_AT, self.show_serverless_tag),
            (PYNAB_TAG_AT, self.show_pynab_tag),
            (SERVERLESS_QUESTION_AT, self.ask_serverless),
            (PYNAB_INTENT_AT, self.ask_pynab),
        )

    def _scene(self):
        start = time.monotonic()
        for at, step in self.steps():
            if self._stopping.wait(max(0.0, at - (time.monotonic() - start))):
                return
            step()

    def show_serverless_tag(self):
        self._hook_posted('rfid', self.serverless.show_tag(SERVERLESS_TAG))

    def show_pynab_tag(self):
        self.nabd.show_tag(PYNAB_TAG)

    def ask_serverless(self):
        """The serverless rabbit records the question: its record hook posts the WAV."""
        wav = self._question(QUESTION_WAIT)
        if wav is None:
            self.notes.append(f'serverless rabbit {SERVERLESS_NAME}: no question to record')
            return
        self._hook_posted('record', self.serverless.record(wav))

    def ask_pynab(self):
        """Someone asks the pynab rabbit the time: nabd sends the clock intent."""
        try:
            self.nabd.hear_intent(CLOCK_INTENT)
        except ValueError as exc:  # the rabbit was busy: it did not listen
            self.notes.append(f'pynab rabbit {PYNAB_NAME}: not asked, {exc}')

    def _hook_posted(self, hook, status):
        if status != 200:
            self.notes.append(
                f'serverless rabbit {SERVERLESS_NAME}: the bridge answered its {hook} hook '
                f'with HTTP {status or "nothing"}'
            )

    # ---- what the rabbits played ------------------------------------------------------
    def serverless_answers(self):
        """(url, bytes) of each spoken answer the serverless rabbit was told to play
        (/play?u=) and fetched."""
        return [(url, size) for url, size in self.serverless.played if SPEECH_PATH in url and size]

    def pynab_answers(self):
        """Audio URLs of the spoken answers nabd played (it fetched each to play it)."""
        return [url for _, audio in self.nabd.played for url in audio if SPEECH_PATH in url]

    def summary_lines(self):
        served = self.serverless_answers()
        lines = [
            f'serverless rabbit {SERVERLESS_NAME}: played the spoken answer by /play?u= '
            f'({served[-1][0]}, {served[-1][1]} bytes)'
            if served
            else f'serverless rabbit {SERVERLESS_NAME}: played no spoken answer'
        ]
        played = self.pynab_answers()
        lines.append(
            f'pynab rabbit {PYNAB_NAME}: played the answer to {CLOCK_INTENT}, a command with '
            f'{played[-1]}'
            if played
            else f'pynab rabbit {PYNAB_NAME}: played no answer to {CLOCK_INTENT}'
        )
        return lines + self.notes

    def stop(self):
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join()
        self.serverless.stop()
        self.nabd.stop()
