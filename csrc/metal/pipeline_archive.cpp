// The binary-archive disk cache of Metal pipelines (pipeline_archive.h).
#include "metal/pipeline_archive.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <utility>

#include "errors.h"
#include "pipeline_cache.h"  // cache_dir()

namespace tmps {
namespace metal {

// Policy: pipeline_archive.h, class PipelineArchive. Locks: mu_ (the slot list) is never held across
// a Metal call except the files' first load; a slot's `use` is held across the Metal calls on
// its archive (exclusive: add, serialize, replace; shared: lookups). Order: mu_ before `use`.

namespace {

// Live archives, flushed at exit (never destroyed: exit handlers may run after static destructors).
std::mutex& archives_mu = *new std::mutex;
std::set<PipelineArchive*>& live_archives = *new std::set<PipelineArchive*>;

void flush_archives_at_exit() {
  std::lock_guard<std::mutex> lock(archives_mu);
  for (PipelineArchive* a : live_archives) a->flush();
}

// TRITON_MPS_METAL_ARCHIVE_MB: the binary archive's size cap in MiB (default 512).
uint64_t archive_cap_bytes() {
  const char* v = std::getenv("TRITON_MPS_METAL_ARCHIVE_MB");
  if (!v || !*v) return uint64_t(512) << 20;
  char* end = nullptr;
  const double mb = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(mb >= 0))
    throw InvalidArgument("TRITON_MPS_METAL_ARCHIVE_MB must be a size in MiB >= 0, got '" + std::string(v) + "'");
  return static_cast<uint64_t>(mb * double(1 << 20));
}

uint64_t file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

}  // namespace

PipelineArchive::PipelineArchive(Ref<MTL::Device> device, uint64_t registry_id)
    : device_(std::move(device)), registry_id_(registry_id) {
  static const bool registered = std::atexit(flush_archives_at_exit) == 0;
  (void)registered;
  std::lock_guard<std::mutex> lock(archives_mu);
  live_archives.insert(this);
}

std::string PipelineArchive::slot_path(size_t index) const {
  return dir_ + "/" + std::to_string(registry_id_) + (index ? "." + std::to_string(index) : std::string()) +
         ".metallib-archive";
}

Ref<MTL::BinaryArchive> PipelineArchive::new_archive(const std::string& path) {
  auto desc = NS::TransferPtr(MTL::BinaryArchiveDescriptor::alloc()->init());
  NS::Error* error = nullptr;
  if (!path.empty() && ::access(path.c_str(), F_OK) == 0) {
    desc->setUrl(NS::URL::fileURLWithPath(ns_string(path)));
    if (auto loaded = NS::TransferPtr(device_->newBinaryArchive(desc.get(), &error))) return loaded;
    std::remove(path.c_str());  // corrupt or from an incompatible OS: start over
    desc->setUrl(nullptr);
  }
  return NS::TransferPtr(device_->newBinaryArchive(desc.get(), &error));  // empty, may be null
}

void PipelineArchive::open_locked() {
  opened_ = true;
  try {
    std::string dir = cache_dir() + "/metal";
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return;  // no disk cache this process
    dir_ = dir;
  } catch (const std::exception&) {
    return;  // cache_dir() unusable: build without the archive
  }
  uint64_t total = 0;
  for (size_t i = 0; i < kMaxSlots; ++i) total += file_size(slot_path(i));
  if (total > archive_cap_bytes())  // start over below the cap
    for (size_t i = 0; i < kMaxSlots; ++i) std::remove(slot_path(i).c_str());
  for (size_t i = 0; i < kMaxSlots; ++i) {
    const std::string path = slot_path(i);
    if (::access(path.c_str(), F_OK) != 0) continue;
    auto slot = std::make_unique<Slot>();
    slot->path = path;
    slot->archive = new_archive(path);
    slots_.push_back(std::move(slot));
  }
}

PipelineArchive::Slot* PipelineArchive::check_out(std::unique_lock<std::shared_mutex>& use) {
  std::vector<Slot*> slots;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (dir_.empty()) return nullptr;
    for (auto& s : slots_) slots.push_back(s.get());
  }
  for (Slot* s : slots) {  // a free slot
    use = std::unique_lock<std::shared_mutex>(s->use, std::try_to_lock);
    if (use.owns_lock()) return s;
  }
  Slot* slot = nullptr;
  bool made = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (slots_.size() < kMaxSlots) {  // a new one, taken before anyone else can see it
      // Paths of slots loaded at open may skip numbers: take the first unused one.
      std::set<std::string> taken;
      for (auto& s : slots_) taken.insert(s->path);
      auto fresh = std::make_unique<Slot>();
      for (size_t i = 0; i < kMaxSlots && fresh->path.empty(); ++i)
        if (!taken.count(slot_path(i))) fresh->path = slot_path(i);
      slot = fresh.get();
      use = std::unique_lock<std::shared_mutex>(slot->use);
      slots_.push_back(std::move(fresh));
      made = true;
    } else {
      slot = slots_[next_wait_++ % slots_.size()].get();
    }
  }
  if (made) {
    slot->archive = new_archive(slot->path);  // a file another process wrote since open: loaded
  } else {
    use = std::unique_lock<std::shared_mutex>(slot->use);  // every slot is busy: wait for one
  }
  return slot;
}

Ref<MTL::ComputePipelineState> PipelineArchive::lookup(MTL::ComputePipelineDescriptor* desc,
                                                       const std::vector<Slot*>& slots) {
  // Shared: lookups run together; a slot a build is compiling into is skipped (a kernel only it
  // holds is then compiled again, into another slot).
  std::vector<std::shared_lock<std::shared_mutex>> held;
  std::vector<const NS::Object*> archives;
  for (Slot* s : slots) {
    std::shared_lock<std::shared_mutex> use(s->use, std::try_to_lock);
    if (!use.owns_lock() || !s->archive) continue;
    archives.push_back(s->archive.get());
    held.push_back(std::move(use));
  }
  if (archives.empty()) return {};
  desc->setBinaryArchives(NS::Array::array(archives.data(), archives.size()));
  NS::Error* error = nullptr;
  // Loads the GPU binary from an archive; null (no compile) if none has it.
  auto state = NS::TransferPtr(
      device_->newComputePipelineState(desc, MTL::PipelineOptionFailOnBinaryArchiveMiss, nullptr, &error));
  desc->setBinaryArchives(nullptr);
  return state;
}

void PipelineArchive::persist_slot(Slot& slot) {
  slot.unsaved = 0;
  slot.last_persist = std::chrono::steady_clock::now();
  static std::atomic<unsigned> counter{0};
  std::string tmp = slot.path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  NS::Error* error = nullptr;
  if (slot.archive->serializeToURL(NS::URL::fileURLWithPath(ns_string(tmp)), &error)) {
    if (std::rename(tmp.c_str(), slot.path.c_str()) == 0) {
      evict_if_over_cap(slot);
      return;
    }
  }
  std::remove(tmp.c_str());  // the cache is an optimisation: a failed write only costs a rebuild
}

void PipelineArchive::evict_if_over_cap(Slot& slot) {
  uint64_t total = 0;
  for (size_t i = 0; i < kMaxSlots; ++i) total += file_size(slot_path(i));
  if (total <= archive_cap_bytes()) return;
  for (size_t i = 0; i < kMaxSlots; ++i) std::remove(slot_path(i).c_str());
  slot.archive = new_archive("");  // empty, may be null
}

void PipelineArchive::flush() {
  std::vector<Slot*> slots;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& s : slots_) slots.push_back(s.get());
  }
  for (Slot* s : slots) {
    std::unique_lock<std::shared_mutex> use(s->use);
    if (s->archive && s->unsaved) {
      AutoreleasePool pool;
      persist_slot(*s);
    }
  }
}

Ref<MTL::ComputePipelineState> PipelineArchive::build(MTL::Function* function, const std::string& label,
                                                      uint32_t max_threads) {
  AutoreleasePool pool;
  std::vector<Slot*> slots;
  bool cached = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!opened_) open_locked();
    cached = !dir_.empty();
    for (auto& s : slots_) slots.push_back(s.get());
  }
  auto desc = NS::TransferPtr(MTL::ComputePipelineDescriptor::alloc()->init());
  desc->setComputeFunction(function);
  desc->setLabel(ns_string(label));
  if (max_threads) desc->setMaxTotalThreadsPerThreadgroup(max_threads);
  NS::Error* error = nullptr;
  if (cached) {
    if (auto hit = lookup(desc.get(), slots)) return hit;
    // A miss: compile once, into the slot checked out (no other thread touches it meanwhile), and
    // load the pipeline from there.
    std::unique_lock<std::shared_mutex> use;
    Slot* slot = check_out(use);
    if (slot && slot->archive && slot->archive->addComputePipelineFunctions(desc.get(), &error)) {
      ++slot->unsaved;
      desc->setBinaryArchives(NS::Array::array(slot->archive.get()));
      auto state = NS::TransferPtr(
          device_->newComputePipelineState(desc.get(), MTL::PipelineOptionFailOnBinaryArchiveMiss, nullptr, &error));
      desc->setBinaryArchives(nullptr);
      // Batched writes: the slot's whole archive is rewritten, so not on every miss (the rest
      // is written by flush(), at exit at the latest).
      const auto now = std::chrono::steady_clock::now();
      if (slot->unsaved >= kPersistEvery || now - slot->last_persist >= kPersistInterval) persist_slot(*slot);
      if (state) return state;
    }
    error = nullptr;
  }
  // No archive, or the archive refused the kernel: Metal's own compile (and its error message).
  auto state = NS::TransferPtr(device_->newComputePipelineState(desc.get(), MTL::PipelineOptionNone, nullptr, &error));
  if (!state) throw CompileError("kernel '" + label + "': Metal could not build the compute pipeline: " + describe(error));
  return state;
}

PipelineArchive::~PipelineArchive() {
  {
    std::lock_guard<std::mutex> lock(archives_mu);
    live_archives.erase(this);
  }
  flush();
}

}  // namespace metal
}  // namespace tmps
