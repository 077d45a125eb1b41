"""The secure source's generator (issue 23): AES-256-CTR expansion of a fresh OS key per large
request, ``os.urandom`` otherwise, and the ``LDP_PLUGIN_RANDOM`` switch."""

import numpy as np
import pytest
from scipy import stats

from ldp_plugin.sampling import SecureRandomSource, cipher

ALPHA = 1e-6


def test_large_requests_are_the_aes_ctr_keystream_of_a_fresh_os_key(monkeypatch):
    pytest.importorskip("cryptography")
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    monkeypatch.setenv("LDP_PLUGIN_RANDOM", "aes")
    keys = []
    real = cipher.os.urandom

    def urandom(n):
        keys.append(real(n))
        return keys[-1]

    monkeypatch.setattr(cipher.os, "urandom", urandom)
    n = cipher.CIPHER_MIN + 37
    a = cipher.secure_bytes(n)
    b = cipher.secure_bytes(n)
    assert len(keys) == 2 and all(len(k) == 32 for k in keys) and keys[0] != keys[1]  # one fresh key per request
    # counter mode from block 0: block i of the output is AES_k(i) (independent ECB check)
    ecb = Cipher(algorithms.AES(keys[0]), modes.ECB()).encryptor()
    blocks = b"".join(i.to_bytes(16, "big") for i in range((n + 15) // 16))
    assert a.tobytes() == ecb.update(blocks)[:n]
    assert not np.array_equal(a, b)
    # small requests go to os.urandom itself
    keys.clear()
    assert cipher.secure_bytes(100).size == 100 and len(keys) == 1 and len(keys[0]) == 100


def test_secure_source_bytes_are_uniform_on_both_backends(monkeypatch):
    for backend in ("os", "auto"):
        monkeypatch.setenv("LDP_PLUGIN_RANDOM", backend)
        src = SecureRandomSource()
        data = src.random_bytes(1 << 21)  # large: split over threads
        counts = np.bincount(data, minlength=256)
        assert stats.chisquare(counts).pvalue > ALPHA
        assert stats.chisquare(np.bincount(src._worker_bytes(1 << 18), minlength=256)).pvalue > ALPHA
        # power: the same test fails when 0.1% of the bytes are stuck at one value
        biased = data.copy()
        biased[:2000] = 7
        assert stats.chisquare(np.bincount(biased, minlength=256)).pvalue < ALPHA


def test_backend_switch(monkeypatch):
    monkeypatch.setenv("LDP_PLUGIN_RANDOM", "os")
    assert SecureRandomSource().backend == "os.urandom"
    monkeypatch.setenv("LDP_PLUGIN_RANDOM", "bogus")
    with pytest.raises(ValueError, match="auto, os, aes"):
        cipher.random_backend()
    monkeypatch.setenv("LDP_PLUGIN_RANDOM", "auto")
    monkeypatch.setitem(cipher._STATE, "aes", None)  # cryptography unavailable
    assert cipher.random_backend() == "os.urandom"
    assert cipher.secure_bytes(cipher.CIPHER_MIN * 2).size == cipher.CIPHER_MIN * 2
    monkeypatch.setenv("LDP_PLUGIN_RANDOM", "aes")
    with pytest.raises(ImportError, match=r"ldp-plugin\[fast\]"):
        cipher.random_backend()
