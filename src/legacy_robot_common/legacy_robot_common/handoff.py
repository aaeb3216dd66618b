"""Work handed from other threads (a driver's link threads, the Foxglove server's) to the
thread of a node's executor, where rclpy's entities are made, used and destroyed.

Items go on a queue; the first of a burst gives the executor one task that drains the queue
(executor.create_task, which both executors take from any thread: each wake-up of an executor
costs CPU). Items handed over before the node is in an executor wait on the queue and are
handed over when it is added (the node's executor setter): dropping them instead made the
Foxglove relay relay nothing to a client that subscribed while bringup was still starting.
"""

import queue
import threading

from rclpy.exceptions import InvalidHandle
from rclpy.node import Node


class ExecutorHandoff:
    """A mixin before rclpy's Node (or LifecycleNode): call init_handoff() in __init__
    before anything may hand off, hand_off(item) from any thread, implement
    handle_handoff(item) (run in the executor's thread) and call close_handoff() when the node
    is destroyed."""

    def init_handoff(self):
        self._handoff = queue.SimpleQueue()
        self._handoff_pending = threading.Event()  # a drain task is on its way
        self._handoff_closed = False

    def hand_off(self, item):
        self._handoff.put(item)
        if self._handoff_pending.is_set():
            return
        self._handoff_pending.set()
        self._schedule_handoff()

    def close_handoff(self):
        """The node is going: a drain task still queued finds nothing to do."""
        self._handoff_closed = True

    def handle_handoff(self, item):
        raise NotImplementedError

    def _schedule_handoff(self):
        executor = self.executor
        if executor is None or self._handoff_closed:
            # the executor setter hands the queue over; the item was put before this look,
            # so a setter running now sees it
            self._handoff_pending.clear()
            return
        try:
            executor.create_task(self._drain_handoff)
        except (RuntimeError, InvalidHandle):
            pass  # the executor is shut down: a late item has nowhere to go

    @property
    def executor(self):
        return Node.executor.fget(self)

    @executor.setter
    def executor(self, new_executor):
        Node.executor.fset(self, new_executor)
        if new_executor is not None and not self._handoff.empty():
            self._handoff_pending.set()
            self._schedule_handoff()

    def _drain_handoff(self):
        self._handoff_pending.clear()  # before draining: an item put from now on wakes us again
        while not self._handoff_closed:
            try:
                item = self._handoff.get_nowait()
            except queue.Empty:
                return
            self.handle_handoff(item)
