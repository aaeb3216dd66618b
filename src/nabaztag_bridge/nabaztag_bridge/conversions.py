"""Bridge records ↔ ROS messages (plain functions, testable without a graph)."""

import time

from diagnostic_msgs.msg import KeyValue

from legacy_robot_common.messages import int16_array, time_msg, uint8_array
from legacy_robot_interfaces.msg import RabbitEvent, RabbitList, RabbitRecording, RabbitState

from . import choreography as chor
from . import protocol as p
from .rabbits import is_online

EVENT_KINDS = {
    'boot': RabbitEvent.BOOT,
    'ping': RabbitEvent.PING,
    'click': RabbitEvent.CLICK,
    'double_click': RabbitEvent.DOUBLE_CLICK,
    'click_while_playing': RabbitEvent.CLICK_WHILE_PLAYING,
    'end_of_message': RabbitEvent.END_OF_MESSAGE,
    'ears_moved': RabbitEvent.EARS_MOVED,
    'rfid': RabbitEvent.RFID,
    'recording': RabbitEvent.RECORDING,
    'locate': RabbitEvent.LOCATE,
    'say_synthesising': RabbitEvent.SAY_SYNTHESISING,
    'say_queued': RabbitEvent.SAY_QUEUED,
    'say_fetched': RabbitEvent.SAY_FETCHED,
    'say_done': RabbitEvent.SAY_DONE,
    'intent': RabbitEvent.INTENT,
    'rfid_removed': RabbitEvent.RFID_REMOVED,
}


# offset: seconds from the host's time.time() to the node's clock (simulated time), 0 otherwise
def event_msg(event, frame_id='', offset=0.0):
    """server.RabbitEvent → RabbitEvent, or None for kinds the message has no constant for."""
    kind = EVENT_KINDS.get(event.kind)
    if kind is None:
        return None
    msg = RabbitEvent(
        serial=event.serial, kind=kind, rfid=event.rfid, double_click=event.double_click
    )
    msg.header.stamp = time_msg(event.time + offset)
    msg.header.frame_id = frame_id
    msg.ear0, msg.ear1 = event.ears if event.ears else (-1, -1)
    if event.program_id is not None:
        msg.program_id = format(event.program_id, 'x')
    return msg


def link_event_msg(event, frame_id='', offset=0.0):
    """kinds.base.RabbitEvent → RabbitEvent (the same message as the violet rabbits'), or
    None for an event the message has no constant for."""
    kind = EVENT_KINDS.get(event.event)
    if kind is None:
        return None
    msg = RabbitEvent(
        serial=event.serial,
        kind=kind,
        rfid=event.rfid,
        double_click=event.double_click,
        intent=event.intent,
        slots=[KeyValue(key=str(k), value=str(v)) for k, v in event.slots],
    )
    msg.header.stamp = time_msg(event.time + offset)
    msg.header.frame_id = frame_id
    msg.ear0, msg.ear1 = event.ears if event.ears else (-1, -1)
    return msg


def recording_msg(record, frame_id='', offset=0.0):
    msg = RabbitRecording(
        serial=record.serial, sample_rate=record.sample_rate, double_click=record.double_click
    )
    msg.header.stamp = time_msg(record.time + offset)
    msg.header.frame_id = frame_id
    msg.wav = uint8_array(record.wav)
    msg.pcm = int16_array(record.pcm)
    return msg


def rabbit_state_msg(rabbit, now=None):
    """A RabbitView (RabbitRegistry.snapshot) → RabbitState."""
    now = time.time() if now is None else now
    return RabbitState(
        serial=rabbit.serial,
        kind='violet',
        connected=is_online(rabbit.last_seen, rabbit.ping_interval, now),
        asleep=rabbit.state == 'asleep',
        bytecode_version=rabbit.bytecode_version,
        last_seen=time_msg(rabbit.last_seen),
        state=rabbit.state,
        program_id=format(rabbit.tc, 'x'),
        ping_interval=rabbit.ping_interval,
        plugin=rabbit.plugin,
        ear0=rabbit.ears[0],
        ear1=rabbit.ears[1],
        queued_packets=rabbit.queued_packets,
    )


def link_state_msg(state):
    """A kinds.base.RabbitState (a rabbit the bridge calls) → RabbitState."""
    return RabbitState(
        serial=state.serial,
        kind=state.kind,
        connected=state.connected,
        asleep=state.asleep,
        last_seen=time_msg(state.last_seen),
        state='asleep' if state.asleep else ('idle' if state.connected else 'unreachable'),
        ear0=state.ears[0],
        ear1=state.ears[1],
    )


def rabbit_list_msg(rabbits, stamp, others=()):
    """rabbits: RabbitViews of the violet rabbits; others: RabbitStates of the declared
    rabbits of other kinds."""
    now = time.time()
    msg = RabbitList(
        rabbits=[rabbit_state_msg(r, now) for r in rabbits] + [link_state_msg(s) for s in others]
    )
    msg.header.stamp = stamp
    return msg


def steps_from_msgs(tempo, steps):
    """RabbitChoreography request → choreography steps, tempo first (the rabbit's timescale
    is 0 until a tempo command)."""
    return [chor.Step(0, chor.TEMPO, (tempo,))] + [
        chor.Step(s.wait, s.opcode, tuple(s.args)) for s in steps
    ]


def ambient_from_request(request):
    """RabbitAmbient request → protocol.Ambient (ValueError when lengths differ)."""
    if len(request.service_types) != len(request.service_values):
        raise ValueError(
            f'{len(request.service_types)} service types but {len(request.service_values)} values'
        )
    return p.Ambient(
        tuple(zip(request.service_types, request.service_values, strict=False)),
        (request.ear0, request.ear1),
        request.nose_blinks,
    )
