"""The AIBO's body over URBI, between the ROS topics and the URBI client (client_urbi.py):
cmd_vel → robot.walk / robot.turn (the client's watchdog stops them), head_command → the
model's pan and tilt joints (clamped by the client, with a WARN), and the client's records →
joint_states, imu, the range topics, battery and sensor_events. The same interface as
walking.Walking, so the node needs no branch per protocol beyond choosing one."""

import math

from sensor_msgs.msg import BatteryState, Imu, JointState, Range

from legacy_robot_common.messages import battery_msg as common_battery_msg
from legacy_robot_interfaces.msg import NamedValues, SensorEvent

from . import conversions as convert
from .client_urbi import Battery, JointValues, SensorValues, Touch, UrbiError

# topic of each URBI distance sensor (the head's far sensor keeps the RCodePlus topic name)
RANGE_TOPICS = {
    'distance': 'ir_range',
    'distanceNear': 'ir_range_near',
    'distanceChest': 'chest_range',
}
IR_FIELD_OF_VIEW = math.radians(3.0)  # a narrow infrared beam (an estimate)


class UrbiBody:
    def __init__(self, node):
        self.node = node

    def create_publishers(self):
        pub = self.node.publisher
        self.imu_pub = pub(Imu, 'imu', 10)
        self.node.create_subscription(
            NamedValues, 'leds', self.on_leds, 10, callback_group=self.node.callback_group
        )
        self.range_pubs = {
            device: pub(Range, RANGE_TOPICS[device], 10)
            for device in self.node.dog_model.distance_sensors
        }

    # ---- commands -----------------------------------------------------------------------------
    def on_cmd_vel(self, linear, angular, lateral=0.0):
        self.node.urbi.drive(linear, angular)

    def on_head_command(self, msg):
        """JointState naming the model's pan and tilt joints (rad); the 2xx names Head_Pan and
        Head_Tilt are taken for the ERS-7's headPan and neck too."""
        roles = self.node.dog_model.by_role()
        aliases = {'Head_Pan': roles['pan'].name, 'Head_Tilt': roles['tilt'].name}
        wanted = {roles['pan'].name, roles['tilt'].name} | set(
            roles.get('nod') and [roles['nod'].name] or []
        )
        for name, position in zip(msg.name, msg.position, strict=False):
            name = aliases.get(name, name)
            if name not in wanted or not math.isfinite(position):
                self.node.counts['bad head_command'] += 1
                self.node.log.warning(
                    'head-bad',
                    f'head_command: {name!r} = {position} ignored (valid: {sorted(wanted)})',
                )
                continue
            try:
                if not self.node.urbi.set_joint(name, math.degrees(position)):
                    self.node.counts['head clamped'] += 1
            except ConnectionError as exc:
                self.node.log.warning('head-link', f'head_command not sent: {exc}')

    def on_leds(self, msg):
        """NamedValues: LED device names (the model's) and brightness 0..1."""
        for name, value in zip(msg.names, msg.values, strict=False):
            try:
                self.node.urbi.set_led(name, min(max(float(value), 0.0), 1.0))
            except ValueError as exc:
                self.node.counts['bad led'] = self.node.counts.get('bad led', 0) + 1
                self.node.log.warning('led-bad', f'leds: {exc}')
            except ConnectionError as exc:
                self.node.log.warning('led-link', f'leds not sent: {exc}')

    def publish_odometry(self):
        """URBI reports no walked distance: no odometry is made up."""

    def on_poll(self, record):
        """R-CODE polls do not happen over URBI."""

    # ---- records ------------------------------------------------------------------------------
    def handle(self, record):
        offset = self.node.clock_offset()
        if isinstance(record, JointValues):
            self.publish_joints(record, offset)
        elif isinstance(record, SensorValues):
            self.publish_sensors(record, offset)
        elif isinstance(record, Touch):
            self.node.event_pub.publish(
                SensorEvent(
                    header=convert.header(record.received + offset, self.node.frame_ids['base']),
                    sensor=record.sensor,
                    event='touched' if record.value else 'released',
                    value=float(record.value),
                )
            )
        elif isinstance(record, Battery):
            self.node.battery_pub.publish(
                common_battery_msg(
                    convert.header(record.received + offset, self.node.frame_ids['base']),
                    percentage=max(0.0, min(1.0, record.fraction)),
                    temperature=math.nan,
                    power_supply_technology=BatteryState.POWER_SUPPLY_TECHNOLOGY_LION,
                )
            )
        elif isinstance(record, UrbiError):
            self.node.counts['urbi errors'] = self.node.counts.get('urbi errors', 0) + 1

    def publish_joints(self, record, offset):
        order = [j.name for j in self.node.dog_model.joints if j.name in record.degrees]
        msg = JointState(
            header=convert.header(record.received + offset, ''),
            name=order,
            position=[math.radians(record.degrees[name]) for name in order],
        )
        self.node.joints.update(record.degrees)
        self.node.joint_pub.publish(msg)
        self.node.model.move(msg)

    def publish_sensors(self, record, offset):
        stamp = record.received + offset
        imu = Imu(header=convert.header(stamp, self.node.frame_ids['base']))
        imu.orientation_covariance[0] = -1.0  # no orientation, no rates: acceleration only
        imu.angular_velocity_covariance[0] = -1.0
        imu.linear_acceleration.x, imu.linear_acceleration.y, imu.linear_acceleration.z = (
            record.accel
        )
        self.imu_pub.publish(imu)
        limits = self.node.dog_model.distance_sensors
        for device, metres in record.ranges.items():
            low, high = (v / 100.0 for v in limits[device])
            frame = self.node.frame_ids['chest_ir' if device == 'distanceChest' else 'ir']
            self.range_pubs[device].publish(
                Range(
                    header=convert.header(stamp, frame),
                    radiation_type=Range.INFRARED,
                    field_of_view=IR_FIELD_OF_VIEW,
                    min_range=low,
                    max_range=high,
                    range=metres if metres < high else math.inf,
                )
            )
