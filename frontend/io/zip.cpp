// The zip format as in PKWARE's APPNOTE.TXT (6.3): local headers, the
// central directory, the end-of-central-directory record, and the Zip64
// extra field (id 1), end record and locator.
#include "frontend/io/zip.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "ir/support/strings.h"

namespace kfuse::io {

namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50, kZip64LocatorSig = 0x07064b50;
constexpr uint64_t kMax16 = 0xFFFF, kMax32 = 0xFFFFFFFF;
constexpr size_t kLocalSize = 30, kCentralSize = 46, kEndSize = 22, kZip64EndSize = 56, kLocatorSize = 20;
// zlib counts in 32-bit uInt: feed it at most this much at a time.
constexpr uint64_t kZlibChunk = uint64_t{1} << 30;

// Bounds-checked little-endian reads.
class Bytes {
 public:
  explicit Bytes(std::string_view b) : b_(b) {}
  bool has(uint64_t off, uint64_t n) const { return off <= b_.size() && n <= b_.size() - off; }
  uint64_t size() const { return b_.size(); }
  uint64_t le(uint64_t off, int n) const {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(b_[off + static_cast<uint64_t>(i)]);
    return v;
  }
  std::string_view slice(uint64_t off, uint64_t n) const { return b_.substr(off, n); }

 private:
  std::string_view b_;
};

struct Entry {
  std::string name;
  uint64_t flags = 0, method = 0, crc = 0, csize = 0, usize = 0, offset = 0;
};

struct Directory {
  uint64_t entries = 0, size = 0, offset = 0;
  uint64_t end = 0;  // position of the end record
};

Expected<Directory> findDirectory(const Bytes& b, const std::string& path) {
  auto fail = [&](const std::string& m) { return Error(str("zip archive '", path, "': ", m)); };
  if (b.size() < kEndSize) return fail("too short to be a zip archive");
  // The end record sits at the end, followed only by its comment (< 64 KiB).
  uint64_t lowest = b.size() > kEndSize + kMax16 ? b.size() - kEndSize - kMax16 : 0;
  for (uint64_t pos = b.size() - kEndSize + 1; pos-- > lowest;) {
    if (b.le(pos, 4) != kEndSig || pos + kEndSize + b.le(pos + 20, 2) > b.size()) continue;
    Directory d{b.le(pos + 10, 2), b.le(pos + 12, 4), b.le(pos + 16, 4), pos};
    uint64_t disk = b.le(pos + 4, 2), cdDisk = b.le(pos + 6, 2);
    if ((disk != 0 && disk != kMax16) || (cdDisk != 0 && cdDisk != kMax16))
      return fail("multi-disk archives are not supported");
    if (d.entries != kMax16 && d.size != kMax32 && d.offset != kMax32) return d;
    // Zip64: the locator right before the end record points to the Zip64 end record.
    if (pos < kLocatorSize || b.le(pos - kLocatorSize, 4) != kZip64LocatorSig)
      return fail("the end record needs Zip64 values, but the Zip64 locator is missing");
    uint64_t z = b.le(pos - kLocatorSize + 8, 8);
    if (!b.has(z, kZip64EndSize) || b.le(z, 4) != kZip64EndSig) return fail("the Zip64 end record is damaged");
    d.entries = b.le(z + 32, 8);
    d.size = b.le(z + 40, 8);
    d.offset = b.le(z + 48, 8);
    return d;
  }
  return fail("no end-of-central-directory record (not a zip archive, or truncated)");
}

// Zip64 values (id 1) for the fields whose 32-bit value is 0xFFFFFFFF, in
// the order usize, csize, offset.
Status readZip64Extra(const Bytes& b, uint64_t pos, uint64_t len, Entry& e, const std::string& what) {
  uint64_t end = pos + len;
  while (pos + 4 <= end) {
    uint64_t id = b.le(pos, 2), size = b.le(pos + 2, 2);
    if (pos + 4 + size > end) break;
    if (id == 1) {
      uint64_t at = pos + 4;
      for (uint64_t* field : {&e.usize, &e.csize, &e.offset}) {
        if (*field != kMax32) continue;
        if (at + 8 > pos + 4 + size) return Error(str(what, ": Zip64 extra field is too short"));
        *field = b.le(at, 8);
        at += 8;
      }
      return Status::ok();
    }
    pos += 4 + size;
  }
  if (e.usize == kMax32 || e.csize == kMax32 || e.offset == kMax32)
    return Error(str(what, ": sizes need a Zip64 extra field, which is missing"));
  return Status::ok();
}

Expected<std::vector<Entry>> readDirectory(const Bytes& b, const Directory& d, const std::string& path) {
  auto fail = [&](const std::string& m) { return Error(str("zip archive '", path, "': ", m)); };
  if (!b.has(d.offset, d.size) || d.offset + d.size > d.end) return fail("the central directory is out of bounds");
  if (d.entries > d.size / kCentralSize) return fail(str("the central directory cannot hold ", d.entries, " entries"));
  std::vector<Entry> out;
  uint64_t pos = d.offset, end = d.offset + d.size;
  for (uint64_t i = 0; i < d.entries; ++i) {
    if (pos + kCentralSize > end || b.le(pos, 4) != kCentralSig) return fail(str("central directory entry ", i, " is damaged"));
    uint64_t nameLen = b.le(pos + 28, 2), extraLen = b.le(pos + 30, 2), commentLen = b.le(pos + 32, 2);
    if (pos + kCentralSize + nameLen + extraLen + commentLen > end) return fail(str("central directory entry ", i, " is truncated"));
    Entry e;
    e.flags = b.le(pos + 8, 2);
    e.method = b.le(pos + 10, 2);
    e.crc = b.le(pos + 16, 4);
    e.csize = b.le(pos + 20, 4);
    e.usize = b.le(pos + 24, 4);
    e.offset = b.le(pos + 42, 4);
    e.name = std::string(b.slice(pos + kCentralSize, nameLen));
    KF_RETURN_IF_ERROR(readZip64Extra(b, pos + kCentralSize + nameLen, extraLen, e,
                                      str("zip archive '", path, "': member '", e.name, "'")));
    out.push_back(std::move(e));
    pos += kCentralSize + nameLen + extraLen + commentLen;
  }
  return out;
}

// Raw deflate (no zlib header) of exactly `size` bytes.
Expected<std::string> inflateRaw(std::string_view in, uint64_t size, const std::string& what) {
  // Deflate expands at most 1032:1; a larger claim is a damaged header.
  if (size > in.size() * 1032 + 64) return Error(str(what, ": claims ", size, " bytes from ", in.size(), " compressed"));
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) return Error(str(what, ": cannot start zlib"));
  std::string out(size, '\0');
  // zlib refuses a null output pointer even when there is nothing to write.
  char none = 0;
  z.next_out = reinterpret_cast<Bytef*>(size ? out.data() : &none);
  uint64_t inPos = 0, outPos = 0;
  int rc = Z_OK;
  while (rc == Z_OK) {
    if (z.avail_in == 0 && inPos < in.size()) {
      uint64_t n = std::min(in.size() - inPos, kZlibChunk);
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + inPos));
      z.avail_in = static_cast<uInt>(n);
      inPos += n;
    }
    if (z.avail_out == 0 && outPos < size) {
      uint64_t n = std::min(size - outPos, kZlibChunk);
      z.next_out = reinterpret_cast<Bytef*>(out.data() + outPos);
      z.avail_out = static_cast<uInt>(n);
      outPos += n;
    }
    rc = inflate(&z, Z_NO_FLUSH);
  }
  uint64_t produced = z.total_out;
  inflateEnd(&z);
  if (rc != Z_STREAM_END)
    return Error(str(what, rc == Z_BUF_ERROR ? ": compressed data is truncated or larger than its stated size"
                                            : ": compressed data is corrupt"));
  if (produced != size) return Error(str(what, ": inflates to ", produced, " bytes, not the stated ", size));
  return out;
}

uint32_t crc32Of(std::string_view data) {
  return static_cast<uint32_t>(crc32_z(0, reinterpret_cast<const Bytef*>(data.data()), data.size()));
}

Expected<ZipMember> readMember(const Bytes& b, const Entry& e, const std::string& path) {
  std::string what = str("zip archive '", path, "': member '", e.name, "'");
  if (e.flags & 1) return Error(str(what, " is encrypted"));
  if (e.method != 0 && e.method != 8)
    return Error(str(what, " uses compression method ", e.method, " (only stored and deflate are supported)"));
  if (!b.has(e.offset, kLocalSize) || b.le(e.offset, 4) != kLocalSig) return Error(str(what, ": local header is damaged"));
  uint64_t start = e.offset + kLocalSize + b.le(e.offset + 26, 2) + b.le(e.offset + 28, 2);
  if (!b.has(start, e.csize)) return Error(str(what, ": data is out of bounds"));
  std::string_view raw = b.slice(start, e.csize);
  ZipMember m{e.name, {}};
  if (e.method == 0) {
    if (e.csize != e.usize) return Error(str(what, ": stored sizes differ (", e.csize, " and ", e.usize, ")"));
    m.data = std::string(raw);
  } else {
    KF_ASSIGN_OR_RETURN(m.data, inflateRaw(raw, e.usize, what));
  }
  if (crc32Of(m.data) != e.crc) return Error(str(what, ": CRC-32 mismatch (damaged data)"));
  return m;
}

// ------------------------------------------------------------ writing

void put(std::string& out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::string deflateRaw(std::string_view in) {
  z_stream z{};
  deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out;
  uint64_t inPos = 0;
  char buf[1 << 16];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (z.avail_in == 0 && inPos < in.size()) {
      uint64_t n = std::min<uint64_t>(in.size() - inPos, kZlibChunk);
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + inPos));
      z.avail_in = static_cast<uInt>(n);
      inPos += n;
    }
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = deflate(&z, inPos == in.size() && z.avail_in == 0 ? Z_FINISH : Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
  }
  deflateEnd(&z);
  return out;
}

struct Written {
  std::string name;
  uint64_t method, crc, csize, usize, offset;
  bool zip64;
};

constexpr uint64_t kDosDate1980 = (1 << 5) | 1;  // 1980-01-01; time 00:00 is 0

void putLocal(std::string& out, const Written& w) {
  bool utf8 = std::any_of(w.name.begin(), w.name.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
  put(out, kLocalSig, 4);
  put(out, w.zip64 ? 45 : 20, 2);  // version needed
  put(out, utf8 ? 0x800 : 0, 2);   // flags: bit 11 = UTF-8 name
  put(out, w.method, 2);
  put(out, 0, 2);
  put(out, kDosDate1980, 2);
  put(out, w.crc, 4);
  put(out, w.zip64 ? kMax32 : w.csize, 4);
  put(out, w.zip64 ? kMax32 : w.usize, 4);
  put(out, w.name.size(), 2);
  put(out, w.zip64 ? 20 : 0, 2);
  out += w.name;
  if (!w.zip64) return;
  put(out, 1, 2);
  put(out, 16, 2);
  put(out, w.usize, 8);
  put(out, w.csize, 8);
}

void putCentral(std::string& out, const Written& w) {
  bool utf8 = std::any_of(w.name.begin(), w.name.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
  put(out, kCentralSig, 4);
  put(out, (3 << 8) | (w.zip64 ? 45 : 20), 2);  // made by: Unix
  put(out, w.zip64 ? 45 : 20, 2);
  put(out, utf8 ? 0x800 : 0, 2);
  put(out, w.method, 2);
  put(out, 0, 2);
  put(out, kDosDate1980, 2);
  put(out, w.crc, 4);
  put(out, w.zip64 ? kMax32 : w.csize, 4);
  put(out, w.zip64 ? kMax32 : w.usize, 4);
  put(out, w.name.size(), 2);
  put(out, w.zip64 ? 28 : 0, 2);
  put(out, 0, 2);                        // comment
  put(out, 0, 2);                        // disk
  put(out, 0, 2);                        // internal attributes
  put(out, uint64_t{0100644} << 16, 4);  // external: a regular file, rw-r--r--
  put(out, w.zip64 ? kMax32 : w.offset, 4);
  out += w.name;
  if (!w.zip64) return;
  put(out, 1, 2);
  put(out, 24, 2);
  put(out, w.usize, 8);
  put(out, w.csize, 8);
  put(out, w.offset, 8);
}

void putEnd(std::string& out, uint64_t count, uint64_t cdOffset, bool force) {
  uint64_t cdSize = out.size() - cdOffset;
  bool zip64 = force || count >= kMax16 || cdSize >= kMax32 || cdOffset >= kMax32;
  if (zip64) {
    uint64_t at = out.size();
    put(out, kZip64EndSig, 4);
    put(out, kZip64EndSize - 12, 8);  // size of the rest of the record
    put(out, (3 << 8) | 45, 2);
    put(out, 45, 2);
    put(out, 0, 4);
    put(out, 0, 4);
    put(out, count, 8);
    put(out, count, 8);
    put(out, cdSize, 8);
    put(out, cdOffset, 8);
    put(out, kZip64LocatorSig, 4);
    put(out, 0, 4);
    put(out, at, 8);
    put(out, 1, 4);
  }
  put(out, kEndSig, 4);
  put(out, 0, 2);
  put(out, 0, 2);
  put(out, zip64 ? kMax16 : count, 2);
  put(out, zip64 ? kMax16 : count, 2);
  put(out, zip64 ? kMax32 : cdSize, 4);
  put(out, zip64 ? kMax32 : cdOffset, 4);
  put(out, 0, 2);
}

}  // namespace

Expected<std::vector<ZipMember>> readZip(std::string_view bytes, const std::string& path) {
  Bytes b(bytes);
  KF_ASSIGN_OR_RETURN(Directory d, findDirectory(b, path));
  KF_ASSIGN_OR_RETURN(std::vector<Entry> entries, readDirectory(b, d, path));
  std::vector<ZipMember> out;
  for (const Entry& e : entries) {
    KF_ASSIGN_OR_RETURN(ZipMember m, readMember(b, e, path));
    out.push_back(std::move(m));
  }
  return out;
}

std::string writeZip(const std::vector<std::pair<std::string, std::string_view>>& members, const ZipWriteOptions& opts) {
  std::string out;
  std::vector<Written> written;
  for (const auto& [name, data] : members) {
    std::string packed = opts.method == ZipMethod::Deflate ? deflateRaw(data) : std::string();
    std::string_view body = opts.method == ZipMethod::Deflate ? std::string_view(packed) : data;
    Written w{name, opts.method == ZipMethod::Deflate ? 8u : 0u, crc32Of(data), body.size(), data.size(), out.size(),
              false};
    w.zip64 = opts.forceZip64 || w.usize >= kMax32 || w.csize >= kMax32 || w.offset >= kMax32;
    putLocal(out, w);
    out.append(body);
    written.push_back(std::move(w));
  }
  uint64_t cdOffset = out.size();
  for (const Written& w : written) putCentral(out, w);
  putEnd(out, written.size(), cdOffset, opts.forceZip64);
  return out;
}

}  // namespace kfuse::io
