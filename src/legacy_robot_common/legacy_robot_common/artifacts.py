"""Writing demo and benchmark output files: PNG pictures and plots, WAV audio, text logs."""

import pathlib
import wave


def save_png(path, pixels):
    """H×W (grey) or H×W×3/4 uint8 array → PNG file; returns the path."""
    import matplotlib

    matplotlib.use('Agg')
    from matplotlib import image

    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if pixels.ndim == 2:
        image.imsave(path, pixels, cmap='gray', vmin=0, vmax=255)
    else:
        image.imsave(path, pixels)
    return path


def new_figure(width=6.0, height=4.5):
    """A matplotlib figure on the file-only Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use('Agg')
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=100)


def save_figure(figure, path):
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path)
    return path


def save_wav(path, pcm, sample_rate, channels=1, sample_width=2):
    """Interleaved little-endian PCM bytes → WAV file; returns the path."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with wave.open(str(path), 'wb') as out:
        out.setnchannels(channels)
        out.setsampwidth(sample_width)
        out.setframerate(sample_rate)
        out.writeframes(pcm)
    return path


def save_lines(path, lines):
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(''.join(f'{line}\n' for line in lines))
    return path
