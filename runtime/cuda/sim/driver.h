// The simulated device behind the real runner (docs/cuda.md, "The
// simulator"): the part of the CUDA driver API and of cuBLASLt that
// runtime/cuda uses (driver.h's tables), implemented over host memory,
// simulated modules (module.h) and the scheduler (scheduler.h). A
// CudaRunner created with `simulate` takes these tables instead of
// loadDriver()'s; nothing else of it changes, so launch counting, arena
// offsets, the allocation and CUDA Graph capture and replay are the real
// code. It is only ever chosen explicitly (never as a fallback for a
// missing driver).
//
// Work runs when it is issued, on the issuing thread (a stream is in
// order anyway); a stream being captured records it instead, and a graph
// launch replays the recording. Errors are CUresults whose
// cuGetErrorString carries the simulator's explanation (which kernel,
// block, thread, line, address), and cuBLASLt's statuses likewise through
// lastBlasLtError().
#pragma once

#include <functional>
#include <string>

#include "runtime/cuda/driver.h"
#include "runtime/cuda/sim/scheduler.h"

namespace kfuse::cuda::sim {

const DriverApi* simulatedDriver();
const BlasLtApi* simulatedBlasLt();

// The schedule of the launches this thread issues (forward by default).
void setSchedule(const Schedule& s);
const Schedule& currentSchedule();

// The explanation of this thread's last failed cuBLASLt call ("" if none).
std::string lastBlasLtError();

// For the cuBLASLt half: runs `op` now, or records it when `stream` is
// being captured. Returns the op's result, or success when recorded.
CUresult enqueue(CUstream stream, std::function<CUresult()> op);
// Sets the message cuGetErrorString gives for `r`; returns `r`.
CUresult failWith(CUresult r, std::string message);

// Whether [p, p + bytes) is device memory of the simulator.
bool isDeviceRange(const void* p, size_t bytes);

}  // namespace kfuse::cuda::sim
