"""The emulated Trikebot's world: a tricycle in a walled room, a pan/tilt CMUcam, a ball.

Physics in SI units; the emulator turns them into raw protocol values with
units.Units. No ROS, no sockets.
"""

import dataclasses
import math
import threading

import numpy as np

from .units import Units, clamp, wrap_angle

CAMERA_HEIGHT = 0.30  # m above the floor
CAMERA_FOV_X = math.radians(48.0)  # CMUcam1 lens, about 48° × 37° (inference)
CAMERA_FOV_Y = math.radians(37.0)
BALL_RADIUS = 0.08  # m
DEFAULT_UNITS = Units()  # a trike's units unless it is given others
ACCELERATION = 1.0  # m/s² of the drive wheel
SERVO_SPEED = 400.0  # pan/tilt steps per second
BATTERY_VOLTS = 7.2


@dataclasses.dataclass
class Ball:
    """A coloured ball rolling around a circle (so tracking has something to follow)."""

    centre: tuple = (1.2, 0.0)
    orbit: float = 0.5  # m; 0 = the ball stays still
    speed: float = 0.15  # m/s along the orbit
    colour: tuple = (220, 40, 60)  # R, G, B as the camera sees it
    angle: float = 0.0

    @property
    def position(self):
        cx, cy = self.centre
        return cx + self.orbit * math.cos(self.angle), cy + self.orbit * math.sin(self.angle)

    def step(self, dt):
        if self.orbit > 0:
            self.angle += self.speed / self.orbit * dt


class Trike:
    """Drive wheel speed + steering, pan/tilt servos, integrated pose, IR range, safety stop."""

    def __init__(self, units=DEFAULT_UNITS, room=(6.0, 4.0), ball=None):
        self.units = units
        self.room = room  # width, height; the room's centre is the origin
        self.ball = ball or Ball()
        self.lock = threading.RLock()
        self.x = self.y = self.yaw = 0.0
        self.v = 0.0  # m/s
        self.v_setpoint = 0.0
        self.steer = 0.0  # rad
        self.velocity_deadline = None  # monotonic time the velocity runs out
        self.motor_killed = False
        self.pan = self.tilt = units.servo_center  # raw servo settings (what the iPaq reports)
        self.pan_target = self.tilt_target = units.servo_center
        self.safety_raw = 0  # 0 = no safety stop
        self.safety_stops = 0
        self.integrated = (0.0, 0.0, 0.0)  # the iPaq's pose estimate (x, y, theta)
        self.battery = BATTERY_VOLTS
        self.range_raw = 0

    # ---- commands --------------------------------------------------------------
    def set_velocity(self, metres_per_second, timeout, now):
        self.motor_killed = False
        self.v_setpoint = metres_per_second
        self.velocity_deadline = now + timeout if timeout > 0 else None

    def kill_motor(self):
        self.motor_killed = True
        self.v_setpoint = 0.0

    # ---- physics ---------------------------------------------------------------
    def step(self, dt, now):
        with self.lock:
            if self.velocity_deadline is not None and now >= self.velocity_deadline:
                self.v_setpoint, self.velocity_deadline = 0.0, None
            self._drive(dt)
            self.pan = _towards(self.pan, self.pan_target, SERVO_SPEED * dt)
            self.tilt = _towards(self.tilt, self.tilt_target, SERVO_SPEED * dt)
            self.ball.step(dt)
            self.range_raw = self.units.range_to_raw(self.range_ahead())
            if self._safety_tripped():
                self.v_setpoint = self.v = 0.0
                self.safety_stops += 1
            self.battery = max(6.0, self.battery - dt * 0.0005)

    def _drive(self, dt):
        if self.motor_killed:  # unpowered: rolls out
            self.v *= max(0.0, 1.0 - 2.0 * dt)
        else:
            self.v = _towards(self.v, self.v_setpoint, ACCELERATION * dt)
        turn = self.v * math.tan(self.steer) / self.units.wheelbase
        heading = self.yaw + turn * dt / 2
        dx, dy = self.v * math.cos(heading) * dt, self.v * math.sin(heading) * dt
        half_w, half_h = self.room[0] / 2 - 0.2, self.room[1] / 2 - 0.2
        new_x, new_y = clamp(self.x + dx, -half_w, half_w), clamp(self.y + dy, -half_h, half_h)
        if (new_x, new_y) != (self.x + dx, self.y + dy):
            self.v = 0.0  # bumped into a wall
        forward = (new_x - self.x) * math.cos(heading) + (new_y - self.y) * math.sin(heading)
        self.x, self.y = new_x, new_y
        self.yaw = wrap_angle(self.yaw + turn * dt)
        # the iPaq's own estimate: the same motion, in whatever frame `I` last set
        ix, iy, ith = self.integrated
        i_heading = ith + turn * dt / 2
        self.integrated = (
            ix + forward * math.cos(i_heading),
            iy + forward * math.sin(i_heading),
            wrap_angle(ith + turn * dt),
        )

    def _safety_tripped(self):
        if not self.safety_raw or self.v_setpoint <= 0 and self.v <= 0:
            return False
        return self.units.range_metres(self.range_raw) < self.units.range_metres(self.safety_raw)

    def range_ahead(self):
        """Distance from the IR ranger (robot front, looking forward) to a wall or the ball."""
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        half_w, half_h = self.room[0] / 2, self.room[1] / 2
        distances = []
        if c > 1e-9:
            distances.append((half_w - self.x) / c)
        if c < -1e-9:
            distances.append((-half_w - self.x) / c)
        if s > 1e-9:
            distances.append((half_h - self.y) / s)
        if s < -1e-9:
            distances.append((-half_h - self.y) / s)
        wall = min(distances)
        bx, by = self.ball.position
        along = (bx - self.x) * c + (by - self.y) * s
        across = abs(-(bx - self.x) * s + (by - self.y) * c)
        if along > 0 and across < BALL_RADIUS:
            wall = min(wall, along - math.sqrt(BALL_RADIUS**2 - across**2))
        return max(0.0, wall - 0.1)  # the sensor sits 0.1 m behind the bumper

    # ---- camera ----------------------------------------------------------------
    def render(self, columns=80, rows=143):
        """The camera image as the CMUcam samples it: rows × columns × RGB, values 16..240."""
        with self.lock:
            pan = self.units.raw_to_servo(self.pan)
            tilt = self.units.raw_to_servo(self.tilt)
            x, y, yaw = self.x, self.y, self.yaw
            bx, by = self.ball.position
            colour = self.ball.colour
        # positive tilt looks up (as for the ball below): the horizon moves down the image
        horizon = rows / 2 + tilt / (CAMERA_FOV_Y / rows)
        depth = np.arange(rows, dtype=np.float32)[:, None, None] - horizon
        floor = np.clip(np.array([100, 95, 80]) + depth * 0.6, 16, 240)
        image = np.where(depth >= 0, floor, np.array([70, 90, 120])).astype(np.uint8)
        image = np.broadcast_to(image, (rows, columns, 3)).copy()
        bearing = wrap_angle(math.atan2(by - y, bx - x) - yaw - pan)
        distance = math.hypot(bx - x, by - y)
        if abs(bearing) < CAMERA_FOV_X / 2 + 0.2 and distance > BALL_RADIUS:
            column = columns / 2 - bearing / (CAMERA_FOV_X / columns)
            elevation = math.atan2(BALL_RADIUS - CAMERA_HEIGHT, distance) - tilt
            row = rows / 2 - elevation / (CAMERA_FOV_Y / rows)
            radius_x = math.atan2(BALL_RADIUS, distance) / (CAMERA_FOV_X / columns)
            radius_y = math.atan2(BALL_RADIUS, distance) / (CAMERA_FOV_Y / rows)
            yy, xx = np.ogrid[:rows, :columns]
            disc = ((xx + 0.5 - column) / max(radius_x, 0.5)) ** 2 + (
                (yy + 0.5 - row) / max(radius_y, 0.5)
            ) ** 2 <= 1.0
            image[disc] = colour
        return np.clip(image, 16, 240)


@dataclasses.dataclass
class Blob:
    """A CMUcam middle-mass result in camera coordinates (x 1..columns, y 1..rows)."""

    x: int = 0
    y: int = 0
    x1: int = 0
    y1: int = 0
    x2: int = 0
    y2: int = 0
    pixels: int = 0  # tracked pixels / 8, at most 255 (CMUcam1)
    confidence: int = 0


def track_colour(image, bounds):
    """CMUcam TC over an image: the mask of pixels within the bounds and its middle mass."""
    r_min, r_max, g_min, g_max, b_min, b_max = bounds
    r, g, b = image[..., 0], image[..., 1], image[..., 2]
    mask = (r >= r_min) & (r <= r_max) & (g >= g_min) & (g <= g_max) & (b >= b_min) & (b <= b_max)
    count = int(mask.sum())
    if not count:
        return mask, Blob()
    rows, columns = np.nonzero(mask)
    x1, x2, y1, y2 = columns.min() + 1, columns.max() + 1, rows.min() + 1, rows.max() + 1
    area = (x2 - x1 + 1) * (y2 - y1 + 1)
    return mask, Blob(
        int(round(columns.mean())) + 1,
        int(round(rows.mean())) + 1,
        int(x1),
        int(y1),
        int(x2),
        int(y2),
        min(255, count // 8),
        int(min(255, count * 255 // area)),
    )


def window_colour(image, half=4):
    """CMUcam TW: colour bounds from the middle of the window (mean ± 30 per channel)."""
    rows, columns = image.shape[:2]
    centre = image[rows // 2 - half : rows // 2 + half, columns // 2 - half : columns // 2 + half]
    mean = centre.reshape(-1, 3).mean(axis=0)
    return tuple(int(clamp(m + d, 16, 240)) for m in mean for d in (-30, 30))


def line_bitmap(mask, columns=80, rows=48):
    """Line-mode bitmap: the tracked-pixel mask sampled down to columns × rows."""
    row_index = (np.arange(rows) * mask.shape[0]) // rows
    column_index = (np.arange(columns) * mask.shape[1]) // columns
    return mask[row_index][:, column_index].astype(np.uint8)


def _towards(value, target, step):
    if value < target:
        return min(target, value + step)
    return max(target, value - step)
