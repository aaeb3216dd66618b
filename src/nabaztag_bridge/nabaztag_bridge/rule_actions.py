"""The bridge's rules in ROS: the rules_file parameter, the reload_rules service, the
rules_fired topic, and each action carried out through what the services already do.

Everything here runs in the executor: events arrive through handle_record, heard text through
on_heard, the time through a timer. A service call is sent and never waited for.
"""

import dataclasses
import pathlib

from rclpy.exceptions import NameValidationException
from rclpy.validate_topic_name import validate_topic_name
from std_srvs.srv import Trigger

from legacy_robot_common.diagnostics import OK, WARN
from legacy_robot_interfaces.msg import RuleFired
from legacy_robot_interfaces.srv import RabbitSay

from . import rules
from .rabbits import UnknownRabbit

LISTENED_TOPICS = ('events', 'rules_fired', 'heard')  # a publish there would loop
TICK_PERIOD = 1.0  # s between looks at the clock for time-of-day rules


@dataclasses.dataclass
class RuleCounters:
    fired: int = 0
    failed_actions: int = 0
    reloads_refused: int = 0
    last_error: str = ''


class NodeRules:
    """node: the bridge. clock: time.time-like, for the time of day (tests inject one).
    The rules are loaded when the bridge listens (configure): media URLs need its address."""

    def __init__(self, node, path, **clocks):
        self.node, self.path = node, path
        self.counters = RuleCounters()
        self.engine = rules.RuleEngine(self._fire, **clocks)
        self.fired_pub = node.publisher(RuleFired, 'rules_fired', 50)
        self._publishers, self._clients = {}, {}
        node.create_service(
            Trigger, 'reload_rules', self._reload_service, callback_group=node.callback_group
        )
        node.create_timer(TICK_PERIOD, self.engine.tick, callback_group=node.callback_group)

    # ---- loading ----------------------------------------------------------------------
    def reload(self):
        """Read and check the rules file; swap it in only when all of it is good.
        Returns the number of rules; RulesError or OSError leave the old rules in force."""
        if not self.path:
            self.engine.load([])
            return 0
        text = pathlib.Path(self.path).read_text(encoding='utf-8')
        own = {self.node.resolve_topic_name(t) for t in LISTENED_TOPICS}
        loaded = rules.load(text, self.node.bridge.media_url, own, self._resolve_name)
        publishers, clients = {}, {}
        for rule in loaded:
            for action in rule.actions:
                if action.kind == 'publish':
                    name, cls, _ = action.value
                    publishers[(name, cls)] = self._publishers.get(
                        (name, cls)
                    ) or self.node.create_publisher(cls, name, 10)
                elif action.kind == 'call':
                    name, cls, _ = action.value
                    clients[(name, cls)] = self._clients.get((name, cls)) or (
                        self.node.create_client(cls, name, callback_group=self.node.callback_group)
                    )
        self._retire(self._publishers, publishers, self.node.destroy_publisher)
        self._retire(self._clients, clients, self.node.destroy_client)
        self._publishers, self._clients = publishers, clients
        self.engine.load(loaded)
        return len(loaded)

    def _resolve_name(self, name, service=False):
        """The full name of a topic or service, ValueError for a name ROS refuses."""
        try:
            validate_topic_name(name, is_service=service)  # resolving a bad name is an RCLError
            if service:
                return self.node.resolve_service_name(name)
            return self.node.resolve_topic_name(name)
        except NameValidationException as exc:
            raise ValueError(str(exc).splitlines()[0].rstrip(':')) from None

    @staticmethod
    def _retire(old, new, destroy):
        for key, entity in old.items():
            if key not in new:
                destroy(entity)

    def _reload_service(self, request, response):
        if not self.node.bridge.connected:
            response.success = False
            response.message = 'the bridge is not configured (lifecycle): it loads the rules then'
            return response
        try:
            count = self.reload()
        except (rules.RulesError, OSError, UnicodeDecodeError) as exc:
            self.counters.reloads_refused += 1
            self.counters.last_error = f'{self.path}: {exc}'
            response.success = False
            response.message = f'{self.path}: {exc} (the old rules stay in force)'
            return response
        response.success, response.message = True, f'{count} rule(s) from {self.path}'
        return response

    # ---- inputs -----------------------------------------------------------------------
    def on_event(self, record):
        """A server.RabbitEvent; a kind no rule listens to costs one dict look-up."""
        if self.engine.listens(record.kind):
            self.engine.on_event(record.serial, record.kind, record.rfid)

    def on_link_event(self, event):
        """A kinds.base.RabbitEvent from a rabbit the bridge calls (not violet)."""
        if event.event == 'intent':
            self.engine.on_intent(event.serial, event.intent)
        elif self.engine.listens(event.event):
            self.engine.on_event(event.serial, event.event, event.rfid)

    def on_heard(self, serial, text):
        """Heard text (the speech recogniser's hook)."""
        self.engine.on_heard(serial, text)

    # ---- firing -----------------------------------------------------------------------
    def _fire(self, firing):
        self.counters.fired += 1
        msg = RuleFired(
            rule=firing.rule.name,
            serial=firing.serial,
            trigger=firing.rule.trigger,
            detail=firing.detail,
        )
        msg.header.stamp = self.node.get_clock().now().to_msg()
        msg.header.frame_id = self.node.frame_id
        self.fired_pub.publish(msg)
        for action in firing.rule.actions:
            try:
                getattr(self, f'_do_{action.kind}')(action, firing)
            except (ValueError, UnknownRabbit) as exc:
                self._failed(firing, action, exc)

    def _failed(self, firing, action, error):
        self.counters.failed_actions += 1
        self.counters.last_error = (
            f'rule {firing.rule.name!r} {action.kind} (line {action.line}): {error}'
        )
        self.node.log.warning(f'rule {firing.rule.name}', self.counters.last_error)

    def _rabbits(self, firing):
        return self.node.roster.select(firing.serial)

    def _each(self, firing, action, command):
        """command(link) → Future on each rabbit; a failure that comes later is counted then."""
        for link in self._rabbits(firing):
            future = command(link)
            future.add_done_callback(
                lambda done: done.exception() and self._failed(firing, action, done.exception())
            )

    def _do_say(self, action, firing):
        request = RabbitSay.Request(serial=firing.serial, text=rules.say_text(action, firing))
        self._rabbits(firing)  # nobody to speak to: counted here, not in the say task

        async def say():
            response = await self.node.speaking.say(request, RabbitSay.Response())
            if not response.success:
                self._failed(firing, action, response.message)

        self.node.executor.create_task(say())

    def _do_play(self, action, firing):
        kind, text = rules.filled(action, firing)
        url = self.node.bridge.media_url(text) if kind == 'media_file' else text
        self._each(firing, action, lambda link: link.play_url(url))

    def _do_ears(self, action, firing):
        self._each(firing, action, lambda link: link.set_ears(*action.value))

    def _do_nose(self, action, firing):
        self._each(firing, action, lambda link: link.set_nose(action.value))

    def _do_choreography(self, action, firing):
        url = self.node.bridge.add_choreography(rules.filled(action, firing))
        self._each(firing, action, lambda link: link.choreography(url))

    def _do_publish(self, action, firing):
        name, cls, message = rules.filled(action, firing)
        self._publishers[(name, cls)].publish(message)

    def _do_call(self, action, firing):
        name, cls, request = rules.filled(action, firing)
        client = self._clients[(name, cls)]
        if not client.service_is_ready():
            raise ValueError(f'service {name} is not available')
        future = client.call_async(request)
        future.add_done_callback(
            lambda done: done.exception() and self._failed(firing, action, done.exception())
        )

    # ---- diagnostics ------------------------------------------------------------------
    def status(self):
        values = dict(dataclasses.asdict(self.counters), rules=len(self.engine.rules))
        values['file'] = self.path or '(none)'
        if self.counters.reloads_refused or self.counters.failed_actions:
            return WARN, f'{len(self.engine.rules)} rules; {self.counters.last_error}', values
        return OK, f'{len(self.engine.rules)} rules', values
