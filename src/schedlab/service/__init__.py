"""The online scheduler as a service (issue 34, items 3-5): ``schedlab serve`` (an HTTP/JSON API
over :class:`schedlab.online.Scheduler`), its durable event log, and ``schedlab replay`` (a client
that drives it from a converted log). See docs/online.md.

Modules: :mod:`.eventlog` (the append-only, fsync'd log and the rebuild from it), :mod:`.schemas`
(the request and response models, published as OpenAPI), :mod:`.app` (the FastAPI application),
:mod:`.prometheus` (the /metrics exposition), :mod:`.replay` (the client).
"""
