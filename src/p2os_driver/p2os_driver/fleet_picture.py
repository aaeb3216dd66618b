"""Several Pioneers in one world, drawn together: the walls, every robot's true path and body,
and a laser scan with the points that fall on another robot marked.

Used by the demo (write_fleet_picture: the demo scripts' ground_truth and scans) and by
shared_world_picture (the shared world stepped without clients).
"""

import math

import numpy as np

from legacy_robot_common.artifacts import new_figure, save_figure, save_lines

ON_BODY = 0.05  # m: a scan point this close to a robot's body outline is on that robot
COLOURS = ('tab:blue', 'tab:green', 'tab:purple', 'tab:orange', 'tab:brown', 'tab:pink')
PICTURE = 'shared_world.png'


def body_corners(pose, model):
    """The four corners (m, map frame) of a model's body (length × width, centred on the pose;
    as the other robots' sensors see it) at pose (x m, y m, th rad)."""
    half_l, half_w = model.length / 2000.0, model.width / 2000.0
    x, y, th = pose
    local = np.array([(half_l, half_w), (-half_l, half_w), (-half_l, -half_w), (half_l, -half_w)])
    c, s = math.cos(th), math.sin(th)
    return np.stack(
        [x + local[:, 0] * c - local[:, 1] * s, y + local[:, 0] * s + local[:, 1] * c], 1
    )


def body_outline(pose, model):
    """(xs, ys) of the closed body outline at pose, for plotting."""
    corners = body_corners(pose, model)
    return np.r_[corners[:, 0], corners[0, 0]], np.r_[corners[:, 1], corners[0, 1]]


def on_body(points, pose, model, margin=ON_BODY):
    """Which points ((n, 2) m, map frame) lie on the body at pose or within margin of it."""
    points = np.asarray(points, np.float64).reshape(-1, 2)
    x, y, th = pose
    dx, dy = points[:, 0] - x, points[:, 1] - y
    c, s = math.cos(th), math.sin(th)
    along, across = dx * c + dy * s, -dx * s + dy * c  # in the body's frame
    out_l = np.maximum(np.abs(along) - model.length / 2000.0, 0.0)
    out_w = np.maximum(np.abs(across) - model.width / 2000.0, 0.0)
    return np.hypot(out_l, out_w) <= margin


def draw_walls(axes, world):
    """The world's wall segments and its points merged into boxes (m)."""
    for x1, y1, x2, y2 in world.segments / 1000.0:
        axes.plot([x1, x2], [y1, y2], c='black', lw=1)
    for x1, y1, x2, y2 in world.boxes / 1000.0:
        axes.fill([x1, x2, x2, x1], [y1, y1, y2, y2], c='black', lw=0.5)


def scan_hits(scripts):
    """{(seer, seen): number of seer's last scan points on seen's body}, for every pair of
    robots where both are known (seen's pose taken at the time of seer's scan)."""
    hits = {}
    for seer, script in scripts.items():
        points = script.scan_points()
        if not len(points):
            continue
        for seen, other in scripts.items():
            pose = other.pose_at(script.scan_stamp) if seen != seer else None
            if pose is not None:
                hits[(seer, seen)] = int(on_body(points, pose, other.model).sum())
    return hits


def hit_lines(hits):
    """The summary: who saw whom in its last scan, or that no robot saw another."""
    lines = [
        f"{seer}'s last scan has {count} points on {seen} (within {ON_BODY * 100:.0f} cm "
        'of its body)'
        for (seer, seen), count in hits.items()
        if count
    ]
    return lines or ["no robot's last scan saw another robot"]


def write_fleet_picture(scripts, folder, world):
    """PICTURE in folder for {name: OfficeTour} in world, and hits.csv; (paths, summary lines)."""
    hits = scan_hits(scripts)
    figure = new_figure(9.0, 6.0)
    axes = figure.add_subplot()
    draw_walls(axes, world)
    for (name, script), colour in zip(scripts.items(), COLOURS * len(scripts), strict=False):
        if script.truth:
            axes.plot(*zip(*script.truth, strict=True), c=colour, label=f'{name} true path')
        if script.truth_pose is not None:
            axes.plot(*body_outline(script.truth_pose, script.model), c=colour, lw=2)
            axes.annotate(name, script.truth_pose[:2], color=colour, fontsize='small')
    seer = _best_seer(scripts, hits)
    if seer is not None:
        _draw_scan(axes, seer, scripts)
    axes.set_aspect('equal')
    axes.set_xlabel('x (m, map frame)')
    axes.set_ylabel('y (m)')
    axes.set_title(f'{len(scripts)} Pioneers in one world ({world.name}): true paths and bodies')
    axes.legend(loc='upper right', fontsize='small')
    rows = [f'{a},{b},{n}' for (a, b), n in hits.items()]
    paths = [
        save_figure(figure, folder / PICTURE),
        save_lines(folder / 'shared_world_hits.csv', ['scan_of,points_on,count', *rows]),
    ]
    return paths, hit_lines(hits)


def _best_seer(scripts, hits):
    """The robot whose last scan has the most points on another robot (else the first with a
    scan), or None."""
    seen = {}
    for (seer, _), count in hits.items():
        seen[seer] = seen.get(seer, 0) + count
    with_scan = [name for name, script in scripts.items() if len(script.scan_points())]
    return max(with_scan, key=lambda name: seen.get(name, 0), default=None)


def _draw_scan(axes, seer, scripts):
    script = scripts[seer]
    points = script.scan_points()
    marked = np.zeros(len(points), bool)
    for name, other in scripts.items():
        pose = other.pose_at(script.scan_stamp) if name != seer else None
        if pose is not None:
            marked |= on_body(points, pose, other.model)
    axes.scatter(*points[~marked].T, s=3, c='tab:red', label=f"{seer}'s last laser scan")
    if marked.any():
        axes.scatter(
            *points[marked].T, s=14, c='black', marker='x', label='its points on another robot'
        )
