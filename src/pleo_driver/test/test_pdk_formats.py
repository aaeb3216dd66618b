"""csv2umf, csv2ucf, the enumerations, UPF macros and the URF writer/reader, byte for byte."""

import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pleo_driver import sample
from pleo_driver.pdk import amx, enums, joints, py2, ucf, umf, upf, urf, usf
from pleo_driver.pdk.errors import BuildError, MalformedResource


# ---- Python 2 dict order ------------------------------------------------------------------
def test_py2_dict_order_gives_the_pdk_joint_order():
    """Inserting the joint table's keys reproduces csv2umf's order (docs/protocols/pleo.md §2.5),
    so the string hash and the dict's probing and resizing are Python 2's."""
    table_order = 'RS RE LS LE LH LK RH RK TO TH TV NH NV EY JW TR HD SD FS'.split()
    assert tuple(py2.dict_order(table_order)) == joints.UMF_ORDER


def test_py2_string_hash_known_values():
    assert py2.string_hash('') == 0
    assert py2.string_hash('a') == (((97 << 7) * 1000003) ^ 97 ^ 1) & 0xFFFFFFFF


def test_c_division():
    assert [py2.c_div(-7, 2), py2.c_div(7, -2), py2.c_div(7, 2)] == [-3, -3, 3]


# ---- UMF ------------------------------------------------------------------------------------
def bow():
    return umf.csv_to_umf(sample.motion_csv(sample.bow_curves(), 102).decode(), 'bow')


def test_template_bow_matches_the_ppg_log():
    data, lines = bow()
    assert lines[-1] == ('done writing umf3 file; average vector length=15, count=98; frames=102')
    assert len(data) == 1252 == 46 + 2 * 14 + 12 * 98 + 2


def test_umf_header_and_terminator():
    data, _ = bow()
    magic, version, name, count, angle, timebase, vectors, end = umf.HEADER.unpack_from(data)
    assert (magic, version, name.rstrip(b'\0'), count, angle, timebase, vectors, end) == (
        b'UGMF',
        3,
        b'bow',
        14,
        1,
        33,
        98,
        102,
    )
    codes = struct.unpack_from('<14H', data, 46)
    assert [joints.CODE_TO_KEY[c] for c in codes] == [
        k for k in joints.UMF_ORDER if k in sample.bow_curves()
    ]
    assert data[46:48] == b'HN' and data[-2:] == b'\xad\xde'


def test_vectors_share_frames_and_start_one_later():
    parsed = umf.parse(bow()[0])
    by_joint = {}
    for joint, start, goal, _velocity, _position in parsed.vectors:
        by_joint.setdefault(joint, []).append((start, goal))
    for key, spans in by_joint.items():
        real = [s for s in spans if s != (0, 0)]
        for (_, goal), (start, _) in zip(real, real[1:], strict=False):
            assert start == goal + 1, (key, real)


def test_a_ramp_is_one_vector_with_its_velocity():
    text = sample.motion_csv({'RS': lambda f: f * 1.0, 'LS': lambda f: 0.0}, 31).decode()
    parsed = umf.parse(umf.csv_to_umf(text, 'ramp')[0])
    ramp = [v for v in parsed.vectors if v[0] == 'RS']
    # 31 frames: 0..30 → one vector, final angle 30; the PDK computes the velocity as
    # 30·(1000.0/(1000.0/30))/30 = 29.999999999999996 and truncates: 29, not 30
    # (docs/protocols/pleo.md §2.5)
    assert ramp == [('RS', 0, 30, 29, 30)]


def test_sound_column_cues_by_name_and_drops_unused_sd():
    text = sample.motion_csv({'RS': lambda f: 0.0}, 10, sounds={4: 'growl', 6: 'nosuch'})
    data, lines = umf.csv_to_umf(text.decode(), 'cue', {'growl': 4096})
    parsed = umf.parse(data)
    assert 'SD' in parsed.joints
    assert [v for v in parsed.vectors if v[0] == 'SD'] == [('SD', 4, 0, 0, 4096)]
    assert any('missing sound' in line for line in lines)
    silent = umf.parse(
        umf.csv_to_umf(
            sample.motion_csv({'RS': lambda f: 0.0}, 10, sounds={1: '0.0'}).decode(), 'quiet'
        )[0]
    )
    assert 'SD' not in silent.joints


def test_used_header_overrides_and_frames_are_recounted():
    text = sample.motion_csv(
        {'RS': lambda f: 0.0, 'LS': lambda f: 5.0}, 12, extra_header=['used=LS-TO']
    ).decode()
    motion = umf.read_csv(text)
    assert motion.used == ['LS'] and len(motion.rows) == 12


def test_cr_line_ends_and_trailing_empty_columns():
    text = sample.motion_csv({'RS': lambda f: f / 2}, 8, line_end='\r').decode()
    text = text.replace('Time,Frame,RS', 'Time,Frame,RS,,,')
    assert umf.csv_to_umf(text, 'm')[0] == umf.csv_to_umf(text.replace('\r', '\n'), 'm')[0]


@pytest.mark.parametrize(
    'text,message',
    [
        ('Header\n\nBody\nTime,Frame,RS\n0,0,1\n', 'blank line'),
        ('Header\nrate=30\n', 'no "Body"'),
        ('Body\nTime,RS\n0,1\n', 'no "Frame"'),
        ('Body\nTime,Frame,RS\n0,0,abc\n', 'not an angle'),
        ('rate=fast\nBody\nTime,Frame,RS\n0,0,1\n', 'rate'),
    ],
)
def test_bad_motion_csv(text, message):
    with pytest.raises(BuildError, match=message):
        umf.csv_to_umf(text, 'bad')


def test_motion_name_removes_csv_dot_and_prefix():
    assert umf.motion_name('dir/mot_walk.csv') == 'walk'


# ---- UCF ------------------------------------------------------------------------------------
LOOKUPS = ucf.Lookups(
    properties={
        'property_motion': 13,
        'property_sound': 29,
        'property_mood': 20,
        'property_age': 1,
    },
    pawn_enums={'mood_name': {'mood_happy': 3}, 'age_name': {'age_none': 0}},
    resources={
        'motion': {'hungry_search': 0x2000, 'walk': 0x2001},
        'sound': {'soc_023': 4200},
        'command': {},
    },
)


def test_single_column_command():
    data, missing, log = ucf.csv_to_ucf('motion\nhungry_search\nwalk\n', 'graze_cmd', LOOKUPS)
    assert data[:4] == b'UGCF' and struct.unpack_from('<h', data, 4) == (4,)
    assert data[6:38] == b'graze_cmd'.ljust(32, b'\0')
    assert data[38:42] == struct.pack('<hh', 1, 2)
    assert data[42:48] == bytes.fromhex('0d0001000020') and not missing
    assert log == 'done writing ucf file; property count=1, record count=2'


def test_columns_in_python2_dict_order_and_resolution_rules():
    data, missing, _ = ucf.csv_to_ucf(
        'mood, age ,sound,age_max\r'
        'mood_happy,none,soc_023,7\rhappy,x,soc_023,9\r'
        'sad,none,soc_023\r',
        's',
        LOOKUPS,
    )
    assert missing == ['age=x']  # the third row lacks its last field: skipped
    triples = [struct.unpack_from('<hhh', data, 42 + 6 * i) for i in range((len(data) - 42) // 6)]
    order = py2.dict_order(['mood', 'age', 'sound', 'age_max'])
    first = {'mood': (20, 1, 3), 'age': (1, 1, 0), 'sound': (29, 1, 4200), 'age_max': (1, 3, 7)}
    second = dict(first, age=None, age_max=(1, 3, 9))
    assert triples == [first[c] for c in order] + [second[c] for c in order if second[c]]
    assert struct.unpack_from('<hh', data, 38) == (3, 2)  # the last entry's count (quirk)


def test_short_rows_skipped_and_empty_is_an_error():
    with pytest.raises(BuildError, match='No valid data to save'):
        ucf.csv_to_ucf('motion,sound\nwalk\n', 'x', LOOKUPS)


def test_ucf_name():
    assert ucf.command_name('a/snd_excited_cmd.csv') == 'snd_excited'


# ---- enumerations ---------------------------------------------------------------------------
def test_enum_xml_and_inc_byte_exact():
    entries = enums.assign_ids([], ['roar', 'alarm_beep', 'PLEO_Line'], enums.SOUND)
    assert enums.write_xml(entries, enums.SOUND) == (
        '<enum max="32767" min="4096" name="sound" namesoff="true" short="snd">\n'
        '  <e id=" 4096" name="roar" />\n  <e id=" 4097" name="alarm_beep" />\n'
        '  <e id=" 4098" name="PLEO_Line" />\n</enum>'
    )
    inc = enums.write_inc(entries, enums.SOUND)
    assert inc.startswith(enums.INC_BANNER) and inc.count('\n') == 15
    assert inc.endswith(
        'enum sound_name {\n  snd_none       =     0,\n'
        '  snd_min        =  4096,\n  snd_roar       =  4096,\n'
        '  snd_alarm_beep =  4097,\n  snd_PLEO_Line  =  4098,\n'
        '  snd_max\n};\n'
    )
    assert (
        enums.INC_BANNER.splitlines()[3] == ' * enumgen.py.  Do not edit directly or put under  *'
    )


def test_user_properties_have_no_none():
    inc = enums.write_inc([('my_prop', 20480)], enums.USER_PROPERTY)
    assert 'enum user_property_name {\n  property_min     = 20480,\n' in inc
    assert 'none' not in inc


def test_ppg_inc_line_widths():
    entries = [('debug100', 4106)]
    inc = enums.write_inc(entries, enums.SOUND)
    assert '  snd_none     =     0,\n' in inc and '  snd_debug100 =  4106,\n' in inc


def test_ids_survive_rebuilds():
    first = enums.assign_ids([], ['a', 'b', 'c'], enums.MOTION)
    second = enums.assign_ids(first, ['a', 'c', 'd'], enums.MOTION)
    assert second == [('a', 8192), ('c', 8194), ('d', 8195)]
    again = enums.read_xml(enums.write_xml(second, enums.MOTION), enums.MOTION)
    assert enums.assign_ids(again, ['d', 'e'], enums.MOTION) == [('d', 8195), ('e', 8196)]


def test_ids_wrap_around_past_the_maximum():
    assert enums.assign_ids([('x', 32767)], ['x', 'y'], enums.SCRIPT) == [
        ('x', 32767),
        ('y', 16384),
    ]


def test_empty_enum_xml():
    assert enums.write_xml([], enums.COMMAND) == (
        '<enum max="32767" min="12288" name="command" namesoff="true" short="cmd" />'
    )


@pytest.mark.parametrize(
    'xml,message',
    [
        ('<enum><e id="4096" name="a" /><e id="4097" name="a" /></enum>', 'duplicate name'),
        ('<enum><e id="4096" name="a" /><e id="4096" name="b" /></enum>', 'duplicate id'),
        ('<enum><e id="5" name="a" /></enum>', 'outside'),
        ('<enum><e id="x" name="a" /></enum>', 'numeric'),
        ('<enum>', 'not valid XML'),
    ],
)
def test_bad_enum_xml(xml, message):
    with pytest.raises(BuildError, match=message):
        enums.read_xml(xml, enums.SOUND)


def test_parse_inc():
    text = (
        '/* c */ enum property_name { property_age = 1, property_mood, // x\n'
        ' property_sound = 29 }\nenum mood_name { mood_happy = (1 << 2) | 1, mood_sad }'
    )
    assert enums.parse_inc(text) == {
        'property_name': {'property_age': 1, 'property_mood': 2, 'property_sound': 29},
        'mood_name': {'mood_happy': 5, 'mood_sad': 6},
    }


# ---- UPF macros -----------------------------------------------------------------------------
def test_macro_rules(tmp_path):
    path = tmp_path / 'p.upf'
    path.write_text(
        '<upf_project name="p"><set-default name="MEDIA" value="../media"/>'
        '<set name="SOUNDS" value="${MEDIA}/sounds"/><set-default name="HOME" value="no"/>'
        '<set name="DEEP" value="${SOUNDS}/x"/>'
        '<resources><sound path="${SOUNDS}/a.wav"/><sound path="$${SOUNDS}/b.wav"/>'
        '<sound path="${HOME}/c.wav"/><sound path="${DEEP}/d.wav"/>'
        '<sound path="${NOPE}/e.wav"/><!-- <sound path="f.wav"/> --></resources></upf_project>'
    )
    project = upf.load(str(path), {'HOME': '/home/me'})
    assert [r.path for r in project.resources] == [
        '../media/sounds/a.wav',
        '${SOUNDS}/b.wav',
        '/home/me/c.wav',
        '${MEDIA}/sounds/x/d.wav',
        '${NOPE}/e.wav',
    ]
    assert "Key 'NOPE' not defined" in project.warnings


@pytest.mark.parametrize(
    'text,message',
    [
        ('<p name="x"><resources><movie path="a"/></resources></p>', 'unknown resource'),
        ('<p><resources/></p>', 'no name'),
        ('<p name="x"', 'not valid XML'),
        ('<p name="x"><resources><sound/></resources></p>', 'without a path'),
    ],
)
def test_bad_upf(tmp_path, text, message):
    path = tmp_path / 'bad.upf'
    path.write_text(text)
    with pytest.raises(BuildError, match=message):
        upf.load(str(path), {})


# ---- URF ------------------------------------------------------------------------------------
def template_groups(usf_size=15989, umf_size=1252):
    return {
        urf.SOUNDS: [urf.Item(0x1000, 'growl', b's' * usf_size)],
        urf.MOTIONS: [urf.Item(0x2000, 'bow', b'm' * umf_size)],
        urf.SCRIPTS: [
            urf.Item(0x4000, 'sensors', amx.stand_in(244, 128, 192)),
            urf.Item(0x4001, 'main', amx.stand_in(204, 120, 148)),
        ],
    }


def test_urf_layout_of_the_ppg_build_log():
    data, layout = urf.write(template_groups(), 1216936757, 0)
    assert [offset for _, _, offset in layout.placed] == [0x200, 0x4200, 0x4800, 0x4A34]
    assert [offset for _, offset in layout.indices] == [0x4E00, 0x4E30, 0x4E60, 0x4E68, 0x4EC0]
    assert layout.size == 0x4EC8 and len(data) == 20176
    assert data[:16] == b'UGRF' + struct.pack('<III', 1, 1216936757, 0)
    assert struct.unpack_from('<4sI', data, 16) == (b'UGSF', 0x4E00)
    assert struct.unpack_from('<4sI', data, 48) == (b'PROP', 0x4EC0)
    assert struct.unpack_from('<4sI', data, 56) == (b'SIZE', 0x4EC8)
    assert data[0x40:0x200] == b'0' * (0x200 - 0x40)  # padding is ASCII '0'
    assert data[-8:] == b'ADLR' + struct.pack('<I', zlib.adler32(data[:-8], 0))
    assert zlib.adler32(data[:-8], 0) != zlib.adler32(data[:-8])
    assert data[0x4E64:0x4E68] == b'\0\0\0\0'  # empty UGCF: length 0
    assert data[0x4E6C:0x4E70] == struct.pack('<I', 80)  # AMX toc: 2 × 40


def test_gaps_and_property_quirks():
    groups = {
        urf.SOUNDS: [urf.Item(0x1002, 'late', b'abc')],
        urf.PROPERTIES: [
            urf.property_item(0x5000, 'my_prop', -2),
            urf.property_item(0x5001, 'p2', 7),
        ],
    }
    data, layout = urf.write(groups, 0, 3)
    toc = layout.indices[0][1]
    assert struct.unpack_from('<4sI', data, toc) == (b'UGSF', 120)
    assert struct.unpack_from('<II', data, toc + 8) == (0xFFFFFFFF, 0)
    assert data[toc + 16 : toc + 48] == bytes(32)
    prop_toc = layout.indices[4][1]
    offset, length, name = struct.unpack_from('<II32s', data, prop_toc + 8)
    assert (length, name.rstrip(b'\0')) == (7, b'my_prop')  # length = len(name)
    assert data[offset : offset + 8] == struct.pack('<ii', -2, 7)
    parsed = urf.parse(data)
    assert [(e.id, e.name) for e in parsed.entries] == [
        (0x1002, 'late'),
        (0x5000, 'my_prop'),
        (0x5001, 'p2'),
    ]
    assert parsed.checksum_ok and parsed.version == 3


def test_names_truncate_at_32_without_terminator():
    data, layout = urf.write({urf.MOTIONS: [urf.Item(0x2000, 'n' * 40, b'x')]}, 0, 0)
    entry = data[layout.indices[1][1] + 8 :][:40]
    assert entry[8:] == b'n' * 32


def test_parse_rejects_damage():
    data, _ = urf.write(template_groups(), 1, 0)
    with pytest.raises(MalformedResource):
        urf.parse(data[:-1])
    with pytest.raises(MalformedResource):
        urf.parse(b'XGRF' + data[4:])
    flipped = bytearray(data)
    flipped[0x300] ^= 1
    assert not urf.parse(bytes(flipped)).checksum_ok


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600))
def test_readers_never_crash_on_garbage(blob):
    for parse in (urf.parse, umf.parse, ucf.parse, usf.parse, amx.check):
        try:
            parse(blob)
        except MalformedResource:
            pass


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 4000), st.integers(0, 500))
def test_mutated_urf_never_crashes(position, value):
    data = bytearray(urf.write(template_groups(100, 50), 1, 0)[0])
    data[position % len(data)] = value % 256
    try:
        urf.parse(bytes(data))
    except MalformedResource:
        pass
