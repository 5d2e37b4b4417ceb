"""Flips one byte in the middle of a named section of a kfuse package.

    corrupt_section.py PACKAGE SECTION OUT

The section is found from the package's own table (runtime/package/
container.h: a 24-byte header, then 56-byte entries of a 32-byte name, u64
offset, u64 size, u32 CRC-32 and u32 reserved), so the byte lands in that
section whatever the package's layout on this machine.
"""
import struct
import sys

path, section, out = sys.argv[1:4]
data = bytearray(open(path, "rb").read())
(count,) = struct.unpack_from("<I", data, 12)
for i in range(count):
    entry = 24 + 56 * i
    name = data[entry:entry + 32].rstrip(b"\0").decode()
    offset, size = struct.unpack_from("<QQ", data, entry + 32)
    if name == section:
        assert size > 0, f"section {section} is empty"
        data[offset + size // 2] ^= 0x20
        open(out, "wb").write(data)
        sys.exit(0)
sys.exit(f"{path} has no section {section!r}")
