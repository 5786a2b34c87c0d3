"""The controller's HTTP front: every request from its first byte to its answer.

A connection starts in ``lane`` (the coordinators' plain requests answered without
aiohttp's per-request machinery) and is handed to ``server`` (aiohttp's HTTP/1.1 with
the API's limits and JSON errors) at its first request that is not plain. Either way
the request reaches ``api``, whose one table says which handler serves which route of
``routes`` (method, path, bodies, answers, as data); the handlers decode and encode
the dataclasses of ``schema`` and call the :class:`~controller.service.service.Service`.
``openapi`` renders the OpenAPI document from ``routes`` and ``schema``; ``ui`` serves
the live fabric page (``ui_page.html``) and its server-sent events; ``coalesce``
gathers single path requests into one decision (``api.coalesce_window``).
"""
