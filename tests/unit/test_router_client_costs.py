"""What RouterClient does to be quick with a big list: the collector paused around a big decode (and always given
back), and the CA bundle loaded only for an https router."""

from __future__ import annotations

import gc
import ssl

import pytest

from app.services.router.client import BIG_ANSWER, _collector_paused, _tls_for


def test_a_big_answer_is_decoded_with_the_collector_paused_and_it_is_enabled_again() -> None:
    assert gc.isenabled()
    with _collector_paused(BIG_ANSWER):
        assert not gc.isenabled()
    assert gc.isenabled()


def test_the_collector_is_enabled_again_when_the_decode_fails() -> None:
    with pytest.raises(ValueError), _collector_paused(BIG_ANSWER):
        raise ValueError("garbage")
    assert gc.isenabled()


def test_a_small_answer_leaves_the_collector_alone() -> None:
    with _collector_paused(BIG_ANSWER - 1):
        assert gc.isenabled()


def test_a_collector_someone_else_turned_off_stays_off() -> None:
    gc.disable()
    try:
        with _collector_paused(BIG_ANSWER):
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_plain_http_router_gets_no_ca_bundle_and_would_refuse_any_certificate() -> None:
    ctx = _tls_for("http://127.0.0.1:8080")
    assert ctx.cert_store_stats()["x509_ca"] == 0
    assert ctx.verify_mode is ssl.CERT_REQUIRED
    assert ctx.check_hostname


def test_an_https_router_gets_the_ca_bundle() -> None:
    ctx = _tls_for("https://router.example:8443")
    assert ctx.verify_mode is ssl.CERT_REQUIRED
    assert ctx.cert_store_stats()["x509_ca"] > 0
