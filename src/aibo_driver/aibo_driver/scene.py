"""What the emulated AIBO sees and hears: a pink ball rolling over the floor, two ear tones.

No sockets, no rclpy: pure functions of time, used by the emulator.
"""

import math

import numpy as np

from . import protocol as p

PINK = np.array([235, 110, 190], dtype=np.float64)
BLUE = np.array([40, 70, 200], dtype=np.float64)
LEFT_TONE, RIGHT_TONE = 440.0, 660.0  # Hz: the two ears hear different notes
TONE_AMPLITUDE = 6000


class Scene:
    """A wall, a floor, a blue box (the "favorite" colour) and a pink ball on an ellipse."""

    def __init__(self, ball_period=8.0):
        self.ball_period = ball_period  # s per lap of the ball
        h, w = p.CAMERA_HEIGHT, p.CAMERA_WIDTH
        self._rows, self._columns = np.mgrid[0:h, 0:w].astype(np.float64)
        horizon = 60
        floor = np.clip((self._rows - horizon) / (h - horizon), 0, 1)[..., None]
        wall = np.array([170, 175, 185], dtype=np.float64)
        carpet = np.array([150, 120, 80], dtype=np.float64)
        background = np.where(self._rows[..., None] < horizon, wall, carpet * (0.7 + 0.3 * floor))
        box = (self._columns >= 12) & (self._columns < 40) & (self._rows >= 40) & (self._rows < 75)
        background[box] = BLUE
        self._background = background

    def ball(self, t):
        """(column, row, radius in pixels) of the ball at time t (s)."""
        angle = 2 * math.pi * t / self.ball_period
        row = 100 + 22 * math.sin(angle)
        return 100 + 55 * math.cos(angle), row, 8 + 0.12 * (row - 78)

    def render(self, t):
        """144×176×3 uint8 camera picture at time t."""
        column, row, radius = self.ball(t)
        distance = np.hypot(self._columns - column, self._rows - row)
        inside = distance < radius
        shade = 1.0 - 0.35 * (distance / radius) ** 2
        image = self._background.copy()
        image[inside] = PINK * shade[inside][:, None]
        return image.astype(np.uint8)


def color_detection(rgb):
    """144×176×3 picture → 72×88 CDT bytes: bits 0+1 pink ball, bit 4 blue (spec §2.4 table)."""
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
