#include "codegen/plan/buffer_plan.h"

#include <algorithm>
#include <array>
#include <limits>

#include "ir/support/strings.h"

namespace kfuse {

void computeLifetimes(Plan& p) {
  for (PlanBuffer& b : p.buffers) b.firstUse = b.lastUse = -1;
  auto touch = [&](int buffer, int step) {
    PlanBuffer& s = p.buffers[static_cast<size_t>(p.storageOf(buffer))];
    if (s.firstUse < 0) s.firstUse = step;
    s.firstUse = std::min(s.firstUse, step);
    s.lastUse = std::max(s.lastUse, step);
  };
  for (size_t i = 0; i < p.steps.size(); ++i)
    for (int b : stepBuffers(p.steps[i])) touch(b, static_cast<int>(i));
  int end = static_cast<int>(p.steps.size());
  for (int o : p.outputs) touch(o, end);
  for (const auto& [param, b] : p.updates) touch(b, end);
}

std::string_view packOrderName(PackOrder o) {
  switch (o) {
    case PackOrder::SizeDesc: return "size";
    case PackOrder::StartAsc: return "start";
    case PackOrder::AreaDesc: return "size x lifetime";
    case PackOrder::LengthDesc: return "lifetime";
  }
  return "?";
}

namespace {

struct Item {
  int buffer;
  int first, last;  // inclusive steps
  uint64_t size;    // aligned bytes
  uint64_t length() const { return static_cast<uint64_t>(last - first + 1); }
  bool overlaps(const Item& o) const { return first <= o.last && o.first <= last; }
};

std::vector<Item> arenaItems(const Plan& p) {
  std::vector<Item> items;
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const PlanBuffer& b = p.buffers[i];
    if (b.kind != BufferKind::Temp) continue;
    // A Temp no step touches still gets bytes (a one-step lifetime at 0), so
    // that every buffer has a valid offset.
    int first = std::max(b.firstUse, 0), last = std::max(b.lastUse, first);
    items.push_back({static_cast<int>(i), first, last, alignedBytes(b.type.byteSize())});
  }
  return items;
}

std::vector<size_t> ordered(const std::vector<Item>& items, PackOrder order) {
  std::vector<size_t> idx(items.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  auto key = [&](const Item& it) {
    switch (order) {
      case PackOrder::SizeDesc: return std::array<uint64_t, 2>{~it.size, static_cast<uint64_t>(it.first)};
      case PackOrder::StartAsc: return std::array<uint64_t, 2>{static_cast<uint64_t>(it.first), ~it.size};
      case PackOrder::AreaDesc: return std::array<uint64_t, 2>{~(it.size * it.length()), ~it.size};
      case PackOrder::LengthDesc: return std::array<uint64_t, 2>{~it.length(), ~it.size};
    }
    return std::array<uint64_t, 2>{0, 0};
  };
  // Stable: equal keys keep buffer order, so plans are deterministic.
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return key(items[a]) < key(items[b]); });
  return idx;
}

// Best fit: the smallest gap between placed, time-overlapping items that
// holds `it`; else just above the highest of them.
uint64_t place(const Item& it, const std::vector<Item>& items, const std::vector<uint64_t>& offsets,
               const std::vector<size_t>& placed) {
  std::vector<std::pair<uint64_t, uint64_t>> busy;  // [offset, end)
  for (size_t j : placed)
    if (items[j].overlaps(it)) busy.emplace_back(offsets[j], offsets[j] + items[j].size);
  std::sort(busy.begin(), busy.end());
  uint64_t cursor = 0, best = std::numeric_limits<uint64_t>::max(), bestGap = best;
  for (const auto& [lo, hi] : busy) {
    if (lo > cursor && lo - cursor >= it.size && lo - cursor < bestGap) {
      best = cursor;
      bestGap = lo - cursor;
    }
    cursor = std::max(cursor, hi);
  }
  return best != std::numeric_limits<uint64_t>::max() ? best : cursor;
}

uint64_t pack(const std::vector<Item>& items, PackOrder order, std::vector<uint64_t>& offsets) {
  offsets.assign(items.size(), 0);
  std::vector<size_t> placed;
  uint64_t top = 0;
  for (size_t i : ordered(items, order)) {
    offsets[i] = place(items[i], items, offsets, placed);
    placed.push_back(i);
    top = std::max(top, offsets[i] + items[i].size);
  }
  return top;
}

}  // namespace

PackResult packArena(Plan& p) {
  std::vector<Item> items = arenaItems(p);
  PackResult r;
  std::vector<uint64_t> best, offsets;
  bool first = true;
  for (PackOrder o : {PackOrder::SizeDesc, PackOrder::StartAsc, PackOrder::AreaDesc, PackOrder::LengthDesc}) {
    uint64_t bytes = pack(items, o, offsets);
    r.sizes.push_back(bytes);
    if (first || bytes < r.arenaBytes) {
      first = false;
      r.order = o;
      r.arenaBytes = bytes;
      best = offsets;
    }
  }
  for (size_t i = 0; i < items.size(); ++i)
    p.buffers[static_cast<size_t>(items[i].buffer)].offset = static_cast<int64_t>(best[i]);
  p.arenaBytes = r.arenaBytes;
  return r;
}

void layoutResident(Plan& p) {
  uint64_t top = 0;
  for (PlanBuffer& b : p.buffers) {
    if (b.kind == BufferKind::Temp || b.kind == BufferKind::Alias) continue;
    b.offset = static_cast<int64_t>(top);
    top += alignedBytes(b.type.byteSize());
  }
  p.residentBytes = top;
}

Status verifyBufferPlan(const Plan& p) {
  std::vector<std::string> problems;
  auto name = [&](size_t i) { return str("b", i, " (", p.buffers[i].name, ")"); };
  std::vector<size_t> temps, resident;
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const PlanBuffer& b = p.buffers[i];
    uint64_t size = alignedBytes(b.type.byteSize());
    if (b.kind == BufferKind::Alias) {
      if (b.aliasOf < 0 || static_cast<size_t>(b.aliasOf) >= p.buffers.size() || static_cast<size_t>(b.aliasOf) == i) {
        problems.push_back(str(name(i), " aliases no valid buffer"));
        continue;
      }
      const PlanBuffer& s = p.buffers[static_cast<size_t>(b.aliasOf)];
      if (b.type.byteSize() > s.type.byteSize())
        problems.push_back(str(name(i), " (", b.type.byteSize(), " bytes) aliases b", b.aliasOf, " of only ",
                               s.type.byteSize(), " bytes"));
      continue;
    }
    bool arena = b.kind == BufferKind::Temp;
    uint64_t region = arena ? p.arenaBytes : p.residentBytes;
    if (b.offset < 0) {
      problems.push_back(str(name(i), " has no offset"));
      continue;
    }
    auto off = static_cast<uint64_t>(b.offset);
    if (off % kBufferAlignment != 0) problems.push_back(str(name(i), " at offset ", off, " is not 256-byte aligned"));
    if (off + size > region)
      problems.push_back(str(name(i), " [", off, ", ", off + size, ") ends past its region of ", region, " bytes"));
    (arena ? temps : resident).push_back(i);
  }
  auto range = [&](size_t i) {
    auto off = static_cast<uint64_t>(p.buffers[i].offset);
    return std::pair<uint64_t, uint64_t>{off, off + alignedBytes(p.buffers[i].type.byteSize())};
  };
  auto disjoint = [&](size_t a, size_t b) {
    auto [alo, ahi] = range(a);
    auto [blo, bhi] = range(b);
    return ahi <= blo || bhi <= alo;
  };
  // Resident buffers are all alive for the whole run.
  for (size_t x = 0; x < resident.size(); ++x)
    for (size_t y = x + 1; y < resident.size(); ++y)
      if (!disjoint(resident[x], resident[y]))
        problems.push_back(str(name(resident[x]), " and ", name(resident[y]), " overlap in the resident region"));
  auto lifetime = [&](size_t i) {
    int first = std::max(p.buffers[i].firstUse, 0);
    return std::pair<int, int>{first, std::max(p.buffers[i].lastUse, first)};
  };
  for (size_t x = 0; x < temps.size(); ++x)
    for (size_t y = x + 1; y < temps.size(); ++y) {
      auto [af, al] = lifetime(temps[x]);
      auto [bf, bl] = lifetime(temps[y]);
      if (af > bl || bf > al || disjoint(temps[x], temps[y])) continue;
      auto [alo, ahi] = range(temps[x]);
      auto [blo, bhi] = range(temps[y]);
      problems.push_back(str(name(temps[x]), " [", alo, ", ", ahi, ") live ", af, "..", al, " and ", name(temps[y]),
                             " [", blo, ", ", bhi, ") live ", bf, "..", bl, " overlap in the arena"));
    }
  if (problems.empty()) return Status::ok();
  constexpr size_t kShown = 20;
  size_t total = problems.size();
  if (total > kShown) {
    problems.resize(kShown);
    problems.push_back(str("... and ", total - kShown, " more"));
  }
  return Error(str("buffer plan of @", p.function, " is invalid: ", join(problems, "; ")));
}

Expected<PackResult> planBuffers(Plan& p) {
  computeLifetimes(p);
  PackResult r = packArena(p);
  layoutResident(p);
  KF_RETURN_IF_ERROR(verifyBufferPlan(p));
  return r;
}

ArenaBounds arenaBounds(const Plan& p) {
  ArenaBounds r;
  std::vector<Item> items = arenaItems(p);
  int steps = static_cast<int>(p.steps.size());
  // Alive totals per step by a difference array over [first, last].
  std::vector<int64_t> delta(static_cast<size_t>(steps) + 2, 0);
  for (const Item& it : items) {
    r.noReuse += it.size;
    delta[static_cast<size_t>(it.first)] += static_cast<int64_t>(it.size);
    delta[static_cast<size_t>(it.last) + 1] -= static_cast<int64_t>(it.size);
  }
  int64_t alive = 0;
  for (int s = 0; s <= steps; ++s) {
    alive += delta[static_cast<size_t>(s)];
    if (static_cast<uint64_t>(alive) > r.lowerBound) {
      r.lowerBound = static_cast<uint64_t>(alive);
      r.peakStep = s;
    }
  }
  return r;
}

}  // namespace kfuse
