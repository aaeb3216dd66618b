"""Action servers whose goals take the robot one at a time (a base's move and turn).

ExclusiveGoals keeps at most one goal running across any number of action servers: a new
goal replaces the running one (aborted, "replaced by a new goal"), a cancel ends it, and the
node ends it from anywhere with a reason (a fault, the link, a velocity command). Its end
travels through the node's reply future, so it arrives in the executor after the callback
that caused it has returned, on the single-threaded and on the events executor alike.
"""

import dataclasses

from rclpy.action import ActionServer, CancelResponse, GoalResponse

SUCCEEDED, ABORTED, CANCELED = 'succeeded', 'aborted', 'canceled'


@dataclasses.dataclass
class Outcome:
    status: str  # SUCCEEDED, ABORTED or CANCELED
    reason: str


class RunningGoal:
    """The goal now moving the robot: its handle, the robot-specific state the starter
    keeps in .state, and end(status, reason): the first call counts."""

    def __init__(self, goal_handle):
        self.goal_handle = goal_handle
        self.state = None
        self.outcome = None
        self._resolve = None

    def end(self, status, reason):
        if self.outcome is None:
            self.outcome = Outcome(status, reason)
            if self._resolve is not None:
                self._resolve(self.outcome)

    def attach(self, resolve):
        self._resolve = resolve
        if self.outcome is not None:
            resolve(self.outcome)

    def feedback(self, msg):
        self.goal_handle.publish_feedback(msg)


class ExclusiveGoals:
    """node: a DriverNode (reply_future, callback_group, active). stop(): sent when a goal is
    cancelled or times out (a replaced goal's successor sends its own commands)."""

    def __init__(self, node, stop):
        self.node = node
        self.stop = stop
        self.current = None

    def add_server(self, action_type, name, start, finish):
        """start(request, running) → (timeout in s, None) after sending the commands (its
        state in running.state), or (None, refusal text) with nothing sent.
        finish(request, running, outcome) → the Result message (success and message are
        filled in from the outcome)."""

        async def execute(goal_handle):
            return await self._execute(goal_handle, start, finish)

        return ActionServer(
            self.node,
            action_type,
            name,
            execute_callback=execute,
            goal_callback=lambda request: GoalResponse.ACCEPT,
            cancel_callback=self._cancel,
            callback_group=self.node.callback_group,
        )

    @property
    def running(self):
        """The goal moving the robot now, or None (none, or its end is on its way)."""
        current = self.current
        return current if current is not None and current.outcome is None else None

    def end(self, status, reason):
        """End the running goal, if any (the caller has already dealt with the robot)."""
        if self.current is not None:
            self.current.end(status, reason)

    async def _execute(self, goal_handle, start, finish):
        running = RunningGoal(goal_handle)
        outcome = await self._run(running, start)
        if self.current is running:
            self.current = None
        result = finish(goal_handle.request, running, outcome)
        result.success = outcome.status == SUCCEEDED
        result.message = outcome.reason
        {SUCCEEDED: goal_handle.succeed, ABORTED: goal_handle.abort}.get(
            outcome.status, goal_handle.canceled
        )()
        return result

    async def _run(self, running, start):
        if not self.node.active:
            return Outcome(ABORTED, 'the driver is not active (lifecycle state)')
        timeout, refusal = start(running.goal_handle.request, running)
        if refusal is not None:
            return Outcome(ABORTED, f'refused, nothing sent: {refusal}')
        previous, self.current = self.current, running
        if previous is not None:
            previous.end(ABORTED, 'replaced by a new goal')
        future, resolve = self.node.reply_future(timeout)
        running.attach(resolve)
        outcome = await future
        if isinstance(outcome, Exception):  # the reply future's TimeoutError
            running.end(ABORTED, f'timed out after {timeout:.1f} s')
            self.stop()
            return running.outcome
        return outcome

    def _cancel(self, goal_handle):
        running = self.current
        if running is None or running.goal_handle is not goal_handle:
            return CancelResponse.REJECT
        self.stop()
        running.end(CANCELED, 'cancelled: the robot was stopped')
        return CancelResponse.ACCEPT
