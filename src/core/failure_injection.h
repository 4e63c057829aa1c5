// Failure injection: test-only hooks that make kilnrt's own allocations (and, in CUDA builds, driver / library calls)
// fail on demand, so that tests can check that every failure point gives a clean kilnrt::Error, leaks nothing and
// leaves the engine / context usable or cleanly unusable. Internal header: not part of the public API.
//
// Host allocations: every allocation path of kilnrt (tensor buffers: activations, weights, constants folded at build
// time; engine / model file buffers) calls on_host_allocation() first. A test arms a countdown:
//   failure_injection::fail_host_allocation_at(i);   // the i-th allocation from now (0-based) throws kOutOfMemory
//   ... build / run ...
//   failure_injection::host_allocations_seen();      // how many allocations went through the hook since arming
//   failure_injection::reset();
// The injected failure fires once and disarms itself, so cleanup and a retry afterwards run normally.
// A size limit (set_host_allocation_limit) makes every larger allocation fail: the fuzzers use it so that a hostile
// model cannot ask for gigabytes.
//
// CUDA calls (cuda_injection.h): the same countdown over driver / cuDNN / cuBLASLt / NVRTC calls, by index or by
// call-site name.
//
// Cost when nothing is armed: one relaxed atomic load per allocation. State is process-wide (allocations on worker
// threads count too); tests that arm it must not run other kilnrt work concurrently.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kilnrt::failure_injection {

// Called before each host allocation of `nbytes` for `what` ("tensor", "engine file", ...). Throws kilnrt::Error
// (kOutOfMemory) when the armed countdown reaches this allocation or when nbytes exceeds the size limit.
void on_host_allocation(size_t nbytes, const char* what);

// Arms the countdown: the allocation with this 0-based index (counting from now) fails; -1 disarms.
void fail_host_allocation_at(int64_t index);
// Allocations seen by the hook since the last fail_host_allocation_at / reset (counted whether armed or not).
int64_t host_allocations_seen();
// True once the armed failure has fired (until the next arm / reset).
bool host_failure_fired();
// Allocations larger than `bytes` fail with kOutOfMemory (0 = no limit).
void set_host_allocation_limit(size_t bytes);

// Loop (ONNX) iterations beyond this fail with kInvalidArgument naming the node (0 = no limit, the default): the
// fuzzers use it so that a model with a trip count of 2^62 or a condition that stays true cannot run for hours.
void set_loop_iteration_limit(int64_t iterations);
int64_t loop_iteration_limit();

// Generic countdown for other kinds of calls (the CUDA wrappers use it). `site` names the call site for tests that
// enumerate sites. Returns true when this call must fail (and disarms).
bool should_fail_call(const char* site);
void fail_call_at(int64_t index);                             // -1 disarms
void fail_site(const std::string& site, int64_t occurrence);  // the occurrence-th call (0-based) of `site` fails
int64_t calls_seen();
bool call_failure_fired();
// The name of the call that the last injected failure hit ("" before).
std::string last_failed_site();
// Starts recording distinct sites called (in first-call order) until stop; returns them.
void record_sites(bool on);
std::vector<std::string> recorded_sites();

// Disarms everything, clears counters and the size limit.
void reset();

}  // namespace kilnrt::failure_injection
