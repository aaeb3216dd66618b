"""The service-table helper: what a row answers on success, on a refused command, and after."""

from types import SimpleNamespace

from std_srvs.srv import SetBool, Trigger

from legacy_robot_common.services import Command, sent_handler


def test_a_sent_command_answers_its_name_and_runs_then():
    remembered = []
    row = Command('set_x', SetBool, lambda r: 'X', then=lambda r: remembered.append(r.data))
    response = sent_handler(row, (ValueError,))(SetBool.Request(data=True), SetBool.Response())
    assert (response.success, response.message) == (True, 'X sent')
    assert remembered == [True]


def test_a_refused_command_answers_its_error_and_skips_then():
    def refuse(_request):
        raise ValueError('out of range')

    remembered = []
    row = Command('set_x', Trigger, refuse, then=remembered.append)
    response = sent_handler(row, (ValueError,))(Trigger.Request(), Trigger.Response())
    assert (response.success, response.message) == (False, 'out of range')
    assert remembered == []


def test_success_text_fixed_or_from_the_request():
    fixed = Command('a', Trigger, print, 'done')
    derived = Command('b', Trigger, print, lambda r: f'mode {r.mode}')
    assert fixed.success_text(None) == 'done'
    assert derived.success_text(SimpleNamespace(mode=2)) == 'mode 2'
