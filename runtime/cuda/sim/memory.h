// Memory of the simulated device: host pages, each region followed by an
// inaccessible guard page, so that a kernel touching past the end of a
// device allocation, of its block's shared memory or of its fiber's stack
// faults (scheduler.h turns the fault into an error naming the region).
//
// A region's end sits at its guard page, so an access is caught from the
// first byte past the region's size rounded up to its alignment (256
// bytes for device allocations, as cuMemAlloc aligns them; 16 for shared
// memory). Accesses inside an allocation but into a neighbouring plan
// buffer (the runner places all buffers in one allocation) are not
// caught here: the runner's poisoning and the comparison against the
// interpreter are what find those.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kfuse::cuda::sim {

enum class RegionKind : uint8_t { Device, Shared, Stack };

// Allocates `bytes` (0 allowed) aligned to `align` (a power of two at most
// a page), its end at a guard page; nullptr when the host is out of memory.
// Every region is registered until freed.
void* allocateRegion(size_t bytes, size_t align, RegionKind kind);
void freeRegion(void* p);

// The usable bytes of the region starting at `p` (0 when `p` starts none).
size_t regionSize(const void* p);

// Whether [p, p + bytes) lies inside one live region of `kind` (a pointer
// to its end counts when bytes is 0).
bool insideRegion(uintptr_t p, size_t bytes, RegionKind kind);

// What `address` is, for fault messages: "12 bytes past the end of a
// 4096-byte device allocation", "the guard page below a thread's stack
// (stack overflow)", "no memory of the simulated device".
std::string describeAddress(uintptr_t address);

}  // namespace kfuse::cuda::sim
