"""Variables typed or pasted by hand: whitespace around every TOOLKIT_* value is dropped,
and an API key or secret with whitespace or a control character inside is refused naming
its position, never the value."""

from __future__ import annotations

import pytest

from toolkit.client._settings import Settings
from toolkit.errors import InvalidRequest

SECRET = "s3cr3t-Value/with+signs"


def test_whitespace_around_every_variable_is_dropped() -> None:
    s = Settings.from_env(
        {
            "TOOLKIT_ENV": " sandbox\n",
            "TOOLKIT_BASE_URL": "https://sandbox.example.com/api \n",
            "TOOLKIT_WS_URL": "\twss://ws.sandbox.example.com\r\n",
            "TOOLKIT_API_KEY": "key-12345678 ",
            "TOOLKIT_API_SECRET": f"{SECRET}\n",
            "TOOLKIT_PROFILE_ID": " P7\n",
        }
    )
    assert (s.api_key, s.api_secret, s.profile_id) == ("key-12345678", SECRET, "P7")
    assert s.ws_url == "wss://ws.sandbox.example.com"


def test_a_blank_variable_is_unset() -> None:
    s = Settings.from_env(
        {"TOOLKIT_ENV": "local", "TOOLKIT_API_KEY": " \n", "TOOLKIT_PROFILE": " "}
    )
    assert s.api_key is None


def test_keys_given_in_python_are_stripped_too() -> None:
    s = Settings("http://127.0.0.1:1", api_key=" demo\n", api_secret="demo-secret\n")
    assert (s.api_key, s.api_secret) == ("demo", "demo-secret")


@pytest.mark.parametrize(
    ("secret", "what"),
    [
        ("s3cr3t Value", "a space at character 7 of 12"),
        ("s3cr3t\nValue", "a line break at character 7 of 12"),
        ("s3cr3t\tValue", "a tab at character 7 of 12"),
        ("s3cr3t\x00Value", "U+0000 at character 7 of 12"),
        ("\u200bs3cr3tValue", "U+200B at character 1 of 12"),
    ],
)
def test_a_secret_with_whitespace_inside_is_refused_without_showing_it(
    secret: str, what: str
) -> None:
    env = {"TOOLKIT_ENV": "local", "TOOLKIT_API_KEY": "demo", "TOOLKIT_API_SECRET": secret}
    with pytest.raises(InvalidRequest) as exc:
        Settings.from_env(env)
    message = str(exc.value)
    assert "api_secret (TOOLKIT_API_SECRET) holds " + what in message
    for part in ("s3cr3t", "Value"):
        assert part not in message and part not in repr(exc.value)
    assert exc.value.__cause__ is None and exc.value.__context__ is None


def test_a_key_with_a_space_inside_is_refused_by_name() -> None:
    with pytest.raises(InvalidRequest, match=r"api_key \(TOOLKIT_API_KEY\) holds a space"):
        Settings("http://127.0.0.1:1", api_key="de mo")


def test_the_token_auth_built_by_hand_reads_them_the_same_way() -> None:
    from toolkit.client._auth import TokenAuth

    auth = TokenAuth(" demo\n", "demo-secret\r\n", "http://127.0.0.1:1")
    assert "demo-secret\r\n" not in vars(auth).values()
    assert auth._api_key == "demo" and auth._api_secret == "demo-secret"
    with pytest.raises(InvalidRequest, match="holds a space at character 5 of 11") as exc:
        TokenAuth("demo", "demo secret", "http://127.0.0.1:1")
    assert "demo secret" not in str(exc.value)
