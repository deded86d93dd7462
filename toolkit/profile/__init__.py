"""The service profile: every choice the spec leaves unshown (sign-in, identity, routes,
list items, payload shapes, texts, codes, limits) as data both the client and simulator take.

May import ``toolkit.errors``, ``toolkit.protocol`` and ``toolkit._atomic`` (the file it
writes) only; standard library otherwise."""

from __future__ import annotations

from toolkit.profile._model import (
    DEFAULT_PROFILE,
    SECTIONS,
    Listing,
    Orders,
    Payloads,
    Rest,
    ServiceProfile,
    Signin,
    Stream,
)
from toolkit.profile._paths import (
    EACH,
    ID_CANDIDATES,
    find_field,
    get_items,
    get_path,
    has_path,
    item_field,
    keyed_container,
    set_path,
)
from toolkit.profile._toml import dump_profile, dumps_profile, load_profile, profile_from_env

__all__ = [
    "DEFAULT_PROFILE",
    "EACH",
    "ID_CANDIDATES",
    "SECTIONS",
    "Listing",
    "Orders",
    "Payloads",
    "Rest",
    "ServiceProfile",
    "Signin",
    "Stream",
    "dump_profile",
    "dumps_profile",
    "find_field",
    "get_items",
    "get_path",
    "has_path",
    "item_field",
    "keyed_container",
    "load_profile",
    "profile_from_env",
    "set_path",
]
