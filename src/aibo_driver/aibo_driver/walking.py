"""The AIBO's body over the RCODE link, between the ROS topics and the RCODE client: cmd_vel →
the walk planner (refusals counted and logged), head_command → the head joints (clamped to
their limits), the planner's odometry → odom, and each PRINT poll → joint_states, ir_range,
battery and sensor_events (falls and touches, cleared on the dog once seen)."""

import math

from sensor_msgs.msg import JointState
from std_msgs.msg import Header

from legacy_robot_common.mobile_base import planar_covariance
from legacy_robot_interfaces.msg import SensorEvent

from . import conversions as convert
from . import rcode

STATUS_FALL = 1  # Status after the dog got up from a fall (aibo.md §4.6)


class Walking:
    def __init__(self, node):
        self.node = node
        self.warned_no_motion = False

    def on_cmd_vel(self, linear, angular, lateral=0.0):
        """cmd_vel → walk segments (the planner in the RCODE client); refusals logged."""
        if self.node.rcode_off:
            if not self.warned_no_motion:  # once: a teleop sends 10 a second
                self.warned_no_motion = True
                self.node.get_logger().warning(f'cmd_vel ignored: {self.node.rcode_off}')
            return
        try:
            notes = self.node.rcode.drive(linear, lateral, angular)
        except ValueError as exc:
            self.node.counts['bad cmd_vel'] += 1
            self.node.log.warning(
                'cmd-vel-bad', f'{exc} ({self.node.counts["bad cmd_vel"]} so far)'
            )
            return
        for key, text in notes:
            self.node.counts['refused cmd_vel'] += 1
            self.node.log.warning(f'cmd-vel-{key}', text)

    def on_head_command(self, msg):
        """JointState naming Head_Pan and/or Head_Tilt (rad, R-CODE signs: pan + left, tilt +
        up); out of range → clamped to the joint limits with a WARN."""
        if self.node.rcode_off:
            self.node.log.warning('head-no-rcode', f'head_command ignored: {self.node.rcode_off}')
            return
        target = dict(self.node.head_target)
        for name, position in zip(msg.name, msg.position, strict=False):
            if name not in target or not math.isfinite(position):
                self.node.counts['bad head_command'] += 1
                self.node.log.warning(
                    'head-bad',
                    f'head_command: {name!r} = {position} ignored (give finite radians for '
                    f'{rcode.HEAD_PAN} and/or {rcode.HEAD_TILT})',
                )
                continue
            joint = rcode.joint_of(self.node.model_name, name)
            degrees = math.degrees(position)
            clamped = min(max(degrees, joint.lower), joint.upper)
            if clamped != degrees:
                self.node.counts['head clamped'] += 1
                self.node.log.warning(
                    'head-clamp',
                    f'head_command: {name} {position:.3f} rad is outside '
                    f'{math.radians(joint.lower):.3f}..{math.radians(joint.upper):.3f}: '
                    f'clamped to {math.radians(clamped):.3f}',
                )
            target[name] = clamped
        if target != self.node.head_target:
            self.node.head_target = target
            self.node.rcode.look(target[rcode.HEAD_PAN], target[rcode.HEAD_TILT])

    def publish_odometry(self):
        if self.node.rcode is None or self.node.rcode_off:
            return
        x, y, yaw, (vx, vy, wz), (xy, yaw_variance) = self.node.rcode.odometry()
        header = Header(stamp=self.node.get_clock().now().to_msg())
        self.node.base.publish(
            header,
            x,
            y,
            yaw,
            vx,
            wz,
            lateral=vy,
            pose_variances=planar_covariance(xy, yaw_variance),
        )

    def on_poll(self, record):
        values = record.values
        stamp = record.received + self.node.clock_offset()
        joint_set = rcode.MODELS[self.node.model_name]
        read = [j.variable for j in joint_set if j.variable in values]
        if read:
            self.node.joints.update((name, values[name]) for name in read)
            if joint_set[-1].variable in values:  # the cycle's last poll: publish them all
                self.publish_joints(convert.header(stamp, ''))
        if 'Distance' in values:
            self.node.range_pub.publish(
                convert.range_msg(
                    values['Distance'], convert.header(stamp, self.node.frame_ids['ir'])
                )
            )
        if 'Batt_Rest' in values:
            self.node.battery_pub.publish(
                convert.battery_msg(
                    values['Batt_Rest'],
                    values.get('Batt_Temp'),
                    convert.header(stamp, self.node.frame_ids['base']),
                )
            )
        if values.get('Status') == STATUS_FALL:
            self.node.counts['falls'] += 1
            self.node.log.warning('fall', 'the dog got up after a fall (Status 1)')
            self.event(stamp, 'Status', 'fall', 1)
            self.node.rcode.play(rcode.line('SET', 'Status', 0), lambda _reply: None)
        for name in rcode.TOUCH_VARIABLES[self.node.model_name]:
            if values.get(name):
                self.node.touches[name] = self.node.touches.get(name, 0) + 1
                self.event(stamp, name, 'touched', values[name])
                # latched until cleared (aibo.md §4.6): cleared, so the next poll sees a new touch
                self.node.rcode.play(rcode.line('SET', name, 0), lambda _reply: None)
        self.node.dog_values.update(values)

    def event(self, stamp, sensor, event, value):
        self.node.event_pub.publish(
            SensorEvent(
                header=convert.header(stamp, self.node.frame_ids['base']),
                sensor=sensor,
                event=event,
                value=float(value),
            )
        )

    def publish_joints(self, header):
        order = [
            j.variable
            for j in rcode.MODELS[self.node.model_name]
            if j.variable in self.node.joints
        ]
        msg = JointState(
            header=header,
            name=order,
            position=[math.radians(self.node.joints[name]) for name in order],
        )
        self.node.joint_pub.publish(msg)
        self.node.model.move(msg)
