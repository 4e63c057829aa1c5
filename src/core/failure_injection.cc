#include "core/failure_injection.h"

#include <algorithm>
#include <atomic>
#include <mutex>

#include "core/check.h"

namespace kilnrt::failure_injection {
namespace {

// Host allocations.
std::atomic<bool> g_host_active{false};  // armed, or a size limit set: the slow path runs
std::atomic<int64_t> g_host_fail_at{-1};
std::atomic<int64_t> g_host_seen{0};
std::atomic<bool> g_host_fired{false};
std::atomic<size_t> g_host_limit{0};

std::atomic<int64_t> g_loop_limit{0};

// Other calls (CUDA driver / libraries).
std::atomic<bool> g_call_active{false};
std::atomic<int64_t> g_call_fail_at{-1};
std::atomic<int64_t> g_call_seen{0};
std::atomic<bool> g_call_fired{false};
std::mutex g_mutex;  // guards the strings below
std::string g_fail_site;
int64_t g_fail_site_occurrence = -1;
int64_t g_fail_site_seen = 0;
std::string g_last_failed_site;
bool g_recording = false;
std::vector<std::string> g_recorded;

void update_host_active() {
  g_host_active.store(g_host_fail_at.load() >= 0 || g_host_limit.load() > 0, std::memory_order_release);
}

}  // namespace

void on_host_allocation(size_t nbytes, const char* what) {
  if (!g_host_active.load(std::memory_order_relaxed)) return;
  const size_t limit = g_host_limit.load();
  KILNRT_CHECK(limit == 0 || nbytes <= limit, kOutOfMemory, what,
               "could not allocate " << nbytes << " bytes of host memory for " << what << " (limit " << limit
                                     << " bytes set by failure injection)");
  const int64_t index = g_host_seen.fetch_add(1);
  int64_t expected = index;
  if (g_host_fail_at.load() == index && g_host_fail_at.compare_exchange_strong(expected, -1)) {
    g_host_fired.store(true);  // stays active (counting) until reset()
    KILNRT_THROW(kOutOfMemory, what,
                 "could not allocate " << nbytes << " bytes of host memory for " << what
                                       << " (injected failure of allocation #" << index << ")");
  }
}

void fail_host_allocation_at(int64_t index) {
  g_host_seen.store(0);
  g_host_fired.store(false);
  g_host_fail_at.store(index);
  // Count allocations even when disarmed (index -1) so that a test can measure how many a workload makes.
  g_host_active.store(true);
}

int64_t host_allocations_seen() { return g_host_seen.load(); }
bool host_failure_fired() { return g_host_fired.load(); }

void set_host_allocation_limit(size_t bytes) {
  g_host_limit.store(bytes);
  update_host_active();
}

void set_loop_iteration_limit(int64_t iterations) { g_loop_limit.store(iterations); }
int64_t loop_iteration_limit() { return g_loop_limit.load(std::memory_order_relaxed); }

bool should_fail_call(const char* site) {
  if (!g_call_active.load(std::memory_order_relaxed)) return false;
  const int64_t index = g_call_seen.fetch_add(1);
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_recording && std::find(g_recorded.begin(), g_recorded.end(), site) == g_recorded.end())
    g_recorded.emplace_back(site);
  bool fail = false;
  if (g_call_fail_at.load() == index) {
    g_call_fail_at.store(-1);
    fail = true;
  }
  if (!g_fail_site.empty() && g_fail_site == site) {
    if (g_fail_site_seen++ == g_fail_site_occurrence) {
      g_fail_site.clear();
      fail = true;
    }
  }
  if (fail) {
    g_call_fired.store(true);
    g_last_failed_site = site;
  }
  return fail;
}

void fail_call_at(int64_t index) {
  g_call_seen.store(0);
  g_call_fired.store(false);
  g_call_fail_at.store(index);
  g_call_active.store(true);
}

void fail_site(const std::string& site, int64_t occurrence) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_fail_site = site;
  g_fail_site_occurrence = occurrence;
  g_fail_site_seen = 0;
  g_call_fired.store(false);
  g_call_active.store(true);
}

int64_t calls_seen() { return g_call_seen.load(); }
bool call_failure_fired() { return g_call_fired.load(); }

std::string last_failed_site() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_last_failed_site;
}

void record_sites(bool on) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (on) g_recorded.clear();
  g_recording = on;
  if (on) g_call_active.store(true);
}

std::vector<std::string> recorded_sites() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_recorded;
}

void reset() {
  g_host_fail_at.store(-1);
  g_host_seen.store(0);
  g_host_fired.store(false);
  g_host_limit.store(0);
  g_host_active.store(false);
  g_loop_limit.store(0);
  g_call_fail_at.store(-1);
  g_call_seen.store(0);
  g_call_fired.store(false);
  g_call_active.store(false);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_fail_site.clear();
  g_fail_site_occurrence = -1;
  g_fail_site_seen = 0;
  g_last_failed_site.clear();
  g_recording = false;
  g_recorded.clear();
}

}  // namespace kilnrt::failure_injection
