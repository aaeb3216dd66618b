"""A simulated robot's world for viewers: nav_msgs/OccupancyGrid on `map` and map → odom.

Bringup runs this beside a driver whose emulator has a world (`world_map` on the emulator):
the grid goes out once on a transient-local topic (rviz, Foxglove and Nav2's AMCL read it as
map_server's), and `map → <prefix>odom` sits on /tf_static at the robot's start pose, where the
emulator's odometry begins. A Nav2 map_server + AMCL setup replaces both.
"""

import dataclasses
import math
from typing import Tuple

import numpy as np
from nav_msgs.msg import OccupancyGrid
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile

from .errors import WorldError
from .frames import mount_transform
from .params import declare
from .tf import StaticTransformPublisher

__all__ = ['WorldError', 'WorldMap', 'WorldMapNode', 'occupancy_grid']
MAP_QOS = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)


@dataclasses.dataclass
class WorldMap:
    """What an emulator tells bringup about its world."""

    grid: np.ndarray  # int8, row 0 = lowest y; 100 occupied, 0 free, -1 unknown
    resolution: float  # m per cell
    origin: Tuple[float, float]  # m, the lower-left cell's corner in the map frame
    start: Tuple[float, float, float]  # the robot's start pose (m, m, rad): where odom begins


def occupancy_grid(world_map, frame_id, stamp):
    msg = OccupancyGrid()
    msg.header.frame_id = frame_id
    msg.header.stamp = stamp
    height, width = world_map.grid.shape
    msg.info.map_load_time = stamp
    msg.info.resolution = float(world_map.resolution)
    msg.info.width, msg.info.height = width, height
    msg.info.origin.position.x = float(world_map.origin[0])
    msg.info.origin.position.y = float(world_map.origin[1])
    msg.info.origin.orientation.w = 1.0
    msg.data.frombytes(np.ascontiguousarray(world_map.grid, dtype=np.int8).tobytes())
    return msg


class WorldMapNode(Node):
    """Publishes one world map and its map → odom transform (node `world_map`)."""

    def __init__(
        self, world_map, odom_frame, namespace='', cli_args=None, map_topic='map', context=None
    ):
        # cli_args: the robot node's remappings (--frames namespace moves /tf into its namespace)
        # map_topic: where the grid goes; None: only the transform (a robot in a world whose map
        # another robot's node publishes)
        super().__init__('world_map', namespace=namespace, cli_args=cli_args, context=context)
        self.map_frame = declare(
            self,
            'map_frame_id',
            'map',
            'frame of the world map and ground truth (no prefix: one world frame)',
            read_only=True,
        )
        self.world_map = world_map
        self.publisher = None
        stamp = self.get_clock().now().to_msg()
        if map_topic is not None:
            self.publisher = self.create_publisher(OccupancyGrid, map_topic, MAP_QOS)
            self.publisher.publish(occupancy_grid(world_map, self.map_frame, stamp))
        x, y, yaw = world_map.start
        self.static = StaticTransformPublisher(self)
        self.static.sendTransform(
            mount_transform(stamp, self.map_frame, odom_frame, (x, y, 0.0), (0.0, 0.0, yaw))
        )

    def describe(self):
        height, width = self.world_map.grid.shape
        x, y, yaw = self.world_map.start
        where = 'a shared map' if self.publisher is None else self.publisher.topic_name
        return (
            f'{width}x{height} cells of {self.world_map.resolution:g} m on {where}; '
            f'start ({x:.2f}, {y:.2f}, {math.degrees(yaw):.0f}°)'
        )
