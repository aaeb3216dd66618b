"""recording export --rosbag2: each shipped recording becomes a rosbag2 that an independent
reader (mcap + mcap_ros2's decoder, not rosbags that wrote it) decodes completely, with the
messages the driver decoded from the recording (the CSV's records) one for one."""

import pathlib
import time

import pytest
import yaml
from helpers import ROOT, run_module
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory

from legacy_robot_bringup.bag_export import SequenceGaps
from legacy_robot_bringup.recordings import decode

# a record type of each robot's CSV and the topic its driver publishes once per record
ONE_FOR_ONE = {
    'p2os': ('StandardSip', '/odom'),
    'pleo': ('JointDump', '/joint_states'),
    'aibo': ('CameraFrame', '/camera/image_raw'),
    'ipaq': ('TrackingPacket', '/tracking'),
    'nabaztag': ('RabbitEvent', '/events'),
}


def read_bag(folder):
    """{topic: [decoded message]} of a rosbag2 folder's MCAP file, and its metadata."""
    metadata = yaml.safe_load((folder / 'metadata.yaml').read_text())[
        'rosbag2_bagfile_information'
    ]
    messages = {}
    for path in metadata['relative_file_paths']:
        with open(folder / path, 'rb') as stream:
            reader = make_reader(stream, decoder_factories=[DecoderFactory()])
            for _schema, channel, _message, decoded in reader.iter_decoded_messages():
                messages.setdefault(channel.topic, []).append(decoded)
    return metadata, messages


@pytest.mark.parametrize('robot', sorted(ONE_FOR_ONE))
def test_every_recording_exports_to_a_bag_an_independent_reader_decodes(robot, tmp_path):
    bag = tmp_path / 'bag'
    decoded = decode(str(ROOT / 'recordings' / f'{robot}.mcap'), speed=0, bag=str(bag))
    assert decoded.finished  # the replay reached the end, decoding did not give up
    metadata, messages = read_bag(bag)
    counted = {
        entry['topic_metadata']['name']: entry['message_count']
        for entry in metadata['topics_with_message_count']
    }
    assert {topic: len(found) for topic, found in messages.items()} == {
        topic: count for topic, count in counted.items() if count
    }
    assert counted == decoded.bag.counts
    assert metadata['storage_identifier'] == 'mcap'
    record, topic = ONE_FOR_ONE[robot]
    records = [r for _, _, r in decoded.rows if type(r).__name__ == record]
    assert records and len(messages[topic]) == len(records)
    assert '/robot_description' in messages or robot == 'nabaztag'
    stamps = [entry['topic_metadata']['name'] for entry in metadata['topics_with_message_count']]
    assert not any(name.startswith('/recording_decode') for name in stamps)
    if robot == 'ipaq':  # contents: the tracking results, field by field
        assert [(m.pan, m.tilt, m.confidence) for m in messages[topic]] == [
            (r.pan, r.tilt, r.confidence) for r in records
        ]


def test_export_as_a_command_and_its_user_errors(tmp_path):
    recording = str(ROOT / 'recordings' / 'nabaztag.mcap')
    result = run_module(
        'legacy_robot_bringup.recordings',
        'export',
        recording,
        '--rosbag2',
        str(tmp_path / 'rabbit'),
        '--speed',
        '0',
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert 'rosbag2 (mcap)' in result.stdout and '/events: 10' in result.stdout
    assert (tmp_path / 'rabbit' / 'metadata.yaml').is_file()
    for folder, expected in (
        (tmp_path / 'rabbit', 'exists'),
        (tmp_path / 'nodir' / 'bag', 'no folder'),
    ):
        result = run_module(
            'legacy_robot_bringup.recordings',
            'export',
            recording,
            '--rosbag2',
            str(folder),
            timeout=60,
        )
        assert result.returncode == 2 and expected in result.stderr, result.stderr
    missing = run_module('legacy_robot_bringup.recordings', 'export', recording, timeout=60)
    assert missing.returncode == 2 and '--rosbag2' in missing.stderr
    assert pathlib.Path(tmp_path / 'nodir').exists() is False


def test_a_burst_the_executor_lags_behind_reaches_the_bag_whole(tmp_path):
    """At --speed 0 a driver's link thread publishes while the bag's executor is busy (under
    load, far behind): 3,000 messages published before the executor takes one all reach the
    bag (a subscription keeping the last 1,000 left a Pleo bag short), and none is counted
    lost."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from std_msgs.msg import UInt32

    from legacy_robot_bringup.bag_export import BagCapture

    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        driver = rclpy.create_node('burst_driver', context=context)
        publisher = driver.create_publisher(UInt32, 'counts', 20)  # the Pleo's joint depth
        capture = BagCapture(driver, str(tmp_path / 'bag'), lambda: 1, context)
        executor = SingleThreadedExecutor(context=context)
        for node in (driver, capture):
            executor.add_node(node)
        assert capture.counts == {'/counts': 0}
        for number in range(3000):  # the executor is not spinning meanwhile
            publisher.publish(UInt32(data=number))
        deadline = time.monotonic() + 60
        while capture.counts['/counts'] < 3000 and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
        capture.close()
    finally:
        rclpy.shutdown(context=context)
    assert capture.counts == {'/counts': 3000} and capture.lost == {}
    _, messages = read_bag(tmp_path / 'bag')
    assert [m.data for m in messages['/counts']] == list(range(3000))


def test_gaps_in_a_publishers_sequence_numbers_are_counted_as_lost():
    gaps = SequenceGaps()
    for number in (5, 6, 8, 9, 12):  # 7, 10 and 11 never came
        gaps.record(('/joint_states', b'a'), number)
    for number in (1, 2, 3):
        gaps.record(('/joint_states', b'b'), number)
        gaps.record(('/odom', b'a'), number)
    gaps.record(('/odom', b'a'), 0)  # an RMW without sequence numbers: not counted
    assert gaps.lost() == {'/joint_states': 3}
