"""What the emulated AIBO sees and hears: a room, a pink ball rolling on the floor, two tones.

No sockets, no rclpy: pure functions of time, used by the emulator.
"""

import math

import numpy as np

from . import protocol as p

PINK = np.array([235, 110, 190], dtype=np.float64)
BLUE = np.array([40, 70, 200], dtype=np.float64)
FIELD_OF_VIEW = (math.radians(57.6), math.radians(47.8))  # the ERS-2xx camera (aibo.md §3.5)
LEFT_TONE, RIGHT_TONE = 440.0, 660.0  # Hz: the two ears hear different notes
TONE_AMPLITUDE = 6000


class Scene:
    """A room of wall panels and carpet, a blue box (the "favorite" colour) and a pink ball
    rolling on an ellipse in front of the dog. The room is a panorama: the picture follows the
    dog's heading plus head pan (columns) and its head tilt (rows); the ball stays in view."""

    def __init__(self, ball_period=8.0, field_of_view=FIELD_OF_VIEW):
        self.ball_period = ball_period  # s per lap of the ball
        h, w = p.CAMERA_HEIGHT, p.CAMERA_WIDTH
        self.pixels_per_rad = (w / field_of_view[0], h / field_of_view[1])
        self.width = round(2 * math.pi * self.pixels_per_rad[0])  # the panorama, all around
        self.margin = h  # rows above and below the level view (tilt)
        rows, columns = np.mgrid[-self.margin : h + self.margin, 0 : self.width]
        rows, columns = rows.astype(np.float64), columns.astype(np.float64)
        horizon = 60
        floor = np.clip((rows - horizon) / (h - horizon), 0, 1)[..., None]
        wall = np.array([170, 175, 185], dtype=np.float64)
        panel = np.array([150, 150, 160], dtype=np.float64)
        carpet = np.array([150, 120, 80], dtype=np.float64)
        walls = np.where(((columns // 90) % 2 == 1)[..., None], panel, wall)
        background = np.where(rows[..., None] < horizon, walls, carpet * (0.7 + 0.3 * floor))
        box = (columns >= 12) & (columns < 40) & (rows >= 40) & (rows < 75)
        background[box] = BLUE
        self._panorama = background
        self._rows, self._columns = np.mgrid[0:h, 0:w].astype(np.float64)

    def ball(self, t):
        """(column, row, radius in pixels) of the ball at time t (s)."""
        angle = 2 * math.pi * t / self.ball_period
        row = 100 + 22 * math.sin(angle)
        return 100 + 55 * math.cos(angle), row, 8 + 0.12 * (row - 78)

    def view(self, heading=0.0, tilt=0.0):
        """(column, row) shift of the panorama for a heading (rad, + left) and tilt (+ up)."""
        return (
            round(-heading * self.pixels_per_rad[0]) % self.width,
            max(-self.margin, min(self.margin, round(tilt * self.pixels_per_rad[1]))),
        )

    def render(self, t, heading=0.0, tilt=0.0):
        """144×176×3 uint8 camera picture at time t, looking at heading and tilt (rad)."""
        column_shift, row_shift = self.view(heading, tilt)
        top = self.margin - row_shift
        window = self._panorama[top : top + p.CAMERA_HEIGHT]
        columns = (np.arange(p.CAMERA_WIDTH) + column_shift) % self.width
        image = window[:, columns]
        column, row, radius = self.ball(t)
        distance = np.hypot(self._columns - column, self._rows - row)
        inside = distance < radius
        shade = 1.0 - 0.35 * (distance / radius) ** 2
        image[inside] = PINK * shade[inside][:, None]
        return image.astype(np.uint8)


def color_detection(rgb):
    """144×176×3 picture → 72×88 CDT bytes: bits 0+1 pink ball, bit 4 blue (aibo.md §3.7)."""
    cells = rgb.reshape(p.COLOR_HEIGHT, 2, p.COLOR_WIDTH, 2, 3).mean(axis=(1, 3))
    r, g, b = cells[..., 0], cells[..., 1], cells[..., 2]
    pink = (r > 130) & (r - g > 60) & (b - g > 30)
    blue = (b > 150) & (r < 100) & (g < 120)
    return (pink * 0b11 | blue * (1 << 4)).astype(np.uint8)


def audio_chunk(sequence):
    """Chunk number sequence: 512 frames of two phase-continuous tones (left, right), int16."""
    n = np.arange(sequence * p.AUDIO_FRAMES, (sequence + 1) * p.AUDIO_FRAMES, dtype=np.float64)
    left = TONE_AMPLITUDE * np.sin(2 * np.pi * LEFT_TONE * n / p.AUDIO_RATE)
    right = TONE_AMPLITUDE * np.sin(2 * np.pi * RIGHT_TONE * n / p.AUDIO_RATE)
    return np.stack([left, right], axis=1).astype(np.int16)
