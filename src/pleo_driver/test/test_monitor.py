"""The monitor line protocol, and the client against the emulator over a real pty."""

import time

import pytest
from helpers import wait_for
from hypothesis import given, settings
from hypothesis import strategies as st

from legacy_robot_common.errors import ConnectionLost, MalformedFrame
from pleo_driver import protocol as p
from pleo_driver.client import Answer, Battery, Connected, PleoClient, Settings
from pleo_driver.emulator import EmulatorOptions, PleoEmulator
from pleo_driver.sample import build_sample_project


def feed_all(parser, chunks):
    records, errors = [], []
    for chunk in chunks:
        r, e = parser.feed(chunk)
        records += r
        errors += e
    return records, errors


def test_answer_log_and_dump_lines_are_separated():
    stream = (
        b'STATS POWER\r\nINFO: nxp: 7361 - Nov 15 2007\r\nBattery sensor value = 80 (x)'
        b'\r\nmu: joint: ' + b' '.join(b'1' for _ in range(14)) + b'\r\n> '
    )
    for size in (1, 3, len(stream)):  # any split of the byte stream
        chunks = [stream[i : i + size] for i in range(0, len(stream), size)]
        records, errors = feed_all(p.MonitorParser(), chunks)
        assert not errors
        assert records == [
            p.LogLine('INFO', 'nxp', '7361 - Nov 15 2007'),
            p.JointDump((1,) * 14),
            p.Prompt(('STATS POWER', 'Battery sensor value = 80 (x)')),
        ]
    assert p.battery_value(records[-1].lines) == 80


def test_prompt_followed_by_a_line_on_the_same_line():
    records, _ = p.MonitorParser().feed(b'ok\r\n> ERROR: low: MC_GetMotorStatus Failed\r\n')
    assert records == [p.Prompt(('ok',)), p.LogLine('ERROR', 'low', 'MC_GetMotorStatus Failed')]


def test_bad_dumps_and_long_lines_are_errors_not_exceptions():
    parser = p.MonitorParser(max_line=100)
    records, errors = parser.feed(b'mu: sensor: 1 2 3\r\nmu: joint: a b\r\n' + b'x' * 150)
    assert records == [] and len(errors) == 3
    assert all(isinstance(e, MalformedFrame) for e in errors)
    records, errors = parser.feed(b'\r\n> ')
    assert records == [p.Prompt(())] and not errors


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_parser_never_raises(blob):
    p.MonitorParser().feed(blob)


def test_commands_and_limits():
    head = p.find_joint('head')
    assert p.joint_command(head, -40, True) == 'JOINT ANGLE 13 -40'
    assert p.joint_command(p.find_joint(4), 10, False) == 'JOINT MOVE 4 10'
    assert p.joint_command(p.find_joint('torso'), 5, True, 2000, 500) == 'JOINT ANGLE 8 5 2000 500'
    with pytest.raises(ValueError, match='outside its limits'):
        p.joint_command(head, 0, True)  # between the mouth and the eye ranges
    with pytest.raises(ValueError, match='unknown joint'):
        p.find_joint('wing')
    with pytest.raises(ValueError):
        p.encode_command('a\nb')
    with pytest.raises(ValueError):
        p.percent_command('SOUND VOLUME', -1)
    with pytest.raises(ValueError):
        p.name_argument('two words', 'motion')
    assert p.answer_failed(["Unknown command 'x'"]) and not p.answer_failed(['ok'])


# ---- the client against the emulator ------------------------------------------------------
@pytest.fixture
def pleo(tmp_path):
    started = []

    def start(client_settings=None, **options):
        emulator = PleoEmulator(EmulatorOptions(**options)).start()
        client = PleoClient(Settings(port=emulator.device_path, **(client_settings or {})))
        records = []
        client.on_record = records.append
        client.start()
        started.append((client, emulator))
        assert wait_for(lambda: client.connected, 10), client.counters.last_error
        return emulator, client, records

    yield start
    for client, emulator in started:
        client.stop()
        emulator.stop()


def ask(client, command, timeout=10.0):
    results = []
    client.command(command, results.append)
    assert wait_for(lambda: results, timeout), f'no answer to {command}'
    return results[0]


def test_startup_unloads_then_neutral_and_polls_the_battery(pleo):
    emulator, client, records = pleo({'battery_interval': 0.2}, battery=55)
    assert wait_for(lambda: any(isinstance(r, Battery) for r in records), 5)
    assert emulator.received[:3] == ['', 'APP UNLOAD', 'JOINT NEUTRAL']
    assert any(isinstance(r, Connected) for r in records)
    battery = [r for r in records if isinstance(r, Battery)][0]
    assert 50 <= battery.value <= 55 and not emulator.state.app_loaded


def test_joint_angle_waits_and_dumps_show_the_move(pleo):
    emulator, client, records = pleo(dump_rate=20)
    answer = ask(client, 'JOINT ANGLE 9 60')
    assert isinstance(answer, Answer) and not answer.failed and answer.lines == ('joint 9 at 60',)
    assert wait_for(
        lambda: any(isinstance(r, p.JointDump) and r.degrees[9] == 60 for r in records), 5
    )
    refused = ask(client, 'JOINT ANGLE 9 120')
    assert refused.failed and 'out of range' in refused.text
    unknown = ask(client, 'fly away')
    assert unknown.failed and 'Unknown command' in unknown.text


def test_motion_from_a_urf_moves_joints_and_cues_sounds(pleo, tmp_path):
    emulator, client, records = pleo(
        urf_path=build_sample_project(str(tmp_path)).urf_path, dump_rate=20
    )
    assert not ask(client, 'motion play walk').failed
    assert wait_for(
        lambda: any(isinstance(r, p.LogLine) and 'purr playing (cue)' in r.text for r in records),
        8,
    )
    knees = {r.degrees[5] for r in records if isinstance(r, p.JointDump)}
    assert len(knees) > 5  # the left knee moved through many angles
    assert ask(client, 'motion play nosuch').failed


def test_nxp_version_packet_when_logging_is_on(pleo):
    emulator, client, records = pleo()
    ask(client, 'log enable nxp')
    ask(client, 'pkt send ?')
    assert wait_for(lambda: any(isinstance(r, p.LogLine) and r.type == 'nxp' for r in records), 5)


def test_noisy_line_is_counted_and_the_link_recovers(pleo):
    # battery polls during the noise: some of their prompts are damaged and go missing
    emulator, client, records = pleo({'battery_interval': 0.1}, dump_rate=50)
    emulator.faults.corrupt_rate = 0.05
    assert wait_for(lambda: client.counters.bad_frames >= 3, 10), client.counters
    emulator.faults.corrupt_rate = 0.0
    assert ask(client, 'help').lines[0].startswith('Commands:')


def test_a_lost_prompt_costs_a_resync_not_the_link(pleo):
    # regression: a poll whose prompt was lost held every command for answer_timeout (60 s),
    # then reconnected, which ran APP UNLOAD and JOINT NEUTRAL on the robot again
    emulator, client, records = pleo({'battery_interval': 0.1, 'open_timeout': 1.0})
    polls = emulator.received.count('STATS POWER')
    emulator.faults.silent = True  # the next poll's answer and prompt vanish
    assert wait_for(lambda: emulator.received.count('STATS POWER') > polls, 5)
    time.sleep(0.2)
    emulator.faults.silent = False
    assert wait_for(lambda: client.resyncs >= 1, 5)
    assert ask(client, 'help', timeout=5).lines[0].startswith('Commands:')
    assert client.counters.reconnects == 0 and emulator.received.count('APP UNLOAD') == 1


def test_a_command_that_outlives_its_timeout_does_not_shift_later_answers(pleo):
    emulator, client, records = pleo({'battery_interval': 0})
    slow = []
    client.command('JOINT ANGLE 9 90', slow.append, timeout=0.1)  # 200 deg/s: ~0.45 s
    assert wait_for(lambda: slow, 5) and isinstance(slow[0], TimeoutError)
    assert wait_for(lambda: client.resyncs == 1, 5)
    assert ask(client, 'STATS POWER').lines[0].startswith('Battery sensor value')
    (line,) = ask(client, 'JOINT ANGLE 9 -90').lines  # the emulator stops within 1°
    assert line.startswith('joint 9 at ') and abs(int(line.split()[-1]) + 90) <= 1


def test_a_silent_monitor_times_out_and_reconnects(pleo):
    emulator, client, records = pleo(
        {'answer_timeout': 0.5, 'open_timeout': 0.5, 'battery_interval': 0}
    )
    emulator.faults.silent = True
    result = ask(client, 'help', timeout=5)
    assert isinstance(result, TimeoutError)
    assert wait_for(lambda: not client.connected, 5)  # the resync got no prompt either
    emulator.faults.silent = False
    assert wait_for(lambda: client.counters.reconnects >= 1 and client.connected, 15)
    assert not ask(client, 'help').failed


def test_commands_fail_fast_when_not_connected():
    client = PleoClient(Settings(port='/dev/nonexistent-pleo'))
    with pytest.raises(ConnectionLost):
        client.command('help', lambda _: None)
    with pytest.raises(ValueError):
        Settings(answer_timeout=0)


def test_stray_text_with_no_prompt_after_it_is_bounded():
    """Lines that are not records are kept as the answer of the command that runs, until its
    prompt; when no command runs, nothing ends them, and the driver grew for ever (found while
    looking for the mixed soak's memory growth: a Pleo under line noise with no commands)."""
    parser = p.MonitorParser()
    for i in range(10 * p.MAX_ANSWER_LINES):
        parser.feed(f'stray text {i}\r\n'.encode())
    records, _ = parser.feed(p.PROMPT)
    answer = [r for r in records if isinstance(r, p.Prompt)][0].lines
    assert len(answer) == p.MAX_ANSWER_LINES
    assert answer[-1] == f'stray text {10 * p.MAX_ANSWER_LINES - 1}'
