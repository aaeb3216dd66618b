"""The `nabaztag_bridge` node's parameters, in declaration order (docs/nabaztag.md's
tables follow them). The node checks what a range cannot say (URL parts, folders, serials) after
declaring."""

from legacy_robot_common.params import read_only

from .mp3 import PRELOAD_CAP, SAMPLE_RATES
from .rabbits import PLUGINS
from .recording import MAX_UPLOAD_BYTES
from .tts import ENGINES, WORKER_PRIORITIES

PARAMETERS = (
    read_only('host', '0.0.0.0', 'address the HTTP server binds to'),
    read_only(
        'port',
        8080,
        'HTTP port the rabbits call (0 = any free port)',
        minimum=0,
        maximum=65535,
    ),
    read_only(
        'advertised_host',
        '',
        'address rabbits reach this machine at ("" = '
        "host, or the default route's address when host is 0.0.0.0)",
    ),
    read_only(
        'locate_ping',
        '',
        'locate reply "ping" value, host[:port] ("" = advertised host and port)',
    ),
    read_only(
        'locate_broad',
        '',
        'locate reply "broad" value ("" = advertised host:port/broadcast)',
    ),
    read_only('path_prefix', '/vl', 'URL folder of the rabbit requests'),
    read_only(
        'path_extension',
        '.jsp',
        'extension of the rabbit requests (a patched bytecode may use .php)',
    ),
    read_only(
        'media_root',
        '',
        'folder served under /local/ and /broadcast/ ("" = none)',
    ),
    read_only(
        'rules_file',
        '',
        'YAML rules: trigger -> actions ("" = none; reload with the reload_rules service)',
    ),
    read_only(
        'diagnostics_max_rabbits',
        100,
        'rabbits with a diagnostics status of their own (the most recently seen)',
        minimum=0,
        maximum=100000,
    ),
    read_only(
        'rabbits_period',
        1.0,
        's between rabbit list messages',
        minimum=0.1,
        maximum=60.0,
    ),
    read_only('frame_id', '', 'header frame_id of events and recordings'),
    read_only(
        'allowed_serials',
        '',
        'comma-separated serials allowed to register ("" = any rabbit)',
    ),
    read_only(
        'rabbits_file',
        '',
        'YAML: the rabbits by kind (violet, serverless, pynab) with their addresses ("" = '
        'violet rabbits only, each served as it calls)',
    ),
    read_only(
        'rabbit_timeout',
        3.0,
        's a command to a rabbit the bridge calls (serverless, pynab) may take before it fails',
        minimum=0.1,
        maximum=60.0,
    ),
    read_only(
        'rabbit_status_period',
        10.0,
        "s between reads of a serverless rabbit's /status (its state: asleep, ears)",
        minimum=1.0,
        maximum=3600.0,
    ),
    read_only(
        'serverless_vl_dir',
        '',
        "the ServerlessNabaztag firmware's vl/ folder, served for its rabbits' boot "
        '("" = they do not boot from this bridge)',
    ),
    read_only(
        'bytecode_file',
        '',
        'ping-era bytecode served at bc.jsp (amber...Mind; not shipped: Violet copyright)',
    ),
    read_only('xml_api', True, "serve jNabServer's XML API under /xml/"),
    read_only('xml_token', '', 'token the XML API requires ("" = the API answers 403 to all)'),
    read_only(
        'max_body_bytes',
        65536,
        'largest POST body accepted but a recording (the XML API), bytes; over it: 413',
        minimum=1024,
        maximum=16 * 1024 * 1024,
    ),
    read_only(
        'max_recording_bytes',
        MAX_UPLOAD_BYTES,
        "largest record.jsp upload, bytes (9 s of the rabbit's 8 kHz IMA ADPCM: 8 s and a "
        'second of slack); over it: 413',
        minimum=1024,
        maximum=16 * 1024 * 1024,
    ),
    read_only(
        'max_header_bytes',
        16384,
        'largest request line and headers, bytes; over it: 431 (414 for the line alone)',
        minimum=1024,
        maximum=1024 * 1024,
    ),
    read_only(
        'max_connections_per_address',
        64,
        'connections another host may hold open at once (0: no cap; this host is not capped); '
        'over it: closed at once',
        minimum=0,
        maximum=100000,
    ),
    read_only(
        'client_timeout',
        10.0,
        's of client silence before the connection is dropped',
        minimum=0.1,
        maximum=300.0,
    ),
    read_only('publish_pings', False, 'publish every plain ping as an event'),
    read_only(
        'ping_interval',
        20,
        's between pings the bridge asks for',
        minimum=1,
        maximum=255,
    ),
    read_only(
        'plugin',
        'none',
        'behaviour of new rabbits: none (ROS decides) or echo (a recording is played back)',
        choices=PLUGINS,
    ),
    read_only(
        'message_first_byte',
        0,
        'clear first byte of message blocks (Violet 0, jNab 1)',
        minimum=0,
        maximum=255,
    ),
    read_only('trailing_newline', False, 'send 0A after the FF of a packet'),
    read_only(
        'wake_after_boot',
        True,
        'answer the first ping after boot with the wake-up program',
    ),
    # speech (say, speak): docs/nabaztag.md "Speech"
    read_only(
        'tts_engine',
        'auto',
        'speech engine: piper (neural), espeak (espeak-ng) or auto (piper when it has a '
        'voice for the language, else espeak)',
        choices=ENGINES,
    ),
    read_only(
        'tts_voice',
        '',
        'voice of say ("" = the engine\'s voice for tts_language): a piper voice name or an '
        'espeak-ng voice',
    ),
    read_only('tts_language', 'en', 'language of say (en, de, fr, ...)'),
    read_only('tts_voice_dir', '', 'folder of more piper voices (.onnx + .onnx.json)'),
    read_only('tts_rate', 1.0, 'speed of say, 1 = normal', minimum=0.5, maximum=2.0),
    read_only(
        'tts_sample_rate',
        22050,
        'Hz of the MP3s (an MPEG rate: 8000-48000)',
        choices=SAMPLE_RATES,
    ),
    read_only(
        'tts_bit_rate',
        32,
        'kbit/s of the MP3s (mono; 32 kbit/s = 75 s of speech per 300,000-byte file)',
        minimum=8,
        maximum=320,
    ),
    read_only(
        'tts_max_file_bytes',
        PRELOAD_CAP,
        'largest MP3 file (the rabbit truncates MU files over 300,000 bytes); longer speech '
        'is split between sentences',
        minimum=8000,
        maximum=PRELOAD_CAP,
    ),
    read_only('tts_max_chars', 5000, 'longest text say accepts', minimum=1),
    read_only(
        'tts_cache_dir',
        '',
        'speech cache folder ("" = <media_root>/tts, or ~/.cache/nabaztag_bridge/tts)',
    ),
    read_only('tts_cache_mb', 100.0, 'size bound of the speech cache, MB', minimum=1.0),
    read_only(
        'tts_queue',
        4,
        'texts waiting for synthesis before say answers busy',
        minimum=1,
        maximum=1000,
    ),
    read_only('tts_threads', 1, 'threads the piper engine uses', minimum=1, maximum=64),
    read_only(
        'tts_worker_priority',
        'low',
        'CPU priority of the speech worker process: low (niceness +10), idle (SCHED_IDLE: '
        'only when no other process of its session wants the CPU; for a machine that runs '
        'little else) or normal',
        choices=WORKER_PRIORITIES,
    ),
    read_only(
        'tts_timeout',
        120.0,
        's say waits for synthesis before it answers (the audio is still cached)',
        minimum=1.0,
        maximum=3600.0,
    ),
    read_only(
        'asr_engine',
        'whisper',
        'speech to text of every recording, published on heard: whisper, or off (a bare off '
        'on the command line reaches the node as false, which is off too)',
        choices=('whisper', 'off', 'false'),
    ),
    read_only(
        'asr_language',
        'auto',
        'language of the recordings: auto (detected; en with an English-only model) or a '
        'code such as en, fr, de',
    ),
    read_only(
        'asr_model',
        'tiny.en',
        'recogniser model: tiny.en (English), base (99 languages) or a folder holding a '
        'CTranslate2 Whisper model',
    ),
    read_only(
        'asr_queue',
        4,
        'recordings waiting for the recogniser; beyond it the oldest is dropped (counted)',
        minimum=1,
        maximum=1000,
    ),
    read_only('asr_max_seconds', 10.0, 'longest sound recognised; longer is cut', minimum=1.0),
    read_only(
        'asr_worker_priority',
        'idle',
        'CPU priority of the recogniser worker process: idle (SCHED_IDLE: the pings first; '
        'recognition waits while other processes keep every core busy), low (niceness +10) or '
        'normal',
        choices=WORKER_PRIORITIES,
    ),
)
