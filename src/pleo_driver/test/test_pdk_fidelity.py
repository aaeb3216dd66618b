"""urf_builder against the real PDK's rules (issue: byte for byte on real projects), and the
PDK's converters as commands of their own. Every input here is written by the test."""

import os
import struct
import subprocess
import sys
import time

import pytest

from pleo_driver import sample
from pleo_driver.pdk import amx, enums, ucf, umf, urf, usf
from pleo_driver.pdk.errors import BuildError
from pleo_driver.pdk.project import BuildSettings, build_project

TIME = 1216936757


def build(upf, **kwargs):
    log = []
    return build_project(str(upf), BuildSettings(log=log.append, build_time=TIME, **kwargs)), log


# ---- 1. include files whose enum values name other entries -----------------------------
SENSORS_INC = """
/* the kit's sensors.inc writes some values as names of earlier entries */
enum tilt_name {
    TILT_UNKNOWN,
    TILT_ON_FEET = 3,
    TILT_ON_BACK,
}
enum drop_name {
    DROP_NORMAL = TILT_ON_FEET,     // a name from an earlier enum
    DROP_HARD = TILT_ON_BACK + 2,
    DROP_SOFT,
    DROP_ODD = SOMETHING_NOBODY_DEFINES,
    DROP_AFTER_ODD,
    DROP_LAST = 40,
}
"""
PROPERTIES_INC = 'enum property_name {\n  property_motion = 13,\n  property_drop = 44,\n}\n'


def test_symbolic_enum_values_resolve_to_the_entries_they_name():
    parsed = enums.parse_inc(SENSORS_INC)
    assert parsed['tilt_name'] == {'TILT_UNKNOWN': 0, 'TILT_ON_FEET': 3, 'TILT_ON_BACK': 4}
    # the unreadable entry and the implicit one after it are left out; nothing fails
    assert parsed['drop_name'] == {
        'DROP_NORMAL': 3,
        'DROP_HARD': 6,
        'DROP_SOFT': 7,
        'DROP_LAST': 40,
    }


def test_names_resolve_across_the_include_files_of_one_build():
    names = {}
    enums.parse_inc('enum a_name { A_ONE = 5 }', names)
    assert enums.parse_inc('enum b_name { B = A_ONE * 2 }', names)['b_name'] == {'B': 10}


def command_project(folder):
    sample.write(os.path.join(folder, 'include', 'pleo', 'sensors.inc'), SENSORS_INC)
    sample.write(os.path.join(folder, 'include', 'pleo', 'properties.inc'), PROPERTIES_INC)
    sample.write(
        os.path.join(folder, 'motions', 'graze.csv'), sample.motion_csv({'NH': lambda f: 0.0}, 3)
    )
    sample.write(
        os.path.join(folder, 'commands', 'fall_cmd.csv'),
        'motion,drop\ngraze,DROP_NORMAL\ngraze,DROP_SOFT\ngraze,DROP_HARD\n',
    )
    upf = os.path.join(folder, 'p.upf')
    sample.write(
        upf,
        sample.upf_text(
            'p',
            ['<motion path="motions/graze.csv" />', '<command path="commands/fall_cmd.csv" />'],
            '    <include value="./include" />\n',
        ),
    )
    return upf


def test_a_project_including_symbolic_enum_values_builds(tmp_path):
    result, log = build(command_project(str(tmp_path / 'p')))
    command = urf.parse(open(result.urf_path, 'rb').read()).of(urf.COMMANDS)[0]
    assert ucf.parse(command.data).entries == [
        [(13, ucf.VALUE, 0x2000), (44, ucf.VALUE, value)] for value in (3, 7, 6)
    ]
    assert not result.warnings  # DROP_ODD is unreadable, but no command uses it


def test_a_lookup_of_an_unreadable_entry_is_a_missing_property(tmp_path):
    from pleo_driver.pdk.project import command_lookups

    folder = tmp_path / 'include'
    sample.write(str(folder / 'pleo' / 'sensors.inc'), SENSORS_INC)
    sample.write(str(folder / 'pleo' / 'properties.inc'), PROPERTIES_INC)
    lookups, warning = command_lookups([str(folder)], {})
    data, missing, _ = ucf.csv_to_ucf('drop\nDROP_ODD\nDROP_LAST\n', 'x', lookups)
    assert warning is None and missing == ['drop=DROP_ODD']
    assert data[ucf.HEADER.size :] == ucf.TRIPLE.pack(44, ucf.VALUE, 40)


# ---- 2. motion velocities as the PDK's float expression gives them ------------------------
def test_whole_velocities_at_30_fps_come_out_one_lower_as_in_the_pdk():
    # NH moves 5.5 degrees a frame: exactly 165 deg/s, which the PDK writes as 164
    text = sample.motion_csv({'NH': lambda f: 5.5 * f}, 4).decode()
    vectors = [v for v in umf.parse(umf.csv_to_umf(text, 'step')[0]).vectors if v[0] == 'NH']
    assert vectors == [('NH', 0, 0, 0, 0), ('NH', 0, 3, 164, 16)]
    # at 25 fps 1000.0 / 40.0 is exactly 25: the same motion keeps its exact velocity
    text = sample.motion_csv({'NH': lambda f: 5.6 * f}, 4, rate=25).decode()
    assert [v for v in umf.parse(umf.csv_to_umf(text, 'step')[0]).vectors if v[0] == 'NH'][-1][
        3
    ] == 140


# ---- 3. WAV headers that lie ----------------------------------------------------------
def wav_with(**fields):
    """A small valid WAV with header fields replaced: rate, channels, width, block_align,
    data_size (the fmt chunk's and data chunk's little-endian fields)."""
    data = bytearray(sample.wav_bytes(400, rate=8000, width=2))
    offsets = {
        'channels': (22, '<H'),
        'rate': (24, '<I'),
        'byte_rate': (28, '<I'),
        'block_align': (32, '<H'),
        'width': (34, '<H'),
        'data_size': (40, '<I'),
    }
    for name, value in fields.items():
        offset, layout = offsets[name]
        struct.pack_into(layout, data, offset, value)
    return bytes(data)


def test_a_zero_sample_rate_is_refused_at_once():
    started = time.monotonic()
    with pytest.raises(BuildError, match='0 samples/s'):
        usf.wav_to_usf(wav_with(rate=0), 'x')
    assert time.monotonic() - started < 5.0  # the PDK loops forever here


@pytest.mark.parametrize(
    'fields',
    [
        {'rate': 1},
        {'rate': 7},
        {'rate': 0xFFFFFFFF},
        {'channels': 0},
        {'channels': 3},
        {'channels': 0xFFFF},
        {'width': 0},
        {'width': 3},
        {'width': 0xFFFF},
        {'block_align': 0},
        {'block_align': 0xFFFF},
        {'byte_rate': 0},
        {'data_size': 0xFFFFFFF0},
        {'data_size': 801},
        {'data_size': 3},
    ],
    ids=repr,
)
def test_every_lying_header_field_converts_or_is_refused_with_a_clear_error(fields):
    try:
        out = usf.wav_to_usf(wav_with(**fields), 'x')
    except BuildError as exc:
        assert str(exc)
    else:
        assert usf.parse(out).rate == usf.DEFAULT_RATE


# ---- 4. build-file names as the PDK writes them ---------------------------------------
def test_folders_hold_files_named_by_id_and_the_stem_rule_reads_the_path_as_written(tmp_path):
    folder = tmp_path / 'p'
    sample.write(str(folder / 'sounds' / 'growl.wav'), sample.wav_bytes(200))
    sample.write(str(folder / 'motions' / 'bow.csv'), sample.motion_csv({'NH': lambda f: f}, 5))
    sample.write(str(folder / 'cmds' / 'go_cmd.csv'), 'sound\ngrowl\n')
    prebuilt = folder / 'prebuilt'
    for stem in ('main', 'sensors', 'extra'):
        sample.write(str(prebuilt / f'{stem}.amx'), amx.stand_in(16, 8))
    upf = folder / 'p.upf'
    upf.write_text(
        sample.upf_text(
            'p',
            [
                '<sound path="${SOUNDS}/growl.wav" />',
                '<motion path="motions/bow.csv" />',
                '<command path="cmds/go_cmd.csv" />',
                '<script path="${SCRIPTS}/sensors.p" />',
                '<script path="main.p" />',
                '<script path="${SCRIPTS}/extra.p" />',
            ],
            '    <folders />\n',
            macros=(
                '<set name="SOUNDS" value="sounds" />',
                '<set name="SCRIPTS" value="scripts" />',
            ),
        )
    )
    build(upf, amx_dir=str(prebuilt))
    built = sorted(
        str(p.relative_to(folder / 'build')) for p in (folder / 'build').rglob('*') if p.is_file()
    )
    assert built == [
        'commands/12288.ucf',
        'main.amx',
        'motions/8192.umf',
        'p.urf',
        'scripts/16384.amx',
        'scripts/16386.amx',
        'sounds/4096.usf',
    ]


def test_without_folders_a_macro_path_sensors_script_is_numbered(tmp_path):
    folder = tmp_path / 'p'
    sample.write(str(folder / 'prebuilt' / 'sensors.amx'), amx.stand_in(16, 8))
    sample.write(str(folder / 'prebuilt' / 'main.amx'), amx.stand_in(16, 8))
    upf = folder / 'p.upf'
    upf.write_text(
        sample.upf_text(
            'p',
            ['<script path="${SCRIPTS}/sensors.p" />', '<script path="main.p" />'],
            macros=('<set name="SCRIPTS" value="scripts" />',),
        )
    )
    build(upf, amx_dir=str(folder / 'prebuilt'))
    assert sorted(os.listdir(folder / 'build')) == ['16384.amx', 'main.amx', 'p.urf']


# ---- the kit's converters as commands --------------------------------------------------
def run(tool, *args, cwd=None):
    module_main = {'wav2usf': 'wav2usf_main', 'csv2umf': 'csv2umf_main', 'csv2ucf': 'csv2ucf_main'}
    code = f'import sys; from pleo_driver.pdk_tools import {module_main[tool]} as m; sys.exit(m())'
    return subprocess.run(
        [sys.executable, '-c', code, *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
    )


@pytest.mark.parametrize('tool', ['wav2usf', 'csv2umf', 'csv2ucf'])
def test_tools_have_help_and_refuse_a_bad_command_line(tool):
    assert run(tool, '--help').returncode == 0
    missing = run(tool)
    assert missing.returncode == 2 and 'required' in missing.stderr
    absent = run(tool, 'no-such-file')
    assert absent.returncode == 1 and 'cannot read no-such-file' in absent.stderr


def test_tools_write_what_the_project_build_writes(tmp_path):
    upf = command_project(str(tmp_path / 'p'))
    folder = tmp_path / 'p'
    sample.write(
        str(folder / 'sounds' / 'purr.wav'),
        sample.wav_bytes(3000, rate=22050, channels=2, width=2),
    )
    text = (
        open(upf)
        .read()
        .replace(
            '<resources>',
            '<resources>\n    <sound path="sounds/purr.wav" adpcm="true" frequency="8000" />',
        )
    )
    open(upf, 'w').write(text)
    build(upf)
    usf_run = run(
        'wav2usf',
        '--adpcm',
        '--frequency',
        '8000',
        'sounds/purr.wav',
        '-o',
        tmp_path / 'purr.usf',
        cwd=folder,
    )
    assert usf_run.returncode == 0 and 'purr.usf' in usf_run.stdout
    assert (
        f'Converting sounds/purr.wav to {tmp_path / "purr.usf"} adpcm:1 pitch:1 freq:8000'
        in usf_run.stdout
    )  # the PDK's log line, then the size
    assert (tmp_path / 'purr.usf').read_bytes() == (folder / 'build' / '4096.usf').read_bytes()
    umf_run = run('csv2umf', 'motions/graze.csv', '-o', tmp_path / 'graze.umf', cwd=folder)
    assert umf_run.returncode == 0 and 'done writing umf3 file' in umf_run.stdout
    assert ', UMF3 format' in umf_run.stdout.splitlines()[0]
    assert (tmp_path / 'graze.umf').read_bytes() == (folder / 'build' / '8192.umf').read_bytes()
    ucf_run = run('csv2ucf', 'commands/fall_cmd.csv', '-o', tmp_path / 'fall.ucf', cwd=folder)
    assert ucf_run.returncode == 0 and 'property count=2, record count=3' in ucf_run.stdout
    assert (tmp_path / 'fall.ucf').read_bytes() == (folder / 'build' / '12288.ucf').read_bytes()


def test_tools_report_bad_input_with_exit_1(tmp_path):
    (tmp_path / 'zero.wav').write_bytes(wav_with(rate=0))
    bad_wav = run('wav2usf', 'zero.wav', cwd=tmp_path)
    assert (
        bad_wav.returncode == 1 and 'zero.wav: the WAV header says 0 samples/s' in bad_wav.stderr
    )
    assert not (tmp_path / 'zero.usf').exists()
    (tmp_path / 'broken.csv').write_text('Header\nrate=abc\nBody\nTime,Frame,NH\n0,0,0\n')
    bad_csv = run('csv2umf', 'broken.csv', cwd=tmp_path)
    assert bad_csv.returncode == 1 and "rate='abc' is not a number" in bad_csv.stderr
    (tmp_path / 'empty_cmd.csv').write_text('motion\n')
    bad_ucf = run('csv2ucf', 'empty_cmd.csv', cwd=tmp_path)
    assert bad_ucf.returncode == 1 and 'No valid data to save' in bad_ucf.stderr


def test_urf_builder_inspects_single_resource_files(tmp_path):
    folder = tmp_path / 'p'
    build(command_project(str(folder)))
    for name, expected in (
        ('8192.umf', ['motion: UMF3', 'joint   start']),
        ('12288.ucf', ['command: UCF4 3 entries', 'entry 0: property 13 value']),
    ):
        shown = subprocess.run(
            [sys.executable, '-m', 'pleo_driver.urf_builder', str(folder / 'build' / name)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert shown.returncode == 0 and all(e in shown.stdout for e in expected), shown
    refused = subprocess.run(
        [
            sys.executable,
            '-m',
            'pleo_driver.urf_builder',
            str(folder / 'build' / '8192.umf'),
            'verify',
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2 and 'can only be inspected' in refused.stderr


def test_a_zero_or_negative_frequency_is_a_bad_command_line():
    for value in ('0', '-5', 'fast'):
        result = run('wav2usf', '--frequency', value, 'any.wav')
        assert result.returncode == 2 and 'argument --frequency' in result.stderr, result


def test_converters_refuse_to_leave_out_what_they_cannot_find(tmp_path):
    """Without the project's enums a motion loses its sound cues and a command its properties:
    that is an error with a hint, not a file that looks converted; --allow-missing writes it."""
    folder = tmp_path / 'p'
    build(command_project(str(folder)))
    elsewhere = tmp_path / 'elsewhere'
    elsewhere.mkdir()
    sample.write(
        str(tmp_path / 'roar.csv'), sample.motion_csv({'NH': lambda f: 0.0}, 3, sounds={1: 'roar'})
    )
    motion = run('csv2umf', tmp_path / 'roar.csv', '-o', tmp_path / 'g.umf', cwd=elsewhere)
    assert motion.returncode == 1 and "missing sound 'roar'" in motion.stderr
    assert '--enums DIR' in motion.stderr and not (tmp_path / 'g.umf').exists()
    command = run(
        'csv2ucf', folder / 'commands' / 'fall_cmd.csv', '-o', tmp_path / 'f.ucf', cwd=elsewhere
    )
    assert command.returncode == 1 and 'missing properties' in command.stderr
    assert '-I DIR' in command.stderr and not (tmp_path / 'f.ucf').exists()
    allowed = run(
        'csv2ucf',
        folder / 'commands' / 'fall_cmd.csv',
        '-o',
        tmp_path / 'f.ucf',
        '--allow-missing',
        cwd=elsewhere,
    )
    assert allowed.returncode == 0 and (tmp_path / 'f.ucf').exists()
    assert 'warning: missing properties' in allowed.stdout
