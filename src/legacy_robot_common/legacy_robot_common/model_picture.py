"""A robot drawn from its URDF in the pose its live transforms give (the demo's model pictures).

Top view and side view, each link's visuals (boxes, cylinders, spheres) projected as filled
outlines; overlays are cones along a frame's x axis (sonar beams, a camera's field of view).
matplotlib only, like the other demo pictures: what rviz would show, without rviz.
"""

import math

import numpy as np

from .frames import rpy_quaternion
from .robot_model import COLOURS, MOVING, joint_transform, parse, rest_position

VIEW_MARGIN = 0.6  # of the robot's size, around it
VIEWS = (('top view', 0, 1, 'x (m)', 'y (m)'), ('side view', 0, 2, 'x (m)', 'z (m)'))


def quaternion_matrix(q):
    x, y, z, w = q.x, q.y, q.z, q.w
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def transform_matrix(transform):
    """geometry_msgs/Transform → 4×4 homogeneous matrix."""
    matrix = np.eye(4)
    matrix[:3, :3] = quaternion_matrix(transform.rotation)
    t = transform.translation
    matrix[:3, 3] = (t.x, t.y, t.z)
    return matrix


def pose_matrix(xyz, rpy):
    matrix = np.eye(4)
    matrix[:3, :3] = quaternion_matrix(rpy_quaternion(*rpy))
    matrix[:3, 3] = xyz
    return matrix


def link_poses(robot, transforms, prefix=''):
    """{link: 4×4 pose in the URDF's root} from the live transforms ({child frame id:
    TransformStamped}, frame ids with prefix); a joint with no transform seen is at rest."""
    poses = {robot.get_root(): np.eye(4)}
    pending = list(robot.joints)
    while pending:
        progressed = False
        for joint in list(pending):
            if joint.parent not in poses:
                continue
            seen = transforms.get(prefix + joint.child)
            if seen is None:
                position = rest_position(joint) if joint.type in MOVING else 0.0
                seen = joint_transform(joint, position, None)
            poses[joint.child] = poses[joint.parent] @ transform_matrix(seen.transform)
            pending.remove(joint)
            progressed = True
        if not progressed:
            break
    return poses


def _outline_points(visual):
    """Points on the visual's surface in its own frame (enough for a projected outline)."""
    geometry = visual.geometry
    kind = type(geometry).__name__.lower()
    if kind == 'box':
        sx, sy, sz = (v / 2 for v in geometry.size)
        return np.array([[x, y, z] for x in (-sx, sx) for y in (-sy, sy) for z in (-sz, sz)])
    angles = np.linspace(0, 2 * math.pi, 24, endpoint=False)
    if kind == 'cylinder':
        r, h = geometry.radius, geometry.length / 2
        ring = np.stack([r * np.cos(angles), r * np.sin(angles)], axis=1)
        return np.vstack([np.hstack([ring, np.full((24, 1), z)]) for z in (-h, h)])
    if kind == 'sphere':
        r = geometry.radius
        ring = np.stack([r * np.cos(angles), r * np.sin(angles), np.zeros(24)], axis=1)
        return np.vstack([ring, ring[:, [0, 2, 1]], ring[:, [2, 0, 1]]])
    return np.zeros((1, 3))


def _hull(points):
    """Convex hull of 2-D points (Andrew's monotone chain), counter-clockwise."""
    points = sorted(set(map(tuple, np.round(points, 6))))
    if len(points) < 3:
        return points

    def half(sequence):
        chain = []
        for p in sequence:
            while (
                len(chain) >= 2
                and (
                    (chain[-1][0] - chain[-2][0]) * (p[1] - chain[-2][1])
                    - (chain[-1][1] - chain[-2][1]) * (p[0] - chain[-2][0])
                )
                <= 0
            ):
                chain.pop()
            chain.append(p)
        return chain[:-1]

    return half(points) + half(reversed(points))


def draw_model(figure, description, transforms, prefix='', overlays=(), title=''):
    """Draw the URDF text in the pose of transforms on figure (two axes: top and side view).
    overlays: (frame id, length m, full angle rad, colour) cones along the frame's x axis."""
    robot = parse(description)
    poses = link_poses(robot, transforms, prefix)
    shapes = []
    for link in robot.links:
        pose = poses.get(link.name)
        if pose is None:
            continue
        for visual in link.visuals:
            origin = visual.origin
            local = pose @ pose_matrix(
                origin.xyz if origin else (0, 0, 0), origin.rpy if origin else (0, 0, 0)
            )
            points = _outline_points(visual)
            world = (local[:3, :3] @ points.T).T + local[:3, 3]
            colour = COLOURS.get(
                visual.material.name if visual.material else '', (0.5, 0.5, 0.5, 1)
            )
            shapes.append((world, colour))
    cones = []
    for frame, length, angle, colour in overlays:
        pose = poses.get(frame[len(prefix) :] if prefix and frame.startswith(prefix) else frame)
        if pose is None or not math.isfinite(length):
            continue
        tip = [(length, length * math.tan(angle / 2) * s, 0.0) for s in (-1, 1)]
        tip += [(length, 0.0, length * math.tan(angle / 2) * s) for s in (-1, 1)]
        world = (pose[:3, :3] @ np.array(tip).T).T + pose[:3, 3]
        cones.append((np.vstack([pose[:3, 3], world]), colour))
    for index, (name, a, b, xlabel, ylabel) in enumerate(VIEWS):
        axes = figure.add_subplot(1, 2, index + 1)
        # far parts first: from above the lowest, from the right side (-y) the left ones
        depth = (
            (lambda world: world[:, 2].mean()) if b == 1 else (lambda world: -world[:, 1].mean())
        )
        order = sorted(shapes, key=lambda shape: depth(shape[0]))
        for world, colour in order:
            axes.fill(
                *zip(*_hull(world[:, [a, b]]), strict=False),
                color=colour[:3],
                alpha=0.85,
                edgecolor='black',
                linewidth=0.3,
            )
        for world, colour in cones:
            axes.fill(*zip(*_hull(world[:, [a, b]]), strict=False), color=colour, alpha=0.12)
        if shapes:  # the robot fills the view; long beams run out of it
            every = np.vstack([world for world, _ in shapes])
            low, high = every.min(axis=0), every.max(axis=0)
            margin = VIEW_MARGIN * (high - low).max() + 0.05
            low, high = low - margin, high + margin
            axes.set_xlim(low[a], high[a])
            axes.set_ylim(low[b], high[b])
        axes.set_aspect('equal')
        axes.set_title(name)
        axes.set_xlabel(xlabel)
        axes.set_ylabel(ylabel)
    figure.suptitle(title or f'{robot.name}: robot model in its live pose')
    return robot
