"""HTTP/1.1 for doors on h11: records, error shape, router, limits, the trio server loop, client framing."""

from doors._http._client_conn import ClientConnection, ClientResponse, ResponseProtocolError, encode_body
from doors._http._limits import Limits
from doors._http._records import (
    ERROR_STATUSES,
    BodyStream,
    Request,
    Response,
    error_response,
    json_body,
    json_of,
    json_response,
    refused_response,
)
from doors._http._router import Handler, Route, Router, TakeoverHandler, TakeoverRoute
from doors._http._serve import serve_http
from doors._http._server_conn import ServerConnection
from doors._http._takeover import ReplayStream

__all__ = [
    "ERROR_STATUSES",
    "BodyStream",
    "ClientConnection",
    "ClientResponse",
    "Handler",
    "Limits",
    "ReplayStream",
    "Request",
    "Response",
    "ResponseProtocolError",
    "Route",
    "Router",
    "ServerConnection",
    "TakeoverHandler",
    "TakeoverRoute",
    "encode_body",
    "error_response",
    "json_body",
    "json_of",
    "json_response",
    "refused_response",
    "serve_http",
]
