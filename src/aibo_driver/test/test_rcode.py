"""R-CODE 1.2 lines and replies (docs/protocols/aibo.md §4): the ERS-2xx syntax, the 127-byte
limit, matching."""

import pytest

from aibo_driver import rcode


def test_motion_lines_use_the_ers2xx_play_action_forms():
    assert rcode.walk(0, 10000) == 'PLAY:ACTION:WALK:0:10000'
    assert rcode.walk(-90.4, 500, 'slow') == 'PLAY:ACTION:MOVE.MOVE.SLOW:-90:500'
    assert rcode.walk(180, 500) == 'PLAY:ACTION:WALK:-180:500'  # ±180 both mean backwards
    assert rcode.walk(270, 500) == 'PLAY:ACTION:WALK:-90:500'
    assert rcode.walk(0, 100000) == 'PLAY:ACTION:WALK:0:32767'  # 16-bit variables on the 2xx
    assert rcode.turn(-45) == 'PLAY:ACTION:TURN:-45'
    assert rcode.turn(30, 'slow') == 'PLAY:ACTION:MOVE.TURN.SLOW:30'
    assert rcode.stop_walk() == 'PLAY:ACTION:STOP_WALK'
    assert rcode.move_head(-45.2, -20) == 'PLAY:ACTION:MOVE_HEAD:-45:-20'
    for line in (rcode.walk(0, 1), rcode.turn(1), rcode.move_head(0, 0)):
        assert 'MOVE:LEGS' not in line and 'MOVE:HEAD' not in line  # the ERS-110 forms


def test_actions_by_name_and_unknown_ones_refused_with_the_list():
    assert rcode.action_line('sit') == 'PLAY:ACTION:SIT'
    assert rcode.action_line(' Kick ') == 'PLAY:ACTION:KICK:0:100'
    assert rcode.action_line('tail_wag_horizontal') == 'PLAY:ACTION:PALONE.AUTO.TAILH'
    assert rcode.action_line('stop') == 'STOP'
    with pytest.raises(ValueError, match='unknown action .*valid: sit, stand, lie'):
        rcode.action_line('dance')
    with pytest.raises(ValueError):
        rcode.action_line('SIT:1')


def test_lines_over_127_bytes_and_bad_words_are_refused_before_sending():
    fmt = 'x' * 110
    assert len(rcode.print_line('x' * 117, ()).encode()) + 2 == 127
    with pytest.raises(rcode.LineRefused, match='128 bytes'):
        rcode.print_line('x' * 118, ())
    with pytest.raises(rcode.LineRefused, match='at most 5'):
        rcode.print_line('%d', ('A', 'B', 'C', 'D', 'E', 'F'))
    with pytest.raises(rcode.LineRefused):
        rcode.print_line(fmt + '"', ())
    with pytest.raises(rcode.LineRefused):
        rcode.line('PLAY', 'ACTION', 'SIT\r\nQUIT')
    with pytest.raises(rcode.LineRefused):
        rcode.line('PLAY', 'ACTION', 'SIT:QUIT')  # a word with a separator in it
    with pytest.raises(rcode.LineRefused, match='16-bit'):
        rcode.line('SET', 'x', 40000)
    with pytest.raises(rcode.LineRefused):
        rcode.check_line('PRINT:"é"')


def test_polls_split_into_lines_of_at_most_five_variables_and_parse_their_answers():
    for model, joints in rcode.MODELS.items():
        polls = rcode.joint_polls(model)
        assert [v for poll in polls for v in poll.variables] == [j.variable for j in joints]
        for poll in polls:
            assert len(poll.variables) <= 5 and len(poll.line) + 2 <= 127
    assert len(rcode.joint_polls('ers210')) == 4  # 18 joints
    poll = rcode.joint_polls('ers210')[0]
    assert poll.line == ('PRINT:"J0 %d %d %d %d %d":Head_Tilt:Head_Pan:Head_Roll:Mouth:Tail_Pan')
    assert poll.parse('\x06J0 -10 20 3 0 -5') == {
        'Head_Tilt': -10,
        'Head_Pan': 20,
        'Head_Roll': 3,
        'Mouth': 0,
        'Tail_Pan': -5,
    }
    assert poll.parse('J1 1 2 3 4 5') is None  # another poll's answer
    assert poll.parse('J0 1 2 3') is None and poll.parse('J0 a b c d e') is None


def test_the_reply_matcher_sorts_echo_output_errors_and_control_bytes():
    poll = rcode.Poll('S', ('Wait', 'Distance'))
    exchange = rcode.Exchange(poll.line, poll)
    assert not exchange.feed('PRINT "S %d %d" Wait Distance')  # the echo, separators changed
    assert not exchange.feed('\x06')
    assert not exchange.feed('an unrelated line')
    assert exchange.feed('S 1 420')
    reply = exchange.reply
    assert reply.echoed and reply.values == {'Wait': 1, 'Distance': 420}
    assert reply.controls == '\x06' and reply.lines == ['an unrelated line', 'S 1 420']

    exchange = rcode.Exchange(rcode.walk(0, 500))
    assert not exchange.feed('PLAY:ACTION:WALK:0:500')
    assert exchange.feed('\x15ERROR: unknown action WALK')
    assert (
        exchange.reply.error == 'ERROR: unknown action WALK' and exchange.reply.controls == '\x15'
    )

    exchange = rcode.Exchange('RUN')
    assert not exchange.feed('Stopped.') and exchange.reply.stopped


def test_an_rcode_2_greeting_without_ready_means_authentication_is_on():
    assert rcode.greeting_needs_auth(['R-CODE ver2.0 (2004/05/01)', 'memory 1234'])
    assert rcode.greeting_needs_auth(['Password:'])
    assert not rcode.greeting_needs_auth(['R-CODE ver2.0 (2004/05/01)', '<READY>'])
    assert not rcode.greeting_needs_auth(['R-CODE Ver1.2', '<READY>\x06'])
    assert not rcode.greeting_needs_auth([])
    assert 'NOAUTH.CFG' in rcode.AUTH_HINT


def test_motion_ids_follow_the_model():
    assert rcode.mwcid_line('ers7', 'SIT') == 'PLAY:MWCID:2001'
    assert rcode.mwcid_line('ers210', 'SIT') == 'PLAY:MWCID:270'
    assert rcode.mwcid_line('ers7', 'KICK') == rcode.mwcid_line('ers210', 'KICK')
    with pytest.raises(ValueError, match='valid: SIT'):
        rcode.mwcid_line('ers7', 'DANCE')
