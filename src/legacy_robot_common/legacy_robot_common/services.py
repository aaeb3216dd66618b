"""Services built from a table: each row names a service, its type and the one client call
its request turns into; the node registers the table with create_services().

Two kinds of answer, one per kind of client command:
- sent_handler: the call returns as soon as the command is on its way (P2OS); success says
  so, or the call's error text.
- reply_handler: the call starts a request and hands the client a resolve callback (iPaq);
  the handler awaits the reply without blocking the executor.
"""

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    """A service that only translates its request into one client call.

    call: request → the client's result (sent_handler), or (request, resolve) → None
    (reply_handler). done: the success text, or request → text; None: '<result> sent'.
    then: request → None, run after success (e.g. remember what the user asked for).
    """

    name: str
    srv_type: type
    call: Callable
    done: str | Callable | None = None
    then: Callable | None = None

    def success_text(self, request, result=None):
        if self.done is None:
            return f'{result} sent'
        return self.done(request) if callable(self.done) else self.done


def sent_handler(row, errors):
    """A synchronous handler: row.call(request); errors are the exceptions that answer failure."""

    def handle(request, response):
        try:
            result = row.call(request)
        except errors as exc:
            response.success, response.message = False, str(exc)
            return response
        response.success, response.message = True, row.success_text(request, result)
        if row.then is not None:
            row.then(request)
        return response

    return handle


def reply_handler(node, row, timeout):
    """An async handler: row.call(request, resolve), the reply awaited up to timeout() s."""

    async def handle(request, response):
        _reply, error = await node.await_reply(
            lambda resolve: row.call(request, resolve), timeout()
        )
        response.success = error is None
        response.message = error or row.success_text(request)
        if row.then is not None and error is None:
            row.then(request)
        return response

    return handle


def create_services(node, services):
    """services: (srv_type, name, handler) triples, created in the node's callback group."""
    for srv_type, name, handler in services:
        node.create_service(srv_type, name, handler, callback_group=node.callback_group)
