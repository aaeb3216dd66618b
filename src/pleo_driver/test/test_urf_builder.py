"""urf_builder end to end: projects built on disk, the command line as a real process."""

import os
import pathlib
import stat
import struct
import subprocess
import sys

import pytest

from pleo_driver import sample
from pleo_driver.pdk import amx, urf
from pleo_driver.pdk.errors import BuildError
from pleo_driver.pdk.project import BuildSettings, build_project

TIME = 1216936757


def run_cli(*args, cwd=None, env=None):
    return subprocess.run(
        [sys.executable, '-m', 'pleo_driver.urf_builder', *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        env=dict(os.environ, **(env or {})),
    )


def build(path, **kwargs):
    log = []
    kwargs.setdefault('build_time', TIME)
    result = build_project(str(path), BuildSettings(log=log.append, **kwargs))
    return result, log


@pytest.fixture
def template(tmp_path):
    return pathlib.Path(sample.template_project(str(tmp_path / 'template')))


def test_template_project_reproduces_the_ppg_build_log(template):
    result, log = build(template, action='rebuild', amx_dir=str(template.parent / 'prebuilt'))
    assert result.size == 20176
    for line in (
        'writing growl (0x1000) at 0x200',
        'writing bow (0x2000) at 0x4200',
        'writing sensors (0x4000) at 0x4800',
        'writing main (0x4001) at 0x4a34',
        'writing UGSF toc at 0x4e00',
        'writing PROP toc at 0x4ec0',
        '  URF file fits: 20176 of 3649536. 3629376 free',
        'Version is 0',
        'done writing umf3 file; average vector length=15, count=98; frames=102',
        '  no data for commands',
        '  no data for user properties',
    ):
        assert line in log
    data = open(result.urf_path, 'rb').read()
    assert f'Adler32 crc is {result.checksum:08X}' in log
    assert struct.unpack_from('<I', data, 8)[0] == TIME
    folder = template.parent
    assert (folder / 'sounds.xml').read_bytes() == (
        b'<enum max="32767" min="4096" name="sound" namesoff="true" short="snd">\r\n'
        b'  <e id=" 4096" name="growl" />\r\n</enum>'
    )
    assert (
        (folder / 'include' / 'scripts.inc')
        .read_bytes()
        .endswith(b'  scr_sensors = 16384,\r\n  scr_main    = 16385,\r\n  scr_max\r\n};\r\n')
    )
    assert b'\n' not in (folder / 'include' / 'scripts.inc').read_bytes().replace(b'\r\n', b'')
    assert sorted(os.listdir(folder / 'build')) == [
        '4096.usf',
        '8192.umf',
        'main.amx',
        'sensors.amx',
        'template.urf',
    ]


def test_builds_are_reproducible_and_incremental(template):
    first, _ = build(template, amx_dir=str(template.parent / 'prebuilt'))
    data = open(first.urf_path, 'rb').read()
    usf = template.parent / 'build' / '4096.usf'
    stamp = os.path.getmtime(usf)
    second, log = build(template, amx_dir=str(template.parent / 'prebuilt'))
    assert open(second.urf_path, 'rb').read() == data
    assert os.path.getmtime(usf) == stamp  # up to date: not converted again
    assert not [line for line in log if 'Converting' in line], log  # and not said to be
    assert '  build/4096.usf is up to date' in log and '  build/8192.umf is up to date' in log


def test_generated_text_files_are_crlf_as_the_pdk_writes_them_or_lf_when_asked(template):
    """A project built by the PDK and by urf_builder in turn keeps its .inc and .xml bytes."""
    folder = template.parent
    generated = [folder / 'sounds.xml', folder / 'motions.xml', folder / 'include' / 'sounds.inc']
    pdk_ids = (
        b'<enum max="32767" min="4096" name="sound" namesoff="true" short="snd">\r\n'
        b'  <e id=" 4100" name="growl" />\r\n</enum>'
    )
    (folder / 'sounds.xml').write_bytes(pdk_ids)  # as the PDK left it, with its IDs
    run = run_cli(template, 'build', '--amx-dir', folder / 'prebuilt', '--quiet')
    assert run.returncode == 0, run.stderr
    assert (folder / 'sounds.xml').read_bytes() == pdk_ids
    assert b' 4100,\r\n' in (folder / 'include' / 'sounds.inc').read_bytes()
    stamps = [os.stat(path).st_mtime_ns for path in generated]
    assert run_cli(template, 'build', '--amx-dir', folder / 'prebuilt').returncode == 0
    assert [os.stat(path).st_mtime_ns for path in generated] == stamps  # not rewritten
    run = run_cli(template, 'build', '--line-endings', 'lf', '--amx-dir', folder / 'prebuilt')
    assert run.returncode == 0, run.stderr
    for path in generated:
        assert b'\r' not in path.read_bytes() and path.read_bytes().count(b'\n') >= 2
    assert run_cli(template, '--line-endings', 'cr').returncode == 2


def test_source_date_epoch(template):
    result, _ = build(
        template,
        amx_dir=str(template.parent / 'prebuilt'),
        build_time=None,
        environment={'SOURCE_DATE_EPOCH': '1000'},
    )
    assert struct.unpack_from('<I', open(result.urf_path, 'rb').read(), 8)[0] == 1000


def test_ids_stay_when_a_resource_is_removed(tmp_path):
    folder = tmp_path / 'p'
    for name in ('a', 'b', 'c'):
        sample.write(str(folder / f'{name}.wav'), sample.wav_bytes(100))
    upf = folder / 'p.upf'
    upf.write_text(sample.upf_text('p', [f'<sound path="{n}.wav" />' for n in 'abc']))
    build(upf)
    upf.write_text(sample.upf_text('p', ['<sound path="a.wav" />', '<sound path="c.wav" />']))
    result, _ = build(upf)
    parsed = urf.parse(open(result.urf_path, 'rb').read())
    assert [(e.id, e.name) for e in parsed.entries] == [(0x1000, 'a'), (0x1002, 'c')]
    assert 'name="b"' not in (folder / 'sounds.xml').read_text()


def test_sample_project_with_everything(tmp_path):
    project = sample.sample_project(str(tmp_path / 's'))
    result, log = build(project, amx_dir=str(tmp_path / 's' / 'prebuilt'))
    parsed = urf.parse(open(result.urf_path, 'rb').read())
    names = [(e.group.signature, e.name) for e in parsed.entries]
    assert names == [
        (b'UGSF', 'chirp'),
        (b'UGSF', 'purr'),
        (b'UGMF', 'wag'),
        (b'UGMF', 'walk'),
        (b'UGCF', 'greet_cmd'),
        (b' AMX', 'main'),
        (b'PROP', 'greeted'),
    ]
    assert parsed.version == 1
    assert any('adpcm:1' in line for line in log)


def test_fake_pawn_compiler_gets_the_template(tmp_path):
    """A stand-in compiler (a shell script) shows what the PDK command line becomes."""
    folder = tmp_path / 'p dir'
    sample.write(str(folder / 'main.p'), 'main() {}\n')
    sample.write(str(folder / 'inc' / 'x.inc'), '')
    compiler = tmp_path / 'pawncc'
    compiler.write_text(
        '#!/bin/sh\necho "$@" > args.txt\nfor a; do case "$a" in -o*) '
        f'cp "{tmp_path}/fake.amx" "${{a#-o}}";; esac; done\n'
    )
    compiler.chmod(compiler.stat().st_mode | stat.S_IEXEC)
    (tmp_path / 'fake.amx').write_bytes(amx.stand_in(24, 8))
    upf = folder / 'p.upf'
    upf.write_text(
        sample.upf_text(
            'p',
            ['<script path="main.p" />'],
            '    <tools><pawn value="pawncc %i -V2048 -C- %I -o%o" />'
            '</tools>\n    <include value="./inc:inc/../inc" />\n',
        )
    )
    result, log = build(upf, pawn_executable=str(compiler))
    assert (folder / 'args.txt').read_text().split() == [
        'main.p',
        '-V2048',
        '-C-',
        '-iinc',
        '-iinc',
        '-obuild/main.amx',
    ]
    assert any(line.startswith('  @ ') for line in log)
    assert urf.parse(open(result.urf_path, 'rb').read()).entries[0].name == 'main'


def test_pawn4_output_is_a_warning(tmp_path):
    folder = tmp_path / 'p'
    sample.write(str(folder / 'x.amx'), amx.stand_in(8, 8, file_version=11))
    upf = folder / 'p.upf'
    upf.write_text(sample.upf_text('p', ['<script path="x.amx" />']))
    result, log = build(upf)
    assert any('Pawn 4' in w for w in result.warnings)


@pytest.mark.parametrize(
    'resources,extra,message',
    [
        (['<script path="main.p" />'], {}, 'no Pawn compiler command'),
        (['<sound path="missing.wav" />'], {}, 'missing'),
        (['<script path="bad.amx" />'], {}, 'not a 32-bit Pawn AMX'),
        (['<sound path="bad.wav" />'], {}, 'not a PCM WAV'),
    ],
)
def test_build_errors(tmp_path, resources, extra, message):
    folder = tmp_path / 'p'
    sample.write(str(folder / 'main.p'), '')
    sample.write(str(folder / 'bad.amx'), b'\0' * 64)
    sample.write(str(folder / 'bad.wav'), b'RIFF')
    upf = folder / 'p.upf'
    upf.write_text(sample.upf_text('p', resources))
    with pytest.raises(BuildError, match=message):
        build(upf, **extra)
    assert not (folder / 'build' / 'p.urf').exists()


def test_missing_compiler_is_a_clear_error(tmp_path):
    folder = tmp_path / 'p'
    sample.write(str(folder / 'main.p'), '')
    upf = folder / 'p.upf'
    upf.write_text(
        sample.upf_text(
            'p',
            ['<script path="main.p" />'],
            '    <tools><pawn value="pawncc-none %i -o%o" /></tools>\n',
        )
    )
    with pytest.raises(BuildError, match="Pawn compiler 'pawncc-none' not found"):
        build(upf)


def test_too_big_is_refused_and_nothing_is_written(tmp_path):
    folder = tmp_path / 'p'
    for index in range(4):
        sample.write(
            str(folder / f's{index}.wav'), sample.wav_bytes(1_000_000, shape='noise', seed=index)
        )
    upf = folder / 'p.upf'
    upf.write_text(sample.upf_text('p', [f'<sound path="s{i}.wav" />' for i in range(4)]))
    with pytest.raises(BuildError, match='does not fit'):
        build(upf)
    assert not (folder / 'build' / 'p.urf').exists()


def test_clean_removes_generated_files_only(template):
    build(template, amx_dir=str(template.parent / 'prebuilt'))
    own = template.parent / 'include' / 'mine.inc'
    own.write_text("// the user's")
    build(template, action='clean')
    folder = template.parent
    assert not (folder / 'build').exists() and not (folder / 'sounds.xml').exists()
    assert sorted(os.listdir(folder / 'include')) == ['mine.inc']


# ---- the command line ---------------------------------------------------------------------
def test_cli_build_inspect_verify_extract(template, tmp_path):
    folder = template.parent
    done = run_cli(template, 'rebuild', '--amx-dir', folder / 'prebuilt', '--build-time', TIME)
    assert done.returncode == 0, done.stderr
    assert '*** Cleaning ***' in done.stdout and 'URF file fits: 20176' in done.stdout
    urf_path = folder / 'build' / 'template.urf'
    listing = run_cli(urf_path)
    assert listing.returncode == 0 and 'bow' in listing.stdout and '0x4a34' in listing.stdout
    assert run_cli(urf_path, 'verify').stdout.strip().endswith('ok (4 resources)')
    out = tmp_path / 'out'
    extracted = run_cli(urf_path, 'extract', '--output', out, '--wav')
    assert extracted.returncode == 0
    assert sorted(os.listdir(out)) == [
        'bow.umf',
        'growl.usf',
        'growl.wav',
        'main.amx',
        'sensors.amx',
    ]
    assert (out / 'bow.umf').read_bytes() == (folder / 'build' / '8192.umf').read_bytes()
    damaged = bytearray(urf_path.read_bytes())
    damaged[0x300] ^= 0xFF
    (tmp_path / 'bad.urf').write_bytes(bytes(damaged))
    bad = run_cli(tmp_path / 'bad.urf', 'verify')
    assert bad.returncode == 1 and 'checksum' in bad.stdout


@pytest.mark.parametrize(
    'args,code,message',
    [
        (['nothing.upf'], 1, 'cannot read project'),
        (['x.upf', 'explode'], 2, "unknown command 'explode'"),
        (['x.upf', 'verify'], 2, 'works on a .urf file'),
        (['x.urf', 'extract'], 1, 'cannot read'),
        (['x.upf', '-b'], 1, 'block compiling'),
    ],
)
def test_cli_errors(tmp_path, args, code, message):
    (tmp_path / 'x.upf').write_text('<p name="x"><resources/></p>')
    done = run_cli(*args, cwd=tmp_path)
    assert done.returncode == code, done.stderr
    assert message in done.stderr and 'Traceback' not in done.stderr


def test_cli_help():
    done = run_cli('--help')
    assert done.returncode == 0 and 'rebuild' in done.stdout and 'inspect' in done.stdout


def test_urf_builder_starts_without_numpy():
    """Importing NumPy costs more than the template project's whole build; the builder's
    command line needs none of it (the benchmark's template build beyond start-up)."""
    loaded = subprocess.run(
        [
            sys.executable,
            '-c',
            'import sys, pleo_driver.urf_builder; print("numpy" in sys.modules)',
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert loaded.stdout.strip() == 'False'
