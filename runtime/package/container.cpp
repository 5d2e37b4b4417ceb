#include "runtime/package/container.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "ir/support/strings.h"

namespace kfuse::package {
namespace {

constexpr char kMagic[8] = {'K', 'F', 'P', 'K', 'G', '\r', '\n', '\x1a'};
constexpr size_t kHeaderBytes = 24;
constexpr size_t kEntryBytes = 56;
constexpr uint64_t kSectionAlignment = 64;
// More sections than any package has; bounds the table a reader walks.
constexpr uint32_t kMaxSections = 1u << 16;

// Fuzzing builds (tests/fuzz) let mismatched checksums through, so that
// mutated bytes reach the parsers behind the container (libFuzzer's
// convention for checksummed formats).
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
constexpr bool kTrustChecksums = true;
#else
constexpr bool kTrustChecksums = false;
#endif

uint32_t crc32Of(uLong crc, std::string_view bytes) {
  // zlib takes uInt lengths: feed large sections in pieces.
  while (!bytes.empty()) {
    size_t n = std::min<size_t>(bytes.size(), 1u << 30);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(n));
    bytes.remove_prefix(n);
  }
  return static_cast<uint32_t>(crc);
}
uint32_t crc32Of(std::string_view bytes) { return crc32Of(crc32(0L, Z_NULL, 0), bytes); }

void putU32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
void putU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
uint32_t getU32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}
uint64_t getU64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

bool validName(std::string_view name) {
  if (name.empty() || name.size() >= kMaxSectionName) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return c > ' ' && c < 127; });
}

uint64_t alignUp(uint64_t v) { return (v + kSectionAlignment - 1) / kSectionAlignment * kSectionAlignment; }

}  // namespace

void ContainerWriter::add(std::string name, std::string bytes) {
  addPieces(std::move(name), {keep(std::move(bytes))});
}

void ContainerWriter::addPieces(std::string name, std::vector<std::string_view> pieces) {
  uint64_t size = 0;
  for (std::string_view p : pieces) size += p.size();
  sections_.push_back({std::move(name), std::move(pieces), size});
}

void ContainerWriter::write(const std::function<void(std::string_view)>& sink) const {
  std::string table;
  uint64_t offset = alignUp(kHeaderBytes + kEntryBytes * sections_.size());
  for (const Section& s : sections_) {
    std::string padded = s.name;
    padded.resize(kMaxSectionName, '\0');
    table += padded;
    putU64(table, offset);
    putU64(table, s.size);
    uLong crc = crc32(0L, Z_NULL, 0);
    for (std::string_view p : s.pieces) crc = crc32Of(crc, p);
    putU32(table, static_cast<uint32_t>(crc));
    putU32(table, 0);
    offset = alignUp(offset + s.size);
  }
  std::string head(kMagic, sizeof kMagic);
  putU32(head, kFormatVersion);
  putU32(head, static_cast<uint32_t>(sections_.size()));
  putU32(head, crc32Of(table));
  putU32(head, 0);
  head += table;
  uint64_t written = head.size();
  sink(head);
  static constexpr char kZeros[kSectionAlignment] = {};
  for (const Section& s : sections_) {
    sink({kZeros, alignUp(written) - written});
    written = alignUp(written) + s.size;
    for (std::string_view p : s.pieces) sink(p);
  }
}

uint64_t ContainerWriter::size() const {
  uint64_t end = alignUp(kHeaderBytes + kEntryBytes * sections_.size());
  for (const Section& s : sections_) end = alignUp(end) + s.size;
  return end;
}

std::string ContainerWriter::finish() const {
  std::string out;
  out.reserve(size());
  write([&](std::string_view piece) { out += piece; });
  return out;
}

const std::string_view* Container::find(std::string_view name) const {
  for (const auto& [n, bytes] : sections)
    if (n == name) return &bytes;
  return nullptr;
}

Expected<Container> readContainer(std::string_view bytes, const std::string& file) {
  auto fail = [&](const std::string& why) { return Error(str(file, ": ", why)); };
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    return fail("not a kfuse package (no KFPKG signature at the start of the file)");
  if (bytes.size() < kHeaderBytes) return fail(str("truncated: ", bytes.size(), " bytes, shorter than the header"));
  Container c;
  c.version = getU32(bytes.data() + 8);
  if (c.version == 0 || c.version > kFormatVersion)
    return fail(str("package format version ", c.version, " is newer than this kfuse reads (", kFormatVersion,
                    "); use a kfuse at least as new as the one that wrote it"));
  if (c.version < kOldestFormatVersion)
    return fail(str("package format version ", c.version, " is older than this kfuse reads (", kOldestFormatVersion,
                    " to ", kFormatVersion, "): its compiled code has another calling convention; compile the model "
                    "again with this kfuse"));
  uint32_t count = getU32(bytes.data() + 12);
  if (count > kMaxSections) return fail(str("corrupted: the header claims ", count, " sections"));
  uint64_t tableEnd = kHeaderBytes + uint64_t{count} * kEntryBytes;
  if (tableEnd > bytes.size())
    return fail(str("truncated: the section table ends at byte ", tableEnd, " but the file has ", bytes.size()));
  std::string_view table = bytes.substr(kHeaderBytes, tableEnd - kHeaderBytes);
  if (crc32Of(table) != getU32(bytes.data() + 16) && !kTrustChecksums)
    return fail("corrupted: the section table's checksum does not match");
  std::set<std::string, std::less<>> seen;
  for (uint32_t i = 0; i < count; ++i) {
    const char* e = table.data() + size_t{i} * kEntryBytes;
    std::string name(e, strnlen(e, kMaxSectionName));
    if (!validName(name) || !seen.insert(name).second)
      return fail(str("corrupted: section ", i, " has an invalid or repeated name"));
    uint64_t offset = getU64(e + 32), size = getU64(e + 40);
    if (offset < tableEnd || offset > bytes.size() || size > bytes.size() - offset)
      return fail(str("truncated: section '", name, "' spans bytes ", offset, "..", offset + size, " but the file has ",
                      bytes.size()));
    std::string_view data = bytes.substr(offset, size);
    if (crc32Of(data) != getU32(e + 48) && !kTrustChecksums)
      return fail(str("corrupted: section '", name, "' does not match its checksum"));
    c.sections.emplace_back(std::move(name), data);
  }
  return c;
}

}  // namespace kfuse::package
