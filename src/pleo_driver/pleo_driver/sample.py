"""Inputs for Pleo projects made from scratch: WAV sounds, exported-style motion CSVs,
command CSVs, stand-in AMX scripts, and whole projects (the repository's sample project,
the template-sized project of the PPG's build log, a project that fills a URF).

Everything is synthesised here (sines, sweeps, joint curves); nothing comes from the PDK.
"""

import io
import math
import os
import shutil
import wave

import numpy as np

from .pdk import amx
from .pdk.project import BuildSettings, build_project

SAMPLE_PROJECT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'sample_project')
EXPORT_ORDER = (
    'RE',
    'RS',
    'LE',
    'LS',
    'NV',
    'NH',
    'HD',
    'RK',
    'RH',
    'LK',
    'LH',
    'TV',
    'TH',
    'TO',
    'SD',
    'TR',
)  # the 3ds Max exporter's column order


def wav_bytes(frames, rate=11025, width=1, channels=1, seed=0, shape='chirp'):
    """A WAV of `frames` frames: a chirp (or noise) at ~half scale, then a little silence."""
    t = np.arange(frames) / rate
    if shape == 'noise':
        signal = np.random.default_rng(seed).uniform(-1, 1, frames)
    else:
        signal = np.sin(2 * np.pi * (220 + 900 * t / max(t[-1], 1e-9)) * t + seed)
        signal *= np.minimum(1.0, 8 * (1 - t / max(t[-1], 1e-9)) + 0.05)
    columns = [signal * (0.9 if c == 0 else -0.6) for c in range(channels)]
    mixed = np.stack(columns, axis=1).reshape(-1)
    if width == 1:
        data = np.clip(128 + mixed * 120, 0, 255).astype(np.uint8).tobytes()
    else:
        data = np.clip(mixed * 30000, -32768, 32767).astype('<i2').tobytes()
    buffer = io.BytesIO()
    with wave.open(buffer, 'wb') as target:
        target.setnchannels(channels)
        target.setsampwidth(width)
        target.setframerate(rate)
        target.writeframes(data)
    return buffer.getvalue()


def motion_csv(curves, frames, rate=30, sounds=None, extra_header=(), line_end='\n'):
    """Motion CSV as the exporter writes it.

    curves: joint key → function(frame) → degrees; sounds: frame → sound name (SD column).
    """
    keys = [k for k in EXPORT_ORDER if k in curves or (k == 'SD' and sounds)]
    lines = [
        'Header',
        f'rate={rate}',
        f'frames={frames - 1}',
        f'duration={(frames - 1) / rate:.6f}',
        'type=degree',
        *extra_header,
        'Body',
        ','.join(['Time', 'Frame'] + keys),
    ]
    for frame in range(frames):
        cells = [f'{frame / rate:.6f}', str(frame)]
        for key in keys:
            if key == 'SD':
                cells.append((sounds or {}).get(frame, '0.0'))
            else:
                cells.append(f'{curves[key](frame):.6f}')
        lines.append(','.join(cells))
    return (line_end.join(lines) + line_end).encode('latin-1')


def bow_curves():
    """14 joints of a bow-like motion: smooth dips, a quick neck turn, the tail wagging.

    Tuned so csv2umf's segmentation gives the PPG log's bow.umf: 98 vectors, average
    length 15, 1,252 bytes.
    """

    def dip(low, high, start, end):
        def curve(frame):
            if frame <= start or frame >= end:
                return high
            x = (frame - start) / (end - start)
            return high + (low - high) * math.sin(math.pi * x) ** 2

        return curve

    return {
        'RE': dip(60, 20, 10, 80),
        'RS': dip(40, -5, 12, 82),
        'LE': dip(60, 20, 10, 80),
        'LS': dip(40, -5, 12, 82),
        'NV': dip(-50, 10, 5, 90),
        'NH': lambda f: 0.0 if f < 30 else min(25.0, (f - 30) * 8.0),
        'HD': dip(-40, 0, 20, 70),
        'RK': dip(-60, -20, 15, 85),
        'RH': dip(30, 0, 15, 85),
        'LK': dip(-60, -20, 15, 85),
        'LH': dip(30, 0, 15, 85),
        'TV': lambda f: 20 * math.sin(f / 3.0),
        'TH': lambda f: 35 * math.sin(f / 4.0),
        'TO': dip(10, 0, 30, 60),
    }


def walk_curves():
    """A stepping motion for the sample project."""

    def swing(amplitude, offset, shift):
        return lambda f: offset + amplitude * math.sin(2 * math.pi * f / 30 + shift)

    return {
        'RS': swing(20, 10, 0),
        'LS': swing(20, 10, math.pi),
        'RH': swing(15, 0, math.pi),
        'LH': swing(15, 0, 0),
        'RK': swing(15, -30, 0),
        'LK': swing(15, -30, math.pi),
        'TH': swing(30, 0, 0.5),
        'NH': swing(10, 0, 0.2),
    }


def write(path, data):
    os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
    with open(path, 'wb') as handle:
        handle.write(data if isinstance(data, bytes) else data.encode('latin-1'))
    return path


def upf_text(name, resources, options='', macros=()):
    return (
        f'<ugobe_project name="{name}">\n  <options>\n{options}  </options>\n'
        + ''.join(f'  {line}\n' for line in macros)
        + '  <resources>\n'
        + ''.join(f'    {line}\n' for line in resources)
        + '  </resources>\n</ugobe_project>\n'
    )


def template_project(folder):
    """The PPG template's shape and sizes: growl (15,941 frames), bow (14 joints, 102 frames),
    sensors.amx (564 bytes) and main.amx (472 bytes) — our own contents."""
    write(os.path.join(folder, 'media', 'growl.wav'), wav_bytes(15941, shape='noise'))
    write(os.path.join(folder, 'media', 'bow.csv'), motion_csv(bow_curves(), 102))
    write(os.path.join(folder, 'prebuilt', 'sensors.amx'), amx.stand_in(244, 128, 192))
    write(os.path.join(folder, 'prebuilt', 'main.amx'), amx.stand_in(204, 120, 148))
    options = (
        '    <tools>\n      <pawn value="pawncc %i -V2048 -O2 -S64 -v2 -C- %I '
        'TARGET=100 -o%o" />\n    </tools>\n    <include value="./include" />\n'
    )
    return write(
        os.path.join(folder, 'template.upf'),
        upf_text(
            'template',
            [
                '<sound path="${MEDIA}/growl.wav" />',
                '<motion path="${MEDIA}/bow.csv" />',
                '<script path="sensors.p" />',
                '<script path="main.p" />',
            ],
            options,
            ['<set-default name="MEDIA" value="media" />'],
        ),
    )


SAMPLE_SCRIPT = """// The sample project's script: wag the tail when the head is touched.
#include <Log.inc>
#include <Motion.inc>
#include <Sensor.inc>
#include <Sound.inc>
#include "motions.inc"
#include "sounds.inc"

public init()
{
    print("sample: ready\\n");
}

public on_sensor(time, sensor_name: sensor, value)
{
    if (sensor == SENSOR_HEAD && value == 1) {
        motion_play(mot_wag);
        sound_play(snd_chirp);
    }
}
"""


def sample_project(folder):
    """The repository's sample project (docs/urf_builder.md): two sounds, two motions (one with a
    sound cue), a command, a user property and a script with a stand-in prebuilt AMX."""
    write(
        os.path.join(folder, 'sounds', 'chirp.wav'), wav_bytes(11025, rate=22050, width=2, seed=1)
    )
    write(
        os.path.join(folder, 'sounds', 'purr.wav'),
        wav_bytes(8000, rate=11025, width=1, channels=2, seed=2, shape='noise'),
    )
    write(
        os.path.join(folder, 'motions', 'wag.csv'),
        motion_csv(
            {'TH': lambda f: 60 * math.sin(f / 3.0), 'TV': lambda f: 10 * math.sin(f / 6.0)}, 61
        ),
    )
    write(
        os.path.join(folder, 'motions', 'walk.csv'),
        motion_csv(walk_curves(), 91, sounds={15: 'chirp', 60: 'purr'}),
    )
    write(
        os.path.join(folder, 'commands', 'greet_cmd.csv'), 'motion,sound\nwag,chirp\nwalk,purr\n'
    )
    write(os.path.join(folder, 'main.p'), SAMPLE_SCRIPT)
    write(os.path.join(folder, 'prebuilt', 'main.amx'), amx.stand_in(240, 96, 132))
    options = (
        '    <tools>\n      <pawn value="pawncc %i -V2048 -O2 -S64 -v2 -C- %I '
        'TARGET=100 -o%o" />\n    </tools>\n    <include value="./include" />\n'
        '    <directories>\n      <build value="build" />\n'
        '      <include value="include" />\n    </directories>\n'
        '    <version value="1" />\n'
    )
    return write(
        os.path.join(folder, 'sample.upf'),
        upf_text(
            'sample',
            [
                '<sound path="${SOUNDS}/chirp.wav" />',
                '<sound path="${SOUNDS}/purr.wav" adpcm="true" />',
                '<motion path="${MOTIONS}/wag.csv" />',
                '<motion path="${MOTIONS}/walk.csv" />',
                '<command path="commands/greet_cmd.csv" />',
                '<user_property path="greeted" value="0" />',
                '<script path="main.p" />',
            ],
            options,
            [
                '<set-default name="MEDIA" value="." />',
                '<set name="SOUNDS" value="${MEDIA}/sounds" />',
                '<set name="MOTIONS" value="${MEDIA}/motions" />',
            ],
        ),
    )


def build_sample_project(folder, log=lambda line: None):
    """Copy the bundled sample project into folder/sample_project and rebuild it there with
    its prebuilt AMX → the BuildResult (its urf_path is the URF)."""
    project = os.path.join(folder, 'sample_project')
    shutil.copytree(SAMPLE_PROJECT, project, dirs_exist_ok=True)
    return build_project(
        os.path.join(project, 'sample.upf'),
        BuildSettings(action='rebuild', amx_dir=os.path.join(project, 'prebuilt'), log=log),
    )
