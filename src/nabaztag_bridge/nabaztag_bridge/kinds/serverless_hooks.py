"""What the bridge serves ServerlessNabaztag rabbits: their boot and their hooks.

Boot: with the rabbit's "Violet Platform" set to the bridge's host:port, the rabbit fetches
/bc.jsp, then /init.forth and the Forth files it names. They come from the owner's checkout of
the firmware's vl/ folder (parameter serverless_vl_dir), except hooks.forth: the bridge serves
its own hook words (HOOKS_FORTH), because two of the published hooks lose their data (the RFID
hook posts an empty body, the ears hook posts the words it meant to call). Hook words of our
own give the tag id and the ear positions with the event itself, at the moment it happens;
reading /status afterwards could only give the ears (no tag id) and one poll too late.

Hooks: POST /hooks/{click,dblclick,ears,rfid,record}.php, form-encoded (record: the WAV), each
accepted only from the address of a declared serverless rabbit (403 otherwise, counted).
"""

import pathlib
import re
import time
import urllib.parse

from legacy_robot_common.errors import MalformedFrame

from .. import protocol as p
from .. import recording
from .base import EARS_MAX, RabbitEvent

HOOK_PATH = '/hooks/'
HOOKS = {
    'click': 'click',
    'dblclick': 'double_click',
    'ears': 'ears_moved',
    'rfid': 'rfid',
    'record': 'recording',
}
RECORD_PATH = '/hooks/record.php'
_TAG = re.compile(r'[0-9a-fA-F]{8,16}')

# Our hook words. Each posts to the server the rabbit booted from (server-url), form-encoded,
# and drops the answer. `ears` leaves ( left right ); the RFID hook is given the tag's id.
HOOKS_FORTH = r"""\ Hook words of nabaztag_bridge (served in place of the firmware's hooks.forth)
: bridge-post ( payload path -- )  \ POST payload to <server>/<path>, answer dropped
  >r nil server-url @ :: r> :: str-join http-post drop drop ;
: on-click ( -- )  nil "time=" :: time-ms :: str-join "/hooks/click.php" bridge-post ;
: on-dbl-click ( -- )  nil "time=" :: time-ms :: str-join "/hooks/dblclick.php" bridge-post ;
: on-ears ( -- )
  ears >r >r nil "left=" :: r> :: "&right=" :: r> :: str-join "/hooks/ears.php" bridge-post ;
: on-rfid ( rfid -- )  >r nil "tag=" :: r> :: str-join "/hooks/rfid.php" bridge-post ;
: on-time ( -- ) ;  \ the bridge's time rules speak the hours
: on-halftime ( -- ) ;
: say ( text -- ) drop ;  \ speech comes from the bridge as an MP3 URL, never a cloud TTS
"""


class HookError(ValueError):
    """A hook the bridge refuses: its HTTP status and counter."""

    def __init__(self, status, text, counter):
        super().__init__(text)
        self.status, self.counter = status, counter


class ServerlessHooks:
    """roster: who may post (its serverless links). vl_dir: the firmware's vl/ checkout, or
    None (boot files answer 404 saying so)."""

    def __init__(self, roster, vl_dir=None):
        self.roster = roster
        self.vl_dir = pathlib.Path(vl_dir).resolve() if vl_dir else None

    # ---- hooks -------------------------------------------------------------------------
    def hook(self, name, peer, read_body):
        """A hook POST from peer → the RabbitEvent handed to its link; HookError if refused.
        read_body() → the body (checked against Content-length by the server)."""
        link = self.roster.link_at(peer, 'serverless') if peer else None
        if link is None:
            raise HookError(
                403, f'{peer}: not the address of a declared serverless rabbit', 'refused_hooks'
            )
        event = self._event(link, name, read_body())
        link.heard_from(event.ears)
        link.on_event(event)
        return event

    def _event(self, link, name, body):
        kind = HOOKS[name]
        now = time.time()
        if kind == 'recording':
            try:
                recording.decode_wav(body)
            except MalformedFrame as exc:
                raise HookError(400, f'record hook: {exc}', 'bad_hooks') from None
            return RabbitEvent(link.serial, link.kind, kind, now, audio=body)
        fields = _form(body)
        if kind == 'ears_moved':
            ears = tuple(_ear(fields, side) for side in ('left', 'right'))
            return RabbitEvent(link.serial, link.kind, kind, now, ears=ears)
        if kind == 'rfid':
            tag = fields.get('tag', '')
            if not _TAG.fullmatch(tag):
                raise HookError(400, f'rfid hook without a tag id (tag={tag[:20]!r})', 'bad_hooks')
            return RabbitEvent(link.serial, link.kind, kind, now, rfid=p.normalize_rfid(tag))
        return RabbitEvent(link.serial, link.kind, kind, now)

    # ---- boot --------------------------------------------------------------------------
    def boot_file(self, path, query, peer):
        """A file of the rabbit's boot: (bytes or Path, content type), or None when path is
        not one. bc.jsp with a declared MAC tells the bridge the rabbit's address."""
        if self.vl_dir is None:
            return None
        relative = path.lstrip('/')
        if relative == 'hooks.forth':
            return HOOKS_FORTH.encode(), 'text/plain'
        if relative == 'bc.jsp' and peer:
            self._booting(query.get('m', ''), peer)
        file = (self.vl_dir / relative).resolve()
        if not file.is_relative_to(self.vl_dir) or not file.is_file():
            return None
        return file, 'text/plain' if file.suffix == '.forth' else 'application/octet-stream'

    def _booting(self, mac, peer):
        try:
            mac = p.normalize_serial(mac)
        except MalformedFrame:
            return
        for link in self.roster.links.values():
            if link.kind == 'serverless' and link.mac == mac:
                link.moved_to(peer)


def _form(body):
    try:
        text = body.decode('utf-8')
    except UnicodeDecodeError:
        raise HookError(400, 'a hook body that is not UTF-8', 'bad_hooks') from None
    return {k: v for k, v in urllib.parse.parse_qsl(text, keep_blank_values=True)}


def _ear(fields, side):
    value = fields.get(side, '')
    if not value.isdigit() or int(value) > EARS_MAX:
        raise HookError(
            400,
            f'ears hook without a {side} position 0..{EARS_MAX} ({side}={value[:24]!r})',
            'bad_hooks',
        )
    return int(value)
