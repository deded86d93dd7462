"""What a failed sign-in says: the error of each refusal, naming the profile setting that
is its likely cause, and how many tries a busy sign-in gets."""

from __future__ import annotations

from typing import Any

from toolkit.errors import (
    AuthenticationError,
    RateLimited,
    ServiceError,
    ServiceUnavailable,
    ToolkitError,
)
from toolkit.profile import Signin

#: sign-in answers worth another try (the service busy or its gateway failing), and how
#: many tries a sign-in gets before the last answer's error is raised
TRANSIENT_SIGNIN_STATUSES = frozenset({429, 502, 503, 504})
SIGNIN_ATTEMPTS = 5


def signin_failure(status: int, text: str, signin: Signin, where: dict[str, Any]) -> ToolkitError:
    """The error of a failed sign-in that is not "bad credentials", naming the setting that
    is the likely cause."""
    if status in (404, 405):
        return ServiceError(
            f"sign-in failed: HTTP {status} at {signin.path}; if the service signs in "
            "elsewhere, set the profile's signin.path",
            body=text,
            **where,
        )
    if status in (400, 422):
        return ServiceError(
            f"sign-in failed: HTTP {status}, the service refused the request; check the "
            f"profile's signin.key_field ({signin.key_field!r}) and signin.secret_field "
            f"({signin.secret_field!r})",
            body=text,
            **where,
        )
    if status in (401, 403):
        return AuthenticationError(
            f"sign-in refused with HTTP {status} (not among the profile's "
            f"signin.bad_credentials_statuses {list(signin.bad_credentials_statuses)})",
            body=text,
            **where,
        )
    if status == 429:
        return RateLimited(
            f"sign-in rate limited (HTTP 429) after {SIGNIN_ATTEMPTS} tries", body=text, **where
        )
    if status >= 500:
        return ServiceUnavailable(
            f"sign-in failed: HTTP {status} after "
            f"{SIGNIN_ATTEMPTS if status in TRANSIENT_SIGNIN_STATUSES else 1} tries",
            body=text,
            **where,
        )
    return ServiceError(f"sign-in failed: HTTP {status}", body=text, **where)
