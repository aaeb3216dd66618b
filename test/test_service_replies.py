"""A service of ours answers a client that is still being discovered (middleware.py).

rmw_fastrtps drops an answer when the caller's reply reader is not discovered within the reply
writer's max_blocking_time, 100 ms by default, and the caller then waits forever: a loaded CI
run lost a `start_color_tracking` answer that way. Every process that hosts our nodes loads
config/fastdds_profiles.xml, which raises the wait to 1 s. A client whose reply reader can never
match (late_client.py) shows how long bringup holds an answer before it gives up.
"""

import os

from helpers import Lines, env_with_support, start_module, wait_for

from legacy_robot_common import middleware
from legacy_robot_common.distribution import fastdds_profiles_variable

BRINGUP = 'legacy_robot_bringup.compose'
GAVE_UP = 'failed to send response (timeout)'
SERVICE = '/held/tick_driver/get_parameters'


def seconds_an_answer_was_held(tmp_path):
    """From a request of the unreachable client to bringup's giving up on its answer."""
    env = env_with_support()
    for name in middleware.PROFILES_VARIABLES:
        env.pop(name, None)
    bringup = start_module(
        BRINGUP, '--plugin', 'tick_robot:PLUGIN', 'tick', '--sim', '--namespace', '/held', env=env
    )
    client = start_module('late_client', SERVICE, str(tmp_path / 'client_profiles.xml'), env=env)
    bringup_errors, sent = Lines(bringup, bringup.stderr), Lines(client)
    try:
        gave_up = wait_for(lambda: bringup_errors.has(GAVE_UP) or sent.has('answered'), timeout=40)
        # the harness, not bringup, failed if the client was answered: its reader matched
        assert not sent.has('answered'), (
            "the late client's reply reader matched (its partition profile was not applied)"
        )
        assert gave_up, 'bringup never gave up on an answer (and the client had none)'
    finally:
        for process in (client, bringup):
            process.kill()
            process.wait(timeout=10)
    gave_up_at = next(
        t
        for t, line in zip(bringup_errors.arrived, bringup_errors.lines, strict=False)
        if GAVE_UP in line
    )
    requests = [float(line.split()[1]) for line in sent.lines if line.startswith('sent ')]
    return gave_up_at - max(t for t in requests if t < gave_up_at)


def test_bringup_holds_an_answer_a_second_for_a_client_still_being_discovered(tmp_path):
    held = seconds_an_answer_was_held(tmp_path)
    # 1.001 s here; with Fast DDS's own 100 ms, 0.101 s. The client asks again every 3 s
    assert 0.95 <= held < 3.0, f'answer held {held:.3f} s'


def test_the_profile_is_found_and_a_users_profiles_file_replaces_it(tmp_path, monkeypatch):
    """Under the variable this distribution's Fast DDS reads (Jazzy's 2.14 reads only
    FASTRTPS_DEFAULT_PROFILES_FILE, Kilted's 3.2 only FASTDDS_...); a user's file named under
    either replaces ours and is named under that one too."""
    read = fastdds_profiles_variable()
    for name in middleware.PROFILES_VARIABLES:  # monkeypatch restores them afterwards
        monkeypatch.delenv(name, raising=False)
    ours = middleware.use_our_dds_profiles()
    assert str(ours) == os.environ[read]
    assert (
        ours.name == middleware.profile_file('default') and 'max_blocking_time' in ours.read_text()
    )
    users = str(tmp_path / 'mine.xml')
    for name in middleware.PROFILES_VARIABLES:
        for other in middleware.PROFILES_VARIABLES:
            monkeypatch.delenv(other, raising=False)
        monkeypatch.setenv(name, users)
        assert middleware.use_our_dds_profiles() is None, name
        assert os.environ[read] == users and os.environ[name] == users, name
    monkeypatch.setenv(read, 'theirs.xml')  # both set: each stays as the user set it
    assert middleware.use_our_dds_profiles() is None and os.environ[read] == 'theirs.xml'
