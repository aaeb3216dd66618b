"""wav2usf: the audioop operations with Python 2 semantics, and USF files byte for byte."""

import math
import struct
import warnings

import pytest

from pleo_driver import sample
from pleo_driver.pdk import audio, usf
from pleo_driver.pdk.errors import BuildError, MalformedResource


def arr(*values):
    return list(values)


def test_mul_truncates_toward_zero_and_clips_symmetrically():
    assert audio.mul(arr(-128, -1, 1, 127, 100), 1, 0.98) == [-125, 0, 0, 124, 98]
    assert audio.mul(arr(-32768, 32767), 2, 2.0) == [-32767, 32767]
    assert audio.mul(arr(-255, 255), 2, 1 / 256) == [0, 0]


def test_tomono_sums_and_clips_to_plus_minus_max():
    assert audio.tomono(arr(30000, 10000, -30000, -10000, 5, -7), 2) == [32767, -32767, -2]


def test_lin2lin_and_bias_wrap_like_c():
    assert audio.lin2lin(arr(-32768, -1, 255, 256), 2, 1) == [-128, -1, 0, 1]
    assert audio.lin2lin(arr(-128, 1), 1, 2) == [-32768, 256]
    assert audio.bias(arr(-128, 0, 127), 1, -128) == [0, -128, -1]


def test_ratecv_sixteen_bit_scale_with_c_division():
    # each input is smoothed with the previous smoothed one, (x + previous) / 2 in C
    # arithmetic (−3 / 2 = −1, not −2); halving keeps every other one
    assert audio.ratecv(arr(-3, -4), 2, 1, 1, 4, 4) == [-1, -2]
    assert audio.ratecv(arr(100, 200, 301, -401), 2, 2, 1, 4, 4) == [50, 213]
    # doubling: the interpolation halves toward zero, as C does for negative values
    assert audio.ratecv(arr(-3, 0), 2, 1, 2, 1, 0) == [-3, -1, 0]
    # 8-bit samples work as the top byte of 16 bits: (−768 + 1280) / 2 = 256 → 1
    assert audio.ratecv(arr(-3, 5), 1, 1, 2, 1, 0) == [-3, 1, 5]


def test_lin2adpcm_matches_the_ima_reference_and_drops_an_odd_sample():
    pcm = [int(math.sin(i / 7.0) * 120) for i in range(501)]
    ours = audio.lin2adpcm(pcm)
    assert len(ours) == 250
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)
        audioop = pytest.importorskip(
            'audioop',
            reason='the standard library has no audioop '
            '(Python ≥ 3.13): the IMA cross-check needs it',
        )
    reference, _ = audioop.lin2adpcm(audio.to_bytes(pcm, 2), 2, None)
    assert ours == reference


def test_ima_first_codes_by_hand():
    # 0 → code 0; then +100 from predictor 0 with step 7: code 7, then 4 bits...
    assert audio.lin2adpcm(arr(0, 100)) == bytes([0x07])


def pcm8(values):
    return bytes(v & 0xFF for v in values)


def test_eight_bit_input_is_attenuated_as_if_signed():
    """The quirk of docs/protocols/pleo.md §2.4: 0x80 (silence) → −128·0.98 → −125 → 0x83."""
    data = sample.wav_bytes(4, width=1)
    samples, width, channels, rate = usf.read_wav(data)
    body = usf.convert([-128, 0, 127, 1], 1, 1, 11025, usf.SoundOptions())
    assert body == bytes([0x83, 0x00, 0x7C, 0x00])
    assert (width, channels, rate) == (1, 1, 11025) and len(samples) == 4


def test_sixteen_bit_becomes_unsigned_eight_bit():
    body = usf.convert(arr(1000, -1000, 32767, -32768), 2, 1, 11025, usf.SoundOptions())
    # 980 → >>8 = 3 → +128 = 131; −980 → −4 → 124; 32111 → 125 → 253; −32112 → −126 → 2
    assert body == bytes([131, 124, 253, 2])


def test_header_layout_and_flags():
    header = usf.header('growl', usf.SoundOptions(adpcm=True, pitch=False, frequency=22050))
    assert len(header) == 48
    assert header[:5] == b'UGSF\x01' and header[5:37] == b'growl'.ljust(32, b'\0')
    assert header[37] == 0x11 and header[38:40] == b'\x08\x01'
    assert struct.unpack('<HHI', header[40:]) == (22050, 1, 0xFFFFFFFF)


@pytest.mark.parametrize(
    'rate,width,channels',
    [(11025, 1, 1), (11025, 2, 1), (22050, 2, 1), (44100, 2, 2), (8000, 1, 1), (16000, 1, 2)],
)
def test_wav_to_usf_lengths_and_round_trip(rate, width, channels):
    frames = 3001
    data = usf.wav_to_usf(sample.wav_bytes(frames, rate, width, channels), 'tone')
    parsed = usf.parse(data)
    expected = len(audio.ratecv([0] * frames, 1, rate, 11025, 4, 4)) if rate != 11025 else frames
    assert (parsed.name, parsed.rate, parsed.bits, parsed.channels) == ('tone', 11025, 8, 1)
    assert len(parsed.body) == expected
    assert usf.to_wav(parsed)[:4] == b'RIFF'


def test_adpcm_sound_is_half_the_samples():
    data = usf.wav_to_usf(sample.wav_bytes(15941), 'growl', usf.SoundOptions(adpcm=True))
    assert len(data) == 48 + 7970  # the PPG's growl: 15,941 frames → 7,970 bytes
    assert usf.parse(data).compression == usf.ADPCM


def test_the_template_growl_size():
    assert len(usf.wav_to_usf(sample.wav_bytes(15941), 'growl')) == 15989


def test_sound_name_stops_at_the_first_dot():
    assert usf.sound_name('media/my.growl.wav') == 'my'


def test_bad_inputs_are_build_errors():
    with pytest.raises(BuildError, match='not a PCM WAV'):
        usf.wav_to_usf(b'RIFF....WAVEjunk', 'x')
    with pytest.raises(BuildError, match='frequency'):
        usf.wav_to_usf(sample.wav_bytes(10), 'x', usf.SoundOptions(frequency=70000))
    with pytest.raises(MalformedResource):
        usf.parse(b'UGSX' + bytes(60))
