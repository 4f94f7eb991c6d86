#!/usr/bin/env python3
"""Write format-spec/test-vectors.json from the format spec alone.

This is an independent implementation of keys.md and blob-log.md (Python's hashlib and
zlib, no engram code), so the Rust test that checks engram against its output checks
the code against the spec, not against itself.
"""
import hashlib, json, struct, zlib, pathlib

def hash64(key: str) -> int:
    d = hashlib.blake2b(key.encode(), digest_size=8, person=b"galaxybrain".ljust(16, b"\0")).digest()
    return struct.unpack("<Q", d)[0]

def record(kind, key_hash, seq, ts, meta: bytes, body: bytes, flags=0):
    head = b"EREC" + struct.pack("<BBHQQQII", 1, kind, flags, key_hash, seq, ts, len(meta), len(body)) + b"\0\0\0\0"
    crc = zlib.crc32(head + meta + body)
    rec = head + struct.pack("<I", crc) + meta + body
    rec += b"\0" * (-len(rec) % 8)
    return rec, crc

def file_header(generation, store_id: bytes, created_ms):
    h = b"ENGRBLOB" + struct.pack("<IIQ", 1, 64, generation) + store_id + struct.pack("<Q", created_ms) + b"\0" * 12
    return h + struct.pack("<I", zlib.crc32(h))

TS = 1700000000000
keys = ["file:src/main.py", "sym:src/main.py#foo:function:10:20", "chunk:src/main.py:0", "mem:a1b2c3d4",
        "task:debug", "pat:security-smells", "", "mem:ffffffff", "file:" + "a" * 300]
out = {"hash64": [{"key": k, "hash64": str(hash64(k))} for k in keys], "records": []}

def add(name, kind, key, seq, meta, body):
    kh = hash64(key) if key is not None else 0
    rec, crc = record(kind, kh, seq, TS, meta, body)
    out["records"].append({"name": name, "kind": kind, "key_hash": str(kh), "seq": seq, "timestamp_ms": TS,
                           "meta": meta.decode(), "body_hex": body.hex(), "crc": crc, "hex": rec.hex()})
    return rec, crc

put, put_crc = add("put", 1, "mem:a1b2c3d4", 1, b'{"key":"mem:a1b2c3d4","type":"memory"}', b"hello")
commit_body = struct.pack("<QQIIQ", 64, 0, 1, zlib.crc32(struct.pack("<I", put_crc)), 1)
commit, _ = add("commit", 3, None, 2, b"", commit_body)
tomb, tomb_crc = add("tombstone", 2, "mem:a1b2c3d4", 3, b"", b"")
vec_body = struct.pack("<3f", 1.0, -0.5, 0.25)
add("vector", 4, "file:src/main.py", 4, b'{"dim":3,"embedder":"test","key":"file:src/main.py"}', vec_body)

header = file_header(1, bytes(range(16)), TS)
second_commit = record(3, 0, 4, TS, b"", struct.pack("<QQIIQ", 64 + len(put) + len(commit), 64 + len(put),
                                                      1, zlib.crc32(struct.pack("<I", tomb_crc)), 3))[0]
out["files"] = [
    {"name": "one batch: mem:a1b2c3d4 = hello", "live": {"mem:a1b2c3d4": "hello"},
     "hex": (header + put + commit).hex()},
    {"name": "two batches: put then tombstone", "live": {},
     "hex": (header + put + commit + tomb + second_commit).hex()},
]
out["file_header"] = {"generation": 1, "store_id_hex": bytes(range(16)).hex(), "created_ms": TS, "hex": header.hex()}

# encryption.md: a sealed vector record. XChaCha20-Poly1305 is HChaCha20 (written out
# here from draft-irtf-cfrg-xchacha-03) plus RFC 8439's ChaCha20-Poly1305, which the
# `cryptography` package provides.
def hchacha20(key: bytes, nonce16: bytes) -> bytes:
    mask = 0xffffffff
    def rotl(v, n): return ((v << n) & mask) | (v >> (32 - n))
    def qr(x, a, b, c, d):
        x[a] = (x[a] + x[b]) & mask; x[d] = rotl(x[d] ^ x[a], 16)
        x[c] = (x[c] + x[d]) & mask; x[b] = rotl(x[b] ^ x[c], 12)
        x[a] = (x[a] + x[b]) & mask; x[d] = rotl(x[d] ^ x[a], 8)
        x[c] = (x[c] + x[d]) & mask; x[b] = rotl(x[b] ^ x[c], 7)
    x = list(struct.unpack("<4I", b"expand 32-byte k") + struct.unpack("<8I", key) + struct.unpack("<4I", nonce16))
    for _ in range(10):
        qr(x, 0, 4, 8, 12); qr(x, 1, 5, 9, 13); qr(x, 2, 6, 10, 14); qr(x, 3, 7, 11, 15)
        qr(x, 0, 5, 10, 15); qr(x, 1, 6, 11, 12); qr(x, 2, 7, 8, 13); qr(x, 3, 4, 9, 14)
    return struct.pack("<8I", *(x[0:4] + x[12:16]))

def xchacha20poly1305_seal(key: bytes, nonce24: bytes, msg: bytes, aad: bytes) -> bytes:
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
    sub = hchacha20(key, nonce24[:16])
    return ChaCha20Poly1305(sub).encrypt(b"\0" * 4 + nonce24[16:], msg, aad)

# draft-irtf-cfrg-xchacha-03, A.3.1: the construction above must reproduce it.
_k = bytes(range(0x80, 0xa0)); _n = bytes(range(0x40, 0x58))
_aad = bytes.fromhex("50515253c0c1c2c3c4c5c6c7")
_pt = b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it."
assert xchacha20poly1305_seal(_k, _n, _pt, _aad)[-16:].hex() == "c0875924c1c7987947deafd8780acf49", "XChaCha20-Poly1305 self-check"

SEAL_KEY = bytes(range(32))
SEAL_NONCE = bytes(range(0x40, 0x58))
seal_key_id = hashlib.blake2b(b"engram vector key id v1\0" + SEAL_KEY, digest_size=8).hexdigest()
seal_vec = struct.pack("<3f", 1.0, -0.5, 0.25)
seal_seq, seal_key, seal_embedder = 5, "file:src/main.py", "test"
seal_aad = b"engram sealed vector v1\0" + struct.pack("<QQI", hash64(seal_key), seal_seq, 3) + seal_embedder.encode()
seal_body = SEAL_NONCE + xchacha20poly1305_seal(SEAL_KEY, SEAL_NONCE, seal_vec, seal_aad)
seal_meta = json.dumps({"dim": 3, "embedder": seal_embedder, "key": seal_key, "key_id": seal_key_id}, separators=(",", ":")).encode()
seal_rec, seal_crc = record(4, hash64(seal_key), seal_seq, TS, seal_meta, seal_body, flags=0x0100)
out["sealed_vector"] = {
    "store_key_hex": SEAL_KEY.hex(), "key_id": seal_key_id, "nonce_hex": SEAL_NONCE.hex(),
    "vector": [1.0, -0.5, 0.25], "key": seal_key, "key_hash": str(hash64(seal_key)), "seq": seal_seq,
    "embedder": seal_embedder, "timestamp_ms": TS, "flags": 0x0100, "meta": seal_meta.decode(),
    "aad_hex": seal_aad.hex(), "body_hex": seal_body.hex(), "crc": seal_crc, "hex": seal_rec.hex(),
}
path = pathlib.Path(__file__).resolve().parent.parent / "format-spec" / "test-vectors.json"
path.write_text(json.dumps(out, indent=1) + "\n")
print(f"wrote {path}")
