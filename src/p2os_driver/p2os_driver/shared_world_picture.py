"""A picture of two Pioneers in one world: both true paths and r1's last laser scan, in which
r2's body shows (the emulator's shared world, stepped here without clients).

    python -m p2os_driver.shared_world_picture shared_world.png [--world FILE]
"""

import argparse
import math
import pathlib
import sys

import numpy as np

from legacy_robot_common.artifacts import new_figure, save_figure

from .fleet_picture import body_outline, draw_walls
from .models import MODELS
from .simulation import SharedWorld
from .world import WorldError, default_world_path, load_world

STEP = 0.05  # s


def drive_two(world, seconds=12.0):
    """r1 from the map's home straight ahead, r2 from 3 m ahead and 0.35 m to the side, facing
    it and arcing into its way, until they stop against each other (each stops turning once
    stalled). (shared world, {name: robot}, {name: [(x, y) m]})."""
    shared = SharedWorld(world)
    hx, hy, hth = world.start
    c, s = math.cos(hth), math.sin(hth)
    r2_start = (hx + 3000 * c - 350 * s, hy + 3000 * s + 350 * c, hth + math.pi)
    robots = {
        'r1': shared.add(MODELS['p3dx'], start=(hx, hy, hth), noise=False),
        'r2': shared.add(MODELS['p3dx'], start=r2_start, noise=False),
    }
    for robot, turn in zip(robots.values(), (0.0, 5.0), strict=True):
        robot.enabled = True
        robot.set_velocity(300)
        robot.set_rotation(turn)
    paths = {name: [] for name in robots}
    for _ in range(int(seconds / STEP)):
        shared.step(STEP)
        for name, robot in robots.items():
            paths[name].append((robot.pose[0] / 1000.0, robot.pose[1] / 1000.0))
            if robot.stalled:
                robot.set_rotation(0)
    return shared, robots, paths


def scan_points(robot):
    """r's last scan as world points (m), the readings short of the maximum range only."""
    ranges, _ = robot.laser_scan()
    x, y, th = robot.pose
    angles = th + robot.laser.mount[2] + robot.laser.angles()
    near = ranges < 32767
    r = ranges[near] / 1000.0
    return x / 1000.0 + r * np.cos(angles[near]), y / 1000.0 + r * np.sin(angles[near])


def footprint(robot):
    """The robot's body outline (m), as the others' sensors see it."""
    x, y, th = robot.pose
    return body_outline((x / 1000.0, y / 1000.0, th), robot.model)


def draw(world, robots, paths, output):
    figure = new_figure(8.0, 5.5)
    axes = figure.add_subplot()
    draw_walls(axes, world)
    for (name, path), colour in zip(paths.items(), ('tab:blue', 'tab:green'), strict=True):
        xs, ys = zip(*path, strict=True)
        axes.plot(xs, ys, c=colour, label=f'{name} true path')
        axes.plot(*footprint(robots[name]), c=colour, lw=1.5)
    sx, sy = scan_points(robots['r1'])
    axes.scatter(sx, sy, s=3, c='tab:red', label="r1's last laser scan (r2's nose in it)")
    everything = np.concatenate([np.array(p) for p in paths.values()])
    lo, hi = everything.min(axis=0) - 2.0, everything.max(axis=0) + 2.0
    axes.set_xlim(lo[0], hi[0])
    axes.set_ylim(lo[1], hi[1])
    axes.set_aspect('equal')
    axes.set_xlabel('x (m)')
    axes.set_ylabel('y (m)')
    stalled = ', '.join(name for name, r in robots.items() if r.stalled) or 'none'
    axes.set_title(
        f'Two Pioneers in one world ({world.name}); stalled against each other: {stalled}'
    )
    axes.legend(loc='upper right', fontsize='small')
    return save_figure(figure, pathlib.Path(output))


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='shared_world_picture', description=__doc__.split('\n\n')[0]
    )
    parser.add_argument('output', help='the PNG to write')
    parser.add_argument(
        '--world', default='', help='an ARIA .map or ROS map.yaml (default: office)'
    )
    args = parser.parse_args(argv)
    try:
        world = load_world(args.world or default_world_path())
    except WorldError as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 2
    _, robots, paths = drive_two(world)
    print(draw(world, robots, paths, args.output))
    return 0


if __name__ == '__main__':
    sys.exit(main())
