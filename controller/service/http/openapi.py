"""The API's OpenAPI 3.1 document, built from the route table and the body dataclasses.

:func:`document` walks :data:`routes.ROUTES` (what the server answers, and nothing else)
and turns each route's request and response classes of :mod:`schema` into JSON
Schema (2020-12, which OpenAPI 3.1 uses as is): a dataclass becomes an object
schema with its fields' descriptions and bounds, ``X | None`` a ``type`` list or a
``oneOf`` with ``null``, a ``Literal`` an ``enum``. Nothing here is written by hand but
the titles, so the document follows the code; ``docs/openapi.json`` is this
document, checked in, and a test keeps the two equal::

    .venv/bin/python -c 'from controller.service.http import openapi
    print(openapi.render(), end="")' > docs/openapi.json
"""

from __future__ import annotations

import dataclasses
import json
import types
from collections.abc import Iterable
from typing import Any, Literal, Union, get_args, get_origin

from controller.service.http import schema
from controller.service.http.routes import ROUTES, Route

_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}
_STATUS_TEXT = {
    400: "malformed body, field or query parameter",
    401: "missing or wrong bearer token",
    404: "unknown endpoint, transfer or pin",
    405: "wrong method (the Allow header lists the right ones)",
    409: "conflict with the fabric's state",
    411: "chunked body (send Content-Length)",
    413: "body over 64 KiB",
    422: "a request the engine refuses",
    431: "request head too large",
    502: "the leaf refused the entry",
    503: "not ready, or the backup of a switch the request needs (Retry-After: 1)",
}


def document(routes: Iterable[Route] = ROUTES) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``routes``."""
    components: dict[str, Any] = {}
    paths: dict[str, Any] = {}
    for route in routes:
        operation: dict[str, Any] = {
            "operationId": f"{route.operation}_{route.method.lower()}"
            if route.operation == "set_mode"
            else route.operation,
            "summary": route.summary,
            "responses": {},
        }
        if route.parameters or route.query:
            operation["parameters"] = [
                {"name": n, "in": "path", "required": True,
                 "schema": {"type": "string", "pattern": schema.ID_PATTERN}}
                for n in route.parameters
            ] + [
                {"name": q.name, "in": "query", "required": False, "description": q.description,
                 "schema": {"type": "integer", "minimum": q.minimum, "maximum": q.maximum,
                            "default": q.default}}
                for q in route.query
            ]  # fmt: skip
        if route.body is not None:
            operation["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": _ref(route.body, components)}},
            }
        for status, (cls, text) in route.answers.items():
            answer: dict[str, Any] = {"description": text}
            if cls is not None:
                answer["content"] = {route.content_type: {"schema": _ref(cls, components)}}
            else:
                free = "string" if route.content_type != "application/json" else "object"
                answer["content"] = {route.content_type: {"schema": {"type": free}}}
            operation["responses"][str(status)] = answer
        for status in route.errors():
            operation["responses"][str(status)] = {
                "description": _STATUS_TEXT[status],
                "content": {"application/json": {"schema": _ref(schema.ErrorBody, components)}},
            }
        if not route.authorised:
            operation["security"] = []
        paths.setdefault(route.path, {})[route.method.lower()] = operation
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "kvfabric controller API",
            "version": "1",
            "description": "Paths for KV-cache transfers on a leaf-spine fabric; see docs/api.md.",
        },
        "paths": paths,
        "components": {
            "schemas": dict(sorted(components.items())),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
    }


def _ref(cls: type, components: dict[str, Any]) -> dict[str, Any]:
    name = cls.__name__
    if name not in components:
        components[name] = {}  # placeholder first: a class may refer to itself
        components[name] = _object(cls, components)
    return {"$ref": f"#/components/schemas/{name}"}


def _object(cls: type, components: dict[str, Any]) -> dict[str, Any]:
    hints = schema.hints_of(cls)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for f in dataclasses.fields(cls):
        meta = dict(f.metadata)
        prop = _type(hints[f.name], components)
        prop.update(_bounds(prop, meta))
        properties[f.name] = prop
        if f.default is dataclasses.MISSING:
            required.append(f.name)
    out: dict[str, Any] = {
        "type": "object",
        "description": (cls.__doc__ or "").strip().splitlines()[0],
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        out["required"] = required
    return out


def _bounds(prop: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    """The metadata's keywords that apply to ``prop``'s type(s), description first."""
    kinds = prop.get("type", [])
    kinds = [kinds] if isinstance(kinds, str) else kinds
    out = {"description": meta.pop("description")}
    for key, value in meta.items():
        numeric = key in ("minimum", "maximum", "exclusiveMinimum")
        sized = key in ("minLength", "maxLength")
        if (numeric and {"integer", "number"} & set(kinds)) or (sized and "string" in kinds):
            out[key] = value
        elif sized and "array" in kinds:
            out[key.replace("Length", "Items")] = value
        elif key in ("pattern", "enum") and "string" in kinds:
            out[key] = value
        elif numeric and "oneOf" in prop:  # a union: bound its numeric member
            for member in prop["oneOf"]:
                if member.get("type") in ("integer", "number"):
                    member[key] = value
    return out


def _type(tp: Any, components: dict[str, Any]) -> dict[str, Any]:
    origin = get_origin(tp)
    if tp in _JSON_TYPES:
        return {"type": _JSON_TYPES[tp]}
    if tp is type(None):
        return {"type": "null"}
    if origin is Literal:
        return {"type": "string", "enum": list(get_args(tp))}
    if origin is list:
        (item,) = get_args(tp)
        return {"type": "array", "items": _type(item, components)}
    if origin is dict:
        _key, value = get_args(tp)
        return {"type": "object", "additionalProperties": _type(value, components)}
    if origin in (Union, types.UnionType):
        members = [_type(a, components) for a in get_args(tp)]
        simple = [m for m in members if set(m) == {"type"}]
        if len(simple) == len(members):
            return {"type": [m["type"] for m in members]}
        return {"oneOf": members}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _ref(tp, components)
    raise TypeError(f"no JSON Schema for {tp!r}")


def render() -> str:
    """The document as ``docs/openapi.json`` holds it."""
    return json.dumps(document(), indent=2) + "\n"
