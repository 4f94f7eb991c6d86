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
path = pathlib.Path(__file__).resolve().parent.parent / "format-spec" / "test-vectors.json"
path.write_text(json.dumps(out, indent=1) + "\n")
print(f"wrote {path}")
