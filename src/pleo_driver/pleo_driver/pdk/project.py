"""The build driver: UPF → enumerations → USF/UMF/UCF/AMX → URF (docs/protocols/pleo.md §2.7,
§2.9).

``build_project`` is what both the ``urf_builder`` command line and its ROS
service call. Every step reports through ``log`` (the PDK's log lines) and
``progress`` (done, total, what); every failure is a BuildError with a message
for the user. The URF is written atomically: a failed build never leaves a
half-written file behind.
"""

import dataclasses
import os
import shlex
import shutil
import subprocess
import time
from typing import Callable, List, Optional

from . import amx, enums, ucf, umf, upf, urf, usf
from .errors import BuildError, MalformedResource

STEM_NAMED_SCRIPTS = ('main', 'sensors', 'init', 'startup')
FOLDERS = {'sound': 'sounds', 'motion': 'motions', 'command': 'commands', 'script': 'scripts'}
EXTENSIONS = {'sound': 'usf', 'motion': 'umf', 'command': 'ucf', 'script': 'amx'}
KIND_ENUMS = {
    'sound': enums.SOUND,
    'motion': enums.MOTION,
    'command': enums.COMMAND,
    'script': enums.SCRIPT,
    'user_property': enums.USER_PROPERTY,
}
URF_GROUPS = {
    'sound': urf.SOUNDS,
    'motion': urf.MOTIONS,
    'command': urf.COMMANDS,
    'script': urf.SCRIPTS,
}
PAWN_INCLUDES = (
    'pleo/properties.inc',
    'pleo/age.inc',
    'pleo/mood.inc',
    'pleo/pose.inc',
    'pleo/sensors.inc',
)
# csv2ucf needs these property IDs (pleo/properties.inc, identical in Pleo 1.1 and rb) when
# the project's include path has no copy of the Ugobe include files
FALLBACK_PROPERTIES = {'property_command': 9, 'property_motion': 13, 'property_sound': 29}


# the generated .inc and .xml files: CRLF is what the PDK writes
LINE_ENDINGS = {'crlf': '\r\n', 'lf': '\n'}


@dataclasses.dataclass
class BuildSettings:
    action: str = 'build'  # build, clean, rebuild
    build_time: Optional[int] = None  # None: SOURCE_DATE_EPOCH, else now
    pawn_template: Optional[str] = None  # overrides <options><tools><pawn>
    pawn_executable: Optional[str] = None  # replaces the template's first word
    amx_dir: Optional[str] = None  # prebuilt <stem>.amx files used instead of compiling
    exclusive_clean: bool = False  # -x: clean removes only .ucf and .amx
    preprocess_only: bool = False  # -p
    skip_fresh_scripts: bool = False  # -s
    environment: Optional[dict] = None  # macro keys (default: os.environ)
    line_ending: str = LINE_ENDINGS['crlf']  # of the generated .inc and .xml files
    log: Callable[[str], None] = print
    progress: Callable[[int, int, str], None] = lambda done, total, what: None


@dataclasses.dataclass
class BuildResult:
    urf_path: Optional[str] = None
    size: int = 0
    checksum: int = 0
    warnings: List[str] = dataclasses.field(default_factory=list)
    missing: List[str] = dataclasses.field(default_factory=list)
    seconds: float = 0.0


class Builder:
    def __init__(self, upf_path, settings):
        self.settings = settings
        self.log = settings.log
        self.upf_path = os.path.abspath(upf_path)
        self.project = upf.load(upf_path, settings.environment)
        self.result = BuildResult(warnings=list(self.project.warnings))
        for warning in self.project.warnings:
            self.log(f'  warning: {warning}')
        self.build_dir = self.project.directory('build', 'build')
        self.include_dir = self.project.directory('include', 'include')
        self.ids = {}  # kind → [(name, id)]
        self.outputs = []  # (resource, built file)

    def rel(self, path):
        return os.path.relpath(path, self.project.folder)

    # -- clean -------------------------------------------------------------------------------
    def clean(self):
        self.log('*** Cleaning ***')
        if self.settings.exclusive_clean:
            for folder, _, files in os.walk(self.build_dir):
                for name in files:
                    if name.endswith(('.ucf', '.amx')):
                        self._remove(os.path.join(folder, name))
            return
        for kind in enums.KINDS:
            self._remove(os.path.join(self.include_dir, f'{kind.file_stem}.inc'))
            self._remove(os.path.join(self.project.folder, f'{kind.file_stem}.xml'))
        if os.path.isdir(self.include_dir) and not os.listdir(self.include_dir):
            os.rmdir(self.include_dir)  # only when empty: it may hold the user's includes
        if os.path.isdir(self.build_dir):
            self.log(f"  Complete Clean: Removing build directory '{self.rel(self.build_dir)}'")
            shutil.rmtree(self.build_dir)

    def _remove(self, path):
        if os.path.exists(path):
            self.log(f'  Removing {self.rel(path)}')
            os.remove(path)

    # -- preprocessing -----------------------------------------------------------------------
    def preprocess(self):
        self.log('*** Preprocessing ***')
        for kind_name, kind in KIND_ENUMS.items():
            names = [
                r.path if kind_name == 'user_property' else r.stem
                for r in self.project.of_kind(kind_name)
            ]
            xml_path = os.path.join(self.project.folder, f'{kind.file_stem}.xml')
            existing = (
                enums.read_xml(_read_text(xml_path), kind) if os.path.exists(xml_path) else []
            )
            entries = enums.assign_ids(existing, names, kind)
            self.log(f"  Updating enumeration XML '{kind.file_stem}.xml'")
            _write_if_changed(xml_path, self._line_endings(enums.write_xml(entries, kind)))
            self.ids[kind_name] = entries
            if not entries:
                self.log(f'  no data for {kind.file_stem.replace("_", " ")}')
                continue
            inc_path = os.path.join(self.include_dir, f'{kind.file_stem}.inc')
            self.log(f"  Creating enumeration '{self.rel(inc_path)}'")
            os.makedirs(self.include_dir, exist_ok=True)
            _write_if_changed(inc_path, self._line_endings(enums.write_inc(entries, kind)))

    def _line_endings(self, text):
        return text.replace('\n', self.settings.line_ending)

    def id_of(self, resource):
        return dict(self.ids[resource.kind])[resource.stem]

    # -- processing --------------------------------------------------------------------------
    def process(self):
        self.log('*** Processing ***')
        work = [r for r in self.project.resources if r.kind != 'user_property']
        for done, resource in enumerate(work):
            self.settings.progress(done, len(work), f'{resource.kind} {resource.stem}')
            source = self.project.path(resource)
            if not os.path.exists(source) and not self._prebuilt_amx(resource, source):
                self.result.missing.append(f'{resource.kind} {self.rel(source)}')
                self.log(f'  missing {resource.kind}: {self.rel(source)}')
                continue
            if resource.kind == 'file':
                os.makedirs(self.build_dir, exist_ok=True)
                shutil.copyfile(source, os.path.join(self.build_dir, os.path.basename(source)))
                continue
            target = self.output_path(resource)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            getattr(self, f'_{resource.kind}')(resource, source, target)
            self.outputs.append((resource, target))
        self.settings.progress(len(work), len(work), 'done')

    def output_path(self, resource):
        """build/<id>.<ext>, or build/<folder>/<id>.<ext> with <folders/>; main.p, sensors.p,
        init.p and startup.p keep their stem, but only when written so in the UPF (after macro
        expansion): ${SCRIPTS}/sensors.p is numbered like any script
        (docs/protocols/pleo.md §2.3)."""
        extension = EXTENSIONS[resource.kind]
        written_stem, _ = os.path.splitext(resource.path)
        if resource.kind == 'script' and written_stem in STEM_NAMED_SCRIPTS:
            return os.path.join(self.build_dir, f'{written_stem}.{extension}')
        folder = FOLDERS[resource.kind] if self.project.has_option('folders') else ''
        return os.path.join(self.build_dir, folder, f'{self.id_of(resource)}.{extension}')

    def _fresh(self, target, *sources):
        """The PDK's incremental rule: rebuilt only when a source is newer than the output."""
        if not os.path.exists(target):
            return False
        built = os.path.getmtime(target)
        return all(os.path.getmtime(s) <= built for s in sources if os.path.exists(s))

    def _up_to_date(self, target, *sources):
        """_fresh, said in the log: an incremental build names what it leaves alone."""
        if not self._fresh(target, *sources):
            return False
        self.log(f'  {self.rel(target)} is up to date')
        return True

    def _sound(self, resource, source, target):
        if source.lower().endswith('.usf'):
            return _copy_checked(source, target, usf.parse)
        options = self.sound_options(resource)
        if self._up_to_date(target, source, self.upf_path):
            return
        self.log(
            f'  Converting {self.rel(source)} to {self.rel(target)} {usf.options_text(options)}'
        )
        write_atomic(
            target,
            self._convert(
                source, lambda data: usf.wav_to_usf(data, usf.sound_name(source), options)
            ),
        )

    def sound_options(self, resource):
        defaults = self.project.options.get('sound', {})
        adpcm = defaults.get('adpcm', '') or self.project.option('adpcm')
        adpcm = resource.attributes.get('adpcm', adpcm)
        pitch = resource.attributes.get('pitch', 'true')
        frequency = resource.attributes.get('frequency', defaults.get('frequency', ''))
        try:
            frequency = int(frequency) if frequency else usf.DEFAULT_RATE
        except ValueError:
            raise BuildError(
                f'sound {resource.stem}: frequency {frequency!r} is not a '
                f'number of samples per second'
            ) from None
        return usf.SoundOptions(
            adpcm=adpcm.lower() in upf.TRUE_WORDS,
            pitch=pitch.lower() in upf.TRUE_WORDS,
            frequency=frequency,
        )

    def _motion(self, resource, source, target):
        if source.lower().endswith('.umf'):
            return _copy_checked(source, target, umf.parse)
        version = self.project.option('umf') or self.project.option('motion', 'version') or '3'
        if version.strip() != '3':
            raise BuildError(
                f'UMF version {version} was asked for; urf_builder writes UMF3 '
                f'(the only version Pleo 1.1 and later play)'
            )
        if self._up_to_date(
            target, source, self.upf_path, self._xml('sounds'), self._xml('commands')
        ):
            return
        self.log(f'  Converting {self.rel(source)} to {self.rel(target)}, UMF3 format')
        sound_ids = dict(self.ids['sound'])
        sound_ids.update(self.ids['command'])
        data, lines = self._convert(
            source, lambda d: umf.csv_to_umf(decode_text(d), umf.motion_name(source), sound_ids)
        )
        for line in lines:
            self.log(line if line.startswith('done') else f'  warning: {line}')
        write_atomic(target, data)

    def _command(self, resource, source, target):
        if source.lower().endswith('.ucf'):
            return _copy_checked(source, target, ucf.parse)
        if self._up_to_date(
            target, source, self.upf_path, self._xml('sounds'), self._xml('motions')
        ):
            return
        self.log(f'  Converting {self.rel(source)} to {self.rel(target)}')
        data, missing, line = self._convert(
            source,
            lambda d: ucf.csv_to_ucf(
                decode_text(d), ucf.command_name(source), self.command_lookups()
            ),
        )
        if missing:
            self.log(f'  missing properties: {", ".join(missing)}')
            self.result.warnings.append(
                f'{resource.stem}: missing properties {", ".join(missing)}'
            )
        self.log(line)
        write_atomic(target, data)

    def command_lookups(self):
        resources = {kind: dict(self.ids[kind]) for kind in ('motion', 'sound', 'command')}
        lookups, warning = command_lookups(
            self.project.include_dirs() + [self.include_dir], resources
        )
        if warning:
            self._warn_once(warning)
        return lookups

    def _warn_once(self, text):
        if text not in self.result.warnings:
            self.result.warnings.append(text)
            self.log(f'  warning: {text}')

    def _script(self, resource, source, target):
        self.log(f"  Building script '{self.rel(source)}'")
        prebuilt = self._prebuilt_amx(resource, source)
        if prebuilt:
            self._use_amx(prebuilt, target)
            return
        if self.settings.skip_fresh_scripts and self._fresh(target, source):
            return
        command = self.pawn_command(source, target)
        self.log(f'  @ {command}')
        try:
            finished = subprocess.run(
                command,
                shell=True,
                cwd=self.project.folder,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                errors='replace',
                check=False,
            )
        except OSError as exc:
            raise BuildError(f'cannot run the Pawn compiler: {exc}') from None
        for line in finished.stdout.splitlines():
            self.log(line)
        if finished.returncode != 0 or not os.path.exists(target):
            raise BuildError(
                f"compiling '{self.rel(source)}' failed (exit code "
                f'{finished.returncode}); the command was: {command}'
            )
        self._use_amx(target, target)

    def _prebuilt_amx(self, resource, source):
        if resource.kind != 'script':
            return None
        if source.lower().endswith('.amx') and os.path.exists(source):
            return source
        if self.settings.amx_dir:
            candidate = os.path.join(self.settings.amx_dir, f'{resource.stem}.amx')
            if os.path.exists(candidate):
                return candidate
        return None

    def _use_amx(self, source, target):
        data = read_bytes(source)
        try:
            info, warnings = amx.check(data)
        except MalformedResource as exc:
            raise BuildError(f'{self.rel(source)}: {exc}') from None
        for warning in warnings:
            self.log(f'  warning: {self.rel(source)}: {warning}')
            self.result.warnings.append(f'{self.rel(source)}: {warning}')
        self.log(
            f'  AMX {self.rel(source)}: header {info.header_size} bytes, code '
            f'{info.code_size} bytes, data {info.data_size} bytes'
        )
        if os.path.abspath(source) != os.path.abspath(target):
            write_atomic(target, data)

    def pawn_command(self, source, target):
        template = self.settings.pawn_template or self.project.pawn_template()
        if not template:
            raise BuildError(
                'no Pawn compiler command: the UPF has no <options><tools><pawn '
                'value="..."/>; pass --pawn, or list prebuilt .amx scripts'
            )
        words = shlex.split(template)
        if self.settings.pawn_executable:
            words[0] = self.settings.pawn_executable
        if not shutil.which(words[0]) and not os.path.isfile(
            os.path.join(self.project.folder, words[0])
        ):
            raise BuildError(
                f"Pawn compiler '{words[0]}' not found. Install a Pawn 3.x compiler (see "
                f'docs/urf_builder.md), put it on PATH or pass --pawncc PATH, or build from '
                f'prebuilt .amx files (--amx-dir DIR or <script path="x.amx"/>)'
            )
        includes = ''.join(
            f' -i{shlex.quote(os.path.normpath(self.rel(d)))}' for d in self.project.include_dirs()
        )
        # each path is normalised on its own (the PDK normalised the whole command line,
        # which on POSIX eats "dir/.." pairs that span two arguments)
        substitutions = {
            '%i': shlex.quote(self.rel(source)),
            '%o': shlex.quote(self.rel(target)),
            '%I': includes,
        }
        command = ' '.join(shlex.quote(word) if '%' not in word else word for word in words)
        for key, value in substitutions.items():
            command = command.replace(key, value)
        return command

    def _convert(self, source, convert):
        try:
            return convert(read_bytes(source))
        except BuildError as exc:
            raise BuildError(f'{self.rel(source)}: {exc}') from None

    def _xml(self, stem):
        return os.path.join(self.project.folder, f'{stem}.xml')

    # -- writing -----------------------------------------------------------------------------
    def write(self):
        path = os.path.join(self.build_dir, f'{self.project.name}.urf')
        self.log(f'*** Writing {self.rel(path)} ***')
        version = self.version()
        self.log(f'Version is {version}')
        build_time = self.build_time()
        self.log(f'Build Time is {build_time} ({time.ctime(build_time)})')
        groups = {group: [] for group in urf.GROUPS}
        for resource, built in self.outputs:
            groups[URF_GROUPS[resource.kind]].append(
                urf.Item(self.id_of(resource), resource.stem, read_bytes(built))
            )
        property_ids = dict(self.ids['user_property'])
        for name, value in self.project.user_properties():
            groups[urf.PROPERTIES].append(urf.property_item(property_ids[name], name, value))
        data, layout = urf.write(groups, build_time, version)
        for _group, item, offset in layout.placed:
            self.log(f'writing {item.name} (0x{item.id:x}) at 0x{offset:x}')
        for group, offset in layout.indices:
            self.log(f'writing {group.signature.decode().strip()} toc at 0x{offset:x}')
        free = urf.SIZE_LIMIT - layout.size + 8  # sic: the PDK's "free" adds the trailer
        if len(data) > urf.SIZE_LIMIT:
            raise BuildError(
                f'URF file does not fit: {len(data)} of {urf.SIZE_LIMIT} bytes; '
                f'{len(data) - urf.SIZE_LIMIT} too many (nothing written)'
            )
        self.log(f'  URF file fits: {len(data)} of {urf.SIZE_LIMIT}. {free} free')
        self.log(f'Adler32 crc is {layout.checksum:08X}')
        os.makedirs(self.build_dir, exist_ok=True)
        write_atomic(path, data)
        self.result.urf_path, self.result.size, self.result.checksum = (
            path,
            len(data),
            layout.checksum,
        )

    def version(self):
        text = self.project.option('version')
        if text:
            try:
                return int(text)
            except ValueError:
                pass
        number = _svn_revision(self.project.folder)
        if number is None:
            self.log('Bad version element in UPF or cannot get Subversion revision. Using 0')
            return 0
        return number

    def build_time(self):
        if self.settings.build_time is not None:
            return self.settings.build_time
        epoch = (self.settings.environment or os.environ).get('SOURCE_DATE_EPOCH')
        if epoch:
            try:
                return int(epoch)
            except ValueError:
                raise BuildError(
                    f'SOURCE_DATE_EPOCH={epoch!r} is not a number of seconds'
                ) from None
        return int(time.time())


def command_lookups(include_dirs, resources):
    """csv2ucf's look-up tables → (ucf.Lookups, a warning or None): the Pawn enums of the
    kit's include files and user_properties.inc (first copy on the include path), and
    resources = {'motion'|'sound'|'command': {name: id}} from the project's XML enums."""
    pawn_enums, names = {}, {}
    for relative in PAWN_INCLUDES + ('user_properties.inc',):
        for folder in include_dirs:
            path = os.path.join(folder, relative)
            if os.path.exists(path):
                pawn_enums.update(enums.parse_inc(_read_text(path), names))
                break
    properties = dict(pawn_enums.get('property_name', {}))
    warning = None
    if not properties:
        warning = (
            'pleo/properties.inc is not on the include path: only the properties '
            'command, motion and sound are known'
        )
        properties = dict(FALLBACK_PROPERTIES)
    properties.update(pawn_enums.get('user_property_name', {}))
    return ucf.Lookups(properties, pawn_enums, resources), warning


def read_enum_ids(folder):
    """{kind: {name: id}} from the enumeration XML files in folder (missing files: empty)."""
    ids = {}
    for kind_name in ('sound', 'motion', 'command'):
        kind = KIND_ENUMS[kind_name]
        path = os.path.join(folder, f'{kind.file_stem}.xml')
        text = _read_text(path) if os.path.exists(path) else ''
        ids[kind_name] = dict(enums.read_xml(text, kind))
    return ids


def build_project(upf_path, settings=None):
    """Run one PDK command (build, clean, rebuild) on a project → BuildResult."""
    settings = settings or BuildSettings()
    if settings.action not in ('build', 'clean', 'rebuild'):
        raise BuildError(f"unknown command '{settings.action}' (build, clean or rebuild)")
    started = time.perf_counter()
    builder = Builder(upf_path, settings)
    if settings.action in ('clean', 'rebuild'):
        builder.clean()
    if settings.action in ('build', 'rebuild'):
        builder.preprocess()
        if not settings.preprocess_only:
            builder.process()
            if builder.result.missing:
                builder.log('Summary of missing resources:')
                for item in builder.result.missing:
                    builder.log(f'  {item}')
                raise BuildError(
                    f'{len(builder.result.missing)} resource file(s) missing: '
                    f'{", ".join(builder.result.missing)} (no URF written)'
                )
            builder.write()
    builder.result.seconds = time.perf_counter() - started
    builder.log(f'build time: {builder.result.seconds:f} sec')
    return builder.result


def _svn_revision(folder):
    if not shutil.which('svnversion'):
        return None
    try:
        output = subprocess.run(
            ['svnversion'], cwd=folder, capture_output=True, text=True, timeout=10, check=False
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    digits = ''.join(c for c in output.split(':')[-1] if c.isdigit())
    return int(digits) if digits else None


def read_bytes(path):
    try:
        with open(path, 'rb') as handle:
            return handle.read()
    except OSError as exc:
        raise BuildError(f'cannot read {path}: {exc.strerror}') from None


def _read_text(path):
    return decode_text(read_bytes(path))


def decode_text(data):
    """The tools read text as bytes; Latin-1 keeps every byte (an UTF-8 BOM is dropped)."""
    return data.decode('latin-1').removeprefix('\xef\xbb\xbf')


def _write_if_changed(path, text):
    data = text.encode('latin-1')
    if not os.path.exists(path) or read_bytes(path) != data:
        write_atomic(path, data)


def write_atomic(path, data):
    """Write to a temporary file next to the target, then rename over it."""
    temporary = f'{path}.part'
    try:
        with open(temporary, 'wb') as handle:
            handle.write(data)
        os.replace(temporary, path)
    except OSError as exc:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise BuildError(f'cannot write {path}: {exc.strerror}') from None


def _copy_checked(source, target, parse):
    """Already-built resources go in unchanged, after a check that they are what they claim."""
    data = read_bytes(source)
    try:
        parse(data)
    except MalformedResource as exc:
        raise BuildError(f'{source}: {exc}') from None
    write_atomic(target, data)
